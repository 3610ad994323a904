"""Every op of the C enum against the oracle table (pyautodiff/testing/
rules.py: each elementwise op's value and partials, written from the math):
on Values, their gradients against the row's partials, central differences
and forward-mode duals; on Arrays, values and gradients against the row on
NumPy; and the table itself against central differences."""
import math
import operator

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import _core, derivatives, ops
from pyautodiff.testing.rules import RULES, spelled
from helpers import (COMPARISON_OPS, NOT_ELEMENTWISE, VALUE_OPS, central_diff,
                     dual_grad)

# where each op is checked, inside its domain (the default: (0.7,) for one
# operand, (0.7, -1.3) for two), and the constant c of a row with one
POINTS = {
    "pow": [(0.7, -1.3), (2.0, 3.0)],
    "powc": [(0.7,), (-1.2,)],
    "abs": [(0.7,), (-1.3,)],
    "relu": [(0.7,), (-1.3,)],
    "sigmoid": [(0.7,), (-30.0,)],
    "log1p": [(0.7,), (-0.999,), (1e-12,)],
    "expm1": [(0.7,), (-40.0,), (1e-12,)],      # expm1'(-40) is exp(-40), not 0
    "arctan": [(0.7,), (-3.0,), (40.0,)],
    "maximum": [(0.7, -1.3), (-1.3, 0.7), (0.5, 0.5)],     # a tie: halves
    "minimum": [(0.7, -1.3), (-1.3, 0.7), (0.5, 0.5)],
    "select": [(0.7, 1.0), (0.7, 0.0)],                     # (x, the mask)
    "arccosh": [(1.7,), (3.0,)],
    "cbrt": [(0.7,), (-1.3,)],
    "tan": [(0.7,), (-1.4,)],
    "arctan2": [(0.7, -1.3), (-0.4, 0.9), (1.0, 0.0)],
    "logaddexp": [(0.7, -1.3), (1000.0, 999.0), (0.5, 0.5)],
    "hypot": [(0.7, -1.3), (-3.0, 4.0)],
    "times": [(0.7, -1.3), (0.0, 2.0)],                     # 0 where x is 0
    "lt": [(0.7, -1.3), (-1.3, 0.7), (0.5, 0.5)],
    "le": [(0.7, -1.3), (-1.3, 0.7), (0.5, 0.5)],
    "eq": [(0.7, -1.3), (0.5, 0.5)],
    "ne": [(0.7, -1.3), (0.5, 0.5)],
}
CONSTANT = {"powc": 3.0}        # x ** 3 is real at negative x too
# ops no Python spelling records: the functions that record them (on the
# oracles' numbers, the row itself)


def _times(x, y):
    if isinstance(x, (ad.Value, ad.Array)) or isinstance(y, (ad.Value, ad.Array)):
        return derivatives._times(x, y)
    return RULES["times"].value(x, y)


UNSPELLED = {"times": _times}


def points(name):
    return POINTS.get(name, [(0.7,)] if RULES[name].arity == 1 else [(0.7, -1.3)])


def operands(name, xs):
    """The row's operands at a point: a constant form takes c too."""
    return (*xs, CONSTANT.get(name, 2.5)) if RULES[name].constant else xs


def expected_grad(name, xs):
    """The row's first partials at xs."""
    rule = RULES[name]
    args = operands(name, xs)
    v = rule.value(*args)
    return v, [d(*args, v) for d in rule.d]


def test_every_op_of_the_enum_has_an_oracle_row_or_is_not_elementwise():
    for name in _core.OPS:
        assert (name.lower() in RULES) != (name in NOT_ELEMENTWISE), name
    assert set(RULES) <= {name.lower() for name in _core.OPS}


def _on_values(name):
    if name in UNSPELLED:
        return UNSPELLED[name]
    rule = RULES[name]
    fn = spelled(rule)
    if rule.constant:
        c = CONSTANT.get(name, 2.5)
        return lambda x: fn(x, c)
    return fn


def _float_fn(fn):
    def f(*xs):
        with ad.no_grad():
            return fn(*[ad.Value(x) for x in xs]).data
    return f


@pytest.mark.parametrize("name", sorted(n.lower() for n in VALUE_OPS))
def test_op(name):
    fn = _on_values(name)
    for xs in points(name):
        vs = [ad.Value(x) for x in xs]
        out = fn(*vs)
        assert out._t.entry(out)[0] == _core.OPS[name.upper()], "wrong op recorded"
        out.backward()
        got = [v.grad for v in vs]
        value, partials = expected_grad(name, xs)
        assert out.data == pytest.approx(value, rel=1e-15)
        assert got == pytest.approx(partials, rel=1e-12, abs=1e-12)
        assert got == pytest.approx(central_diff(_float_fn(fn), xs), rel=1e-5, abs=1e-7)
        value, dual = dual_grad(fn, xs)
        assert out.data == pytest.approx(value, rel=1e-15)
        assert got == pytest.approx(dual, rel=1e-12, abs=1e-12)


# the unary rows against math's own functions and their closed-form
# derivatives, relative error only: an absolute tolerance would pass
# expm1'(-40) = 4e-18 computed as v + 1 = 0
MATH = {
    "log1p": (math.log1p, lambda x: 1.0 / (1.0 + x), lambda x: -1.0 / (1.0 + x) ** 2),
    "expm1": (math.expm1, math.exp, math.exp),
    "arctan": (math.atan, lambda x: 1.0 / (1.0 + x * x),
               lambda x: -2.0 * x / (1.0 + x * x) ** 2),
}


@pytest.mark.parametrize("name", sorted(MATH))
def test_unary_op_against_math_and_numpy(name):
    value, d, dd = MATH[name]
    op = next(op for op in ops.ELEMENTWISE if op.name == name.upper())
    xs = [x for (x,) in points(name)]
    for x in xs:
        v = ad.Value(x)
        out = getattr(v, op.method)()
        out.backward()
        assert out.data == pytest.approx(value(x), rel=1e-15, abs=0)
        assert v.grad == pytest.approx(d(x), rel=1e-14, abs=0)
        f = getattr(ad, op.function)
        assert ad.grad(f)(x) == pytest.approx(d(x), rel=1e-14, abs=0)
        assert ad.hessian(f)(x) == pytest.approx(dd(x), rel=1e-13, abs=0)
        assert ad.record(f, 0.5).hessian(x) == pytest.approx(dd(x), rel=1e-13, abs=0)
    # on an Array: np.NAME, ad.NAME and the method, against NumPy
    ufunc = getattr(np, name)
    for fn in (ufunc, getattr(ad, op.function), lambda a: getattr(a, op.method)()):
        a = ad.Array(xs)
        out = fn(a)
        assert isinstance(out, ad.Array)
        np.testing.assert_allclose(out.data, ufunc(np.array(xs)), rtol=1e-15, atol=0)
        out.backward(np.ones(len(xs)))
        np.testing.assert_allclose(a.grad, [d(x) for x in xs], rtol=1e-14, atol=0)
    # a plain number or ndarray: NumPy's function, nothing recorded
    assert getattr(ad, op.function)(xs[0]) == ufunc(xs[0])


def test_leaf():
    x = ad.Value(0.7)
    x.backward()
    assert x.grad == 1.0 and x._t.entry(x)[0] == _core.OPS["LEAF"]


# how Arrays spell the rows Python has no spelling for
ARRAY_SPELLING = {
    "maximum": ad.maximum,
    "minimum": ad.minimum,
    "select": lambda x, m: ad.where(m != 0, x, 0.0),
    "square": lambda x: x ** 2,
    "lt": operator.lt,
    "le": operator.le,
    "eq": np.equal,
    "ne": np.not_equal,
}


@pytest.mark.parametrize("name", sorted(RULES))
def test_op_on_arrays(name):
    """All the points at once as one array per operand: the values and a
    seeded backward against the row on NumPy."""
    columns = [np.array(c) for c in zip(*points(name))]
    fn = ARRAY_SPELLING.get(name) or _on_values(name)
    with ad.Tape() as t:
        leaves = [ad.Array(columns[0])] + (
            [np.array(columns[1])] if name == "select" else
            [ad.Array(c) for c in columns[1:]])
        out = fn(*leaves)
        t.flush()
        # (where(m, x, 0) is a SELECT and the ADD of the other side)
        assert _core.OPS[name.upper()] in {t._c.op[i] for i in range(t.nflushed)}
        rule = RULES[name]
        want = np.asarray(rule.value(*operands(name, columns)), dtype=np.float64)
        if name.upper() in COMPARISON_OPS:          # a mask: no derivative
            np.testing.assert_array_equal(out.data, want != 0)
            return
        np.testing.assert_allclose(out.data, want, rtol=1e-14, atol=0)
        seed = np.linspace(0.5, 1.5, out.shape[0])
        out.backward(seed)
        args = operands(name, columns)
        for leaf, d in zip(leaves, rule.d):
            if isinstance(leaf, ad.Array):
                np.testing.assert_allclose(leaf.grad, seed * d(*args, want),
                                           rtol=1e-12, atol=1e-15)


def _kinked(rule, args):
    return (rule.kink is not None and rule.kink(*args[:rule.arity]) == 0) or \
        (rule.name.upper() in COMPARISON_OPS and args[0] == args[1])


@pytest.mark.parametrize("name", sorted(RULES))
def test_the_table_agrees_with_central_differences(name):
    """The oracle checked the slow way: each first partial against central
    differences of the value, each second partial against central
    differences of the first partials (away from kinks and ties)."""
    rule = RULES[name]
    for xs in points(name):
        args = list(operands(name, xs))
        if _kinked(rule, args):
            continue

        def moved(k, h):
            at = list(args)
            at[k] += h
            return at

        def first(at):
            v = rule.value(*at)
            return [d(*at, v) for d in rule.d]

        v = rule.value(*args)
        d1 = [d(*args, v) for d in rule.d]
        d2 = [dd(*args, v) for dd in rule.dd]       # xx[, xy, yy]
        for k in range(rule.arity):
            h = 1e-6 * max(1.0, abs(args[k]))
            numeric = (rule.value(*moved(k, h)) - rule.value(*moved(k, -h))) / (2 * h)
            assert d1[k] == pytest.approx(numeric, rel=1e-6, abs=1e-8), (name, k)
            # the derivatives of the k-th first partial along each operand
            up, down = first(moved(k, h)), first(moved(k, -h))
            for j in range(rule.arity):
                numeric = (up[j] - down[j]) / (2 * h)
                exact = d2[{(0, 0): 0, (0, 1): 1, (1, 0): 1, (1, 1): 2}[j, k]]
                assert exact == pytest.approx(numeric, rel=1e-5, abs=1e-7), (name, j, k)


def test_reflected_and_fused_forms_agree_with_plain_ones():
    x = ad.Value(0.7)
    forms = [(2.5 + x, x + 2.5), (2.5 * x, x * 2.5), (x - 2.5, x + (-2.5))]
    for a, b in forms:
        assert a.data == b.data


def test_value_mixed_with_numpy_scalars():
    np = pytest.importorskip("numpy")
    x = ad.Value(2.0)
    for out, expected, dx in [
        (np.float64(3.0) * x, 6.0, 3.0),
        (x * np.float64(3.0), 6.0, 3.0),
        (np.int64(3) - x, 1.0, -1.0),
        (x / np.int64(4), 0.5, 0.25),
        (np.float32(1.5) + x, 3.5, 1.0),
    ]:
        assert isinstance(out, ad.Value)
        assert out.data == expected
        x.grad = 0
        out.backward()
        assert x.grad == dx


def test_module_functions_take_values_and_plain_numbers():
    np = pytest.importorskip("numpy")
    for name in (op.function for op in ops.ELEMENTWISE if op.function):
        fn = getattr(ad, name)
        x0 = 1.5 if name == "arccosh" else 0.5      # (inside its domain)
        v = fn(ad.Value(x0))
        assert isinstance(v, ad.Value)
        plain = fn(x0)
        assert float(plain) == pytest.approx(v.data, rel=1e-15)
        arr = fn(np.array([x0, x0 + 0.25]))
        assert isinstance(arr, np.ndarray) and arr.shape == (2,)
