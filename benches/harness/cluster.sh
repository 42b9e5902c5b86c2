#!/usr/bin/env bash
# Scaling out: 1, 2 and 3 cluster nodes on one PostgreSQL, each node capped at the same
# share of a core and PostgreSQL not capped, measured from outside in one run.
#
#   benches/harness/cluster.sh                    # CAP=15 (% of one core per node), SECS=10
#   SECS=3 ROUNDS=1 benches/harness/cluster.sh    # a quick smoke run
#   CAP=25 NODES="1 3" ROUNDS=4 benches/harness/cluster.sh
#   PG=postgres://user@host:5432 benches/harness/cluster.sh
#
# Each node runs in a cgroup of its own with a CPU quota of CAP% of one core (cgroup v2
# `cpu.max`, or cgroup v1 `cpu.cfs_quota_us` where v2 is not mounted; period 10 ms so a
# throttled node waits 10 ms at most); PostgreSQL, the load generators and the rest of the
# machine are not capped. The default share, 15%, leaves three nodes, PostgreSQL and the
# load generators about one of two cores, so what limits each node is its own cap and not
# the machine. For each count of nodes, on a fresh schema of a database of their own
# (bloomcast_harness, created if missing) holding three past hours of PAST_IDS IDs each
# (seeded through the store, examples/seed_closed_hour.rs) and an open hour of OPEN_IDS
# IDs, one after the other:
# - open-hour reads: one wrk per node (CONNS connections, gzip, as pollers ask) on the
#   current hour; every node refreshes it from PostgreSQL each refresh_ms;
# - union reads: the same on /since/<3 hours ago> (the three past hours and the open one);
# - durable ingest: examples/loadgen, batches of 1000 IDs, CLIENTS clients per node spread
#   round-robin over the nodes; an ID is counted when its 200 came back (committed);
# - reading back: one more node, not capped, started once the ingest is over, loads the
#   open hour (every ID all nodes just ingested) from PostgreSQL: what reading an ID back
#   costs PostgreSQL and a node;
# - ingest while every node follows: the same ingest on a fresh schema with a poller on
#   every node asking for the index each 0.25 s, so that each node reads back, at most
#   every refresh_ms, every ID the others ingest (what serving the open hour costs).
# Each phase records the CPU time of the nodes (/proc/PID/stat), of every `postgres`
# process, of the load generators (bash `times`), the whole machine's busy time
# (/proc/stat), and how many of the nodes' quota periods were throttled (cpu.stat: near
# 100% means the cap is what limits them). Per ingested batch: PostgreSQL's WAL bytes
# (pg_current_wal_lsn), the rows written and the bytes the tables grew
# (pg_stat_user_tables, pg_total_relation_size, read after the nodes stop so their
# backends have flushed their statistics), transactions (pg_stat_database).
# ROUNDS (default 2) repeats the whole sequence, every other round in reverse order; each
# round's factor is against its own one-node row, and a last table gives the medians over
# the rounds. Needs root (cgroups). Expects a release build (run.sh builds one). Results
# and the model for larger fleets: docs/BENCHMARKS.md.
set -euo pipefail
source "$(dirname "$0")/common.sh"
SECS="${SECS:-10}"
CAP="${CAP:-15}"
NODES="${NODES:-1 2 3}"
ROUNDS="${ROUNDS:-2}"
CLIENTS="${CLIENTS:-8}"
CONNS="${CONNS:-16}"
PAST_IDS="${PAST_IDS:-10000}"
OPEN_IDS="${OPEN_IDS:-10000}"
PG="${PG:-postgres://postgres@127.0.0.1:5432}"
DB=bloomcast_harness
PERIOD_US=10000
TICK=$(getconf CLK_TCK)
ensure_tools wrk:wrk
make_work

# ---- cgroups: one per node, a CPU quota of CAP% of one core ----
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  CG_ROOT=/sys/fs/cgroup
  grep -qw cpu "$CG_ROOT/cgroup.subtree_control" || echo +cpu >"$CG_ROOT/cgroup.subtree_control" ||
    die "cannot enable the cpu controller in $CG_ROOT (run as root)"
elif [[ -d /sys/fs/cgroup/cpu ]]; then
  CG_ROOT=/sys/fs/cgroup/cpu
else
  die "no cgroup cpu controller mounted (neither v2 nor v1 cpu)"
fi
# cpu_cap NAME: creates the capped cgroup NAME and prints its directory.
cpu_cap() {
  local dir="$CG_ROOT/bloomcast-harness-$$-$1" quota=$((PERIOD_US * CAP / 100))
  mkdir "$dir" || die "cannot create the cgroup $dir (run as root)"
  if [[ $CG_ROOT == /sys/fs/cgroup ]]; then
    echo "$quota $PERIOD_US" >"$dir/cpu.max"
  else
    echo "$PERIOD_US" >"$dir/cpu.cfs_period_us"
    echo "$quota" >"$dir/cpu.cfs_quota_us"
  fi
  echo "$dir"
}
# remove_cgroup DIR: once the processes in it have exited.
remove_cgroup() {
  local _
  for _ in $(seq 1 50); do
    [[ -d $1 ]] || return 0
    rmdir "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  log "cannot remove the cgroup $1: $(cat "$1/cgroup.procs" | tr '\n' ' ')"
}
# throttled DIR...: "periods throttled" summed over the cgroups' cpu.stat.
throttled() {
  local d
  for d in "$@"; do cat "$d/cpu.stat"; done | awk '$1 == "nr_periods" {p += $2} $1 == "nr_throttled" {t += $2} END {print p + 0, t + 0}'
}

# ---- PostgreSQL ----
psql -X -q "$PG/postgres" -c 'SELECT 1' >/dev/null || die "PostgreSQL is not reachable at $PG"
if [[ -z $(psql -X -Atq "$PG/postgres" -c "SELECT 1 FROM pg_database WHERE datname = '$DB'") ]]; then
  psql -X -q "$PG/postgres" -c "CREATE DATABASE $DB" >/dev/null
fi
sql() { psql -X -Atq "$PG/$DB" -c "$1"; }
schemas=()
finish() {
  local s d
  cleanup
  for s in "${schemas[@]}"; do sql "DROP SCHEMA IF EXISTS $s CASCADE" >/dev/null 2>&1 || true; done
  for d in "$CG_ROOT"/bloomcast-harness-$$-*; do remove_cgroup "$d"; done
}
trap finish EXIT

# ---- CPU time ----
# ticks PID...: their user + system CPU time, in clock ticks.
ticks() {
  local p
  for p in "$@"; do sed 's/.*) //' "/proc/$p/stat"; done | awk '{t += $12 + $13} END {print t + 0}'
}
# pg_ticks: "pid ticks" for every postgres process.
pg_ticks() {
  local p
  for p in $(pgrep -x postgres); do
    [[ -r /proc/$p/stat ]] && echo "$p $(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}')"
  done
}
# pg_spent BEFORE AFTER: CPU seconds postgres processes spent between two pg_ticks (a
# process born meanwhile counts whole; one that exited meanwhile is not seen).
pg_spent() {
  awk -v tick="$TICK" 'NR == FNR {b[$1] = $2; next} {t += $2 - ($1 in b ? b[$1] : 0)} END {printf "%.3f", t / tick}' <(echo "$1") <(echo "$2")
}
# busy: the machine's busy time (all cores, everything but idle and iowait), in ticks.
busy() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
# child_secs: CPU seconds of this subshell's waited-for children, from bash's `times`.
child_secs() {
  times >"$WORK/times"
  awk 'NR == 2 {for (i = 1; i <= 2; i++) {split($i, a, /[ms]/); t += a[1] * 60 + a[2]}} END {printf "%.3f", t}' "$WORK/times"
}

# ---- phases ----
# measure NAME CMD...: runs CMD (which prints its figures on stdout and, last, its own
# children's CPU seconds); sets OUT (the figures), and the CPU seconds spent meanwhile by
# the nodes (NODE_S), PostgreSQL (PG_S), the load generator (GEN_S) and the machine
# (BUSY_S), the wall seconds (WALL_S) and the share of the nodes' quota periods that were
# throttled (THR_PCT).
measure() {
  local name="$1" nb pb bb tb t0 out na pa ba ta
  shift
  nb=$(ticks "${node_pids[@]}") pb=$(pg_ticks) bb=$(busy) tb=$(throttled "${node_cgs[@]}") t0=$(date +%s.%N)
  out=$("$@")
  na=$(ticks "${node_pids[@]}") pa=$(pg_ticks) ba=$(busy) ta=$(throttled "${node_cgs[@]}")
  WALL_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
  NODE_S=$(awk -v a="$nb" -v b="$na" -v t="$TICK" 'BEGIN {printf "%.3f", (b - a) / t}')
  PG_S=$(pg_spent "$pb" "$pa")
  BUSY_S=$(awk -v a="$bb" -v b="$ba" -v t="$TICK" 'BEGIN {printf "%.3f", (b - a) / t}')
  THR_PCT=$(awk -v a="$tb" -v b="$ta" 'BEGIN {split(a, x, " "); split(b, y, " "); p = y[1] - x[1]; printf "%.0f", (p > 0 ? 100 * (y[2] - x[2]) / p : 0)}')
  GEN_S=$(tail -1 <<<"$out")
  OUT=$(sed '$d' <<<"$out")
  log "$name: $(tr '\n' ' ' <<<"$OUT")(nodes ${NODE_S}s, postgres ${PG_S}s, generator ${GEN_S}s, machine ${BUSY_S}s of ${WALL_S}s, throttled ${THR_PCT}%)"
}
# reads PATH: one wrk per node on PATH, all at once; prints the summed requests/s and
# errors, then the wrks' CPU seconds.
reads() {
  local file i files=()
  for i in "${!urls[@]}"; do
    files+=("$WORK/wrk-$i.txt")
    wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -H 'Accept-Encoding: gzip' "${urls[$i]}$1" >"$WORK/wrk-$i.txt" &
  done
  wait
  for file in "${files[@]}"; do parse_wrk "$file"; done | awk '{r += $1; e += $4} END {printf "%.0f %d\n", r, e}'
  child_secs
}
ingest() {
  taskset -c 0-1 "$EXAMPLES/loadgen" --url "$(IFS=,; echo "${urls[*]}")" --token "$TOKEN" \
    --batch 1000 --clients $((CLIENTS * ${#urls[@]})) --seconds "$SECS" --warmup 1
  child_secs
}
# The same while a poller on every node asks for the index each 0.25 s, which brings the
# node's open hour up to date (at most every refresh_ms): every node then reads back
# from PostgreSQL every ID all nodes ingest.
ingest_following() {
  local url pollers=()
  for url in "${urls[@]}"; do
    (while :; do curl -s -o /dev/null "$url/"; sleep 0.25; done) &
    pollers+=($!)
  done
  ingest | sed '$d'
  kill "${pollers[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  child_secs
}
# cores SECONDS: CPU seconds over the phase's wall time.
cores() { awk -v s="$1" -v w="$WALL_S" 'BEGIN {printf "%.2f", s / w}'; }
# per_k SECONDS BATCHES: CPU-ms per 1000 IDs.
per_k() { awk -v s="$1" -v b="$2" 'BEGIN {printf "%.3f", 1e3 * s / b}'; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }
table_bytes() {
  sql "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '$1' AND c.relkind = 'r'"
}
rows_written() {
  sql "SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables WHERE schemaname = '$1'"
}
xacts() { psql -X -Atq "$PG/postgres" -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$DB'"; }
wal_lsn() { sql "SELECT pg_current_wal_lsn()"; }
wal_bytes() { sql "SELECT pg_wal_lsn_diff('$2', '$1')::bigint"; }

# start_nodes SCHEMA NAME: $nodes capped nodes on SCHEMA (urls, ports, node_pids, node_cgs).
start_nodes() {
  local i port
  urls=() node_pids=() node_cgs=() ports=()
  for i in $(seq 1 "$nodes"); do
    port=$(free_port)
    CGROUP=$(cpu_cap "$2-$i")
    node_cgs+=("$CGROUP")
    CGROUP="$CGROUP" start_bloomcast "$WORK/unused" "$port" BLOOMCAST_DATABASE_URL="$PG/$DB" BLOOMCAST_DATABASE_SCHEMA="$1"
    urls+=("http://127.0.0.1:$port") node_pids+=("$SERVER_PID") ports+=("$port")
  done
}
# stop_nodes: stops them (their backends then flush their statistics) and removes their cgroups.
stop_nodes() {
  local pid d
  for pid in "${node_pids[@]}"; do stop_pid "$pid"; done
  sleep 1.5
  for d in "${node_cgs[@]}"; do remove_cgroup "$d"; done
}

per_round=$((4 * (SECS + 3) + 60))
ensure_hour_lasts $((ROUNDS * $(wc -w <<<"$NODES") * per_round + 60))
first_past=$(date -u -d '3 hours ago' +/%Y/%m/%d/%H)
log "cluster scaling: nodes capped at ${CAP}% of a core (period ${PERIOD_US} us, $([[ $CG_ROOT == /sys/fs/cgroup ]] && echo 'cgroup v2 cpu.max' || echo 'cgroup v1 cfs quota')), PostgreSQL not capped; $(machine)"
batch_rows=() follow_rows=()
for round in $(seq 1 "$ROUNDS"); do
  order=$NODES
  # Even rounds go the other way, so that no count of nodes always runs first.
  ((round % 2)) || order=$(tr ' ' '\n' <<<"$NODES" | tac | tr '\n' ' ')
  for nodes in $order; do
    schema="harness_$$_r${round}_${nodes}n"
    schemas+=("$schema")
    for ago in 3 2 1; do
      BLOOMCAST_DATABASE_SCHEMA="$schema" "$EXAMPLES/seed_closed_hour" "$PG/$DB" "$PAST_IDS" "$ago" "past$ago" >/dev/null
    done
    x0=$(xacts)
    start_nodes "$schema" "r${round}-${nodes}n"
    post_ids "${ports[0]}" open "$OPEN_IDS"
    open=$(current_path "${ports[0]}")
    for url in "${urls[@]}"; do
      curl -sf -o /dev/null -H 'Accept-Encoding: gzip' "$url$open"
      curl -sf -o /dev/null -H 'Accept-Encoding: gzip' "$url/since$first_past"
    done

    measure "round $round, $nodes node(s), open-hour reads" reads "$open"
    read -r open_rps open_err <<<"$OUT"
    open_row="$open_rps|$(cores "$NODE_S")|$(cores "$GEN_S")|$THR_PCT|$open_err"
    measure "round $round, $nodes node(s), union reads" reads "/since$first_past"
    read -r union_rps union_err <<<"$OUT"
    union_row="$union_rps|$(cores "$NODE_S")|$(cores "$GEN_S")|$THR_PCT|$union_err"

    b0=$(sql "SELECT count(*) FROM $schema.batches") w0=$(wal_lsn) s0=$(table_bytes "$schema") r0=$(rows_written "$schema")
    measure "round $round, $nodes node(s), ingest" ingest
    ids_s=$(field ids_per_s "$OUT") p99=$(field p99_ms "$OUT") errors=$(field errors "$OUT")
    b1=$(sql "SELECT count(*) FROM $schema.batches") w1=$(wal_lsn)
    batches=$((b1 - b0))
    ingest_row="$ids_s|$p99|$errors|$(cores "$NODE_S")|$(cores "$PG_S")|$(cores "$GEN_S")|$(cores "$BUSY_S")|$THR_PCT|$(per_k "$PG_S" "$batches")|$(per_k "$NODE_S" "$batches")"
    wal_per_batch=$(awk -v w="$(wal_bytes "$w0" "$w1")" -v b="$batches" 'BEGIN {printf "%.0f", w / b}')

    # Following: a node that is not capped loads the open hour all of them just wrote.
    total_ids=$(sql "SELECT coalesce(sum(length(keys)), 0) / 8 FROM $schema.batches WHERE hour = (SELECT max(hour) FROM $schema.batches)")
    port=$(free_port)
    pb=$(pg_ticks) t0=$(date +%s.%N)
    SERVER_CPU=0-$(($(nproc) - 1)) START_TRIES=6000 start_bloomcast "$WORK/unused" "$port" \
      BLOOMCAST_DATABASE_URL="$PG/$DB" BLOOMCAST_DATABASE_SCHEMA="$schema"
    follower=$SERVER_PID
    fs=$(ticks "$follower") pa=$(pg_ticks)
    load_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
    follow_rows+=("$(awk -v r="$round" -v n="$nodes" -v ids="$total_ids" -v pg="$(pg_spent "$pb" "$pa")" -v node="$fs" -v t="$TICK" -v w="$load_s" \
      'BEGIN {printf "| %d | %d | %d | %.2f | %.3f | %.3f |", r, n, ids, w, 1e6 * pg / ids, 1e6 * node / t / ids}')")
    stop_pid "$follower"

    stop_nodes
    x1=$(xacts) s1=$(table_bytes "$schema") r1=$(rows_written "$schema")
    batch_rows+=("$(awk -v r="$round" -v n="$nodes" -v b="$batches" -v rows="$((r1 - r0))" -v bytes="$((s1 - s0))" -v wal="$wal_per_batch" -v x="$((x1 - x0))" \
      'BEGIN {printf "| %d | %d | %d | %.2f | %.0f | %s | %.2f |", r, n, b, rows / b, bytes / b, wal, x / b}')")

    # The same ingest on a fresh schema (an open hour as small as the first one's) while
    # every node follows the others.
    schema="harness_$$_r${round}_${nodes}n_following"
    schemas+=("$schema")
    start_nodes "$schema" "r${round}-${nodes}n-following"
    measure "round $round, $nodes node(s), ingest, every node following" ingest_following
    b2=$(sql "SELECT count(*) FROM $schema.batches")
    following_row="$(field ids_per_s "$OUT")|$(field errors "$OUT")|$(cores "$NODE_S")|$(cores "$PG_S")|$(cores "$BUSY_S")|$THR_PCT|$(per_k "$PG_S" "$b2")|$(per_k "$NODE_S" "$b2")"
    stop_nodes

    echo "$round|$nodes|$ingest_row|$open_row|$union_row|$following_row" >>"$WORK/rows"
  done
done

echo
echo "### Scaling out: nodes capped at ${CAP}% of a core each, PostgreSQL not capped"
echo
echo "$(machine); ${SECS} s per phase; ingest: batches of 1000, ${CLIENTS} clients per node; reads: ${CONNS} gzip connections per node (one wrk each); ${PAST_IDS} IDs in each of 3 past hours, ${OPEN_IDS} in the open hour before the reads."
echo
# Fields of $WORK/rows: 1 round, 2 nodes; ingest 3 IDs/s, 4 p99, 5 errors, 6 nodes' cores,
# 7 postgres cores, 8 loadgen cores, 9 machine cores, 10 throttled, 11 postgres ms/1000,
# 12 nodes ms/1000; open-hour reads 13 req/s, 14 nodes' cores, 15 wrk cores, 16 throttled,
# 17 errors; union reads 18-22 likewise; ingest while following 23 IDs/s, 24 errors,
# 25 nodes' cores, 26 postgres cores, 27 machine cores, 28 throttled, 29 postgres
# ms/1000, 30 nodes ms/1000. Factors are against the fewest nodes of the same round.
table() {
  awk -F'|' "$1"' NR == FNR {if (!($1 in few) || $2 < few[$1]) {few[$1] = $2}; next}
    $2 == few[$1] {i[$1] = $3; o[$1] = $13; u[$1] = $18; f[$1] = $23}
    {row[NR] = $0} END {for (n = FNR + 1; n <= NR; n++) {$0 = row[n]; line()}}' "$WORK/rows" "$WORK/rows"
}
echo "| round | nodes | durable IDs/s | x | open-hour reads/s | x | union reads/s | x | ingest while every node follows, IDs/s | x | nodes throttled: ingest / open / union / following | machine busy in ingest (cores of $(nproc)) | PostgreSQL in ingest (cores) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
# shellcheck disable=SC2016
table 'function line() {split($0, a, "|"); printf "| %d | %d | %.0f | %.2fx | %.0f | %.2fx | %.0f | %.2fx | %.0f | %.2fx | %s%% / %s%% / %s%% / %s%% | %s | %s |\n",
  a[1], a[2], a[3], a[3] / i[a[1]], a[13], a[13] / o[a[1]], a[18], a[18] / u[a[1]], a[23], a[23] / f[a[1]], a[10], a[16], a[21], a[28], a[9], a[7]}'
echo
echo "Medians over the rounds (range in brackets); the factor is median over median:"
echo
echo "| nodes | durable IDs/s | x | open-hour reads/s | x | union reads/s | x | ingest while every node follows, IDs/s | x | PostgreSQL in ingest (cores) | machine busy in ingest (cores) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
awk -F'|' '
  function med(s,   a, n, i, j, t) {n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) {t = a[i]; a[i] = a[j]; a[j] = t}
    lo = a[1]; hi = a[n]; return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2}
  {n = $2; seen[n] = 1; I[n] = I[n] " " $3; O[n] = O[n] " " $13; U[n] = U[n] " " $18; F[n] = F[n] " " $23; P[n] = P[n] " " $7; B[n] = B[n] " " $9}
  END {
    few = ""; for (n in seen) if (few == "" || n + 0 < few + 0) few = n
    i1 = med(I[few]); o1 = med(O[few]); u1 = med(U[few]); f1 = med(F[few])
    for (n = 1; n <= 64; n++) if (n in seen) {
      i = med(I[n]); il = lo; ih = hi; o = med(O[n]); ol = lo; oh = hi; u = med(U[n]); ul = lo; uh = hi
      f = med(F[n]); fl = lo; fh = hi; p = med(P[n]); b = med(B[n])
      printf "| %d | %.0f (%.0f–%.0f) | %.2fx | %.0f (%.0f–%.0f) | %.2fx | %.0f (%.0f–%.0f) | %.2fx | %.0f (%.0f–%.0f) | %.2fx | %.2f | %.2f |\n",
        n, i, il, ih, i / i1, o, ol, oh, o / o1, u, ul, uh, u / u1, f, fl, fh, f / f1, p, b
    }
  }' "$WORK/rows"
echo
echo "What the ingest costs (CPU-ms per 1000 IDs stored; loadgen and wrk are the load generators):"
echo
echo "| round | nodes | p99 ms | errors | nodes, CPU-ms per 1000 IDs | PostgreSQL, CPU-ms per 1000 IDs | loadgen (cores) | wrk open / union (cores) | following: nodes, CPU-ms per 1000 IDs | following: PostgreSQL, CPU-ms per 1000 IDs | following: machine busy (cores) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
# shellcheck disable=SC2016
table 'function line() {split($0, a, "|"); printf "| %d | %d | %s | %d | %s | %s | %s | %s / %s | %s | %s | %s |\n",
  a[1], a[2], a[4], a[5] + a[17] + a[22] + a[24], a[12], a[11], a[8], a[15], a[20], a[30], a[29], a[27]}'
echo
echo "Per ingested batch of 1000 IDs (rows written and table growth from PostgreSQL's statistics; WAL from pg_current_wal_lsn; transactions from pg_stat_database, node start-up included):"
echo
echo "| round | nodes | batches | rows written per batch | table bytes per batch | WAL bytes per batch | transactions per batch |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${batch_rows[@]}"
echo
echo "Reading back: a node (not capped) loading the open hour that all nodes just wrote, from PostgreSQL:"
echo
echo "| round | nodes that wrote it | IDs | seconds to load | PostgreSQL CPU-ms per 1000 IDs read | node CPU-ms per 1000 IDs read |"
echo "|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${follow_rows[@]}"
