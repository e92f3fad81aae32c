#!/usr/bin/python3
# Writes the seed corpus of the fuzz targets (fuzz/corpus/*). Seeds are
# small valid and near-valid cases the fuzzer mutates from.
import os, struct, sys

RING = 4096
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

def rec(size, seq, fill=0x41):
    pad = (-size) % 8
    return struct.pack("<QIIQQ32x", size, 1, 0, seq, 0) + bytes([fill]) * size + bytes(pad)

def cons_seed(mode, move_at, peeks, state, prod, cons, prod2, ring, ident=b""):
    return struct.pack("<BBHIQQQ", mode, move_at, peeks, state, prod, cons, prod2) + ident + ring

def write(dirname, name, data):
    d = os.path.join(out, dirname)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

three = rec(0, 0) + rec(5, 1) + rec(100, 2)
write("consumer", "three-records", cons_seed(0, 255, 8, 0, len(three), 0, 0, three))
write("consumer", "closed-after-drain", cons_seed(0, 255, 8, 1, len(three), 0, 0, three))
write("consumer", "close-when-empty", cons_seed(0x40, 255, 8, 0, len(three), 0, 0, three))
# a record that starts 64 bytes before the end and wraps into the start
wrap = rec(200, 7)
ring = bytearray(RING)
ring[RING - 64:] = wrap[:64]
ring[:len(wrap) - 64] = wrap[64:]
write("consumer", "wrapping-record", cons_seed(0, 255, 4, 0, 2 * RING + len(wrap) - 64, 2 * RING - 64, 0, bytes(ring)))
write("consumer", "length-past-prod", cons_seed(0, 255, 4, 0, 64, 0, 0, rec(0, 0)[:8].replace(b"\0", b"\x10", 1) + rec(0, 0)[8:]))
write("consumer", "producer-rewinds", cons_seed(0, 1, 8, 0, len(three), 0, 8, three))
write("consumer", "near-wrap-of-u64", cons_seed(0, 255, 8, 0, (2**64 - 64 + len(three)) % 2**64, 2**64 - 64, 0, three))
ident = struct.pack("<QHHIQQQII", 0x314d52545356452e, 2, 0, 8192, RING, 64, 4096, 0, 0).ljust(64, b"\0")
write("consumer", "raw-identity", cons_seed(1, 255, 8, 0, len(three), 0, 0, three, ident))
# scripts (mode bit 1): 32 op bytes, low three bits the call, the rest its argument
def script(*codes):
    return bytes(codes).ljust(32, b"\x03")
def tensor_rec(seq, nbytes):
    fixed = b"t".ljust(512, b"\0") + struct.pack("<II", 0, 0) + b"float32".ljust(16, b"\0") \
        + struct.pack("<8Q", nbytes // 4, 0, 0, 0, 0, 0, 0, 0) + struct.pack("<Q", nbytes)
    fixed = fixed.ljust(1024, b"\0")
    return struct.pack("<QIIQQ32x", 1024 + nbytes, 1, 0, seq, 0) + fixed + bytes(nbytes)
tens = tensor_rec(0, 16) + tensor_rec(1, 8)
write("consumer", "hold-three-release-in-order",
      cons_seed(2, 255, 0, 0, len(three), 0, 0, script(0, 0, 0, 3, 3, 3, 6), three))
write("consumer", "hold-while-producer-rewrites",
      cons_seed(2, 255, 0, 0, len(three), 0, 0, script(0, 4 | (1 << 3), 0, 4 | (9 << 3), 0, 3, 2, 3, 3), three))
write("consumer", "producer-moves-while-held",
      cons_seed(2, 255, 0, 0, len(three), 0, 8, script(0, 5, 0, 3, 3, 6, 7, 6), three))
write("consumer", "tensor-reads-held",
      cons_seed(2, 255, 0, 0, len(tens), 0, 0, script(0, 0, 3, 3, 6), tens))

def op(code, arg=b""):
    return bytes([code]) + arg

def u16(v): return struct.pack("<H", v)
def u64(v): return struct.pack("<Q", v)

write("producer", "emit-release", u64(0) + op(4, u16(10)) + op(4, u16(100)) + op(3) + op(4, u16(4000)) + op(2, struct.pack("<I", 1)) + op(4, u16(8)))
write("producer", "reserve-commit-discard", u64(4096 - 64) + op(5, u16(300)) + op(6, u16(50)) + op(3) + op(5, u16(4032)))
write("producer", "consumer-runs-ahead", u64(0) + op(4, u16(64)) + op(0, u64(1 << 40)) + op(4, u16(64)) + op(1, u64(2**64 - 1)) + op(4, u16(64)))
write("producer", "consumer-goes-back", u64(1 << 20) + op(4, u16(1000)) + op(0, u64(0)) + op(4, u16(1000)) + op(7))
write("producer", "too-big", u64(0) + op(4, u16(4096)) + op(5, u16(4100)))
write("producer", "event-limit", u64(0) + op(4, u16(0)) * 20 + op(3) + op(4, u16(0)) * 20)

# kafka: evs-dump --kafka's records (fuzz/fuzz_kafka.c). A flags byte
# (dump mode, max events), then items: a kind byte (low bits 3: a partition
# handed over; bits 2-4: partition + 2), a key (bit 7: canned key number,
# else that many bytes), a headers byte (count; bit 3: no headers at all),
# each header (selector: 0-4 evs.seq/type/dtype/shape/chunk, 5-7 a name of
# sel >> 4 bytes; bit 3 no value; then value length and bytes), the value
# (u16 length and bytes) and the offset (u16). Records as evs-forward
# writes them (tools/kafka_msg.h).
def evs_header(seq, size, typ=1):
    return struct.pack("<QIIQQ32x", size, typ, 0, seq, 1000 + seq)

def tensor_payload(name, dtype, shape, data):
    fixed = name.encode().ljust(512, b"\0") + struct.pack("<II", 0, 0) + dtype.encode().ljust(16, b"\0") \
        + struct.pack("<8Q", *(list(shape) + [0] * (8 - len(shape)))) + struct.pack("<Q", len(data))
    return fixed.ljust(1024, b"\0") + data

def print_payload(text):
    return text.encode().ljust(512, b"\0") + struct.pack("<II", 0, 1) + bytes(1024 - 520)

def kmsg(value, hdrs, key=0x80, partition=0, offset=0):
    # key: a canned key's byte (0x80 + n), or the key's own bytes
    k = bytes([len(key)]) + key if isinstance(key, bytes) else bytes([key])
    out = bytes([(partition + 2) << 2]) + k + bytes([len(hdrs)])
    for sel, v in hdrs:
        out += bytes([sel, len(v)]) + v
    return out + u16(len(value)) + value + u16(offset)

def khdrs(seq, typ=1, dtype=None, shape=None, chunk=None):
    h = [(0, str(seq).encode()), (1, str(typ).encode())]
    if dtype:
        h += [(2, dtype.encode()), (3, shape.encode())]
    if chunk:
        h.append((4, chunk.encode()))
    return h

def kchunks(value, size, seq, offset, sent=None, **kw):
    n = (len(value) + size - 1) // size
    return b"".join(kmsg(value[i * size:(i + 1) * size], khdrs(seq, chunk="%d/%d" % (i, n), **kw),
                         offset=offset + i) for i in range(n if sent is None else sent))

tensor = tensor_payload("layer0.out", "float32", [4, 2], bytes(range(32)))
t0 = evs_header(0, len(tensor)) + tensor
pr = print_payload("hello from core 0")
p1 = evs_header(1, len(pr)) + pr
t2 = evs_header(2, len(tensor)) + tensor
tkw = dict(dtype="float32", shape="[4,2]")
for mode in range(3):
    write("kafka", "whole-records-mode%d" % mode,
          bytes([mode]) + kmsg(t0, khdrs(0, **tkw)) + kmsg(p1, khdrs(1), offset=1))
write("kafka", "chunked-tensor", bytes([0]) + kchunks(t0, 400, 0, 0, **tkw))
write("kafka", "chunked-then-whole", bytes([1]) + kchunks(t2, 500, 2, 0, **tkw)
      + kmsg(p1, khdrs(1), offset=3) + kmsg(p1, khdrs(1), offset=4))
write("kafka", "two-cores-two-partitions", bytes([0])
      + kchunks(t0, 300, 0, 0, sent=3, **tkw)  # 3 of its 4 chunks
      + kmsg(t0, khdrs(0, **tkw), key=0x81, partition=1)
      + bytes([3 | (0 + 2) << 2])               # partition 0 handed over
      + kmsg(p1, khdrs(1), key=0x82, partition=1, offset=1))
# what the fuzzer found (docs/reliability.md), kept as seeds so that each
# run replays them first: a record without a key; an empty chunk in the
# middle of a record; a record's chunks from two partitions; a first chunk
# whose header claims a 4 GiB record; a host named as the reader's summary
write("kafka", "keyless-record", bytes([0]) + kmsg(t0, khdrs(0, **tkw), key=0))
ch = [t0[:400], t0[400:800], t0[800:]]
write("kafka", "empty-middle-chunk", bytes([0])
      + kmsg(ch[0], khdrs(0, chunk="0/3", **tkw)) + kmsg(b"", khdrs(0, chunk="1/3", **tkw), offset=1)
      + kmsg(ch[1] + ch[2], khdrs(0, chunk="2/3", **tkw), offset=2))
write("kafka", "chunks-from-two-partitions", bytes([0])
      + kmsg(ch[0], khdrs(0, chunk="0/3", **tkw)) + kmsg(ch[1], khdrs(0, chunk="1/3", **tkw), partition=1)
      + kmsg(ch[2], khdrs(0, chunk="2/3", **tkw), partition=1, offset=1) + kmsg(p1, khdrs(1), offset=1))
huge = (4 << 30) - 64
first = evs_header(0, huge) + tensor[:1024]
write("kafka", "claims-4gib", bytes([0])
      + kmsg(first, khdrs(0, chunk="0/%d" % ((64 + huge + len(first) - 1) // len(first)), **tkw))
      + kmsg(p1, khdrs(1), offset=1))
write("kafka", "host-named-summary", bytes([0]) + kmsg(t0, khdrs(0, **tkw), key=b"summary.json/p/0"))

# convert: evs-dump --convert on raw files (fuzz/fuzz_convert.c). A
# selector byte (bit 0: two files, then a u16 length of the first; bits
# 1-3 and 4-6: their core<N>.evsraw names; bit 7: the summary), then the
# files: a 64-byte raw header, then records as in the ring. Seeds from
# the real tools come from fuzz/raw_seeds.sh (demo-*); these are crafted.
def raw_hdr(core, magic=b"EVSRAW01", version=1):
    return magic + struct.pack("<II", version, core) + bytes(48)

def raw_rec(seq, payload, typ=1, size=None):
    size = len(payload) if size is None else size
    return evs_header(seq, size, typ) + payload + bytes((-len(payload)) % 8)

def tensor_ext(name, dtype, shape, data, ndim=None, esz=0):
    p = bytearray(tensor_payload(name, dtype, shape, data))
    p[608:616] = struct.pack("<HBBI", 0x4e45, len(shape) if ndim is None else ndim, 0, esz)
    return bytes(p)

def conv(sel, *files):
    if len(files) == 1:
        return bytes([sel]) + files[0]
    return bytes([sel | 1]) + u16(len(files[0])) + files[0] + files[1]

f32 = tensor_ext("t", "float32", [2, 2], bytes(range(16)))
write("convert", "header-only", conv(0, raw_hdr(0)))
write("convert", "empty-file", conv(0x80, b""))
write("convert", "scalar-print-empty", conv(0x80, raw_hdr(3) + raw_rec(0, tensor_ext("s", "int8", [], b"\x05"))
      + raw_rec(1, print_payload("hi \xe9 \xe2\x82\xac")) + raw_rec(2, tensor_ext("e", "float16", [3, 0, 2], b""))))
write("convert", "claims-8eib", conv(0, raw_hdr(0) + raw_rec(0, f32, size=1 << 63)))
write("convert", "torn-last-record", conv(0, raw_hdr(0) + raw_rec(0, f32) + raw_rec(1, f32)[:700]))
write("convert", "ext-ndim-9", conv(0, raw_hdr(0) + raw_rec(0, tensor_ext("t", "float32", [2, 2], bytes(16), ndim=9))))
write("convert", "unknown-dtype-esz3", conv(0, raw_hdr(1) + raw_rec(5, tensor_ext("v", "fp24", [2], bytes(6), esz=3))))
write("convert", "shape-overflows", conv(0, raw_hdr(0) + raw_rec(0, tensor_ext("o", "float32", [1 << 32, 1 << 32], bytes(16)))))
write("convert", "empty-no-numpy-shape", conv(0x80, raw_hdr(0) + raw_rec(0, tensor_ext("u", "float32", [0, (1 << 64) - 1], b""))))
write("convert", "print-with-data", conv(0, raw_hdr(0) + raw_rec(0, print_payload("p")[:1016] + u64(8) + bytes(8))))
write("convert", "core-4096", conv(0, raw_hdr(4096) + raw_rec(0, f32)))
write("convert", "core-4095", conv(0, raw_hdr(4095) + raw_rec(0, f32)))  # the largest table of cores
write("convert", "bad-version", conv(0, raw_hdr(0, version=2) + raw_rec(0, f32)))
write("convert", "type-0-record", conv(0, raw_hdr(2) + raw_rec(0, bytes(8), typ=0)))
write("convert", "two-files-two-cores", conv(0x80 | 2 << 1, raw_hdr(0) + raw_rec(0, f32), raw_hdr(1) + raw_rec(0, f32)))
# what the fuzzer found (docs/reliability.md), also as fuzz/corpus/convert
# files it wrote (dup-seq-replaces-npy, prefix-ff-before-continuations):
# a sequence number again within a core, and two files of one core; a
# prefix with bytes that start no UTF-8 sequence before continuation bytes
write("convert", "repeated-seq", conv(0, raw_hdr(0) + raw_rec(7, f32)
      + raw_rec(7, tensor_ext("t", "int8", [3], bytes(3))) + raw_rec(5, f32) + raw_rec(8, f32)))
write("convert", "two-files-one-core", conv(0x80, raw_hdr(4) + raw_rec(0, f32) + raw_rec(1, f32),
      raw_hdr(4) + raw_rec(1, tensor_ext("t", "int8", [3], bytes(3))) + raw_rec(2, f32)))
write("convert", "prefix-not-utf8-leads", conv(0, raw_hdr(0)
      + raw_rec(0, print_payload("x ")[:2] + b"\xff\xa7\xa7 \xf8\x88\x80\x80\x80" + bytes(1024 - 12))))
