#!/usr/bin/env bash
# The static mirror (`bloomcast mirror`): a store of HOURS past hours of HOUR_IDS distinct
# IDs each (default 720 x 3,000, a month at the default capacity), mirrored from the
# server into an empty directory, then once more with nothing new, then with one new hour.
#
#   benches/harness/mirror.sh                       # 720 x 3,000 IDs
#   HOURS=48 benches/harness/mirror.sh              # a quicker run
#   BIN=/path/to/other/bloomcast benches/harness/mirror.sh   # measure another build
#
# Prints:
# - the wall time of the first pass (every hour in every form, identity and gzip, each
#   checked against its Repr-Digest and the chain, verified with --pubkey), of a pass
#   with nothing new, and of a pass that writes one hour (the newest hour's files are
#   removed first: the pass lists the whole chain and writes that hour alone);
# - the bytes on disk per hour per form: the mean file size, and the mean allocated on
#   the file system (4 KiB blocks, `du`'s figure).
# The past hours are seeded through the store API (examples/seed_closed_hour.rs), oldest
# first, so the server's startup seals them. The server runs pinned to core 0, the
# mirror to core 1.
set -euo pipefail
source "$(dirname "$0")/common.sh"
HOURS="${HOURS:-720}"
HOUR_IDS="${HOUR_IDS:-3000}"
[ -n "${NO_BUILD:-}" ] || build
make_work

data="$WORK/data"
log "seeding $HOURS past hours of $HOUR_IDS IDs"
for ago in $(seq "$HOURS" -1 1); do
  "$EXAMPLES/seed_closed_hour" "$data" "$HOUR_IDS" "$ago" "h$ago" >/dev/null
done
port=$(free_port)
base="http://127.0.0.1:$port"
# Retention past the oldest seeded hour, so every one is served.
(cd "$ROOT" && exec env RUST_LOG=warn BLOOMCAST_LISTEN="127.0.0.1:$port" \
    BLOOMCAST_DATA_DIR="$data" BLOOMCAST_INGEST_TOKENS="$TOKEN" \
    BLOOMCAST_RETENTION_HOURS=$((HOURS + 24)) \
    taskset -c "$SERVER_CPU" "$BIN" serve) 2>>"$WORK/bloomcast-$port.log" &
PIDS+=("$!")
# Until /healthz is 200: the startup housekeeping has sealed the hours.
for _ in $(seq 1 2400); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/healthz")" = 200 ] && break
  sleep 0.5
done
pubkey=$(curl -sf "$base/.well-known/bloomcast.json" | sed -n 's/.*"public_key":"\([0-9a-f]*\)".*/\1/p')
[ -n "$pubkey" ] || die "the server publishes no public key"

mirror="$WORK/mirror"
pass() { # label: one timed pass, its summary line and wall seconds
  local start end line
  start=$(date +%s.%N)
  line=$(taskset -c "$CLIENT_CPU" "$BIN" mirror "$mirror" --url "$base" --pubkey "$pubkey")
  end=$(date +%s.%N)
  printf '| %s | %.2f | %s |\n' "$1" "$(echo "$end - $start" | bc)" "$line"
}

echo "## Static mirror: $HOURS hours x $HOUR_IDS IDs ($(nproc) cores; $("$BIN" --version))"
echo
echo "| pass | wall s | summary |"
echo "|---|---:|---|"
pass "first (empty directory)"
pass "again, nothing new"
newest=$(sed -n 's/.*"current":{[^}]*"url":"\([^"]*\)".*/\1/p' "$mirror/index.json")
[ -n "$newest" ] || die "the mirror's index names no current hour"
rm -f "$mirror$newest" "$mirror$newest".* "$mirror/chain$newest"
pass "one new hour"

echo
echo "| form | files | bytes per hour (file size) | bytes per hour (on disk) |"
echo "|---|---:|---:|---:|"
# Every hour file's size and allocated bytes, by form (the suffix after HH).
find "$mirror" -type f -regextype posix-extended -regex '.*/[0-9]{4}/[0-9]{2}/[0-9]{2}/[0-9]{2}(\..*)?' \
    -not -path "$mirror/chain/*" -printf '%s %b %f\n' |
  awk '{ form = $3; sub(/^[0-9][0-9]/, "", form); if (form == "") form = "(plain path)";
         n[form]++; size[form] += $1; disk[form] += $2 * 512 }
       END { for (f in n) printf "| %s | %d | %.0f | %.0f |\n", f, n[f], size[f] / n[f], disk[f] / n[f] }' |
  sort
find "$mirror/chain" -type f -printf '%s %b\n' |
  awk '{ n++; size += $1; disk += $2 * 512 }
       END { printf "| chain page | %d | %.0f | %.0f |\n", n, size / n, disk / n }'
total=$(du -sb --exclude=.partial "$mirror" | cut -f1)
disk=$(du -s -B1 "$mirror" | cut -f1)
echo
echo "mirror: $total bytes in files, $disk on disk ($((disk / HOURS)) per hour)"
