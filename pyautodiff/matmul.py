"""Matrix products: NumPy (BLAS) in both directions, recorded as one extern
entry (extern.py): the product, its vjp, the ExternRule a saved tape names,
ad.matmul and Array's @.  A small product of two matrices is the same
entry computed by the C sweeps themselves (csrc/matmul.c)."""
import numpy as np

from . import buffers
from ._core import OPS, lib
from .array import Array, _constant, _detached, _plain, _result
from .broadcasting import unbroadcast
from .extern import ExternRule, record_computed, record_extern, route_callbacks
from .tape_state import NO_GRAD, recording_tape, state
from .value import Value


def product(x, y, into=None):
    """x @ y.  A product of float64 matrices goes into `into` where that
    has its shape (an adjoint block: no copy after), else into memory from
    the block cache, as big results and gradients are made every step."""
    if x.ndim == 2 and y.ndim == 2 and x.dtype == y.dtype == np.float64 \
            and x.shape[1] == y.shape[0]:
        shape = (x.shape[0], y.shape[1])
        if into is None or into.shape != shape:
            into = buffers.empty(shape)
        return np.matmul(x, y, out=into)
    return np.matmul(x, y)


def matmul_vjp(g, out, a, b, needs=(True, True), into=(None, None),
               product=product):
    """The cotangents of a @ b for those of a and b that need one; each may
    be written into an adjoint block of into.  With product=matmul, on
    Values and Arrays: the rule nested derivatives record."""
    if np.ndim(g) == 0 and not isinstance(g, Array):
        g = np.asarray(g, dtype=np.float64)
    if a.ndim == 2 and b.ndim == 2:     # matrices: no promotion, no sums
        return (product(g, b.T, into[0]) if needs[0] else None,
                product(a.T, g, into[1]) if needs[1] else None)
    a2 = a[np.newaxis, :] if a.ndim == 1 else a
    b2 = b[:, np.newaxis] if b.ndim == 1 else b
    # g in the shape of the product of the 2-D (or batched) promotions
    g2 = g.reshape(np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
                   + (a2.shape[-2], b2.shape[-1]))
    ga = gb = None
    if needs[0]:
        ga = unbroadcast(product(g2, b2.swapaxes(-1, -2), into[0]),
                         a2.shape).reshape(a.shape)
    if needs[1]:
        gb = unbroadcast(product(a2.swapaxes(-1, -2), g2, into[1]),
                         b2.shape).reshape(b.shape)
    return ga, gb


def _traced_product(x, y, into=None):
    return matmul(x, y)


def _nested_vjp(g, out, a, b, needs):
    return matmul_vjp(_as_array(g), out, _as_array(a), _as_array(b), needs,
                      product=_traced_product)


def _nested_jvp(tangents, out, a, b):
    ta, tb = tangents
    parts = ([matmul(ta, b)] if ta is not None else []) + \
        ([matmul(a, tb)] if tb is not None else [])
    return sum(parts[1:], parts[0])


def _as_array(x):
    """A matrix product's operand or cotangent as an Array (a scalar's
    Value as a 0-d one), so that its methods are NumPy's."""
    if isinstance(x, Array):
        return x
    if isinstance(x, Value):
        return x + _constant(np.zeros(()))
    return _constant(np.asarray(x, dtype=np.float64))


_MATMUL = None


def matmul_rule():
    """The extern rule of matrix products (a saved tape names it)."""
    global _MATMUL
    if _MATMUL is None:
        _MATMUL = ExternRule(np.matmul, matmul_vjp, "matmul", takes_needs=True,
                             bilinear=True, pure=True,
                             nested=(_nested_vjp, _nested_jvp))
    return _MATMUL


# A product of two matrices of at most this many multiply-adds is
# computed by the C sweeps (csrc/matmul.c): for small ones, calling back
# into Python (and NumPy) cost many times the arithmetic.
_NATIVE_MAX = lib.AD_MATMUL_NATIVE_MAX
_NATIVE = float(lib.AD_EXTERN_MATMUL)
_ndarray = np.ndarray
_EXTERN = OPS["EXTERN"]


def _native_shape(x, y):
    """The shape of x @ y where the C sweeps compute it (two real matrices,
    a small product), else None."""
    if x.__class__ is not _ndarray or y.__class__ is not _ndarray \
            or x.ndim != 2 or y.ndim != 2:
        return None
    (m, k), (k2, n) = x.shape, y.shape
    if k != k2 or not 0 < m * k * n <= _NATIVE_MAX \
            or x.dtype.kind not in "biuf" or y.dtype.kind not in "biuf":
        return None
    return m, n


def _shape(x):
    """An Array's shape without reading its values: a small result's are
    a pool's row, viewed only when first read (array.py)."""
    pool = x._p
    return pool.shape if pool else x._v.shape


def _imported(t, x):
    """Array x of an enclosing tape as its leaf on t (Tape.adopt), found
    as the recorded operators find it."""
    imported = t.imports.get(id(x))
    if imported is None or x._t.closed:
        return t.adopt(x)
    return imported[1]


def _recorded_product(t, a, b):
    """a @ b for two Arrays on tape t, which records operations: the
    common case, with nothing looked at but the shapes; None where the C
    sweeps do not compute it."""
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 2 or len(sb) != 2:
        return None
    (m, k), (k2, n) = sa, sb
    if k != k2 or not 0 < m * k * n <= _NATIVE_MAX:
        return None
    # both imported (which may compact t) before either index is read
    x = a if a._t is t else _imported(t, a)
    y = b if b._t is t else _imported(t, b)
    if not t.callbacks_routed:
        route_callbacks(t)
    i = len(t.nodes)
    externs = t.externs
    externs[i] = _MATMUL or matmul_rule()     # first, as in record_extern
    try:
        # (no anomaly check here: a product's NaN is found where the
        # callback path finds it, in the sweeps)
        return _result(t, _EXTERN, x._i, y._i, _NATIVE, (m, n))
    except BaseException:
        if len(t.nodes) <= i:
            externs.pop(i, None)
        raise


def matmul(a, b):
    """a @ b with NumPy's rules (1-D, 2-D and batched)."""
    t = state.rec
    if a.__class__ is Array and b.__class__ is Array and t is not NO_GRAD \
            and t is not None:
        out = _recorded_product(t, a, b)
        if out is not None:
            return out
    pa, pb = _plain(a), _plain(b)
    # (two plain operands keep NumPy's product: of two bool arrays, a bool)
    if recording_tape() is not NO_GRAD and (pa is not a or pb is not b):
        shape = _native_shape(pa, pb)
        if shape is not None:
            return record_computed(matmul_rule(), (a, b), _NATIVE, shape)
    try:
        value = product(np.asarray(pa), np.asarray(pb))
    except ValueError:
        raise ValueError(f"matmul: shapes {np.shape(pa)} and {np.shape(pb)} are "
                         "not aligned") from None
    if recording_tape() is NO_GRAD:
        return _detached(value)
    ops = [x if isinstance(x, (Array, Value)) else _constant(x) for x in (a, b)]
    return record_extern(matmul_rule(), ops, value)


Array.__matmul__ = matmul
Array.__rmatmul__ = lambda self, other: matmul(other, self)    # noqa: E731
