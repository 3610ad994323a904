"""Sparse Jacobians and Hessians: the pattern read off the tape, a
colouring, and one product per colour, up to four colours to a sweep (a
tangent sweep's lanes; csrc/sparsity.c does the pattern, the colouring
and the recovery of the nonzeros).

    ad.jacobian_sparsity(f)(x)   scipy.sparse.csr_array of bools, (f(x).size, x.size)
    ad.hessian_sparsity(f)(x)    (x.size, x.size), symmetric
    ad.sparse_jacobian(f)(x)     csr_array of float64: jacobian(f)(x) as 2-D
    ad.sparse_hessian(f)(x)      csr_array: hessian(f)(x) as 2-D
    F = ad.record(f, x0); F.hessian_sparsity(); F.sparse_hessian(x) ...

A pattern is structural: what can be nonzero wherever the recording's
guards hold (both sides of a maximum or a where, every element of a max
reduction).  A Jacobian takes one forward product per colour of a
distance-2 colouring of its columns, or one reverse sweep per colour of
its rows, whichever are fewer colours; a Hessian one Hessian-vector
product per colour of a star colouring, its nonzeros recovered directly
by symmetry.
A recording computes its pattern and colouring once and keeps them.

scipy is needed for the results only: ``pip install pyautodiff[scipy]``.
"""
import numpy as np

from . import _core
from ._core import ffi, lib
from .functional import _transform
from .matmul import matmul_rule
from .tape_sweeps import DADJ, TAN
from .trace import Trace, lane_batches

_ORDERS = (0, 1)          # natural order, largest degree first: the fewer wins


def _scipy_sparse():
    try:
        import scipy.sparse
    except ImportError:
        raise ImportError("sparse derivatives return scipy.sparse arrays, and "
                          "scipy is not installed: pip install "
                          "pyautodiff[scipy]") from None
    return scipy.sparse


def _check(status, what):
    """A colouring's or recovery's status (they have no tape to hold a
    message)."""
    if status == lib.AD_ENOMEM:
        raise MemoryError(f"out of memory for the {what}")
    if status != lib.AD_OK:
        raise ValueError(f"malformed sparsity pattern for the {what}")


def _buffer(a):
    return ffi.from_buffer("int64_t[]", a) if a.size else ffi.NULL


# -- extern entries ---------------------------------------------------------------

def _extern_specs(tape):
    """(count, ad_extern_sparsity array, arrays to keep alive) for the
    tape's extern entries: a matrix product's exact structure, a custom
    op's own pattern (its rule's sparsity; a bilinear rule's through a
    constant operand's nonzeros), else every output element on every
    operand element."""
    items = sorted(tape.externs.items())
    specs = ffi.new("ad_extern_sparsity[]", max(len(items), 1))
    for s, (entry, rule) in zip(specs, items):
        s.entry = entry
        s.second = lib.AD_XSP_LINEAR if _linear_entry(tape, entry, rule) \
            else lib.AD_XSP_NONLINEAR
        s.kind = lib.AD_XSP_MATMUL if rule is matmul_rule() else lib.AD_XSP_DENSE
    keep, constants = [], _Constants(tape, len(items), specs)
    for s, (entry, rule) in zip(specs, items):
        if rule is not matmul_rule() and getattr(rule, "sparsity", None) is not None:
            ptr, idx = _explicit(tape, entry, rule, constants)
            keep += [ptr, idx]
            s.kind = lib.AD_XSP_EXPLICIT
            s.ptr, s.idx = ffi.from_buffer("int64_t[]", ptr), _buffer(idx)
    return len(items), specs, keep


class _Constants:
    """Which entries are constants, as the C patterns take them (their
    exact zeros no dependence): asked of C once, for the first bilinear
    rule with an operand that is no variable."""

    def __init__(self, tape, count, specs):
        self.tape, self.count, self.specs = tape, count, specs
        self.fixed = None

    def values(self, i):
        """Extern entry i's operands' values where they are constants,
        else None each."""
        c, tape = self.tape._c, self.tape
        out = []
        for j in (c.a[i], c.b[i]):
            if j < 0 or c.flags[j] & lib.AD_FLAG_VARIABLE:
                out.append(None)
                continue
            if self.fixed is None:
                n = len(tape.nodes)
                self.fixed = np.zeros(max(n, 1), np.uint8)
                _core.check(lib.ad_sparsity_constants(
                    c, n, self.count, self.specs,
                    ffi.from_buffer("uint8_t[]", self.fixed)), c, tape)
            out.append(np.asarray(tape.nodes[j]._d) if self.fixed[j] else None)
        return out


def _linear_entry(tape, i, rule):
    """Whether extern entry i has no second partials: a linear rule, or a
    bilinear one (a convolution) of which one operand is a constant."""
    if rule.linear:
        return True
    if not rule.bilinear:
        return False
    c = tape._c
    return not (c.flags[c.a[i]] & c.flags[c.b[i]] & lib.AD_FLAG_VARIABLE)


def _explicit(tape, i, rule, constants):
    """The rule's pattern at entry i: one boolean matrix per operand,
    (output size, operand size), side by side in compressed rows.  A
    bilinear rule's with one operand a constant is also given the
    constant's values (constants=), whose zeros it leaves out."""
    c = tape._c
    operands = [j for j in (c.a[i], c.b[i]) if j >= 0]
    out_shape = np.shape(tape.nodes[i]._d)
    shapes = [np.shape(tape.nodes[j]._d) for j in operands]
    values = constants.values(i) if rule.bilinear else [None, None]
    if sum(v is not None for v in values) == 1:
        parts = rule.sparsity(out_shape, *shapes, constants=values)
    else:
        parts = rule.sparsity(out_shape, *shapes)
    if len(parts) != len(shapes):
        raise ValueError(f"{rule.name}: its sparsity rule gave {len(parts)} "
                         f"patterns for {len(shapes)} operands")
    sp = _scipy_sparse()
    m = int(np.prod(out_shape))
    blocks = []
    for k, (p, shape) in enumerate(zip(parts, shapes)):
        p = sp.csr_array(p, dtype=bool)
        if p.shape != (m, int(np.prod(shape))):
            raise ValueError(f"{rule.name}: its sparsity pattern for operand {k} "
                             f"has shape {p.shape}, not {(m, int(np.prod(shape)))}")
        blocks.append(p)
    whole = sp.hstack(blocks, format="csr") if len(blocks) > 1 else blocks[0]
    whole.sort_indices()
    return (np.ascontiguousarray(whole.indptr, dtype=np.int64),
            np.ascontiguousarray(whole.indices, dtype=np.int64))


# -- patterns ------------------------------------------------------------------------

def _take(ptr, idx, nnz, rows):
    """The C pattern's arrays as NumPy's (copied), the C memory released."""
    try:
        p = np.frombuffer(ffi.buffer(ptr[0], 8 * (rows + 1)), np.int64).copy()
        q = np.frombuffer(ffi.buffer(idx[0], 8 * max(nnz[0], 1)), np.int64)[:nnz[0]].copy()
    finally:
        lib.ad_sparsity_free(ptr[0])
        lib.ad_sparsity_free(idx[0])
    return p, q


_NESTED = {
    "sparse": "{0} inside another derivative or a recording is not "
              "supported: its result, a scipy sparse matrix, carries no "
              "derivatives of its own; use ad.{1} there, or {0} outside it",
    "jacobian_sparsity": "{0} inside another derivative or a recording is not "
                         "supported: a pattern is structural, so compute it "
                         "outside, once",
}
_NESTED["hessian_sparsity"] = _NESTED["jacobian_sparsity"]
_NESTED["sparse_jacobian"] = _NESTED["sparse"].replace("{1}", "jacobian")
_NESTED["sparse_hessian"] = _NESTED["sparse"].replace("{1}", "hessian")


class _Problem:
    """A trace's inputs (the differentiated arguments' leaves: the
    columns) for a pattern."""

    def __init__(self, tr, name):
        if type(tr) is not Trace:
            raise NotImplementedError(_NESTED.get(name, _NESTED["sparse"]).format(name))
        self.tr, self.name = tr, name
        self.nodes, self.kinds, self.shapes = tr._plain_variables(name)
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.ncols = sum(self.sizes)
        self.inputs = np.array([n._i for n in self.nodes], np.int64)
        tr.tape.flush()

    def call(self, fn, *args):
        """fn (a C pattern function) with the inputs and extern specs,
        after args; -> (ptr, idx) with rows rows."""
        tape = self.tr.tape
        nx, specs, keep = _extern_specs(tape)
        ptr, idx, nnz = ffi.new("int64_t **"), ffi.new("int64_t **"), ffi.new("int64_t *")
        with tape.lock:
            _core.check(fn(tape._c, len(self.inputs), _buffer(self.inputs), *args,
                           nx, specs, ptr, idx, nnz), tape._c, tape)
        del keep
        return ptr, idx, nnz

    def split(self, flat):
        """A flat vector over the columns as one seed per input."""
        parts = np.split(flat, np.cumsum(self.sizes)[:-1])
        return [p.reshape(s) for p, s in zip(parts, self.shapes)]

    def tangent_lanes(self, plan, lo, lanes):
        """One tangent sweep along colours lo, ..., lo + lanes - 1 of the
        plan's colouring of the columns: lane l moves the columns of colour
        lo + l (the seeds made once per plan)."""
        seeds = plan.lane_seeds
        if (lo, lanes) not in seeds:
            seeds[lo, lanes] = self.tr.lane_seeds(self.shapes, (
                plan.color[None, :] == np.arange(lo, lo + lanes)[:, None]).astype(np.float64))
        self.tr.tangent_lanes(seeds[lo, lanes], lanes)

    def flat(self, which):
        """The inputs' scratch (DADJ) as one flat vector, to be read at
        once (one input: a view of the tape's scratch, no copy)."""
        parts = [np.reshape(self.tr.scratch_of(n, which, copy=False), -1)
                 for n in self.nodes]
        return parts[0] if len(parts) == 1 else \
            np.concatenate(parts) if parts else np.zeros(0)

    def check_finite(self):
        for node, shape in zip(self.nodes, self.shapes):
            v = np.asarray(self.tr._leaf_value(node), dtype=np.float64)
            if not np.all(np.isfinite(v)):
                k = int(np.flatnonzero(~np.isfinite(np.reshape(v, -1)))[0])
                raise ValueError(f"{self.name}: the argument holds "
                                 f"{np.reshape(v, -1)[k]} at flat index {k}; "
                                 "derivatives there are not numbers")


def _jacobian_pattern(pb):
    """(ptr, idx, nrows, output leaves' entries and sizes) of the Jacobian
    of every leaf of the result, rows in order (a constant's are empty)."""
    tr = pb.tr
    leaves, _ = tr.outputs()
    entries = [tr.entry_of(leaf) for leaf in leaves]
    osizes = [int(np.size(tr._leaf_value(leaf))) for leaf in leaves]
    real = np.array([e for e in entries if e is not None], np.int64)
    rows = sum(m for e, m in zip(entries, osizes) if e is not None)
    ptr, idx, nnz = pb.call(lib.ad_jacobian_sparsity, len(real), _buffer(real))
    p, q = _take(ptr, idx, nnz, rows)
    lengths, k = [], 0
    for e, m in zip(entries, osizes):
        if e is None:
            lengths.append(np.zeros(m, np.int64))
        else:
            lengths.append(np.diff(p[k:k + m + 1]))
            k += m
    counts = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    p = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return p, q, len(counts), entries, osizes, leaves


def _hessian_pattern(pb):
    out, _ = pb.tr.scalar_output(f"{pb.name} needs a function with a scalar output")
    if out is None:
        return np.zeros(pb.ncols + 1, np.int64), np.zeros(0, np.int64), out
    ptr, idx, nnz = pb.call(lib.ad_hessian_sparsity, out)
    p, q = _take(ptr, idx, nnz, pb.ncols)
    return p, q, out


def _csr(p, q, shape, data=None):
    sp = _scipy_sparse()
    if data is None:
        data = np.ones(len(q), dtype=bool)
    return sp.csr_array((data, q.copy(), p.copy()), shape=shape)


# -- colourings ----------------------------------------------------------------------

def _pattern_arrays(p, q, nrows, what):
    """p and q as the C code reads them: int64, contiguous, p of nrows + 1
    offsets into q (the C side checks their order and range)."""
    p = np.ascontiguousarray(p, dtype=np.int64)
    q = np.ascontiguousarray(q, dtype=np.int64)
    if p.ndim != 1 or q.ndim != 1 or len(p) != nrows + 1 or not 0 <= p[-1] <= len(q):
        raise ValueError(f"malformed sparsity pattern for the {what}")
    return p, q


def color_columns(p, q, nrows, ncols):
    """(colours, count): columns sharing a row differ (the fewer of the
    natural and the largest-first order's)."""
    p, q = _pattern_arrays(p, q, nrows, "column colouring")
    # no colouring has fewer colours than a row has nonzeros
    return _fewest(lambda order, color, n: lib.ad_color_columns(
        nrows, ncols, ffi.from_buffer("int64_t[]", p), _buffer(q), order,
        _buffer(color), n), ncols, lambda: int(np.diff(p).max(initial=0)),
        "column colouring")


def color_star(p, q, n):
    """(colours, count): a star colouring of the symmetric pattern."""
    p, q = _pattern_arrays(p, q, n, "star colouring")
    return _fewest(lambda order, color, k: lib.ad_color_star(
        n, ffi.from_buffer("int64_t[]", p), _buffer(q), order, _buffer(color), k),
        n, lambda: _star_bound(p, q, n), "star colouring")


def _star_bound(p, q, n):
    """Fewest colours a star colouring can have: 1 without edges, 2 with,
    3 where an edge b-c has another neighbour a of b and d of c (a path
    a-b-c-d, which must not have two colours, or a triangle)."""
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(p))
    off = rows != q
    if not off.any():
        return 1
    degree = np.bincount(rows[off], minlength=n)
    return 3 if ((degree[rows[off]] >= 2) & (degree[q[off]] >= 2)).any() else 2


def _fewest(colour, n, bound, what):
    """The fewer colours of the orders', the next order tried only while
    the best so far is above bound() (a lower bound: nothing beats it;
    asked after the first colouring, which checks the pattern)."""
    best = None
    for order in _ORDERS:
        color, k = np.empty(n, np.int64), ffi.new("int64_t *")
        _check(colour(order, color, k), what)
        if best is None or k[0] < best[1]:
            best = color, k[0]
        if best[1] <= bound():
            break
    return best


def _transpose(p, q, nrows, ncols):
    t = _csr(p, q, (nrows, ncols)).T.tocsr()
    t.sort_indices()
    return t.indptr.astype(np.int64), t.indices.astype(np.int64)


# -- the plans: pattern and colouring, then one sweep per colour -----------------------

class _Plan:
    """A pattern (ptr, idx: CSR of shape) and the evaluation of its
    nonzeros (values, in the pattern's order, by the subclass)."""

    def pattern(self):
        return _csr(self.ptr, self.idx, self.shape)

    def matrix(self, data):
        """The nonzeros data as a csr_array of the pattern."""
        return _csr(self.ptr, self.idx, self.shape, data)

    def evaluate(self, pb, *how):
        """The derivative at the trace's point, as a csr_array."""
        return self.matrix(self.values(pb, *how))


class JacobianPlan(_Plan):
    """A trace's Jacobian pattern and colouring, and its evaluation."""

    def __init__(self, pb):
        self.name = pb.name
        (self.ptr, self.idx, self.nrows, self.entries, self.osizes,
         _) = _jacobian_pattern(pb)
        self.ncols = pb.ncols
        self.shape = (self.nrows, self.ncols)
        cols = color_columns(self.ptr, self.idx, self.nrows, self.ncols)
        tp, tq = _transpose(self.ptr, self.idx, self.nrows, self.ncols)
        rows = color_columns(tp, tq, self.ncols, self.nrows)
        self.by_rows = rows[1] < cols[1]
        self.color, self.ncolors = rows if self.by_rows else cols
        self.lane_seeds = {}        # (first colour, lanes) -> tangent seeds

    def values(self, pb):
        """The nonzeros at the trace's point, in the pattern's order."""
        pb.check_finite()
        tr, k = pb.tr, self.ncolors
        leaves, _ = tr.outputs()
        if self.by_rows:
            B = np.zeros((self.ncols, k))
            offsets = np.cumsum([0] + self.osizes)
            for c in range(k):
                idx, seeds = [], []
                for e, leaf, lo, m in zip(self.entries, leaves, offsets, self.osizes):
                    if e is None:
                        continue
                    seed = (self.color[lo:lo + m] == c).astype(np.float64)
                    shape = np.shape(tr._leaf_value(leaf))
                    idx.append(e)
                    seeds.append(seed.reshape(shape) if shape else float(seed[0]))
                if idx and self.ncols:
                    grads = tr.sweep(idx, seeds)
                    B[:, c] = np.concatenate([np.reshape(g, -1) for g in grads])
        else:
            B = np.zeros((self.nrows, k))
            if self.nrows and any(e is not None for e in self.entries):
                for lo, lanes in lane_batches(k):
                    pb.tangent_lanes(self, lo, lanes)
                    tr.lane_columns(B, lo, lanes, lambda: np.concatenate(
                        [np.zeros(m) if e is None else
                         np.reshape(tr.scratch_of(leaf, TAN), -1)
                         for e, leaf, m in zip(self.entries, leaves, self.osizes)]))
        data = np.empty(len(self.idx))
        _check(lib.ad_recover_jacobian(
            self.nrows, ffi.from_buffer("int64_t[]", self.ptr), _buffer(self.idx),
            _buffer(self.color), k, int(self.by_rows),
            ffi.from_buffer("double[]", B) if B.size else ffi.NULL,
            ffi.from_buffer("double[]", data) if data.size else ffi.NULL),
            "Jacobian's recovery")
        return data


class HessianPlan(_Plan):
    """A trace's Hessian pattern and star colouring, and its evaluation."""

    def __init__(self, pb):
        self.name = pb.name
        self.ptr, self.idx, self.out = _hessian_pattern(pb)
        self.n = pb.ncols
        self.shape = (self.n, self.n)
        self.color, self.ncolors = color_star(self.ptr, self.idx, self.n)
        self.lane_seeds = {}        # (first colour, lanes) -> tangent seeds

    def values(self, pb, hvp=None):
        """The nonzeros at the trace's point, in the pattern's order;
        hvp(seeds) -> H s flat, where given, instead of the trace's own
        sweeps (ops whose rules are of first order: the product
        differentiates their vjp)."""
        pb.check_finite()
        tr, k = pb.tr, self.ncolors
        missing = sorted({rule.name for rule in tr.tape.externs.values()
                          if not rule.second_order})
        if missing and self.out is not None and hvp is None:
            raise NotImplementedError(
                f"{self.name}: the op{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)} ha{'ve' if len(missing) > 1 else 's'} "
                "first-order rules only; a Hessian-vector product through it "
                "in one sweep needs second-order rules (ad.sparse_hessian(f) "
                "differentiates its vjp instead)")
        B = np.zeros((self.n, k))
        if self.out is not None and hvp is None:
            for lo, lanes in lane_batches(k):
                pb.tangent_lanes(self, lo, lanes)
                tr.tape.second_order([self.out], [1.0])
                tr.lane_columns(B, lo, lanes, lambda: pb.flat(DADJ))
        elif self.out is not None:
            for c in range(k):
                B[:, c] = hvp(pb.split((self.color == c).astype(np.float64)))
        data = np.empty(len(self.idx))
        _check(lib.ad_recover_hessian(
            self.n, ffi.from_buffer("int64_t[]", self.ptr), _buffer(self.idx),
            _buffer(self.color), k,
            ffi.from_buffer("double[]", B) if B.size else ffi.NULL,
            ffi.from_buffer("double[]", data) if data.size else ffi.NULL),
            "Hessian's recovery")
        return data


_PLANS = {"jacobian": JacobianPlan, "hessian": HessianPlan}


# -- the functional API ---------------------------------------------------------------

def _functional(kind, name, evaluate):
    def derivative(tr):
        _scipy_sparse()
        pb = _Problem(tr, name)
        plan = _PLANS[kind](pb)
        return plan.evaluate(pb) if evaluate else plan.pattern()
    return derivative


def jacobian_sparsity(f, argnum=0):
    """g(*args) -> the Jacobian's structural pattern: a scipy csr_array of
    bools, (f's output size, the argument's size)."""
    return _transform(f, argnum, "jacobian_sparsity",
                      _functional("jacobian", "jacobian_sparsity", False))


def hessian_sparsity(f, argnum=0):
    """g(*args) -> the Hessian's structural pattern of scalar f:
    symmetric, (size, size)."""
    return _transform(f, argnum, "hessian_sparsity",
                      _functional("hessian", "hessian_sparsity", False))


def sparse_jacobian(f, argnum=0):
    """g(*args) -> jacobian(f)(*args) as a 2-D scipy csr_array, from one
    sweep per colour of its pattern."""
    return _transform(f, argnum, "sparse_jacobian",
                      _functional("jacobian", "sparse_jacobian", True))


def sparse_hessian(f, argnum=0):
    """g(*args) -> hessian(f)(*args) as a 2-D scipy csr_array, from one
    Hessian-vector product per colour of a star colouring."""
    def nested(*args, **kwargs):
        # ops with first-order rules only: the pattern and colouring from
        # a trace, each product H s from ad.hvp, which differentiates
        # their vjps
        from .functional import hvp
        tr = Trace(f, args, kwargs, argnum, "sparse_hessian")
        try:
            pb = _Problem(tr, "sparse_hessian")
            plan = HessianPlan(pb)
            product = hvp(f, argnum)

            def column(seeds):
                kinds = [float(v) if kind == "float" else v
                         for v, kind in zip(seeds, pb.kinds)]
                vector = kinds[0] if isinstance(argnum, int) else tuple(kinds)
                parts = product(*args, vector, **kwargs)
                parts = [parts] if isinstance(argnum, int) else list(parts)
                return np.concatenate([np.reshape(p, -1) for p in parts])
            return plan.evaluate(pb, column)
        finally:
            tr.release()
    return _transform(f, argnum, "sparse_hessian",
                      _functional("hessian", "sparse_hessian", True), nested=nested)


# -- recordings: the plan made once -----------------------------------------------------

def _recorded(rec, kind, name):
    """rec's plan of kind and the problem it was made on (the recording's
    inputs do not change), made on first use and kept."""
    _scipy_sparse()
    plans = rec.__dict__.setdefault("_sparse_plans", {})
    if kind not in plans:
        pb = _Problem(rec.trace, name)
        plans[kind] = _PLANS[kind](pb), pb
    return plans[kind]


def recorded_plan(rec, kind, name):
    return _recorded(rec, kind, name)[0]


def recorded_pattern(rec, kind, name):
    return recorded_plan(rec, kind, name).pattern()


def recorded_values(rec, kind, name):
    """(plan, its nonzeros) at the point rec was replayed at last (by the
    caller), in the order of the plan's pattern: for a solver that takes
    them as they are, with no sparse matrix made per evaluation."""
    plan, pb = _recorded(rec, kind, name)
    rec.trace.tape.flush()
    return plan, plan.values(pb)


def recorded_evaluate(rec, kind, name, args):
    """The plan's values at args (rec replayed there by the caller)."""
    plan, data = recorded_values(rec, kind, name)
    return plan.matrix(data)
