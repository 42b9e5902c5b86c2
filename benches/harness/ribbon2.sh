#!/usr/bin/env bash
# The compact form v2 from outside (issue 38): for each n, a release server takes n IDs
# (POST /updates) into one hour, the hour closes, and each fpp of the grid is fetched as
# GET /HOUR.ribbon2?fpp=P. An independent decoder (the Python client's, written from
# docs/PROTOCOL.md section 12) then checks each body: its bytes against the floor
# n * log2(1/P) / 8 (bound 1.05x), every member answers true (all of them up to 300,000,
# a sample of 300,000 above), and the false-positive rate over 200,000 IDs never
# ingested against P (one-sided binomial bound, z = 3.3).
#
#   benches/harness/ribbon2.sh                     # n = 3,000 30,000 300,000 3,000,000
#   NS="3000 30000" benches/harness/ribbon2.sh     # some sizes
#   FPPS="0.05 0.01" benches/harness/ribbon2.sh    # some precisions
set -euo pipefail
source "$(dirname "$0")/common.sh"
NS="${NS:-3000 30000 300000 3000000}"
FPPS="${FPPS:-0.05 0.0437 0.01 0.0031 0.001 2.2e-05 1.52587890625e-05 9.5367431640625e-07}"
LEAD="${LEAD:-60}"
BATCH=500000
build
make_work
here="$(cd "$(dirname "$0")" && pwd)"

echo "machine: $(machine)"
echo "| n | fpp asked | grade fpp | bytes | x floor | members | absent positives | bound | verdict |"
echo "|---:|---:|---:|---:|---:|---|---:|---:|---|"
for n in $NS; do
  port=$(free_port)
  offset=$(( (3600 - LEAD) - $(date -u +%s) % 3600 ))
  start_bloomcast "$WORK/data-$n" "$port" BLOOMCAST_CLOCK_OFFSET_SECONDS="$offset"
  started=$(date +%s)
  hour=$(current_path "$port")
  for ((from = 0; from < n; from += BATCH)); do
    seq "$from" $(((from + BATCH < n ? from + BATCH : n) - 1)) | sed 's/^/user:/' >"$WORK/batch"
    curl -sf -X POST "http://127.0.0.1:$port/updates" -H "Authorization: Bearer $TOKEN" \
      -H 'Content-Type: text/plain' --data-binary @"$WORK/batch" >/dev/null
  done
  left=$((LEAD - ($(date +%s) - started)))
  ((left > 2)) || die "posting took longer than LEAD=${LEAD}s; raise LEAD"
  log "n = $n: waiting ${left}s for $hour to close"
  sleep "$((left + 1))"
  for p in $FPPS; do
    until curl -sf -o "$WORK/body" "http://127.0.0.1:$port$hour.ribbon2?fpp=$p"; do sleep 0.5; done
    PYTHONPATH="$here/../../clients/python" python3 "$here/ribbon2_check.py" "$WORK/body" "$n" "$p"
  done
  stop_pid "$SERVER_PID"
  rm -rf "$WORK/data-$n"
done
