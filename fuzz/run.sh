#!/usr/bin/env bash
# Runs every fuzz target for N seconds each (default 60) and prints one line per target:
# executions and crashes. Exits non-zero when any target crashed.
#
#   fuzz/run.sh        # 60 s per target
#   fuzz/run.sh 600    # 10 minutes per target
#
# Installs cargo-fuzz if missing. cargo fuzz passes nightly-only flags (sanitizers) to
# rustc: with a nightly toolchain installed it is used, otherwise the default (stable)
# one is told to accept them with RUSTC_BOOTSTRAP=1; FUZZ_TOOLCHAIN=stable forces that. The corpus grows in fuzz/corpus/<target>
# (not committed), seeded from fuzz/seeds/<target>; crashes land in fuzz/artifacts/<target>.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"

if ! command -v cargo-fuzz >/dev/null; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi
# FUZZ_TOOLCHAIN=stable (or any installed toolchain) overrides the choice.
toolchain_name="${FUZZ_TOOLCHAIN:-}"
if [ -z "$toolchain_name" ] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain_name=nightly
fi
toolchain=()
if [ -n "$toolchain_name" ]; then
  toolchain=(+"$toolchain_name")
fi
case "$toolchain_name" in
  nightly*) ;;
  *) export RUSTC_BOOTSTRAP=1 ;;
esac

echo "== building the targets"
cargo "${toolchain[@]}" fuzz build

failed=0
for target in $(cargo "${toolchain[@]}" fuzz list); do
  mkdir -p "corpus/$target" "artifacts/$target"
  seeds=()
  [ -d "seeds/$target" ] && seeds=("seeds/$target")
  log="artifacts/$target/last-run.log"
  before=$(find "artifacts/$target" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) | wc -l)
  # libFuzzer stops at the first crash; its exit status is checked through the artifacts.
  cargo "${toolchain[@]}" fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
    -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1 || true
  after=$(find "artifacts/$target" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) | wc -l)
  crashes=$((after - before))
  execs=$(awk '/stat::number_of_executed_units:/ { n = $2 } END { print n + 0 }' "$log")
  corpus=$(find "corpus/$target" -type f | wc -l)
  printf '%-12s %12s executions in %ss, %d crashes, corpus %d inputs\n' \
    "$target" "$execs" "$seconds" "$crashes" "$corpus"
  if [ "$crashes" -ne 0 ]; then
    failed=1
    echo "   see $log and artifacts/$target/" >&2
  fi
done
exit "$failed"
