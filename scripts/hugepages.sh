#!/usr/bin/env bash
# Reserve a few 2 MiB huge pages for evstream's tests and demo when running
# as root and fewer than EVS_WANT_HUGEPAGES are free. Never fails the build:
# without huge pages evstream uses normal pages and the huge-page tests skip
# with the reason.
want=${EVS_WANT_HUGEPAGES:-64}
f=/proc/sys/vm/nr_hugepages
free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo 2>/dev/null)
total=$(cat $f 2>/dev/null || echo 0)
[ -n "$free" ] || { echo "hugepages: kernel has no hugetlb support; using normal pages" >&2; exit 0; }
[ "$free" -ge "$want" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "hugepages: only $free free and not root; huge-page tests will skip" >&2
  exit 0
fi
echo $((total + want - free)) > $f 2>/dev/null
now=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
echo "hugepages: reserved $((now - free)) more 2 MiB pages ($now free)" >&2
exit 0
