#!/usr/bin/env bash
# Filter core: ns per insert / contains next to one SHA-1 digest and fastbloom, from
# `cargo bench --bench filter` (criterion; about 40 s), as one table of the mid estimates.
set -euo pipefail
source "$(dirname "$0")/common.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
log "cargo bench --bench filter"
(cd "$ROOT" && cargo bench --locked --bench filter 2>/dev/null) >"$out"
# criterion prints "n=3000/bloomcast_insert" then "time:   [lo mid hi]", sometimes on one line.
awk '
  /^n=/ { name = $1 }
  /time:/ {
    for (i = 1; i <= NF; i++) if ($i ~ /^\[/) { v = $(i + 2); u = $(i + 3); break }
    if (u == "us" || u == "µs") v *= 1000; else if (u == "ms") v *= 1e6; else if (u == "ps") v /= 1000
    split(name, p, "/"); t[p[1], p[2]] = v; sizes[p[1]] = 1
  }
  END {
    print ""
    print "### Filter core (cargo bench --bench filter; ns per ID, criterion mid estimate; ratio to the SHA-1 digest)"
    print ""
    print "| ns per ID | n = 3000 | ratio | n = 1M | ratio |"
    print "|---|---:|---:|---:|---:|"
    split("sha1_digest bloomcast_insert bloomcast_contains fastbloom_insert fastbloom_contains", ops, " ")
    for (j = 1; j <= 5; j++) {
      o = ops[j]
      printf "| %s | %.1f | %.2f | %.1f | %.2f |\n", o, t["n=3000", o], t["n=3000", o] / t["n=3000", "sha1_digest"], t["n=1M", o], t["n=1M", o] / t["n=1M", "sha1_digest"]
    }
  }' "$out"
