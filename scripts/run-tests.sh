#!/usr/bin/env bash
# Runs test binaries (Check suites or scripts), prints each one's output and
# a closing line "tests: N passed, N failed, N skipped" over all of them.
# A script that passes may have skipped parts of itself, each said on a
# SKIP line ("SKIP ...", "name: SKIP ...", pytest's "SKIPPED [n] ..."):
# those count as skipped too, and are listed again before the closing line.
# Exit status: 0 only when nothing failed; 2 when a test named does not
# exist (then nothing runs).
#
# Each argument is a test's path, or a name as `make test-only SUITES=...`
# takes it: a Check suite's (test_ring: $BUILD/tests/test_ring, BUILD
# defaulting to build), or the end of one path in EVS_TESTS, the Makefile's
# list of every test (cli_options.sh, cli_options, dump/modes).
set -u
[ $# -gt 0 ] || { echo "run-tests: no tests to run" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
# relative to the tree, as make says it; as it is when run from there
case $build in /*) ;; *) [ "$PWD" = "$root" ] || build=$root/$build ;; esac

# the tests there are, for a name that is none of them
known() {
  local s
  for s in "$root"/tests/test_*.c; do
    s=${s##*/}
    echo "  ${s%.c}"
  done
  for s in ${EVS_TESTS:-}; do
    case $s in */tests/test_*) ;; *) echo "  $s" ;; esac
  done
  [ -n "${EVS_TESTS:-}" ] || echo "  (and any test script, by its path)"
}

# resolve NAME: the test's path on stdout; else why not on stderr, status 1
resolve() {
  local n=$1 s found=()
  if [ -f "$n" ]; then
    # ./ so that a file here is run, not looked for on PATH
    [[ $n == */* ]] && echo "$n" || echo "./$n"
    return 0
  fi
  if [[ $n != */* ]] && [ -f "$root/tests/$n.c" ]; then
    [ -f "$build/tests/$n" ] && { echo "$build/tests/$n"; return 0; }
    echo "run-tests: $n is not built (no $build/tests/$n): make tests first" >&2
    return 1
  fi
  for s in ${EVS_TESTS:-}; do
    case $s in "$n" | "$n.sh") echo "$s"; return 0 ;; esac
    case /$s in */"$n" | */"$n.sh") found+=("$s") ;; esac
  done
  if [ ${#found[@]} -eq 1 ]; then
    echo "${found[0]}"
    return 0
  fi
  if [ ${#found[@]} -gt 1 ]; then
    echo "run-tests: '$n' could be any of ${found[*]}: give more of its path" >&2
  else
    echo "run-tests: no test named '$n' (a test's path or name); the tests are:" >&2
    known >&2
  fi
  return 1
}

tests=()
for n in "$@"; do
  t=$(resolve "$n") || exit 2
  tests+=("$t")
done

passed=0 failed=0 skipped=0 bad=() skips=()
for t in "${tests[@]}"; do
  echo "=== $t"
  out=$(mktemp)
  "$t" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  # Check: "100%: Checks: 12, Failures: 0, Errors: 0"
  line=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$out" | tail -1)
  s=$(grep -c '^SKIP' "$out")
  if [ -n "$line" ]; then
    n=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$line")
    f=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$line")
    e=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$line")
    passed=$((passed + n - f - e - s)); failed=$((failed + f + e)); skipped=$((skipped + s))
  elif [ "$rc" -eq 77 ]; then
    skipped=$((skipped + 1))
  elif [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    # parts the script skipped, each with its reason
    while IFS= read -r l; do
      n=1
      [[ $l =~ ^SKIPPED\ \[([0-9]+)\] ]] && n=${BASH_REMATCH[1]}
      skipped=$((skipped + n)); skips+=("$t: $l")
    done < <(grep -E '^SKIPPED \[[0-9]+\]|(^|: )SKIP[: ]' "$out")
  else
    failed=$((failed + 1))
  fi
  [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && bad+=("$t (exit $rc)")
  rm -f "$out"
done
echo
[ ${#skips[@]} -gt 0 ] && printf 'skipped part: %s\n' "${skips[@]}"
[ ${#bad[@]} -gt 0 ] && printf 'FAILED: %s\n' "${bad[@]}"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ $((passed + failed + skipped)) -gt 0 ] || { echo "run-tests: no test ran" >&2; exit 1; }
[ ${#bad[@]} -eq 0 ] && [ "$failed" -eq 0 ]
