#!/usr/bin/env bash
# Exact hours from outside (issue 35): a release server registers a universe of N IDs
# (POST /universe, batches of 500,000), R of them change in one hour (POST /updates), and
# the hour closes; then, measured on the running server:
# - POST /universe: IDs per second, and the store's bytes per universe ID (what the
#   SQLite file and its WAL grew by; with PG_URL set, the same universe posted to a
#   node on PostgreSQL and `pg_total_relation_size` of its universe table);
# - the seal: seconds from the hour's end until `GET /HOUR.exact` answers 200 (the body is
#   built by housekeeping right after the seal, or by that request), the build's CPU
#   seconds (/stats unions.hour_exacts), and the server's peak RSS during it
#   (VmHWM reset just before the hour ends) above its RSS before, per universe ID;
# - the body: bytes, its header, and the floor log2(C(N, R))/8.
#
#   benches/harness/exact.sh                          # N = 10,000,000, R = 1,000,000
#   N=1000000 R=100000 benches/harness/exact.sh       # a quick run
#   PG_URL=postgres://postgres@127.0.0.1:5432/test benches/harness/exact.sh
#   R=5000000 CACHE_BYTES=1073741824 benches/harness/exact.sh   # 50% changed: a larger budget
#
# The server's clock is offset (clock_offset_seconds) so that its hour ends LEAD seconds
# (default 240) after it starts; posting must finish by then (the script says if not).
set -euo pipefail
source "$(dirname "$0")/common.sh"
N="${N:-10000000}"
R="${R:-1000000}"
LEAD="${LEAD:-240}"
BATCH=500000
build
make_work
port=$(free_port)

# ids PREFIX FROM TO STEP: PREFIX:i for i in FROM..TO-1 by STEP, one per line.
ids() { seq "$2" "$4" $(($3 - 1)) | sed "s/^/$1:/"; }

post() { # post PORT ROUTE FILE
  curl -sf -X POST "http://127.0.0.1:$1$2" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: text/plain' --data-binary @"$3" >/dev/null
}

post_universe() { # post_universe PORT: seconds taken
  local start end from
  start=$(date +%s.%N)
  for ((from = 0; from < N; from += BATCH)); do
    ids u "$from" $((from + BATCH < N ? from + BATCH : N)) 1 >"$WORK/batch"
    post "$1" /universe "$WORK/batch"
  done
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}

offset=$(( (3600 - LEAD) - $(date -u +%s) % 3600 ))
log "server hour ends in ${LEAD}s (clock offset ${offset}s)"
data="$WORK/data"
start_bloomcast "$data" "$port" BLOOMCAST_CLOCK_OFFSET_SECONDS="$offset" \
  BLOOMCAST_MAX_UNIVERSE_IDS="$N" BLOOMCAST_CACHE_BYTES="${CACHE_BYTES:-536870912}"
pid=$SERVER_PID
hour=$(current_path "$port")
started=$(date +%s)
sqlite3_bytes() { du -sb "$data" | cut -f1; }
empty=$(sqlite3_bytes)
secs=$(post_universe "$port")
stored=$(( $(sqlite3_bytes) - empty ))
ids u 0 "$N" $((N / R)) >"$WORK/changed"
for ((from = 0; from < R; from += BATCH)); do
  sed -n "$((from + 1)),$((from + BATCH))p" "$WORK/changed" >"$WORK/batch"
  post "$port" /updates "$WORK/batch"
done
left=$((LEAD - ($(date +%s) - started)))
((left > 5)) || die "posting took longer than LEAD=${LEAD}s; raise LEAD"
before_kb=$(rss_kb "$pid")
echo 5 >"/proc/$pid/clear_refs"
log "waiting ${left}s for $hour to close"
sleep "$left"
closed=$(date +%s.%N)
until curl -sf -o "$WORK/body" "http://127.0.0.1:$port$hour.exact"; do sleep 0.2; done
ready=$(date +%s.%N)
peak_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
body=$(stat -c %s "$WORK/body")
floor=$(python3 -c "from math import lgamma,log; print(round((lgamma($N+1)-lgamma($R+1)-lgamma($N-$R+1))/log(2)/8))")

echo "machine: $(machine)"
echo "universe: $N IDs posted in $(printf %.1f "$secs") s ($(echo "$N / $secs" | bc) IDs/s); $R changed in $hour"
echo "SQLite: the universe took $stored bytes of file and WAL, $(echo "scale=1; $stored / $N" | bc) B per universe ID"
echo "exact body: $body bytes; floor log2(C(N,R))/8 = $floor bytes; x floor (header included) $(echo "scale=3; $body / $floor" | bc)"
build_cpu=$(curl -sf "http://127.0.0.1:$port/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["unions"]["hour_exacts"]["cpu_seconds"])')
echo "served $(printf %.1f "$(echo "$ready - $closed" | bc -l)") s after the hour ended; the exact build took $(printf %.2f "$build_cpu") CPU-s of the server (/stats unions.hour_exacts)"
echo "RSS: $((before_kb / 1024)) MiB before the hour ended, peak $((peak_kb / 1024)) MiB during the seal and build: $(echo "scale=1; ($peak_kb - $before_kb) * 1024 / $N" | bc) B per universe ID above it"
stop_pid "$pid"

if [[ -n "${PG_URL:-}" ]]; then
  schema="exact_bench_$$"
  port=$(free_port)
  start_bloomcast "$WORK/pgdata" "$port" BLOOMCAST_DATABASE_URL="$PG_URL" \
    BLOOMCAST_DATABASE_SCHEMA="$schema" BLOOMCAST_MAX_UNIVERSE_IDS="$N"
  secs=$(post_universe "$port")
  bytes=$(psql "$PG_URL" -tAc "SELECT pg_total_relation_size('\"$schema\".universe')")
  echo "PostgreSQL: $N IDs posted in $(printf %.1f "$secs") s ($(echo "$N / $secs" | bc) IDs/s); universe table with its index $bytes bytes, $(echo "scale=1; $bytes / $N" | bc) B per universe ID"
  stop_pid "$SERVER_PID"
  psql "$PG_URL" -qc "DROP SCHEMA \"$schema\" CASCADE" >/dev/null
fi
