#!/usr/bin/env bash
# The builds the fallbacks promise, so that none can break unseen. Each is
# built in its own directory (build-variants/NAME; the normal build in
# build/ is untouched) and runs a quick subset of the suites:
#
#   noprobes  CFLAGS+=-DEVS_NO_PROBES: the probes vanish (no USDT note in
#             the library); the unit suites that emit and drop
#   nosdt     no <sys/sdt.h> anywhere on the include path (a copy of the
#             system include tree without it): the same
#   nokafka   KAFKA_OK= (no librdkafka at build time): evs-forward left
#             out and `make` says so, evs-dump --kafka refuses by name,
#             make kafka-demo says so after deps, the Kafka tests skip
#             loudly
#   nobpf     BPF_CLANG=/nonexistent/clang, as on a machine without the
#             eBPF toolchain: evs-drops and the drop-cost bench are left
#             out, `make` says so in one line, test_bpf skips loudly, the
#             tools' options are still checked
#   clang     CC=clang: everything; the unit suites and a dump end to end
#   nohuge    EVSTREAM_HUGEPAGES=off over the normal build, as on a
#             machine without huge pages: the unit suites, whose huge-page
#             variants skip loudly
#   oldefd    CFLAGS+=-DEVS_EFD_NO_NOWAIT_READS: eventfd reads as on a
#             kernel without RWF_NOWAIT for them (before 5.12; wakeup.c
#             puts O_NONBLOCK back and polls first); the suites of the
#             wakeup protocol and of a hostile eventfd
#   nopyext   PY_DEV= (no Python.h, as without python3-dev): the Python
#             package is staged without its extension, `make` says so in
#             one line, `import evstream` takes the pure-Python fallback
#             by itself, the native suite skips loudly and the whole
#             Python suite passes on the fallback
#
# VARIANTS="clang nobpf" picks some. Run by `.ci/run` (step variants).
# Exit status: 0 only when every variant built and passed.
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
V=build-variants
UNIT="test_ring test_badinput test_badargs test_nrt test_dump_npy"
failed=()

say() { echo "variants: $*"; }

# left_out NAME WHAT FILE...: the build's make said "left out: WHAT" once,
# and built none of FILE (relative to the build)
left_out() {
	local name=$1 what=$2 n f
	shift 2
	n=$(grep -cF "left out: $what" "$V/$name/make.log")
	if [ "$n" -ne 1 ]; then
		cat "$V/$name/make.log"
		say "$name: make said what it left out $n times, expected once"
		return 1
	fi
	for f in "$@"; do
		if [ -e "$V/$name/$f" ]; then
			say "$name: $f was built"
			return 1
		fi
	done
}

# build NAME MAKE-ARGS...: make in $V/NAME, the log kept there
build() {
	local name=$1; shift
	mkdir -p "$V/$name"
	if ! make --no-print-directory -j"$JOBS" BUILD="$V/$name" "$@" all tests >"$V/$name/make.log" 2>&1; then
		tail -30 "$V/$name/make.log"
		say "$name: build FAILED (make $*)"
		return 1
	fi
}

# suites BUILD NAME...: the Check suites of that build, and scripts
suites() {
	local b=$1 t list=(); shift
	for t in "$@"; do
		case $t in
		*.sh) list+=("$t") ;;
		*) list+=("$b/tests/$t") ;;
		esac
	done
	BUILD=$b bash scripts/run-tests.sh "${list[@]}"
}

# no_probe_notes LIB: the library carries no USDT probe
no_probe_notes() {
	if readelf -n "$1" | grep -q stapsdt; then
		say "$1 has USDT notes: the variant did not take"
		return 1
	fi
}

v_noprobes() {
	build noprobes CFLAGS+=-DEVS_NO_PROBES || return 1
	no_probe_notes "$V/noprobes/libevstream.so" || return 1
	suites "$V/noprobes" $UNIT
}

# farm SRC DST SKIP: DST links every entry of SRC but SKIP, and sys/
# (a directory of its own, linking every sys/ header but sdt.h and
# sdt-config.h); found=1 when one of those was left out
farm() {
	local e
	mkdir -p "$2"
	for e in "$1"/*; do
		[ "${e##*/}" = sys ] || [ "${e##*/}" = "$3" ] || ln -s "$e" "$2/"
	done
	[ -d "$1/sys" ] || return 0
	mkdir -p "$2/sys"
	for e in "$1"/sys/*; do
		case ${e##*/} in
		sdt.h | sdt-config.h) found=1 ;;
		*) ln -s "$e" "$2/sys/" ;;
		esac
	done
}

v_nosdt() {
	local inc=$V/nosdt/include multi gccinc found=0
	multi=$(gcc -print-multiarch)
	gccinc=$(gcc -print-file-name=include)
	rm -rf "$inc"
	farm /usr/include "$inc" "$multi"
	farm /usr/include/"$multi" "$inc/$multi" ""
	[ "$found" -eq 1 ] || say "nosdt: no <sys/sdt.h> on this machine to hide (the build is the same)"
	local flags="-nostdinc -isystem $gccinc -isystem /usr/local/include -isystem $PWD/$inc/$multi -isystem $PWD/$inc"
	if echo '#include <sys/sdt.h>' | gcc $flags -E - >/dev/null 2>&1; then
		say "nosdt: <sys/sdt.h> is still found with $flags"
		return 1
	fi
	build nosdt "CFLAGS+=$flags" || return 1
	no_probe_notes "$V/nosdt/libevstream.so" || return 1
	suites "$V/nosdt" test_ring test_badinput
}

v_nobpf() {
	build nobpf BPF_CLANG=/nonexistent/clang || return 1
	left_out nobpf 'eBPF drop accounting (missing clang)' evs-drops evs-bench-drops || return 1
	grep 'left out' "$V/nobpf/make.log"
	"$V/nobpf/tests/test_bpf" >"$V/nobpf/test_bpf.log" 2>&1
	if ! grep -q '^SKIP.*eBPF drop accounting not built' "$V/nobpf/test_bpf.log"; then
		cat "$V/nobpf/test_bpf.log"
		say "nobpf: test_bpf did not skip loudly"
		return 1
	fi
	grep '^SKIP' "$V/nobpf/test_bpf.log"
	suites "$V/nobpf" test_bpf test_ring tests/cli_options.sh
}

v_clang() {
	command -v clang >/dev/null || { say "clang: not installed"; return 1; }
	build clang CC=clang || return 1
	suites "$V/clang" $UNIT test_untrusted tests/dump/dtypes.sh
}

v_nohuge() {
	local out
	make --no-print-directory -s -j"$JOBS" tests >/dev/null || return 1
	out=$(mktemp)
	EVSTREAM_HUGEPAGES=off suites build $UNIT test_xproc test_untrusted test_permissions \
		tests/dump/dtypes.sh | tee "$out"
	local rc=${PIPESTATUS[0]}
	if ! grep -q '^SKIP.*EVSTREAM_HUGEPAGES=off' "$out"; then
		say "nohuge: no huge-page variant skipped"
		rc=1
	fi
	rm -f "$out"
	return "$rc"
}

v_oldefd() {
	build oldefd CFLAGS+=-DEVS_EFD_NO_NOWAIT_READS || return 1
	# the flag starts set: initialised data, not bss (not `nm | grep -q`:
	# with pipefail, nm dying of SIGPIPE would fail a match)
	local syms
	syms=$(nm "$V/oldefd/libevstream.so")
	if ! grep -q ' d no_nowait_reads$' <<<"$syms"; then
		say "oldefd: the library does not start with RWF_NOWAIT reads off"
		return 1
	fi
	suites "$V/oldefd" test_untrusted test_readiness test_xproc test_nrt
}

v_nokafka() {
	local b=$V/nokafka n out
	build nokafka KAFKA_OK= || return 1
	left_out nokafka 'Kafka tools (librdkafka-dev missing)' evs-forward || return 1
	out=$("$b/evs-dump" --kafka localhost:1 --topic t 2>&1); n=$?
	if [ "$n" -ne 2 ] || ! grep -q 'built without Kafka' <<<"$out"; then
		say "nokafka: evs-dump --kafka exited $n: $out"
		return 1
	fi
	say "nokafka: $out (exit 2)"
	# after deps, a make that still finds no librdkafka says so, once
	out=$(make --no-print-directory BUILD="$b" KAFKA_OK= kafka-demo 2>&1); n=$?
	if [ "$n" -eq 0 ] || ! grep -q 'librdkafka not found (pkg-config rdkafka) after make deps' <<<"$out"; then
		echo "$out"
		say "nokafka: make kafka-demo exited $n"
		return 1
	fi
	suites "$b" tests/kafka/e2e.sh tests/kafka/corrupt.sh tests/dump/dtypes.sh | tee "$b/suites.log"
	[ "${PIPESTATUS[0]}" -eq 0 ] || return 1
	if [ "$(grep -c '^SKIP: this build has no Kafka tools' "$b/suites.log")" -ne 2 ]; then
		say "nokafka: the Kafka tests did not skip loudly"
		return 1
	fi
}

v_nopyext() {
	local b=$V/nopyext impl
	build nopyext PY_DEV= || return 1
	left_out nopyext 'the Python extension' python/evstream/_native.abi3.so || return 1
	impl=$(env -u EVSTREAM_PY_IMPL PYTHONPATH="$b/python" EVSTREAM_LIBRARY="$b/libevstream.so.1" \
		/usr/bin/python3 -c 'import evstream; print(evstream.implementation)') || return 1
	if [ "$impl" != fallback ]; then
		say "nopyext: import evstream took '$impl', not the fallback"
		return 1
	fi
	say "nopyext: import evstream took the $impl by itself"
	suites "$b" python/tests/native.sh python/tests/fallback.sh | tee "$b/suites.log"
	[ "${PIPESTATUS[0]}" -eq 0 ] || return 1
	if ! grep -q '^SKIP.*native extension is not built' "$b/suites.log"; then
		say "nopyext: the native suite did not skip loudly"
		return 1
	fi
}

for v in ${VARIANTS:-noprobes nosdt nobpf clang nohuge oldefd nopyext nokafka}; do
	t0=$SECONDS
	say "===== $v"
	if declare -F "v_$v" >/dev/null && "v_$v"; then
		say "$v: passed in $((SECONDS - t0)) s"
	else
		failed+=("$v")
		say "$v: FAILED in $((SECONDS - t0)) s"
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	say "FAILED: ${failed[*]}"
	exit 1
fi
say "all passed"
