#!/usr/bin/env bash
# The production layout on one machine, for trying it: PostgreSQL (the one on
# 127.0.0.1:5432 when it answers, else a private one started here), two bloomcast nodes in
# cluster mode sharing one signing key and one ingest token, and Varnish in front of
# both, every piece on a loopback port printed at start. Ctrl-C stops everything this
# script started and removes its files; the shared PostgreSQL loses only the schema made
# for this run.
#
# The ha mode is for trying PostgreSQL failover, a read replica and PgBouncer: it always
# starts private servers (never the shared one, PG is not used), a primary and a
# synchronous standby streaming from it, and PgBouncer in transaction pooling in front of
# the primary. Node 1 writes to whichever of the two takes writes and reads sealed hours
# from the standby; node 2 goes through PgBouncer and LISTENs on a session of its own.
# The failover commands to try are printed at start.
#
#   deploy/local.sh                      # builds the release binary first if needed
#   BIN=target/release/bloomcast deploy/local.sh
#   PG=postgres://user@host:5432/db deploy/local.sh
#   PG=private deploy/local.sh           # a private PostgreSQL even when one answers
#   PORT=8090 deploy/local.sh            # Varnish's port (nodes and PostgreSQL take the next free ones)
#   deploy/local.sh ha                   # primary, synchronous standby and PgBouncer, then nodes and Varnish
#   ONLY_DB=1 deploy/local.sh ha         # databases only, for trying them with your own nodes
#
# Needs varnishd (Debian: apt-get install varnish) and, when no PostgreSQL answers,
# PostgreSQL's server programs (apt-get install postgresql); the ha mode needs both of
# those and pgbouncer (apt-get install pgbouncer).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
say() { printf '== %s\n' "$*" >&2; }
die() { printf 'local.sh: %s\n' "$*" >&2; exit 1; }

mode="${1:-}"
case "$mode" in
  "" | ha) ;;
  *) die "unknown mode '$mode' (usage: deploy/local.sh [ha])" ;;
esac
only_db=""
if [ -n "${ONLY_DB:-}" ] && [ "${ONLY_DB:-}" != 0 ]; then
  [ "$mode" = ha ] || die "ONLY_DB=1 goes with the ha mode: ONLY_DB=1 deploy/local.sh ha"
  only_db=1
fi

if [ -z "$only_db" ]; then
  command -v varnishd >/dev/null || PATH="$PATH:/usr/sbin"
  command -v varnishd >/dev/null || die "varnishd not found: apt-get install varnish"
fi
if [ "$mode" = ha ]; then
  command -v pgbouncer >/dev/null || PATH="$PATH:/usr/sbin"
  command -v pgbouncer >/dev/null || die "pgbouncer not found: apt-get install pgbouncer"
fi
if [ -z "$only_db" ]; then
  if [ -z "${BIN:-}" ]; then
    BIN="${CARGO_TARGET_DIR:-$root/target}/release/bloomcast"
    say "building $BIN"
    (cd "$root" && cargo build --release --locked --bin bloomcast)
  fi
  [ -x "$BIN" ] || die "no bloomcast binary at $BIN"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/bloomcast-local.XXXXXX")"
pids=() pg_data="" pg_datas=() schema=""
stop() {
  trap - EXIT INT TERM
  say "stopping"
  local pid data
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for data in "${pg_datas[@]}"; do
    as_pg "$pg_bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  done
  if [ -n "$schema" ]; then
    psql -X -q "$PG" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT TERM

taken() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
next_port=$((${PORT:-8090}))
# take_port: the next free port from PORT on, in $port (not a subshell: the count moves on).
take_port() {
  while taken "$next_port"; do next_port=$((next_port + 1)); done
  port=$next_port
  next_port=$((next_port + 1))
}
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
wait_for() {
  local _
  for _ in $(seq 1 100); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  return 1
}

if [ -z "$only_db" ]; then
  take_port; varnish_port=$port
  take_port; node_ports=("$port")
  take_port; node_ports+=("$port")
fi

if [ "$mode" = ha ]; then
  # Private servers only: a primary, a synchronous standby (application_name standby1)
  # and PgBouncer, all under $work/pg, owned by postgres when root (initdb refuses root).
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -x "$pg_bin/initdb" ] || die "initdb is missing: apt-get install postgresql"
  take_port; primary_port=$port
  take_port; standby_port=$port
  take_port; bouncer_port=$port
  pg_dir="$work/pg"
  mkdir -p "$pg_dir/primary"
  if [ "$(id -u)" = 0 ]; then chown -R postgres "$pg_dir" && chmod 755 "$work"; fi
  sql() { # sql PORT QUERY: one value, unaligned
    "$pg_bin/psql" -X -A -t -h 127.0.0.1 -p "$1" -U postgres -d postgres -c "$2"
  }

  say "starting the primary PostgreSQL on 127.0.0.1:$primary_port"
  as_pg "$pg_bin/initdb" -D "$pg_dir/primary" -U postgres -A trust >"$work/initdb.log" 2>&1 \
    || die "initdb failed: $(tail -3 "$work/initdb.log")"
  # initdb -A trust writes these lines already; the standby's base backup and stream need them.
  grep -Eq '^host[[:space:]]+replication[[:space:]]+all[[:space:]]+127\.0\.0\.1/32[[:space:]]+trust' \
    "$pg_dir/primary/pg_hba.conf" \
    || echo 'host replication all 127.0.0.1/32 trust' >>"$pg_dir/primary/pg_hba.conf"
  # On the command line, not in postgresql.conf: the standby's base backup copies that file,
  # and a promoted standby still naming standby1 would wait for it on every commit.
  pg_datas+=("$pg_dir/primary")
  as_pg "$pg_bin/pg_ctl" -D "$pg_dir/primary" -l "$pg_dir/primary.log" -w \
    -o "-p $primary_port -c listen_addresses=127.0.0.1 -k $pg_dir/primary -c wal_level=replica -c max_wal_senders=10 -c synchronous_commit=on -c synchronous_standby_names=standby1 -c hot_standby=on" \
    start >/dev/null \
    || die "the primary did not start: $(tail -3 "$pg_dir/primary.log")"

  say "starting the synchronous standby on 127.0.0.1:$standby_port"
  as_pg "$pg_bin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -D "$pg_dir/standby" -R -X stream \
    >"$work/basebackup.log" 2>&1 \
    || die "pg_basebackup failed: $(tail -3 "$work/basebackup.log")"
  # -R wrote standby.signal and a primary_conninfo; the last one in the file wins.
  echo "primary_conninfo = 'host=127.0.0.1 port=$primary_port user=postgres application_name=standby1'" \
    >>"$pg_dir/standby/postgresql.auto.conf"
  pg_datas+=("$pg_dir/standby")
  as_pg "$pg_bin/pg_ctl" -D "$pg_dir/standby" -l "$pg_dir/standby.log" -w \
    -o "-p $standby_port -c listen_addresses=127.0.0.1 -k $pg_dir/standby -c hot_standby=on" \
    start >/dev/null \
    || die "the standby did not start: $(tail -3 "$pg_dir/standby.log")"
  standby_sync() {
    [ "$(sql "$primary_port" "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'")" = sync ]
  }
  wait_for standby_sync || die "the standby is not synchronous: $(tail -3 "$pg_dir/standby.log")"

  say "starting PgBouncer on 127.0.0.1:$bouncer_port (transaction pooling, to the primary)"
  cat >"$pg_dir/pgbouncer.ini" <<INI
[databases]
postgres = host=127.0.0.1 port=$primary_port dbname=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bouncer_port
unix_socket_dir =
auth_type = trust
auth_file = $pg_dir/userlist.txt
admin_users = postgres
pool_mode = transaction
max_client_conn = 200
default_pool_size = 20
ignore_startup_parameters = extra_float_digits,options
; While the server is down, an error after 10 s rather than the default 120 s of waiting;
; and a retry every second, so that it follows a promoted standby at once.
query_wait_timeout = 10
server_login_retry = 1
logfile = $pg_dir/pgbouncer.log
pidfile = $pg_dir/pgbouncer.pid
INI
  echo '"postgres" ""' >"$pg_dir/userlist.txt"
  bouncer_bin=$(command -v pgbouncer)
  # In the foreground (no -d), so that stop ends it; never as root.
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$pg_dir/pgbouncer.ini" "$pg_dir/userlist.txt"
    runuser -u postgres -- "$bouncer_bin" "$pg_dir/pgbouncer.ini" >"$work/pgbouncer.out" 2>&1 &
  else
    "$bouncer_bin" "$pg_dir/pgbouncer.ini" >"$work/pgbouncer.out" 2>&1 &
  fi
  pids+=("$!")
  wait_for sql "$bouncer_port" 'SELECT 1' \
    || die "PgBouncer did not start: $(tail -3 "$work/pgbouncer.out")"

  rw_url="postgresql://postgres@127.0.0.1:$primary_port,127.0.0.1:$standby_port/postgres?target_session_attrs=read-write"
  # The standby whatever its role: once promoted it still serves the reads.
  ro_url="postgresql://postgres@127.0.0.1:$standby_port/postgres"
  bouncer_url="postgres://postgres@127.0.0.1:$bouncer_port/postgres"
  # Node 1: writes wherever they are taken, sealed hours from the replica. Node 2: through
  # PgBouncer, and LISTEN on a session of its own (transaction pooling cannot give one).
  db_urls=("$rw_url" "$bouncer_url")
  db_extra=("BLOOMCAST_DATABASE_READ_URL=$ro_url" "BLOOMCAST_DATABASE_LISTEN_URL=$rw_url")
  if [ "$(id -u)" = 0 ]; then as_pg_cmd="runuser -u postgres -- "; else as_pg_cmd=""; fi
  failover="  kill -9 \$(head -1 $pg_dir/primary/postmaster.pid)   # the primary dies
  ${as_pg_cmd}$pg_bin/pg_ctl -D $pg_dir/standby promote   # the standby takes over
  sed -i 's/port=$primary_port /port=$standby_port /' $pg_dir/pgbouncer.ini && kill -HUP \$(cat $pg_dir/pgbouncer.pid)   # PgBouncer follows it

Until the promotion, ingest answers 503 with Retry-After; writes resume within seconds
after it (node 2's once PgBouncer follows), with no node restart."
  databases="  PostgreSQL primary  postgres://postgres@127.0.0.1:$primary_port/postgres   data $pg_dir/primary
  standby (sync)      postgres://postgres@127.0.0.1:$standby_port/postgres   data $pg_dir/standby
  PgBouncer           $bouncer_url   (transaction pooling, to the primary)"

  if [ -n "$only_db" ]; then
    cat <<INFO

$databases
  logs                $work

  For your own nodes, as deploy/local.sh ha sets them:
  node 1   BLOOMCAST_DATABASE_URL=$rw_url
           BLOOMCAST_DATABASE_READ_URL=$ro_url
  node 2   BLOOMCAST_DATABASE_URL=$bouncer_url
           BLOOMCAST_DATABASE_LISTEN_URL=$rw_url

Failover, to try:
$failover

Ctrl-C stops everything.
INFO
    wait "${pids[@]}"
    exit 0
  fi
  node_notes_1="   writes: primary or standby, whichever takes them; sealed hours: the standby"
  node_notes_2="   writes: through PgBouncer; LISTEN: primary or standby"
  failover_block="
Failover, to try:
$failover
"
  PG=""
  schema=""
else
  # PostgreSQL: the given URL, or the local server when it answers, else a private one.
  if [ "${PG:-}" = private ]; then
    PG=""
  elif [ -z "${PG:-}" ] && command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432 \
    && psql -X -q "postgres://postgres@127.0.0.1:5432/postgres" -c 'SELECT 1' >/dev/null 2>&1; then
    PG="postgres://postgres@127.0.0.1:5432/postgres"
  fi
  if [ -n "${PG:-}" ]; then
    schema="bloomcast_local_$$"
    say "PostgreSQL at $PG, schema $schema"
  else
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -x "$pg_bin/initdb" ] || die "no PostgreSQL answers and initdb is missing: apt-get install postgresql, or set PG"
    take_port; pg_port=$port
    pg_data="$work/pg"
    mkdir -p "$pg_data"
    if [ "$(id -u)" = 0 ]; then chown -R postgres "$pg_data" && chmod 755 "$work"; fi
    say "starting a private PostgreSQL on 127.0.0.1:$pg_port"
    as_pg "$pg_bin/initdb" -D "$pg_data" -U postgres -A trust >"$work/initdb.log" 2>&1 \
      || die "initdb failed: $(tail -3 "$work/initdb.log")"
    pg_datas+=("$pg_data")
    as_pg "$pg_bin/pg_ctl" -D "$pg_data" -l "$pg_data/log" -w \
      -o "-p $pg_port -c listen_addresses=127.0.0.1 -k $pg_data" start >/dev/null \
      || die "PostgreSQL did not start: $(tail -3 "$pg_data/log")"
    PG="postgres://postgres@127.0.0.1:$pg_port/postgres"
  fi
  db_urls=("$PG" "$PG") db_extra=("" "")
  node_notes_1="" node_notes_2="" failover_block=""
  databases="  PostgreSQL          $PG${schema:+ (schema $schema)}"
fi

# One ingest token and one signing key for both nodes (cluster mode requires it).
token="${BLOOMCAST_INGEST_TOKENS:-local-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')}"
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$work/signing-key"
chmod 600 "$work/signing-key"
for i in 0 1; do
  p="${node_ports[$i]}"
  (cd "$root" && exec env BLOOMCAST_LISTEN="127.0.0.1:$p" BLOOMCAST_DATA_DIR="$work/node$i" \
    BLOOMCAST_DATABASE_URL="${db_urls[$i]}" ${db_extra[$i]:+"${db_extra[$i]}"} \
    BLOOMCAST_DATABASE_SCHEMA="${schema:-bloomcast}" \
    BLOOMCAST_INGEST_TOKENS="$token" BLOOMCAST_SIGNING_KEY_FILE="$work/signing-key" \
    "$BIN" serve) 2>"$work/node$i.log" &
  pids+=("$!")
done
for p in "${node_ports[@]}"; do
  wait_for curl -sf "http://127.0.0.1:$p/healthz" || die "node on :$p did not start: $(tail -3 "$work"/node*.log)"
done

mkdir -p "$work/varnish"
"$root/deploy/varnish/backends.sh" "${node_ports[@]/#/127.0.0.1:}" >"$work/varnish/main.vcl"
varnishd -F -j none -n "$work/varnish" -a "127.0.0.1:$varnish_port" -f "$work/varnish/main.vcl" \
  -p http_gzip_support=off -s malloc,256m >"$work/varnish.log" 2>&1 &
pids+=("$!")
wait_for curl -sf "http://127.0.0.1:$varnish_port/.well-known/bloomcast.json" \
  || die "Varnish did not start: $(tail -5 "$work/varnish.log")"

pubkey=$(curl -sf "http://127.0.0.1:$varnish_port/.well-known/bloomcast.json" | sed -n 's/.*"public_key":"\([0-9a-f]*\)".*/\1/p')
cat <<INFO

  Varnish (pollers)   http://127.0.0.1:$varnish_port
  node 1              http://127.0.0.1:${node_ports[0]}$node_notes_1
  node 2              http://127.0.0.1:${node_ports[1]}$node_notes_2
$databases
  ingest token        $token
  public key          $pubkey
  logs                $work

  printf 'user:1\\nuser:2\\n' | curl -s -X POST http://127.0.0.1:${node_ports[0]}/updates \\
    -H 'Authorization: Bearer $token' -H 'Content-Type: text/plain' --data-binary @-
  curl -si http://127.0.0.1:$varnish_port/\$(date -u +%Y/%m/%d/%H).bin | head -20
$failover_block
Ctrl-C stops everything.
INFO
wait "${pids[@]}"
