#!/usr/bin/env bash
# A huge hour read in the bytes a poller's IDs need: one past hour of HOUR_IDS distinct
# IDs (default 10,000,000), served by bloomcast (pinned to core 0), by deploy/'s Varnish
# in front of it, and by nginx on a static mirror of it written by `bloomcast mirror`
# (deploy/nginx-mirror.conf), read by the CLI (`bloomcast check --strategy pages
# --pubkey`, core 1) following k = 1, 10, 100 and 1,000 IDs, half of them in the hour.
#
#   benches/harness/pages.sh
#   HOUR_IDS=1000000 benches/harness/pages.sh        # a quicker run
#
# Prints, per source and k: the requests and bytes on the wire (status lines, headers
# and bodies, from nginx's $bytes_sent and varnishncsa's %O) of the `.pages` reads, the
# same for the whole check (the index, key list, checkpoint, open hour), the wall time of
# the check, and whether every followed ID of the hour was found (no false negative);
# beside it the whole `.ribbon2` and `.pages` bodies of the hour. Then the whole paged
# body is checked offline (examples/pages_check.rs) against every ingested ID and 10^6
# absent ones, beside the whole `.ribbon2` body's false-positive rate.
set -euo pipefail
source "$(dirname "$0")/common.sh"
ensure_tools varnishd:varnish nginx:nginx-light curl:curl varnishncsa:varnish
HOUR_IDS="${HOUR_IDS:-10000000}"
BUDGET="${BLOOMCAST_CACHE_BYTES:-1073741824}"
make_work

data="$WORK/data"
log "seeding one past hour of $HOUR_IDS IDs"
hour=$("$EXAMPLES/seed_closed_hour" "$data" "$HOUR_IDS" 2 member)
port=$(free_port)
origin="http://127.0.0.1:$port"
START_TRIES=6000 start_bloomcast "$data" "$port" BLOOMCAST_CACHE_BYTES="$BUDGET" \
  BLOOMCAST_REQUEST_TIMEOUT_SECONDS=600
pid=$SERVER_PID
wait_idle "$pid"
pubkey=$(curl -sf "$origin/.well-known/bloomcast.json" | sed -n 's/.*"public_key":"\([0-9a-f]*\)".*/\1/p')
[ -n "$pubkey" ] || die "the server publishes no public key"

# The whole bodies, once (this builds them).
before=$(cpu_ticks "$pid")
curl -sf -o "$WORK/hour.pages" "$origin$hour.pages"
pages_cpu=$(cpu_s $(($(cpu_ticks "$pid") - before)))
curl -sf -o "$WORK/hour.ribbon2" "$origin$hour.ribbon2"
pages_bytes=$(stat -c %s "$WORK/hour.pages")
ribbon2_bytes=$(stat -c %s "$WORK/hour.ribbon2")

# Varnish in front of the origin, as deploy/ configures it.
vport=$(free_port)
mkdir -p "$WORK/varnish"
"$ROOT/deploy/varnish/backends.sh" "127.0.0.1:$port" >"$WORK/varnish/main.vcl"
taskset -c "$SERVER_CPU" varnishd -F -j none -n "$WORK/varnish" -a "127.0.0.1:$vport" \
  -f "$WORK/varnish/main.vcl" -p http_gzip_support=off -s malloc,1g >"$WORK/varnish.log" 2>&1 &
PIDS+=("$!")
wait_http "http://127.0.0.1:$vport/healthz" || die "Varnish did not start"
varnishncsa -n "$WORK/varnish" -F '%O %U' -w "$WORK/varnish-access.log" &
PIDS+=("$!")

# The static mirror, and nginx serving it with deploy/nginx-mirror.conf's server block.
mirror="$WORK/mirror"
taskset -c "$CLIENT_CPU" "$BIN" mirror "$mirror" --url "$origin" --pubkey "$pubkey" >/dev/null
nport=$(free_port)
chmod 755 "$WORK" # nginx's workers run as its own user
mkdir -p "$WORK/nginx-tmp"
sed -e "s|listen 8080;|listen 127.0.0.1:$nport;|" -e "s|root /srv/bloomcast-mirror;|root $mirror;|" \
  "$ROOT/deploy/nginx-mirror.conf" >"$WORK/mirror-server.conf"
cat >"$WORK/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  client_body_temp_path $WORK/nginx-tmp;
  proxy_temp_path $WORK/nginx-tmp;
  fastcgi_temp_path $WORK/nginx-tmp;
  uwsgi_temp_path $WORK/nginx-tmp;
  scgi_temp_path $WORK/nginx-tmp;
  log_format bytes '\$bytes_sent \$uri';
  access_log $WORK/nginx-access.log bytes;
  include $WORK/mirror-server.conf;
}
EOF
taskset -c "$SERVER_CPU" nginx -c "$WORK/nginx.conf" &
PIDS+=("$!")
wait_http "http://127.0.0.1:$nport/index.json" || die "nginx did not start: $(tail -3 "$WORK/nginx-error.log")"

since=$(echo "$hour" | sed 's|^/||; s|/|-|; s|/|-|; s|/|T|')
check() { # base k: one check; prints requests, wall seconds, found of followed members
  local base="$1" k="$2" ids=() i start end out
  for i in $(seq 1 "$k"); do
    if ((i % 2)); then ids+=("member:$(((i * 7919) % HOUR_IDS))"); else ids+=("absent-follow:$i"); fi
  done
  start=$(date +%s.%N)
  out=$(taskset -c "$CLIENT_CPU" "$BIN" check --server "$base" --since "$since" --strategy pages \
    --pubkey "$pubkey" --accept-stale --json "${ids[@]}" 2>>"$WORK/check.err") ||
    die "bloomcast check against $base failed: $(tail -3 "$WORK/check.err")"
  end=$(date +%s.%N)
  local found wanted=$(((k + 1) / 2))
  found=$(echo "$out" | grep -o '"member:[0-9]*"' | sort -u | wc -l)
  printf '%s %.2f %s/%s\n' "$(echo "$out" | sed -n 's/.*"requests":\([0-9]*\).*/\1/p')" \
    "$(echo "$end - $start" | bc)" "$found" "$wanted"
}
sum_log() { # log file, from line: bytes of .pages lines, their count, bytes of all
  tail -n +"$2" "$1" | awk '{ all += $1; if ($2 ~ /\.pages$/) { pb += $1; pn++ } } END { printf "%d %d %d\n", pb, pn, all }'
}
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }

echo "## Huge hours: $HOUR_IDS IDs ($(nproc) cores; $("$BIN" --version))"
echo
echo "Whole bodies: \`.ribbon2\` $ribbon2_bytes bytes; \`.pages\` $pages_bytes bytes, built in ${pages_cpu} server CPU-s."
echo
echo "| source | k | requests (.pages) | bytes (.pages) | requests (all) | bytes (all) | wall s | members found |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for k in 1 10 100 1000; do
  for source in varnish nginx; do
    case $source in
      varnish) base="http://127.0.0.1:$vport"; logf="$WORK/varnish-access.log" ;;
      nginx) base="http://127.0.0.1:$nport"; logf="$WORK/nginx-access.log" ;;
    esac
    from=$(($(lines "$logf") + 1))
    read -r requests wall found < <(check "$base" "$k")
    sleep 1 # varnishncsa writes as it reads the log
    read -r pb pn all < <(sum_log "$logf" "$from")
    echo "| $source | $k | $pn | $pb | $requests | $all | $wall | $found |"
  done
done
echo
log "checking the whole paged body against every ID"
echo '```json'
"$EXAMPLES/pages_check" "$WORK/hour.pages" "$WORK/hour.ribbon2" member "$HOUR_IDS"
echo '```'
