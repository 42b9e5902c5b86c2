#!/usr/bin/env bash
# Pollers through Varnish (deploy/varnish/) against the origin alone: one bloomcast node
# on the embedded store holding a closed hour of HOUR_IDS IDs (and the open hour taking a
# trickle), Varnish in front of it with the deploy/ policy.
#
#   benches/harness/cache.sh               # 10 s per wrk run, 2 rounds, 3,000 IDs an hour
#   SECS=3 ROUNDS=1 benches/harness/cache.sh
#
# Prints, for the closed hour and for the open hour (JSON with gzip, as pollers ask):
# - polls per second served by the origin alone and by Varnish in front of it, wrk with
#   64 connections on core 1, the server and Varnish sharing core 0, interleaved;
# - origin requests per 1,000 polls through Varnish, counted from the node's own
#   /metrics (its hour route), while a publisher trickles IDs into the open
#   hour every 0.5 s. For the open hour that figure is 1000 / (poll rate x max-age) per
#   variant: OPEN_MAX_AGE (default the service's 30 s) sets it.
# Expects a release build (run.sh builds one).
set -euo pipefail
source "$(dirname "$0")/common.sh"
ensure_tools wrk:wrk varnishd:varnish curl:curl
SECS="${SECS:-10}"
ROUNDS="${ROUNDS:-2}"
HOUR_IDS="${HOUR_IDS:-3000}"
OPEN_MAX_AGE="${OPEN_MAX_AGE:-30}"
make_work

data="$WORK/data"
closed=$("$EXAMPLES/seed_closed_hour" "$data" "$HOUR_IDS" 1 closed)
port=$(free_port)
origin="http://127.0.0.1:$port"
start_bloomcast "$data" "$port" BLOOMCAST_OPEN_MAX_AGE="$OPEN_MAX_AGE"
node_pid=$SERVER_PID
post_ids "$port" open "$HOUR_IDS"
open=$(current_path "$port")
[ -n "$closed" ] && [ -n "$open" ] && [ "$closed" != "$open" ] || die "no closed and open hour: '$closed' '$open'"

vport=$(free_port)
cache="http://127.0.0.1:$vport"
mkdir -p "$WORK/varnish"
"$ROOT/deploy/varnish/backends.sh" "127.0.0.1:$port" >"$WORK/varnish/main.vcl"
taskset -c "$SERVER_CPU" varnishd -F -j none -n "$WORK/varnish" -a "127.0.0.1:$vport" \
  -f "$WORK/varnish/main.vcl" -p http_gzip_support=off -s malloc,256m >"$WORK/varnish.log" 2>&1 &
varnish_pid=$!
PIDS+=("$varnish_pid")
wait_http "$cache$closed" || die "Varnish did not start: $(tail -5 "$WORK/varnish.log")"

# A publisher: 10 IDs every 0.5 s into the open hour, for the whole run.
( n=0; while :; do
    curl -sf -X POST "$origin/updates" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: text/plain' \
      --data-binary "$(seq -f "t$n:%g" 1 10)" >/dev/null || true
    n=$((n + 1)); sleep 0.5
  done ) &
PIDS+=("$!")

# Requests the node answered on the hour route (the trickle's ingest and Varnish's
# health probes are not polls).
origin_requests() {
  curl -sf "$origin/metrics" | awk '/^bloomcast_http_requests_total\{route="\/\{y\}\/\{mo\}\/\{d\}\/\{h\}"/ { n += $NF } END { print n + 0 }'
}
polls() { awk '/requests in/ { print $1 }' "$1"; }
wrk_run() { # wrk_run OUT URL
  taskset -c "$CLIENT_CPU" wrk -t1 -c64 -d"${SECS}s" -H 'Accept-Encoding: gzip' "$2" >"$1"
}

rows=()
for name in closed open; do
  path=${!name}
  declare -a o_rps=() c_rps=() per_k=()
  for round in $(seq 1 "$ROUNDS"); do
    log "$name hour $path, round $round: origin alone"
    wrk_run "$WORK/o-$name-$round" "$origin$path"
    o_rps+=("$(parse_wrk "$WORK/o-$name-$round" | cut -d' ' -f1)")
    log "$name hour $path, round $round: through Varnish"
    before=$(origin_requests)
    wrk_run "$WORK/c-$name-$round" "$cache$path"
    after=$(origin_requests)
    c_rps+=("$(parse_wrk "$WORK/c-$name-$round" | cut -d' ' -f1)")
    per_k+=("$(awk -v r=$((after - before)) -v p="$(polls "$WORK/c-$name-$round")" 'BEGIN { printf "%.4f", 1000 * r / p }') ($((after - before)) of $(polls "$WORK/c-$name-$round"))")
  done
  rows+=("| $name ($HOUR_IDS IDs) | $(IFS=/; echo "${o_rps[*]}") | $(IFS=/; echo "${c_rps[*]}") | $(IFS=';'; echo "${per_k[*]}") |")
  unset o_rps c_rps per_k
done

echo
echo "### Through Varnish ($(machine); ${SECS} s per run, wrk -t1 -c64 on core $CLIENT_CPU, node and Varnish on core $SERVER_CPU; open max-age ${OPEN_MAX_AGE} s)"
echo
echo "| hour (JSON, gzip) | polls/s, origin alone | polls/s, Varnish in front | origin requests per 1,000 polls through Varnish |"
echo "|---|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
