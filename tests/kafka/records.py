# SPDX-License-Identifier: MIT
"""Records as evs-forward writes their values, for the Kafka tests that put
messages on the topic by hand (torn.sh, hostile_chunks.sh): a device print
as evs_producer__emit_tensor lays it out, the 64-byte record header, then
the 1024-byte reference payload."""
import struct


def header(seq, size):
    """A record header claiming size payload bytes."""
    return struct.pack("<QIIQQ", size, 1, 0, seq, 1000 + seq) + bytes(32)


def record(seq, text, size_lie=0):
    """A whole record; size_lie: bytes its header claims beyond the payload."""
    payload = text.encode().ljust(512, b"\0") + struct.pack("<II", 0, 1) + bytes(16 + 64 + 8 + 416)
    return header(seq, len(payload) + size_lie) + payload


def put(d, name, data):
    with open("%s/%s" % (d, name), "wb") as f:
        f.write(data)
