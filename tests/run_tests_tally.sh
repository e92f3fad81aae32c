#!/usr/bin/env bash
# scripts/run-tests.sh's closing tally counts what a passing script skipped
# of itself (its SKIP lines, pytest's SKIPPED [n] lines), lists each with
# its reason, and still counts a whole script that exits 77 once.
set -euo pipefail
cd "$(dirname "$0")/.."
t=$(mktemp -d /tmp/evs-tally-XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$t/parts.sh" <<'EOT'
#!/bin/sh
echo "ok: one part ran"
echo "SKIP plot: gnuplot missing"
echo "demo-check: SKIP the eBPF table: not root"
echo "SKIPPED [2] python/tests/test_torch.py:10: no torch"
echo "a line that mentions SKIPPING in passing is no skip"
EOT
cat >"$t/whole.sh" <<'EOT'
#!/bin/sh
echo "SKIP: nothing to run here"
exit 77
EOT
cat >"$t/fails.sh" <<'EOT'
#!/bin/sh
echo "SKIP one part"
exit 1
EOT
chmod +x "$t"/*.sh

out=$(bash scripts/run-tests.sh "$t/parts.sh" "$t/whole.sh") || fail "a run with nothing failed exited non-zero: $out"
grep -qx 'tests: 1 passed, 0 failed, 5 skipped' <<<"$out" ||
  fail "tally: want 1 passed, 0 failed, 5 skipped (4 parts, 1 whole script): $(tail -n 1 <<<"$out")"
for why in 'gnuplot missing' 'SKIP the eBPF table: not root' 'no torch'; do
  grep -q "^skipped part: $t/parts.sh: .*$why" <<<"$out" || fail "no 'skipped part' line for '$why'"
done
echo "ok: a passing script's skipped parts are counted and listed with their reasons"

if out=$(bash scripts/run-tests.sh "$t/fails.sh"); then
  fail "a failing script did not fail the run"
fi
grep -qx 'tests: 0 passed, 1 failed, 0 skipped' <<<"$out" || fail "a failing script: $(tail -n 1 <<<"$out")"
echo "ok: a failing script counts as failed, its SKIP lines as nothing"
