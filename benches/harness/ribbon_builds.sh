#!/usr/bin/env bash
# What readers of one closed hour's compact form cost the server: C concurrent requests
# for the hour's ribbon, all the same (`.ribbon`), then each at another precision
# (`?fpp=`), on a closed hour of N IDs. For each burst: the statuses, the server's CPU
# seconds (utime + stime from /proc/PID/stat) and its peak RSS above what it held before
# the burst (VmHWM after resetting it through /proc/PID/clear_refs).
#
#   benches/harness/ribbon_builds.sh                 # N = 1M, C = 4
#   N=5000000 C=8 benches/harness/ribbon_builds.sh
#   BIN=/path/to/older/bloomcast benches/harness/ribbon_builds.sh   # the build before a change
#
# The hour is seeded through the store API (examples/seed_closed_hour.rs, two hours ago)
# and sealed, with its .bin read once, before the first burst, so a burst measures the
# ribbon builds alone. Each burst runs on a fresh server started on a copy of that data.
set -euo pipefail
source "$(dirname "$0")/common.sh"
N="${N:-1000000}"
C="${C:-4}"
make_work
[[ -x "$BIN" && -x "$EXAMPLES/seed_closed_hour" ]] || build

log "seeding $N IDs into a closed hour"
hour=$("$EXAMPLES/seed_closed_hour" "$WORK/seed" "$N")

# burst NAME QUERY...: C requests at once, one per query given (cycled).
burst() {
  local name="$1" port ticks0 ticks1 hz rss0 hwm i q statuses
  shift
  local queries=("$@")
  rm -rf "$WORK/data" && cp -r "$WORK/seed" "$WORK/data"
  port=$(free_port)
  start_bloomcast "$WORK/data" "$port"
  curl -sf -o /dev/null "http://127.0.0.1:$port$hour.bin" || die "the seeded hour is not served"
  sleep 1
  hz=$(getconf CLK_TCK)
  rss0=$(rss_kb "$SERVER_PID")
  echo 5 >"/proc/$SERVER_PID/clear_refs"
  ticks0=$(awk '{print $14 + $15}' "/proc/$SERVER_PID/stat")
  local clients=()
  for ((i = 0; i < C; i++)); do
    q="${queries[i % ${#queries[@]}]}"
    curl -s -o /dev/null -w '%{http_code}\n' --max-time 120 \
      "http://127.0.0.1:$port$hour.ribbon$q" >"$WORK/status.$i" &
    clients+=($!)
  done
  wait "${clients[@]}" || true
  ticks1=$(awk '{print $14 + $15}' "/proc/$SERVER_PID/stat")
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$SERVER_PID/status")
  statuses=$(cat "$WORK"/status.* | sort | uniq -c | awk '{printf "%s%s x %s", sep, $1, $2; sep = ", "}')
  printf '| %s | %s | %.1f | %d |\n' "$name" "$statuses" \
    "$(echo "($ticks1 - $ticks0) / $hz" | bc -l)" $(((hwm - rss0) / 1024))
  rm -f "$WORK"/status.*
  stop_pid "$SERVER_PID"
}

echo "N = $N IDs, C = $C concurrent requests; $(machine)"
echo
echo "| burst | statuses | CPU s | peak RSS above idle, MB |"
echo "|-------|----------|-------|--------------------------|"
burst "$C x the same .ribbon" ""
burst "$C x another ?fpp=" "?fpp=0.01" "?fpp=0.001" "?fpp=0.0001" "?fpp=0.00001" \
  "?fpp=0.000001" "?fpp=0.1" "?fpp=0.05" "?fpp=0.0005"
