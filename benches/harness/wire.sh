#!/usr/bin/env bash
# Wire size: gzip bytes per ID of each representation of a closed hour at n = 3000,
# 30,000 and 300,000, next to the floor log2(1/p)/8 (examples/wire_size.rs), and the
# compact (ribbon) form at the target fpp and at 0.001, each against its own floor, with
# its build time per key, and its JSON form (.ribbon.json, best gzip as served).
set -euo pipefail
source "$(dirname "$0")/common.sh"
echo
echo "### Wire size (closed hour as served: sized_within at target_fpp, best gzip; ratio = gzip B/ID / floor)"
echo
(cd "$ROOT" && "$EXAMPLES/wire_size" "$@")
