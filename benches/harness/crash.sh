#!/usr/bin/env bash
# Crash cycles against the release binary: concurrent ingest, kill -9 at a random
# moment, restart on the same data dir, check every acknowledged ID is in its hour's
# filter. Prints cycles, IDs acknowledged and IDs lost; exits non-zero if any was lost.
#
#   benches/harness/crash.sh                 # 20 cycles
#   benches/harness/crash.sh 5 --across-hour # 5 cycles, each straddling an hour boundary
#                                            # (the server's clock is shifted with
#                                            # BLOOMCAST_CLOCK_OFFSET_SECONDS)
#   benches/harness/crash.sh 12 --clock-steps # restarts with the clock stepped back and
#                                            # forward (0, -2 h, +1 h, -1 h, -3 h, +2 h)
set -euo pipefail
cd "$(dirname "$0")/../.."
cycles="${1:-20}"
shift || true

echo "== building the release binary and the crash driver"
cargo build --release --locked --bin bloomcast --example crash_cycles
target/release/examples/crash_cycles --binary target/release/bloomcast --cycles "$cycles" "$@"
