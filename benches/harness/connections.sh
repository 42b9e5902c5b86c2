#!/usr/bin/env bash
# What an open connection holds: the server's anonymous resident memory (RssAnon) with N
# idle keep-alive connections open, each after one answered GET /healthz, against the
# same server before they opened and three seconds after they closed. The per-connection
# figure is what `/stats` counts for each open connection (`server::CONNECTION_BYTES`,
# docs/BENCHMARKS.md "One memory budget").
#
#   benches/harness/connections.sh           # N=1000
#   N=4000 benches/harness/connections.sh
#   BIN=/path/to/other/bloomcast benches/harness/connections.sh
set -euo pipefail
source "$(dirname "$0")/common.sh"
N="${N:-1000}"
ensure_tools python3:python3
make_work
[[ -x "$BIN" ]] || build

port=$(free_port)
start_bloomcast "$WORK/data" "$port"
anon_kb() { awk '/^RssAnon:/ {print $2}' "/proc/$SERVER_PID/status"; }
before=$(anon_kb)

# Opens N connections, answers each, prints "open" and holds them until stdin closes.
exec {hold}> >(python3 -c '
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: harness\r\n\r\n")
    socks.append(s)
for s in socks:
    if not s.recv(65536).startswith(b"HTTP/1.1 "):
        sys.exit("no answer")
print("open", flush=True)
sys.stdin.read()
' "$port" "$N" >"$WORK/open")
for _ in $(seq 600); do
  [[ -s "$WORK/open" ]] && break
  sleep 0.1
done
[[ -s "$WORK/open" ]] || die "the $N connections did not open"
with=$(anon_kb)
exec {hold}>&-
sleep 3
after=$(anon_kb)

echo "### Idle keep-alive connections ($N, each after one GET /healthz), server RssAnon"
echo
echo "| before | with them open | per connection | 3 s after they closed |"
echo "|---:|---:|---:|---:|"
awk -v b="$before" -v w="$with" -v a="$after" -v n="$N" 'BEGIN {
  printf "| %.1f MiB | %.1f MiB | %.1f KiB | %.1f MiB |\n", b / 1024, w / 1024, (w - b) / n, a / 1024
}'
