#!/usr/bin/env bash
# Runs test binaries (Check suites or scripts), prints each one's output and
# a closing line "tests: N passed, N failed, N skipped" over all of them.
# A script that passes may have skipped parts of itself, each said on a
# SKIP line ("SKIP ...", "name: SKIP ...", pytest's "SKIPPED [n] ..."):
# those count as skipped too, and are listed again before the closing line.
# Exit status: 0 only when nothing failed.
set -u
[ $# -gt 0 ] || { echo "run-tests: no tests to run" >&2; exit 1; }
passed=0 failed=0 skipped=0 bad=() skips=()
for t in "$@"; do
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
