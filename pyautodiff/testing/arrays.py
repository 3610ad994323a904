"""Forward-mode dual arrays: a NumPy reference for array programs that shares
no code with the tape (used by ``python -m pyautodiff.testing.fuzz --kind arrays``).

A ``DualArray`` holds a value ``v``, computed by NumPy, and the tangents
``d`` of that value with respect to every input element at once: ``d`` has
shape ``(K,) + v.shape`` where K counts the elements of all inputs, so one
forward pass gives the whole Jacobian, and a gradient is that Jacobian
contracted with the output's seed.  The elementwise ops are the oracle
table's rows (rules.py, ``Reference.apply``) with NumPy's broadcasting; the
reductions (prod among them), reshapes, indexing, joins, matrix products
and logsumexp are written here, each from its math (d(a @ b) = da @ b + a @ db, ...), never
from the tape's rules.

Where an op is not differentiable the reference follows the conventions the
tape documents (relu'(0) = 0, sign(0) = 0, ties of maximum and of max
reductions share the gradient evenly), so exact ties -- a node compared with
itself -- are checked too.  Operands that come *near* a kink without sitting
on it set ``near_kink``: there rounding alone can pick the other side.
"""
import functools

import numpy as np

try:
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:          # NumPy < 2
    from numpy.core.numeric import normalize_axis_tuple


from .rules import RULES, UNARY

# a comparison's symbol -> NumPy's function (the fuzzer's spellings)
COMPARISONS = {"<": np.less, "<=": np.less_equal, ">": np.greater,
               ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal}
# ... and the table's row of it, with the operands swapped or not
_COMPARISON_ROWS = {"<": ("lt", False), "<=": ("le", False), ">": ("lt", True),
                    ">=": ("le", True), "==": ("eq", False), "!=": ("ne", False)}


class DualArray:
    """v: the value (an ndarray); d: its tangents, shape (K,) + v.shape, or
    None for a constant (all tangents zero)."""

    __slots__ = ("v", "d")

    def __init__(self, v, d):
        self.v = v
        self.d = d

    def __repr__(self):
        return f"DualArray({self.v!r})"


def _axes(axis, ndim):
    """NumPy's reduction axes as a sorted tuple (a 0-d array takes 0 or -1)."""
    if axis is None:
        return tuple(range(ndim))
    if ndim == 0 and axis in (0, -1, (0,), (-1,)):
        return ()
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))


def _magnitude(values):
    """The scale of a kink's operands: their largest magnitude elementwise
    (broadcast)."""
    return functools.reduce(np.maximum, [np.abs(x) for x in values])


def _squeeze_axes(x, axes):
    return x.reshape(tuple(n for k, n in enumerate(x.shape) if k not in axes))


class Reference:
    """Array ops on DualArrays with k tangents each (k None: values only):
    every row of the oracle table (``apply``), and the array functions the
    fuzzer's programs use.  Plain numbers and ndarrays are constants
    wherever an operand goes."""

    def __init__(self, k, kink_tol=1e-7):
        self.k = k
        self.kink_tol = kink_tol
        self.near_kink = False
        self.on_kink = False      # an operand exactly on a kink (a tie, relu(0))

    # -- inputs and constants ------------------------------------------------

    def variable(self, data, offset, kind="array"):
        """An input whose elements are tangent directions offset, offset+1,
        ... (a Value, kind "value", is a 0-d input)."""
        v = np.array(data, dtype=np.float64)
        if self.k is None:
            return DualArray(v, None)
        d = np.zeros((self.k, v.size))
        d[offset:offset + v.size] = np.eye(v.size)
        return DualArray(v, d.reshape((self.k,) + v.shape))

    def lift(self, x):
        if isinstance(x, DualArray):
            return x
        return DualArray(np.asarray(x, dtype=np.float64), None)

    def _tangent(self, x, ndim):
        """x's tangents with x's shape right-aligned in ndim dims (broadcast
        as NumPy broadcasts x's value), or None for a constant."""
        if x.d is None:
            return None
        return x.d.reshape((self.k,) + (1,) * (ndim - x.v.ndim) + x.v.shape)

    def _combine(self, v, terms):
        """The DualArray of value v whose tangent is sum(partial * dx) over
        terms (partial, x): the chain rule for an elementwise op."""
        v = np.asarray(v, dtype=np.float64)
        d = None
        for partial, x in terms:
            t = self._tangent(x, v.ndim)
            if t is None:
                continue
            part = np.asarray(partial, dtype=np.float64) * t
            d = part if d is None else d + part
        if d is not None:
            d = np.array(np.broadcast_to(d, (self.k,) + v.shape))
        return DualArray(v, d)

    def _watch(self, gap, scale):
        """A kink argument: rounding may cross it where 0 < |gap| is small."""
        gap = np.abs(gap)
        if np.any((gap > 0) & (gap < self.kink_tol * np.maximum(1.0, np.abs(scale)))):
            self.near_kink = True
        if np.any(gap == 0):
            self.on_kink = True

    # -- elementwise ops: the oracle table's rows -------------------------------

    def apply(self, name, *operands):
        """The elementwise op `name` of the table (rules.py) on operands
        broadcast as NumPy broadcasts them: its value, and the chain rule
        over the operands that carry tangents.  Where the op has a kink,
        the distance of the operands to it is watched."""
        rule = RULES[name]
        xs = [self.lift(x) for x in operands]
        vals = [x.v for x in xs]
        if rule.kink is not None:
            self._watch(rule.kink(*vals), _magnitude(vals))
        v = np.asarray(rule.value(*vals), dtype=np.float64)
        return self._combine(v, [(d(*vals, v), x) for d, x in zip(rule.d, xs)
                                 if x.d is not None])

    def add(self, a, b):
        return self.apply("add", a, b)

    def sub(self, a, b):
        return self.apply("sub", a, b)

    def mul(self, a, b):
        return self.apply("mul", a, b)

    def div(self, a, b):
        return self.apply("div", a, b)

    def pow(self, a, b):
        return self.apply("pow", a, b)

    def maximum(self, a, b):
        return self.apply("maximum", a, b)

    def minimum(self, a, b):
        return self.apply("minimum", a, b)

    def arctan2(self, a, b):
        return self.apply("arctan2", a, b)

    def hypot(self, a, b):
        return self.apply("hypot", a, b)

    def logaddexp(self, a, b):
        return self.apply("logaddexp", a, b)

    # -- composites of the rows ----------------------------------------------------

    def clip(self, a, lo, hi):
        """np.clip's value; its derivative is that of minimum(maximum(a, lo), hi)."""
        a = self.lift(a)
        out = a
        if lo is not None:
            out = self.maximum(out, lo)
        if hi is not None:
            out = self.minimum(out, hi)
        lo_v = None if lo is None else self.lift(lo).v
        hi_v = None if hi is None else self.lift(hi).v
        return DualArray(np.asarray(np.clip(a.v, lo_v, hi_v), dtype=np.float64), out.d)

    def where(self, mask, a, b):
        """a where mask holds, b elsewhere: select(a, mask) + select(b, ~mask)."""
        mask = np.asarray(mask, dtype=bool)
        return self.add(self.apply("select", a, mask), self.apply("select", b, ~mask))

    def select(self, cmp, a, b):
        """where(a CMP b, a, b); the choice flips where a meets b (a kink)."""
        a, b = self.lift(a), self.lift(b)
        self._watch(a.v - b.v, np.maximum(np.abs(a.v), np.abs(b.v)))
        if np.any(a.v == b.v):
            # no tie convention here: the engine's own rounding of a and b
            # (a matrix product by another BLAS path) picks the side
            self.near_kink = True
        name, swapped = _COMPARISON_ROWS[cmp]
        x, y = (b, a) if swapped else (a, b)
        mask = RULES[name].value(x.v, y.v) != 0
        return self.where(mask, a, b)

    # -- reductions ------------------------------------------------------------------

    def _linear_reduce(self, a, axis, keepdims, fn):
        """sum or mean: linear, so the tangents reduce as the values do."""
        a = self.lift(a)
        axes = _axes(axis, a.v.ndim)
        v = fn(a.v, axis=axis, keepdims=keepdims)
        d = None if a.d is None else \
            fn(a.d, axis=tuple(x + 1 for x in axes), keepdims=keepdims)
        return DualArray(np.asarray(v, dtype=np.float64), d)

    def sum(self, a, axis=None, keepdims=False):
        return self._linear_reduce(a, axis, keepdims, np.sum)

    def mean(self, a, axis=None, keepdims=False):
        return self._linear_reduce(a, axis, keepdims, np.mean)

    def _extreme(self, a, axis, keepdims, fn):
        """max or min: the tangents of the winners, averaged over ties."""
        a = self.lift(a)
        axes = _axes(axis, a.v.ndim)
        kept = fn(a.v, axis=axes, keepdims=True)
        self._watch(a.v - kept, kept)
        v = kept if keepdims else _squeeze_axes(kept, axes)
        d = None
        if a.d is not None:
            wins = a.v == kept
            shifted = tuple(x + 1 for x in axes)
            d = np.sum(a.d * wins, axis=shifted, keepdims=True) / \
                np.sum(wins, axis=axes, keepdims=True)
            if not keepdims:
                d = _squeeze_axes(d, shifted)
        return DualArray(v, d)

    def max(self, a, axis=None, keepdims=False):
        return self._extreme(a, axis, keepdims, np.max)

    def prod(self, a, axis=None, keepdims=False):
        """d prod(a) = sum over the group of (the product of the others) da:
        each element's product of the others is the product of its group
        with that element replaced by 1 (no division, so exact at zeros)."""
        a = self.lift(a)
        axes = _axes(axis, a.v.ndim)
        v = np.asarray(np.prod(a.v, axis=axes, keepdims=keepdims), dtype=np.float64)
        if a.d is None:
            return DualArray(v, None)
        ends = tuple(range(a.v.ndim - len(axes), a.v.ndim))
        moved = np.moveaxis(a.v, axes, ends)
        rows = moved.reshape(moved.shape[:a.v.ndim - len(axes)] + (1, -1))
        m = rows.shape[-1]
        others = np.prod(np.where(np.eye(m, dtype=bool), 1.0, rows), axis=-1)
        others = np.moveaxis(others.reshape(moved.shape), ends, axes)
        d = np.sum(others * a.d, axis=tuple(x + 1 for x in axes), keepdims=keepdims)
        return DualArray(v, d)

    def min(self, a, axis=None, keepdims=False):
        return self._extreme(a, axis, keepdims, np.min)

    # -- the same elements in another arrangement ---------------------------------

    def _rearranged(self, a, v):
        """v holds a's elements in C order, in another shape."""
        d = None if a.d is None else a.d.reshape((self.k,) + v.shape)
        return DualArray(v, d)

    def reshape(self, a, shape):
        a = self.lift(a)
        return self._rearranged(a, np.reshape(a.v, shape))

    def expand_dims(self, a, axis):
        a = self.lift(a)
        return self._rearranged(a, np.expand_dims(a.v, axis))

    def squeeze(self, a, axis=None):
        a = self.lift(a)
        return self._rearranged(a, np.squeeze(a.v, axis))

    def transpose(self, a, axes=None):
        a = self.lift(a)
        v = np.transpose(a.v, axes)
        order = range(a.v.ndim - 1, -1, -1) if axes is None else \
            [x % a.v.ndim for x in axes]
        d = None if a.d is None else a.d.transpose([0] + [x + 1 for x in order])
        return DualArray(v, d)

    def index(self, a, index):
        """a[index]: indexing is linear, so the tangents are indexed alike
        (with the tangent axis moved last, out of the index's way)."""
        a = self.lift(a)
        v = np.array(a.v[index], dtype=np.float64)
        if a.d is None:
            return DualArray(v, None)
        full = _explicit(index, a.v.ndim) + (slice(None),)
        d = np.moveaxis(np.moveaxis(a.d, 0, -1)[full], -1, 0)
        return DualArray(v, np.ascontiguousarray(d).reshape((self.k,) + v.shape))

    def concatenate(self, arrays, axis=0):
        arrays = [self.lift(x) for x in arrays]
        v = np.concatenate([x.v for x in arrays], axis=axis)
        return DualArray(v, self._joined(arrays, lambda ds: np.concatenate(
            ds, axis=normalize_axis_tuple(axis, v.ndim)[0] + 1)))

    def stack(self, arrays, axis=0):
        arrays = [self.lift(x) for x in arrays]
        v = np.stack([x.v for x in arrays], axis=axis)
        return DualArray(v, self._joined(arrays, lambda ds: np.stack(
            ds, axis=normalize_axis_tuple(axis, v.ndim)[0] + 1)))

    def _joined(self, arrays, join):
        if all(x.d is None for x in arrays):
            return None
        return join([np.zeros((self.k,) + x.v.shape) if x.d is None else x.d
                     for x in arrays])

    # -- products and normalizations ------------------------------------------------

    def matmul(self, a, b):
        """d(a @ b) = da @ b + a @ db, with NumPy's promotion of 1-D operands
        to matrices done by hand."""
        a, b = self.lift(a), self.lift(b)
        v = np.asarray(np.matmul(a.v, b.v), dtype=np.float64)
        a2 = a.v[np.newaxis, :] if a.v.ndim == 1 else a.v
        b2 = b.v[:, np.newaxis] if b.v.ndim == 1 else b.v
        nd = max(a2.ndim, b2.ndim)
        d = None
        if a.d is not None:
            da = a.d.reshape((self.k,) + (1,) * (nd - a2.ndim) + a2.shape)
            d = np.matmul(da, b2)
        if b.d is not None:
            db = b.d.reshape((self.k,) + (1,) * (nd - b2.ndim) + b2.shape)
            part = np.matmul(a2, db)
            d = part if d is None else d + part
        if d is not None:
            d = d.reshape((self.k,) + v.shape)
        return DualArray(v, d)

    def _logsumexp_kept(self, a, axes):
        shift = np.max(a.v, axis=axes, keepdims=True)
        e = np.exp(a.v - shift)
        lse = np.log(np.sum(e, axis=axes, keepdims=True)) + shift
        return lse, np.exp(a.v - lse)          # the softmax: d lse / d a

    def _expected_tangent(self, a, s, axes):
        """sum(s * da) over axes, kept: the tangent of logsumexp."""
        return np.sum(self._tangent(a, a.v.ndim) * s, axis=tuple(x + 1 for x in axes),
                      keepdims=True)

    def logsumexp(self, a, axis=None, keepdims=False):
        a = self.lift(a)
        axes = _axes(axis, a.v.ndim)
        lse, s = self._logsumexp_kept(a, axes)
        d = None if a.d is None else self._expected_tangent(a, s, axes)
        if not keepdims:
            lse = _squeeze_axes(lse, axes)
            d = None if d is None else _squeeze_axes(d, tuple(x + 1 for x in axes))
        return DualArray(lse, d)

    def softmax(self, a, axis=-1):
        a = self.lift(a)
        axes = _axes(axis, a.v.ndim)
        _, s = self._logsumexp_kept(a, axes)
        d = None if a.d is None else s * (a.d - self._expected_tangent(a, s, axes))
        return DualArray(s, d)

    def log_softmax(self, a, axis=-1):
        a = self.lift(a)
        axes = _axes(axis, a.v.ndim)
        lse, s = self._logsumexp_kept(a, axes)
        d = None if a.d is None else a.d - self._expected_tangent(a, s, axes)
        return DualArray(a.v - lse, d)




def _install_unary(cls):
    """A method of cls for every unary row of the oracle table (neg, tanh,
    log1p ...), each the row applied elementwise."""
    for name in UNARY:
        def method(self, a, name=name):
            return self.apply(name, a)
        method.__name__ = name
        setattr(cls, name, method)


_install_unary(Reference)

def _explicit(index, ndim):
    """index as a tuple with its Ellipsis spelled out as slices, so that
    appending one more slice addresses the axis after the last one."""
    if not isinstance(index, tuple):
        index = (index,)
    used = sum(np.ndim(i) if isinstance(i, np.ndarray) and i.dtype == bool else
               0 if i is None or i is Ellipsis else 1 for i in index)
    out = []
    for i in index:
        if i is Ellipsis:
            out += [slice(None)] * (ndim - used)
        else:
            out.append(i)
    if not any(i is Ellipsis for i in index):
        out += [slice(None)] * (ndim - used)
    return tuple(out)
