#!/usr/bin/env bash
# The tools' number options (tools/cli.h): a bad value is refused before
# anything starts, with exit 2 and a message naming the option, the value
# and what is allowed; good values with suffixes are taken.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build}
B=$ROOT/$BUILD
T=$(mktemp -d /tmp/evs-cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
export EVSTREAM_RUNTIME_DIR=$T/run
mkdir -m 700 "$EVSTREAM_RUNTIME_DIR"
fails=0

# refused TOOL OPTION VALUE EXPECT [ARGS...]: exit 2, the message names
# OPTION and 'VALUE' and says EXPECT (what is allowed).
refused() {
	local tool=$1 opt=$2 val=$3 expect=$4 rc; shift 4
	"$B/$tool" "$@" "$opt" "$val" >"$T/out" 2>"$T/err"; rc=$?
	if [ "$rc" -ne 2 ] || ! grep -qF -- "$tool: $opt '$val' is " "$T/err" ||
	   ! grep -qF -- "allowed is $expect" "$T/err"; then
		echo "FAIL: $tool $opt '$val': exit $rc, expected 2 and a message naming it ($expect):"
		sed 's/^/  /' "$T/err"
		fails=$((fails + 1))
	else
		echo "ok: $tool $opt '$val' refused: $(cat "$T/err")"
	fi
}

for b in evs-dump evs-demo evs-soak evs-example evs-bench; do
	[ -x "$B/$b" ] || { echo "FAIL: $B/$b is not built"; exit 1; }
done

# evs-dump: junk suffixes, overflow, a negative time; nothing is created
refused evs-dump --events 5i "a whole number from 1 up" -o "$T/d"
refused evs-dump --events 10K "a whole number from 1 up" -o "$T/d"
refused evs-dump --bytes 5b "a size in bytes from 1 up (K, M, G" -o "$T/d"
refused evs-dump --bytes 5Kx "a size in bytes" -o "$T/d"
refused evs-dump --bytes 99999999999G "a size in bytes" -o "$T/d"
refused evs-dump --bytes 99999999999999999999 "a size in bytes" -o "$T/d"
refused evs-dump --seconds abc "a number of seconds from 0.001 to" -o "$T/d"
refused evs-dump --wait -1 "a number of seconds from 0 to" -o "$T/d"
refused evs-dump --seconds nan "a number of seconds" -o "$T/d"
# decimal only: strtod took hexadecimal ("0x10" was 16 s)
refused evs-dump --seconds 0x10 "a number of seconds from 0.001 to" -o "$T/d"
refused evs-dump --wait 0x1p3 "a number of seconds from 0 to" -o "$T/d"
refused evs-demo --rate 0x10 "a number of events per second from 0 to" --events 1 --wait-consumers 0 --name "cli-$$"
# a limit is a limit: 0 read as "no limit", which no help text says
refused evs-dump --events 0 "a whole number from 1 up" -o "$T/d"
refused evs-dump --bytes 0 "a size in bytes from 1 up" -o "$T/d"
refused evs-dump --seconds 0 "a number of seconds from 0.001 to" -o "$T/d"
refused evs-demo --events 0 "a whole number from 1 up" --seconds 0.2 --wait-consumers 0 --name "cli-$$"
refused evs-demo --seconds 0 "a number of seconds from 0.001 to" --events 1 --wait-consumers 0 --name "cli-$$"
[ -e "$T/d" ] && { echo "FAIL: evs-dump created its output directory before refusing"; fails=$((fails + 1)); }

# says MESSAGE ARGS...: the command exits 2 with MESSAGE on stderr (for
# the arguments that are not options and have their own wording)
says() {
	local msg=$1 rc; shift
	"$@" >"$T/out" 2>"$T/err"; rc=$?
	if [ "$rc" -eq 2 ] && grep -qF -- "$msg" "$T/err"; then
		echo "ok: ${1##*/} refused: $(head -1 "$T/err")"
	else
		echo "FAIL: $*: exit $rc, expected 2 and '$msg':"; sed 's/^/  /' "$T/err"
		fails=$((fails + 1))
	fi
}

# evs-dump --cores takes digits, commas and ranges only
# (a comma only between two items: "0," as ",0", which alone was refused)
for bad in +1 " 1" 1- 0,,1 "" 0, ,0 0-1,; do
	says "--cores '$bad': use a list like 0,2-3" "$B/evs-dump" --cores "$bad" -o "$T/d" x
done
# ... and a reversed range is said to be one
says "--cores '3-1': the range 3-1 is reversed (write 1-3); use a list like 0,2-3" "$B/evs-dump" --cores 3-1 -o "$T/d" x
# ... and cores 0 to 4095: a core beyond is named with the range
says "--cores '5000': core 5000 is out of range; cores are 0 to 4095" "$B/evs-dump" --cores 5000 -o "$T/d" x
says "--cores '0,2-4096': core 4096 is out of range; cores are 0 to 4095" "$B/evs-dump" --cores 0,2-4096 -o "$T/d" x
says "--cores '99999999999999999999': core 99999999999999999999 is out of range" "$B/evs-dump" --cores 99999999999999999999 -o "$T/d" x
# evs-forward reads --cores by the same rule (tools/common/follow.c), before
# it looks for Kafka; an empty list was taken, and forwarded nothing, exit 0
if [ -x "$B/evs-forward" ]; then
	for bad in "" " 1" 0,; do
		says "evs-forward: --cores '$bad': use a list like 0,2-3" "$B/evs-forward" --cores "$bad" \
			--brokers 127.0.0.1:9 --topic t x
	done
	says "evs-forward: --cores '2-1': the range 2-1 is reversed (write 1-2)" "$B/evs-forward" --cores 2-1 \
		--brokers 127.0.0.1:9 --topic t x
	says "evs-forward: unexpected argument 'extra': it takes one PRODUCER at most" "$B/evs-forward" \
		--brokers 127.0.0.1:9 --topic t x extra
	# --json FILE is opened before anything is forwarded (it failed at the
	# end, after forwarding everything); empty --brokers and --topic are
	# refused at once (it waited its whole timeout for Kafka at '')
	says "evs-forward: --json '$T/nodir/x.json': cannot write it: No such file or directory" \
		"$B/evs-forward" --json "$T/nodir/x.json" --brokers 127.0.0.1:9 --topic t --timeout 0.5 x
	says "evs-forward: --json '$T': cannot write it: Is a directory" \
		"$B/evs-forward" --json "$T" --brokers 127.0.0.1:9 --topic t --timeout 0.5 x
	says "evs-forward: --brokers '' is empty: allowed is host:port" "$B/evs-forward" --brokers '' --topic t x
	says "evs-forward: --topic '' is empty: allowed is a topic name" "$B/evs-forward" --brokers 127.0.0.1:9 --topic '' x
	says "evs-dump: --kafka '' is empty: allowed is host:port" "$B/evs-dump" --kafka '' --topic t -o "$T/k"
	says "evs-dump: --topic '' is empty: allowed is a topic name" "$B/evs-dump" --kafka 127.0.0.1:9 --topic '' -o "$T/k"
	# ... and a file it made for a run whose setup failed is taken back
	"$B/evs-forward" --json "$T/j.json" --brokers 127.0.0.1:9 --topic t --timeout 0.5 x 2>"$T/err"
	if [ -e "$T/j.json" ]; then
		echo "FAIL: evs-forward --json: a run refused at setup left $T/j.json"; fails=$((fails + 1))
	else
		echo "ok: evs-forward --json: a run refused at setup ($(head -1 "$T/err")) leaves no file"
	fi
	says "evs-forward: --cores '4096': core 4096 is out of range; cores are 0 to 4095" "$B/evs-forward" \
		--cores 4096 --brokers 127.0.0.1:9 --topic t x
	says "evs-forward: --seconds '0' is out of range; allowed is a number of seconds from 0.001 to" \
		"$B/evs-forward" --seconds 0 --brokers 127.0.0.1:9 --topic t x
else
	echo "SKIP: evs-forward is not built (no librdkafka): its --cores not checked"
fi
# evs-example's event count
for bad in 5x 0 -3 ""; do
	says "EVENTS '$bad' is not allowed: use 1 to 1000000" "$B/evs-example" produce "cli-$$" "$bad"
done

# Options that do nothing in a combination are refused, naming the option
# and what is allowed (exit 2), not ignored: --convert reads no producer
mkdir -p "$T/raw"
says "evs-dump: unexpected argument 'some-producer': --convert RAWDIR takes no PRODUCER" \
	"$B/evs-dump" --convert "$T/raw" -o "$T/conv" some-producer extra-arg
for o in "--cores:-c 0" "--events:-n 5" "--index-only:-i" "--seconds:-t 1" "--bytes:-b 1K" "--raw:-r" "--wait:-w 1" \
	"--no-print:--no-print"; do
	says "evs-dump: ${o%%:*} is not allowed with --convert RAWDIR, which takes only -o OUTDIR, --progress, --summary and --quiet" \
		"$B/evs-dump" --convert "$T/raw" -o "$T/conv" ${o#*:}
done
says "is not allowed with --convert RAWDIR" "$B/evs-dump" --convert "$T/raw" -o "$T/conv" -c 0 -n 5 -i -t 1
[ -e "$T/conv" ] && { echo "FAIL: evs-dump --convert made its output directory before refusing"; fails=$((fails + 1)); }
# ... a burst needs both its options, --allow-missing a --verify
says "evs-demo: --burst without --burst-at: a burst is --burst-at K --burst N, both" \
	"$B/evs-demo" --burst 5 --events 1 --wait-consumers 0 --name "cli-$$"
says "evs-demo: --burst-at without --burst: a burst is --burst-at K --burst N, both" \
	"$B/evs-demo" --burst-at 5 --events 1 --wait-consumers 0 --name "cli-$$"
says "evs-demo: --allow-missing is allowed only with --verify DIR" \
	"$B/evs-demo" --allow-missing --events 1 --wait-consumers 0 --name "cli-$$"

# evs-demo
refused evs-demo --ring 8X "a size in bytes"
refused evs-demo --cores 0 "a whole number from 1 to 4096"
refused evs-demo --cores 4097 "a whole number from 1 to 4096"
refused evs-demo --rate fast "a number of events per second from 0 to"
refused evs-demo --events 1e3 "a whole number"
refused evs-demo --huge-at -1 "a whole number from 0 to"
refused evs-demo --wait-consumers 2s "a number of seconds"

# evs-soak (nothing is forked before the options are read)
refused evs-soak --streams 0 "a whole number from 1 to 64"
refused evs-soak --streams 65 "a whole number from 1 to 64"
refused evs-soak --seconds 0 "a number of seconds from 0.01 to"
refused evs-soak --ring 1Q "a size in bytes"
refused evs-soak --seed 0x10 "a whole number"
refused evs-soak --ring 1 "a size in bytes from 4096 up"
# ... and a ring the library refuses (beyond half the memory) before the run
says "evs-soak: --ring '1000G' with 8 streams: ring_bytes=1073741824000 is out of range" "$B/evs-soak" --ring 1000G

# Stray arguments are refused, not ignored; --help is an answer, not an error
says "evs-soak: unexpected argument 'extra': it takes options only" "$B/evs-soak" --seconds 1 extra
says "evs-bench: unexpected argument 'extra': it takes options only" "$B/evs-bench" --quick extra
# evs-bench --plot-dir is checked before measuring (it warned after, exit 0)
says "evs-bench: --plot-dir '$T/none': cannot write files in it: No such file or directory" \
	"$B/evs-bench" --quick --only limits --plot-dir "$T/none"
says "evs-bench: --plot-dir '$T/out': cannot write files in it: not a directory" \
	"$B/evs-bench" --quick --only limits --plot-dir "$T/out"
says "evs-demo: unexpected argument 'extra': it takes options only" "$B/evs-demo" -w0 -n1 --name "cli-$$" extra
says "evs-dump: unexpected argument 'b': it takes one PRODUCER at most" "$B/evs-dump" -o "$T/d" a b
[ -x "$B/evs-drops" ] && says "evs-drops: unexpected argument 'extra': it takes options only" "$B/evs-drops" extra
if "$B/evs-soak" --help >"$T/out" 2>"$T/err" && grep -q '^usage: evs-soak' "$T/out" && [ ! -s "$T/err" ]; then
	echo "ok: evs-soak --help: $(head -1 "$T/out")"
else
	echo "FAIL: evs-soak --help: exit $?, stdout:"; sed 's/^/  /' "$T/out" "$T/err"
	fails=$((fails + 1))
fi

# evs-drops, where it is built (it needs the eBPF toolchain)
if [ -x "$B/evs-drops" ]; then
	refused evs-drops --interval 0 "a number of seconds from 0.001 to 86400"
	refused evs-drops --count x "a whole number from 1 to"
	refused evs-drops --pid 12x "a whole number from 1 to"
else
	echo "note: $B/evs-drops is not built (no eBPF toolchain): its options are not checked here"
fi

# A suffixed size is taken: an 8 MiB ring (the library used to get 8)
if "$B/evs-demo" --name "cli-$$" --cores 1 --events 1 --rate 0 --wait-consumers 0 \
	--ring 8M 2>"$T/err" && grep -q "8.0 MiB ring" "$T/err"; then
	echo "ok: evs-demo --ring 8M: $(head -1 "$T/err")"
else
	echo "FAIL: evs-demo --ring 8M:"; sed 's/^/  /' "$T/err"
	fails=$((fails + 1))
fi

[ "$fails" -eq 0 ] || { echo "FAIL: $fails cases"; exit 1; }
