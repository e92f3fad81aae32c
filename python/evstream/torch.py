# SPDX-License-Identifier: MIT
"""PyTorch forward hooks that emit every module's output into a stream.

    handle = evstream.torch.watch(model, producer, core=0)
    model(x)          # one tensor-read event per module output
    handle.remove()   # or: with evstream.torch.watch(...):

Each event's prefix is the module's qualified name (``model`` for the
root, ``encoder.layers.0.attn``...; an output that is a tuple, list or
dict gives one event per tensor, ``name[0]``, ``name.key``), its dtype
and shape the tensor's, and its bytes the tensor's elements in C order:
a CPU tensor is read in place through its strides (non-contiguous ones
are gathered into the ring by the library, without a copy in Python); a
tensor on another device is copied to the CPU first. bfloat16 travels
as its bits (a uint16 view), named bfloat16.
"""
import torch as _torch

# torch dtype -> evstream dtype name (and how to view it for NumPy)
_DTYPES = {
    _torch.float64: "float64", _torch.float32: "float32", _torch.float16: "float16",
    _torch.bfloat16: "bfloat16", _torch.int64: "int64", _torch.int32: "int32",
    _torch.int16: "int16", _torch.int8: "int8", _torch.uint8: "uint8", _torch.bool: "bool",
}
# dtypes NumPy lacks, sent as same-sized integers with their own name
_AS_BITS = {_torch.bfloat16: _torch.int16}


def emit_tensor(producer, core, prefix, t, pipe=0):
    """Emit one tensor (any device, any strides); True committed, False dropped."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    name = _DTYPES.get(t.dtype)
    if name is None:
        raise TypeError("%s: dtype %s has no evstream name; allowed: %s"
                        % (prefix, t.dtype, ", ".join(sorted(str(d) for d in _DTYPES))))
    if t.dtype in _AS_BITS:
        t = t.view(_AS_BITS[t.dtype])
    # .numpy() shares the tensor's memory, strides included
    return producer.emit_tensor(core, prefix, t.numpy(), pipe, dtype=name)


def _walk(prefix, out, emit):
    if isinstance(out, _torch.Tensor):
        emit(prefix, out)
    elif isinstance(out, (tuple, list)):
        for i, o in enumerate(out):
            _walk("%s[%d]" % (prefix, i), o, emit)
    elif isinstance(out, dict):
        for k, o in out.items():
            _walk("%s.%s" % (prefix, k), o, emit)


class Watch:
    """The hooks of watch(); remove() (or the end of a with block) takes
    them off. Counts: ``emitted`` and ``dropped`` events."""

    def __init__(self, model, producer, core, pipe, root):
        self.producer = producer
        self.core = core
        self.pipe = pipe
        self.emitted = 0
        self.dropped = 0
        self._handles = []
        for name, module in model.named_modules():
            label = name if name else root
            self._handles.append(module.register_forward_hook(self._hook(label)))

    def _hook(self, label):
        def hook(module, inputs, output):
            _walk(label, output, self._emit)
        return hook

    def _emit(self, prefix, t):
        if emit_tensor(self.producer, self.core, prefix, t, self.pipe):
            self.emitted += 1
        else:
            self.dropped += 1

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def watch(model, producer, core=0, pipe=0, root="model"):
    """Register forward hooks on model and all its submodules that emit each
    module's output to producer's core; returns a handle with remove()."""
    return Watch(model, producer, core, pipe, root)
