#!/usr/bin/env bash
# Cluster ingest: durable IDs per second with one node and with three nodes on one
# PostgreSQL, batches of 1000, and what one ingest batch costs PostgreSQL.
#
#   benches/harness/cluster.sh            # 10 s per run, after 1 s of warm-up
#   SECS=2 benches/harness/cluster.sh     # a quick smoke run
#   PG=postgres://user@host:5432 benches/harness/cluster.sh
#
# The nodes use a database of their own (bloomcast_harness, created if missing, so that
# its statistics count nothing but this run) and a fresh schema per run, dropped at the
# end. The load generator spreads its clients round-robin over the nodes. Transactions
# per batch are read from pg_stat_database (xact_commit + xact_rollback) before the nodes
# start and after they stop (a backend flushes its statistics when it exits), divided by
# the batches actually stored; the difference includes each node's start-up (migration
# check, genesis row, first housekeeping), a few transactions per node.
#
# Nothing is pinned: PostgreSQL, the nodes and the load generator share both cores.
# Expects a release build (run.sh builds one).
set -euo pipefail
source "$(dirname "$0")/common.sh"
SECS="${SECS:-10}"
PG="${PG:-postgres://postgres@127.0.0.1:5432}"
DB=bloomcast_harness
CLIENTS="${CLIENTS:-8 64}"
SERVER_CPU=0-1
CLIENT_CPU=0-1
make_work

psql -X -q "$PG/postgres" -c 'SELECT 1' >/dev/null || die "PostgreSQL is not reachable at $PG"
if [[ -z $(psql -X -Atq "$PG/postgres" -c "SELECT 1 FROM pg_database WHERE datname = '$DB'") ]]; then
  psql -X -q "$PG/postgres" -c "CREATE DATABASE $DB" >/dev/null
fi
xacts() { psql -X -Atq "$PG/postgres" -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$DB'"; }
schemas=()
drop_schemas() {
  local s
  for s in "${schemas[@]}"; do
    psql -X -q "$PG/$DB" -c "DROP SCHEMA IF EXISTS $s CASCADE" >/dev/null 2>&1 || true
  done
}
trap 'cleanup; drop_schemas' EXIT

rows=()
for clients in $CLIENTS; do
  for nodes in 1 3; do
    schema="harness_$$_${nodes}n_${clients}c"
    schemas+=("$schema")
    before=$(xacts)
    urls=() node_pids=()
    for _ in $(seq 1 "$nodes"); do
      port=$(free_port)
      start_bloomcast "$WORK/unused" "$port" BLOOMCAST_DATABASE_URL="$PG/$DB" BLOOMCAST_DATABASE_SCHEMA="$schema"
      urls+=("http://127.0.0.1:$port")
      node_pids+=("$SERVER_PID")
    done
    log "cluster: $nodes node(s), $clients clients, batches of 1000, ${SECS}s"
    line=$(taskset -c "$CLIENT_CPU" "$EXAMPLES/loadgen" --url "$(IFS=,; echo "${urls[*]}")" --token "$TOKEN" \
      --batch 1000 --clients "$clients" --seconds "$SECS" --warmup 1)
    for pid in "${node_pids[@]}"; do stop_pid "$pid"; done
    sleep 1.5
    after=$(xacts)
    batches=$(psql -X -Atq "$PG/$DB" -c "SELECT count(*) FROM $schema.batches")
    field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $line"; }
    rows+=("$(printf '| %s | %s | %.0f | %.1f | %s | %s | %s | %s | %.2f |' "$nodes" "$clients" \
      "$(field ids_per_s)" "$(field req_per_s)" "$(field p50_ms)" "$(field p99_ms)" "$(field errors)" \
      "$batches" "$(awk -v x=$((after - before)) -v b="$batches" 'BEGIN {print x / b}')")")
  done
done

echo
echo "### Cluster ingest, PostgreSQL (batches of 1000 IDs; ${SECS} s per row after 1 s warm-up; unpinned)"
echo
echo "| nodes | clients | durable IDs/s | requests/s | p50 ms | p99 ms | errors | batches stored | PostgreSQL transactions per batch |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
