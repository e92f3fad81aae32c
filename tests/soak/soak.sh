#!/usr/bin/env bash
# Soak: 8 streams at full rate for a bounded time while consumers are
# stalled, stopped, killed and reconnected at random; exact accounting
# (produced == delivered + dropped) is checked throughout and at the end.
# Usage: tests/soak/soak.sh [SECONDS] [evs-soak options]   (default 60 s)
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-${SOAK_SECONDS:-60}}
shift || true
BUILD=${BUILD:-build}
make --no-print-directory -s BUILD="$BUILD" lib "$BUILD/evs-soak" || exit 1
dir=$(mktemp -d /tmp/evs-soak-XXXXXX)
export EVSTREAM_RUNTIME_DIR=$dir
# a hard bound on top of the tool's own: never leave processes behind
timeout -k 5 $((${secs%.*} + 60)) "$BUILD/evs-soak" --streams 8 --seconds "$secs" "$@"
rc=$?
[ $rc -eq 124 ] || [ $rc -eq 137 ] &&
	echo "soak: FAILED: still running $((${secs%.*} + 60)) s after its start (hung), killed (exit $rc)"
rm -rf "$dir"
exit $rc
