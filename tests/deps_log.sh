#!/usr/bin/env bash
# scripts/deps.sh, which make demo and make test run as root, keeps
# apt-get's output in a file of a name of its own under $TMPDIR (mktemp):
# never a fixed path another user could have planted a link at. Its
# apt-get, dpkg-query and sudo are stand-ins on PATH here: every package
# looks missing, and apt-get fails or succeeds as each case asks, without
# the network and without installing anything.
set -euo pipefail
cd "$(dirname "$0")/.."
t=$(mktemp -d /tmp/evs-deps-XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$t/bin" "$t/tmp"
. tests/fresh_machine.sh
fresh_machine "$t/bin"
# apt-get: APT_MODE fail (every install fails), ok, or retry (the first
# install fails, then update and the second install succeed)
cat >"$t/bin/apt-get" <<'EOT'
#!/bin/sh
echo "apt-get $*"
case "$APT_MODE:$1" in
  *:update) exit 0 ;;
  ok:install) exit 0 ;;
  retry:install) [ -e "$APT_STATE" ] && exit 0; : >"$APT_STATE"; echo "E: Unable to locate package x"; exit 100 ;;
  *) echo "E: Unable to locate package x"; exit 100 ;;
esac
EOT
chmod +x "$t/bin"/*
deps() { # deps MODE: scripts/deps.sh's exit status; its stderr in $t/err
  local rc=0
  APT_MODE=$1 APT_STATE="$t/state" TMPDIR="$t/tmp" PATH="$t/bin:$PATH" \
    bash scripts/deps.sh 2>"$t/err" || rc=$?
  return $rc
}

# a failed install: the log is named, holds apt-get's output, and a link
# planted at the old fixed name is not followed
echo "planted target" >"$t/victim"
ln -s "$t/victim" "$t/tmp/evstream-deps.log"
rc=0; deps fail || rc=$?
[ $rc -eq 1 ] || { cat "$t/err"; fail "a failed install exits $rc, not 1"; }
log=$(sed -n "s|^deps: apt-get install failed; see \(.*\)$|\1|p" "$t/err")
case "$log" in
  "$t/tmp/evstream-deps."??????) ;;
  *) cat "$t/err"; fail "the log named is '$log', not a file of its own under \$TMPDIR" ;;
esac
[ -f "$log" ] && [ ! -L "$log" ] || fail "the log $log is not a regular file"
grep -q "^apt-get update" "$log" && [ "$(grep -c '^apt-get install' "$log")" -eq 2 ] ||
  { cat "$log"; fail "the log does not hold the install, the update and the second install"; }
[ "$(cat "$t/victim")" = "planted target" ] || fail "a link planted at evstream-deps.log was written through"
echo "ok: a failed install keeps apt-get's output in $(basename "$log"), names it, follows no planted link"

# an install that succeeds, at once or after the update: no log is left
for mode in ok retry; do
  rm -f "$t/state" "$t/tmp"/evstream-deps.??????
  rc=0; deps $mode || rc=$?
  [ $rc -eq 0 ] || { cat "$t/err"; fail "an install that succeeds ($mode) exits $rc"; }
  left=$(find "$t/tmp" -name 'evstream-deps.??????')
  [ -z "$left" ] || fail "a successful install ($mode) left its log: $left"
done
echo "ok: a successful install, at once or after apt-get update, leaves no log"
