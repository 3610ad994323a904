"""``F.map``: one recording evaluated at many points in one call.

``F.map(*args, method="value", in_axes=0, threads=None, errors="raise")``
evaluates ``getattr(F, method)`` at every point of a batch: an argument
with in_axes 0 carries the points on its leading axis (every array of a
list, tuple or dict argument does), one with None is shared by all of
them, as ``jax.vmap`` has it.  The results are stacked on a leading axis,
each row bit for bit the single call's at that point.

The value and Jacobian of a recording whose result is one entry, and the
value and gradient, Hessian-vector product and Hessian of one whose
result is a scalar (with respect to one float or ndarray argument but for
the gradient), run in C (csrc/many.c): the points are split among ``threads``
threads (every core the process may use by default), each replaying on
its own copy of the tape with the GIL released.  Every other method, and
recordings with extern ops whose rules are Python code, go point by point
through the method itself.  Points go
to C in chunks of about a tenth of a second, so Ctrl-C lands between two
of them.

A point where a guard flips raises ``BranchError`` naming the point and
the decision (``errors="raise"``), or gives a row of NaN while the others
are computed (``errors="nan"``).
"""
import os

import numpy as np

from . import _core
from ._core import ffi, lib
from .guards import BranchError
from .pytree import flatten, unflatten
from .trace import LANES

METHODS = ("value", "grad", "value_and_grad", "jacobian", "hessian", "hvp", "jvp",
           "sparse_jacobian", "sparse_hessian")
# numbers of tape entries a C call of map works through, about (a chunk of
# points takes some 0.1 s, so an interrupt lands soon)
_CHUNK_WORK = 1 << 23


def default_threads():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):       # (not on every platform)
        return os.cpu_count() or 1


class _Batch:
    """The arguments of map split into points: `count` points, point k's
    arguments by args_at(k), and the flat rows of the replay plan's layout
    (every argument's leaves in order) by rows()."""

    def __init__(self, rec, args, axes):
        name = rec.name
        self.count = None
        self.vector = None      # hvp's and jvp's vectors, one per point
        self.leaves = []        # per argument: (structure, [its leaves], axis)
        for k, (arg, axis) in enumerate(zip(args, axes)):
            want = rec.trace.structures[k]
            what = f"{name}.map: argument {k}"
            values, st = flatten(arg, what)
            values = [np.asarray(getattr(v, "_d", v), dtype=np.float64) for v in values]
            # (a batched float is an array of floats: only the nesting is kept)
            if st.node != want.node or (axis is None and st.kinds != want.kinds):
                raise TypeError(f"{what} does not have the structure the "
                                "recording was made with")
            if axis == 0:
                for v in values:
                    if v.ndim == 0:
                        raise ValueError(f"{what}: a batched argument needs an "
                                         "axis 0 of points")
                    if self.count is not None and v.shape[0] != self.count:
                        raise ValueError(f"{what} has {v.shape[0]} points on "
                                         f"axis 0, an earlier one {self.count}")
                    self.count = v.shape[0]
            shapes = tuple(v.shape[1:] if axis == 0 else v.shape for v in values)
            if shapes != tuple(want.shapes):
                raise ValueError(f"{what} has points of shape {_shown(shapes, want)}, "
                                 f"recorded with {_shown(want.shapes, want)}")
            self.leaves.append((want, values, axis))
        if self.count is None:
            raise ValueError(f"{name}.map: no argument is batched (in_axes "
                             "names none with 0)")

    def args_at(self, k):
        out = []
        for st, values, axis in self.leaves:
            point = [v[k] if axis == 0 else v for v in values]
            out.append(unflatten(st, [float(p) if kind == "float" else np.array(p)
                                      for p, kind in zip(point, st.kinds)]))
        return out

    def rows(self):
        """(x, shared, batched) for the C replay plan (every argument's
        leaves in order): x the (count, numbers) rows of the batched
        leaves, a view of the argument where it is one C-contiguous array
        of floats; shared the shared leaves' numbers, once; batched a
        uint8 per leaf, 1 for the batched ones."""
        n = self.count
        parts, shared, batched = [], [], []
        for _, values, axis in self.leaves:
            for v in values:
                batched.append(axis == 0)
                if axis == 0:
                    parts.append(v.reshape(n, _point_size(v, axis)))
                else:
                    shared.append(v.reshape(-1))
        if len(parts) == 1 and parts[0].flags.c_contiguous:
            x = parts[0]
        else:
            x = np.concatenate(parts, axis=1) if parts else np.zeros((n, 0))
        return (_for_c(x),
                np.concatenate(shared) if shared else np.zeros(0),
                np.array(batched, dtype=np.uint8))


def _for_c(a):
    """a as C reads it: float64, C-contiguous and aligned (an array
    unpickled from a buffer, as Dask hands a block over, may not be)."""
    return np.require(a, np.float64, ["C_CONTIGUOUS", "ALIGNED"])


def _point_size(v, axis):
    return int(np.prod(v.shape[1:] if axis == 0 else v.shape, dtype=np.int64))


def axes_of(in_axes, nargs, name):
    """in_axes as one 0 or None per argument."""
    axes = [in_axes] * nargs if in_axes is None or isinstance(in_axes, int) \
        else list(in_axes)
    if len(axes) != nargs or any(a not in (0, None) or isinstance(a, bool) for a in axes):
        raise ValueError(f"{name}.map: in_axes must be 0 or None, or one of them "
                         f"per argument ({nargs}), not {in_axes!r}")
    return axes


def _shown(shapes, want):
    return shapes[0] if want.node is None else list(shapes)


def _nan_like(row):
    if isinstance(row, tuple):
        return tuple(_nan_like(r) for r in row)
    return np.full(np.shape(row), np.nan)


def _stacked(rows):
    """The rows of the points stacked on a leading axis (tuples member by
    member)."""
    first = rows[0]
    if isinstance(first, tuple):
        return tuple(_stacked([r[i] for r in rows]) for i in range(len(first)))
    return np.stack([np.asarray(r, dtype=np.complex128 if np.iscomplexobj(r)
                                else np.float64) for r in rows])


def check_method(method, name):
    if method not in METHODS:
        raise ValueError(f"{name}.map: method must be one of "
                         f"{', '.join(METHODS)}, not {method!r}")


def checked_options(name, errors, threads):
    """threads (None: every core), with errors checked."""
    if errors not in ("raise", "nan"):
        raise ValueError(f"{name}.map: errors must be 'raise' or 'nan', "
                         f"not {errors!r}")
    threads = default_threads() if threads is None else threads
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"{name}.map: threads must be a positive int or "
                         f"None, not {threads!r}")
    return threads


def map_recording(rec, args, method, in_axes, threads, errors, first=0):
    """F.map (see the module docstring); first: the number of the batch's
    first point in a larger one (a block of pyautodiff.dask's), which a
    BranchError names the points by."""
    check_method(method, rec.name)
    threads = checked_options(rec.name, errors, threads)
    out, failed, _ = _map(rec, args, method, in_axes, threads)
    if failed and errors == "raise":
        k, what = failed[0]
        raise _branch_error(rec, first + k, what)
    return out


def map_function(function, args, method, in_axes, threads, errors):
    """@ad.function's map: Recorded.map on the recording for the first
    point's arguments; the points where one of its guards flips are then
    computed one by one by the function itself (recorded again there), so
    that every row is f's."""
    name = function.fn.__name__
    check_method(method, name)
    if method.startswith("sparse"):
        raise ValueError(f"{name}.map: {method} is a recording's method: "
                         "map ad.record(f, x0) instead")
    threads = checked_options(name, errors, threads)
    nargs = len(args) - (method in ("hvp", "jvp"))
    axes = axes_of(in_axes, len(args), name)
    first = [a if axis is None else _first_point(a) for a, axis in zip(args[:nargs], axes)]
    rec = function.recording(first)
    out, failed, batch = _map(rec, args, method, in_axes, threads)
    call = function if method == "value" else getattr(function, method)
    for k, _ in failed:
        point = batch.args_at(k)
        if batch.vector is not None:
            point.append(np.array(batch.vector[k]))
        _set_row(out, k, call(*point))
    return out


def _first_point(arg):
    """A batched argument's first point (every leaf's row 0)."""
    values, st = flatten(arg, "map")
    return unflatten(st, [np.asarray(getattr(v, "_d", v), dtype=np.float64)[0]
                          for v in values])


def _set_row(out, k, row):
    if isinstance(out, tuple):
        for o, r in zip(out, row):
            _set_row(o, k, r)
    else:
        out[k] = row.toarray() if hasattr(row, "toarray") else row


def _map(rec, args, method, in_axes, threads):
    """(results, [(point, what flipped)], the batch): the failed points'
    rows NaN."""
    nargs = rec.nargs + (method in ("hvp", "jvp"))     # (the vector: last)
    if len(args) != nargs:
        raise TypeError(f"{rec.name}.map: {method} of the recording takes "
                        f"{nargs} argument{'' if nargs == 1 else 's'}, not {len(args)}")
    axes = axes_of(in_axes, nargs, rec.name)
    batch = _Batch(rec, args[:rec.nargs], axes[:rec.nargs])
    if nargs > rec.nargs:
        vector = np.asarray(args[-1], dtype=np.float64)
        if axes[-1] == 0 and (vector.ndim == 0 or vector.shape[0] != batch.count):
            raise ValueError(f"{rec.name}.map: the vector has {np.shape(vector)[:1]} "
                             f"points on axis 0, the arguments {batch.count}")
        if axes[-1] is None:
            vector = np.broadcast_to(vector, (batch.count,) + vector.shape)
        batch.vector = vector
    native = _native(rec, method)
    if native is not None:
        out, failed = _in_c(rec, batch, native, threads)
    else:
        out, failed = _point_by_point(rec, batch, method)
    return out, failed, batch


def _native(rec, method):
    """What C computes for method (the method's name, "value" the result
    entry's values), or None where it goes point by point."""
    tape = rec.trace.tape
    if tape.externs and any(not _computed(tape, i) for i in tape.externs):
        return None
    if method == "value":
        leaves, st = rec.trace.outputs()
        if st.node is None and rec.trace.entry_of(leaves[0]) is not None:
            return "value"
        return None
    tr = rec.trace
    if not isinstance(tr.argnum, int):
        return None
    plain = tr.structures[tr.argnum].node is None
    if method == "jacobian":
        leaves, st = tr.outputs()
        return method if plain and st.node is None and \
            tr.entry_of(leaves[0]) is not None else None
    if rec._objective is None:
        return None
    if method in ("grad", "value_and_grad") or (method in ("hvp", "hessian") and plain):
        return method
    return None


def _computed(tape, i):
    """Whether extern entry i is computed in C (a small matrix product)."""
    c = tape._c
    return c.aux[i] >= 0 and c.imm[i] == lib.AD_EXTERN_MATMUL


def _in_c(rec, batch, kind, threads):
    tr = rec.trace
    tape = tr.tape
    n = batch.count
    x, shared, batched = batch.rows()
    nx = x.shape[1]
    # the value and the Jacobian are of the result entry
    takes_output = kind in ("value", "jacobian")
    if takes_output:
        out = tr.outputs()[0][0]
        oshape = np.shape(out._d)
        nout = int(np.prod(oshape, dtype=np.int64))
    # the variables: the differentiated argument's leaves (for all but the
    # gradient, _native saw to it that there is one: a float or ndarray)
    variables = [] if kind == "value" else tr.leaves[tr.argnum]
    shape = np.shape(variables[0]._d) if variables else ()
    nv = sum(int(np.prod(np.shape(v._d), dtype=np.int64)) for v in variables)
    width = nv                  # a gradient, a Hessian-vector product
    if kind == "hessian":
        width = nv * nv
    elif kind == "jacobian":
        width = nout * nv
    f = np.empty((n, nout) if kind == "value" else n)
    g = None if kind == "value" else np.empty((n, width))
    v = _for_c(np.reshape(batch.vector, (n, nv))) if kind == "hvp" else None
    flipped = np.full(n, -1, dtype=np.int64)
    m = ffi.new("ad_many *")
    m.plan = rec.plan
    m.nx = nx
    m.mode = {"value": lib.AD_REPLAY_VALUES, "hvp": lib.AD_MANY_HVP,
              "hessian": lib.AD_MANY_HESSIAN,
              "jacobian": lib.AD_MANY_JACOBIAN}.get(kind, lib.AD_REPLAY_GRAD)
    m.nthreads = threads
    if takes_output:
        m.out, m.nout = out._i, nout
    entries = ffi.new("int64_t[]", [node._i for node in variables])
    m.nvar, m.var, m.nv = len(variables), entries, nv
    m.batched = ffi.from_buffer("uint8_t[]", batched) if batched.size else ffi.NULL
    m.shared = ffi.from_buffer("double[]", shared) if shared.size else ffi.NULL
    m.nshared = shared.size
    # the sweeps a point takes, which size the chunks: a tangent and a
    # second-order sweep per LANES columns of a Hessian, a reverse sweep
    # per row of a Jacobian (or a tangent sweep per LANES columns)
    sweeps = 1
    if kind == "hvp":
        sweeps = 3
    elif kind == "hessian":
        sweeps = 1 + 2 * -(-nv // LANES)
    elif kind == "jacobian":
        sweeps = 1 + min(nout, -(-nv // LANES))
    step = max(threads, threads * (_CHUNK_WORK // max(len(tape) * sweeps, 1)))
    with tape.lock:
        tape._check_open()
        tape.flush()
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            m.npoints = hi - lo
            m.x = ffi.from_buffer("double[]", x[lo:hi]) if nx else ffi.NULL
            m.f = ffi.from_buffer("double[]", f[lo:hi])
            m.g = ffi.from_buffer("double[]", g[lo:hi]) if g is not None and g.size \
                else ffi.NULL
            if kind == "hvp":
                m.v = ffi.from_buffer("double[]", v[lo:hi]) if v.size else ffi.NULL
            m.flipped = ffi.from_buffer("int64_t[]", flipped[lo:hi])
            _core.check(lib.ad_replay_many(tape._c, m), tape._c, tape)
    bad = np.flatnonzero(flipped >= 0)
    failed = [(int(k), rec._guard_what[flipped[k]]) for k in bad]
    f[bad] = np.nan
    if g is not None:
        g[bad] = np.nan
    if kind == "value":
        return f.reshape((n,) + oshape), failed
    if kind == "jacobian":
        return g.reshape((n,) + oshape + shape), failed
    if kind == "hvp":
        return g.reshape((n,) + shape), failed
    if kind == "hessian":
        return g.reshape((n,) + shape + shape), failed
    st = tr.structures[tr.argnum]
    grads = unflatten(st, _leaf_rows(st, g, n), conjugate=True) if st.node is not None \
        else g.reshape((n,) + st.shapes[0])
    return (grads if kind == "grad" else (f, grads)), failed


def _leaf_rows(st, g, n):
    out, at = [], 0
    for s in st.shapes:
        size = int(np.prod(s, dtype=np.int64))
        out.append(g[:, at:at + size].reshape((n,) + tuple(s)))
        at += size
    return out


def _branch_error(rec, k, what):
    return BranchError(f"point {k} of the batch: " + rec._flipped_message(what))


def _point_by_point(rec, batch, method):
    fn = rec.__call__ if method == "value" else getattr(rec, method)
    rows, failed = [], []
    for k in range(batch.count):
        point = batch.args_at(k)
        if batch.vector is not None:
            point.append(np.array(batch.vector[k]))
        try:
            rows.append(fn(*point))
        except BranchError as e:
            rows.append(None)
            failed.append((k, str(e)))
    if failed:
        template = next((r for r in rows if r is not None), None)
        if template is None:            # no row to take the shape of
            k, what = failed[0]
            raise BranchError(f"point {k} of the batch (and every other): {what}")
        rows = [_nan_like(template) if r is None else r for r in rows]
    if not rows:
        return np.zeros((0,)), failed
    return _stacked([r.toarray() if hasattr(r, "toarray") else r for r in rows]), failed
