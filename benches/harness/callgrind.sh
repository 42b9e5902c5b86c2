#!/usr/bin/env bash
# Instructions per request: bloomcast and nginx under callgrind, exact and unaffected by
# other work on the machine (userland only; the kernel's part is not counted).
#
#   benches/harness/callgrind.sh            # N=2000 requests per kind
#   BIN=path/to/bloomcast benches/harness/callgrind.sh
#   FLOOR=1 benches/harness/callgrind.sh   # also hyper alone, hyper + one Router, + the stock layers
#
# Each server runs under `valgrind --tool=callgrind` on core 0 with the same data as
# serving.sh (a closed hour and an open hour of 3000 IDs; nginx serves the very bytes
# bloomcast sent, one process, gzip_static, open_file_cache, sendfile). For each kind of
# request a one-connection keep-alive client sends 200 warm-up requests, the counters are
# zeroed, it sends N more, and the counters are dumped: instructions / N. FLOOR=1 adds
# examples/hyper_floor.rs (the closed hour's bytes made once, served by hyper alone, by
# hyper + one axum Router, and by that Router with the stock tower-http layers every
# bloomcast read passes; see serving.sh), whose open row is the closed hour's bytes
# again. KEEP=1 keeps the
# callgrind files (in target/harness/run.*) for callgrind_annotate.
set -euo pipefail
source "$(dirname "$0")/common.sh"
N="${N:-2000}"
ensure_tools valgrind:valgrind nginx:nginx-light python3:python3
make_work
client="$(dirname "$0")/keepalive_client.py"

data="$WORK/data"
closed=$("$EXAMPLES/seed_closed_hour" "$data" 3000 2)
ensure_hour_lasts 300

# measure NAME PID URL_PREFIX CLOSED OPEN ETAG: one line per kind.
measure() {
  local name="$1" pid="$2" base="$3" closed="$4" open="$5" etag="$6" kind f ir
  run() {
    local kind="$1" path="$2"
    shift 2
    python3 "$client" "${base##*:}" "$path" 200 "$@" >/dev/null
    callgrind_control -z "$pid" >/dev/null 2>&1
    python3 "$client" "${base##*:}" "$path" "$N" "$@" >/dev/null
    callgrind_control -d "$kind" "$pid" >/dev/null 2>&1
  }
  run closed "$closed" 'Accept-Encoding: gzip'
  run identity "$closed"
  run open "$open" 'Accept-Encoding: gzip'
  run revalidate "$closed" 'Accept-Encoding: gzip' "If-None-Match: $etag"
  for kind in closed identity open revalidate; do
    f=$(grep -l "^desc: Trigger: dump $kind\$" "$WORK/$name".cg.*)
    ir=$(sed -n 's/^summary: //p' "$f")
    printf '| %s | %s | %d |\n' "$name" "$kind" $((ir / N))
  done
}

port=$(free_port)
(cd "$ROOT" && exec env RUST_LOG=warn BLOOMCAST_LISTEN="127.0.0.1:$port" BLOOMCAST_DATA_DIR="$data" \
  BLOOMCAST_INGEST_TOKENS="$TOKEN" taskset -c "$SERVER_CPU" valgrind --tool=callgrind \
  --callgrind-out-file="$WORK/bloomcast.cg.%p" "$BIN" serve) 2>>"$WORK/bloomcast.log" &
bpid=$!
PIDS+=("$bpid")
for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.2; done
post_ids "$port" open 3000
open=$(current_path "$port")
bc="http://127.0.0.1:$port"
mirror_for_nginx "$bc"

echo "### Instructions per request (callgrind, $N keep-alive requests per kind, one connection)"
echo
echo "| server | request | instructions per request |"
echo "|---|---|---:|"
measure bloomcast "$bpid" "$bc" "$closed" "$open" "$etag"
stop_pid "$bpid"

nport=$(free_port)
write_nginx_conf "$nport" 1 "master_process off;"
taskset -c "$SERVER_CPU" valgrind --tool=callgrind --callgrind-out-file="$WORK/nginx.cg.%p" \
  nginx -c "$WORK/nginx.conf" -e "$WORK/nginx-error.log" 2>>"$WORK/nginx-valgrind.log" &
npid=$!
PIDS+=("$npid")
ng="http://127.0.0.1:$nport"
for _ in $(seq 1 300); do curl -sf -o /dev/null "$ng/closed.json" && break; sleep 0.2; done
netag=$(gzip_etag "$ng/closed.json")
measure nginx "$npid" "$ng" /closed.json /open.json "$netag"
stop_pid "$npid"

if [[ "${FLOOR:-0}" == 1 ]]; then
  for mode in hyper axum stock; do
    fport=$(free_port)
    taskset -c "$SERVER_CPU" valgrind --tool=callgrind --callgrind-out-file="$WORK/floor-$mode.cg.%p" \
      "$EXAMPLES/hyper_floor" "$mode" "$fport" "$WORK/www" 2>>"$WORK/floor-valgrind.log" &
    fpid=$!
    PIDS+=("$fpid")
    f="http://127.0.0.1:$fport"
    for _ in $(seq 1 300); do curl -sf -o /dev/null "$f$closed" && break; sleep 0.2; done
    measure "floor-$mode" "$fpid" "$f" "$closed" "$closed" "$(gzip_etag "$f$closed")"
    stop_pid "$fpid"
  done
fi
