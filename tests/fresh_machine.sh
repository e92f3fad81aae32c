# Sourced by tests of scripts/deps.sh and of what make does around it:
# fresh_machine DIR puts in DIR stand-ins for the package tools, so that
# every package looks missing and root needs no sudo. DIR/apt-get is the
# caller's: it decides what an install does.
fresh_machine() {
	mkdir -p "$1"
	printf '#!/bin/sh\nexit 1\n' >"$1/dpkg-query"
	printf '#!/bin/sh\nexec "$@"\n' >"$1/sudo"
	chmod +x "$1/dpkg-query" "$1/sudo"
}
