# Shared by the harness scripts: sourced, not run. Builds, installs tools, starts and
# stops servers, reads wrk's output. Every process started here is recorded and killed
# on exit by its own PID.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# BIN=path/to/bloomcast measures another build (e.g. the one before a change) in the same harness.
BIN="${BIN:-$ROOT/target/release/bloomcast}"
EXAMPLES="${EXAMPLES:-$ROOT/target/release/examples}"
TOKEN="harness-token-$$"
# The server and its load share 2 cores: the server (and nginx) on core 0, the client on core 1.
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
PIDS=()

log() { printf '== %s\n' "$*" >&2; }
die() { printf 'harness: %s\n' "$*" >&2; exit 1; }

cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
  if [[ -n "${WORK:-}" && -d "$WORK" && -z "${KEEP:-}" ]]; then
    rm -rf "$WORK"
  fi
}

# A scratch directory on the real disk (not a tmpfs /tmp), so fsync costs what it costs.
make_work() {
  mkdir -p "$ROOT/target/harness"
  WORK="$(mktemp -d "$ROOT/target/harness/run.XXXXXX")"
  trap cleanup EXIT
  trap 'exit 130' INT TERM
}

build() {
  log "cargo build --release --locked --bins --examples"
  (cd "$ROOT" && cargo build --release --locked --bins --examples >&2)
}

# Installs Debian packages for the commands that are missing: ensure_tools wrk:wrk nginx:nginx-light
ensure_tools() {
  local want=() pair
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null || want+=("${pair#*:}")
  done
  [[ ${#want[@]} -eq 0 ]] && return 0
  log "installing ${want[*]} from Debian packages"
  local sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${want[@]}" >&2
}

# A TCP port no socket uses, below the kernel's ephemeral range: a port in that range
# can be taken by one of the thousands of client connections a run makes, and a server
# then fails to bind it.
free_port() {
  local port low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$low" -gt 21000 ] || low=40000
  while :; do
    port=$((20000 + RANDOM % (low - 20000)))
    if ! ss -Htan "sport = :$port" | grep -q .; then
      echo "$port"
      return
    fi
  done
}

# start_bloomcast DATA_DIR PORT [VAR=value ...]: the release binary pinned to the server
# core, from the repository root (it reads config/ there); sets SERVER_PID. With CGROUP
# set (a cgroup directory, see cpu_cap), it runs in that cgroup, on any core, instead.
# It waits START_TRIES × 0.1 s (default 100) for /healthz to answer 200.
start_bloomcast() {
  local dir="$1" port="$2" launch
  shift 2
  launch=(taskset -c "$SERVER_CPU")
  [[ -z ${CGROUP:-} ]] || launch=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CGROUP")
  (cd "$ROOT" && exec env RUST_LOG=warn BLOOMCAST_LISTEN="127.0.0.1:$port" \
      BLOOMCAST_DATA_DIR="$dir" BLOOMCAST_INGEST_TOKENS="$TOKEN" "$@" \
      "${launch[@]}" "$BIN" serve) 2>>"$WORK/bloomcast-$port.log" &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  wait_http "http://127.0.0.1:$port/healthz" "${START_TRIES:-100}" || die "bloomcast on :$port did not start: $(tail -5 "$WORK/bloomcast-$port.log")"
}

stop_pid() {
  local pid="$1" kept=() p
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for p in "${PIDS[@]}"; do
    [[ "$p" == "$pid" ]] || kept+=("$p")
  done
  PIDS=("${kept[@]}")
}

# wait_http URL [TRIES]: until URL answers 2xx, polling every 0.1 s (10 s by default).
wait_http() {
  local _
  for _ in $(seq 1 "${2:-100}"); do
    curl -sf -o /dev/null "$1" && return 0
    sleep 0.1
  done
  return 1
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# A process's CPU time (user + system) in clock ticks; its peak RSS (VmHWM) in MiB; ticks
# as seconds.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hwm_mib() { awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
tick_hz=$(getconf CLK_TCK)
cpu_s() { awk -v t="$1" -v hz="$tick_hz" 'BEGIN { printf "%.2f", t / hz }'; }

# wait_idle PID [SECONDS]: until the process spends at most one tick in a second (what
# follows a start, sealing and warming, done), at most SECONDS (default 240).
wait_idle() {
  local last now _
  last=$(cpu_ticks "$1")
  for _ in $(seq 1 "${2:-240}"); do
    sleep 1
    now=$(cpu_ticks "$1")
    ((now - last <= 1)) && return 0
    last=$now
  done
}

# The server's current hour path, e.g. /2026/11/22/05, from its index.
current_path() {
  curl -sf "http://127.0.0.1:$1/" | sed -n 's/.*"current":{[^}]*"url":"\([^"]*\)".*/\1/p'
}

# Seconds left in the current UTC hour.
secs_left_in_hour() { echo $((3600 - $(date -u +%s) % 3600)); }

# Waits for the next hour if fewer than $1 seconds remain in this one, so that the open
# hour stays open for the whole measurement.
ensure_hour_lasts() {
  local left
  left=$(secs_left_in_hour)
  if ((left < $1)); then
    log "only ${left}s left in this hour; waiting for the next one"
    sleep $((left + 5))
  fi
}

# post_ids PORT PREFIX N: ingests PREFIX:0 .. PREFIX:N-1 in one text/plain batch.
post_ids() {
  seq 0 $(($3 - 1)) | sed "s/^/$2:/" | curl -sf -X POST "http://127.0.0.1:$1/updates" \
    -H "Authorization: Bearer $TOKEN" -H 'Content-Type: text/plain' --data-binary @- >/dev/null
}

# wrk's latency figure (e.g. 1.23ms, 850.00us, 1.02s) in milliseconds.
to_ms() {
  awk -v v="$1" 'BEGIN {
    n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
    if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
    printf "%.2f", n }'
}

# parse_wrk FILE: "req_per_s p50_ms p99_ms errors" where errors counts socket errors,
# timeouts and responses other than 2xx/3xx.
parse_wrk() {
  local rps p50 p99 bad sock
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$1")
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$1")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$1")")
  bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$1")
  sock=$(awk '/Socket errors:/ {gsub(/,/, ""); print $4 + $6 + $8 + $10}' "$1")
  echo "${rps:-0} $p50 $p99 $((${bad:-0} + ${sock:-0}))"
}

# Median of three or more numbers.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

machine() {
  local cpu
  cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
  echo "$(nproc) cores of $cpu, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -sr), $(rustc --version | cut -d' ' -f1-2)"
}

# mirror_for_nginx BASE: saves the exact bytes bloomcast at BASE serves for the paths in
# $closed and $open (gzip and identity) as $WORK/www/{closed,open}.json[.gz], for nginx to
# serve, and sets etag to the closed hour's gzip ETag.
mirror_for_nginx() {
  local base="$1" name path
  mkdir -p "$WORK/www"
  for name in closed open; do
    path=${!name}
    curl -sf -H 'Accept-Encoding: gzip' -o "$WORK/www/$name.json.gz" "$base$path"
    curl -sf -o "$WORK/www/$name.json" "$base$path"
  done
  chmod -R a+rX "$WORK"
  etag=$(gzip_etag "$base$closed")
}

# gzip_etag URL: the ETag of URL's gzip representation.
gzip_etag() {
  curl -sf -D - -o /dev/null -H 'Accept-Encoding: gzip' "$1" | awk -F': ' 'tolower($1) == "etag" {print $2}' | tr -d '\r'
}

# write_nginx_conf PORT WORKERS [DIRECTIVE]: nginx in its best configuration for serving
# $WORK/www as static files (sendfile, gzip_static, open_file_cache, no access log, ETags,
# unlimited keep-alive), with bloomcast's Cache-Control and Vary, to $WORK/nginx.conf.
# DIRECTIVE is one more main-context line (e.g. `master_process off;`).
write_nginx_conf() {
  local port="$1" workers="$2" extra="${3:-}"
  cat >"$WORK/nginx.conf" <<EOF
worker_processes $workers;
$extra
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  client_body_temp_path $WORK/nginx-body;
  proxy_temp_path $WORK/nginx-proxy;
  fastcgi_temp_path $WORK/nginx-fastcgi;
  uwsgi_temp_path $WORK/nginx-uwsgi;
  scgi_temp_path $WORK/nginx-scgi;
  sendfile on;
  tcp_nopush on;
  open_file_cache max=1000 inactive=60s;
  open_file_cache_valid 3600s;
  keepalive_timeout 75s;
  keepalive_requests 100000000;
  server {
    listen 127.0.0.1:$port;
    root $WORK/www;
    etag on;
    gzip_static on;
    add_header Vary "Accept, Accept-Encoding";
    location = /closed.json { add_header Cache-Control "max-age=31536000, immutable"; add_header Vary "Accept, Accept-Encoding"; }
    location = /open.json { add_header Cache-Control "max-age=30"; add_header Vary "Accept, Accept-Encoding"; }
  }
}
EOF
}
