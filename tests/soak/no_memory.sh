#!/usr/bin/env bash
# The soak's accounting with a third cause: rings that cannot grow past
# what was committed when they were made (evs-soak --deny-commit: the
# producer's fallocate() fails with ENOMEM), consumers killed and stopped
# as in every soak. Every event must still be delivered or dropped, and
# the drops must include no_memory.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
T=$(mktemp -d /tmp/evs-soak-nomem.XXXXXX)
trap 'rm -rf "$T"' EXIT
export EVSTREAM_RUNTIME_DIR=$T/run
mkdir -m 700 "$EVSTREAM_RUNTIME_DIR"

timeout -k 5 60 "$ROOT/$BUILD/evs-soak" --streams 2 --seconds 3 --ring 16M --deny-commit \
	>"$T/out" 2>&1
rc=$?
# the "all" row's no_memory, found by the header's column
header=$(grep -m1 '^core ' "$T/out")
all=$(grep -m1 '^all ' "$T/out")
nomem=$(awk '/^core /{for (i = 1; i <= NF; i++) if ($i == "no_memory") c = i}
	/^all /{print $c}' "$T/out")
if [ "$rc" -eq 0 ] && grep -q 'accounting exact (0 errors)' "$T/out" &&
	[[ "$header" == *no_memory* ]] && [ "${nomem:-0}" -gt 0 ] 2>/dev/null; then
	echo "ok: evs-soak --deny-commit: $nomem events dropped as no_memory, accounting exact"
	echo "  $all"
	exit 0
fi
echo "FAIL: evs-soak --deny-commit: exit $rc, no_memory '${nomem:-}':"
sed 's/^/  /' "$T/out"
exit 1
