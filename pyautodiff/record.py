"""Record once, replay many: ``ad.record`` and ``@ad.function``.

``F = ad.record(f, *args)`` runs ``f`` once and keeps its Wengert list.
``F(*args)`` writes new inputs into the leaves and runs the C forward
sweep; ``F.grad`` & co. add the reverse, tangent or second-order sweeps.
No Python runs per operation (extern entries such as matrix products call
their NumPy rule once each).

A recording is only valid where ``f`` would take the same decisions: every
comparison and truth value it took on a Value while recording is a guard
(its entry on the tape must give the same answer), every number it took
out of a traced Value (float(x), int(x), format(x) ...) is a guard that
the Value keeps its value, and so is every boolean mask it used as an
index.  A replay where a guard flips raises ``BranchError`` naming the
comparison; ``@ad.function`` records again instead.  Array comparisons
feeding ``where`` are recorded ops, not guards: a replay recomputes them.

A recording can be used from any thread.  A replay writes its inputs,
values and adjoints into the recording's one C tape, so the replays of one
recording take turns: each holds the tape's lock from writing the inputs
to reading the results (recordings of their own, one per thread, replay
in parallel; the sweeps release the GIL).
"""
import functools
import io

import numpy as np

from . import _core
from ._core import ffi, lib
from .pytree import flatten
from .tape import state
from .trace import Trace, refuse_variables
from .value import Value


class BranchError(RuntimeError):
    """A replay reached a decision (a comparison, a truth value, a boolean
    mask) that goes the other way than when the function was recorded, or
    a number the function took out of a traced value (float(x)) that is
    not what it was."""


def _one_at_a_time(method):
    """The method run holding the recording's lock (see the docstring)."""
    @functools.wraps(method)
    def serialized(self, *args):
        with self.trace.tape.lock:
            return method(self, *args)
    return serialized


class Recorded:
    """A function's Wengert list, replayed in C at new arguments."""

    # value_and_grad's one C call (minimize.one_call_evaluator), once made;
    # False where the recording needs the general path
    _evaluate = None

    def __init__(self, f, args, argnum=0, kwargs=None, _trace=None):
        self.trace = _trace or Trace(f, args, kwargs or {}, argnum, "record",
                                     inputs=range(len(args)), guards=True)
        self.name = getattr(f, "__name__", "f")
        try:
            refuse_variables(self.trace.outer, _inside(self.name))
        except NotImplementedError:
            self.trace.release()
            raise
        self.nargs = len(self.trace.structures)
        tape = self.trace.tape
        if _trace is None:
            tape.compact()       # what neither the output nor a guard needs
        tape.flush()
        self._prepare_guards()

    def _prepare_guards(self):
        tape = self.trace.tape
        # a Value's guard is checked in C, an Array's (a mask) here
        scalar = [(node, expected, what) for node, expected, what in tape.guards
                  if isinstance(node, Value)]
        self._array_guards = [(node, expected, what) for node, expected, what
                              in tape.guards if not isinstance(node, Value)]
        self._guard_what = [what for _, _, what in scalar]
        self._guard_idx = np.array([node._i for node, _, _ in scalar], np.int64)
        self._guard_expected = np.array([e for _, e, _ in scalar], np.float64)
        self._guard_args = (len(scalar),
                            ffi.from_buffer("int64_t[]", self._guard_idx),
                            ffi.from_buffer("double[]", self._guard_expected))

    # -- replay --------------------------------------------------------------

    def _replay(self, args):
        """Write args into the leaves, run the forward sweep, check guards."""
        if len(args) != self.nargs:
            raise TypeError(f"the recording of {self.name} takes {self.nargs} "
                            f"argument{'' if self.nargs == 1 else 's'}, "
                            f"not {len(args)}")
        tr = self.trace
        c = tr.tape._c
        for k, arg in enumerate(args):
            want = tr.structures[k]
            if want.node is None and _write_plain(arg, want, tr.leaves[k][0], c):
                continue            # one float or ndarray, as recorded
            values, st = flatten(arg, f"{self.name}: argument {k}")
            refuse_variables(values, _inside(self.name))
            if st.node != want.node or st.kinds != want.kinds:
                raise TypeError(f"{self.name}: argument {k} does not have the "
                                "structure it was recorded with")
            if st.shapes != want.shapes:
                raise ValueError(f"{self.name}: argument {k} has shape "
                                 f"{_shapes(st)}, recorded with {_shapes(want)}")
            for node, kind, v in zip(tr.leaves[k], want.kinds, values):
                v = getattr(v, "_d", v)
                if kind == "float":
                    c.imm[node._i] = v
                else:
                    node._d[...] = v
        tape = tr.tape
        _core.check(lib.ad_forward(c, 0, tape.nflushed, 0), c, tape)
        self._check_guards()

    def _check_guards(self):
        k = lib.ad_check_guards(self.trace.tape._c, *self._guard_args)
        if k >= 0:
            raise BranchError(self._flipped(self._guard_what[k]))
        for node, expected, what in self._array_guards:
            if not np.array_equal(node._d, expected):
                raise BranchError(self._flipped(what))

    def _flipped(self, what):
        return (f"{what} differs at these inputs, so the recording "
                f"of {self.name} does not hold here; record again at these "
                "inputs (@ad.function does that by itself)")

    @_one_at_a_time
    def __call__(self, *args):
        self._replay(args)
        return self.trace.output_value()

    @_one_at_a_time
    def value_and_grad(self, *args):
        if self._evaluate is None:
            from .minimize import one_call_evaluator
            self._evaluate = one_call_evaluator(self) or False
        if self._evaluate and len(args) == 1 and not state.anomaly:
            got = self._evaluate(args[0])
            if got is not None:
                return got
        self._replay(args)
        return self.trace.value_and_grad()

    def grad(self, *args):
        return self.value_and_grad(*args)[1]

    @_one_at_a_time
    def jacobian(self, *args):
        self._replay(args)
        return self.trace.jacobian()

    @_one_at_a_time
    def hessian(self, *args):
        self._replay(args)
        return self.trace.hessian()

    @_one_at_a_time
    def hvp(self, *args):
        """F.hvp(*args, v): the Hessian at args times v."""
        self._replay(args[:-1])
        return self.trace.hvp(args[-1])

    @_one_at_a_time
    def jvp(self, *args):
        """F.jvp(*args, v) -> (F(*args), J v)."""
        self._replay(args[:-1])
        return self.trace.jvp(args[-1])

    # -- inspection and files -------------------------------------------------

    def __len__(self):
        return len(self.trace.tape)

    def __repr__(self):
        guards = len(self.trace.tape.guards)
        return (f"<recording of {self.name}: {len(self)} entries, {guards} "
                f"guard{'' if guards == 1 else 's'}, {self.nargs} "
                f"argument{'' if self.nargs == 1 else 's'}>")

    def __str__(self):
        return repr(self) + "\n" + str(self.trace.tape)

    def save(self, path):
        """Write the recording to path (see tapefile.py for the format)."""
        from .tapefile import save
        save(self, path)

    # Pickle and deepcopy carry the saved file's bytes, so a copy is loaded
    # and validated exactly as ad.load loads a file (and what cannot be
    # saved cannot be pickled, with the same error).
    def __reduce__(self):
        from .tapefile import dumps
        return _unpickled, (dumps(self),)


def is_plain(arg, kind, shape):
    """The common case, taken without flattening: a float (or int) where a
    float was recorded, a float64 ndarray of the recorded shape where one
    was."""
    if kind == "float":
        return arg.__class__ is float or arg.__class__ is int
    return arg.__class__ is np.ndarray and arg.dtype == np.float64 \
        and arg.shape == shape


def _write_plain(arg, want, leaf, c):
    """Write a plain argument (is_plain) into its leaf; False (nothing
    written) for anything else."""
    kind = want.kinds[0]
    if not is_plain(arg, kind, want.shapes[0]):
        return False
    if kind == "float":
        c.imm[leaf._i] = arg
    else:
        leaf._d[...] = arg
    return True


def _inside(name):
    return (f"the recording of {name} inside a derivative or another "
            "recording is not supported yet: it replays on plain numbers, "
            "which the enclosing derivative could not follow (record the "
            "derivative itself instead: ad.record(ad.grad(f), x0))")


def _shapes(st):
    return st.shapes[0] if st.node is None else st.shapes


def record(f, *args, argnum=0):
    """Run f(*args) once and keep its Wengert list for replays in C."""
    return Recorded(f, args, argnum)


def load(path):
    """A recording saved by F.save(path); ValueError for a file that is
    truncated, corrupted or not a recording."""
    from .tapefile import load as load_file
    return load_file(path)


def _unpickled(data):
    """A pickled recording (Recorded.__reduce__), loaded as ad.load loads
    a file."""
    source = io.BytesIO(data)
    source.name = "a pickled recording"   # what load's errors call it
    return load(source)


class Function:
    """@ad.function: f recorded on its first call and replayed after; it is
    recorded again for arguments of new shapes, or where a guard flips."""

    def __init__(self, f, argnum=0):
        functools.update_wrapper(self, f)
        self.fn = f
        self.argnum = argnum
        self.recordings = {}     # argument structures -> Recorded

    def _at(self, args, read):
        """read(trace) of a recording replayed at args (recorded now if need
        be), holding its lock from the replay to the reading."""
        key = tuple(flatten(a, f"{self.fn.__name__}: argument {k}")[1]
                    for k, a in enumerate(args))
        rec = self.recordings.get(key)
        if rec is not None:
            with rec.trace.tape.lock:
                try:
                    rec._replay(args)
                except BranchError:
                    pass
                else:
                    return read(rec.trace)
        rec = Recorded(self.fn, args, self.argnum)
        with rec.trace.tape.lock:       # (at args until read)
            self.recordings[key] = rec
            return read(rec.trace)

    def __call__(self, *args):
        return self._at(args, Trace.output_value)

    # pickled by name, as the function it wraps would be (its recordings
    # are made again on first use); copies are the object itself
    def __reduce__(self):
        return self.__qualname__

    def value_and_grad(self, *args):
        return self._at(args, Trace.value_and_grad)

    def grad(self, *args):
        return self.value_and_grad(*args)[1]

    def jacobian(self, *args):
        return self._at(args, Trace.jacobian)

    def hessian(self, *args):
        return self._at(args, Trace.hessian)

    def hvp(self, *args):
        return self._at(args[:-1], lambda trace: trace.hvp(args[-1]))

    def jvp(self, *args):
        return self._at(args[:-1], lambda trace: trace.jvp(args[-1]))


def function(f=None, *, argnum=0):
    """Decorator: record f lazily and replay it (see Function)."""
    if f is None:
        return lambda g: Function(g, argnum)
    return Function(f, argnum)
