"""Every op of the C enum: value against Python's math, gradient against
hand-derived formulas, central differences and forward-mode duals."""
import math

import pytest

import pyautodiff as ad
from pyautodiff import _core
from helpers import ARRAY_ONLY_OPS, COMPARISON_OPS, central_diff, dual_grad

# op name -> (function of Values, points, hand-derived gradient)
CASES = {
    "LEAF": (lambda x: x, [(0.7,)], lambda x: [1.0]),
    "ADD": (lambda x, y: x + y, [(0.7, -1.3)], lambda x, y: [1.0, 1.0]),
    "SUB": (lambda x, y: x - y, [(0.7, -1.3)], lambda x, y: [1.0, -1.0]),
    "MUL": (lambda x, y: x * y, [(0.7, -1.3)], lambda x, y: [y, x]),
    "DIV": (lambda x, y: x / y, [(0.7, -1.3)], lambda x, y: [1 / y, -x / y**2]),
    "POW": (lambda x, y: x ** y, [(0.7, -1.3), (2.0, 3.0)],
            lambda x, y: [y * x ** (y - 1), x ** y * math.log(x)]),
    "ADDC": (lambda x: x + 2.5, [(0.7,)], lambda x: [1.0]),
    "MULC": (lambda x: x * 2.5, [(0.7,)], lambda x: [2.5]),
    "DIVC": (lambda x: x / 2.5, [(0.7,)], lambda x: [0.4]),
    "RSUBC": (lambda x: 2.5 - x, [(0.7,)], lambda x: [-1.0]),
    "RDIVC": (lambda x: 2.5 / x, [(0.7,)], lambda x: [-2.5 / x**2]),
    "POWC": (lambda x: x ** 3, [(0.7,), (-1.2,)], lambda x: [3 * x**2]),
    "RPOWC": (lambda x: 2.5 ** x, [(0.7,)], lambda x: [2.5**x * math.log(2.5)]),
    "NEG": (lambda x: -x, [(0.7,)], lambda x: [-1.0]),
    "ABS": (lambda x: abs(x), [(0.7,), (-1.3,)], lambda x: [math.copysign(1, x)]),
    "RELU": (lambda x: x.relu(), [(0.7,), (-1.3,)], lambda x: [float(x > 0)]),
    "TANH": (lambda x: x.tanh(), [(0.7,)], lambda x: [1 - math.tanh(x) ** 2]),
    "EXP": (lambda x: x.exp(), [(0.7,)], lambda x: [math.exp(x)]),
    "LOG": (lambda x: x.log(), [(0.7,)], lambda x: [1 / x]),
    "SIGMOID": (lambda x: x.sigmoid(), [(0.7,), (-30.0,)],
                lambda x: [math.exp(-x) / (1 + math.exp(-x)) ** 2]),
    "SIN": (lambda x: x.sin(), [(0.7,)], lambda x: [math.cos(x)]),
    "COS": (lambda x: x.cos(), [(0.7,)], lambda x: [-math.sin(x)]),
    "SQRT": (lambda x: x.sqrt(), [(0.7,)], lambda x: [0.5 / math.sqrt(x)]),
}


def test_every_op_of_the_enum_has_a_case():
    assert set(CASES) == set(_core.OPS) - ARRAY_ONLY_OPS - COMPARISON_OPS


def _float_fn(fn):
    def f(*xs):
        with ad.no_grad():
            return fn(*[ad.Value(x) for x in xs]).data
    return f


@pytest.mark.parametrize("name", sorted(CASES))
def test_op(name):
    fn, points, hand = CASES[name]
    for xs in points:
        vs = [ad.Value(x) for x in xs]
        out = fn(*vs)
        if name != "LEAF":
            assert out._t.entry(out)[0] == _core.OPS[name], "wrong op recorded"
        out.backward()
        got = [v.grad for v in vs]
        assert got == pytest.approx(hand(*xs), rel=1e-12, abs=1e-12)
        assert got == pytest.approx(central_diff(_float_fn(fn), xs), rel=1e-5, abs=1e-7)
        value, dual = dual_grad(fn, xs)
        assert out.data == pytest.approx(value, rel=1e-15)
        assert got == pytest.approx(dual, rel=1e-12, abs=1e-12)


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
    x = ad.Value(0.5)
    for name in ("exp", "log", "tanh", "sigmoid", "sin", "cos", "sqrt", "relu", "abs"):
        fn = getattr(ad, name)
        v = fn(x)
        assert isinstance(v, ad.Value)
        plain = fn(0.5)
        assert float(plain) == pytest.approx(v.data, rel=1e-15)
        arr = fn(np.array([0.5, 0.25]))
        assert isinstance(arr, np.ndarray) and arr.shape == (2,)
