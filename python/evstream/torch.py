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
``evstream.torch.tensor(ev)`` is the consumer's side: a tensor viewing an
event's data in the ring that holds its record (torch.from_numpy of
ev.array()). A dtype evstream has no name
for (complex64, complex128, complex32) travels as opaque elements of its
size, named as torch names it (``complex64``: NumPy reads ``|V8``).
A debug hook never breaks the model: an output that cannot be sent at all
(a quantized or sparse tensor) is skipped, counted in ``skipped``, and
logged on the ``evstream`` logger the first time, once per output name.
"""
import logging as _logging
import operator as _operator
import weakref as _weakref

import torch as _torch

import evstream as _evstream

_log = _logging.getLogger("evstream")

# torch dtype -> evstream dtype name (and how to view it for NumPy)
_DTYPES = {
    _torch.float64: "float64", _torch.float32: "float32", _torch.float16: "float16",
    _torch.bfloat16: "bfloat16", _torch.int64: "int64", _torch.int32: "int32",
    _torch.int16: "int16", _torch.int8: "int8", _torch.uint8: "uint8", _torch.bool: "bool",
}
# dtypes NumPy lacks, sent as same-sized integers with their own name
_AS_BITS = {_torch.bfloat16: _torch.int16}
# what other dtypes NumPy cannot view (complex32) are viewed as, by element size
_INTS = {1: _torch.int8, 2: _torch.int16, 4: _torch.int32, 8: _torch.int64}


def _cpu_array(t, prefix):
    """A NumPy array sharing the memory (strides included) of t, on the CPU,
    and the evstream dtype name of its elements."""
    # a lazily conjugated or negated view (torch.conj) holds the values
    # before it: resolved, so that what is sent is what the tensor says
    t = t.detach().resolve_conj().resolve_neg()
    if t.is_quantized or t.layout != _torch.strided:
        raise TypeError("%s: a %s tensor (%s) has no elements in memory to send: dequantize or "
                        "densify it first" % (prefix, "quantized" if t.is_quantized else
                                              str(t.layout).replace("torch.", ""), t.dtype))
    if t.device.type != "cpu":
        t = t.cpu()
    name = _DTYPES.get(t.dtype)
    if name is not None:
        if t.dtype in _AS_BITS:
            t = t.view(_AS_BITS[t.dtype])
        return t.numpy(), name
    # no evstream name: opaque elements of its size, named as torch does
    name = str(t.dtype).replace("torch.", "")
    try:
        return t.numpy(), name                   # complex64, complex128
    except (TypeError, RuntimeError):
        pass
    bits = _INTS.get(t.element_size())
    if bits is None:
        raise TypeError("%s: dtype %s has no evstream name and no same-sized integer view"
                        % (prefix, t.dtype))
    return t.view(bits).numpy(), name            # complex32


def emit_tensor(producer, core, prefix, t, pipe=0):
    """Emit one tensor (any device, any strides); True committed, False
    dropped. A dtype evstream has no name for goes as opaque elements named
    as torch names it (``complex64``); quantized and sparse tensors raise
    TypeError, and so is what is not a torch tensor."""
    if not isinstance(t, _torch.Tensor):
        raise TypeError("t of type %s: allowed is a torch.Tensor (any other buffer, a NumPy "
                        "array say, goes with producer.emit_tensor(core, prefix, array))"
                        % type(t).__name__)
    a, name = _cpu_array(t, prefix)
    # .numpy() shares the tensor's memory, strides included
    return producer.emit_tensor(core, prefix, a, pipe, dtype=name)


# how opaque elements torch knows are viewed for torch.from_numpy
_OPAQUE = {("complex64", 8): "complex64", ("complex128", 16): "complex128"}


def tensor(ev):
    """A torch tensor of ev's data, viewing the ring (no copy): shaped and
    typed as the event (bfloat16 as torch.bfloat16, complex64/complex128 sent
    opaquely as themselves, raw and bad events as their uint8 bytes).

    Like ev.array(), of which it is torch.from_numpy(), it holds the
    record for as long as it (or any view of it) lives, so it never reads
    ring memory the producer reuses. It is read-only memory that torch does
    not know to be so: an in-place operation on it crashes the process
    (SIGSEGV); .clone() it to change it. (torch.frombuffer(ev.data) does
    not hold the record: torch releases the buffer at once.)"""
    import warnings
    a = ev.array()
    as_torch = None
    if ev.dtype == "bfloat16":
        a, as_torch = a.view("<i2"), _torch.bfloat16
    elif a.dtype.kind == "V" and (ev.dtype, ev.elem_size) in _OPAQUE:
        a = a.view(_OPAQUE[(ev.dtype, ev.elem_size)])
    with warnings.catch_warnings():
        # "The given NumPy array is not writable": said in the docstring
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        try:
            t = _torch.from_numpy(a)
        except TypeError as e:
            raise TypeError("%s: torch has no dtype for %s elements (%s): use ev.array()"
                            % (ev.prefix if ev.prefix else "seq %d" % ev.seq,
                               ev.dtype or a.dtype, e)) from None
    return t.view(as_torch) if as_torch is not None else t


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
    them off. Counts: ``emitted`` and ``dropped`` events, and ``skipped``
    outputs that could not be sent (logged once per output name)."""

    def __init__(self, model, producer, core, pipe, root):
        self.model = _weakref.ref(model)
        self.producer = producer
        self.core = core
        self.pipe = pipe
        self.emitted = 0
        self.dropped = 0
        self.skipped = 0
        self._said = set()
        self._handles = []
        for name, module in model.named_modules():
            label = name if name else root
            self._handles.append(module.register_forward_hook(self._hook(label)))
        _watches.add(self)

    def _hook(self, label):
        def hook(module, inputs, output):
            _walk(label, output, self._emit)
        return hook

    def _emit(self, prefix, t):
        # a debug hook must never break the model's forward pass
        try:
            ok = emit_tensor(self.producer, self.core, prefix, t, self.pipe)
        except Exception as e:
            self.skipped += 1
            if prefix not in self._said:
                self._said.add(prefix)
                _log.warning("evstream.torch.watch: the output %s (%s, shape %s) is skipped: %s "
                             "(every skip is counted in the watch's .skipped; this is said once "
                             "per output)", prefix, t.dtype, tuple(t.shape), e)
            return
        if ok:
            self.emitted += 1
        else:
            self.dropped += 1

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []
        _watches.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


# the watches whose hooks are on (each is kept alive by its model's hooks)
_watches = _weakref.WeakSet()


def watch(model, producer, core=0, pipe=0, root="model"):
    """Register forward hooks on model and all its submodules that emit each
    module's output to producer's core; returns a handle with remove().
    producer is an evstream.Producer (open), core one of its cores."""
    # checked here: inside the hooks, errors are skipped, not raised
    if not isinstance(producer, _evstream.Producer):
        raise TypeError("producer %r: allowed is an evstream.Producer (evstream.Producer(name, "
                        "ncores)), not a %s" % (producer, type(producer).__name__))
    if producer.closed:
        raise ValueError("producer %r is closed" % (producer,))
    try:
        c = _operator.index(core)
    except TypeError:
        raise TypeError("core %r: allowed is an int, 0 to %d" % (core, producer.ncores - 1)) \
            from None
    if not 0 <= c < producer.ncores:
        raise ValueError("core %r: producer %r has cores 0 to %d"
                         % (core, producer.name, producer.ncores - 1))
    try:
        pipe_i = _operator.index(pipe)
    except TypeError:
        raise TypeError("pipe %r: allowed is an int, 0 or 1 (stdout) and 2 (stderr)"
                        % (pipe,)) from None
    if pipe_i not in (0, 1, 2):
        raise ValueError("pipe %r: allowed is 0 or 1 (stdout) and 2 (stderr)" % (pipe,))
    if not hasattr(model, "named_modules"):
        raise TypeError("model %r: allowed is a torch.nn.Module" % (model,))
    # a second watch of the same stream would send every output twice, and
    # a golden compare would then pair each with the wrong one
    for w in list(_watches):
        if w.model() is model and w.producer is producer and w.core == c:
            raise ValueError("this %s is already watched into core %d of producer %r: every "
                             "output would be sent twice; remove() that watch first"
                             % (type(model).__name__, c, producer.name))
    return Watch(model, producer, c, pipe_i, root)
