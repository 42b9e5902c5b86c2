#!/usr/bin/env bash
# Big open hours: how long a restarted server takes to load an open hour of N distinct IDs
# (until /healthz answers 200), and its memory per ID once loaded.
#
#   benches/harness/bighour.sh              # N = 1M, 10M and 50M
#   SIZES="1000000" benches/harness/bighour.sh
#   PG=postgres://postgres@127.0.0.1:5432/test benches/harness/bighour.sh   # cluster mode
#
# Each size gets a fresh data dir seeded through the store API (examples/seed_closed_hour.rs
# with hours-ago 0: the current hour, in batches of 10,000). The server is then started on
# it, pinned to core 0; the port opens at once and /healthz says "loading" until the hour is
# in memory. RSS is read from /proc once loaded (VmRSS, and VmHWM for the peak): once
# the server has released what the load freed (SETTLE_SECS), and again a minute after the
# load (STEADY_SECS), by when anything that comes back on its own has come back (with
# transparent huge pages on, khugepaged refilled freed memory within 45 s). The "B/ID"
# columns use the later reading, and the empty server is read at the same age.
#
# With PG set, the same in cluster mode: each size is seeded into a fresh schema of that
# database (and the empty server gets one of its own), the node loads the open hour from
# PostgreSQL, and the schemas are dropped at the end.
set -euo pipefail
source "$(dirname "$0")/common.sh"
SIZES="${SIZES:-1000000 10000000 50000000}"
SETTLE_SECS="${SETTLE_SECS:-14}"
STEADY_SECS="${STEADY_SECS:-60}"
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

# The same server with nothing stored: the process's own RSS (code, runtime, caches),
# which the "above empty" column takes off.
store_for empty
port=$(free_port)
(cd "$ROOT" && exec env RUST_LOG=warn BLOOMCAST_LISTEN="127.0.0.1:$port" \
    "${STORE_ENV[@]}" BLOOMCAST_INGEST_TOKENS="$TOKEN" \
    taskset -c "$SERVER_CPU" "$BIN" serve) 2>>"$WORK/bloomcast-$port.log" &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
until [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true) == 200 ]]; do
  sleep 0.05
done
sleep "$STEADY_SECS"
for _ in 1 2 3 4 5; do curl -s -o /dev/null "http://127.0.0.1:$port/"; sleep 0.3; done
empty_kb=$(awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status")
stop_pid "$SERVER_PID"

rows=()
for n in $SIZES; do
  store_for "$n"
  log "seeding $n IDs into the current hour"
  if [[ -n "$PG" ]]; then
    schema="${schemas[-1]}"
    BLOOMCAST_DATABASE_SCHEMA="$schema" "$EXAMPLES/seed_closed_hour" "$PG" "$n" 0 >/dev/null
    db_mb=$(psql -X -Atq "$PG" -c "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) / 1048576
      FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
      WHERE s.nspname = '$schema' AND c.relkind = 'r'")
  else
    "$EXAMPLES/seed_closed_hour" "$WORK/data-$n" "$n" 0 >/dev/null
    db_mb=$(du -sm "$WORK/data-$n" | cut -f1)
  fi
  port=$(free_port)
  started=$(date +%s.%N)
  (cd "$ROOT" && exec env RUST_LOG=warn BLOOMCAST_LISTEN="127.0.0.1:$port" \
      "${STORE_ENV[@]}" BLOOMCAST_INGEST_TOKENS="$TOKEN" \
      taskset -c "$SERVER_CPU" "$BIN" serve) 2>>"$WORK/bloomcast-$port.log" &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  first_status=""
  while :; do
    status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)
    [[ -z "$first_status" && "$status" != "000" ]] && first_status="$status" && port_open=$(date +%s.%N)
    [[ "$status" == "200" ]] && break
    sleep 0.05
  done
  loaded=$(date +%s.%N)
  # mimalloc hands freed pages back to the OS some time after they are freed (up to ten
  # seconds for large blocks), on the next allocator activity; the server asks for it after
  # a large load, and again 12 s later (src/memory.rs: SETTLE). Wait past that and send
  # some requests before reading the steady RSS, so builds that do not ask are measured
  # the same way.
  sleep "$SETTLE_SECS"
  for _ in 1 2 3 4 5; do curl -s -o /dev/null "http://127.0.0.1:$port/"; sleep 0.3; done
  settled_kb=$(awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status")
  sleep "$((STEADY_SECS - SETTLE_SECS))"
  for _ in 1 2 3 4 5; do curl -s -o /dev/null "http://127.0.0.1:$port/"; sleep 0.3; done
  rss_kb=$(awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status")
  hwm_kb=$(awk '/^VmHWM/ {print $2}' "/proc/$SERVER_PID/status")
  count=$(curl -s "http://127.0.0.1:$port/" | sed -n 's/.*"hours":\[{[^}]*"count":\([0-9]*\).*/\1/p')
  stop_pid "$SERVER_PID"
  rm -rf "$WORK/data-$n"
  if [[ -n "$PG" ]]; then
    PGOPTIONS="-c client_min_messages=warning" psql -X -q "$PG" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null
  fi
  rows+=("$(awk -v n="$n" -v db="$db_mb" -v s="$started" -v o="$port_open" -v l="$loaded" \
      -v rss="$rss_kb" -v settled="$settled_kb" -v hwm="$hwm_kb" -v first="$first_status" -v c="$count" -v e="$empty_kb" 'BEGIN {
    printf "| %\047d | %d | %.2f (%s) | %.1f | %d | %d | %.1f | %.1f | %d | %.1f | %s |", n, db, o - s, first, l - s,
      settled / 1024, rss / 1024, rss * 1024 / n, (rss - e) * 1024 / n, hwm / 1024, hwm * 1024 / n, c }')")
done

echo
echo "### Loading a big open hour at start (release build, ${PG:+cluster mode on PostgreSQL, }server pinned to core $SERVER_CPU)"
echo
echo "An empty server's RSS at ${STEADY_SECS} s: $((empty_kb / 1024)) MiB. \"Above empty\" is (RSS at ${STEADY_SECS} s - that) / IDs."
echo
echo "| distinct IDs | store MB | port open s (first /healthz) | loaded s | RSS MiB at ${SETTLE_SECS} s | RSS MiB at ${STEADY_SECS} s | RSS B/ID | above empty B/ID | peak RSS MiB | peak B/ID | count served |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
