#!/usr/bin/env bash
# Can anonymous clients asking distinct precisions starve a client of the SDK's grades?
# (PROTOCOL.md section 12: the grade set, warm grades, fair builds.)
#
# A closed hour of N IDs (seeded one hour ago through the store API, so that it is the
# newest hour the server seals at start) on a fresh release server. As soon as the
# server answers, F flooders (each its own peer address, 127.0.0.2 ..) ask
# `.ribbon2?fpp=P` with P random in [2^-24, 0.5), one in four of them for another,
# random past hour, C requests at a time each, without pause. Meanwhile one client
# (127.0.0.100) asks for every grade the index lists in `ribbon_grades` (the SDKs' whole
# bits and the target's grade), one after the other: once at once (while the server
# still warms the hour), and once more after `/stats` says the hour is warm. For each
# pass it prints the grades answered 200, the time until the last answer, the worst
# single latency, and the server's CPU seconds (utime + stime from /proc/PID/stat)
# over the pass; then what the flooders got. It prints figures; it asserts nothing.
#
#   benches/harness/grades.sh                  # N = 1M, F = 4, C = 2
#   N=200000 F=8 benches/harness/grades.sh
#   BIN=/path/to/older/bloomcast benches/harness/grades.sh   # the build before a change
set -euo pipefail
source "$(dirname "$0")/common.sh"
N="${N:-1000000}"
F="${F:-4}"
C="${C:-2}"
WARM_WAIT="${WARM_WAIT:-300}"
make_work
[[ -x "$BIN" && -x "$EXAMPLES/seed_closed_hour" ]] || build
# The seeded hour must stay the newest sealed one for the whole run.
ensure_hour_lasts 600

log "seeding $N IDs into the hour before the current one"
hour=$("$EXAMPLES/seed_closed_hour" "$WORK/data" "$N" 1)
port=$(free_port)
base="http://127.0.0.1:$port"
hz=$(getconf CLK_TCK)
cpu_s() { awk -v hz="$hz" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$SERVER_PID/stat"; }

START_TRIES=600 start_bloomcast "$WORK/data" "$port"
started=$(date +%s.%N)
grades=$(curl -sf "$base/" | python3 -c 'import json, sys; print(" ".join(json.load(sys.stdin)["ribbon_grades"]))')
[[ -n "$grades" ]] || die "the index lists no ribbon_grades"
day_index=$(python3 -c "import datetime as d, sys; print(int(d.datetime.strptime(sys.argv[1], '/%Y/%m/%d/%H').replace(tzinfo=d.timezone.utc).timestamp()) // 3600)" "$hour")

# flooder I: random precisions, C at a time, until killed; statuses to $WORK/flood.I.
flooder() {
  local i="$1" ip="127.0.0.$((i + 2))" urls="$WORK/urls.$1"
  while :; do
    python3 - "$base" "$hour" "$day_index" "$RANDOM$i" >"$urls" <<'EOF'
import datetime, random, sys
base, hour, index, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
for _ in range(40):
    p = 2 ** rng.uniform(-24, -1)
    path = hour
    if rng.random() < 0.25:  # another past hour (retained or not, sealed empty or none)
        h = datetime.datetime.fromtimestamp((index - rng.randint(1, 30)) * 3600, datetime.timezone.utc)
        path = h.strftime("/%Y/%m/%d/%H")
    print(f'url = "{base}{path}.ribbon2?fpp={p!r}"')
    print('output = "/dev/null"')
EOF
    curl -s --interface "$ip" --parallel --parallel-max "$C" --max-time 60 \
      -w '%{http_code}\n' -K "$urls" >>"$WORK/flood.$i" 2>/dev/null || true
  done
}

# sdk_pass NAME: every published grade once, in turn, from its own address.
sdk_pass() {
  local name="$1" cpu0 cpu1 t0 t1 g line code secs ok=0 total=0 worst=0 statuses=""
  cpu0=$(cpu_s)
  t0=$(date +%s.%N)
  for g in $grades; do
    line=$(curl -s --interface 127.0.0.100 -o /dev/null --max-time 60 \
      -w '%{http_code} %{time_total}' "$base$hour.ribbon2?fpp=$g" || echo "000 60")
    code=${line% *}
    secs=${line#* }
    total=$((total + 1))
    [[ $code == 200 ]] && ok=$((ok + 1))
    statuses+="$code "
    worst=$(echo "$secs $worst" | awk '{print ($1 > $2) ? $1 : $2}')
  done
  t1=$(date +%s.%N)
  cpu1=$(cpu_s)
  printf '| %s | %d of %d | %.2f | %.3f | %.2f |\n' "$name" "$ok" "$total" \
    "$(echo "$t1 - $t0" | bc -l)" "$worst" "$(echo "$cpu1 - $cpu0" | bc -l)"
  echo "$name statuses: $statuses" >>"$WORK/sdk-statuses"
}

stats() { curl -s --interface 127.0.0.100 "$base/stats"; }
field() { python3 -c "import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1], {}, {'d': d}))" "$1"; }

flooders=()
for ((i = 0; i < F; i++)); do
  : >"$WORK/flood.$i"
  flooder "$i" &
  flooders+=($!)
  PIDS+=($!)
done

echo "N = $N IDs in $hour; $F flooders x $C requests at a time, random ?fpp= (one in 4 another hour); $(machine)"
echo "grades published: $(echo "$grades" | wc -w) ($grades)"
echo
echo "| SDK client pass | grades answered 200 | seconds to the last | worst latency, s | server CPU s in the pass |"
echo "|-----------------|---------------------|---------------------|------------------|--------------------------|"
sdk_pass "at once (warming)"
deadline=$(($(date +%s) + WARM_WAIT))
until [[ $(stats | field "d['warm']['hours'] >= 1 and d['warm']['pending'] == 0") == True ]]; do
  (($(date +%s) < deadline)) || { echo "(not warm after ${WARM_WAIT}s)"; break; }
  sleep 0.5
done
warm_at=$(echo "$(date +%s.%N) - $started" | bc -l)
sdk_pass "after warm"
for pid in "${flooders[@]}"; do
  kill "$pid" 2>/dev/null || true
done
wait "${flooders[@]}" 2>/dev/null || true
echo
printf 'warm after %.1f s from the server answering; server CPU %.2f s in all\n' "$warm_at" "$(cpu_s)"
stats | field "'warm: ' + str(d['warm']) + '\nbuild_queue: ' + str(d['build_queue']) + '\nunions.hour_ribbons: ' + str(d['unions']['hour_ribbons'])"
echo "flooders' statuses: $(cat "$WORK"/flood.* | sort | uniq -c | awk '{printf "%s%s x %s", sep, $1, $2; sep = ", "}')"
echo "peak RSS: $(awk '/^VmHWM:/ {printf "%d MB", $2 / 1024}' "/proc/$SERVER_PID/status")"
cat "$WORK/sdk-statuses"
