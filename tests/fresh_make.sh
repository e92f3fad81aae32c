#!/usr/bin/env bash
# On a fresh machine `make demo` and `make kafka-demo` run before clang,
# the kernel's BTF tools or librdkafka are installed: the make that was
# started read the fragments (ebpf/ebpf.mk, tools/kafka.mk) when they were
# missing, and its deps step installs them. What such a target builds must
# then be decided by a make that reads the fragments after deps: demo
# builds evs-drops (and mounts bpffs), kafka-demo runs rather than telling
# the user to install librdkafka.
#
# Stand-ins on PATH make it fresh without uninstalling anything:
# dpkg-query says every package is missing; apt-get "installs" by creating
# $t/installed, which turns on VMLINUX_BTF (a link to the kernel's BTF,
# absent before) and pkg-config's answer for rdkafka.
set -euo pipefail
cd "$(dirname "$0")/.."
unset MAKEFLAGS MFLAGS MAKELEVEL
BUILD=${BUILD:-build}
[ -x "$BUILD/evs-drops" ] || { echo "SKIP: $BUILD/evs-drops is not built (no eBPF toolchain or kernel BTF here)"; exit 77; }
[ -x "$BUILD/evs-forward" ] || { echo "SKIP: $BUILD/evs-forward is not built (no librdkafka here)"; exit 77; }
[ -e /sys/kernel/btf/vmlinux ] || { echo "SKIP: no /sys/kernel/btf/vmlinux"; exit 77; }
t=$(mktemp -d /tmp/evs-fresh-XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$t/bin"
. tests/fresh_machine.sh
fresh_machine "$t/bin"
cat >"$t/bin/apt-get" <<EOT
#!/bin/sh
case "\$1" in
  install) : >"$t/installed"; ln -sf /sys/kernel/btf/vmlinux "$t/btf" ;;
esac
exit 0
EOT
real_pc=$(command -v pkg-config)
cat >"$t/bin/pkg-config" <<EOT
#!/bin/sh
case " \$* " in
  *" rdkafka "*) [ -e "$t/installed" ] || exit 1 ;;
esac
exec "$real_pc" "\$@"
EOT
chmod +x "$t/bin"/*
fresh() { # fresh TARGET [VAR=...]: make TARGET on the "fresh" machine; output in $t/out
  rm -f "$t/installed" "$t/btf"
  local rc=0
  PATH="$t/bin:$PATH" VMLINUX_BTF="$t/btf" make --no-print-directory --trace BUILD="$BUILD" "$@" \
    >"$t/out" 2>&1 || rc=$?
  return $rc
}

rc=0; fresh demo DEMO_SECONDS=1 DUMP_DIR="$t/dump" || rc=$?
[ $rc -eq 0 ] || { tail -30 "$t/out"; fail "make demo on a fresh machine exited $rc"; }
[ -e "$t/installed" ] || { tail -30 "$t/out"; fail "make demo did not run the deps step"; }
grep -q "target 'bpffs'" "$t/out" || { tail -30 "$t/out";
  fail "make demo decided before deps that there is no eBPF toolchain: no evs-drops, no bpffs"; }
! grep -q "evs-drops is not built" "$t/out" || fail "the demo ran without evs-drops"
echo "ok: make demo on a fresh machine builds evs-drops and mounts bpffs after deps installed their tools"

rc=0; fresh kafka-demo DEMO_EVENTS=20 DUMP_DIR="$t/kdump" || rc=$?
[ $rc -eq 0 ] || { tail -30 "$t/out"; fail "make kafka-demo on a fresh machine exited $rc"; }
grep -q "kafka-demo: OK" "$t/out" || { tail -30 "$t/out"; fail "make kafka-demo did not run the demo"; }
echo "ok: make kafka-demo on a fresh machine runs once deps installed librdkafka"
