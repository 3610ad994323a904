"""NumPy's reductions, scans and sorts on Arrays: ``np.sum(a, where=m)``,
``np.median(a, axis=0)``, ``np.cumprod(a)``, ``np.diff(a, 2)``,
``np.gradient(a)``, ``np.sort(a)``, ``np.partition(a, 2)``,
``np.nanmean(a)``, ``np.add.reduce(a)`` ...

Each is composed of operations every order of derivative already knows
(the reductions, elementwise ops, ``where``, the layouts of numpy_shapes,
prod's extern entry with its nested rules), so each is right at every
order.  NumPy itself runs first on the values wherever it is cheap: its
checks raise its own errors, its warnings (an empty slice) are its own.

A sort or a partition is a gather by NumPy's own permutation
(``np.argsort``, ``np.argpartition``), so the gradient follows the
permutation.  Inside ad.record the permutation is a decision on the
values: its guards are masks recorded on the sorted result (each element
no less than the one before it; for a partition, the elements before and
after each kth against it; and where the NaNs are), which hold at a new
input exactly while the recorded permutation still sorts it.
"""

import numpy as np

from . import array as _array
from .array import Array, _asarray, _constant_result, _holds_traced, _plain, \
    normalize_axis_tuple
from .guards import decide, takes_guards
from .numpy_elementwise import _public
from .numpy_shapes import layout
from .reductions import logsumexp, prod as _prod

_NO = np._NoValue


def _given(x):
    return x is not _NO


def _no_out(name, out):
    if out is not None:
        raise TypeError(f"numpy.{name} writes into an ndarray (out=...): in-place "
                        "NumPy operations cannot record a derivative; use the "
                        "result it returns")


def _float_only(name, dtype):
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise TypeError(f"numpy.{name}(dtype={np.dtype(dtype).name}): an Array "
                        "holds float64; only a float dtype keeps a derivative")


def _axes(axis, ndim):
    return tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)


def _at(axis, lo, hi):
    """The index of [..., lo:hi, ...], the slice on axis."""
    return (slice(None),) * axis + (slice(lo, hi),)


def _along(a, axis, lo, hi):
    """a[..., lo:hi, ...] (of an Array: a strided gather)."""
    return a[_at(axis, lo, hi)]


# -- where= and initial= of NumPy's reductions ---------------------------------

def _plain_where(where):
    """where= as a bool array for NumPy's own check (a mask's values)."""
    return np.asarray(_plain(where)).astype(bool) if isinstance(where, Array) \
        else where


def _check(np_fn, a, **kwargs):
    """NumPy's result on a's values (its errors, its warnings, its shape),
    with the keywords NumPy was given and traced where= as bools."""
    kwargs = {k: _plain_where(v) if k == "where" else _plain(v)
              for k, v in kwargs.items() if _given(v)}
    return np_fn(a._d, **kwargs)


def _masked(a, where, fill):
    """a where `where` holds (a bool array, or a mask: a comparison of
    Arrays, recorded, so a replay recomputes it), fill elsewhere."""
    if isinstance(where, Array) and not _array.is_mask(where):
        raise TypeError("where= of an Array that is not a mask (a comparison's "
                        "result): pass a comparison or a bool array")
    return _array.where(where, a, fill)


def _count(a, where, axis, keepdims):
    """How many elements where= selects in each reduced slice (recorded
    for a mask, so a replay recomputes it; no gradient)."""
    if isinstance(where, Array):
        return _array.where(where, np.ones(a.shape), 0.0).sum(axis=axis, keepdims=keepdims)
    return np.sum(np.broadcast_to(where, a.shape), axis=axis, keepdims=keepdims,
                  dtype=np.float64)


def _keep(keepdims):
    return bool(keepdims) if _given(keepdims) else False


def sum_(a, axis=None, dtype=None, out=None, keepdims=_NO, initial=_NO, where=_NO):
    _no_out("sum", out)
    _float_only("sum", dtype)
    a = _asarray(a)
    if _given(where) or _given(initial):
        _check(np.sum, a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    if _given(where):
        a = _masked(a, where, 0.0)
    result = a.sum(axis=axis, keepdims=_keep(keepdims))
    return result + initial if _given(initial) else result


def prod(a, axis=None, dtype=None, out=None, keepdims=_NO, initial=_NO, where=_NO):
    _no_out("prod", out)
    _float_only("prod", dtype)
    a = _asarray(a)
    if _given(where) or _given(initial):
        _check(np.prod, a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    if _given(where):
        a = _masked(a, where, 1.0)
    result = _prod(a, axis, _keep(keepdims))
    return result * initial if _given(initial) else result


def mean(a, axis=None, dtype=None, out=None, keepdims=_NO, *, where=_NO):
    _no_out("mean", out)
    _float_only("mean", dtype)
    a = _asarray(a)
    if not _given(where):
        return a.mean(axis=axis, keepdims=_keep(keepdims))
    _check(np.mean, a, axis=axis, keepdims=keepdims, where=where)  # (its warning)
    return _masked_mean(a, where, axis, _keep(keepdims))


def _masked_mean(a, where, axis, keepdims):
    """The mean of the elements where= selects: NaN for a slice with none
    (NumPy's), with no gradient there."""
    total = _masked(a, where, 0.0).sum(axis=axis, keepdims=keepdims)
    count = _count(a, where, axis, keepdims)
    if isinstance(count, Array):        # recorded: a replay recomputes it
        empty = count == 0.0
        return _array.where(empty, np.nan, total / _array.where(empty, 1.0, count))
    empty = count == 0.0
    if not empty.any():
        return total / count
    return _array.where(empty, np.nan, total / np.where(empty, 1.0, count))


def _variance(name, a, axis, dtype, out, ddof, keepdims, where, mean, correction):
    _no_out(name, out)
    _float_only(name, dtype)
    if _given(mean):
        raise TypeError(f"numpy.{name}(mean=...) of traced values is not supported: "
                        "pyautodiff computes the mean itself")
    if _given(correction):
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    a = _asarray(a)
    keepdims = _keep(keepdims)
    if not _given(where):
        return _array.Array.var(a, axis=axis, ddof=ddof, keepdims=keepdims)
    _check(np.var, a, axis=axis, ddof=ddof, keepdims=keepdims, where=where)
    m = _masked_mean(a, where, axis, True)
    d = _masked(a - m, where, 0.0)
    count = _count(a, where, axis, keepdims) - ddof
    dof = _array.maximum(count, 0.0) if isinstance(count, Array) else np.maximum(count, 0.0)
    return (d * d).sum(axis=axis, keepdims=keepdims) / dof


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NO, *, where=_NO,
        mean=_NO, correction=_NO):
    with np.errstate(divide="ignore", invalid="ignore"):    # (NumPy warned)
        return _variance("var", a, axis, dtype, out, ddof, keepdims, where, mean, correction)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NO, *, where=_NO,
        mean=_NO, correction=_NO):
    with np.errstate(divide="ignore", invalid="ignore"):
        return _variance("std", a, axis, dtype, out, ddof, keepdims, where, mean,
                         correction).sqrt()


def _extremum(name):
    method = name[-3:]      # max, min (of amax, amin too)
    pick = _array.maximum if method == "max" else _array.minimum

    def extremum(a, axis=None, out=None, keepdims=_NO, initial=_NO, where=_NO):
        _no_out(name, out)
        a = _asarray(a)
        keepdims = _keep(keepdims)
        if not (_given(where) or _given(initial)):
            return getattr(a, method)(axis=axis, keepdims=keepdims)
        expected = _check(getattr(np, method), a, axis=axis, keepdims=keepdims,
                          initial=initial, where=where)
        if any(a.shape[d] == 0 for d in _axes(axis, a.ndim)):
            return _constant_result(expected)       # initial, as NumPy's
        if _given(where):
            a = _masked(a, where, initial)
        result = getattr(a, method)(axis=axis, keepdims=keepdims)
        return pick(result, initial)
    extremum.__name__ = name
    return extremum


# -- reductions NumPy has and Array has not -------------------------------------

def ptp(a, axis=None, out=None, keepdims=_NO):
    """max - min over axis (NumPy's): the gradient +1 at the max, -1 at the
    min, shared evenly between ties as max's and min's are."""
    _no_out("ptp", out)
    a = _asarray(a)
    keepdims = _keep(keepdims)
    return a.max(axis=axis, keepdims=keepdims) - a.min(axis=axis, keepdims=keepdims)


def average(a, axis=None, weights=None, returned=False, *, keepdims=_NO):
    """NumPy's average: sum(a * w) / sum(w) over axis; traced weights are
    differentiated too.  returned=True gives (average, sum of weights)
    as NumPy."""
    keepdims = _keep(keepdims)
    plain_w = None if weights is None else _plain(_asarray(weights))
    a = _asarray(a)
    expected = np.average(a._d, axis, plain_w, returned, keepdims=keepdims)  # NumPy's checks
    if weights is None:
        avg = a.mean(axis=axis, keepdims=keepdims)
        return (avg, expected[1]) if returned else avg
    w = _asarray(weights)
    if w.shape != a.shape:      # weights along axis (NumPy checked their shape)
        axes = normalize_axis_tuple(axis, a.ndim)
        w = w.transpose(tuple(int(i) for i in np.argsort(axes))).reshape(
            tuple(n if d in axes else 1 for d, n in enumerate(a.shape)))
    # the weights summed as broadcast against a: in the average's shape, as
    # NumPy's returned sum is
    scale = (w * np.ones(a.shape) if w.shape != a.shape else w).sum(
        axis=axis, keepdims=keepdims)
    avg = (a * w).sum(axis=axis, keepdims=keepdims) / scale
    return (avg, scale) if returned else avg


def nansum(a, axis=None, dtype=None, out=None, keepdims=_NO, initial=_NO, where=_NO):
    """The sum of the entries that are not NaN: a NaN has zero gradient."""
    _no_out("nansum", out)
    _float_only("nansum", dtype)
    a = _asarray(a)
    return sum_(_array.where(a != a, 0.0, a), axis, dtype, out, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=_NO, *, where=_NO):
    """The mean of the entries that are not NaN (a NaN has zero gradient);
    an all-NaN slice is NaN with NumPy's warning, and no gradient."""
    _no_out("nanmean", out)
    _float_only("nanmean", dtype)
    a = _asarray(a)
    _check(np.nanmean, a, axis=axis, keepdims=keepdims, where=where)  # NumPy's warning
    kept = a == a
    if _given(where):
        kept = kept & (where if isinstance(where, Array) else
                       np.broadcast_to(np.asarray(where, dtype=bool), a.shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        return _masked_mean(a, kept, axis, _keep(keepdims))


# -- scans -------------------------------------------------------------------------

def cumprod(a, axis=None, dtype=None, out=None):
    """NumPy's cumprod (of the flattened array for axis=None), exact where
    elements are zero at every order: a scan by doubling, each of its
    log2(n) steps multiplying every element by the one `shift` places
    before it (by 1 for the first `shift`), only products, never a
    quotient by an element."""
    _no_out("cumprod", out)
    _float_only("cumprod", dtype)
    a = _asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    axis = normalize_axis_tuple(axis, a.ndim)[0]
    n = a.shape[axis]
    if a.size == 0:
        return _constant_result(np.cumprod(a._d, axis=axis))
    out, shift = a, 1
    while shift < n:
        out = out * _shifted(out, axis, shift)
        shift *= 2
    return out


def _shifted(a, axis, shift):
    """a moved `shift` places along axis, 1 in the places left empty."""
    def moved(codes):           # (code 0: made up, a zero of no gradient)
        return np.concatenate([np.zeros_like(codes[_at(axis, None, shift)]),
                               codes[_at(axis, None, -shift)]], axis)
    ones = np.zeros(a.shape)
    ones[_at(axis, None, shift)] = 1.0
    return layout(a, moved) + ones


def diff(a, n=1, axis=-1, prepend=_NO, append=_NO):
    """NumPy's n-th difference along axis, prepend/append (plain or traced,
    scalars broadcast) joined first."""
    a = _asarray(a)
    values = [_plain(_asarray(p)) if _given(p) else p for p in (prepend, append)]
    np.diff(a._d, n, axis, **{k: v for k, v in zip(("prepend", "append"), values)
                              if _given(v)})                   # NumPy's checks
    if n == 0:
        return a
    axis = normalize_axis_tuple(axis, a.ndim)[0]
    edge = tuple(1 if d == axis else s for d, s in enumerate(a.shape))
    pieces = []
    for p, v in zip((prepend, append), values):
        if not _given(p):
            pieces.append(None)
        elif np.ndim(v) == 0:
            pieces.append(layout(p, lambda d: np.broadcast_to(d, edge))
                          if _holds_traced(p) else np.broadcast_to(v, edge))
        else:
            pieces.append(p)
    if pieces[0] is not None or pieces[1] is not None:
        a = _array.concatenate([p for p in (pieces[0], a, pieces[1]) if p is not None], axis)
    for _ in range(n):
        a = _along(a, axis, 1, None) - _along(a, axis, None, -1)
    return a


def _spacings(varargs, axes):
    """np.gradient's spacing per axis: a number, or the differences of the
    coordinates (one number where they are uniform), as NumPy takes them."""
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return [varargs[0]] * len(axes)
    out = []
    for d in varargs:
        d = np.asanyarray(d)
        if d.ndim == 0:
            out.append(d)
            continue
        if np.issubdtype(d.dtype, np.integer):
            d = d.astype(np.float64)
        dx = np.diff(d)
        out.append(dx[0] if (dx == dx[0]).all() else dx)
    return out


def _gradient_along(f, axis, dx, edge_order):
    """NumPy's second-order central differences along axis (its formulas:
    uniform or coordinate spacing; first- or second-order edges)."""
    def f_(lo, hi):
        return _along(f, axis, lo, hi)
    uniform = np.ndim(dx) == 0
    if uniform:
        interior = (f_(2, None) - f_(None, -2)) / (2.0 * dx)
    else:
        dx1, dx2 = dx[:-1], dx[1:]
        shape = tuple(-1 if d == axis else 1 for d in range(f.ndim))
        a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
        b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
        c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
        interior = a * f_(None, -2) + b * f_(1, -1) + c * f_(2, None)
    if edge_order == 1:
        first = (f_(1, 2) - f_(0, 1)) / (dx if uniform else dx[0])
        last = (f_(-1, None) - f_(-2, -1)) / (dx if uniform else dx[-1])
    else:
        if uniform:
            a, b, c = -1.5 / dx, 2.0 / dx, -0.5 / dx
        else:
            dx1, dx2 = dx[0], dx[1]
            a = -(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2))
            b = (dx1 + dx2) / (dx1 * dx2)
            c = -dx1 / (dx2 * (dx1 + dx2))
        first = a * f_(0, 1) + b * f_(1, 2) + c * f_(2, 3)
        if uniform:
            a, b, c = 0.5 / dx, -2.0 / dx, 1.5 / dx
        else:
            dx1, dx2 = dx[-2], dx[-1]
            a = dx2 / (dx1 * (dx1 + dx2))
            b = -(dx2 + dx1) / (dx1 * dx2)
            c = (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2))
        last = a * f_(-3, -2) + b * f_(-2, -1) + c * f_(-1, None)
    return _array.concatenate([first, interior, last], axis)


def gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's gradient of a traced f (the spacing plain: scalars or
    coordinate arrays); several axes give NumPy's tuple."""
    if _holds_traced(varargs):
        raise TypeError("numpy.gradient: traced spacing (varargs) is not "
                        "differentiated; pass plain scalars or coordinate arrays")
    f = _asarray(f)
    # NumPy's checks of the arguments, and its container for several axes
    expected = np.gradient(np.zeros(f.shape), *varargs, axis=axis, edge_order=edge_order)
    axes = _axes(axis, f.ndim)
    outs = [_gradient_along(f, ax, dx, edge_order)
            for ax, dx in zip(axes, _spacings(varargs, axes))]
    return outs[0] if len(axes) == 1 else type(expected)(outs)


# -- sorts ---------------------------------------------------------------------------

def _guard_order(out, axis, kth, name):
    """Inside ad.record: the guards that hold exactly while the recorded
    permutation still sorts (kth None) or partitions the input: recorded
    masks on the permuted result, which a replay recomputes."""
    if not takes_guards(out) or out.size == 0:
        return
    decide(out == out, "the places of the NaNs", name)
    if kth is None:
        if out.shape[axis] > 1:
            decide(_along(out, axis, 1, None) >= _along(out, axis, None, -1),
                   "the order", name)
        return
    for k in kth:
        at = _along(out, axis, k, k + 1)
        if k > 0:
            decide(_along(out, axis, None, k) <= at, f"the elements before kth={k}", name)
        if k + 1 < out.shape[axis]:
            decide(_along(out, axis, k + 1, None) >= at, f"the elements after kth={k}", name)


def _permuted(a, order, axis):
    return layout(a, lambda d: np.take_along_axis(d, order, axis))


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """NumPy's sort (axis=None: of the flattened array): a gather by
    np.argsort's permutation, so the gradient goes back to where each
    element came from."""
    if order is not None:
        raise TypeError("numpy.sort(order=...) sorts structured arrays; an "
                        "Array holds float64")
    a = _asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), -1
    axis = normalize_axis_tuple(axis, a.ndim)[0]
    out = _permuted(a, np.argsort(a._d, axis=axis, kind=kind, stable=stable), axis)
    _guard_order(out, axis, None, "numpy.sort")
    return out


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's partition: a gather by np.argpartition's permutation."""
    if order is not None:
        raise TypeError("numpy.partition(order=...) partitions structured "
                        "arrays; an Array holds float64")
    a = _asarray(a)
    kth = _array._index(kth) if isinstance(kth, Array) else kth
    if axis is None:
        a, axis = a.reshape(-1), -1
    axis = normalize_axis_tuple(axis, a.ndim)[0]
    permutation = np.argpartition(a._d, kth, axis=axis, kind=kind)
    out = _permuted(a, permutation, axis)
    n = a.shape[axis]
    if n:
        _guard_order(out, axis, sorted({int(k) % n for k in np.atleast_1d(kth)}),
                     "numpy.partition")
    return out


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's median: the middle element of the sorted slice, the mean of
    the two middle ones for an even count (each gets half the gradient);
    NaN for a slice holding a NaN, as NumPy's."""
    _no_out("median", out)
    a = _asarray(a)
    expected = np.median(a._d, axis=axis, keepdims=keepdims)   # NumPy's checks
    if a.size == 0:
        return _constant_result(expected)
    axes = _axes(axis, a.ndim)
    rest = [d for d in range(a.ndim) if d not in axes]
    rows = layout(a, lambda d: np.transpose(d, rest + list(axes))).reshape(
        tuple(a.shape[d] for d in rest) + (-1,))
    s = sort(rows, axis=-1)
    n = s.shape[-1]
    middle = _along(s, s.ndim - 1, (n - 1) // 2, n // 2 + 1).mean(axis=-1)
    last = _along(s, s.ndim - 1, n - 1, n).reshape(middle.shape)
    if np.isnan(last._d).any():
        # a NaN sorts last (inside ad.record, sort's guards keep the NaNs'
        # places, so a replay needs this exactly where the recording did)
        middle = _array.where(last != last, np.nan, middle)
    return middle.reshape(np.shape(expected))


# -- ufunc methods: np.add.reduce(a), np.multiply.accumulate(a) ... --------------

def _ufunc_reduce(ufunc, reducer):
    """ufunc.reduce on an Array, as the reduction that computes it."""
    name = f"{ufunc.__name__}.reduce"

    def reduce(array, axis=0, dtype=None, out=None, keepdims=False, initial=_NO,
               where=True):
        _no_out(name, out)
        _float_only(name, dtype)
        a = _asarray(array)
        kwargs = dict(keepdims=keepdims, initial=initial,
                      where=_NO if where is True else where)
        _check(ufunc.reduce, a, axis=axis, **kwargs)
        return reducer(a, axis=axis, **{k: v for k, v in kwargs.items() if _given(v)})
    return reduce


def _logaddexp_reduce(a, axis, keepdims=False, initial=_NO, where=_NO):
    """np.logaddexp.reduce: log-sum-exp (shifted by the max: stable)."""
    if _given(where):
        a = _masked(a, where, -np.inf)
    result = logsumexp(a, axis=axis, keepdims=keepdims)
    return np.logaddexp(result, initial) if _given(initial) else result


def _ufunc_accumulate(ufunc, scan):
    name = f"{ufunc.__name__}.accumulate"

    def accumulate(array, axis=0, dtype=None, out=None):
        _no_out(name, out)
        _float_only(name, dtype)
        a = _asarray(array)
        ufunc.accumulate(a._d, axis=axis)          # NumPy's checks
        return scan(a, axis=axis)
    return accumulate


NUMPY_UFUNC_METHODS = {
    (np.add, "reduce"): _ufunc_reduce(np.add, sum_),
    (np.multiply, "reduce"): _ufunc_reduce(np.multiply, prod),
    (np.maximum, "reduce"): _ufunc_reduce(np.maximum, _extremum("max")),
    (np.minimum, "reduce"): _ufunc_reduce(np.minimum, _extremum("min")),
    (np.logaddexp, "reduce"): _ufunc_reduce(np.logaddexp, _logaddexp_reduce),
    (np.add, "accumulate"): _ufunc_accumulate(np.add, lambda a, axis: a.cumsum(axis)),
    (np.multiply, "accumulate"): _ufunc_accumulate(np.multiply, cumprod),
}


NUMPY_FUNCTIONS = {
    np.sum: sum_, np.prod: prod, np.mean: mean, np.var: var, np.std: std,
    np.max: _extremum("max"), np.min: _extremum("min"),
    np.amax: _extremum("amax"), np.amin: _extremum("amin"),
    np.ptp: ptp, np.average: average, np.median: median,
    np.nansum: nansum, np.nanmean: nanmean,
    np.cumprod: cumprod, np.diff: diff, np.gradient: gradient,
    np.sort: sort, np.partition: partition,
}


# the ndarray method a.cumprod(), and a.ptp() (NumPy 2's ndarray has none;
# autograd's arrays have it)
Array.cumprod = lambda self, axis=None, dtype=None, out=None: cumprod(self, axis, dtype, out)
Array.ptp = lambda self, axis=None, out=None, keepdims=False: ptp(self, axis, out, keepdims)


# ad.sort, ad.median ...: NumPy's functions (NumPy's results for plain
# arguments, the recordings above for traced ones)
PUBLIC = {name: _public(getattr(np, name)) for name in (
    "ptp", "average", "median", "cumprod", "diff", "sort", "partition",
    "nansum", "nanmean")}
