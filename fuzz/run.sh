#!/usr/bin/env bash
# Runs each fuzz target for a bounded time and prints the executions it
# reached. Usage: run.sh BUILD_FUZZ_DIR SECONDS TARGET...
# Exit status: non-zero when a target found a crash (saved in BUILD_FUZZ_DIR).
set -u
dir=$1 secs=$2; shift 2
rc=0
for t in "$@"; do
  corpus=$dir/corpus-$t
  mkdir -p "$corpus"
  log=$dir/fuzz_$t.log
  "$dir/fuzz_$t" -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 \
    -artifact_prefix="$dir/$t-" -print_final_stats=1 \
    "$corpus" "fuzz/corpus/$t" >"$log" 2>&1
  r=$?
  runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
  echo "fuzz_$t: ${runs:-?} executions in ${secs}s, ${cov:-cov: ?}, exit $r (log $log)"
  if [ $r -ne 0 ]; then
    rc=1
    grep -E 'ERROR|SUMMARY|Assertion|deadly signal' "$log" | head -5
  fi
done
exit $rc
