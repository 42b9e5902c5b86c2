#!/usr/bin/env bash
# The performance harness, in one command (not run by CI):
#
#   benches/harness/run.sh                       # everything, full durations (~15 min)
#   benches/harness/run.sh serving wire          # only some sections
#   SECS=2 benches/harness/run.sh                # a smoke run with short durations
#
# Builds in release mode, installs wrk and nginx from Debian's packages if missing, then
# runs the sections and prints their tables: serving (vs nginx), callgrind (instructions
# per request, vs nginx), ingest (embedded store),
# cluster (PostgreSQL, 1 and 3 nodes), wire size, open-hour deltas, filter core, load
# (256 connections), cache (polls through Varnish), mirror (a static mirror of 720 hours).
# SECS shortens every timed run (load included); each section is also a script of its own.
# Results and how to read them: docs/BENCHMARKS.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/common.sh"
sections=("$@")
[[ ${#sections[@]} -gt 0 ]] || sections=(serving callgrind ingest cluster wire deltas filter load cache mirror)

ensure_tools wrk:wrk nginx:nginx-light
build
echo "# bloomcast performance harness"
echo
echo "- Machine: $(machine)"
echo "- Date: $(date -u +%Y-%m-%dT%H:%MZ)"
echo "- Commit: $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD || echo ' (modified)')"
echo "- Load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for section in "${sections[@]}"; do
  case $section in
    serving | callgrind | ingest | cluster | wire | deltas | filter | load | cache | mirror) "$here/$section.sh" ;;
    *) die "unknown section $section (serving, callgrind, ingest, cluster, wire, deltas, filter, load, cache, mirror)" ;;
  esac
done
echo
echo "- Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
