#!/usr/bin/env bash
# PostgreSQL failing under load: runs the fault trials of tests/cluster.rs (each starts its
# own private PostgreSQL and two nodes, with two writers per node posting batches of 20
# IDs without pause) and prints what they measured: outage length, 503s answered, time to
# the first acknowledgement after the fault on each node, and acknowledged vs found per hour.
#
#   benches/harness/cluster_faults.sh            # every fault once
#   ROUNDS=3 benches/harness/cluster_faults.sh   # each fault three times
#   ROUNDS=5 TRIALS=failover_to_a_synchronous_standby_under_load_loses_nothing_acknowledged \
#     benches/harness/cluster_faults.sh          # one fault, five times (with its median)
#
# The faults: PostgreSQL restarted in fast and in immediate shutdown mode, a node started
# while PostgreSQL is down, the link cut without a close (a proxy that stops forwarding,
# sockets kept open; the node's database_timeout_ms is 1 s there), a node killed with
# SIGKILL while it seals a 200,000-ID hour, and the primary killed with SIGKILL under a
# synchronous standby that is promoted 2 s later (nodes given both hosts,
# target_session_attrs=read-write): its outage is kill to promotion, its gap kill to the
# first write accepted after it. A trial that fails (an acknowledged ID not
# found, an answer other than 200 or 503 store_unavailable, a request past its timeout)
# fails the run.
#
# Needs PostgreSQL's server programs (initdb, pg_ctl) and PostgreSQL at
# BLOOMCAST_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) for the
# kill -9 trial. Builds the test binary (debug, as CI runs it) unless it is there.
set -euo pipefail
source "$(dirname "$0")/common.sh"
ROUNDS="${ROUNDS:-1}"
if [[ -n "${TRIALS:-}" ]]; then
  read -r -a TRIALS <<<"$TRIALS"
else TRIALS=(
  postgres_restarted_fast_under_load_loses_nothing_acknowledged
  postgres_restarted_immediate_under_load_loses_nothing_acknowledged
  a_node_started_before_postgres_waits_in_standby_and_serves_once_it_is_up
  a_link_that_stops_answering_fails_ingest_in_time_and_its_connections_are_replaced
  a_node_killed_mid_seal_leaves_the_seal_to_another_with_the_same_bytes_and_link
  failover_to_a_synchronous_standby_under_load_loses_nothing_acknowledged
); fi
make_work

log "cargo test --test cluster --no-run"
bin=$(cd "$ROOT" && cargo test --locked --test cluster --no-run --message-format=json 2>/dev/null \
  | sed -n 's/.*"executable":"\([^"]*cluster-[^"]*\)".*/\1/p' | tail -1)
[[ -x "$bin" ]] || die "no test binary for tests/cluster.rs"

for round in $(seq 1 "$ROUNDS"); do
  for trial in "${TRIALS[@]}"; do
    log "round $round: $trial"
    (cd "$ROOT" && CI=true "$bin" --exact "$trial" --nocapture --test-threads 1) \
      >"$WORK/$round-$trial.log" 2>&1 || { tail -40 "$WORK/$round-$trial.log" >&2; die "$trial failed"; }
    # libtest prints a trial's first output on its "test NAME ..." line: match anywhere.
    grep -ho 'FAULTS.*' "$WORK/$round-$trial.log" | sed "s/^/round=$round /" >>"$WORK/faults" || true
  done
done

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }
echo
echo "### PostgreSQL failing under load (two nodes, 2 writers each, batches of 20 IDs)"
echo
echo "| round | fault | outage ms | 503s answered (node A/B) | first 200 once PostgreSQL or the link is back, ms (A/B) |"
echo "|---:|---|---:|---:|---:|"
while read -r line; do
  grep -q 'FAULTS test=' <<<"$line" || continue
  t=$(field test "$line")
  case "$t" in
    unreachable_at_start)
      printf '| %s | %s | - | all, until up | %s (serving after PostgreSQL started) |\n' \
        "$(field round "$line")" "$t" "$(field serving_after_ms "$line")" ;;
    kill9_mid_seal)
      printf '| %s | %s | - | - | seal completed by node B, same bytes and link: %s |\n' \
        "$(field round "$line")" "$t" "$(field same_bytes_and_link "$line")" ;;
    *)
      printf '| %s | %s | %s | %s | %s |\n' "$(field round "$line")" "$t" \
        "$(field outage_ms "$line")" "$(field unavailable "$line")" "$(field recovery_ms "$line")" ;;
  esac
done <"$WORK/faults"
# The failover's write gap: kill to promotion, then the slower node's first write.
gaps=$(while read -r line; do
  [[ "$line" == *"FAULTS test=failover "* ]] || continue
  IFS=/ read -r a b <<<"$(field recovery_ms "$line")"
  echo $(($(field outage_ms "$line") + (a > b ? a : b)))
done <"$WORK/faults" | sort -n)
if [[ -n "$gaps" ]]; then
  n=$(wc -l <<<"$gaps")
  echo
  echo "failover write gap (kill to first accepted write on both nodes), ms: $(tr '\n' ' ' <<<"$gaps")" \
    "(median $(sed -n "$(((n + 1) / 2))p" <<<"$gaps") of $n)"
fi
echo
echo "| round | fault | hour | acknowledged | found (each node) |"
echo "|---:|---|---|---:|---:|"
while read -r line; do
  grep -q 'acked=' <<<"$line" || continue
  printf '| %s | %s | %s | %s | %s |\n' "$(field round "$line")" "$(field test "$line")" \
    "$(field hour "$line")" "$(field acked "$line")" "$(field found "$line")"
done <"$WORK/faults"
