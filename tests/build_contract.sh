#!/usr/bin/env bash
# The library's build contract: both compilers build it with -Werror, and
# flags given to make add to the optimisation rather than replace it; the
# shared object has soname libevstream.so.1 and exports only the API;
# `make install` lays out headers, libraries and evstream.pc so that a
# program, in C or in C++, builds against the installed tree with
# pkg-config alone.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d /tmp/evs-build-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for cc in gcc clang; do
  command -v $cc >/dev/null || fail "$cc not installed"
  make -s BUILD="$tmp/$cc" CC=$cc lib >"$tmp/$cc.log" 2>&1 || { cat "$tmp/$cc.log"; fail "$cc build"; }
  echo "ok: $cc builds the library with -Wall -Wextra -Werror"
done

# flags added on the command line add to the build's: the optimisation
# (OPT) stays, for the library and the programs alike
for obj in transport/drop.o tools/evs-dump.o; do
  for flags in CFLAGS+=-DEVS_CONTRACT_X CFLAGS=-DEVS_CONTRACT_X; do
    cmd=$(make -n -B BUILD="$tmp/opt" "$flags" "$tmp/opt/$obj" | grep -- " -c ")
    grep -q -- ' -O2 ' <<<"$cmd" && grep -q -- '-DEVS_CONTRACT_X' <<<"$cmd" ||
      fail "make $flags: $obj is compiled without -O2 or without the flag: $cmd"
  done
done
echo "ok: make CFLAGS+=-DX (and CFLAGS=-DX) keeps -O2"

so="$tmp/gcc/libevstream.so.1.0.0"
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libevstream.so.1 ] || fail "soname is '$soname'"
echo "ok: soname $soname"

exported=$(nm -D --defined-only "$so" | awk '$2 ~ /[TDBR]/ {print $3}' | sed 's/@.*//' | sort -u)
stray=$(grep -vE '^(evs_|nrt_debug_client_|EVSTREAM_)' <<<"$exported" || true)
[ -z "$stray" ] || fail "symbols exported beyond the API: $stray"
n=$(grep -c . <<<"$exported")
mapped=$(grep -cE '^\s+(evs_|nrt_)[a-z_]+;' transport/libevstream.map)
[ "$n" -eq "$mapped" ] || fail "exported $n functions, the version script lists $mapped"
# not `nm | grep -q`: grep quits at the first match, nm dies of SIGPIPE on
# its next write, and pipefail turns a match into a failure
dynsyms=$(nm -D "$so")
grep -q 'evs_producer__new@@EVSTREAM_1.0' <<<"$dynsyms" || fail "symbols are not versioned EVSTREAM_1.0"
echo "ok: exports exactly the $mapped API functions, versioned EVSTREAM_1.0"

make -s BUILD="$tmp/gcc" install PREFIX=/opt/evstream DESTDIR="$tmp/root" >/dev/null
for f in include/evstream/evstream.h include/nrt/ndebug_stream.h include/nrt/nrt_status.h \
         lib/libevstream.so.1.0.0 lib/libevstream.so.1 lib/libevstream.so \
         lib/libevstream.a lib/pkgconfig/evstream.pc; do
  [ -e "$tmp/root/opt/evstream/$f" ] || fail "make install did not install /opt/evstream/$f"
done
echo "ok: make install PREFIX=/opt/evstream DESTDIR=... installs headers, libraries, evstream.pc"

# the installed tools use the installed library, also once the build is gone
inst="$tmp/root/opt/evstream"
[ -x "$inst/bin/evs-dump" ] || fail "make install did not install bin/evs-dump"
lib=$(ldd "$inst/bin/evs-dump" | awk '/libevstream/ {print $3}')
[ "$lib" = "$inst/bin/../lib/libevstream.so.1" ] || fail "installed evs-dump loads '$lib'"
mv "$tmp/gcc" "$tmp/gcc.away"
"$inst/bin/evs-dump" --help >/dev/null || fail "installed evs-dump does not run without the build tree"
mv "$tmp/gcc.away" "$tmp/gcc"
make -s BUILD="$tmp/gcc" uninstall PREFIX=/opt/evstream DESTDIR="$tmp/root" >/dev/null
left=$(find "$tmp/root" -type f)
[ -z "$left" ] || fail "make uninstall left: $left"
make -s BUILD="$tmp/gcc" install PREFIX=/opt/evstream DESTDIR="$tmp/root" >/dev/null
echo "ok: installed tools load the installed library, and run without the build tree; uninstall removes all"

cat >"$tmp/app.c" <<'C'
#include <evstream/evstream.h>
#include <nrt/ndebug_stream.h>
#include <stdio.h>
int main(void)
{
	struct evs_producer *p = evs_producer__new(NULL, 1, NULL);
	int fd;
	NRT_STATUS s = nrt_debug_client_connect(0, &fd);
	int ok = p && s == NRT_SUCCESS && evs_producer__emit(p, 0, 1, "hi", 2) == 0;
	nrt_debug_client_connect_close(fd);
	evs_producer__free(p);
	puts(ok ? "app ok" : "app failed");
	return !ok;
}
C
export PKG_CONFIG_SYSROOT_DIR="$tmp/root" PKG_CONFIG_LIBDIR="$tmp/root/opt/evstream/lib/pkgconfig"
# shellcheck disable=SC2046
gcc -Wall -Werror "$tmp/app.c" -o "$tmp/app" $(pkg-config --cflags --libs evstream) \
  -Wl,-rpath,"$tmp/root/opt/evstream/lib"
out=$(EVSTREAM_HUGEPAGES=off "$tmp/app") && grep -q 'app ok' <<<"$out" || fail "program built against the installed tree"
gcc -Wall -Werror "$tmp/app.c" -o "$tmp/app-static" $(pkg-config --cflags evstream) \
  "$tmp/root/opt/evstream/lib/libevstream.a" -lpthread
out=$(EVSTREAM_HUGEPAGES=off "$tmp/app-static") && grep -q 'app ok' <<<"$out" || fail "static link"
echo "ok: a program builds and runs against the installed tree (shared and static)"

# runtimes are often C++: every installed header compiles as C++ with
# -Wall -Wextra -Werror under both compilers, EVS_OPTS included, and a
# program using the native and the debug-stream API runs
cat >"$tmp/app.cpp" <<'CXX'
#include <evstream/evstream.h>
#include <evstream/tensor.h>
#include <nrt/ndebug_stream.h>
#include <nrt/nrt_status.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main()
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1u << 20, .hugepages = EVS_HUGEPAGES_OFF);
	evs_producer *p = evs_producer__new(nullptr, 1, &o);
	int fd = -1;
	NRT_STATUS s = nrt_debug_client_connect(0, &fd);
	uint64_t shape[2] = { 2, 3 };
	float d[6] = { 1, 2, 3, 4, 5, 6 };
	evs_tensor t{};
	t.prefix = "layer0";
	t.pipe = 1;
	t.dtype = "float32";
	t.ndim = 2;
	t.shape = shape;
	t.data = d;
	int r = evs_producer__emit_tensor(p, 0, &t);
	ndebug_stream_event_header_t h;
	void *payload = nullptr;
	NRT_STATUS rs = nrt_debug_client_read_one_event(fd, &h, &payload);
	evs_tensor_info info;
	bool ok = p && s == NRT_SUCCESS && r == 0 && rs == NRT_SUCCESS &&
		  evs_tensor_parse(payload, h.data_size, &info) == 0 &&
		  !std::strcmp(info.prefix, "layer0") && info.numel == 6 &&
		  !std::memcmp(info.data, d, sizeof(d));
	std::free(payload);
	nrt_debug_client_connect_close(fd);
	evs_producer__free(p);
	std::puts(ok ? "c++ app ok" : "c++ app failed");
	return !ok;
}
CXX
for cxx in g++ clang++; do
  command -v $cxx >/dev/null || fail "$cxx not installed"
  for std in c++17 c++20; do
    # shellcheck disable=SC2046
    $cxx -std=$std -Wall -Wextra -Werror "$tmp/app.cpp" -o "$tmp/app-cxx" \
      $(pkg-config --cflags --libs evstream) -Wl,-rpath,"$tmp/root/opt/evstream/lib" ||
      fail "$cxx -std=$std: a C++ program does not build against the installed headers"
    out=$(EVSTREAM_HUGEPAGES=off "$tmp/app-cxx") && grep -q 'c++ app ok' <<<"$out" ||
      fail "$cxx -std=$std: the C++ program failed: $out"
  done
done
echo "ok: a C++ program (g++ and clang++, C++17 and C++20, -Wall -Wextra -Werror, EVS_OPTS) builds and runs against the installed tree"
