#!/usr/bin/env bash
# A producer whose ring turns out corrupt (a record claiming more payload
# than the ring holds): evs-dump gives the stream up, says what was wrong
# in the library's words (core, position, size), and exits 1.
. "$(dirname "$0")/lib.sh"

start_peer "$NAME" corrupt
start_dump "$T/x"
wait_pid "$DUMP_PID" 20; rc=$?
[ "$rc" -eq 1 ] || { cat "$T/x.stderr"; fail "evs-dump exited with $rc, expected 1 (a corrupt stream)"; }
grep -q "evs-dump: core 0: stream corrupt: the record at position 0 claims 1099511627776 payload bytes" \
	"$T/x.stderr" || { cat "$T/x.stderr"; fail "the corruption is not named"; }
# the corrupt record was never read: nothing may claim the producer closed
# its streams and everything was drained
! grep -q "closed its streams" "$T/x.stderr" ||
	{ cat "$T/x.stderr"; fail "a corrupt stream is reported as closed with everything drained"; }
wait_pid "$PEER_PID" 20 || { cat "$T/peer.err"; fail "dump-peer exited with $?"; }
ok "a corrupt stream: '$(grep 'stream corrupt' "$T/x.stderr")', exit 1"
