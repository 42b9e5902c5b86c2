#!/usr/bin/env bash
# WebSub: how long after an hour is sealed its subscriber holds the signed notification,
# across restarts of the hub.
#
#   benches/harness/websub.sh              # ROUNDS=3
#   ROUNDS=5 LEAD=15 benches/harness/websub.sh
#
# A subscriber (a small Python HTTP server on loopback) subscribes to the feed of sealed
# hours at the server's hub (POST /websub, with a secret), answering the verification of
# intent. Each round the server is started (again, on the same data: the subscription is
# in its store) with its clock LEAD seconds before an hour's end (BLOOMCAST_CLOCK_OFFSET_
# SECONDS, an hour later each round; clock_jump_tolerance_seconds raised so the restart's
# hour forward is followed), IDs are ingested, and the hour boundary passes: housekeeping
# seals the hour and the hub POSTs the feed. The subscriber checks X-Hub-Signature (HMAC-
# SHA256 with its secret) and that the feed's newest entry is the hour just sealed, and
# records when it arrived. Prints per round the time from the boundary (the server's
# clock crossing it) to the delivery: WebSub's goal is within 5 s.
set -euo pipefail
source "$(dirname "$0")/common.sh"
ROUNDS="${ROUNDS:-3}"
LEAD="${LEAD:-20}"
ensure_tools python3:python3
make_work
SECRET="websub-bench-secret"

# The subscriber: verifications echoed, deliveries checked and timed (one line each in
# $WORK/deliveries: arrival time, signature ok, newest entry's id).
sub_port=$(free_port)
cat >"$WORK/subscriber.py" <<'PY'
import hashlib, hmac, http.server, re, sys, time, urllib.parse
port, secret, out = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        body = q.get("hub.challenge", [""])[0].encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        at = time.time()
        body = self.rfile.read(int(self.headers["Content-Length"]))
        want = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        ok = hmac.compare_digest(want, self.headers.get("X-Hub-Signature", ""))
        entry = re.search(rb"<entry>\s*<id>([^<]*)</id>", body)
        with open(out, "a") as f:
            f.write(f"{at:.3f} {'signed' if ok else 'BAD-SIGNATURE'} {entry.group(1).decode() if entry else '-'}\n")
        self.send_response(204); self.end_headers()
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
: >"$WORK/deliveries"
python3 "$WORK/subscriber.py" "$sub_port" "$SECRET" "$WORK/deliveries" &
PIDS+=("$!")
wait_http "http://127.0.0.1:$sub_port/cb?hub.challenge=up" || die "the subscriber did not start"

data="$WORK/data"
port=$(free_port)
echo "### WebSub: from an hour's seal to its signed delivery (ROUNDS=$ROUNDS, the server's clock ${LEAD} s before the boundary at each start)"
echo
echo "| round | hub restarted | delivery after the boundary (s) | signature | newest entry |"
echo "|---:|---|---:|---|---|"
for round in $(seq 1 "$ROUNDS"); do
  # The same hour ahead of real time as in earlier rounds, plus an hour per round, LEAD
  # seconds before its end from now.
  offset=$(( 3600 - $(date +%s) % 3600 - LEAD + 3600 * (round - 1) ))
  boundary=$(( $(date +%s) + 3600 - ($(date +%s) + offset) % 3600 ))
  start_bloomcast "$data" "$port" BLOOMCAST_CLOCK_OFFSET_SECONDS="$offset" \
    BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS=86400 BLOOMCAST_WEBSUB_CALLBACK_NETWORKS=127.0.0.0/8
  bc="http://127.0.0.1:$port"
  if ((round == 1)); then
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$bc/websub" \
      --data-urlencode hub.mode=subscribe \
      --data-urlencode "hub.callback=http://127.0.0.1:$sub_port/cb" \
      --data-urlencode "hub.topic=$bc/hours.atom" \
      --data-urlencode "hub.secret=$SECRET")
    [[ $code == 202 ]] || die "subscribing answered $code"
    subscribed=0
    for _ in $(seq 1 100); do
      [[ $(curl -s "$bc/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["websub"]["subscriptions"])') == 1 ]] && subscribed=1 && break
      sleep 0.1
    done
    ((subscribed)) || die "the subscription was not verified: $(grep -i websub "$WORK"/bloomcast-*.log | tail -3)"
  fi
  post_ids "$port" "round$round" 100
  before=$(wc -l <"$WORK/deliveries")
  # Wait for the delivery (at most LEAD + 60 s).
  for _ in $(seq 1 $(( (LEAD + 60) * 10 ))); do
    (( $(wc -l <"$WORK/deliveries") > before )) && break
    sleep 0.1
  done
  line=$(tail -n +$((before + 1)) "$WORK/deliveries" | head -1)
  [[ -n $line ]] || die "round $round: no delivery within $((LEAD + 60)) s of the start"
  read -r at signed entry <<<"$line"
  restarted=$([[ $round == 1 ]] && echo no || echo yes)
  printf '| %s | %s | %s | %s | %s |\n' "$round" "$restarted" \
    "$(awk -v a="$at" -v b="$boundary" 'BEGIN {printf "%.2f", a - b}')" "$signed" "${entry##*:}"
  stop_pid "$SERVER_PID"
done
