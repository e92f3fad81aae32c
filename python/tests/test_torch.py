# SPDX-License-Identifier: MIT
"""evstream.torch.watch: forward hooks on a small model built here (no
downloaded weights) emit every module's output; evs-dump, a separate
process, writes them; every .npy equals the module's output byte for
byte."""
import json
import subprocess

import numpy as np
import pytest

import evstream
from conftest import tool, unique

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed for this Python (python3-torch; make deps): "
                    "the hook test cannot run")
import evstream.torch as evs_torch  # noqa: E402


class Transpose(torch.nn.Module):
    def forward(self, x):
        return x.t()                       # a non-contiguous view


class Pair(torch.nn.Module):
    def forward(self, x):
        return x[:, ::2], {"mean": x.mean(dim=0), "ids": x.argmax(dim=1)}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(16, 6)
        self.tr = Transpose()
        self.pair = Pair()
        self.bf = torch.nn.Linear(6, 4).to(torch.bfloat16)
        self.f16 = torch.nn.Sequential(torch.nn.Identity())

    def forward(self, x):
        y = self.fc2(self.act(self.fc1(x)))
        t = self.tr(y)
        p = self.pair(y)
        b = self.bf(y.to(torch.bfloat16))
        h = self.f16(y.to(torch.float16))
        return t, p, b, h


def flatten(prefix, out, into):
    if isinstance(out, torch.Tensor):
        into.append((prefix, out.detach().clone()))
    elif isinstance(out, (tuple, list)):
        for i, o in enumerate(out):
            flatten("%s[%d]" % (prefix, i), o, into)
    elif isinstance(out, dict):
        for k, o in out.items():
            flatten("%s.%s" % (prefix, k), o, into)


def expected_bytes(t):
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.contiguous().numpy().tobytes()


def test_watch_a_model_and_dump_every_output(procs, tmpdir_fast):
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(3, 8)
    name = unique("torch")
    out_dir = tmpdir_fast / "dump"
    with evstream.Producer(name, 1) as p:
        dump = procs.start([tool("evs-dump"), "--output", str(out_dir), "--wait", "30",
                            "--no-print", "--quiet", name])
        assert p.wait_connected(timeout=60), "evs-dump did not connect"
        # what each module returned, recorded by a hook of our own, in call order
        seen = []
        rec = [m.register_forward_hook(
            lambda m, i, o, n=(n or "model"): flatten(n, o, seen))
            for n, m in model.named_modules()]
        with evs_torch.watch(model, p, core=0) as w:
            with torch.no_grad():
                model(x)
        for h in rec:
            h.remove()
        with torch.no_grad():
            model(x)                       # hooks removed: nothing more is emitted
        assert w.dropped == 0 and w.emitted == len(seen)
    assert dump.wait(120) == 0
    lines = [json.loads(line) for line in open(out_dir / "index.jsonl")]
    assert [ln["prefix"] for ln in lines] == [n for n, _ in seen]
    names = {ln["prefix"] for ln in lines}
    assert {"fc1", "act", "tr", "pair[0]", "pair[1].mean", "pair[1].ids", "bf", "f16.0",
            "model[0]", "model[1][1].ids", "model[2]", "model[3]"} <= names
    for ln, (prefix, t) in zip(lines, seen):
        assert ln["kind"] == "tensor" and ln["gap"] == 0
        assert ln["dtype"] == str(t.dtype).replace("torch.", "")
        assert tuple(ln["shape"]) == tuple(t.shape)
        data = np.load(out_dir / ln["file"])
        assert data.tobytes() == expected_bytes(t), prefix
    assert any(not t.is_contiguous() for _, t in seen)   # strided outputs among them


class Odd(torch.nn.Module):
    """Outputs evstream has no dtype name for, and one it cannot send."""

    def forward(self, x):
        c = torch.view_as_complex(x.reshape(-1, 2))               # complex64
        q = torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)     # no NumPy view at all
        return c, q, x + 1


def test_outputs_without_a_dtype_name_go_opaque_or_are_skipped_never_breaking_the_model(
        name, caplog):
    import logging
    model = torch.nn.Sequential(Odd())
    x = torch.arange(8, dtype=torch.float32)
    with evstream.Producer(name, 1, ring_bytes=1 << 20) as p:
        s = evstream.connect(name, 0)
        with caplog.at_level(logging.WARNING, logger="evstream"):
            with evs_torch.watch(model, p) as w:
                with torch.no_grad():
                    for _ in range(2):
                        out = model(x)                  # the forward pass completes
        assert torch.equal(out[2], x + 1)
        got = []
        while (ev := s.read(0)) is not None:
            with ev:
                got.append((ev.prefix, ev.dtype, ev.elem_size, ev.shape, bytes(ev.data)))
        s.close()
    c = torch.view_as_complex(x.reshape(-1, 2))
    one = [("0[0]", "complex64", 8, (4,), c.numpy().tobytes()),
           ("0[2]", "float32", 4, (8,), (x + 1).numpy().tobytes())]
    assert got == (one + [(pfx.replace("0", "model", 1), *rest) for pfx, *rest in one]) * 2
    # the quantized outputs (module and model) were skipped, counted, and
    # logged once each: the first time
    assert (w.emitted, w.dropped, w.skipped) == (8, 0, 4)
    logged = [r.getMessage() for r in caplog.records if r.name == "evstream"]
    assert len(logged) == 2, logged
    assert logged[0].startswith("evstream.torch.watch: the output 0[1] (torch.qint8, shape (8,)) "
                                "is skipped: "), logged[0]
    assert "model[1]" in logged[1] and ".skipped" in logged[0]


def test_emit_tensor_of_dtypes_without_a_name():
    with evstream.Producer(None, 1) as p:
        s = evstream.connect(None, 0)
        z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64).conj().resolve_conj()
        assert evs_torch.emit_tensor(p, 0, "c", z.t())
        with s.read(5) as ev:
            assert (ev.dtype, ev.elem_size, ev.array().dtype) == ("complex64", 8, np.dtype("V8"))
            assert bytes(ev.data) == z.numpy().tobytes()
        # a lazy conjugate (the conjugate bit set) is sent as its values
        assert evs_torch.emit_tensor(p, 0, "lazy", torch.conj(z))
        with s.read(5) as ev:
            assert bytes(ev.data) == z.conj().resolve_conj().numpy().tobytes()
        with pytest.raises(TypeError, match="quantized"):
            evs_torch.emit_tensor(p, 0, "q", torch.quantize_per_tensor(
                torch.zeros(2), 0.1, 0, torch.qint8))
        s.close()


def test_emit_tensor_refuses_what_is_not_a_tensor_and_producer_names_the_way():
    """evstream.torch.emit_tensor of a NumPy array: a TypeError naming what
    is allowed (AttributeError 'detach' before); Producer.emit_tensor and
    emit of a torch tensor name evstream.torch.emit_tensor and .numpy()
    (only 'a bytes-like object is required' before)."""
    with evstream.Producer(None, 1) as p:
        for bad, tname in ((np.zeros(3), "ndarray"), ([1.0], "list")):
            with pytest.raises(TypeError, match="t of type %s: allowed is a torch.Tensor" % tname):
                evs_torch.emit_tensor(p, 0, "x", bad)
        t = torch.zeros(3)
        for call, what in ((lambda: p.emit_tensor(0, "x", t), "array"),
                           (lambda: p.emit(0, 5, t), "data")):
            with pytest.raises(TypeError) as e:
                call()
            assert str(e.value).startswith(
                "%s of type torch.Tensor has no buffer: send a torch tensor with "
                "evstream.torch.emit_tensor(producer, core, prefix, t), or pass t.numpy()" % what)
        with pytest.raises(TypeError, match=r"array of type list: allowed is None or a buffer"):
            p.emit_tensor(0, "x", [1.0])
        assert p.stats(0).produced == 0


def test_watch_checks_its_arguments(name):
    model = torch.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="producer 'a-name': allowed is an evstream.Producer"):
        evs_torch.watch(model, "a-name")
    with evstream.Producer(name, 2) as p:
        with pytest.raises(ValueError, match="core 2: producer .* has cores 0 to 1"):
            evs_torch.watch(model, p, core=2)
        with pytest.raises(TypeError, match="core '1'"):
            evs_torch.watch(model, p, core="1")
        with pytest.raises(ValueError, match="pipe 3: allowed is 0 or 1"):
            evs_torch.watch(model, p, pipe=3)
        # 1.0 == 1, but emit_tensor takes no float: refused here, not in every hook
        with pytest.raises(TypeError, match="pipe 1.0: allowed is an int"):
            evs_torch.watch(model, p, pipe=1.0)
        assert not model._forward_hooks                  # nothing was registered
    with pytest.raises(ValueError, match="closed"):
        evs_torch.watch(model, p)


def test_a_model_is_watched_into_a_stream_once(name):
    # a second watch of the same model, producer and core would send each
    # output twice (a notebook cell run again); refused until it is removed
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    with evstream.Producer(name, 2, ring_bytes=1 << 20) as p:
        s = evstream.connect(p, 0)
        w = evs_torch.watch(model, p, 0)
        with pytest.raises(ValueError, match="Sequential is already watched into core 0 of "
                                             "producer '%s'" % name):
            evs_torch.watch(model, p, 0)
        other = evs_torch.watch(model, p, 1)             # another stream: taken
        model(torch.ones(1, 2))
        assert w.emitted == 2 and other.dropped == 2      # core 1 has no consumer
        assert [s.read(0).prefix for _ in range(2)] == ["0", "model"] and s.read(0) is None
        w.remove()
        with evs_torch.watch(model, p, 0) as again:
            model(torch.ones(1, 2))
        assert again.emitted == 2
        other.remove()
        s.close()


def test_tensor_of_an_event_views_the_ring_and_holds_its_record(name):
    import gc
    f32 = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    bf = torch.tensor([1.0, -2.5, 3.140625], dtype=torch.bfloat16)
    c = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    with evstream.Producer(name, 1, ring_bytes=1 << 20) as p:
        s = evstream.connect(name, 0)
        for prefix, t in (("f32", f32.t()), ("bf", bf), ("c", c)):
            assert evs_torch.emit_tensor(p, 0, prefix, t)
            ev = s.read(5)
            got = evs_torch.tensor(ev)
            ev.release()
            assert ev.held and s.held == 1           # the tensor holds the record
            assert got.dtype == t.dtype and torch.equal(got, t.contiguous()), prefix
            while p.emit(0, 9, b"x" * 4096):        # the ring fills; the held bytes stay
                pass
            assert torch.equal(got, t.contiguous()), prefix
            del got
            gc.collect()
            assert not ev.held and s.held == 0, prefix
            while (e := s.read(0)) is not None:
                e.release()
        assert p.emit(0, 9, b"raw")
        with s.read(5) as ev:
            assert evs_torch.tensor(ev).tolist() == list(b"raw")   # raw: its bytes
        with pytest.raises(evstream.LeaseError):
            evs_torch.tensor(ev)
        assert p.emit_tensor(0, "u16", np.arange(3, dtype=np.uint16))
        with s.read(5) as ev:
            with pytest.raises(TypeError, match="u16.*uint16.*ev.array()"):
                evs_torch.tensor(ev)
        s.close()
