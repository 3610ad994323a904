"""Reductions of Arrays: sum, mean, max, min, log-sum-exp and prod as one
entry each (the C core's reductions), softmax composed from log-sum-exp;
var from those, and cumsum as an extern entry (its rules in NumPy, here);
and the Array methods of each."""
import math

import numpy as np

from . import _core
from .array import (Array, _asarray, _constant_result, _detached, _new, _operand,
                    normalize_axis_tuple)
from .extern import ExternRule, record_extern
from .extern_patterns import cumulative
from .tape_state import NO_GRAD, recording_tape

OPS = _core.OPS


# NumPy's reductions, for no_grad
def numpy_logsumexp(x, axis=None, keepdims=False):
    """scipy.special.logsumexp's rule (the C core's LSE, for no_grad):
    shifted by the max, or by 0 where the max is not finite."""
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):      # log(0): an all -inf reduction
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


REDUCERS = {"SUM": np.sum, "MEAN": np.mean, "MAX": np.max, "MIN": np.min,
             "LSE": numpy_logsumexp, "PROD": np.prod}


def reduce(self, axis, keepdims, mean=False, op="SUM"):
    """self (an Array) summed (SUM), averaged (mean), or reduced by op (MAX,
    MIN, LSE, PROD) over axis, as NumPy's method of that name."""
    name = "MEAN" if mean else op
    shape = self._d.shape
    if not shape:
        # NumPy lets sum/max/min take axis 0 or -1 on a 0-d array; mean not
        axes = () if axis is None or (not mean and axis in (0, -1, (0,), (-1,))) \
            else normalize_axis_tuple(axis, 0)
    else:
        axes = tuple(range(len(shape))) if axis is None else \
            normalize_axis_tuple(axis, len(shape))
    kept = tuple(1 if d in axes else n for d, n in enumerate(shape))
    if name in ("MAX", "MIN") and any(shape[d] == 0 for d in axes):
        raise ValueError(f"{name.lower()} of an empty axis has no identity")
    count = float(math.prod([shape[d] for d in axes])) if mean else 1.0
    t = recording_tape()
    if t is NO_GRAD:
        return _detached(REDUCERS[name](self._d, axis=axes, keepdims=keepdims))
    if not keepdims and len(axes) == len(shape):
        # a whole reduction straight into a 0-d result (no reshape entry)
        return _new(t, OPS[op], _operand(self, t)[0], -1, count, ())
    out = _new(t, OPS[op], _operand(self, t)[0], -1, count, kept)
    if not keepdims:              # the reduced dimensions dropped
        out = _new(t, OPS["RESHAPE"], out._i, -1, 0.0,
                   tuple(n for d, n in enumerate(shape) if d not in axes))
    return out


# -- log-sum-exp (one reduction entry) and softmax, composed from it --------

def logsumexp(a, axis=None, keepdims=False):
    """log(sum(exp(a))) over axis, as scipy.special.logsumexp: shifted by
    the max, so it never overflows (also in a replay at other inputs);
    -inf for an empty or all -inf reduction."""
    return reduce(_asarray(a), axis, keepdims, op="LSE")


def softmax(a, axis=-1):
    a = _asarray(a)
    return (a - logsumexp(a, axis=axis, keepdims=True)).exp()


def log_softmax(a, axis=-1):
    a = _asarray(a)
    return a - logsumexp(a, axis=axis, keepdims=True)


# -- variance, products and cumulative sums ------------------------------------

def _float_result(name, dtype, out):
    """An Array's reduction gives a new float64 Array: no out=, no other
    dtype (it would be a number NumPy does not compute)."""
    if out is not None:
        raise TypeError(f"Array.{name}: out= is not supported (the result is "
                        "a new Array; use the one returned)")
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise TypeError(f"Array.{name}: dtype={np.dtype(dtype)} is not "
                        "supported (an Array holds float64)")


def var(a, axis=None, ddof=0, keepdims=False):
    """NumPy's var: the mean square deviation from the mean, divided by
    n - ddof for n elements reduced (inf or nan where that is <= 0, as
    NumPy gives)."""
    a = _asarray(a)
    m = a.mean(axis=axis, keepdims=True)
    n = a.size // m.size if m.size else 0
    if n == 1 and ddof == 0:
        # each element is its own mean: 0 whatever the values, so its
        # derivative is 0 too (sqrt(var) would otherwise give inf * 0)
        shape = np.shape(np.var(np.zeros(a.shape), axis=axis, keepdims=keepdims))
        return _constant_result(np.zeros(shape))
    d = a - m
    return (d * d).sum(axis=axis, keepdims=keepdims) / float(max(n - ddof, 0))


def _extern(name, forward, vjp, jvp, a, linear=False, nested=None, sparsity=None):
    """forward(a) recorded as one entry with the rules vjp and jvp (on a's
    values, as NumPy computes them), the nested ones (on Arrays, see
    ExternRule) and its Jacobian's pattern (extern_patterns)."""
    value = forward(a._d)
    if recording_tape() is NO_GRAD:
        return _detached(value)
    return record_extern(ExternRule(forward, vjp, name, jvp=jvp, linear=linear,
                                    nested=nested, sparsity=sparsity), [a], value)


def _tangent_of(tangents, x):
    """The input's tangent (zeros for an input that does not move)."""
    return np.zeros(np.shape(x)) if tangents[0] is None else tangents[0]


def others_product(x, axes):
    """For each element of x (an Array), the product of the other elements
    of its group along axes -- PROD's partial derivative -- as ops that
    differentiate again (derivatives.py's rule of PROD): the product of a
    row in which that element is replaced by 1 (m*m values for m elements
    reduced), exact where x holds zeros."""
    rest = [d for d in range(x.ndim) if d not in axes]
    perm = rest + list(axes)
    moved = x.transpose(tuple(perm))
    lead = moved.shape[:len(rest)]
    m = int(np.prod(moved.shape[len(rest):]))
    eye = np.eye(m)
    rows = moved.reshape(lead + (1, m)) * (1.0 - eye) + eye
    others = prod(rows, axis=-1).reshape(moved.shape)
    return others.transpose(tuple(int(d) for d in np.argsort(perm)))


def prod(a, axis=None, keepdims=False):
    """NumPy's prod as one PROD entry, whose derivatives (the product of the
    other elements: csrc/rules.h) are exact where elements are zero."""
    return reduce(_asarray(a), axis, keepdims, op="PROD")


def cumsum(a, axis=None):
    """NumPy's cumsum (of the flattened array for axis=None): a linear op,
    whose vjp sums the gradient from the other end."""
    a = _asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    axis = normalize_axis_tuple(axis, a.ndim)[0]

    def forward(x):
        return np.cumsum(x, axis=axis)

    def vjp(g, out, x):
        return (np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis),)

    def jvp(tangents, out, x):
        return forward(_tangent_of(tangents, x))

    def nested_vjp(g, out, x, needs):
        flip = (slice(None),) * axis + (slice(None, None, -1),)
        return (cumsum(_asarray(g)[flip], axis)[flip],)

    def nested_jvp(tangents, out, x):
        return cumsum(tangents[0], axis)

    return _extern("cumsum", forward, vjp, jvp, a, linear=True,
                   nested=(nested_vjp, nested_jvp), sparsity=cumulative(axis))


class ArrayMethods:
    """The methods of Array (given to it below) that reduce."""

    def sum(self, axis=None, keepdims=False):
        return reduce(self, axis, keepdims, mean=False)

    def mean(self, axis=None, keepdims=False):
        return reduce(self, axis, keepdims, mean=True)

    def max(self, axis=None, keepdims=False):
        return reduce(self, axis, keepdims, op="MAX")

    def min(self, axis=None, keepdims=False):
        return reduce(self, axis, keepdims, op="MIN")

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        _float_result("prod", dtype, out)
        return prod(self, axis, keepdims)

    def cumsum(self, axis=None, dtype=None, out=None):
        _float_result("cumsum", dtype, out)
        return cumsum(self, axis)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        _float_result("var", dtype, out)
        return var(self, axis, ddof, keepdims)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        _float_result("std", dtype, out)
        return var(self, axis, ddof, keepdims).sqrt()


for _name, _method in vars(ArrayMethods).items():
    if not _name.startswith("__"):
        setattr(Array, _name, _method)
