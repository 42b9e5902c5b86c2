#!/usr/bin/env bash
# A flood of subscribe/unsubscribe on GET /events beside ingest and reads: does it starve
# them? One node on its embedded store (server core), a closed hour seeded for reads.
# Three runs of SECS each: without a flood, with it, and with a reference flood:
# - ingest: examples/loadgen, batches of 100 IDs, 8 clients: durable IDs/s and the
#   requests' p99;
# - reads: wrk revalidating the closed hour (304s, -t1 -c16, gzip, If-None-Match);
# - the flood (second run): FLOOD connections, each in a loop opening GET /events,
#   reading its first event and closing, as fast as the server answers (Python asyncio);
# - the reference (third run): the same flood of connections asking GET /healthz, so
#   that what subscribing costs is read against what any new connection costs.
# Every client runs on the client core, so the flood also takes client CPU from the
# load generators: the server's CPU per request (from /proc) is the figure the machine
# does not distort. Prints one table.
#
#   benches/harness/events_flood.sh            # SECS=10 FLOOD=64
#   SECS=5 FLOOD=256 benches/harness/events_flood.sh
set -euo pipefail
source "$(dirname "$0")/common.sh"
SECS="${SECS:-10}"
FLOOD="${FLOOD:-64}"
ensure_tools wrk:wrk python3:python3
make_work

data="$WORK/data"
closed=$("$EXAMPLES/seed_closed_hour" "$data" 3000 2)
ensure_hour_lasts $((4 * SECS + 60))
port=$(free_port)
start_bloomcast "$data" "$port" BLOOMCAST_MAX_CONNECTIONS=20000
bc="http://127.0.0.1:$port"
etag=$(gzip_etag "$bc$closed")

cat >"$WORK/flood.py" <<'PY'
import asyncio, sys, time
host, port, n, secs = "127.0.0.1", int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
path = sys.argv[4].encode()
done = errors = 0
def enough(buf):
    """Whether `buf` holds what a cycle reads: the stream's first event (its data line and
    the blank line after it; the body is chunked, so the chunk's CRLF follows), or the
    reference's response head."""
    if path != b"/events":
        return b"\r\n\r\n" in buf
    return b"data: " in buf and b"\n\n" in buf[buf.index(b"data: "):]
async def loop(stop):
    global done, errors
    while time.monotonic() < stop:
        try:
            r, w = await asyncio.open_connection(host, port)
            w.write(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
            buf = b""
            while not enough(buf):
                chunk = await asyncio.wait_for(r.read(4096), 10)
                if not chunk:
                    raise ConnectionError("closed")
                buf += chunk
            w.close()
            done += 1
        except Exception:
            errors += 1
            await asyncio.sleep(0.01)
async def main():
    stop = time.monotonic() + secs
    await asyncio.gather(*(loop(stop) for _ in range(n)))
    print(f"cycles={done} errors={errors} per_second={done / secs:.0f}")
asyncio.run(main())
PY

TICKS=$(getconf CLK_TCK)

run() { # run LABEL [PATH]: with a flood of connections asking PATH (none without one)
  local label="$1" path="${2:-}" fpid="" before after
  before=$(cpu_ticks "$SERVER_PID")
  if [[ -n $path ]]; then
    taskset -c "$CLIENT_CPU" python3 "$WORK/flood.py" "$port" "$FLOOD" "$((2 * SECS + 2))" "$path" >"$WORK/flood-$label" &
    fpid=$!
    sleep 1
  fi
  taskset -c "$CLIENT_CPU" "$EXAMPLES/loadgen" --url "$bc" --token "$TOKEN" --batch 100 --clients 8 \
    --seconds "$SECS" --prefix "$label" >"$WORK/ingest-$label"
  taskset -c "$CLIENT_CPU" wrk -t1 -c16 -d"${SECS}s" --latency -H 'Accept-Encoding: gzip' \
    -H "If-None-Match: $etag" "$bc$closed" >"$WORK/wrk-$label"
  [[ -z $fpid ]] || wait "$fpid"
  after=$(cpu_ticks "$SERVER_PID")
  echo $((after - before)) >"$WORK/cpu-$label"
}

log "without the flood (${SECS}s ingest, then ${SECS}s reads)"
run quiet
log "with $FLOOD connections subscribing and unsubscribing"
run flood /events
log "the reference: $FLOOD connections each asking GET /healthz and closing"
run connections /healthz

kv() { tr ' ' '\n' <"$1" | awk -F= -v k="$2" '$1 == k {print $2}'; }
echo "### A flood of subscribe/unsubscribe beside ingest and reads (one node, SECS=$SECS, FLOOD=$FLOOD)"
echo
echo "| run | ingest IDs/s | ingest p99 ms | ingest failures | 304 reads/s | 304 p99 ms | read errors | flood cycles/s (errors) | server CPU s |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for label in quiet flood connections; do
  read -r rps _p50 p99 err < <(parse_wrk "$WORK/wrk-$label")
  cycles="-"
  if [[ -s $WORK/flood-$label ]]; then
    cycles="$(kv "$WORK/flood-$label" per_second) ($(kv "$WORK/flood-$label" errors))"
  fi
  printf '| %s | %s | %s | %s | %.0f | %s | %s | %s | %.1f |\n' "$label" \
    "$(kv "$WORK/ingest-$label" ids_per_s)" "$(kv "$WORK/ingest-$label" p99_ms)" \
    "$(kv "$WORK/ingest-$label" errors)" "$rps" "$p99" "$err" "$cycles" \
    "$(awk -v t="$(cat "$WORK/cpu-$label")" -v hz="$TICKS" 'BEGIN {printf "%.1f", t / hz}')"
done
