#!/usr/bin/env bash
# Load: wrk at 256 connections for 60 s, mixing reads of a closed and the open hour,
# 304 revalidations and ingest (benches/harness/mix.lua), against one server on the
# embedded store. Fails on any socket error, timeout or response other than 2xx/304,
# and prints the server's RSS before and after.
#
#   benches/harness/load.sh               # 60 s (after a 5 s warm-up)
#   SECS=5 benches/harness/load.sh        # a quick smoke run
#   MIX=8,0,2,2 benches/harness/load.sh   # weights: closed, open, 304, ingest (default 8,8,2,2)
#
# The server runs on core 0, wrk (one thread) on core 1. Expects a release build
# (run.sh builds one).
set -euo pipefail
source "$(dirname "$0")/common.sh"
SECS="${SECS:-60}"
N="${N:-3000}"
BATCH="${BATCH:-100}"
# Weights of closed-hour GETs, open-hour GETs, 304 revalidations and ingests (mix.lua).
MIX="${MIX:-8,8,2,2}"
ensure_tools wrk:wrk
make_work

data="$WORK/data"
closed=$("$EXAMPLES/seed_closed_hour" "$data" "$N" 2)
ensure_hour_lasts $((SECS + 30))
port=$(free_port)
start_bloomcast "$data" "$port"
post_ids "$port" open "$N"
open=$(current_path "$port")
bc="http://127.0.0.1:$port"
etag=$(curl -sf -D - -o /dev/null -H 'Accept-Encoding: gzip' "$bc$closed" | awk -F': ' 'tolower($1) == "etag" {print $2}' | tr -d '\r')

# Requests by status from the server's own counters, and the IDs it acknowledged.
statuses() { curl -sf "$bc/metrics" | sed -n 's/^bloomcast_http_requests_total{.*status="\([0-9]*\)"} \([0-9]*\)$/\1 \2/p' | awk '{a[$1] += $2} END {for (s in a) print s, a[s]}' | sort; }
ingested() { curl -sf "$bc/metrics" | awk '$1 == "bloomcast_ids_ingested_total" {print $2}'; }
wrk_mix() { # wrk_mix SECONDS OUTPUT
  taskset -c "$CLIENT_CPU" wrk -t1 -c256 -d"$1s" --timeout 10s --latency -s "$ROOT/benches/harness/mix.lua" \
    "$bc" -- "$closed" "$open" "$TOKEN" "$etag" "load$$-$1" "$BATCH" "$MIX" >"$2"
}

rss_start=$(rss_kb "$SERVER_PID")
log "load: 5 s warm-up at 256 connections"
wrk_mix 5 "$WORK/wrk-warmup"
rss_before=$(rss_kb "$SERVER_PID")
ids_before=$(ingested)
log "load: ${SECS} s at 256 connections"
# RSS every 10 s during the run, to tell a plateau from steady growth.
(while sleep 10; do rss_kb "$SERVER_PID"; done) >"$WORK/rss-samples" 2>/dev/null &
sampler=$!
PIDS+=("$sampler")
wrk_mix "$SECS" "$WORK/wrk-load"
stop_pid "$sampler"
rss_after=$(rss_kb "$SERVER_PID")
ids_after=$(ingested)
sleep 5
rss_idle=$(rss_kb "$SERVER_PID")

read -r rps p50 p99 errors < <(parse_wrk "$WORK/wrk-load")
read -r _ _ _ warm_errors < <(parse_wrk "$WORK/wrk-warmup")
requests=$(awk '/requests in/ {print $1}' "$WORK/wrk-load")
bad_status=$(statuses | awk '$1 != 200 && $1 != 304 {n += $2} END {print n + 0}')
echo
echo "### Load (wrk -t1 -c256 -d${SECS}s --timeout 10s; closed : open : revalidations : ingests of $BATCH IDs = ${MIX//,/ : })"
echo
echo "| requests | req/s | p50 ms | p99 ms | wrk errors (socket, timeout, non-2xx/3xx) | server statuses other than 200/304 | IDs ingested | RSS start | RSS before | RSS after | RSS 5 s later |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '| %s | %.0f | %s | %s | %s | %s | %s | %s MiB | %s MiB | %s MiB | %s MiB |\n' "$requests" "$rps" "$p50" "$p99" \
  "$errors" "$bad_status" "$((ids_after - ids_before))" \
  "$((rss_start / 1024))" "$((rss_before / 1024))" "$((rss_after / 1024))" "$((rss_idle / 1024))"
echo
echo "RSS every 10 s during the run (MiB): $(awk '{printf "%d ", $1 / 1024}' "$WORK/rss-samples")"
echo "Distinct IDs in the open hour at the end: $(curl -sf "$bc/metrics" | awk '$1 == "bloomcast_current_hour_ids" {print $2}')"
echo "Server responses by status over the whole run, warm-up included: $(statuses | tr '\n' ' ')"
grep -E 'Socket errors|Non-2xx' "$WORK/wrk-load" || true
if ((errors + warm_errors + bad_status > 0)); then
  cat "$WORK/wrk-load" >&2
  die "load: $((errors + warm_errors)) wrk errors and $bad_status responses other than 200/304"
fi
