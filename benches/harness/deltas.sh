#!/usr/bin/env bash
# Open-hour deltas (RFC 9842 dcz): bytes per poll with and without deltas for an hour
# filling to 30,000 and 300,000 IDs, polled every 60 s and 10 s, and the CPU of a delta
# next to a full response (examples/delta_bytes.rs).
set -euo pipefail
source "$(dirname "$0")/common.sh"
echo
echo "### Open-hour deltas (bytes per hour of polls; ratio = with deltas / full gzip)"
echo
(cd "$ROOT" && "$EXAMPLES/delta_bytes" "$@")
