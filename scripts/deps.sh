#!/usr/bin/env bash
# Install the Debian 12 packages evstream needs to build, test and demo.
# Idempotent: only packages that are missing are installed; nothing is
# installed when everything is present. Needs root (or sudo) to install.
set -euo pipefail

pkgs=(
  build-essential pkg-config      # compiler, make, .pc lookups
  clang llvm                      # second compiler; BPF target and llvm-strip
  check                           # unit test framework (libcheck)
  libbpf-dev bpftool libelf-dev zlib1g-dev  # CO-RE BPF program, skeleton, loader
  systemtap-sdt-dev               # <sys/sdt.h> USDT probes
  libclang-rt-14-dev              # libFuzzer and sanitizer runtimes for clang
  valgrind linux-perf gdb         # memcheck, callgrind, perf; gdb drives tests/handover_race.sh
  gnuplot-nox                     # benchmark plots
  python3-numpy                   # verifies .npy dumps (/usr/bin/python3)
  bpftrace                        # the documented one-liner on the USDT probe
  cppcheck clang-tidy             # static analysis in CI
  procps util-linux iproute2      # ps, mount, ss used by scripts
  liblttng-ust-dev lttng-tools    # LTTng-UST: the peer in evs-bench
  babeltrace2                     # reads LTTng traces: bench/smoke.sh checks evs-bench's count with it
  python3-dev python3-pytest python3-pip python3-setuptools  # the Python package and its tests
  python3-torch                   # PyTorch hooks and their test
  librdkafka-dev kcat             # evs-forward, evs-dump --kafka; a third-party Kafka client
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: missing packages (${missing[*]}) and not root: run as root or install them" >&2; exit 1; }
  SUDO=sudo
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# A log of a name of its own (mktemp), never a fixed /tmp path another
# user could have planted a link at.
log=$(mktemp "${TMPDIR:-/tmp}/evstream-deps.XXXXXX")
# A fresh machine has no package lists; refresh once when a package is unknown.
if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  $SUDO apt-get update -q >>"$log" 2>&1
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$log" 2>&1 || {
    echo "deps: apt-get install failed; see $log" >&2; tail -20 "$log" >&2; exit 1; }
fi
rm -f "$log"
