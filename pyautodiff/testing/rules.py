"""The oracles' op table: what every elementwise op computes and its first
and second partial derivatives, one row per op, written from the math.

The dual numbers (dual.py), the hyper-dual numbers (hyperdual.py) and the
NumPy forward-mode reference (arrays.py) all read these rows and nothing
else, so an op's derivative is written once for every oracle.  The rows are
calculus, not a copy of pyautodiff: never derive them from csrc/rules.h or
from the package's code, or the oracles stop being independent.  Row names
are the C ops' names (lowercase) so that a test can check that every op of
the C enum has a row here or is listed as not elementwise.

A row is a ``Rule``.  Its functions take the operands' values: ``(x,)`` for
a unary op, ``(x, y)`` for a binary one, and ``(x, c)`` for a binary op
with a constant c on one side (only x carries a derivative); the partials
take the op's value ``v`` too:

    value(*operands) -> v
    d  = (dv/dx[, dv/dy])                    each f(*operands, v)
    dd = (d2v/dx2[, d2v/dxdy, d2v/dy2])      each f(*operands, v)

The same functions run on plain floats (Python's math module: a domain
error or an overflow raises) and on ndarrays (NumPy's functions and
broadcasting: infinities and NaNs).  An oracle evaluates a partial only
where the operand it belongs to carries a tangent, so d/dy of x ** y (which
takes log x) is never asked of a constant exponent.  Where a partial is an
absolute zero times something infinite at a limit (d/dx x ** 0 at x = 0),
the row says 0 (``_times``).

``method`` is how Python code writes the op on a number type: a dunder
(``__add__``; a binary op's reflected form follows), a method name
(``tanh``) or, for an op of two operands with a NumPy name (``arctan2``),
that name: the oracles' numbers have it as a method ``x.arctan2(y)``, and
Values and Arrays are called with NumPy's function; None where Python has
no spelling for it (maximum, the mask of a selection, the comparisons,
whose Python forms give bools).  ``kink`` is
where the derivative jumps, as a function of the operands that is 0 there;
the conventions at a kink are the ones pyautodiff documents: relu'(0) = 0,
abs'(0) = 0, ties of maximum and minimum split the derivative in halves.

``domain`` is the open interval (lo, hi) of a unary op's operand that the
fuzzers and tests keep it in, either end None for no bound: where the op is
real (log: (0, None), log1p: (-1, None)) or, for exp, where a chain of it
stays finite.  ``into_domain`` maps any real number there, so a program
drawn at random stays in every op's domain by construction.

Ops that are not elementwise (reductions, reshapes, indexing, matrix
products, logsumexp) are the array reference's methods (arrays.py).
"""
import math
import numbers
import operator

import numpy as np


# -- the math the rows are written in, for plain floats and ndarrays alike --------

def _elementwise(scalar, array):
    """The function on plain floats (math), on ndarrays (NumPy) and, for a
    domain's map (``into_domain``), on any number type with a method of
    NumPy's name (a Value, an Array, a dual number)."""
    name = array.__name__

    def fn(x):
        if isinstance(x, np.ndarray):
            return array(x)
        if isinstance(x, numbers.Real):
            return scalar(x)
        return getattr(x, name)()
    fn.__name__ = name
    return fn


exp = _elementwise(math.exp, np.exp)
log = _elementwise(math.log, np.log)
tanh = _elementwise(math.tanh, np.tanh)
sin = _elementwise(math.sin, np.sin)
cos = _elementwise(math.cos, np.cos)
sqrt = _elementwise(math.sqrt, np.sqrt)
log1p = _elementwise(math.log1p, np.log1p)
expm1 = _elementwise(math.expm1, np.expm1)
arctan = _elementwise(math.atan, np.arctan)
tan = _elementwise(math.tan, np.tan)
arcsin = _elementwise(math.asin, np.arcsin)
arccos = _elementwise(math.acos, np.arccos)
sinh = _elementwise(math.sinh, np.sinh)
cosh = _elementwise(math.cosh, np.cosh)
arcsinh = _elementwise(math.asinh, np.arcsinh)
arccosh = _elementwise(math.acosh, np.arccosh)
arctanh = _elementwise(math.atanh, np.arctanh)
cbrt = _elementwise(math.cbrt, np.cbrt)


def _any_array(*xs):
    for x in xs:
        if isinstance(x, np.ndarray):
            return True
    return False


def where(cond, a, b):
    """a where cond holds, else b (both already computed)."""
    if _any_array(cond, a, b):
        return np.where(cond, a, b)
    return a if cond else b


def maximum(x, y):
    """The larger; a NaN operand wins, as in NumPy."""
    if _any_array(x, y):
        return np.maximum(x, y)
    return x if x >= y or x != x else y


def minimum(x, y):
    """The smaller; a NaN operand wins, as in NumPy."""
    if _any_array(x, y):
        return np.minimum(x, y)
    return x if x <= y or x != x else y


def arctan2(x, y):
    """The angle of the point (y, x), as NumPy's arctan2(x, y)."""
    if _any_array(x, y):
        return np.arctan2(x, y)
    return math.atan2(x, y)


def hypot(x, y):
    if _any_array(x, y):
        return np.hypot(x, y)
    return math.hypot(x, y)


def logaddexp(x, y):
    """log(exp(x) + exp(y)), on floats by the identity with the larger
    operand taken out (so it never overflows)."""
    if _any_array(x, y):
        return np.logaddexp(x, y)
    if x != x or y != y:
        return math.nan
    if x == y:
        return x + math.log(2.0)
    big, small = (x, y) if x > y else (y, x)
    return big + math.log1p(math.exp(small - big))


def _finite(y):
    """Whether y is finite (y - y is 0, not NaN), on any number type."""
    return (y - y) == 0


def _step(cond):
    """1.0 where cond holds, else 0.0."""
    return 1.0 * cond


def _sign(x):
    return _step(x > 0) - _step(x < 0)


def _times(k, fn, *args):
    """k * fn(*args), exactly 0 where k is 0: the limit of a partial that
    is 0 times an infinite fn there.  fn is not called for a float k == 0
    (0.0 ** -1 raises)."""
    if _any_array(k, *args):
        with np.errstate(all="ignore"):
            return np.where(k == 0, 0.0, k * fn(*args))
    return 0.0 if k == 0 else k * fn(*args)


def _sigmoid(x):
    e = exp(-abs(x))                # never overflows
    return where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


# -- the table ------------------------------------------------------------------------

class Rule:
    """One op of the table (see the module docstring).  constant: None, or
    the side of the binary op where the constant c sits ("right": x op c,
    "left": c op x)."""

    __slots__ = ("name", "arity", "value", "d", "dd", "method", "kink", "constant",
                 "domain")

    def __init__(self, name, arity, value, d, dd, method=None, kink=None,
                 constant=None, domain=(None, None)):
        self.name = name
        self.arity = arity
        self.value = value
        self.d = d
        self.dd = dd
        self.method = method
        self.kink = kink
        self.constant = constant
        self.domain = domain

    def __repr__(self):
        return f"Rule({self.name!r})"


def _c(k):
    """A partial that is the constant k."""
    return lambda *operands_and_value: k


_0 = _c(0.0)

_ROWS = [
    # name, value,
    #   (dv/dx, dv/dy),
    #   (d2v/dx2, d2v/dxdy, d2v/dy2),                               Python
    Rule("add", 2, lambda x, y: x + y,
         (_c(1.0), _c(1.0)),
         (_0, _0, _0),                                              "__add__"),
    Rule("sub", 2, lambda x, y: x - y,
         (_c(1.0), _c(-1.0)),
         (_0, _0, _0),                                              "__sub__"),
    Rule("mul", 2, lambda x, y: x * y,
         (lambda x, y, v: y, lambda x, y, v: x),
         (_0, _c(1.0), _0),                                         "__mul__"),
    Rule("div", 2, lambda x, y: x / y,
         (lambda x, y, v: 1.0 / y, lambda x, y, v: -v / y),
         (_0, lambda x, y, v: -1.0 / (y * y),
          lambda x, y, v: 2.0 * v / (y * y)),                       "__truediv__"),
    # x ** y: d/dx is 0 for y = 0 (a constant), d/dy is 0 where x ** y is
    # (x = 0 < y), whatever the infinite factor next to the 0
    Rule("pow", 2, lambda x, y: x ** y,
         (lambda x, y, v: _times(y, operator.pow, x, y - 1.0),
          lambda x, y, v: _times(v, log, x)),
         (lambda x, y, v: _times(y * (y - 1.0), operator.pow, x, y - 2.0),
          lambda x, y, v: x ** (y - 1.0) * (1.0 + y * log(x)),
          lambda x, y, v: _times(v, lambda x: log(x) ** 2, x)),    "__pow__"),
    Rule("maximum", 2, maximum,
         (lambda x, y, v: _step(x > y) + 0.5 * _step(x == y),
          lambda x, y, v: _step(y > x) + 0.5 * _step(x == y)),
         (_0, _0, _0), kink=lambda x, y: x - y),
    Rule("minimum", 2, minimum,
         (lambda x, y, v: _step(x < y) + 0.5 * _step(x == y),
          lambda x, y, v: _step(y < x) + 0.5 * _step(x == y)),
         (_0, _0, _0), kink=lambda x, y: x - y),
    # x where the mask m is nonzero, else 0: m is a mask, not a variable
    Rule("select", 2, lambda x, m: where(m != 0, x, 0.0),
         (lambda x, m, v: _step(m != 0), _0),
         (_0, _0, _0)),
    # comparisons: 1.0 or 0.0, constant wherever they are differentiable
    Rule("lt", 2, lambda x, y: _step(x < y), (_0, _0), (_0, _0, _0)),
    Rule("le", 2, lambda x, y: _step(x <= y), (_0, _0), (_0, _0, _0)),
    Rule("eq", 2, lambda x, y: _step(x == y), (_0, _0), (_0, _0, _0)),
    Rule("ne", 2, lambda x, y: _step(x != y), (_0, _0), (_0, _0, _0)),

    # name, value, (dv/dx,), (d2v/dx2,)                            Python
    Rule("neg", 1, lambda x: -x, (_c(-1.0),), (_0,),               "__neg__"),
    Rule("abs", 1, abs, (lambda x, v: _sign(x),), (_0,),           "__abs__",
         kink=lambda x: x),
    Rule("relu", 1, lambda x: maximum(x, 0.0),
         (lambda x, v: _step(x > 0),), (_0,),                      "relu",
         kink=lambda x: x),
    Rule("tanh", 1, tanh,
         (lambda x, v: 1.0 - v * v,),
         (lambda x, v: -2.0 * v * (1.0 - v * v),),                 "tanh"),
    Rule("exp", 1, exp, (lambda x, v: v,), (lambda x, v: v,),      "exp",
         domain=(-2.0, 2.0)),
    Rule("log", 1, log,
         (lambda x, v: 1.0 / x,),
         (lambda x, v: -1.0 / (x * x),),                           "log",
         domain=(0.0, None)),
    Rule("sigmoid", 1, _sigmoid,
         (lambda x, v: v * (1.0 - v),),
         (lambda x, v: v * (1.0 - v) * (1.0 - 2.0 * v),),          "sigmoid"),
    Rule("sin", 1, sin, (lambda x, v: cos(x),), (lambda x, v: -v,), "sin"),
    Rule("cos", 1, cos, (lambda x, v: -sin(x),), (lambda x, v: -v,), "cos"),
    Rule("sqrt", 1, sqrt,
         (lambda x, v: 0.5 / v,),
         (lambda x, v: -0.25 / (v * v * v),),                      "sqrt",
         domain=(0.0, None)),
    Rule("square", 1, lambda x: x * x, (lambda x, v: 2.0 * x,), (_c(2.0),)),
    Rule("log1p", 1, log1p,
         (lambda x, v: 1.0 / (1.0 + x),),
         (lambda x, v: -1.0 / ((1.0 + x) * (1.0 + x)),),           "log1p",
         domain=(-1.0, None)),
    # exp(x), not v + 1, which is 0 where x is very negative
    Rule("expm1", 1, expm1, (lambda x, v: exp(x),), (lambda x, v: exp(x),),
         "expm1", domain=(-2.0, 2.0)),
    Rule("arctan", 1, arctan,
         (lambda x, v: 1.0 / (1.0 + x * x),),
         (lambda x, v: -2.0 * x / ((1.0 + x * x) * (1.0 + x * x)),), "arctan"),
    # tan' = sec^2 = 1 + tan^2; its derivative 2 tan sec^2
    Rule("tan", 1, tan,
         (lambda x, v: 1.0 / (cos(x) * cos(x)),),
         (lambda x, v: 2.0 * sin(x) / (cos(x) * cos(x) * cos(x)),), "tan",
         domain=(-1.2, 1.2)),
    # arcsin, arccos and arctanh are real on (-1, 1); their domains stop
    # short of it, as into_domain's tanh rounds to +-1 for large operands
    Rule("arcsin", 1, arcsin,
         (lambda x, v: (1.0 - x * x) ** -0.5,),
         (lambda x, v: x * (1.0 - x * x) ** -1.5,),                "arcsin",
         domain=(-0.9, 0.9)),
    Rule("arccos", 1, arccos,
         (lambda x, v: -(1.0 - x * x) ** -0.5,),
         (lambda x, v: -x * (1.0 - x * x) ** -1.5,),               "arccos",
         domain=(-0.9, 0.9)),
    Rule("sinh", 1, sinh, (lambda x, v: cosh(x),), (lambda x, v: sinh(x),),
         "sinh", domain=(-2.0, 2.0)),
    Rule("cosh", 1, cosh, (lambda x, v: sinh(x),), (lambda x, v: cosh(x),),
         "cosh", domain=(-2.0, 2.0)),
    Rule("arcsinh", 1, arcsinh,
         (lambda x, v: (x * x + 1.0) ** -0.5,),
         (lambda x, v: -x * (x * x + 1.0) ** -1.5,),               "arcsinh"),
    Rule("arccosh", 1, arccosh,
         (lambda x, v: (x * x - 1.0) ** -0.5,),
         (lambda x, v: -x * (x * x - 1.0) ** -1.5,),               "arccosh",
         domain=(1.0, None)),
    Rule("arctanh", 1, arctanh,
         (lambda x, v: 1.0 / (1.0 - x * x),),
         (lambda x, v: 2.0 * x / ((1.0 - x * x) * (1.0 - x * x)),), "arctanh",
         domain=(-0.9, 0.9)),
    # x^(1/3): (1/3) x^(-2/3), (-2/9) x^(-5/3), written with cbrt so that
    # they hold for x < 0 too; kept off 0, where both are infinite
    Rule("cbrt", 1, cbrt,
         (lambda x, v: 1.0 / (3.0 * cbrt(x * x)),),
         (lambda x, v: -2.0 / (9.0 * x * cbrt(x * x)),),           "cbrt",
         domain=(0.0, None)),
    # arctan2(x, y), the angle of (y, x): d/dx = y / r^2, d/dy = -x / r^2
    Rule("arctan2", 2, arctan2,
         (lambda x, y, v: y / (x * x + y * y),
          lambda x, y, v: -x / (x * x + y * y)),
         (lambda x, y, v: -2.0 * x * y / (x * x + y * y) ** 2,
          lambda x, y, v: (x * x - y * y) / (x * x + y * y) ** 2,
          lambda x, y, v: 2.0 * x * y / (x * x + y * y) ** 2),       "arctan2"),
    Rule("hypot", 2, hypot,
         (lambda x, y, v: x / hypot(x, y), lambda x, y, v: y / hypot(x, y)),
         (lambda x, y, v: y * y / hypot(x, y) ** 3,
          lambda x, y, v: -x * y / hypot(x, y) ** 3,
          lambda x, y, v: x * x / hypot(x, y) ** 3),                "hypot"),
    # the partials are the softmax weights e^x / (e^x + e^y) and e^y / (...)
    Rule("logaddexp", 2, logaddexp,
         (lambda x, y, v: 1.0 / (1.0 + exp(y - x)),
          lambda x, y, v: 1.0 / (1.0 + exp(x - y))),
         (lambda x, y, v: exp(y - x) / (1.0 + exp(y - x)) ** 2,
          lambda x, y, v: -exp(y - x) / (1.0 + exp(y - x)) ** 2,
          lambda x, y, v: exp(x - y) / (1.0 + exp(x - y)) ** 2),    "logaddexp"),
    # x * y where x is not 0, else 0 (an adjoint times a partial)
    Rule("times", 2, lambda x, y: where((x != 0) | _finite(y), x * y, 0.0 * x),
         (lambda x, y, v: y, lambda x, y, v: x),
         (_0, _c(1.0), _0)),
]


def _with_constant(name, of, side):
    """The binary rule `of` with a constant c on `side`: x op c ("right")
    or c op x ("left"), as a rule of (x, c).  It reads the binary row at
    each call, so a change to that row is a change to this one."""
    binary = RULES[of]
    if side == "right":
        return Rule(name, 1, lambda x, c: binary.value(x, c),
                    (lambda x, c, v: binary.d[0](x, c, v),),
                    (lambda x, c, v: binary.dd[0](x, c, v),),
                    binary.method, constant=side)
    return Rule(name, 1, lambda x, c: binary.value(c, x),
                (lambda x, c, v: binary.d[1](c, x, v),),
                (lambda x, c, v: binary.dd[2](c, x, v),),
                binary.method, constant=side)


RULES = {rule.name: rule for rule in _ROWS}

# the unary rows: the elementwise ops of one operand and no constant
UNARY = {name: rule for name, rule in RULES.items()
         if rule.arity == 1 and rule.constant is None}

# the binary ops with a constant operand, each a row of its own
for _name, _of, _side in [("addc", "add", "right"), ("mulc", "mul", "right"),
                          ("divc", "div", "right"), ("rsubc", "sub", "left"),
                          ("rdivc", "div", "left"), ("powc", "pow", "right"),
                          ("rpowc", "pow", "left")]:
    RULES[_name] = _with_constant(_name, _of, _side)
del _name, _of, _side


def spelled(rule):
    """The op as Python code writes it, a function of the rule's operands:
    ``spelled(RULES["rsubc"])(x, c)`` is ``c - x`` on whatever x is (a
    dual number, a pyautodiff Value ...).  None where Python has no
    spelling for the op."""
    name = rule.method
    if name is None:
        return None
    if not name.startswith("__"):
        if rule.arity == 2 and not rule.constant:
            return _two_operands(name)
        return operator.methodcaller(name)
    fn = getattr(operator, name.strip("_"))
    if rule.constant == "left":
        return lambda x, c: fn(c, x)
    return fn


def _two_operands(name):
    """x.name(y) where x's class has that method (the oracles' numbers),
    else NumPy's function name(x, y) (Values, Arrays, floats)."""
    def fn(x, y):
        method = getattr(type(x), name, None)
        return method(x, y) if method is not None else getattr(np, name)(x, y)
    fn.__name__ = name
    return fn


def into_domain(rule, x, add=operator.add, mul=operator.mul, tanh=tanh):
    """x, any real number, mapped into rule.domain by arithmetic: x itself
    without bounds, x*x + lo + 0.5 above lo, hi - 0.5 - x*x below hi, and
    the middle plus the half width times tanh(x) between two bounds.  On
    Values, Arrays and dual numbers the map is part of the program (it runs
    through their operators and methods); a backend with other spellings
    passes its own add, mul and tanh."""
    lo, hi = rule.domain
    if lo is None and hi is None:
        return x
    if hi is None:
        return add(mul(x, x), lo + 0.5)
    if lo is None:
        return add(mul(mul(x, x), -1.0), hi - 0.5)
    out = mul(tanh(x), 0.5 * (hi - lo))
    return out if lo + hi == 0 else add(out, 0.5 * (lo + hi))


def inside(rule, x):
    """True where every element of x (a float or an ndarray) is in
    rule.domain, its bounds excluded."""
    lo, hi = rule.domain
    x = np.asarray(x)
    return bool((lo is None or np.all(x > lo)) and (hi is None or np.all(x < hi)))
