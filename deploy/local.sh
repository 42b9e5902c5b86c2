#!/usr/bin/env bash
# The production layout on one machine, for trying it: PostgreSQL (the one on
# 127.0.0.1:5432 when it answers, else a private one started here), two bloomcast nodes in
# cluster mode sharing one signing key and one ingest token, and Varnish in front of
# both, every piece on a loopback port printed at start. Ctrl-C stops everything this
# script started and removes its files; the shared PostgreSQL loses only the schema made
# for this run.
#
#   deploy/local.sh                      # builds the release binary first if needed
#   BIN=target/release/bloomcast deploy/local.sh
#   PG=postgres://user@host:5432/db deploy/local.sh
#   PG=private deploy/local.sh           # a private PostgreSQL even when one answers
#   PORT=8090 deploy/local.sh            # Varnish's port (nodes and PostgreSQL take the next free ones)
#
# Needs varnishd (Debian: apt-get install varnish) and, when no PostgreSQL answers,
# PostgreSQL's server programs (apt-get install postgresql).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
say() { printf '== %s\n' "$*" >&2; }
die() { printf 'local.sh: %s\n' "$*" >&2; exit 1; }

command -v varnishd >/dev/null || PATH="$PATH:/usr/sbin"
command -v varnishd >/dev/null || die "varnishd not found: apt-get install varnish"
if [ -z "${BIN:-}" ]; then
  BIN="${CARGO_TARGET_DIR:-$root/target}/release/bloomcast"
  say "building $BIN"
  (cd "$root" && cargo build --release --locked --bin bloomcast)
fi
[ -x "$BIN" ] || die "no bloomcast binary at $BIN"

work="$(mktemp -d "${TMPDIR:-/tmp}/bloomcast-local.XXXXXX")"
pids=() pg_data="" schema=""
stop() {
  trap - EXIT INT TERM
  say "stopping"
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$pg_data" ]; then
    as_pg "$pg_bin/pg_ctl" -D "$pg_data" -m fast -w stop >/dev/null 2>&1 || true
  elif [ -n "$schema" ]; then
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

take_port; varnish_port=$port
take_port; node_ports=("$port")
take_port; node_ports+=("$port")

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
  as_pg "$pg_bin/pg_ctl" -D "$pg_data" -l "$pg_data/log" -w \
    -o "-p $pg_port -c listen_addresses=127.0.0.1 -k $pg_data" start >/dev/null \
    || die "PostgreSQL did not start: $(tail -3 "$pg_data/log")"
  PG="postgres://postgres@127.0.0.1:$pg_port/postgres"
fi

# One ingest token and one signing key for both nodes (cluster mode requires it).
token="${BLOOMCAST_INGEST_TOKENS:-local-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')}"
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$work/signing-key"
chmod 600 "$work/signing-key"
for i in 0 1; do
  p="${node_ports[$i]}"
  (cd "$root" && exec env BLOOMCAST_LISTEN="127.0.0.1:$p" BLOOMCAST_DATA_DIR="$work/node$i" \
    BLOOMCAST_DATABASE_URL="$PG" BLOOMCAST_DATABASE_SCHEMA="${schema:-bloomcast}" \
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
  node 1              http://127.0.0.1:${node_ports[0]}
  node 2              http://127.0.0.1:${node_ports[1]}
  PostgreSQL          $PG${schema:+ (schema $schema)}
  ingest token        $token
  public key          $pubkey
  logs                $work

  printf 'user:1\\nuser:2\\n' | curl -s -X POST http://127.0.0.1:${node_ports[0]}/updates \\
    -H 'Authorization: Bearer $token' -H 'Content-Type: text/plain' --data-binary @-
  curl -si http://127.0.0.1:$varnish_port/\$(date -u +%Y/%m/%d/%H).bin | head -20

Ctrl-C stops everything.
INFO
wait "${pids[@]}"
