#!/usr/bin/env bash
# bloomcast-core as a program that embeds it builds it: with no feature (its tests run),
# and with each feature alone (`cargo hack --each-feature`, by hand: every feature listed
# in its Cargo.toml); then its docs (no broken link) and its public API against the
# recorded public-api.txt. .ci/run
# runs this; the workspace's `cargo test` covers the core with the features the server
# and the SDK turn on.
set -euo pipefail
cd "$(dirname "$0")/../.."
manifest=crates/bloomcast-core/Cargo.toml
features=$(sed -n '/^\[features\]/,/^\[/p' "$manifest" | grep -oE '^[a-z0-9_-]+ =' | cut -d' ' -f1 | grep -vx default)
if [ -z "$features" ]; then
  echo "no features found in $manifest" >&2
  exit 1
fi

echo "== bloomcast-core, no feature: cargo test"
cargo test --locked -p bloomcast-core --no-default-features
for feature in $features; do
  echo "== bloomcast-core, feature $feature alone: cargo check --all-targets"
  cargo check --locked -p bloomcast-core --no-default-features --features "$feature" --all-targets
done

echo "== bloomcast-core's docs, every feature on: cargo doc, warnings refused"
RUSTDOCFLAGS="-D warnings" cargo doc --locked -p bloomcast-core --no-deps --all-features \
  --target-dir target/public-api-json

echo "== bloomcast-core's public API (crates/bloomcast-core/public-api.txt)"
cargo run --locked -q --manifest-path crates/bloomcast-core/public-api/Cargo.toml \
  --target-dir target/public-api-tool
