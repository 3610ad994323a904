"""The elementwise ops, one row each: everything the Python side knows of an
op beyond its C rules (csrc/).

A row names the C op (``pyautodiff._core.OPS``) and gives its value on
plain numbers, NumPy's function for it, micrograd's ``_op`` label, the
operator or method of Value and Array that records it (for a binary
operator also its reflected method and the fused op that a number operand
on either side records), and the public ``ad.NAME`` function, if any.
Everything else is derived from the rows:

- the operators of Value, Traced, micrograd's Value and Array, and the
  ``ad.NAME`` functions, generated into pyautodiff/_generated/ by
  ``python -m pyautodiff.codegen`` (which reads this table);
- the tables below (BINARY, UNARY, REFLECTED), which the slow paths of
  value.py and array.py, and micrograd's engine, look ops up in;
- NumPy's function for each method (array.py's no-grad path), the ufuncs
  NumPy dispatches to Values and Arrays (numpy_interop.py), the ``_op``
  labels (value.py) and the elementwise part of ``pyautodiff.__all__``.

The C ops with no row are in OTHER_OPS, each with the reason; a test walks
the C enum so that every op is in one or the other.
"""
import math
import re
from dataclasses import dataclass

import numpy as np


# -- the values on plain numbers, as Python computes them (and raises) -------

def _pow(x, y):
    r = x ** y
    if r.__class__ is complex:   # Python floats give complex numbers here
        raise ValueError("math domain error")
    return r


def _sigmoid(x):
    # split by sign so that exp never overflows (csrc/internal.h does the same)
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


# The names a row's value expression may use besides x, y, c and Python's
# builtins: these, and _NAME for any function NAME of the math module (a
# row's "_log1p(x)" is math.log1p), found in the rows below.  (The
# generated operators look each up as one global.)
SCALAR_NAMES = {"_pow": _pow, "_sigmoid": _sigmoid}


# -- NumPy's functions, where NumPy has no ufunc for the op ----------------------

def _numpy_relu(x):
    return np.maximum(x, 0.0)


def _numpy_sigmoid(x):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(-np.abs(x))           # never overflows
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _swapped(ufunc):
    """ufunc with its operands swapped: the fused op c - x is ufunc(c, x)."""
    def swapped(x, c):
        return ufunc(c, x)
    swapped.__name__ = swapped.__qualname__ = f"swapped_{ufunc.__name__}"
    return swapped


@dataclass(frozen=True)
class Op:
    """One elementwise op."""

    # the C op: pyautodiff._core.OPS[name]
    name: str
    # its value on plain Python numbers, a Python expression in x (the
    # operand), y (a binary op's second operand) or c (the constant of an
    # op fused with a number), and SCALAR_NAMES; the C forward sweep
    # computes the same
    value: str
    # its partial derivatives, d/dx (and d/dy), as expressions in x, y, c
    # and v (the op's value): the differentiable rule that derivatives.py
    # applies to Values and Arrays when derivatives nest, as csrc/rules.h's
    # DA and DB are the C sweeps'.  They may name derivatives.RULE_NAMES:
    # a decision on values is a mask (a comparison entry), never an if on
    # the traced numbers, so that it holds at a replay's inputs too
    rule: tuple
    # NumPy's function of the same operands, in the same order (x, y),
    # (x, c) or (x): the no-grad path and NumPy's warnings
    numpy: object
    # micrograd's _op label of a Value recording the op; None for an op
    # only Arrays record
    label: str = None
    # the operator or method of Value and Array that records it
    method: str = None
    # for a binary operator: its reflected method (number op x) ...
    reflected: str = None
    # ... and (fused op, its constant c as an expression in the number
    # `other`) that `x op number` records, and that `number op x` records
    constant: tuple = None
    reflected_constant: tuple = None
    # the public ad.NAME(x), if any: a recorded Value or Array for one,
    # NumPy's function of a plain number or ndarray
    function: str = None


# The binary operators, the ops fused with a number that they record, the
# unary methods (the order of the generated operators).
ELEMENTWISE = (
    Op("ADD", "x + y", ("1", "1"), np.add, "+", "__add__", "__radd__",
       ("ADDC", "other"), ("ADDC", "other")),
    Op("SUB", "x - y", ("1", "-1"), np.subtract, "-", "__sub__", "__rsub__",
       ("ADDC", "-other"),              # x - c is x + (-c) exactly
       ("RSUBC", "other")),
    Op("MUL", "x * y", ("y", "x"), np.multiply, "*", "__mul__", "__rmul__",
       ("MULC", "other"), ("MULC", "other")),
    Op("DIV", "x / y", ("1 / y", "-v / y"), np.divide, "/", "__truediv__",
       "__rtruediv__",
       ("DIVC", "other"), ("RDIVC", "other")),
    Op("POW", "_pow(x, y)",
       # (no select for d/dx at y == 0: its derivative in y is x**-1 there)
       ("y * x ** (y - 1)", "select(v * log(x), mask('NE', v, 0.0))"),
       np.power, "**", "__pow__", "__rpow__",
       ("POWC", "other"), ("RPOWC", "other")),

    Op("ADDC", "x + c", ("1",), np.add, "+"),
    Op("MULC", "x * c", ("c",), np.multiply, "*"),
    Op("DIVC", "x / c", ("1 / c",), np.divide, "/"),
    Op("RSUBC", "c - x", ("-1",), _swapped(np.subtract), "-"),
    Op("RDIVC", "c / x", ("-v / x",), _swapped(np.divide), "/"),
    Op("POWC", "_pow(x, c)",
       ("0 if c == 0 else 2 * x if c == 2 else c * x ** (c - 1)",),
       np.power, "**"),   # _op: '**2', the exponent
    Op("RPOWC", "_pow(c, x)", ("v * log(c) if c > 0 else 0",),
       _swapped(np.power), "**"),

    Op("NEG", "-x", ("-1",), np.negative, "neg", "__neg__"),
    Op("ABS", "abs(x)", ("sign(x)",), np.absolute, "abs", "__abs__", function="abs"),
    Op("RELU", "0.0 if x < 0 else x", ("positive(v)",), _numpy_relu, "ReLU", "relu",
       function="relu"),
    Op("TANH", "_tanh(x)", ("1 - v * v",), np.tanh, "tanh", "tanh", function="tanh"),
    Op("EXP", "_exp(x)", ("v",), np.exp, "exp", "exp", function="exp"),
    Op("LOG", "_log(x)", ("1 / x",), np.log, "log", "log", function="log"),
    Op("SIGMOID", "_sigmoid(x)", ("v * (1 - v)",), _numpy_sigmoid, "sigmoid", "sigmoid",
       function="sigmoid"),
    Op("SIN", "_sin(x)", ("cos(x)",), np.sin, "sin", "sin", function="sin"),
    Op("COS", "_cos(x)", ("-sin(x)",), np.cos, "cos", "cos", function="cos"),
    Op("SQRT", "_sqrt(x)", ("0.5 / v",), np.sqrt, "sqrt", "sqrt", function="sqrt"),

    # an Array's a ** 2 (POWC with c == 2): NumPy computes it as a * a
    Op("SQUARE", "x * x", ("2 * x",), np.square),

    Op("LOG1P", "_log1p(x)", ("1 / (1 + x)",), np.log1p, "log1p", "log1p",
       function="log1p"),
    Op("EXPM1", "_expm1(x)", ("exp(x)",), np.expm1, "expm1", "expm1",
       function="expm1"),
    Op("ARCTAN", "_atan(x)", ("1 / (1 + x * x)",), np.arctan, "arctan",
       "arctan", function="arctan"),
    Op("TAN", "_tan(x)", ("1 + v * v",), np.tan, "tan", "tan", function="tan"),
    Op("ARCSIN", "_asin(x)", ("(1 - x * x) ** -0.5",), np.arcsin, "arcsin",
       "arcsin", function="arcsin"),
    Op("ARCCOS", "_acos(x)", ("-((1 - x * x) ** -0.5)",), np.arccos, "arccos",
       "arccos", function="arccos"),
    Op("SINH", "_sinh(x)", ("cosh(x)",), np.sinh, "sinh", "sinh", function="sinh"),
    Op("COSH", "_cosh(x)", ("sinh(x)",), np.cosh, "cosh", "cosh", function="cosh"),
    Op("ARCSINH", "_asinh(x)", ("(1 + x * x) ** -0.5",), np.arcsinh, "arcsinh",
       "arcsinh", function="arcsinh"),
    Op("ARCCOSH", "_acosh(x)", ("(x * x - 1) ** -0.5",), np.arccosh, "arccosh",
       "arccosh", function="arccosh"),
    Op("ARCTANH", "_atanh(x)", ("1 / (1 - x * x)",), np.arctanh, "arctanh",
       "arctanh", function="arctanh"),
    # from v: x ** (-2/3) is no real number for x < 0
    Op("CBRT", "_cbrt(x)", ("1 / (3 * v * v)",), np.cbrt, "cbrt", "cbrt",
       function="cbrt"),
)

ROWS = {op.name: op for op in ELEMENTWISE}

SCALAR_NAMES.update(
    (name, getattr(math, name[1:]))
    for op in ELEMENTWISE
    for name in re.findall(r"\b_[a-z0-9]+\b", op.value)
    if name not in SCALAR_NAMES and hasattr(math, name[1:]))

# The C ops with no row, and why.
OTHER_OPS = {
    "LEAF": "an input or a constant: no operands, no value to compute",
    # elementwise choices of Arrays (ad.maximum, ad.where): no operator of
    # Value's, NaN-safe rules in C, array.py's _binary_op and _select
    "MAXIMUM": "a choice (ad.maximum), array.py's _binary_op",
    "MINIMUM": "a choice (ad.minimum), array.py's _binary_op",
    "SELECT": "a choice by a mask (ad.where)",
    # comparisons: 1.0/0.0 masks and branch guards, no gradient
    "LT": "a comparison (<, >)", "LE": "a comparison (<=, >=)",
    "EQ": "a comparison (==)", "NE": "a comparison (!=)",
    # reductions over axes
    "SUM": "a reduction (sum, mean)", "MAX": "a reduction (max)",
    "MIN": "a reduction (min)", "LSE": "a reduction (logsumexp)",
    "PROD": "a reduction (prod)",
    # the layout of an Array's elements
    "RESHAPE": "a layout change", "GATHER": "indexing, transposes",
    "SCATTER": "concatenation",
    # binary functions of two traced operands with no operator of Value's:
    # numpy_elementwise.py records them
    "ARCTAN2": "a function of two operands (ad.arctan2)",
    "HYPOT": "a function of two operands (ad.hypot)",
    "LOGADDEXP": "a function of two operands (ad.logaddexp)",
    # an op whose rules are Python functions (ad.custom_op, matmul)
    "EXTERN": "a Python rule: extern.py",
    # a recorded derivative's adjoint times a partial (derivatives.times)
    "TIMES": "x * y, 0 where x is 0: derivatives.py's products",
    # piecewise constant, no derivative: np.floor & co. on Arrays, and the
    # entries that guard int(), round(), math.floor ... in a recording
    # (guards.py's STEPS)
    "FLOOR": "piecewise constant (np.floor, math.floor)",
    "CEIL": "piecewise constant (np.ceil, math.ceil)",
    "TRUNC": "piecewise constant (np.trunc, int(), math.trunc)",
    "RINT": "piecewise constant (np.rint, np.round, round())",
    "SIGN": "piecewise constant (np.sign)",
    "STOP": "the value with no derivative (ad.stop_gradient)",
}


# The piecewise-constant C ops (and STOP) on plain numbers and ndarrays, as
# csrc/rules.h computes them: what a traced value's entry of one holds.
STEPS = {"FLOOR": np.floor, "CEIL": np.ceil, "TRUNC": np.trunc, "RINT": np.rint,
         "SIGN": np.sign, "STOP": np.positive}


# The partial derivatives of the elementwise C ops without a row (as a
# row's rule column): a NaN operand wins, as in NumPy, and ties split the
# derivative in halves; the mask of a selection has none.
OTHER_PARTIALS = {
    "MAXIMUM": ("mask('LT', y, x) + 0.5 * mask('EQ', x, y)",
                "mask('LT', x, y) + 0.5 * mask('EQ', x, y)"),
    "MINIMUM": ("mask('LT', x, y) + 0.5 * mask('EQ', x, y)",
                "mask('LT', y, x) + 0.5 * mask('EQ', x, y)"),
    "SELECT": ("mask('NE', y, 0.0)", "0"),
    "ARCTAN2": ("y / (x * x + y * y)", "-x / (x * x + y * y)"),
    "HYPOT": ("x / v", "y / v"),
    "LOGADDEXP": ("exp(x - v)", "exp(y - v)"),
    # (the products these partials are multiplied with are TIMES too)
    "TIMES": ("y", "x"),
}


# -- derived tables ---------------------------------------------------------

def _binary_methods():
    """method: (op with a Value, fused op with a number, its constant c).
    Reflected methods take only numbers (a Value on the left of the
    operator handles the rest), so they have no op with a Value."""
    out = {}
    for op in ELEMENTWISE:
        if op.reflected:
            out[op.method] = (op.name,) + op.constant
            out[op.reflected] = (None,) + op.reflected_constant
    return out


BINARY = _binary_methods()

# the reflected method of each binary operator, and the other way round
REFLECTED = {op.method: op.reflected for op in ELEMENTWISE if op.reflected}
REFLECTED.update({v: k for k, v in REFLECTED.items()})

# unary method: its op
UNARY = {op.method: op.name for op in ELEMENTWISE
         if op.method and not op.reflected}


# -- an operator with a complex number ---------------------------------------------
# A real Value or Array records real numbers only: x * 1j, 2j + x and x * z
# for a complex ndarray z go to NumPy's ufunc of the operator, whose
# dispatch (numpy_interop.py) hands them to the complex arithmetic
# (complex_array.py), which keeps x as the real part of a complex pair.

# each binary operator's ufunc, and whether the method is reflected
# (other op x)
OPERATOR_UFUNCS = {op.method: (op.numpy, False) for op in ELEMENTWISE if op.reflected}
OPERATOR_UFUNCS.update({op.reflected: (op.numpy, True)
                        for op in ELEMENTWISE if op.reflected})


def is_complex_constant(x):
    """Whether x is a complex number or an ndarray of complex numbers."""
    return isinstance(x, (complex, np.complexfloating)) or \
        (isinstance(x, np.ndarray) and x.dtype.kind == "c")


def complex_operator(name, x, other):
    """x's operator `name` with a complex constant other, through NumPy."""
    ufunc, reflected = OPERATOR_UFUNCS[name]
    return ufunc(other, x) if reflected else ufunc(x, other)
