#!/usr/bin/env bash
# Big open hours: the memory of an open hour of N distinct IDs, at its peak and as an
# operator must provision it, and how long a restarted server takes to load it.
#
#   benches/harness/bighour.sh              # N = 1M, 10M and 50M
#   SIZES="1000000" benches/harness/bighour.sh
#   BEFORE_BIN=/path/to/older/bloomcast benches/harness/bighour.sh   # its ingest beside ours
#   PG=postgres://postgres@127.0.0.1:5432/test benches/harness/bighour.sh   # cluster mode
#
# For each size, on a fresh store, with the server pinned to core 0:
# 1. Ingest: the load generator (examples/loadgen.rs on core 1, CLIENTS clients posting
#    BATCH IDs each, JSON) sends exactly N distinct IDs through POST /updates, and the
#    server's RSS (VmRSS) and peak (VmHWM) are read the moment the last one is
#    acknowledged. "Above empty" takes off an empty server's RSS (the process's own code,
#    runtime and caches, read STEADY_SECS after its start). With BEFORE_BIN set, that
#    build ingests the same load on a store of its own just before, for its throughput
#    and memory in the same run.
# 2. Load: the server is restarted on that store; the port opens at once and /healthz
#    says "loading" until the hour is in memory. RSS is read once the server has released
#    what the load freed (SETTLE_SECS), and again a minute after the load (STEADY_SECS),
#    by when anything that comes back on its own has come back (with transparent huge
#    pages on, khugepaged refilled freed memory within 45 s); VmHWM is the load's peak.
#
# With PG set, the same in cluster mode: each store is a fresh schema of that database
# (and the empty server gets one of its own), and the schemas are dropped at the end.
set -euo pipefail
source "$(dirname "$0")/common.sh"
SIZES="${SIZES:-1000000 10000000 50000000}"
SETTLE_SECS="${SETTLE_SECS:-14}"
STEADY_SECS="${STEADY_SECS:-60}"
BATCH="${BATCH:-1000}"
CLIENTS="${CLIENTS:-8}"
BEFORE_BIN="${BEFORE_BIN:-}"
PG="${PG:-}"
make_work
schemas=()
if [[ -n "$PG" ]]; then
  psql -X -q "$PG" -c 'SELECT 1' >/dev/null || die "PostgreSQL is not reachable at $PG"
  drop_schemas() {
    local s
    for s in "${schemas[@]}"; do
      PGOPTIONS="-c client_min_messages=warning" psql -X -q "$PG" -c "DROP SCHEMA IF EXISTS $s CASCADE" >/dev/null 2>&1 || true
    done
  }
  trap 'cleanup; drop_schemas' EXIT
fi
# The store for a run named $1: a data dir (embedded), or also a schema (cluster mode).
# Sets STORE_ENV, the server's environment for it.
store_for() {
  mkdir -p "$WORK/data-$1"
  STORE_ENV=(BLOOMCAST_DATA_DIR="$WORK/data-$1")
  if [[ -n "$PG" ]]; then
    schemas+=("bighour_$$_$1")
    STORE_ENV+=(BLOOMCAST_DATABASE_URL="$PG" BLOOMCAST_DATABASE_SCHEMA="bighour_$$_$1")
  fi
}
forget_store() { # the run's name
  rm -rf "$WORK/data-$1"
  if [[ -n "$PG" ]]; then
    PGOPTIONS="-c client_min_messages=warning" psql -X -q "$PG" -c "DROP SCHEMA IF EXISTS bighour_$$_$1 CASCADE" >/dev/null
  fi
}
# start BINARY: the server on STORE_ENV, pinned; sets SERVER_PID and PORT, returns at once.
start() {
  PORT=$(free_port)
  (cd "$ROOT" && exec env RUST_LOG=warn BLOOMCAST_LISTEN="127.0.0.1:$PORT" \
      "${STORE_ENV[@]}" BLOOMCAST_INGEST_TOKENS="$TOKEN" \
      BLOOMCAST_INGEST_CONCURRENCY=$((CLIENTS > 32 ? CLIENTS : 32)) \
      taskset -c "$SERVER_CPU" "$1" serve) >>"$WORK/bloomcast-$PORT.log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
}
healthy() { [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz" || true) == 200 ]]; }
kb() { awk -v f="^$1:" '$0 ~ f {print $2}' "/proc/$SERVER_PID/status"; }
served_count() { curl -s "http://127.0.0.1:$PORT/" | sed -n 's/.*"hours":\[{[^}]*"count":\([0-9]*\).*/\1/p'; }

# empty_kb BINARY: that build's RSS with nothing stored, STEADY_SECS after its start.
empty_kb() {
  store_for "empty_$2"
  start "$1"
  until healthy; do sleep 0.05; done
  sleep "$STEADY_SECS"
  for _ in 1 2 3 4 5; do curl -s -o /dev/null "http://127.0.0.1:$PORT/"; sleep 0.3; done
  kb VmRSS
  stop_pid "$SERVER_PID"
  forget_store "empty_$2"
}

# ingest BINARY LABEL N EMPTY_KB: a fresh store, N IDs through POST /updates; appends a row
# to ingest_rows. Leaves the server running on its store (SERVER_PID, store "LABEL_N").
ingest_rows=()
ingest() {
  local bin="$1" label="$2" n="$3" empty="$4" line rss hwm count
  store_for "${label}_$n"
  # The whole load in one hour: at a few hundred thousand IDs a second, with room.
  ensure_hour_lasts $((n / 200000 + 30))
  start "$bin"
  until healthy; do sleep 0.05; done
  log "$label: ingesting $n IDs ($CLIENTS clients x $BATCH IDs)"
  line=$(taskset -c "$CLIENT_CPU" "$EXAMPLES/loadgen" --url "http://127.0.0.1:$PORT" --token "$TOKEN" \
      --batch "$BATCH" --clients "$CLIENTS" --ids "$n")
  rss=$(kb VmRSS); hwm=$(kb VmHWM)
  count=$(served_count)
  ingest_rows+=("$(awk -v n="$n" -v l="$label" -v r="$(sed -n 's/.* ids_per_s=\([^ ]*\).*/\1/p' <<<" $line")" \
      -v rss="$rss" -v hwm="$hwm" -v e="$empty" -v c="$count" 'BEGIN {
    printf "| %\047d | %s | %\047d | %d | %.1f | %d | **%.1f** | %s |", n, l, r, rss / 1024,
      (rss - e) * 1024 / n, hwm / 1024, (hwm - e) * 1024 / n, c }')")
}

empty=$(empty_kb "$BIN" ours)
[[ -n "$BEFORE_BIN" ]] && empty_before=$(empty_kb "$BEFORE_BIN" before)

rows=()
for n in $SIZES; do
  if [[ -n "$BEFORE_BIN" ]]; then
    ingest "$BEFORE_BIN" before "$n" "$empty_before"
    stop_pid "$SERVER_PID"
    forget_store "before_$n"
  fi
  ingest "$BIN" ours "$n" "$empty"
  stop_pid "$SERVER_PID"
  if [[ -n "$PG" ]]; then
    db_mb=$(psql -X -Atq "$PG" -c "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) / 1048576
      FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
      WHERE s.nspname = 'bighour_$$_ours_$n' AND c.relkind = 'r'")
  else
    db_mb=$(du -sm "$WORK/data-ours_$n" | cut -f1)
  fi
  started=$(date +%s.%N)
  start "$BIN"
  first_status=""
  while :; do
    status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz" || true)
    [[ -z "$first_status" && "$status" != "000" ]] && first_status="$status" && port_open=$(date +%s.%N)
    [[ "$status" == "200" ]] && break
    sleep 0.05
  done
  loaded=$(date +%s.%N)
  # The server asks the allocator to release what a large load freed, and again 12 s
  # later (src/memory.rs: SETTLE); wait past that and send some requests before reading.
  sleep "$SETTLE_SECS"
  for _ in 1 2 3 4 5; do curl -s -o /dev/null "http://127.0.0.1:$PORT/"; sleep 0.3; done
  settled_kb=$(kb VmRSS)
  sleep "$((STEADY_SECS - SETTLE_SECS))"
  for _ in 1 2 3 4 5; do curl -s -o /dev/null "http://127.0.0.1:$PORT/"; sleep 0.3; done
  rss_kb=$(kb VmRSS)
  hwm_kb=$(kb VmHWM)
  count=$(served_count)
  stop_pid "$SERVER_PID"
  forget_store "ours_$n"
  rows+=("$(awk -v n="$n" -v db="$db_mb" -v s="$started" -v o="$port_open" -v l="$loaded" \
      -v rss="$rss_kb" -v settled="$settled_kb" -v hwm="$hwm_kb" -v first="$first_status" -v c="$count" -v e="$empty" 'BEGIN {
    printf "| %\047d | %d | %.2f (%s) | %.1f | %d | %d | %.1f | %d | **%.1f** | %s |", n, db, o - s, first, l - s,
      settled / 1024, rss / 1024, (rss - e) * 1024 / n, hwm / 1024, (hwm - e) * 1024 / n, c }')")
done

echo
echo "### Big open hours (release build, ${PG:+cluster mode on PostgreSQL, }server pinned to core $SERVER_CPU)"
echo
echo "An empty server's RSS at ${STEADY_SECS} s: $((empty / 1024)) MiB${BEFORE_BIN:+ (the build before: $((empty_before / 1024)) MiB)}. \"Above empty\" is (RSS - that) / IDs."
echo
echo "Ingest: N IDs through POST /updates ($CLIENTS clients x $BATCH IDs), memory read the moment the last is acknowledged."
echo
echo "| distinct IDs | build | IDs/s | RSS MiB | above empty B/ID | peak RSS MiB | peak above empty B/ID | count served |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${ingest_rows[@]}"
echo
echo "Load: the same store, the server restarted on it."
echo
echo "| distinct IDs | store MB | port open s (first /healthz) | loaded s | RSS MiB at ${SETTLE_SECS} s | RSS MiB at ${STEADY_SECS} s | above empty B/ID | peak RSS MiB | peak above empty B/ID | count served |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
