#!/usr/bin/env bash
# Wire size: gzip bytes per ID of each representation of a closed hour at n = 3000,
# 30,000 and 300,000, next to the floor log2(1/p)/8 (examples/wire_size.rs), and the
# compact (ribbon) form at the target fpp and at 0.001, each against its own floor, with
# its build time per key, and its JSON form (.ribbon.json, best gzip as served); then the
# 2008 scenario with client-chosen precision and each client's ribbon query time.
set -euo pipefail
source "$(dirname "$0")/common.sh"
echo
echo "### Wire size (closed hour as served: sized_within at target_fpp, best gzip; ratio = gzip B/ID / floor)"
echo
(cd "$ROOT" && "$EXAMPLES/wire_size" "$@")

# The 2008 scenario with client-chosen precision (examples/cheapest_bytes.rs): bytes per
# day of a poller reading each closed hour in the form the SDK's cheapest_form picks,
# next to today's v1 .bin gzip filters at the target; a wasted fetch at 10 KiB (a feed
# page) and at 300 bytes (a conditional GET answered 304).
for cost in 10240 300; do
  echo
  echo "### 2008 scenario, fetch cost $cost bytes (examples/cheapest_bytes.rs)"
  echo
  (cd "$ROOT" && "$EXAMPLES/cheapest_bytes" --fetch-cost "$cost")
done

# Query time per key of each client's ribbon decoder, absent IDs (the common case), on
# the same bodies: Rust (the SDK), Python (clients/python) and JavaScript (clients/js).
make_work
echo
echo "### Ribbon query time per key, per client"
echo
(cd "$ROOT" && "$EXAMPLES/cheapest_bytes" --write-bodies "$WORK/ribbons" | sed -n '/^| client/,$p')
python3 "$ROOT/benches/harness/ribbon_query.py" "$WORK/ribbons"
if command -v node >/dev/null; then
  node "$ROOT/benches/harness/ribbon_query.mjs" "$WORK/ribbons"
else
  echo "(node not found: no JavaScript figures)"
fi
