#!/usr/bin/env bash
# Following changes: GET /events (Server-Sent Events) measured from outside, black-box,
# with a client of raw sockets (events_client.py, Python asyncio) pinned to the client
# core and every server on the server core. Prints markdown tables:
#
# 1-3. Freshness: a subscriber holds GET /events open while a publisher POSTs BATCH_IDS
#      new IDs every MIN_GAP..MAX_GAP seconds (uniformly random) for BATCHES batches. For
#      each batch, the time from the POST's 200 to the subscriber holding that version:
#      it got the `version` event whose count covers the batch, fetched the open hour's
#      .bin (If-None-Match of what it held, `Accept-Encoding: dcz, gzip`,
#      `Available-Dictionary` of the newest version the server offered as a dictionary)
#      and got a 200 whose ETag is the event's (or whose Bloom-Count is at least its
#      count), decoded (dcz with zstandard, gzip) and checked against Repr-Digest. Also
#      the event's own arrival. Goal: median <= 1 s, p99 <= 2 s. Three set-ups:
#        single   one node on its embedded store, POST and subscribe on it;
#        cluster  two nodes on PostgreSQL (one schema, dropped after), POST to node A,
#                 subscribe (and fetch) on node B;
#        varnish  the same two nodes behind varnishd with deploy/varnish (backends.sh
#                 and bloomcast.vcl), POST to node A, subscribe and fetch through Varnish.
# 4.   Fan-out: SUBSCRIBERS idle streams on one node (max_connections and
#      events_max_subscribers raised to 20000, cache_bytes to 2 GiB, whose quarter holds
#      their 16 KiB each): the node's VmRSS before and with them
#      (goal <= 16 KB a subscriber); one batch POSTed, the time from its 200 to each
#      subscriber's version event (p50, p99, max over subscribers; goal p99 <= 1 s); and
#      wrk revalidating a closed hour (304s: -t1 -c WRK_CONNS gzip, If-None-Match) for
#      WRK_SECS without the subscribers (before they open and after they close, the
#      median of both) and with them (goal: within 10%).
# 5.   Quiet subscriber: every byte a stream receives after its response head (chunk
#      framing included, TCP/IP headers not) over QUIET_SECS with nothing changing on an
#      idle node, scaled to an hour (goal <= 2 KB an hour), directly and through Varnish;
#      runs beside the other phases on a node of its own.
#
#   BIN=/work/bin/bloomcast-events benches/harness/events.sh
#   BIN=... BATCHES=20 SUBSCRIBERS=1000 QUIET_SECS=40 benches/harness/events.sh   # quick
#   BIN=... PHASES="single fanout" benches/harness/events.sh
#
# Knobs: BATCHES (100), BATCH_IDS (10), MIN_GAP (0.3), MAX_GAP (2.0) seconds,
# SUBSCRIBERS (10000), WRK_SECS (10), WRK_CONNS (32), QUIET_SECS (120), PHASES
# ("single cluster varnish fanout quiet"), PG (postgres://postgres@127.0.0.1:5432/test,
# trust auth), PY (a python3 with zstandard; by default target/venv, made with pip if
# missing; without zstandard the subscriber asks for gzip only and the table says so),
# EXAMPLES (where examples/seed_closed_hour is; without it wrk revalidates the open hour),
# KEEP=1 keeps the scratch directory (server logs). Servers run with RUST_LOG=warn; their
# WARN/ERROR lines are counted at the end. Needs wrk, varnishd, curl, psql, taskset.
set -euo pipefail
source "$(dirname "$0")/common.sh"
BATCHES="${BATCHES:-100}"
BATCH_IDS="${BATCH_IDS:-10}"
MIN_GAP="${MIN_GAP:-0.3}"
MAX_GAP="${MAX_GAP:-2.0}"
SUBSCRIBERS="${SUBSCRIBERS:-10000}"
WRK_SECS="${WRK_SECS:-10}"
WRK_CONNS="${WRK_CONNS:-32}"
QUIET_SECS="${QUIET_SECS:-120}"
PHASES="${PHASES:-single cluster varnish fanout quiet}"
PG="${PG:-postgres://postgres@127.0.0.1:5432/test}"
ensure_tools wrk:wrk varnishd:varnish curl:curl psql:postgresql-client
has() { [[ " $PHASES " == *" $1 "* ]]; }

# Each subscriber is a socket on both sides: raise the open-file limit as far as allowed.
hard=$(ulimit -Hn)
if [[ $hard == unlimited || $hard -ge 65536 ]]; then ulimit -n 65536; else ulimit -n "$hard"; fi
if has fanout && (($(ulimit -n) < SUBSCRIBERS + 1000)); then
  die "ulimit -n is $(ulimit -n) (hard $hard): too few for SUBSCRIBERS=$SUBSCRIBERS"
fi

# A Python with zstandard for dcz deltas.
if [[ -z ${PY:-} ]]; then
  PY="$ROOT/target/venv/bin/python"
  if ! "$PY" -c 'import zstandard' 2>/dev/null; then
    log "making $ROOT/target/venv with zstandard"
    { python3 -m venv "$ROOT/target/venv" && "$ROOT/target/venv/bin/pip" install -q zstandard; } >&2 ||
      { log "no zstandard: the subscriber fetches with gzip only"; PY=python3; }
  fi
fi
CLIENT=(taskset -c "$CLIENT_CPU" "$PY" "$ROOT/benches/harness/events_client.py")
make_work
RES="$WORK/results"
mkdir -p "$RES"
SCHEMA="bench_events_$$"
drop_schema() { psql -X -q "$PG" -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true; }
logs_report() {
  local f
  for f in "$WORK"/bloomcast-*.log; do
    [[ -f $f ]] || continue
    printf '| %s | %s | %s |\n' "$(basename "$f")" "$(grep -c ' ERROR ' "$f" || true)" \
      "$(grep ' WARN ' "$f" | grep -vc 'startup::signing' || true)"
  done
}
trap 'cleanup; drop_schema' EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
log "BIN=$BIN, phases: $PHASES"

# The time a phase needs, in seconds: it must not cross an hour boundary (counts restart).
fresh_secs=$(awk -v b="$BATCHES" -v lo="$MIN_GAP" -v hi="$MAX_GAP" 'BEGIN { printf "%d", b * (lo + hi) / 2 + 75 }')

# ---- 5. quiet: an idle node of its own and a Varnish in front of it, measured meanwhile ----
if has quiet; then
  ensure_hour_lasts $((QUIET_SECS + 30))
  qport=$(free_port)
  start_bloomcast "$WORK/quiet" "$qport"
  qvport=$(free_port)
  mkdir -p "$WORK/varnish-quiet"
  "$ROOT/deploy/varnish/backends.sh" "127.0.0.1:$qport" >"$WORK/varnish-quiet/main.vcl"
  taskset -c "$SERVER_CPU" varnishd -F -j none -n "$WORK/varnish-quiet" -a "127.0.0.1:$qvport" \
    -f "$WORK/varnish-quiet/main.vcl" -p http_gzip_support=off -s malloc,64m >"$WORK/varnish-quiet.log" 2>&1 &
  PIDS+=("$!")
  wait_http "http://127.0.0.1:$qvport/healthz" || die "Varnish did not start: $(tail -5 "$WORK/varnish-quiet.log")"
  log "quiet: one stream on an idle node and one through Varnish for ${QUIET_SECS}s (in the background)"
  "${CLIENT[@]}" quiet --base "http://127.0.0.1:$qport" --seconds "$QUIET_SECS" >"$RES/quiet-direct.json" 2>"$RES/quiet-direct.err" &
  quiet_pids=("$!")
  "${CLIENT[@]}" quiet --base "http://127.0.0.1:$qvport" --seconds "$QUIET_SECS" >"$RES/quiet-varnish.json" 2>"$RES/quiet-varnish.err" &
  quiet_pids+=("$!")
  PIDS+=("${quiet_pids[@]}")
fi

# freshness NAME SUB_URL PUB_URL
freshness() {
  ensure_hour_lasts "$fresh_secs"
  log "freshness $1: $BATCHES batches of $BATCH_IDS IDs, POST $3, subscribe $2"
  "${CLIENT[@]}" freshness --sub "$2" --pub "$3" --token "$TOKEN" --batches "$BATCHES" \
    --batch-ids "$BATCH_IDS" --min-gap "$MIN_GAP" --max-gap "$MAX_GAP" >"$RES/fresh-$1.json" ||
    die "freshness $1 failed"
}

# ---- 1. one node ----
if has single; then
  sport=$(free_port)
  start_bloomcast "$WORK/single" "$sport"
  freshness single "http://127.0.0.1:$sport" "http://127.0.0.1:$sport"
  stop_pid "$SERVER_PID"
fi

# ---- 2, 3. two nodes on PostgreSQL, then Varnish in front of them ----
if has cluster || has varnish; then
  psql -X -q "$PG" -c 'SELECT 1' >/dev/null || die "PostgreSQL at $PG does not answer"
  drop_schema
  aport=$(free_port)
  bport=$(free_port)
  start_bloomcast "$WORK/node-a" "$aport" BLOOMCAST_DATABASE_URL="$PG" BLOOMCAST_DATABASE_SCHEMA="$SCHEMA"
  node_a=$SERVER_PID
  start_bloomcast "$WORK/node-b" "$bport" BLOOMCAST_DATABASE_URL="$PG" BLOOMCAST_DATABASE_SCHEMA="$SCHEMA"
  node_b=$SERVER_PID
  has cluster && freshness cluster "http://127.0.0.1:$bport" "http://127.0.0.1:$aport"
  if has varnish; then
    vport=$(free_port)
    mkdir -p "$WORK/varnish"
    "$ROOT/deploy/varnish/backends.sh" "127.0.0.1:$aport" "127.0.0.1:$bport" >"$WORK/varnish/main.vcl"
    taskset -c "$SERVER_CPU" varnishd -F -j none -n "$WORK/varnish" -a "127.0.0.1:$vport" \
      -f "$WORK/varnish/main.vcl" -p http_gzip_support=off -s malloc,64m >"$WORK/varnish.log" 2>&1 &
    varnish_pid=$!
    PIDS+=("$varnish_pid")
    wait_http "http://127.0.0.1:$vport/healthz" || die "Varnish did not start: $(tail -5 "$WORK/varnish.log")"
    sleep 5 # the probes mark both nodes healthy (window 3, threshold 2, every 2 s)
    freshness varnish "http://127.0.0.1:$vport" "http://127.0.0.1:$aport"
    stop_pid "$varnish_pid"
  fi
  # Nothing of these phases runs beside the fan-out's wrk.
  stop_pid "$node_a"
  stop_pid "$node_b"
fi

# ---- 4. fan-out ----
if has fanout; then
  data="$WORK/fanout"
  closed=""
  if [[ -x "$EXAMPLES/seed_closed_hour" ]]; then
    closed=$("$EXAMPLES/seed_closed_hour" "$data" 3000 2) || closed=""
  fi
  ensure_hour_lasts $((4 * WRK_SECS + 180))
  fport=$(free_port)
  # Streams count against cache_bytes (16 KiB each, in a part of at most a quarter):
  # 2 GiB makes room for 20,000.
  start_bloomcast "$data" "$fport" BLOOMCAST_MAX_CONNECTIONS=20000 BLOOMCAST_EVENTS_MAX_SUBSCRIBERS=20000 \
    BLOOMCAST_CACHE_BYTES=2147483648
  fan_pid=$SERVER_PID
  post_ids "$fport" open 3000
  if [[ -n $closed ]]; then
    target="http://127.0.0.1:$fport$closed"
    what="a closed hour ($closed, 3000 IDs, seeded by examples/seed_closed_hour)"
  else
    target="http://127.0.0.1:$fport$(current_path "$fport")"
    what="the open hour (no examples/seed_closed_hour in $EXAMPLES)"
  fi
  etag=$(gzip_etag "$target")
  [[ -n $etag ]] || die "no ETag from $target"
  [[ $(curl -s -o /dev/null -w '%{http_code}' -H 'Accept-Encoding: gzip' -H "If-None-Match: $etag" "$target") == 304 ]] ||
    die "$target does not answer 304 to its ETag"
  wrk_cmd=(taskset -c "$CLIENT_CPU" wrk -t1 -c"$WRK_CONNS" -d"${WRK_SECS}s" --latency
    -H 'Accept-Encoding: gzip' -H "If-None-Match: $etag" "$target")
  log "fan-out: wrk without subscribers"
  "${wrk_cmd[@]}" >"$RES/wrk-before.txt"
  log "fan-out: $SUBSCRIBERS subscribers, wrk with them, one batch"
  "${CLIENT[@]}" fanout --base "http://127.0.0.1:$fport" --token "$TOKEN" --pid "$fan_pid" \
    --subscribers "$SUBSCRIBERS" --batch-ids "$BATCH_IDS" --wrk-out "$RES/wrk-with.txt" -- "${wrk_cmd[@]}" \
    >"$RES/fanout.json" || die "fan-out failed"
  sleep 2
  log "fan-out: wrk without subscribers again"
  "${wrk_cmd[@]}" >"$RES/wrk-after.txt"
  echo "$what" >"$RES/wrk-target.txt"
  for w in before with after; do parse_wrk "$RES/wrk-$w.txt" >"$RES/wrk-$w.parsed"; done
  stop_pid "$fan_pid"
fi

if has quiet; then
  log "waiting for the quiet streams"
  for p in "${quiet_pids[@]}"; do wait "$p" || true; done
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- tables ----
echo "## GET /events ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "Machine: $(machine). Load average at start $load_start, at end $load_end. BIN=$BIN"
echo
RES="$RES" BATCHES="$BATCHES" BATCH_IDS="$BATCH_IDS" MIN_GAP="$MIN_GAP" MAX_GAP="$MAX_GAP" \
  SUBSCRIBERS="$SUBSCRIBERS" WRK_SECS="$WRK_SECS" WRK_CONNS="$WRK_CONNS" python3 - <<'PY'
import json, os
res = os.environ["RES"]
def load(name):
    p = os.path.join(res, name)
    return json.load(open(p)) if os.path.exists(p) and os.path.getsize(p) else None
def ms(v):
    return "-" if v is None else f"{v:.0f}" if v >= 10 else f"{v:.1f}"
rows = [("single", "one node"), ("cluster", "two nodes: POST A, subscribe B"),
        ("varnish", "Varnish in front of both: POST A, subscribe through Varnish")]
have = [(k, t, load(f"fresh-{k}.json")) for k, t in rows]
have = [x for x in have if x[2]]
if have:
    e = os.environ
    print(f"### Freshness: POST 200 to the subscriber holding the version "
          f"({e['BATCHES']} batches of {e['BATCH_IDS']} new IDs, every {e['MIN_GAP']}-{e['MAX_GAP']} s)\n")
    print("| Set-up | held p50 ms | p90 | p99 | max | missed | event p50 ms | event p99 | fetch p50 ms | fetched as | stale answers | goal (p50 <= 1000, p99 <= 2000) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
    for k, t, d in have:
        h, ev, f = d["held_ms"], d["event_ms"], d["fetch_ms"]
        enc = ", ".join(f"{n} {c}" for c, n in sorted(d["encodings"].items()))
        if not d["dcz"]:
            enc += " (no zstandard: gzip only)"
        ok = h["p50"] is not None and h["p50"] <= 1000 and h["p99"] <= 2000 and d["missed"] == 0
        print(f"| {t} | {ms(h['p50'])} | {ms(h['p90'])} | {ms(h['p99'])} | {ms(h['max'])} | {d['missed']} "
              f"| {ms(ev['p50'])} | {ms(ev['p99'])} | {ms(f['p50'])} | {enc} | {d['stale']} | {'met' if ok else 'NOT met'} |")
    print("\n\"held\": the POST's 200 to the 200 of the .bin fetch the event prompted (decoded, ETag the event's "
          "or a newer count). \"event\": to the version event's arrival. \"fetch\": one .bin request. "
          "\"fetched as\": 200 responses by Content-Encoding. \"stale answers\": fetches "
          "that answered an older version than the event's (a 304 to what the subscriber held, or an older body), after "
          "which it fetched again every 0.25 s until it held the version. \"missed\": batches never held within 45 s "
          "of the last POST.")
    for k, t, d in have:
        if d["errors"]:
            print(f"\n{t}: errors {d['errors']}")
    print()
fan = load("fanout.json")
if fan:
    def wrk(name):
        p = os.path.join(res, f"wrk-{name}.parsed")
        return [float(x) for x in open(p).read().split()] if os.path.exists(p) else None
    b, w, a = wrk("before"), wrk("with"), wrk("after")
    base = (b[0] + a[0]) / 2
    per = fan["per_subscriber_bytes"]
    d = fan["delivery_ms"]
    print(f"### Fan-out: {fan['open']} idle subscribers on one node\n")
    print("| Figure | Value | Goal |")
    print("|---|---:|---|")
    print(f"| subscribers open (refused, connect errors) | {fan['open']} ({fan['refused']}, {fan['connect_errors']}) in {fan['opened_seconds']} s | |")
    print(f"| VmRSS before / with them | {fan['rss_before_kb']} KB / {fan['rss_with_kb']} KB | |")
    print(f"| per subscriber | {per / 1024:.1f} KB | <= 16 KB: {'met' if per <= 16384 else 'NOT met'} |")
    print(f"| one batch: POST 200 to each subscriber's version event, min / p50 / p99 / max | "
          f"{ms(d.get('min'))} / {ms(d['p50'])} / {ms(d['p99'])} / {ms(d['max'])} ms ({fan['delivered']} of {fan['open']} got it) | "
          f"p99 <= 1000 ms: {'met' if d['p99'] is not None and d['p99'] <= 1000 and fan['delivered'] == fan['open'] else 'NOT met'} |")
    target = open(os.path.join(res, "wrk-target.txt")).read().strip()
    ratio = w[0] / base if base else 0
    print(f"| 304 polls/s without subscribers (before, after) | {base:.0f} ({b[0]:.0f}, {a[0]:.0f}); p99 {b[2]:.2f}, {a[2]:.2f} ms; errors {int(b[3] + a[3])} | |")
    print(f"| 304 polls/s with them | {w[0]:.0f}; p99 {w[2]:.2f} ms; errors {int(w[3])} | within 10%: {'met' if ratio >= 0.9 else 'NOT met'} ({(ratio - 1) * 100:+.1f}%) |")
    print(f"| streams the server closed during the run | {fan['closed_by_server']} | |")
    print(f"\nwrk -t1 -c{os.environ['WRK_CONNS']} -d{os.environ['WRK_SECS']}s, gzip, If-None-Match, on {target}; "
          "server on the server core, wrk and the subscribers' client on the client core. "
          "RSS \"with\" is read 3 s after the last subscriber got its opening event.\n")
q = [(n, load(f"quiet-{n}.json")) for n in ("direct", "varnish")]
q = [x for x in q if x[1]]
if q:
    print("### Quiet subscriber: bytes received with nothing changing\n")
    print("| Stream | measured s | reconnects (at s) | head bytes | opening bytes | bytes after the openings | heartbeats | per hour, after the openings | per hour, everything | goal (<= 2048 B/h) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for n, d in q:
        ok = d["all_bytes_per_hour"] <= 2048
        print(f"| {'direct' if n == 'direct' else 'through Varnish'} | {d['seconds']} | {d['reconnects']} {d['ended_at'] or ''} "
              f"| {d['head_bytes']} | {d['opening_bytes']} | {d['steady_bytes']} | {d['heartbeats']} "
              f"| {d['bytes_per_hour']:.0f} B | {d['all_bytes_per_hour']:.0f} B | {'met' if ok else 'NOT met'} |")
    print("\nBytes after the response head, chunk framing included, TCP/IP headers and ACKs not. \"opening\": "
          "`retry:` and the first version event of each connection. A stream that ends is reopened after 2 s "
          "(`retry: 2000`) with Last-Event-ID, as EventSource does; \"everything\" then also counts the heads and "
          "openings of the reconnections (without one it is the bytes after the first opening). The heartbeat alone: `:\\n\\n` (3 bytes) in a chunk "
          "(`3\\r\\n` + 3 + `\\r\\n`) = 8 bytes every 30 s = 960 B an hour.\n")
PY
echo "### Server logs (RUST_LOG=warn)"
echo
echo "| Log | ERROR lines | WARN lines (other than the signing key's at start) |"
echo "|---|---:|---:|"
logs_report
for f in "$WORK"/bloomcast-*.log "$WORK"/varnish*.log; do
  [[ -f $f ]] || continue
  grep -E ' (ERROR|WARN) ' "$f" | grep -v 'startup::signing' | head -3 | sed "s|^|    $(basename "$f"): |" >&2 || true
done
