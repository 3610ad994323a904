"""Truncated Taylor series ("jets"): derivatives of any order by forward
mode, sharing no code with the tape; the reference for nested derivatives.

A ``Jet`` of order K is x(t) = c_0 + c_1 t + ... + c_K t^K, truncated
beyond t^K, each coefficient an ndarray of the jet's shape (so every op is
elementwise over arrays, with NumPy's broadcasting).  Seed x + t v, run a
function on the jet, and coefficient k of the result is the k-th
directional derivative over k!::

    d^k/dt^k f(x + t v) at t = 0  ==  k! * f(seed(x, v, K)).c[k]

Every op's coefficients come from the recurrences of power series written
from the math (Cauchy products, the quotient recurrence, and for f(a) with
f' = g: k f_k = sum_j j a_j g_{k-j}, g a known series or f's own), never
from the tape's rules or from rules.py's table.

Mixed partials nest jets: a coefficient may itself be a jet in another
variable.  Each seed gets a fresh ``tag``, increasing, and a jet's
coefficients only hold jets of smaller tags (or ndarrays).  An op on jets
of different tags treats the one of the smaller tag as a constant of the
other (a coefficient 0 with zeros above), so a function that closes over
an outer jet and is differentiated by an inner one -- d/dx of
x * d/dy g(x, y) -- gets both right, without perturbation confusion.
``mixed(f, x, vs)`` is D^n f(x)[v_1, ..., v_n] this way; the second
derivatives of the functional API's reference (taylor_api.py) instead
polarize one order-2 jet, which exercises the order-K arithmetic.

Where an op is not differentiable (relu and abs at 0, ties of maximum,
minimum and max/min reductions) the one-sided derivatives differ, and a
jet operand within ``KINK_TOL`` of such a point raises ``NearKink`` instead
of picking a side.  NumPy functions reach jets through ``__array_ufunc__``
and ``__array_function__``; a NumPy function with no rule here raises
TypeError naming it, and there is no ``__float__`` or ``__bool__``.
"""
import contextlib
import itertools
import operator

import numpy as np

# relative distance to a kink below which a jet refuses to choose a side
KINK_TOL = 1e-7

_tags = itertools.count(1)


class NearKink(ArithmeticError):
    """An operand (almost) on a point where the op is not differentiable."""


# Coefficients beyond this raise OverflowError (None: no bound).  A caller
# comparing against the series sets it: an intermediate of 1e155 leaves no
# digit of a result of order one, whatever the result's own size.
_bound = None


@contextlib.contextmanager
def bounded(limit):
    """Within: a jet whose coefficients exceed limit in magnitude raises
    OverflowError (the series is no reference there)."""
    global _bound
    saved, _bound = _bound, limit
    try:
        yield
    finally:
        _bound = saved


def new_tag():
    """A tag larger than every tag made so far: a variable inner to them."""
    return next(_tags)


class Jet:
    """c: the coefficients c_0 .. c_K (ndarrays, or jets of smaller tags),
    all of the jet's shape; tag: the variable t they are the series in."""

    __slots__ = ("c", "tag")
    __array_priority__ = 1000           # ndarray op Jet: the jet's method

    def __init__(self, coefficients, tag):
        self.c = tuple(coefficients)
        self.tag = tag
        if _bound is not None:
            for c in self.c:
                if not isinstance(c, Jet) and np.max(np.abs(c), initial=0.0) > _bound:
                    raise OverflowError(f"a Taylor coefficient beyond {_bound:g}")

    def __repr__(self):
        return f"Jet({list(self.c)!r}, tag={self.tag})"

    @property
    def order(self):
        return len(self.c) - 1

    @property
    def shape(self):
        return np.shape(base(self))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def T(self):
        return self._map(np.transpose)

    def __bool__(self):
        raise TypeError("the truth value of a jet: a branch on it would drop "
                        "its derivatives")

    def _map(self, fn, *args, **kwargs):
        """A linear map applied to every coefficient (layout, sums)."""
        return Jet([fn(c, *args, **kwargs) for c in self.c], self.tag)

    # -- operators --
    def __add__(self, o):
        return add(self, o)

    def __radd__(self, o):
        return add(o, self)

    def __sub__(self, o):
        return subtract(self, o)

    def __rsub__(self, o):
        return subtract(o, self)

    def __mul__(self, o):
        return multiply(self, o)

    def __rmul__(self, o):
        return multiply(o, self)

    def __truediv__(self, o):
        return divide(self, o)

    def __rtruediv__(self, o):
        return divide(o, self)

    def __pow__(self, o):
        return power(self, o)

    def __rpow__(self, o):
        return power(o, self)

    def __matmul__(self, o):
        return matmul(self, o)

    def __rmatmul__(self, o):
        return matmul(o, self)

    def __neg__(self):
        return self._map(np.negative)

    def __pos__(self):
        return self

    def __abs__(self):
        return absolute(self)

    def __getitem__(self, index):
        return self._map(lambda c: c[index])

    # -- methods, as Values and Arrays spell them --
    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def tanh(self):
        return tanh(self)

    def sin(self):
        return sin(self)

    def cos(self):
        return cos(self)

    def sqrt(self):
        return sqrt(self)

    def log1p(self):
        return log1p(self)

    def expm1(self):
        return expm1(self)

    def arctan(self):
        return arctan(self)

    def sigmoid(self):
        return sigmoid(self)

    def tan(self):
        return tan(self)

    def arcsin(self):
        return arcsin(self)

    def arccos(self):
        return arccos(self)

    def sinh(self):
        return sinh(self)

    def cosh(self):
        return cosh(self)

    def arcsinh(self):
        return arcsinh(self)

    def arccosh(self):
        return arccosh(self)

    def arctanh(self):
        return arctanh(self)

    def cbrt(self):
        return cbrt(self)

    def relu(self):
        return relu(self)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 else shape
        return self._map(np.reshape, shape)

    def sum(self, axis=None, keepdims=False):
        return self._map(np.sum, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return self._map(np.mean, axis=axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        return _extreme(self, axis, keepdims, np.max)

    def min(self, axis=None, keepdims=False):
        return _extreme(self, axis, keepdims, np.min)

    # -- NumPy's protocols --
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = _UFUNCS.get(ufunc)
        if method != "__call__" or kwargs or fn is None:
            raise TypeError(f"taylor.Jet has no rule for numpy.{ufunc.__name__}"
                            f"{'' if method == '__call__' else '.' + method}"
                            f"{' with ' + ', '.join(kwargs) if kwargs else ''}")
        return fn(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        fn = _FUNCTIONS.get(func)
        if fn is None:
            raise TypeError(f"taylor.Jet has no rule for numpy.{func.__name__}")
        return fn(*args, **kwargs)


# -- coefficients, constants and tags ---------------------------------------------

def base(x):
    """The plain value of x: coefficient 0 of coefficient 0 ..., an ndarray."""
    while isinstance(x, Jet):
        x = x.c[0]
    return np.asarray(x, dtype=np.float64)


def _tag(x):
    return x.tag if isinstance(x, Jet) else 0


def _constant(x, tag, order):
    """x (a number, ndarray or jet of a smaller tag) as a jet of `tag`."""
    if _tag(x) == tag:
        if x.order != order:
            raise ValueError(f"jets of one variable of orders {x.order} and {order}")
        return x
    if not isinstance(x, Jet):
        x = np.asarray(x, dtype=np.float64)
    zero = np.zeros(np.shape(base(x)))
    return Jet([x] + [zero] * order, tag)


def _lift(*xs):
    """The operands as jets of the largest tag among them, and that tag
    (0: none is a jet)."""
    top = max(xs, key=_tag)
    if not isinstance(top, Jet):
        return xs, 0
    return tuple(_constant(x, top.tag, top.order) for x in xs), top.tag


def seed(x, v, order, tag=None):
    """x + t v as a jet of `order` in a new variable t (x, v: numbers,
    ndarrays or jets of outer variables)."""
    tag = new_tag() if tag is None else tag
    shape = np.broadcast_shapes(np.shape(base(x)), np.shape(base(v)))
    c0 = x if isinstance(x, Jet) else np.broadcast_to(np.asarray(x, float), shape)
    c1 = v if isinstance(v, Jet) else np.broadcast_to(np.asarray(v, float), shape)
    return Jet([c0, c1] + [np.zeros(shape)] * (order - 1), tag)


def coefficient(y, tag, k):
    """Coefficient k of y in the variable `tag`: y itself for k = 0 when y
    does not depend on it, else zeros."""
    if isinstance(y, Jet) and y.tag == tag:
        return y.c[k]
    if _tag(y) > tag:
        raise ValueError("a jet of an inner variable escaped its derivative")
    return y if k == 0 else np.zeros(np.shape(base(y)))


def derivatives(f, x, v, order):
    """[d^k/dt^k f(x + t v) at t = 0 for k = 0 .. order], x and v numbers
    or ndarrays: k! times the coefficients of one jet."""
    t = new_tag()
    y = f(seed(x, v, order, t))
    out, factorial = [], 1.0
    for k in range(order + 1):
        factorial *= max(k, 1)
        out.append(factorial * np.asarray(coefficient(y, t, k)))
    return out


def mixed(f, x, vs):
    """D^n f(x)[v_1, ..., v_n], the mixed directional derivative, by
    nesting n jets of order 1 (each v_i its own variable)."""
    tags = []
    for v in vs:
        tags.append(new_tag())
        x = seed(x, v, 1, tags[-1])
    y = f(x)
    for t in reversed(tags):
        y = coefficient(y, t, 1)
    return np.asarray(y) if not isinstance(y, Jet) else y


# -- series arithmetic ------------------------------------------------------------

def _conv(a, b, k, product=operator.mul):
    """Coefficient k of the product of two series: sum of a_i b_{k-i}."""
    out = product(a[0], b[k])
    for i in range(1, k + 1):
        out = out + product(a[i], b[k - i])
    return out


def _binary(fn):
    """An op of two operands: fn(a, b) on the coefficient lists of the
    lifted jets; plain operands (no jet) go to NumPy."""
    def op(x, y):
        (x, y), tag = _lift(x, y)
        if not tag:
            return _NUMPY[op](x, y)
        return Jet(fn(x.c, y.c), tag)
    op.__name__ = fn.__name__.strip("_")
    return op


@_binary
def add(a, b):
    return [p + q for p, q in zip(a, b)]


@_binary
def subtract(a, b):
    return [p - q for p, q in zip(a, b)]


@_binary
def multiply(a, b):
    return [_conv(a, b, k) for k in range(len(a))]


@_binary
def matmul(a, b):
    return [_conv(a, b, k, np.matmul) for k in range(len(a))]


def _quotient(a, b):
    """q = a / b: b_0 q_k = a_k - sum_{i>=1} b_i q_{k-i}."""
    q = []
    for k in range(len(a)):
        r = a[k]
        for i in range(1, k + 1):
            r = r - b[i] * q[k - i]
        q.append(r / b[0])
    return q


divide = _binary(_quotient)
divide.__name__ = "divide"


def _integral(a, f0, g):
    """f(a) for f' = g: f_0 = f0, k f_k = sum_{j=1..k} j a_j g_{k-j}; g(m)
    gives g's coefficient m < k (it may read f's coefficients so far)."""
    f = [f0]
    for k in range(1, len(a)):
        s = a[1] * g(k - 1, f)
        for j in range(2, k + 1):
            s = s + (j * a[j]) * g(k - j, f)
        f.append(s / k)
    return f


def _unary(name, series):
    """An elementwise function: series(jet) for a jet, NumPy's for the rest."""
    numpy_fn = getattr(np, name, None)

    def fn(x):
        if isinstance(x, Jet):
            return Jet(series(x), x.tag)
        return numpy_fn(x)
    fn.__name__ = name
    return fn


def _exp_series(x):
    return _integral(x.c, exp(x.c[0]), lambda m, f: f[m])


def _expm1_series(x):
    # expm1's derivative is exp: the series of exp(a), its first term
    # taken from expm1 (exact where a_0 is tiny)
    e = _exp_series(x)
    return [expm1(x.c[0])] + e[1:]


def _log_series(x):
    g = _quotient([1.0] + [0.0] * x.order, x.c)          # 1 / a
    return _integral(x.c, log(x.c[0]), lambda m, f: g[m])


def _log1p_series(x):
    g = _quotient([1.0] + [0.0] * x.order, [1.0 + x.c[0]] + list(x.c[1:]))
    return _integral(x.c, log1p(x.c[0]), lambda m, f: g[m])


def _arctan_series(x):
    one_plus_sq = [(1.0 if k == 0 else 0.0) + _conv(x.c, x.c, k)
                   for k in range(len(x.c))]
    g = _quotient([1.0] + [0.0] * x.order, one_plus_sq)
    return _integral(x.c, arctan(x.c[0]), lambda m, f: g[m])


def _tanh_series(x):
    # tanh' = 1 - tanh^2, a series in tanh's own coefficients so far
    return _integral(x.c, tanh(x.c[0]),
                     lambda m, f: (1.0 if m == 0 else 0.0) - _conv(f, f, m))


def _sigmoid_series(x):
    # sigmoid' = s - s^2
    return _integral(x.c, sigmoid(x.c[0]), lambda m, f: f[m] - _conv(f, f, m))


def _sin_cos(x):
    """sin and cos of x together: sin' = cos, cos' = -sin."""
    s, c = [sin(x.c[0])], [cos(x.c[0])]
    for k in range(1, len(x.c)):
        ds = x.c[1] * c[k - 1]
        dc = x.c[1] * s[k - 1]
        for j in range(2, k + 1):
            ds = ds + (j * x.c[j]) * c[k - j]
            dc = dc + (j * x.c[j]) * s[k - j]
        s.append(ds / k)
        c.append(-dc / k)
    return s, c


def _sinh_cosh(x):
    """sinh and cosh of x together: sinh' = cosh, cosh' = sinh."""
    s, c = [np.sinh(x.c[0])], [np.cosh(x.c[0])]
    for k in range(1, len(x.c)):
        ds = x.c[1] * c[k - 1]
        dc = x.c[1] * s[k - 1]
        for j in range(2, k + 1):
            ds = ds + (j * x.c[j]) * c[k - j]
            dc = dc + (j * x.c[j]) * s[k - j]
        s.append(ds / k)
        c.append(dc / k)
    return s, c


def _tan_series(x):
    # tan' = 1 + tan^2
    return _integral(x.c, np.tan(x.c[0]),
                     lambda m, f: (1.0 if m == 0 else 0.0) + _conv(f, f, m))


def _inverse_series(f0, sign, shift, r):
    """f(a) with f' = sign * (shift + sign_sq * a^2) ** r: the inverse
    trigonometric and hyperbolic functions (shift, the sign of a^2 and r
    as given), the derivative's series by the power recurrence."""
    def series(x):
        sq_sign, const = shift
        inner = [(const if k == 0 else 0.0) + sq_sign * _conv(x.c, x.c, k)
                 for k in range(len(x.c))]
        g = _power_series(inner, r)
        return _integral(x.c, f0(x.c[0]), lambda m, f: sign * g[m])
    return series


def _cbrt_series(x):
    # a^(1/3) by the power recurrence, its first term cbrt's (real for a < 0)
    p = [np.cbrt(x.c[0])]
    a = x.c
    for k in range(1, len(a)):
        s = ((1.0 / 3.0 + 1.0) - k) * a[1] * p[k - 1]
        for j in range(2, k + 1):
            s = s + ((1.0 / 3.0 + 1.0) * j - k) * a[j] * p[k - j]
        p.append(s / (k * a[0]))
    return p


def _power_series(a, r):
    """a ** r for a constant r (a number, ndarray or jet of a smaller
    tag): p_0 = a_0^r, k a_0 p_k = sum_{j=1..k} ((r+1) j - k) a_j p_{k-j}.
    A whole r from 0 to 8 multiplies instead, so a_0 may be 0 or negative."""
    if not isinstance(r, Jet) and np.ndim(r) == 0 and float(r) == int(r) \
            and 0 <= int(r) <= 8:
        p = [np.ones(np.shape(base(a[0])))] + [np.zeros(np.shape(base(a[0])))] * (len(a) - 1)
        for _ in range(int(r)):
            p = [_conv(p, a, k) for k in range(len(a))]
        return p
    p = [power(a[0], r)]
    for k in range(1, len(a)):
        s = ((r + 1.0) * 1 - k) * a[1] * p[k - 1]
        for j in range(2, k + 1):
            s = s + ((r + 1.0) * j - k) * a[j] * p[k - j]
        p.append(s / (k * a[0]))
    return p


def power(x, y):
    """x ** y: a constant exponent (plain, or a jet of a smaller tag than
    x's) by the power recurrence, a variable one as exp(y log x)."""
    if not isinstance(x, Jet) and not isinstance(y, Jet):
        return np.power(x, y)
    if _tag(y) < _tag(x):
        return Jet(_power_series(x.c, y), x.tag)
    return exp(multiply(y, log(x)))


exp = _unary("exp", _exp_series)
expm1 = _unary("expm1", _expm1_series)
log = _unary("log", _log_series)
log1p = _unary("log1p", _log1p_series)
arctan = _unary("arctan", _arctan_series)
tanh = _unary("tanh", _tanh_series)
sin = _unary("sin", lambda x: _sin_cos(x)[0])
cos = _unary("cos", lambda x: _sin_cos(x)[1])
sqrt = _unary("sqrt", lambda x: _power_series(x.c, 0.5))
tan = _unary("tan", _tan_series)
sinh = _unary("sinh", lambda x: _sinh_cosh(x)[0])
cosh = _unary("cosh", lambda x: _sinh_cosh(x)[1])
# (shift: the sign of a^2 and the constant under the power)
arcsin = _unary("arcsin", _inverse_series(np.arcsin, 1.0, (-1.0, 1.0), -0.5))
arccos = _unary("arccos", _inverse_series(np.arccos, -1.0, (-1.0, 1.0), -0.5))
arcsinh = _unary("arcsinh", _inverse_series(np.arcsinh, 1.0, (1.0, 1.0), -0.5))
arccosh = _unary("arccosh", _inverse_series(np.arccosh, 1.0, (1.0, -1.0), -0.5))
arctanh = _unary("arctanh", _inverse_series(np.arctanh, 1.0, (-1.0, 1.0), -1.0))
cbrt = _unary("cbrt", _cbrt_series)


def sigmoid(x):
    """1 / (1 + exp(-x)), for plain numbers computed without overflow."""
    if isinstance(x, Jet):
        return Jet(_sigmoid_series(x), x.tag)
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


# -- the ops with kinks -------------------------------------------------------------

def _spread(x):
    """Elementwise, the largest magnitude of any derivative x carries (in
    every variable, nested ones too): 0 where x is a constant."""
    if not isinstance(x, Jet):
        return np.zeros(np.shape(x))
    out = _spread(x.c[0])
    for c in x.c[1:]:
        out = np.maximum(out, np.abs(base(c)))
        out = np.maximum(out, _spread(c))
    return out


def _refuse_near(gap, scale, what, moving):
    """NearKink where gap is within KINK_TOL (relative to scale) of 0 and
    `moving` (the derivatives of the operand, or of the difference of two)
    is not all 0: there the sides differ.  A constant exactly on a kink
    (relu of a structural zero, the maximum of two equal series) is no
    choice at all."""
    near = np.abs(gap) <= KINK_TOL * np.maximum(1.0, scale)
    if np.any(near & (moving > 0)) or np.any(near & (gap != 0)):
        raise NearKink(f"{what} at (or within {KINK_TOL:g} of) its kink")


def _masked(x, mask):
    """mask * x, the mask a constant ndarray of x's (broadcast) shape."""
    return Jet([mask * c for c in x.c], x.tag)


def relu(x):
    if not isinstance(x, Jet):
        return np.maximum(x, 0.0)
    v = base(x)
    _refuse_near(v, np.abs(v), "relu", _spread(x))
    return _masked(x, (v > 0) * 1.0)


def hypot(x, y):
    """sqrt(x^2 + y^2)."""
    if not (isinstance(x, Jet) or isinstance(y, Jet)):
        return np.hypot(x, y)
    return sqrt(add(multiply(x, x), multiply(y, y)))


def logaddexp(x, y):
    """log(e^x + e^y), the larger constant term m taken out: m + log(e^(x-m)
    + e^(y-m)), so that nothing overflows."""
    if not (isinstance(x, Jet) or isinstance(y, Jet)):
        return np.logaddexp(x, y)
    m = np.maximum(base(x), base(y))
    return add(m, log(add(exp(subtract(x, m)), exp(subtract(y, m)))))


def arctan2(x, y):
    """The angle of the point (y, x) (NumPy's order): its derivative in t is
    h = (y x' - x y') / (x^2 + y^2), so f_0 = arctan2(x_0, y_0) and
    f_k = h_{k-1} / k."""
    (x, y), tag = _lift(x, y)
    if not tag:
        return np.arctan2(x, y)
    a, b, order = x.c, y.c, x.order
    da = [(k + 1) * a[k + 1] for k in range(order)]
    db = [(k + 1) * b[k + 1] for k in range(order)]
    num = [_conv(b, da, k) - _conv(a, db, k) for k in range(order)]
    den = [_conv(a, a, k) + _conv(b, b, k) for k in range(order)]
    h = _quotient(num, den) if order else []
    return Jet([arctan2(a[0], b[0])] + [h[k - 1] / k for k in range(1, order + 1)], tag)


def absolute(x):
    if not isinstance(x, Jet):
        return np.abs(x)
    v = base(x)
    _refuse_near(v, np.abs(v), "abs", _spread(x))
    return _masked(x, np.sign(v))


def _choice(pick_x):
    def fn(x, y):
        (x, y), tag = _lift(x, y)
        if not tag:
            return (np.maximum if pick_x is np.greater else np.minimum)(x, y)
        a, b = base(x), base(y)
        _refuse_near(a - b, np.maximum(np.abs(a), np.abs(b)), fn.__name__,
                     _spread(subtract(x, y)))
        m = pick_x(a, b) * 1.0
        return add(_masked(x, m), _masked(y, 1.0 - m))
    fn.__name__ = "maximum" if pick_x is np.greater else "minimum"
    return fn


maximum = _choice(np.greater)
minimum = _choice(np.less)


def _extreme(x, axis, keepdims, which):
    """max or min over axis: the winner's series (ties share it evenly,
    which is a choice only where the tied series differ); a runner-up
    within KINK_TOL of the winner is a kink."""
    v = base(x)
    best = which(v, axis=axis, keepdims=True)
    win = (v == best) * 1.0
    ties = np.sum(win, axis=axis, keepdims=True)
    winner = _masked(x, win / ties).sum(axis=axis, keepdims=True)
    _refuse_near(v - best, np.abs(best), f"numpy.{which.__name__}",
                 _spread(subtract(x, winner)))
    return winner if keepdims else _masked(x, win / ties).sum(axis=axis)


def _reduction(which):
    def fn(a, axis=None, keepdims=False, **kwargs):
        if kwargs:
            raise TypeError(f"taylor: numpy.{which.__name__} with {', '.join(kwargs)}")
        if not isinstance(a, Jet):
            return which(a, axis=axis, keepdims=keepdims)
        if which in (np.sum, np.mean):
            return a._map(which, axis=axis, keepdims=keepdims)
        return _extreme(a, axis, keepdims, which)
    fn.__name__ = which.__name__
    return fn


def logsumexp(a, axis=None, keepdims=False):
    """log(sum(exp(a))) over axis, shifted by the (constant) max."""
    shift = np.max(base(a), axis=axis, keepdims=True)
    s = _reduction(np.sum)(exp(subtract(a, shift)), axis=axis, keepdims=keepdims)
    return add(log(s), np.max(base(a), axis=axis, keepdims=keepdims))


# -- layout: the same linear map on every coefficient --------------------------------

def _layout(fn):
    """fn applied to every coefficient of its array argument(s): the first
    argument, or each array of a sequence (stack, concatenate)."""
    def op(a, *args, **kwargs):
        seq = isinstance(a, (list, tuple))
        items, tag = _lift(*(a if seq else [a]))
        if not tag:
            return fn(list(items) if seq else items[0], *args, **kwargs)
        return Jet([fn([x.c[k] for x in items] if seq else items[0].c[k],
                       *args, **kwargs) for k in range(len(items[0].c))], tag)
    op.__name__ = fn.__name__
    return op


_NUMPY = {add: np.add, subtract: np.subtract, multiply: np.multiply,
          divide: np.divide, matmul: np.matmul}

_UFUNCS = {np.add: add, np.subtract: subtract, np.multiply: multiply,
           np.divide: divide, np.power: power, np.matmul: matmul,
           np.negative: lambda x: -x if isinstance(x, Jet) else np.negative(x),
           np.positive: lambda x: x,
           np.absolute: absolute, np.maximum: maximum, np.minimum: minimum,
           np.square: lambda x: multiply(x, x),
           np.exp: exp, np.expm1: expm1, np.log: log, np.log1p: log1p,
           np.tanh: tanh, np.sin: sin, np.cos: cos, np.sqrt: sqrt,
           np.arctan: arctan, np.tan: tan, np.sinh: sinh, np.cosh: cosh,
           np.arcsin: arcsin, np.arccos: arccos, np.arcsinh: arcsinh,
           np.arccosh: arccosh, np.arctanh: arctanh, np.cbrt: cbrt,
           np.arctan2: arctan2, np.hypot: hypot, np.logaddexp: logaddexp}

_FUNCTIONS = {np.sum: _reduction(np.sum), np.mean: _reduction(np.mean),
              np.max: _reduction(np.max), np.min: _reduction(np.min),
              np.amax: _reduction(np.max), np.amin: _reduction(np.min),
              **{f: _layout(f) for f in (np.reshape, np.transpose, np.stack,
                                         np.concatenate, np.squeeze,
                                         np.expand_dims, np.moveaxis,
                                         np.broadcast_to, np.ravel)}}
