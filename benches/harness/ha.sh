#!/usr/bin/env bash
# PostgreSQL as teams run it, measured: read replica offload and PgBouncer's cost per batch.
# The databases are deploy/local.sh's ha mode (ONLY_DB=1): a primary, a synchronous standby
# streaming from it (the replica), and PgBouncer in transaction pooling in front of the
# primary, all private, on this machine.
#
#   benches/harness/ha.sh                 # 500 sealed hours, 3 rounds of 10 s of ingest
#   HOURS=100 SECS=3 benches/harness/ha.sh
#
# Replica offload: two schemas seeded alike with HOURS past hours of 200 IDs each
# (examples/seed_closed_hour.rs), each sealed by a node's startup housekeeping. Then a
# fresh node polls every hour once as .bin and once as .json (2 x HOURS polls, each the
# node's first read of that hour and form, so each reaches the store): once with
# database_read_url unset, once with it on the standby. The figure is the CPU time of the
# primary's processes (and the standby's) during the polls, from /proc (the postmaster's
# own and reaped children's time plus every live backend's), per 1,000 polls.
#
# PgBouncer: one node, examples/loadgen with 1 and 8 clients posting batches of 20 IDs for
# SECS seconds, straight to the primary and through PgBouncer (LISTEN straight, as
# database_listen_url says), alternating ROUNDS times; the cost per batch is the
# difference of the median latencies.
set -euo pipefail
source "$(dirname "$0")/common.sh"
HOURS="${HOURS:-500}"
SECS="${SECS:-10}"
ROUNDS="${ROUNDS:-3}"
make_work
[[ -x "$BIN" && -x "$EXAMPLES/seed_closed_hour" && -x "$EXAMPLES/loadgen" ]] || build
command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || ensure_tools pgbouncer:pgbouncer

log "starting the databases (deploy/local.sh ha, ONLY_DB=1)"
ONLY_DB=1 PORT="$(free_port)" "$ROOT/deploy/local.sh" ha >"$WORK/dbs.out" 2>"$WORK/dbs.err" &
DBS=$!
PIDS+=("$DBS")
for _ in $(seq 1 300); do
  grep -q 'Ctrl-C stops everything' "$WORK/dbs.out" 2>/dev/null && break
  kill -0 "$DBS" 2>/dev/null || die "deploy/local.sh ha stopped: $(tail -5 "$WORK/dbs.err")"
  sleep 0.2
done
url_of() { sed -n "s/^ *$1 *\(postgres:[^ ]*\).*/\1/p" "$WORK/dbs.out" | head -1; }
PRIMARY=$(url_of "PostgreSQL primary")
STANDBY=$(url_of "standby (sync)")
BOUNCER=$(url_of PgBouncer)
DATA=$(sed -n 's/^ *PostgreSQL primary .* data \([^ ]*\).*/\1/p' "$WORK/dbs.out")
[[ -n "$PRIMARY" && -n "$STANDBY" && -n "$BOUNCER" && -d "$DATA" ]] || die "cannot read the databases: $(cat "$WORK/dbs.out")"
STANDBY_DATA="${DATA%/primary}/standby"

# cpu_ms DATA_DIR: the CPU time (ms) the server of DATA_DIR and its processes have used.
cpu_ms() {
  local pm ticks
  pm=$(head -1 "$1/postmaster.pid")
  ticks=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat")
  for child in $(pgrep -P "$pm"); do
    ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$child/stat" 2>/dev/null || echo 0)))
  done
  echo $((ticks * 1000 / $(getconf CLK_TCK)))
}

# offload SCHEMA READ_URL: polls every seeded hour as .bin and .json on a fresh node;
# prints "primary_ms standby_ms polls".
offload() {
  local schema="$1" read_url="$2" port p0 s0 polls=0 path
  port=$(free_port)
  start_bloomcast "$WORK/node-$schema" "$port" BLOOMCAST_DATABASE_URL="$PRIMARY" \
    BLOOMCAST_DATABASE_SCHEMA="$schema" BLOOMCAST_DATABASE_READ_URL="$read_url" \
    BLOOMCAST_RETENTION_HOURS=$((HOURS + 48))
  sleep 2
  p0=$(cpu_ms "$DATA") s0=$(cpu_ms "$STANDBY_DATA")
  for path in "${SEEDED[@]}"; do
    for form in .bin .json; do
      curl -sf -o /dev/null "http://127.0.0.1:$port$path$form" || die "GET $path$form failed on node $schema"
      polls=$((polls + 1))
    done
  done
  echo "$(($(cpu_ms "$DATA") - p0)) $(($(cpu_ms "$STANDBY_DATA") - s0)) $polls"
  stop_pid "$SERVER_PID"
}

log "seeding $HOURS past hours of 200 IDs in two schemas"
SEEDED=()
for ago in $(seq "$((HOURS + 1))" -1 2); do
  for schema in offload_a offload_b; do
    path=$(BLOOMCAST_DATABASE_SCHEMA=$schema "$EXAMPLES/seed_closed_hour" "$PRIMARY" 200 "$ago" "h$ago")
  done
  SEEDED+=("$path")
done
for schema in offload_a offload_b; do
  log "sealing them ($schema)"
  port=$(free_port)
  START_TRIES=6000 start_bloomcast "$WORK/seal-$schema" "$port" BLOOMCAST_DATABASE_URL="$PRIMARY" \
    BLOOMCAST_DATABASE_SCHEMA="$schema" BLOOMCAST_RETENTION_HOURS=$((HOURS + 48))
  for _ in $(seq 1 600); do
    sealed=$(psql -X -A -t "$PRIMARY" -c "SELECT count(*) FROM $schema.hours")
    [[ $sealed -ge $HOURS ]] && break
    sleep 0.5
  done
  [[ $sealed -ge $HOURS ]] || die "$schema: $sealed of $HOURS hours sealed"
  stop_pid "$SERVER_PID"
done
sleep 2 # the standby replays the seals (it is synchronous: it has them already)

log "polls without replicas"
read -r p_without s_without n <<<"$(offload offload_a "")"
log "polls with database_read_url on the standby"
read -r p_with s_with _ <<<"$(offload offload_b "$STANDBY")"
per_k() { awk -v ms="$1" -v n="$n" 'BEGIN {printf "%.0f", ms * 1000 / n}'; }

log "PgBouncer: ingest straight and through it, $ROUNDS rounds of ${SECS}s"
declare -A p50 rate
for round in $(seq 1 "$ROUNDS"); do
  for way in direct pgbouncer; do
    for clients in 1 8; do
      port=$(free_port)
      if [[ $way == direct ]]; then
        env=(BLOOMCAST_DATABASE_URL="$PRIMARY")
      else
        env=(BLOOMCAST_DATABASE_URL="$BOUNCER" BLOOMCAST_DATABASE_LISTEN_URL="$PRIMARY")
      fi
      start_bloomcast "$WORK/ingest-$way" "$port" "${env[@]}" BLOOMCAST_DATABASE_SCHEMA=ingest \
        BLOOMCAST_INGEST_CONCURRENCY=32
      line=$(taskset -c "$CLIENT_CPU" "$EXAMPLES/loadgen" --url "http://127.0.0.1:$port" \
        --token "$TOKEN" --batch 20 --clients "$clients" --seconds "$SECS" --warmup 1)
      stop_pid "$SERVER_PID"
      field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $line"; }
      p50[$way-$clients]+="$(field p50_ms) "
      rate[$way-$clients]+="$(field req_per_s) "
    done
  done
done

echo
echo "### PostgreSQL read replicas: primary CPU per 1,000 polls of sealed hours"
echo
echo "$n polls ($HOURS sealed hours of 200 IDs, each once as .bin and once as .json, each a"
echo "first read on a fresh node), CPU time of the servers' processes from /proc:"
echo
echo "| node | primary CPU ms per 1,000 polls | standby CPU ms per 1,000 polls |"
echo "|---|---:|---:|"
echo "| database_url only | $(per_k "$p_without") | $(per_k "$s_without") |"
echo "| database_read_url on the standby | $(per_k "$p_with") | $(per_k "$s_with") |"
echo
echo "### PgBouncer (transaction pooling) in front of the primary: ingest of batches of 20 IDs"
echo
echo "| clients | way | batches/s (rounds) | p50 ms (rounds) | p50 median ms |"
echo "|---:|---|---|---|---:|"
for clients in 1 8; do
  for way in direct pgbouncer; do
    # shellcheck disable=SC2086
    printf '| %s | %s | %s | %s | %s |\n' "$clients" "$way" "${rate[$way-$clients]% }" \
      "${p50[$way-$clients]% }" "$(median ${p50[$way-$clients]})"
  done
done
machine
