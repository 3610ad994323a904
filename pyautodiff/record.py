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

from . import _core, batch, sparse, tapefile
from .guards import BranchError
from ._core import ffi, lib
from .pytree import flatten
from .tape_state import state
from .trace import Trace, refuse_variables
from .value import Value


def _one_at_a_time(method):
    """The method run holding the recording's lock (see the docstring)."""
    @functools.wraps(method)
    def serialized(self, *args):
        with self.trace.tape.lock:
            return method(self, *args)
    return serialized


class Recorded:
    """A function's Wengert list, replayed in C at new arguments."""

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
        self._plan_replays()

    def _plan_replays(self):
        """The replay plan of csrc/ad.h (ad_replay_plan): every argument's
        leaves in order, the guards with their values, the scalar result
        (the one C call of value_and_grad; -1 where value_and_grad needs
        the general path: a constant or a result of another shape)."""
        tr = self.trace
        leaves = [node for k in range(self.nargs) for node in tr.leaves[k]]
        # the numbers x (and the flat gradient g) hold
        self._size = sum(1 if isinstance(node, Value) else node._d.size
                         for node in leaves)
        guards = tr.tape.guards
        self._guard_what = [what for _, _, what in guards]
        expected = [np.reshape(np.asarray(e, np.float64), -1) for _, e, _ in guards]
        try:
            output, _ = tr.scalar_output()
        except TypeError:
            output = None
        self._objective = output
        self._plan_keep = keep = (
            np.array([node._i for node in leaves], np.int64),
            np.array([node._i for node, _, _ in guards], np.int64),
            np.concatenate(expected) if expected else np.zeros(0))
        self.plan = plan = ffi.new("ad_replay_plan *")
        plan.nleaves, plan.leaf = len(keep[0]), ffi.from_buffer("int64_t[]", keep[0])
        plan.nguards, plan.guard = len(keep[1]), ffi.from_buffer("int64_t[]", keep[1])
        plan.nexpected = len(keep[2])
        plan.expected = ffi.from_buffer("double[]", keep[2])
        plan.output = -1 if output is None else output
        self._one = np.empty(1)
        self._f = ffi.new("double *")
        self._flipped = ffi.new("int64_t *")
        self._plain = self.nargs == 1 and tr.structures[0].node is None

    # -- replay --------------------------------------------------------------

    def _inputs(self, args):
        """args as the flat vector x of the replay plan (checked against
        the structures they were recorded with), or None where they are
        written into the leaves here (any but one plain argument)."""
        if len(args) != self.nargs:
            raise TypeError(f"the recording of {self.name} takes {self.nargs} "
                            f"argument{'' if self.nargs == 1 else 's'}, "
                            f"not {len(args)}")
        tr = self.trace
        if self._plain:                # one float or ndarray, as recorded
            want = tr.structures[0]
            arg = args[0]
            if is_plain(arg, want.kinds[0], want.shapes[0]):
                if want.kinds[0] == "float":
                    self._one[0] = arg
                    return self._one
                # (C reads it as doubles: contiguous and aligned)
                return arg if arg.flags.c_contiguous and arg.flags.aligned \
                    else np.require(arg, np.float64, ["C_CONTIGUOUS", "ALIGNED"])
        parts = []
        for k, arg in enumerate(args):
            want = tr.structures[k]
            values, st = flatten(arg, f"{self.name}: argument {k}")
            refuse_variables(values, _inside(self.name))
            if st.node != want.node or st.kinds != want.kinds:
                raise TypeError(f"{self.name}: argument {k} does not have the "
                                "structure it was recorded with")
            if st.shapes != want.shapes:
                raise ValueError(f"{self.name}: argument {k} has shape "
                                 f"{_shapes(st)}, recorded with {_shapes(want)}")
            parts += [getattr(v, "_d", v) for v in values]
        # straight into the leaves (ad_replay then takes no x): a copy of
        # big arguments fewer than through x
        c = tr.tape._c
        leaves = [node for k in range(self.nargs) for node in tr.leaves[k]]
        for node, v in zip(leaves, parts):
            if isinstance(node, Value):
                c.imm[node._i] = v
            else:
                node._d[...] = v
        return None

    def _replay(self, args, grad=False):
        """The one C replay (csrc/replay.c) at args: the leaves written,
        the forward sweep, the guards checked; with grad, also the value
        and the flat gradient of every leaf (x's layout)."""
        x = self._inputs(args)
        tape = self.trace.tape
        tape._check_open()
        c = tape._c
        g = np.empty(self._size) if grad else None
        if grad:
            tape.sweep_mode = _core.SWEEP_LEAVES     # the extern rules read it
        _core.check(lib.ad_replay(
            c, self.plan, ffi.NULL if x is None else ffi.from_buffer("double[]", x),
            lib.AD_REPLAY_GRAD if grad else lib.AD_REPLAY_VALUES,
            1 if state.anomaly else 0, self._f,
            ffi.NULL if g is None else ffi.from_buffer("double[]", g),
            self._flipped), c, tape)
        k = self._flipped[0]
        if k >= 0:
            raise BranchError(self._flipped_message(self._guard_what[k]))
        return g

    def _flipped_message(self, what):
        return (f"{what} differs at these inputs, so the recording "
                f"of {self.name} does not hold here; record again at these "
                "inputs (@ad.function does that by itself)")

    @_one_at_a_time
    def __call__(self, *args):
        self._replay(args)
        return self.trace.output_value()

    @_one_at_a_time
    def value_and_grad(self, *args):
        tr = self.trace
        if self._objective is None or not self._plain or \
                not isinstance(tr.argnum, int):
            # the trace's sweep hands over the leaves' gradient blocks
            # themselves, where the flat g of ad_replay would be zeroed and
            # copied: for big parameters (an MLP's) a tenth of the step
            # (without an objective, trace.value_and_grad says why)
            self._replay(args)
            return tr.value_and_grad()
        g = self._replay(args, grad=True)
        st = tr.structures[0]
        return self._f[0], float(g[0]) if st.kinds[0] == "float" \
            else g.reshape(st.shapes[0])

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

    def map(self, *args, method="value", in_axes=0, threads=None, errors="raise"):
        """method ("value", "grad", "value_and_grad", "jacobian", "hessian",
        "hvp", "jvp", the sparse ones) at every point of a batch: the
        arguments with in_axes 0 carry the points on axis 0, those with
        None are shared; the results stacked on a leading axis, each row
        the single call's.  The value and gradient run in C on `threads`
        threads (every core by default).  A point where a guard flips
        raises BranchError naming it, or with errors="nan" gives a row of
        NaN (see batch.py)."""
        return batch.map_recording(self, args, method, in_axes, threads, errors)

    # -- sparse derivatives (sparse.py): pattern and colouring made once -----

    @_one_at_a_time
    def jacobian_sparsity(self):
        """The Jacobian's structural pattern (a scipy csr_array of bools)."""
        return sparse.recorded_pattern(self, "jacobian", "jacobian_sparsity")

    @_one_at_a_time
    def hessian_sparsity(self):
        """The Hessian's structural pattern (symmetric csr_array of bools)."""
        return sparse.recorded_pattern(self, "hessian", "hessian_sparsity")

    @_one_at_a_time
    def sparse_jacobian(self, *args):
        """The Jacobian at args as a 2-D csr_array: one product per colour."""
        self._replay(args)
        return sparse.recorded_evaluate(self, "jacobian", "sparse_jacobian", args)

    @_one_at_a_time
    def sparse_hessian(self, *args):
        """The Hessian at args as a csr_array: one Hessian-vector product
        per colour of a star colouring."""
        self._replay(args)
        return sparse.recorded_evaluate(self, "hessian", "sparse_hessian", args)

    @_one_at_a_time
    def _sparse_values(self, kind, replay, *args):
        """(plan, nonzeros): sparse_jacobian's or sparse_hessian's (kind
        'jacobian' or 'hessian') values in the order of the plan's
        pattern, with no csr_array made (the solvers' evaluations); with
        replay False, at the point of the last replay, which must have
        been at args (a solver's constraints, then their Jacobian)."""
        if replay:
            self._replay(args)
        return sparse.recorded_values(self, kind, "sparse_" + kind)

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
        tapefile.save(self, path)

    # Pickle and deepcopy carry the saved file's bytes, so a copy is loaded
    # and validated exactly as ad.load loads a file (and what cannot be
    # saved cannot be pickled, with the same error).
    def __reduce__(self):
        return _unpickled, (tapefile.dumps(self),)


def is_plain(arg, kind, shape):
    """The common case, taken without flattening: a float (or int) where a
    float was recorded, a float64 ndarray of the recorded shape where one
    was."""
    if kind == "float":
        return arg.__class__ is float or arg.__class__ is int
    return arg.__class__ is np.ndarray and arg.dtype == np.float64 \
        and arg.shape == shape


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
    trace, name = tapefile.load(path)
    rec = Recorded(None, (), _trace=trace)
    rec.name = name
    return rec


def loads(data, what="a recording's bytes"):
    """The recording in data, a saved file's bytes, loaded as ad.load loads
    the file; its errors call it `what`."""
    source = io.BytesIO(data)
    source.name = what
    return load(source)


def _unpickled(data):
    """A pickled recording (Recorded.__reduce__)."""
    return loads(data, "a pickled recording")


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

    def map(self, *args, method="value", in_axes=0, threads=None, errors="raise"):
        """Recorded.map on the recording for the first point's arguments;
        the points where one of its guards flips are computed one by one,
        recorded again there (batch.map_function)."""
        return batch.map_function(self, args, method, in_axes, threads, errors)

    def recording(self, args):
        """The recording for args (made now if there is none for their
        structure); its guards are not checked at args."""
        key = tuple(flatten(a, f"{self.fn.__name__}: argument {k}")[1]
                    for k, a in enumerate(args))
        rec = self.recordings.get(key)
        if rec is None:
            rec = self.recordings[key] = Recorded(self.fn, args, self.argnum)
        return rec


def function(f=None, *, argnum=0):
    """Decorator: record f lazily and replay it (see Function)."""
    if f is None:
        return lambda g: Function(g, argnum)
    return Function(f, argnum)
