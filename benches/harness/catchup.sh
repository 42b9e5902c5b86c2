#!/usr/bin/env bash
# Catching up after a gap, at a memory budget: a store holding 24 past hours of
# HOUR_IDS distinct IDs (default 400,000: 9.6M IDs) after OLD_HOURS older hours of
# OLD_IDS each (default 100 of 20,000), a server at BLOOMCAST_CACHE_BYTES (default
# 256 MiB), pinned to core 0.
#
#   benches/harness/catchup.sh
#   HOUR_IDS=100000 OLD_HOURS=30 benches/harness/catchup.sh          # a quicker run
#   BIN=/path/to/other/bloomcast benches/harness/catchup.sh          # another build
#   EXACT=1 BLOOMCAST_CACHE_BYTES=2147483648 benches/harness/catchup.sh  # with a universe
#
# With EXACT=1 the publisher registered a universe in the first seeded hour (every ID
# published joins it as its hour is sealed): the table of forms adds the since-range's
# `.exact` body against its floor, log2(C(N, r))/8 bytes for r of the N IDs of the
# universe, and catching up adds the CLI declaring its IDs registered (`--registered`).
#
# Prints, from the server process (its CPU time from /proc/PID/stat, its RSS from
# /proc/PID/status):
# - `GET /since/<24 hours ago>` in every form (`.bin`, `.hex`, `.json`, JSON gzip,
#   `.ribbon2` at the target and at 1e-3): status, bytes, server CPU, peak RSS;
# - RANGES (default 100) distinct since-ranges (from each of the 100 hours before those
#   24: each over at least 9.6M keys), asked 10 at a time and each asked again after its
#   `Retry-After` until it is answered (503 busy while the builds' part of the budget is
#   taken): how many answered 200 at once and in all, how long it took, and the
#   server's RSS sampled every 0.2 s against the bound the issue sets: the budget, plus
#   the open hour (empty here), plus 64 MiB;
# - catching up with the CLI (`bloomcast check --json`, the Rust SDK) after a gap of
#   1 hour, 1 day and every hour held, per strategy: requests, body bytes, against the
#   floor of the range's distinct IDs, and whether every changed ID followed was found.
set -euo pipefail
source "$(dirname "$0")/common.sh"
HOUR_IDS="${HOUR_IDS:-400000}"
OLD_HOURS="${OLD_HOURS:-100}"
OLD_IDS="${OLD_IDS:-20000}"
BUDGET="${BLOOMCAST_CACHE_BYTES:-268435456}"
RANGES="${RANGES:-100}"
make_work


data="$WORK/data"
log "seeding $OLD_HOURS hours of $OLD_IDS IDs, then 24 of $HOUR_IDS"
for ago in $(seq $((24 + OLD_HOURS)) -1 1); do
  n=$OLD_IDS
  ((ago > 24)) || n=$HOUR_IDS
  SEED_UNIVERSE="${EXACT:-0}" "$EXAMPLES/seed_closed_hour" "$data" "$n" "$ago" "h$ago" >/dev/null
done
port=$(free_port)
base="http://127.0.0.1:$port"
START_TRIES=6000 start_bloomcast "$data" "$port" BLOOMCAST_CACHE_BYTES="$BUDGET"
pid=$SERVER_PID
# Idle once its startup has sealed the hours and warmed the newest.
wait_idle "$pid"
idle_mib=$(($(rss_kb "$pid") / 1024))
since=$(date -u -d '-24 hours' +%Y/%m/%d/%H)

rows=()
form() { # label, then curl arguments
  local label="$1"; shift
  local before after out
  before=$(cpu_ticks "$pid")
  out=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "$@")
  after=$(cpu_ticks "$pid")
  rows+=("| $label | ${out% *} | ${out#* } | $(cpu_s $((after - before))) | $(hwm_mib "$pid") |")
}
form "\`.bin\`" "$base/since/$since.bin"
form "\`.hex\`" "$base/since/$since.hex"
form "\`.json\`" "$base/since/$since.json"
form "JSON, gzip" --compressed "$base/since/$since.json"
form "\`.ribbon2\` (target)" "$base/since/$since.ribbon2"
form "\`.ribbon2?fpp=1e-3\`" "$base/since/$since.ribbon2?fpp=1e-3"
if [ "${EXACT:-0}" = 1 ]; then
  form "\`.exact\`" "$base/since/$since.exact"
  # Its floor: r of the range (24 big hours, distinct) among N (every ID seeded).
  exact_floor=$(python3 -c 'import math, sys
r, n = int(sys.argv[1]), int(sys.argv[2])
print(round((math.lgamma(n + 1) - math.lgamma(r + 1) - math.lgamma(n - r + 1)) / math.log(2) / 8))' \
    $((24 * HOUR_IDS)) $((24 * HOUR_IDS + OLD_HOURS * OLD_IDS)))
fi

# The 100 ranges, 10 at a time, each retried after its Retry-After until answered.
sampler() {
  local peak=0 rss
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(rss_kb "$pid")
    ((rss > peak)) && peak=$rss && echo "$peak" >"$WORK/peak"
    sleep 0.2
  done
}
echo 0 >"$WORK/peak"
sampler &
sampler_pid=$!
PIDS+=("$sampler_pid")
ask() { # hours ago: one range, until answered; prints its first status and its last
  local from first="" status after
  from=$(date -u -d "-$1 hours" +%Y/%m/%d/%H)
  while :; do
    status=$(curl -s -D "$WORK/h.$1" -o /dev/null -w '%{http_code}' --max-time 120 "$base/since/$from.bin")
    first=${first:-$status}
    [ "$status" = 503 ] || break
    after=$(awk 'tolower($1) == "retry-after:" { print $2 + 0 }' "$WORK/h.$1")
    sleep "${after:-1}"
  done
  echo "$first $status"
}
started=$SECONDS
before=$(cpu_ticks "$pid")
: >"$WORK/answers"
for wave in $(seq 0 10 $((RANGES - 1))); do
  askers=()
  for i in $(seq "$wave" $((wave + 9))); do
    ((i < RANGES)) || break
    ask $((25 + i % OLD_HOURS)) >>"$WORK/answers" &
    askers+=($!)
  done
  wait "${askers[@]}"
done
after=$(cpu_ticks "$pid")
took=$((SECONDS - started))
peak_mib=$(($(cat "$WORK/peak") / 1024))
stop_pid "$sampler_pid"

# Catching up: the CLI (`bloomcast check --json`, the Rust SDK) following FOLLOWED IDs
# (default 100: one of every 24th of the big hours' IDs, so every one changed), after a
# gap of 1 hour, 1 day (the 24 big hours) and every hour the store holds, each strategy:
# requests and body bytes, against the floor of the range's distinct IDs at the target
# fpp (n log2(1/p) bits) and the v1 union's bytes.
FOLLOWED="${FOLLOWED:-100}"
followed=()
for i in $(seq 0 $((FOLLOWED - 1))); do followed+=("h$((i % 24 + 1)):$((i * 7))"); done
catchup=()
for gap in 1 24 $((24 + OLD_HOURS)); do
  from=$(date -u -d "-$gap hours" +%Y-%m-%dT%H)
  n=$((gap <= 24 ? gap * HOUR_IDS : 24 * HOUR_IDS + (gap - 24) * OLD_IDS))
  strategies=(hourly union compact auto)
  [ "${EXACT:-0}" = 1 ] && strategies+=("hourly --registered" "auto --registered")
  for strategy in "${strategies[@]}"; do
    # shellcheck disable=SC2086 # the strategy and its flag
    out=$("$BIN" check --server "$base" --since "$from" --strategy $strategy --accept-stale --json "${followed[@]}" 2>/dev/null || true)
    catchup+=("$(python3 -c 'import json, math, sys
d = json.loads(sys.argv[1] or "{}")
gap, n, strategy = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
followed = sys.argv[5:]
# hA:B changed A hours ago: in the range when A <= gap.
changed = {f for f in followed if int(f[1:].split(":")[0]) <= gap}
flagged = set(d.get("changed", []))
floor = n * math.log2(100) / 8
requests, got = d.get("requests", "-"), d.get("bytes", 0)
print(f"| {gap} h ({n:,} IDs) | {strategy} | {requests} | {got:,} | {got / floor:.2f}x | {len(changed & flagged)} of {len(changed)} | {len(flagged - changed)} |")' "$out" "$gap" "$n" "$strategy" "${followed[@]}")")
  done
done
stop_pid "$pid"

echo
echo "### Catching up over 24 hours of $HOUR_IDS IDs at a budget of $((BUDGET >> 20)) MiB (server pinned to core $SERVER_CPU; idle RSS $idle_mib MiB)"
echo
echo "| \`GET /since/<24 h ago>\` | status | bytes | server CPU s | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
if [ -n "${exact_floor:-}" ]; then
  echo
  echo "The \`.exact\` body's floor: $exact_floor bytes (log2(C(N, r))/8, r = $((24 * HOUR_IDS)) of N = $((24 * HOUR_IDS + OLD_HOURS * OLD_IDS)))."
fi
echo
awk -v n="$RANGES" -v keys="$((24 * HOUR_IDS))" -v took="$took" -v cpu="$(cpu_s $((after - before)))" -v peak="$peak_mib" \
    -v bound="$(((BUDGET >> 20) + 64))" '
  { first[$1]++; last[$2]++ }
  END {
    printf "%d distinct since-ranges (each over at least %d keys), 10 at a time, each asked again after its Retry-After: ", n, keys
    printf "first answers"; for (s in first) printf " %s x %d", s, first[s]
    printf "; last answers"; for (s in last) printf " %s x %d", s, last[s]
    printf "; %d s, %s server CPU-s. Peak RSS during them **%d MiB**, bound (budget + open hour + 64 MiB) %d MiB.\n", took, cpu, peak, bound
  }' "$WORK/answers"
echo
echo "Catching up with \`bloomcast check --json\` following $FOLLOWED IDs, each changed in one of the 24 big hours (bytes: response bodies; floor: the range's distinct IDs at 1%, n log2(100) bits):"
echo
echo "| gap | strategy | requests | bytes | against the floor | changed in the range, found | unchanged, flagged |"
echo "|---|---|---:|---:|---:|---:|---:|"
printf '%s\n' "${catchup[@]}"
