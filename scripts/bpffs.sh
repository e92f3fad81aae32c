#!/usr/bin/env bash
# Mount the BPF filesystem at /sys/fs/bpf when root and it is not mounted,
# so that BPF maps can be pinned (evs-drops, tests/test_bpf). Idempotent;
# without root it only says what is missing.
set -u
dir=/sys/fs/bpf
if [ "$(stat -f -c %T "$dir" 2>/dev/null)" = "bpf_fs" ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "bpffs: $dir is not a bpf filesystem and we are not root; as root run: mount -t bpf bpf $dir" >&2
  exit 0
fi
mkdir -p "$dir" && mount -t bpf bpf "$dir" && echo "bpffs: mounted bpf filesystem at $dir" >&2 \
  || echo "bpffs: could not mount bpf filesystem at $dir (BPF tests will skip)" >&2
exit 0
