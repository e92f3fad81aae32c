#!/usr/bin/env bash
# Runs the test suites under a sanitizer or checker, each build in its own
# directory so the normal build is untouched:
#
#   scripts/sanitize.sh asan      [SUITE...]  ASan + UBSan (build-asan)
#   scripts/sanitize.sh tsan      [SUITE...]  TSan (build-tsan)
#   scripts/sanitize.sh valgrind  [SUITE...]  memcheck over the normal build
#   scripts/sanitize.sh static                cppcheck + clang-tidy on transport/ and runtime/
#
# SUITE is a suite name (test_ring) or a path; without any, each mode runs
# its default list below, and asan, tsan and valgrind then also run the
# Python suite (python/tests) over the same build: the extension and libevstream
# are this project's C too. Heavy suites get smaller counts through the
# environment (EVS_STRESS_EVENTS; EVS_CRASHLOOP_ITERS under TSan) and are
# left out of valgrind. Exit status: non-zero when anything failed or was reported.
set -uo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
shift || true
named=$#   # suites named: the C suites alone
JOBS=${JOBS:-2}
PY=${PYTHON:-/usr/bin/python3}

# Suites present in this tree.
all_suites() { ls tests/test_*.c 2>/dev/null | sed -e 's|tests/||' -e 's|\.c$||'; }
pick() { # pick BUILD NAME... -> picked=(paths); an unknown name ends the run
  local b=$1 s; shift
  picked=()
  for s in "$@"; do
    s=${s##*/}
    if [ -f "tests/$s.c" ] || [ -f "$b/tests/$s" ]; then
      picked+=("$b/tests/$s")
    else
      echo "sanitize: no suite named '$s' (no tests/$s.c)" >&2
      exit 2
    fi
  done
}
except() { # except NAME... : all suites but those
  local skip=" $* "
  for s in $(all_suites); do [[ $skip == *" $s "* ]] || echo "$s"; done
}

build() { # build DIR CC CFLAGS
  make --no-print-directory -s -j"$JOBS" BUILD="$1" CC="$2" CFLAGS="$3" LDFLAGS="$3" tests >/dev/null
}

# python_suite IMPL [ENV...]: python/tests/run.sh under env, within
# PY_SUITE_LIMIT seconds (default 1800); 0 when it passed or skipped
# (run.sh says why in a SKIP line: no pytest, NumPy or extension), else 1
python_suite() {
  local impl=$1 limit=${PY_SUITE_LIMIT:-1800} r
  shift
  echo "== python/tests, $impl implementation"
  timeout -k 10 "$limit" env "$@" bash python/tests/run.sh "$impl"
  r=$?
  [ $r -eq 124 ] || [ $r -eq 137 ] && echo "python/tests ($impl) did not finish within $limit s"
  [ $r -eq 0 ] || [ $r -eq 77 ]
}

# python_sanitized DIR FLAGS RUNTIME "IMPL..." [ENV...]: the Python suite
# over the extension and libevstream of a sanitizer's build DIR. Debian's
# CPython is not built with a sanitizer, so the runtime (libasan.so,
# libtsan.so) comes first by LD_PRELOAD, with libstdc++, whose __cxa_throw
# the runtime intercepts and must find when torch throws. --capture=sys: a
# report written to fd 2 by a process about to abort reaches the log, not
# pytest's capture file.
python_sanitized() {
  local dir=$1 flags=$2 runtime=$3 impls=$4 impl rc=0
  shift 4
  if [ "${SAN_CC:-gcc}" != gcc ]; then
    echo "SKIP python/tests over $dir: preloading the runtime is set up for gcc's $runtime only"
    return 0
  fi
  make --no-print-directory -s -j"$JOBS" BUILD="$dir" CC=gcc CFLAGS="$flags" LDFLAGS="$flags" \
    python "$dir/evs-dump" "$dir/evs-demo" >/dev/null || return 1
  for impl in $impls; do
    python_suite "$impl" BUILD="$dir" PYTEST_ADDOPTS=--capture=sys \
      LD_PRELOAD="$(gcc -print-file-name="$runtime") $(gcc -print-file-name=libstdc++.so)" "$@" || rc=1
  done
  return $rc
}

case $mode in
asan)
  flags="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  suites=("$@"); [ ${#suites[@]} -gt 0 ] || suites=($(all_suites))
  pick build-asan "${suites[@]}"
  build build-asan "${SAN_CC:-gcc}" "$flags" || exit 1
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:halt_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  export EVS_STRESS_EVENTS=${EVS_STRESS_EVENTS:-1000000}
  bash scripts/run-tests.sh "${picked[@]}"
  rc=$?
  [ "$named" -eq 0 ] || exit $rc
  # The Python suite, both implementations: the extension, and
  # libevstream through ctypes. No leak check: the interpreter keeps what
  # it allocated when it exits.
  python_sanitized build-asan "$flags" libasan.so "native fallback" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1 || rc=1
  exit $rc
  ;;
tsan)
  # the suites that run producer and consumer on different threads
  # -Wno-tsan: TSan does not model atomic_thread_fence() (GCC says so once
  # the fence is inlined into a caller); the fences are there for the
  # wakeup protocol, which the suites check under every other build
  flags="-O1 -g -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan"
  suites=("$@"); [ ${#suites[@]} -gt 0 ] || suites=($(except test_permissions))
  pick build-tsan "${suites[@]}"
  build build-tsan "${SAN_CC:-gcc}" "$flags" || exit 1
  # scripts/tsan.supp: what TSan's model reports that is no race, each said why
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp}
  export EVS_STRESS_EVENTS=${EVS_STRESS_EVENTS:-1000000}
  export EVS_CRASHLOOP_ITERS=${EVS_CRASHLOOP_ITERS:-50}
  bash scripts/run-tests.sh "${picked[@]}"
  rc=$?
  [ "$named" -eq 0 ] || exit $rc
  # The native Python suite: subscriptions read a stream on a thread of
  # their own. The GIL is a pthread mutex and condition, which TSan sees,
  # so what the extension does under it is ordered.
  python_sanitized build-tsan "$flags" libtsan.so native || rc=1
  exit $rc
  ;;
valgrind)
  # memcheck over the unit suites. Left out: the 10M-event stress and the
  # kill loops (hundreds of forks; both run under ASan), and the BPF suite
  # (its uprobe turns the probed instruction into int3, which valgrind's
  # translated code cannot take).
  suites=("$@"); [ ${#suites[@]} -gt 0 ] || suites=($(except test_stress test_crashloop test_bpf))
  pick build "${suites[@]}"
  make --no-print-directory -s -j"$JOBS" tests >/dev/null || exit 1
  export EVS_STRESS_EVENTS=${EVS_STRESS_EVENTS:-100000}
  # the tests run in the suite's own process (CK_FORK=no) so that memcheck
  # watches them. Memory errors fail any process, also a forked peer that
  # was SIGKILLed before it could print its ERROR SUMMARY: each error report
  # line counts. Leaks count only in the test process: the peer processes
  # the tests fork _exit holding what their parent allocated.
  # CK_FORK=no also turns off Check's per-test timeouts: timeout(1) bounds
  # each suite instead (and kills its process group: forked peers too).
  export CK_FORK=no
  limit=${EVS_VALGRIND_TIMEOUT:-900}
  # --fair-sched=yes: valgrind runs one thread at a time, and its default
  # lock lets a thread that spins (a producer retrying a full ring) take it
  # back again and again, so that a consumer woken from poll() never runs:
  # test_catchup hung for its whole limit that way on an Intel VM.
  errors='ERROR SUMMARY: [1-9]|^==[0-9]+== (Invalid |Conditional jump'
  errors+='|Syscall param|Mismatched free|Use of uninitialised|Source and destination overlap'
  errors+='|Argument .* of function .* has a fishy)'
  wrap=$(mktemp -d)
  for t in "${picked[@]}"; do
    cat >"$wrap/${t##*/}" <<EOT
#!/bin/bash
logs=\$(mktemp -d)
# in the background: its pid names the test process's parent in the logs
timeout -k 10 $limit valgrind --fair-sched=yes --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=none \\
  --show-leak-kinds=definite \\
  --log-file=\$logs/%p.log "$PWD/$t" "\$@" &
top=\$!
wait \$top
rc=\$?
[ \$rc -eq 124 ] || [ \$rc -eq 137 ] && echo "valgrind: ${t##*/} did not finish within $limit s"
for l in \$logs/*.log; do
  if grep -qE '$errors' \$l; then
    echo "valgrind: errors in \${l##*/}"; cat \$l; [ \$rc -ne 0 ] || rc=99
  fi
  if grep -q "Parent PID: \$top\$" \$l && grep -qE 'definitely lost: [1-9]' \$l; then
    echo "valgrind: definite leak in the test process"; cat \$l; rc=98
  fi
done
rm -rf \$logs
exit \$rc
EOT
    chmod +x "$wrap/${t##*/}"
  done
  bash scripts/run-tests.sh "$wrap"/*
  rc=$?
  rm -rf "$wrap"
  [ "$named" -eq 0 ] || exit $rc
  # The native Python suite under memcheck, the interpreter wrapped: every
  # Python process the suite starts through it is watched, and a memory
  # error in any fails the run. PYTHONMALLOC=malloc: memcheck sees each
  # object. python/tests/valgrind.supp: reports in glibc's loader and in
  # torch's libcpuinfo. No leak check: the interpreter's.
  pyw=$(mktemp -d)
  mkdir "$pyw/logs"
  cat >"$pyw/python3" <<EOT
#!/bin/bash
exec valgrind --fair-sched=yes --suppressions=$PWD/python/tests/valgrind.supp \\
  --log-file=$pyw/logs/%p.log $PY "\$@"
EOT
  chmod +x "$pyw/python3"
  python_suite native PYTHON="$pyw/python3" PYTHONMALLOC=malloc || rc=1
  for l in "$pyw"/logs/*.log; do
    [ -e "$l" ] || continue
    if grep -qE "$errors" "$l"; then
      echo "valgrind: errors in a Python process (${l##*/})"; cat "$l"; rc=99
    fi
  done
  rm -rf "$pyw"
  exit $rc
  ;;
static)
  rc=0
  echo "== cppcheck transport/ runtime/"
  cppcheck --quiet --enable=warning,performance,portability --std=c11 -D_GNU_SOURCE \
    -Iinclude -Itransport -Iruntime --error-exitcode=1 --inline-suppr transport/ runtime/ || rc=1
  echo "== clang-tidy transport/ runtime/"
  # not used: easily-swappable-parameters (style), implicit widening of
  # constant page products, and the C11 Annex K "_s" advice
  checks='-*,clang-analyzer-*,bugprone-*,-bugprone-easily-swappable-parameters'
  checks+=',-bugprone-implicit-widening-of-multiplication-result'
  checks+=',-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling'
  out=$(clang-tidy --quiet -checks="$checks" --warnings-as-errors='*' transport/*.c runtime/*.c -- \
    -std=gnu11 -D_GNU_SOURCE -Iinclude -Itransport -Iruntime 2>&1) || rc=1
  grep -vE '^[0-9]+ warnings? generated' <<<"$out"
  [ $rc -eq 0 ] && echo "static: clean"
  exit $rc
  ;;
*)
  echo "usage: $0 asan|tsan|valgrind [SUITE...] | static" >&2
  exit 2
  ;;
esac
