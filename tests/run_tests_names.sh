#!/usr/bin/env bash
# scripts/run-tests.sh takes a test by name as well as by path, as
# `make test-only SUITES=...` passes them: a Check suite's name is its
# binary under $BUILD/tests, another name the end of one path in EVS_TESTS
# (the Makefile's list). A name that is no test, or more than one, ends
# the run before anything ran, with exit 2 and what the tests are.
set -euo pipefail
cd "$(dirname "$0")/.."
t=$(mktemp -d /tmp/evs-names-XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# stand-ins: a built "test_ring" (tests/test_ring.c is real) and scripts
mkdir -p "$t/build/tests" "$t/a" "$t/b"
cat >"$t/build/tests/test_ring" <<'EOT'
#!/bin/sh
echo "100%: Checks: 2, Failures: 0, Errors: 0"
EOT
printf '#!/bin/sh\necho "ok: quick ran"\n' >"$t/a/quick.sh"
printf '#!/bin/sh\necho "ok: twin a"\n' >"$t/a/twin.sh"
printf '#!/bin/sh\necho "ok: twin b"\n' >"$t/b/twin.sh"
chmod +x "$t/build/tests/test_ring" "$t"/a/*.sh "$t"/b/*.sh
list="$t/build/tests/test_ring $t/a/quick.sh $t/a/twin.sh $t/b/twin.sh"
run() { # run NAME...: run-tests.sh's status; stdout in $t/out, stderr in $t/err
  local rc=0
  BUILD="$t/build" EVS_TESTS="$list" bash scripts/run-tests.sh "$@" >"$t/out" 2>"$t/err" || rc=$?
  return $rc
}

run test_ring || fail "a Check suite by name: $(cat "$t/out" "$t/err")"
grep -qx "=== $t/build/tests/test_ring" "$t/out" || fail "test_ring did not run $t/build/tests/test_ring: $(cat "$t/out")"
grep -qx 'tests: 2 passed, 0 failed, 0 skipped' "$t/out" || fail "test_ring: $(tail -n 1 "$t/out")"
echo "ok: a Check suite's name runs \$BUILD/tests/NAME"

for n in quick quick.sh a/quick.sh a/twin b/twin.sh; do
  run "$n" || fail "'$n' did not run: $(cat "$t/out" "$t/err")"
  grep -q '^ok: ' "$t/out" || fail "'$n' ran nothing: $(cat "$t/out")"
done
grep -qx 'ok: twin b' "$t/out" || fail "b/twin.sh ran another twin: $(cat "$t/out")"
echo "ok: a script's name, with or without .sh or more of its path, runs the one test it ends"

rc=0; run test_ring no_such_suite || rc=$?
[ $rc -eq 2 ] || fail "an unknown name: exit $rc, want 2"
grep -q '^===' "$t/out" && fail "an unknown name let the others run: $(cat "$t/out")"
grep -q "no test named 'no_such_suite'" "$t/err" || fail "the unknown name is not said: $(cat "$t/err")"
for known in test_ring test_xproc "$t/a/quick.sh"; do
  grep -qx "  $known" "$t/err" || fail "the tests listed leave out $known: $(cat "$t/err")"
done
echo "ok: an unknown name ends the run before anything ran, saying what the tests are"

rc=0; run twin || rc=$?
[ $rc -eq 2 ] || fail "a name of two tests: exit $rc, want 2"
grep -q "'twin' could be any of $t/a/twin.sh $t/b/twin.sh" "$t/err" || fail "a name of two tests: $(cat "$t/err")"
echo "ok: a name that ends two tests' paths is refused, naming both"

rm "$t/build/tests/test_ring"
rc=0; run test_ring || rc=$?
[ $rc -eq 2 ] || fail "a suite not built: exit $rc, want 2"
grep -q "test_ring is not built (no $t/build/tests/test_ring)" "$t/err" || fail "a suite not built: $(cat "$t/err")"
echo "ok: a Check suite not built is said as such"
