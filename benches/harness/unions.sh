#!/usr/bin/env bash
# Unions at scale, as an anonymous client would try them: a store holding 24 past hours of
# HOUR_IDS distinct IDs each, no ID in two hours (default 400,000: 9.6M IDs), and one
# reader per pattern.
#
#   benches/harness/unions.sh                 # 24 x 400,000 IDs
#   HOUR_IDS=100000 benches/harness/unions.sh # a quicker run
#   BIN=/path/to/other/bloomcast benches/harness/unions.sh   # measure another build
#   VS=/path/to/other/bloomcast COLD=6 BUILDS_ONLY=1 benches/harness/unions.sh
#                                             # cold builds of this build and another,
#                                             # alternating on the same store
#   READER_CPU=1 benches/harness/unions.sh    # the reader loops pinned to core 1, off
#                                             # the server's core (unpinned by default)
#   BUILDS_ONLY=1 HOUR_IDS=2445833 BLOOMCAST_CACHE_BYTES=4294967296 benches/harness/unions.sh
#                                             # the builds alone, at 58.7M keys (their
#                                             # build needs about 820 MiB of the budget)
#
# Prints, each measured from the server process's own CPU time (/proc/PID/stat) and peak
# RSS (VmHWM):
# - one `GET /since/<24 hours ago>.bin` (a cold build), then the same again (cached);
#   COLD=N (default 1) makes N cold builds, each on a freshly started server over the
#   same store, for the spread of the figure the build goal is about;
# - the JSON form of the same union after the .bin one;
# - a reader looping on that since-union for TRICKLE_SECS while a publisher posts 100 IDs
#   every 0.5 s, next to the same trickle with no reader: the union's share of a core;
#   then the same reader with nothing arriving (what sending the bytes costs alone), and
#   the server's own account of the trickle's part (`/stats` `unions`: the CPU time of
#   carrying the union forward and rendering it, per version). The two phases alternate
#   ROUNDS times (default 3): sending a body of megabytes over loopback varies by more
#   than the trickle costs, so one pair of phases says little; the extra is the mean of
#   the rounds' differences, with their range. Once for the raw form without compression,
#   once for JSON with gzip, as a poller asks, and once for JSON as a plain `curl` of the
#   URL gets it (the issue's reader). The publisher runs on the client core, as the
#   readers do with READER_CPU;
# - 50 concurrent distinct since-ranges: how many were answered 200, 503 busy or 408;
# - the same-run reference: nginx (one process, sendfile, gzip_static; installed from
#   Debian's packages when missing) on the same core serving the very bytes of that
#   union to the same reader loop: what sending a body of that size costs a static
#   file server.
# The past hours are seeded through the store API (examples/seed_closed_hour.rs), oldest
# first, so the server's startup seals them. The server runs pinned to core 0.
set -euo pipefail
source "$(dirname "$0")/common.sh"
ensure_tools nginx:nginx-light python3:python3
HOUR_IDS="${HOUR_IDS:-400000}"
TRICKLE_SECS="${TRICKLE_SECS:-30}"
make_work


data="$WORK/data"
log "seeding 24 past hours of $HOUR_IDS IDs"
for ago in $(seq 24 -1 1); do
  # Each hour its own IDs, as the issue's scenario has them: the union of the 24 holds
  # 24 x HOUR_IDS distinct IDs (9.6M, an 11.5 MB filter), not HOUR_IDS seen 24 times.
  "$EXAMPLES/seed_closed_hour" "$data" "$HOUR_IDS" "$ago" "h$ago" >/dev/null
done
# Starts the server on the store; sets pid and base once /healthz is 200 (the startup
# housekeeping has sealed the 24 hours) and the server is idle: what follows a seal in
# the background (each hour's compact forms, warming) would otherwise be counted in the
# first build's CPU.
serve() {
  local port
  port=$(free_port)
  base="http://127.0.0.1:$port"
  START_TRIES=6000 start_bloomcast "$data" "$port"
  pid=$SERVER_PID
  wait_idle "$pid"
}
serve
since=$(date -u -d '-24 hours' +%Y/%m/%d/%H)

measure() { # label, then curl arguments
  local label="$1"; shift
  local before after status
  before=$(cpu_ticks "$pid")
  status=$(curl -s -o /dev/null -w '%{http_code}' "$@")
  after=$(cpu_ticks "$pid")
  rows+=("| $label | $status | $(cpu_s $((after - before))) | $(hwm_mib "$pid") |")
}
rows=()
for round in $(seq 2 "${COLD:-1}"); do
  measure "since 24 h, .bin, cold (fresh server $((round - 1)))" "$base/since/$since.bin"
  stop_pid "$pid"
  if [ -n "${VS:-}" ]; then
    BIN="$VS" serve
    measure "since 24 h, .bin, cold, VS build (fresh server $((round - 1)))" "$base/since/$since.bin"
    stop_pid "$pid"
  fi
  serve
done
measure "since 24 h, .bin, cold" "$base/since/$since.bin"
measure "since 24 h, .bin, again" "$base/since/$since.bin"
measure "since 24 h, JSON after .bin" "$base/since/$since.json"
if [ -n "${BUILDS_ONLY:-}" ]; then
  stop_pid "$pid"
  echo
  echo "### Union builds over 24 hours of $HOUR_IDS IDs (server pinned to core $SERVER_CPU)"
  echo
  echo "| request | status | server CPU s | peak RSS MiB |"
  echo "|---|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  exit 0
fi

trickle() { # seconds; run it in a subshell: it pins its shell to the client core
  local end=$((SECONDS + $1)) i=0
  taskset -cp "$CLIENT_CPU" "$BASHPID" >/dev/null
  while [ $SECONDS -lt $end ]; do
    seq 1 100 | sed "s/^/trickle-$RANDOM-$i-/" | curl -s -o /dev/null -X POST "$base/updates" \
      -H "Authorization: Bearer $TOKEN" -H 'Content-Type: text/plain' --data-binary @-
    i=$((i + 1))
    sleep 0.5
  done
}
before=$(cpu_ticks "$pid"); (trickle "$TRICKLE_SECS"); after=$(cpu_ticks "$pid")
alone=$((after - before))

# GETs with these curl arguments, one after another for TRICKLE_SECS; prints how many.
read_loop() {
  local end=$((SECONDS + TRICKLE_SECS)) reads=0
  while [ $SECONDS -lt $end ]; do
    ${READER_CPU:+taskset -c "$READER_CPU"} curl -s -o /dev/null "$@"; reads=$((reads + 1))
  done
  echo "$reads"
}
# The server's own account of union work (`/stats`): CPU seconds carrying unions
# forward, CPU seconds building and rendering them, and how many versions were made
# (builds plus advances).
union_work() {
  curl -sf "$base/stats?hours=1" | python3 -c 'import json, sys
u = json.load(sys.stdin)["unions"]
print(u["advances"]["cpu_seconds"], u["builds"]["cpu_seconds"] + u["renders"]["cpu_seconds"],
      u["builds"]["runs"] + u["advances"]["runs"])'
}
# One reader looping on the since-union in one form for TRICKLE_SECS, first while the
# trickle runs, then with nothing arriving, ROUNDS times; one line of figures. The extra
# is each round's first phase less its second, averaged; the server's own account of
# union work says the same without the noise of sending the bytes.
shares=()
reader() { # label, then curl arguments
  local label="$1"; shift
  local before after trickler work_before work_after round
  local with=0 reads=0 alone=0 idle_reads=0 extras=()
  work_before=$(union_work)
  for round in $(seq 1 "${ROUNDS:-3}"); do
    before=$(cpu_ticks "$pid")
    (trickle "$TRICKLE_SECS") &
    trickler=$!
    reads=$((reads + $(read_loop "$@")))
    wait "$trickler"
    after=$(cpu_ticks "$pid")
    with=$((with + after - before))
    extras+=($((after - before)))
    # The same reader with nothing arriving: what serving the union's bytes costs by itself.
    before=$(cpu_ticks "$pid")
    idle_reads=$((idle_reads + $(read_loop "$@")))
    after=$(cpu_ticks "$pid")
    alone=$((alone + after - before))
    extras[-1]=$((extras[-1] - (after - before)))
  done
  work_after=$(union_work)
  shares+=("$(awk -v l="$label" -v w="$with" -v n="$reads" -v r="$alone" -v rn="$idle_reads" \
      -v s="$((TRICKLE_SECS * ${ROUNDS:-3}))" -v hz="$tick_hz" -v wb="$work_before" -v wa="$work_after" \
      -v ex="${extras[*]}" -v ps="$TRICKLE_SECS" 'BEGIN {
    split(wb, b, " "); split(wa, a, " ")
    advance = a[1] - b[1]; render = a[2] - b[2]; versions = a[3] - b[3]; per = versions ? 1000 / versions : 0
    rounds = split(ex, e, " "); lo = hi = e[1]
    for (i = 2; i <= rounds; i++) { if (e[i] < lo) lo = e[i]; if (e[i] > hi) hi = e[i] }
    printf "| %s | %.1f%% (%d reads, %.2f ms each) | %.1f%% (%d reads, %.2f ms each) | **%.1f%%** (%d rounds: %.1f to %.1f%%) | %.1f%% (%d versions, %.1f ms each: %.2f advancing, %.1f rendering) |", l,
      100 * w / hz / s, n, 1000 * w / hz / n, 100 * r / hz / s, rn, 1000 * r / hz / rn,
      100 * (w - r) / hz / s, rounds, 100 * lo / hz / ps, 100 * hi / hz / ps,
      100 * (advance + render) / s, versions, (advance + render) * per, advance * per, render * per }')")
}
reader "\`.bin\`, identity" "$base/since/$since.bin"
reader "JSON, gzip" --compressed "$base/since/$since.json"
reader "JSON, identity (plain curl)" "$base/since/$since"

# The very bytes of the union as they stand now, for nginx to serve as static files.
mkdir -p "$WORK/www"
curl -sf -o "$WORK/www/union.bin" "$base/since/$since.bin"
curl -sf -o "$WORK/www/union.json" "$base/since/$since.json"
curl -sf -H 'Accept-Encoding: gzip' -o "$WORK/www/union.json.gz" "$base/since/$since.json"
chmod -R a+rX "$WORK"

statuses=$(for h in $(seq 1 50); do
  from=$(date -u -d "-$((h % 24 + 1)) hours -$h minutes" +%Y/%m/%d/%H)
  # Distinct ranges: hour and representation vary.
  repr=(bin hex json); r=${repr[$((h % 3))]}
  curl -s -o /dev/null -w '%{http_code}\n' --max-time 60 "$base/since/$from.$r" &
done; wait)
stop_pid "$pid"

# The same-run reference: nginx (one process, sendfile, gzip_static) on the same core
# serving those bytes to the same reader loop, nothing arriving. What sending a union of
# this size costs a static file server; bloomcast's "nothing arriving" column compares
# with it.
nport=$(free_port)
write_nginx_conf "$nport" 1 "master_process off;"
taskset -c "$SERVER_CPU" nginx -c "$WORK/nginx.conf" -e "$WORK/nginx-error.log" &
npid=$!
PIDS+=("$npid")
wait_http "http://127.0.0.1:$nport/union.bin" || die "nginx did not start: $(cat "$WORK/nginx-error.log")"
nginx_reader() { # label, then curl arguments
  local label="$1"; shift
  local before after reads
  before=$(cpu_ticks "$npid")
  reads=$(read_loop "$@")
  after=$(cpu_ticks "$npid")
  nginx_shares+=("$(awk -v l="$label" -v c=$((after - before)) -v n="$reads" -v s="$TRICKLE_SECS" \
      -v hz="$tick_hz" 'BEGIN { printf "| %s | %.1f%% (%d reads, %.2f ms each) |", l,
      100 * c / hz / s, n, 1000 * c / hz / n }')")
}
nginx_shares=()
nginx_reader "\`.bin\`, identity" "http://127.0.0.1:$nport/union.bin"
nginx_reader "JSON, gzip" --compressed "http://127.0.0.1:$nport/union.json"
nginx_reader "JSON, identity (plain curl)" "http://127.0.0.1:$nport/union.json"
stop_pid "$npid"

echo
echo "### Unions over 24 hours of $HOUR_IDS IDs (server pinned to core $SERVER_CPU${READER_CPU:+, readers to core $READER_CPU}, publisher to core $CLIENT_CPU; ${ROUNDS:-3} rounds of $TRICKLE_SECS s)"
echo
echo "| request | status | server CPU s | peak RSS MiB |"
echo "|---|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
echo
awk -v a="$alone" -v s="$TRICKLE_SECS" -v hz="$tick_hz" 'BEGIN {
  printf "Trickle of 100 IDs every 0.5 s for %d s, no reader: %.2f CPU-s (%.1f%% of a core)\n\n", s, a / hz, 100 * a / hz / s }'
echo "| a reader looping on the union | with the trickle: share of a core | nothing arriving | extra: the difference | union work (server's /stats) |"
echo "|---|---:|---:|---:|---:|"
printf '%s\n' "${shares[@]}"
echo
echo "| the same reader on nginx serving the same bytes (same run) | share of a core |"
echo "|---|---:|"
printf '%s\n' "${nginx_shares[@]}"
echo
echo "50 concurrent distinct since-ranges: $(sort <<<"$statuses" | uniq -c | awk '{ printf "%s x %s, ", $1, $2 }' | sed 's/, $//')"
