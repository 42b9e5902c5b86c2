#!/usr/bin/env bash
# Ingest: durable IDs per second through POST /updates on the embedded store, for
# batches of 1, 100 and 1000 IDs and 1, 8 and 64 concurrent clients.
#
#   benches/harness/ingest.sh             # 10 s per configuration, after 1 s of warm-up
#   SECS=2 benches/harness/ingest.sh      # a quick smoke run
#
# Each configuration gets a fresh server and data directory (on the repository's disk,
# so every group commit pays a real fsync), pinned to core 0; the load generator
# (examples/loadgen.rs, JSON bodies of unique IDs, no retries) runs on core 1. A reply
# means the IDs are durable, so acknowledged IDs per second is the durable rate.
# Expects a release build (run.sh builds one).
set -euo pipefail
source "$(dirname "$0")/common.sh"
SECS="${SECS:-10}"
BATCHES="${BATCHES:-1 100 1000}"
CLIENTS="${CLIENTS:-1 8 64}"
make_work

rows=()
for batch in $BATCHES; do
  for clients in $CLIENTS; do
    data="$WORK/data-$batch-$clients"
    port=$(free_port)
    # Every client's upload admitted (the default admits 32 at once and answers the rest
    # 503 busy): this measures throughput, not admission control.
    start_bloomcast "$data" "$port" BLOOMCAST_INGEST_CONCURRENCY=$((clients > 32 ? clients : 32))
    log "ingest: batch $batch, $clients clients, ${SECS}s"
    line=$(taskset -c "$CLIENT_CPU" "$EXAMPLES/loadgen" --url "http://127.0.0.1:$port" --token "$TOKEN" \
      --batch "$batch" --clients "$clients" --seconds "$SECS" --warmup 1)
    stop_pid "$SERVER_PID"
    rm -rf "$data"
    field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $line"; }
    rows+=("$(printf '| %s | %s | %.0f | %.1f | %s | %s | %s |' "$batch" "$clients" \
      "$(field ids_per_s)" "$(field req_per_s)" "$(field p50_ms)" "$(field p99_ms)" "$(field errors)")")
  done
done

echo
echo "### Ingest, embedded store (POST /updates, JSON; ${SECS} s per row after 1 s warm-up)"
echo
echo "| IDs per batch | clients | durable IDs/s | requests/s | p50 ms | p99 ms | errors |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
