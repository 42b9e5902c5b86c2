#!/usr/bin/env bash
# Serving: bloomcast against nginx serving the same bytes as static precompressed files.
#
#   benches/harness/serving.sh            # 10 s per wrk run (the default)
#   SECS=2 benches/harness/serving.sh     # a quick smoke run
#   CORES=both benches/harness/serving.sh # servers and wrk on both cores, nginx 2 workers
#   FLOOR=1 benches/harness/serving.sh    # also the floors: hyper alone, hyper + one axum Router
#
# Four requests at 64 connections: a closed hour (gzip JSON), the same hour without gzip
# (identity JSON), the open hour (gzip JSON, between two ingests) and a 304 revalidation
# of the closed hour. bloomcast serves them from its embedded store; nginx serves the very
# bytes bloomcast sent, saved as closed.json[.gz] and open.json[.gz], with gzip_static,
# open_file_cache, sendfile, no access log and ETags. By default (CORES=pinned) the
# servers run on core 0 (nginx with one worker), wrk (one thread) on core 1; CORES=both
# puts the servers and wrk (two threads) on both cores and gives nginx two workers. Each bloomcast run is followed by the same nginx run, the
# pair repeated three times; the table has the medians, and the runs line the load average
# before each pair. Besides requests per second, each run records the server's CPU time
# (user + system, all its threads or worker processes) per request served: on a machine
# other work shares, that is the comparison the other work does not distort. Expects a release build (run.sh builds one).
#
# FLOOR=1 adds three servers to each pair, on the same core: examples/hyper_floor.rs
# answering the closed hour's bytes (made once, at start) from a hyper `service_fn`, from
# one axum `Router` with the filter route on the same hyper connection, and from that
# Router with the stock tower-http layers every bloomcast read passes (CatchPanicLayer,
# bloomcast's CorsLayer, TimeoutLayer). They are what the one way in (hyper framing, one
# Router, stock layers) costs with no work of bloomcast's own: the ratio bloomcast could
# reach against nginx with its own layers and handler costing nothing. The open hour's
# row has no floor (its body changes with each ingest).
set -euo pipefail
source "$(dirname "$0")/common.sh"
SECS="${SECS:-10}"
N="${N:-3000}"
ensure_tools wrk:wrk nginx:nginx-light
make_work
case "${CORES:-pinned}" in
  pinned) NGINX_WORKERS=1 WRK_THREADS=1 ;;
  both) SERVER_CPU=0,1 CLIENT_CPU=0,1 NGINX_WORKERS=2 WRK_THREADS=2 ;;
  *) die "CORES is pinned or both, not ${CORES}" ;;
esac

# bloomcast, with a closed hour of N IDs (seeded through the store before it starts) and
# an open hour of N IDs (ingested over HTTP).
data="$WORK/data"
closed=$("$EXAMPLES/seed_closed_hour" "$data" "$N" 2)
ensure_hour_lasts $((8 * 3 * (SECS + 2) + 30))
port=$(free_port)
start_bloomcast "$data" "$port"
post_ids "$port" open "$N"
open=$(current_path "$port")
bc="http://127.0.0.1:$port"

# The exact bytes bloomcast serves, for nginx to serve.
mirror_for_nginx "$bc"

nport=$(free_port)
write_nginx_conf "$nport" "$NGINX_WORKERS"
taskset -c "$SERVER_CPU" nginx -c "$WORK/nginx.conf" -e "$WORK/nginx-error.log" 2>>"$WORK/nginx-error.log" &
NGINX_PID=$!
PIDS+=("$NGINX_PID")
ng="http://127.0.0.1:$nport"
wait_http "$ng/closed.json" || die "nginx did not start: $(cat "$WORK/nginx-error.log")"
netag=$(gzip_etag "$ng/closed.json")

servers=(bc ng)
if [[ "${FLOOR:-0}" == 1 ]]; then
  servers+=(hy ax st)
  for mode in hyper axum stock; do
    fport=$(free_port)
    taskset -c "$SERVER_CPU" "$EXAMPLES/hyper_floor" "$mode" "$fport" "$WORK/www" &
    PIDS+=("$!")
    case $mode in
      hyper) HY_PID=$! hy="http://127.0.0.1:$fport" ;;
      axum) AX_PID=$! ax="http://127.0.0.1:$fport" ;;
      stock) ST_PID=$! st="http://127.0.0.1:$fport" ;;
    esac
  done
  for f in "$hy" "$ax" "$st"; do
    wait_http "$f$closed" || die "hyper_floor did not start at $f"
    cmp -s <(curl -sf -H 'Accept-Encoding: gzip' "$f$closed") "$WORK/www/closed.json.gz" || die "$f sends other bytes"
  done
  fetag=$(gzip_etag "$hy$closed")
fi

# Both servers send the same body bytes, and both answer the revalidation with 304.
for name in closed open; do
  path=${!name}
  cmp -s <(curl -sf -H 'Accept-Encoding: gzip' "$bc$path") <(curl -sf -H 'Accept-Encoding: gzip' "$ng/$name.json") ||
    die "bloomcast and nginx send different bytes for the $name hour"
  cmp -s <(curl -sf "$bc$path") <(curl -sf "$ng/$name.json") ||
    die "bloomcast and nginx send different identity bytes for the $name hour"
done
[[ $(curl -s -o /dev/null -w '%{http_code}' -H 'Accept-Encoding: gzip' -H "If-None-Match: $etag" "$bc$closed") == 304 ]] || die "bloomcast did not answer 304"
[[ $(curl -s -o /dev/null -w '%{http_code}' -H 'Accept-Encoding: gzip' -H "If-None-Match: $netag" "$ng/closed.json") == 304 ]] || die "nginx did not answer 304"

# CPU time (user + system, clock ticks) of a process and its children, threads included:
# the server's own cost, which other work on the machine does not inflate the way it
# inflates wall-clock rates.
cpu_ticks() {
  local pid="$1" t=0 p
  for p in "$pid" $(pgrep -P "$pid"); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$t"
}
TICKS=$(getconf CLK_TCK)

run_wrk() { # run_wrk OUTPUT SERVER_PID URL [HEADER ...]; appends the server's CPU µs per request
  local out="$1" pid="$2" url="$3" args=() before after n
  shift 3
  local h
  for h in "$@"; do args+=(-H "$h"); done
  before=$(cpu_ticks "$pid")
  local TIMEFORMAT='%U %S' client
  client=$( { time taskset -c "$CLIENT_CPU" wrk -t"$WRK_THREADS" -c64 -d"${SECS}s" --latency "${args[@]}" "$url" >"$out"; } 2>&1 )
  after=$(cpu_ticks "$pid")
  n=$(awk '/requests in/ {print $1}' "$out")
  awk -v t=$((after - before)) -v hz="$TICKS" -v n="$n" 'BEGIN {printf "cpu_us_per_request %.1f\n", t * 1e6 / hz / n}' >>"$out"
  # The load generator's own CPU, as a share of one core over the run: near 100% on
  # one thread, wrk (not the server) is what limits the rate.
  awk -v c="$client" -v s="$SECS" 'BEGIN {split(c, t, " "); printf "client_cpu_percent %.0f\n", (t[1] + t[2]) * 100 / s}' >>"$out"
}

declare -A R
kinds=(closed identity open revalidate)
gz='Accept-Encoding: gzip'
for rep in 1 2 3; do
  for kind in "${kinds[@]}"; do
    case $kind in
      closed) bargs=("$bc$closed" "$gz") nargs=("$ng/closed.json" "$gz") ;;
      identity) bargs=("$bc$closed") nargs=("$ng/closed.json") ;;
      open) bargs=("$bc$open" "$gz") nargs=("$ng/open.json" "$gz") ;;
      revalidate) bargs=("$bc$closed" "$gz" "If-None-Match: $etag") nargs=("$ng/closed.json" "$gz" "If-None-Match: $netag") ;;
    esac
    R[load-$kind]+="$(cut -d' ' -f1 /proc/loadavg) "
    log "run $rep/3: $kind, ${servers[*]} (${SECS}s each)"
    run_wrk "$WORK/wrk-bc-$kind-$rep" "$SERVER_PID" "${bargs[@]}"
    run_wrk "$WORK/wrk-ng-$kind-$rep" "$NGINX_PID" "${nargs[@]}"
    ran=(bc ng)
    if [[ "${FLOOR:-0}" == 1 && $kind != open ]]; then
      fargs=("$closed")
      case $kind in
        closed) fargs+=("$gz") ;;
        revalidate) fargs+=("$gz" "If-None-Match: $fetag") ;;
      esac
      run_wrk "$WORK/wrk-hy-$kind-$rep" "$HY_PID" "$hy${fargs[0]}" "${fargs[@]:1}"
      run_wrk "$WORK/wrk-ax-$kind-$rep" "$AX_PID" "$ax${fargs[0]}" "${fargs[@]:1}"
      run_wrk "$WORK/wrk-st-$kind-$rep" "$ST_PID" "$st${fargs[0]}" "${fargs[@]:1}"
      ran+=(hy ax st)
    fi
    for s in "${ran[@]}"; do
      read -r rps p50 p99 err < <(parse_wrk "$WORK/wrk-$s-$kind-$rep")
      ((err == 0)) || die "$s $kind run $rep: $err errors or non-2xx/3xx responses: $(cat "$WORK/wrk-$s-$kind-$rep")"
      cpu=$(awk '$1 == "cpu_us_per_request" {print $2}' "$WORK/wrk-$s-$kind-$rep")
      client=$(awk '$1 == "client_cpu_percent" {print $2}' "$WORK/wrk-$s-$kind-$rep")
      R[$s-$kind-rps]+="$rps " R[$s-$kind-p50]+="$p50 " R[$s-$kind-p99]+="$p99 " R[$s-$kind-cpu]+="$cpu " R[$s-$kind-client]+="$client "
    done
  done
done

size() { stat -c %s "$WORK/www/$1"; }
echo
echo "### Serving vs nginx ($N IDs per hour; CORES=${CORES:-pinned}: servers on cpu $SERVER_CPU, nginx $NGINX_WORKERS worker(s), wrk -t$WRK_THREADS -c64 -d${SECS}s on cpu $CLIENT_CPU; median of 3 interleaved pairs)"
echo
echo "| request | body bytes | bloomcast req/s | p50 ms | p99 ms | CPU µs/req | nginx req/s | p50 ms | p99 ms | CPU µs/req | bloomcast/nginx req/s | nginx/bloomcast CPU per req |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for kind in "${kinds[@]}"; do
  case $kind in
    closed) label="closed hour, gzip JSON" bytes=$(size closed.json.gz) ;;
    identity) label="closed hour, identity JSON" bytes=$(size closed.json) ;;
    open) label="open hour, gzip JSON" bytes=$(size open.json.gz) ;;
    revalidate) label="304 revalidation (closed hour)" bytes=0 ;;
  esac
  declare -A M=()
  for s in bc ng; do
    for f in rps p50 p99 cpu; do
      # shellcheck disable=SC2086
      M[$s-$f]=$(median ${R[$s-$kind-$f]})
    done
  done
  ratio=$(awk -v a="${M[bc-rps]}" -v b="${M[ng-rps]}" 'BEGIN {printf "%.2f", a / b}')
  cratio=$(awk -v a="${M[ng-cpu]}" -v b="${M[bc-cpu]}" 'BEGIN {printf "%.2f", a / b}')
  printf '| %s | %s | %.0f | %s | %s | %s | %.0f | %s | %s | %s | %s | %s |\n' "$label" "$bytes" \
    "${M[bc-rps]}" "${M[bc-p50]}" "${M[bc-p99]}" "${M[bc-cpu]}" "${M[ng-rps]}" "${M[ng-p50]}" "${M[ng-p99]}" "${M[ng-cpu]}" "$ratio" "$cratio"
done
echo
echo "Runs (req/s): $(for k in "${kinds[@]}"; do printf '%s bloomcast [%s] nginx [%s] load [%s]; ' "$k" "${R[bc-$k-rps]% }" "${R[ng-$k-rps]% }" "${R[load-$k]% }"; done)"
echo
echo "Runs (server CPU µs per request): $(for k in "${kinds[@]}"; do printf '%s bloomcast [%s] nginx [%s]; ' "$k" "${R[bc-$k-cpu]% }" "${R[ng-$k-cpu]% }"; done)"
echo
echo "Runs (wrk's CPU, % of one core over the run): $(for k in "${kinds[@]}"; do printf '%s bloomcast [%s] nginx [%s]; ' "$k" "${R[bc-$k-client]% }" "${R[ng-$k-client]% }"; done)"

if [[ "${FLOOR:-0}" == 1 ]]; then
  echo
  echo "### The floors: the same closed-hour bytes, made once, from hyper alone, hyper + one axum Router, and that Router with the stock layers (examples/hyper_floor.rs), same core, same runs"
  echo
  echo "| request | hyper req/s | CPU µs/req | hyper + Router req/s | CPU µs/req | + stock layers req/s | CPU µs/req | bloomcast req/s | nginx req/s | hyper/nginx | hyper + Router/nginx | + stock layers/nginx | bloomcast/nginx |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for kind in closed identity revalidate; do
    declare -A M=()
    for s in bc ng hy ax st; do
      for f in rps cpu; do
        # shellcheck disable=SC2086
        M[$s-$f]=$(median ${R[$s-$kind-$f]})
      done
    done
    printf '| %s | %.0f | %s | %.0f | %s | %.0f | %s | %.0f | %.0f | %s | %s | %s | %s |\n' "$kind" \
      "${M[hy-rps]}" "${M[hy-cpu]}" "${M[ax-rps]}" "${M[ax-cpu]}" "${M[st-rps]}" "${M[st-cpu]}" "${M[bc-rps]}" "${M[ng-rps]}" \
      "$(awk -v a="${M[hy-rps]}" -v b="${M[ng-rps]}" 'BEGIN {printf "%.2f", a / b}')" \
      "$(awk -v a="${M[ax-rps]}" -v b="${M[ng-rps]}" 'BEGIN {printf "%.2f", a / b}')" \
      "$(awk -v a="${M[st-rps]}" -v b="${M[ng-rps]}" 'BEGIN {printf "%.2f", a / b}')" \
      "$(awk -v a="${M[bc-rps]}" -v b="${M[ng-rps]}" 'BEGIN {printf "%.2f", a / b}')"
  done
  echo
  echo "Runs (req/s): $(for k in closed identity revalidate; do printf '%s hyper [%s] hyper + Router [%s] + stock layers [%s]; ' "$k" "${R[hy-$k-rps]% }" "${R[ax-$k-rps]% }" "${R[st-$k-rps]% }"; done)"
fi
