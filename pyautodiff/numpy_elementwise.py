"""NumPy's elementwise functions beyond the op table's methods: ``np.log2(a)``,
``np.arctan2(y, x)``, ``np.logaddexp(a, b)``, ``np.fmax(a, b)``,
``np.nan_to_num(a)`` ... on Values and Arrays, and as ``ad.NAME``.

Where a function is an exact composite of recorded ops it is one (log2 is
log over ln 2, deg2rad a multiplication, fmax a choice by masks): its
derivatives of every order follow from theirs.  arctan2, hypot and
logaddexp are C ops of their own (csrc/rules.h), recorded here for Values
(Python's math: a domain error raises) and Arrays (NumPy's values and
warnings).  Decisions on values are masks (comparison entries), so a
replay of a recording recomputes them.
"""
import math

import numpy as np

from . import _core
from . import array as _array
from . import value as _value
from .array import Array
from .derivatives import mask
from .guards import takes_guards
from .tape_state import NO_GRAD, recording_tape
from .value import Value

OPS = _core.OPS
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _is_traced(x):
    return isinstance(x, (Array, Value))


# -- the binary C ops of two traced operands ----------------------------------

def _logaddexp(x, y):
    """log(e**x + e**y) of floats, as NumPy computes it (never overflows)."""
    if x == y:                  # infinities of one sign too (x - y is NaN)
        return x + _LN2
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp(-d))
    if d <= 0:
        return y + math.log1p(math.exp(d))
    return d                    # a NaN operand


def _maximum(x, y):
    return x if x >= y or x != x else y     # a NaN operand wins, as NumPy's


def _minimum(x, y):
    return x if x <= y or x != x else y


def _hypot(x, y):
    # C's hypot, as the C sweeps compute it: Python's math.hypot has an
    # algorithm of its own, and differs from it in the last bit at times
    # (so a replay would not give the recorded value)
    return float(np.hypot(x, y))


# op: (its value on Python floats, NumPy's ufunc)
_BINARY = {"ARCTAN2": (math.atan2, np.arctan2), "HYPOT": (_hypot, np.hypot),
           "LOGADDEXP": (_logaddexp, np.logaddexp),
           "MAXIMUM": (_maximum, np.maximum), "MINIMUM": (_minimum, np.minimum),
           # the masks and the selection that the composites decide with
           "LT": (lambda x, y: float(x < y), np.less),
           "EQ": (lambda x, y: float(x == y), np.equal),
           "NE": (lambda x, y: float(x != y), np.not_equal),
           "SELECT": (lambda x, m: x if m != 0.0 else 0.0, None)}


def _scalar_binary(name, x, y):
    """The C op name of two scalars: a Value of the class of the Value
    operand (a plain float where neither is one)."""
    scalar, _ = _BINARY[name]
    if not (isinstance(x, Value) or isinstance(y, Value)):
        return scalar(float(x), float(y))
    cls = (x if isinstance(x, Value) else y).__class__
    t = recording_tape()
    xs, ys = _value._operand(x, t), _value._operand(y, t)
    if xs is None or ys is None:
        raise TypeError(f"numpy.{name.lower()}: operands must be real numbers")
    d = scalar(float(_array._plain(xs)), float(_array._plain(ys)))
    if not (isinstance(xs, Value) or isinstance(ys, Value)):
        return _value._detached(cls, d)         # under no_grad
    # both recorded before either index is read (a record may compact)
    if not isinstance(xs, Value):
        xs = t.record(cls, OPS["LEAF"], -1, -1, float(xs), float(xs))
    if not isinstance(ys, Value):
        ys = t.record(cls, OPS["LEAF"], -1, -1, float(ys), float(ys))
    return t.record(cls, OPS[name], xs._i, ys._i, 0.0, d)


def _array_binary(name, x, y):
    _, ufunc = _BINARY[name]
    t = recording_tape()
    if t is NO_GRAD:
        return _array._detached(ufunc(_array._plain(x), _array._plain(y)))
    a, sa, b, sb = _array._operands(x, y, t)
    shape = sa if sa == sb else _array._broadcast_shape(name.lower(), sa, sb)
    return _array._new(t, OPS[name], a, b, 0.0, shape,
                       lambda: ufunc(_array._plain(x), _array._plain(y)))


def _binary(name):
    def fn(x, y):
        """Of Values and numbers a Value; with an Array or an ndarray an
        Array (as ad.maximum's); of plain operands NumPy's."""
        if not (_is_traced(x) or _is_traced(y)):
            return _BINARY[name][1](x, y)
        arrays = (Array, np.ndarray, list)
        if isinstance(x, arrays) or isinstance(y, arrays):
            return _array_binary(name, x, y)
        return _scalar_binary(name, x, y)
    fn.__name__ = fn.__qualname__ = name.lower()
    return fn


arctan2 = _binary("ARCTAN2")
hypot = _binary("HYPOT")
logaddexp = _binary("LOGADDEXP")
# for fmax and fmin: of Values a Value (ad.maximum gives 0-d Arrays)
_max2, _min2 = _binary("MAXIMUM"), _binary("MINIMUM")


def logaddexp2(x, y):
    """log2(2**x + 2**y) = logaddexp(x ln 2, y ln 2) / ln 2."""
    return logaddexp(x * _LN2, y * _LN2) / _LN2


# -- composites -----------------------------------------------------------------

def fabs(x):
    return abs(x)


def reciprocal(x):
    return 1.0 / x


def square(x):
    # an Array's x ** 2 records SQUARE (x * x, as NumPy); a Value's ** is pow
    return x ** 2 if isinstance(x, Array) else x * x


def exp2(x):
    return 2.0 ** x


def log2(x):
    return np.log(x) / _LN2


def log10(x):
    return np.log(x) / _LN10


def deg2rad(x):
    return x * (math.pi / 180.0)        # NumPy's factor


def rad2deg(x):
    return x * (180.0 / math.pi)


def float_power(x, y):
    return x ** y                       # traced values are float64 already


_NO_VALUE = object()


def clip(a, a_min=_NO_VALUE, a_max=_NO_VALUE, out=None, *, min=None, max=None):
    """np.clip: minimum(maximum(a, a_min), a_max), either bound None; of a
    Value and numbers a Value."""
    if out is not None:
        raise TypeError("numpy.clip(out=...) writes into an ndarray: in-place "
                        "operations cannot record a derivative")
    lo = min if a_min is _NO_VALUE else a_min
    hi = max if a_max is _NO_VALUE else a_max
    if (a_min is not _NO_VALUE and min is not None) or \
            (a_max is not _NO_VALUE and max is not None):
        raise TypeError("numpy.clip: a bound given twice (a_min and min, or a_max and max)")
    out = a
    if lo is not None:
        out = _max2(out, lo)
    if hi is not None:
        out = _min2(out, hi)
    return out


def _mask(op, x, y):
    """The comparison op (LT, EQ, NE) as 1.0/0.0: recorded, so a replay
    recomputes it; of Values a Value of their class."""
    if isinstance(x, Array) or isinstance(y, Array):
        return mask(op, x, y)
    return _scalar_binary(op, x, y)


def _select(z, m):
    """z where the mask m is 1, else 0 (and no derivative, nor NaN, from z)."""
    if isinstance(z, Array) or isinstance(m, Array):
        return _array._select(z, m)
    return _scalar_binary("SELECT", z, m)


def _nan(x):
    return _mask("NE", x, x)


def fmax(x, y):
    """The larger, the non-NaN operand where one is NaN; the derivative
    goes to the operand chosen, ties split it in halves (as maximum's)."""
    return _choose(x, y, _max2)


def fmin(x, y):
    return _choose(x, y, _min2)


def _choose(x, y, both):
    x, y = (_array._constant(v) if isinstance(v, (np.ndarray, list)) else v
            for v in (x, y))
    xn, yn = _nan(x), _nan(y)
    neither = _mask("EQ", xn + yn, 0.0)
    # y NaN: x (NaN too where both are); x NaN and y not: y
    return _select(both(x, y), neither) + _select(x, yn) + _select(y, _mask("LT", yn, xn))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """x where finite (derivative 1), else the replacements (derivative 0)."""
    big = np.finfo(np.float64).max
    posinf = big if posinf is None else float(posinf)
    neginf = -big if neginf is None else float(neginf)
    if not takes_guards(x) and np.isfinite(_array._plain(x)).all():
        return x                # nothing to replace (a recording keeps the masks)
    out = _select(x, _mask("LT", abs(x), math.inf))
    for value, where in ((float(nan), _nan(x)), (posinf, _mask("EQ", x, math.inf)),
                         (neginf, _mask("EQ", x, -math.inf))):
        if value != 0.0:        # (a selection: where * value could overflow)
            out = out + _select(value, where)
    return out


# sinc's Taylor series in u = (pi x)**2 to u**4: at x = 0 (where sin(pi x) /
# (pi x) is 0/0) it gives sinc's value and its derivatives through order 9
_SINC_SERIES = (1.0, -1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362880.0)


def sinc(x):
    """sin(pi x) / (pi x), 1 at x = 0."""
    if not _is_traced(x):
        return np.sinc(x)
    if isinstance(x, (np.ndarray, list)):
        x = _array._constant(x)
    zero = _mask("EQ", x, 0.0)
    px = x * math.pi
    s = px + zero                       # 1 where x is 0: no 0/0 computed
    u = px * px
    series = _SINC_SERIES[-1]
    for k in _SINC_SERIES[-2::-1]:
        series = series * u + k
    return _select(np.sin(s) / s, _mask("NE", x, 0.0)) + _select(series, zero)


# -- complex parts of real numbers ---------------------------------------------

def _itself(x, *args, **kwargs):
    """np.real, np.conjugate, np.real_if_close of a real traced value: the
    value itself (its imaginary part, np.imag, is 0, and np.angle is
    piecewise constant: numpy_interop answers those)."""
    return x


# -- NumPy's dispatch and ad.NAME ------------------------------------------------

# ufunc: its recording on Values and Arrays (operands as numpy_interop
# passes them: NumPy scalars as numbers, at least one traced)
NUMPY_UFUNCS = {
    np.fabs: fabs, np.reciprocal: reciprocal, np.square: square,
    np.exp2: exp2, np.log2: log2, np.log10: log10,
    np.logaddexp: logaddexp, np.logaddexp2: logaddexp2,
    np.arctan2: arctan2, np.hypot: hypot,
    np.deg2rad: deg2rad, np.radians: deg2rad,
    np.rad2deg: rad2deg, np.degrees: rad2deg,
    np.float_power: float_power, np.fmax: fmax, np.fmin: fmin,
    # of Values a Value, as np.add's (of Arrays the same entries as ad.maximum)
    np.maximum: _max2, np.minimum: _min2,
    np.conjugate: _itself,
}
NUMPY_FUNCTIONS = {np.sinc: sinc, np.nan_to_num: nan_to_num, np.clip: clip,
                   np.real: _itself, np.real_if_close: _itself}


def _public(numpy_fn):
    """ad.NAME: NumPy's function, which dispatches to the recordings above
    for Values and Arrays (and gives NumPy's own result otherwise)."""
    def fn(*args, **kwargs):
        return numpy_fn(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = numpy_fn.__name__
    fn.__doc__ = (f"{numpy_fn.__name__}(...): NumPy's {numpy_fn.__name__}, "
                  "recorded for Values and Arrays.")
    return fn


# NumPy's names that pyautodiff has no function of its own for: NumPy's
# functions (which dispatch to the implementations above, kept in the
# tables, for traced operands), and the binary C ops' own
_EXPORTED = (
    "absolute fabs negative reciprocal square exp2 log2 log10 "
    "logaddexp2 deg2rad rad2deg degrees radians sinc power "
    "float_power true_divide divide mod remainder fmod fmax fmin nan_to_num "
    "sign floor ceil round rint trunc").split()
__all__ = list(_EXPORTED) + ["arctan2", "hypot", "logaddexp"]
globals().update({name: _public(getattr(np, name)) for name in _EXPORTED})

# the ndarray's (and float's) complex-part methods: a real number's
for _cls in (Array, Value):
    _cls.conjugate = _cls.conj = _itself
    _cls.real = property(_itself)
Array.imag = property(lambda self: _array._constant_result(np.zeros(self.shape)))
Value.imag = property(lambda self: 0.0)
