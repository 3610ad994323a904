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

The elementwise ops are one table, ``RULES``, a row per op named as the C
op table and rules.py name it: its value on plain numbers (NumPy's
function) and its rule on jets.  A jet's operators and methods and NumPy's
ufuncs on jets all look ops up there, so a new op is its series and a row;
``ABSENT`` gives the reason of each elementwise C op with no row (a test
walks the C ops for both).

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
import functools
import itertools
import operator
from typing import NamedTuple

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

    # -- operators: the table's ops --
    def __add__(self, o):
        return apply("add", self, o)

    def __radd__(self, o):
        return apply("add", o, self)

    def __sub__(self, o):
        return apply("sub", self, o)

    def __rsub__(self, o):
        return apply("sub", o, self)

    def __mul__(self, o):
        return apply("mul", self, o)

    def __rmul__(self, o):
        return apply("mul", o, self)

    def __truediv__(self, o):
        return apply("div", self, o)

    def __rtruediv__(self, o):
        return apply("div", o, self)

    def __pow__(self, o):
        return apply("pow", self, o)

    def __rpow__(self, o):
        return apply("pow", o, self)

    def __matmul__(self, o):
        return matmul(self, o)

    def __rmatmul__(self, o):
        return matmul(o, self)

    def __neg__(self):
        return apply("neg", self)

    def __pos__(self):
        return self

    def __abs__(self):
        return apply("abs", self)

    def __getitem__(self, index):
        return self._map(lambda c: c[index])

    # -- methods, as Values and Arrays spell them --
    def __getattr__(self, name):
        """x.tanh(), x.exp() ...: the table's ops that have a method."""
        op = _METHODS.get(name)
        if op is None:
            raise AttributeError(f"taylor.Jet has no attribute {name!r}")
        return lambda: apply(op, self)

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


def _product(a, b):
    return [_conv(a, b, k) for k in range(len(a))]


def _quotient(a, b):
    """q = a / b: b_0 q_k = a_k - sum_{i>=1} b_i q_{k-i}."""
    q = []
    for k in range(len(a)):
        r = a[k]
        for i in range(1, k + 1):
            r = r - b[i] * q[k - i]
        q.append(r / b[0])
    return q


def _reciprocal(a):
    """1 / a."""
    return _quotient([1.0] + [0.0] * (len(a) - 1), a)


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
    p = [np.power(a[0], r)]
    for k in range(1, len(a)):
        s = ((r + 1.0) * 1 - k) * a[1] * p[k - 1]
        for j in range(2, k + 1):
            s = s + ((r + 1.0) * j - k) * a[j] * p[k - j]
        p.append(s / (k * a[0]))
    return p


# -- the series of the elementwise functions: a's coefficients in, f(a)'s out ---------
# (a coefficient may be a jet of an outer variable: np.exp and the like reach
# the table through NumPy's protocols)

def _exp(a):
    return _integral(a, np.exp(a[0]), lambda m, f: f[m])


def _expm1(a):
    # expm1's derivative is exp: the series of exp(a), its first term
    # taken from expm1 (exact where a_0 is tiny)
    return [np.expm1(a[0])] + _exp(a)[1:]


def _log(a):
    g = _reciprocal(a)
    return _integral(a, np.log(a[0]), lambda m, f: g[m])


def _log1p(a):
    g = _reciprocal([1.0 + a[0]] + list(a[1:]))
    return _integral(a, np.log1p(a[0]), lambda m, f: g[m])


def _arctan(a):
    g = _reciprocal([(1.0 if k == 0 else 0.0) + _conv(a, a, k) for k in range(len(a))])
    return _integral(a, np.arctan(a[0]), lambda m, f: g[m])


def _tanh(a):
    # tanh' = 1 - tanh^2, a series in tanh's own coefficients so far
    return _integral(a, np.tanh(a[0]),
                     lambda m, f: (1.0 if m == 0 else 0.0) - _conv(f, f, m))


def _sigmoid(a):
    # sigmoid' = s - s^2
    return _integral(a, sigmoid(a[0]), lambda m, f: f[m] - _conv(f, f, m))


def _tan(a):
    # tan' = 1 + tan^2
    return _integral(a, np.tan(a[0]),
                     lambda m, f: (1.0 if m == 0 else 0.0) + _conv(f, f, m))


def _pair(f0, g0, sign):
    """f(a) and g(a) together where f' = g and g' = sign * f: sin and cos
    (sign -1), sinh and cosh (sign 1)."""
    def series(a):
        f, g = [f0(a[0])], [g0(a[0])]
        for k in range(1, len(a)):
            df = a[1] * g[k - 1]
            dg = a[1] * f[k - 1]
            for j in range(2, k + 1):
                df = df + (j * a[j]) * g[k - j]
                dg = dg + (j * a[j]) * f[k - j]
            f.append(df / k)
            g.append(dg / k if sign > 0 else -dg / k)
        return f, g
    return series


_sin_cos = _pair(np.sin, np.cos, -1.0)
_sinh_cosh = _pair(np.sinh, np.cosh, 1.0)


def _inverse(f0, sign, shift, r):
    """f(a) with f' = sign * (const + sq_sign * a^2) ** r, shift being
    (sq_sign, const): the inverse trigonometric and hyperbolic functions,
    the derivative's series by the power recurrence."""
    def series(a):
        sq_sign, const = shift
        inner = [(const if k == 0 else 0.0) + sq_sign * _conv(a, a, k)
                 for k in range(len(a))]
        g = _power_series(inner, r)
        return _integral(a, f0(a[0]), lambda m, f: sign * g[m])
    return series


def _cbrt(a):
    # a^(1/3) by the power recurrence, its first term cbrt's (real for a < 0)
    p = [np.cbrt(a[0])]
    for k in range(1, len(a)):
        s = ((1.0 / 3.0 + 1.0) - k) * a[1] * p[k - 1]
        for j in range(2, k + 1):
            s = s + ((1.0 / 3.0 + 1.0) * j - k) * a[j] * p[k - j]
        p.append(s / (k * a[0]))
    return p


# -- the rules that are not one series of one operand ---------------------------------

def _series(series):
    """The rule of a function of one jet: its series of the coefficients."""
    def rule(x):
        return Jet(series(x.c), x.tag)
    return rule


def _lifted(series):
    """The rule of an op of two operands: its series of the coefficients of
    both, lifted to one variable (the other a constant in it)."""
    def rule(x, y):
        (x, y), tag = _lift(x, y)
        return Jet(series(x.c, y.c), tag)
    return rule


def _power(x, y):
    """x ** y: a constant exponent (plain, or a jet of a smaller tag than
    x's) by the power recurrence, a variable one as exp(y log x)."""
    if _tag(y) < _tag(x):
        return Jet(_power_series(x.c, y), x.tag)
    return np.exp(y * np.log(x))


def _arctan2(x, y):
    """The angle of the point (y, x) (NumPy's order): its derivative in t is
    h = (y x' - x y') / (x^2 + y^2), so f_0 = arctan2(x_0, y_0) and
    f_k = h_{k-1} / k."""
    (x, y), tag = _lift(x, y)
    a, b, order = x.c, y.c, x.order
    da = [(k + 1) * a[k + 1] for k in range(order)]
    db = [(k + 1) * b[k + 1] for k in range(order)]
    num = [_conv(b, da, k) - _conv(a, db, k) for k in range(order)]
    den = [_conv(a, a, k) + _conv(b, b, k) for k in range(order)]
    h = _quotient(num, den) if order else []
    return Jet([np.arctan2(a[0], b[0])] + [h[k - 1] / k for k in range(1, order + 1)], tag)


def _logaddexp(x, y):
    """log(e^x + e^y), the larger constant term m taken out: m + log(e^(x-m)
    + e^(y-m)), so that nothing overflows."""
    m = np.maximum(base(x), base(y))
    return m + np.log(np.exp(x - m) + np.exp(y - m))


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


def _sign_rule(name, sign):
    """relu and abs: x times sign(x_0), a constant, off the kink at 0."""
    def rule(x):
        v = base(x)
        _refuse_near(v, np.abs(v), name, _spread(x))
        return _masked(x, sign(v))
    return rule


def _choice(pick_x, name):
    """maximum and minimum: the series of the operand picked by its value."""
    def rule(x, y):
        (x, y), tag = _lift(x, y)
        a, b = base(x), base(y)
        _refuse_near(a - b, np.maximum(np.abs(a), np.abs(b)), name, _spread(x - y))
        m = pick_x(a, b) * 1.0
        return _masked(x, m) + _masked(y, 1.0 - m)
    return rule


def _plain_sigmoid(x):
    """1 / (1 + exp(-x)) of plain numbers, computed without overflow."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


# -- the table: one row per elementwise op ------------------------------------------

class Rule(NamedTuple):
    """An elementwise op on jets: ``plain``, its value on numbers and
    ndarrays (NumPy's function, which is then the ufunc a jet answers
    to); ``jet``, the result from operands of which one at least is a jet;
    ``method``, the method name jets have for it (as Values and Arrays
    spell it), if any."""
    plain: object
    jet: object
    method: str = None


# The elementwise ops of the C op table (csrc/rules.h, pyautodiff/ops.py),
# by their names there (lowercase, as rules.py's rows): a new one is a row
# here, with its series written from the math above.
RULES = {
    "add": Rule(np.add, _lifted(lambda a, b: [p + q for p, q in zip(a, b)])),
    "sub": Rule(np.subtract, _lifted(lambda a, b: [p - q for p, q in zip(a, b)])),
    "mul": Rule(np.multiply, _lifted(_product)),
    "div": Rule(np.divide, _lifted(_quotient)),
    "pow": Rule(np.power, _power),
    "neg": Rule(np.negative, lambda x: x._map(np.negative)),
    "abs": Rule(np.absolute, _sign_rule("abs", np.sign)),
    "relu": Rule(lambda x: np.maximum(x, 0.0), _sign_rule("relu", lambda v: (v > 0) * 1.0),
                 "relu"),
    "tanh": Rule(np.tanh, _series(_tanh), "tanh"),
    "exp": Rule(np.exp, _series(_exp), "exp"),
    "log": Rule(np.log, _series(_log), "log"),
    "sigmoid": Rule(_plain_sigmoid, _series(_sigmoid), "sigmoid"),
    "sin": Rule(np.sin, _series(lambda a: _sin_cos(a)[0]), "sin"),
    "cos": Rule(np.cos, _series(lambda a: _sin_cos(a)[1]), "cos"),
    "sqrt": Rule(np.sqrt, _series(lambda a: _power_series(a, 0.5)), "sqrt"),
    "maximum": Rule(np.maximum, _choice(np.greater, "maximum")),
    "minimum": Rule(np.minimum, _choice(np.less, "minimum")),
    "square": Rule(np.square, lambda x: x * x),
    "log1p": Rule(np.log1p, _series(_log1p), "log1p"),
    "expm1": Rule(np.expm1, _series(_expm1), "expm1"),
    "arctan": Rule(np.arctan, _series(_arctan), "arctan"),
    "tan": Rule(np.tan, _series(_tan), "tan"),
    # (shift: the sign of a^2 and the constant under the power)
    "arcsin": Rule(np.arcsin, _series(_inverse(np.arcsin, 1.0, (-1.0, 1.0), -0.5)), "arcsin"),
    "arccos": Rule(np.arccos, _series(_inverse(np.arccos, -1.0, (-1.0, 1.0), -0.5)), "arccos"),
    "sinh": Rule(np.sinh, _series(lambda a: _sinh_cosh(a)[0]), "sinh"),
    "cosh": Rule(np.cosh, _series(lambda a: _sinh_cosh(a)[1]), "cosh"),
    "arcsinh": Rule(np.arcsinh, _series(_inverse(np.arcsinh, 1.0, (1.0, 1.0), -0.5)), "arcsinh"),
    "arccosh": Rule(np.arccosh, _series(_inverse(np.arccosh, 1.0, (1.0, -1.0), -0.5)), "arccosh"),
    "arctanh": Rule(np.arctanh, _series(_inverse(np.arctanh, 1.0, (-1.0, 1.0), -1.0)), "arctanh"),
    "cbrt": Rule(np.cbrt, _series(_cbrt), "cbrt"),
    "arctan2": Rule(np.arctan2, _arctan2),
    "hypot": Rule(np.hypot, lambda x, y: np.sqrt(x * x + y * y)),
    "logaddexp": Rule(np.logaddexp, _logaddexp),
}

# The elementwise C ops with no row, and why.
ABSENT = {
    **{name: f"{of} with a number, which a jet lifts to a constant series"
       for name, of in [("addc", "add"), ("mulc", "mul"), ("divc", "div"),
                        ("rsubc", "sub"), ("rdivc", "div"), ("powc", "pow"),
                        ("rpowc", "pow")]},
    "select": "ad.where's choice by a comparison's mask: a jet has no truth "
              "value, and np.where no rule here",
    "times": "the product of an adjoint and a partial that nested derivatives "
             "record (derivatives.py), never a program's: a jet's product is mul",
}


def apply(name, *operands):
    """The table's op `name` of the operands: its jet rule where one is a
    jet, its plain value otherwise."""
    rule = RULES[name]
    if any(isinstance(x, Jet) for x in operands):
        return rule.jet(*operands)
    return rule.plain(*operands)


def sigmoid(x):
    """ad.sigmoid's stand-in."""
    return apply("sigmoid", x)


def relu(x):
    """ad.relu's stand-in."""
    return apply("relu", x)


def matmul(x, y):
    """x @ y: the product of two series, with np.matmul for the product of
    two coefficients."""
    if not (isinstance(x, Jet) or isinstance(y, Jet)):
        return np.matmul(x, y)
    (x, y), tag = _lift(x, y)
    return Jet([_conv(x.c, y.c, k, np.matmul) for k in range(len(x.c))], tag)


# -- reductions --------------------------------------------------------------------

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
                 _spread(x - winner))
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
    s = _reduction(np.sum)(np.exp(a - shift), axis=axis, keepdims=keepdims)
    return np.log(s) + np.max(base(a), axis=axis, keepdims=keepdims)


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


# NumPy's ufuncs on jets: the table's, by their plain value, and two more
_UFUNCS = {rule.plain: functools.partial(apply, name)
           for name, rule in RULES.items() if isinstance(rule.plain, np.ufunc)}
_UFUNCS.update({np.positive: lambda x: x, np.matmul: matmul})

# the methods of the table's ops
_METHODS = {rule.method: name for name, rule in RULES.items() if rule.method}

_FUNCTIONS = {np.sum: _reduction(np.sum), np.mean: _reduction(np.mean),
              np.max: _reduction(np.max), np.min: _reduction(np.min),
              np.amax: _reduction(np.max), np.amin: _reduction(np.min),
              **{f: _layout(f) for f in (np.reshape, np.transpose, np.stack,
                                         np.concatenate, np.squeeze,
                                         np.expand_dims, np.moveaxis,
                                         np.broadcast_to, np.ravel)}}
