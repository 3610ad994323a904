"""The Taylor-series reference (pyautodiff/testing/taylor.py, and the
functional API on it, taylor_api.py) against hand-derived derivatives to
third order, hyper-dual numbers at order 2 (Hessians of the scalar
fuzzer's random programs), and central differences at order 3."""
import math
import random

import numpy as np
import pytest

from pyautodiff import _core
from pyautodiff.testing import fuzz_scalars, fuzz_second, hyperdual, taylor
from pyautodiff.testing import taylor_api as T
from pyautodiff.testing.rules import RULES, into_domain
from pyautodiff.testing.taylor import Jet, NearKink

X = 0.7


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def _sech2(x):
    return 1.0 - math.tanh(x) ** 2


# f, and [f, f', f'', f'''] at x, each written out by hand
HAND = {
    "exp": (np.exp, lambda x: [math.exp(x)] * 4),
    "expm1": (np.expm1, lambda x: [math.expm1(x)] + [math.exp(x)] * 3),
    "log": (np.log, lambda x: [math.log(x), 1 / x, -1 / x ** 2, 2 / x ** 3]),
    "log1p": (np.log1p, lambda x: [math.log1p(x), 1 / (1 + x), -1 / (1 + x) ** 2,
                                   2 / (1 + x) ** 3]),
    "sin": (np.sin, lambda x: [math.sin(x), math.cos(x), -math.sin(x), -math.cos(x)]),
    "cos": (np.cos, lambda x: [math.cos(x), -math.sin(x), -math.cos(x), math.sin(x)]),
    "tanh": (np.tanh, lambda x: [math.tanh(x), _sech2(x), -2 * math.tanh(x) * _sech2(x),
                                 (6 * math.tanh(x) ** 2 - 2) * _sech2(x)]),
    "sigmoid": (T.sigmoid, lambda x: (lambda s: [s, s * (1 - s), s * (1 - s) * (1 - 2 * s),
                                                 s * (1 - s) * (1 - 6 * s + 6 * s * s)])(
        _sigmoid(x))),
    "sqrt": (np.sqrt, lambda x: [x ** 0.5, 0.5 * x ** -0.5, -0.25 * x ** -1.5,
                                 0.375 * x ** -2.5]),
    "arctan": (np.arctan, lambda x: [math.atan(x), 1 / (1 + x * x),
                                     -2 * x / (1 + x * x) ** 2,
                                     (6 * x * x - 2) / (1 + x * x) ** 3]),
    "x ** 2.5": (lambda x: x ** 2.5, lambda x: [x ** 2.5, 2.5 * x ** 1.5,
                                                 3.75 * x ** 0.5, 1.875 * x ** -0.5]),
    "x ** 3": (lambda x: x ** 3, lambda x: [x ** 3, 3 * x * x, 6 * x, 6.0]),
    "x ** -2": (lambda x: x ** -2, lambda x: [x ** -2, -2 * x ** -3, 6 * x ** -4,
                                             -24 * x ** -5]),
    "1 / x": (lambda x: 1 / x, lambda x: [1 / x, -1 / x ** 2, 2 / x ** 3, -6 / x ** 4]),
    "2 ** x": (lambda x: 2.0 ** x, lambda x: [2 ** x * math.log(2) ** k for k in range(4)]),
    # x ** x = exp(x log x): (x^x)' = x^x (log x + 1), (x^x)'' = x^x ((log x + 1)^2 + 1/x),
    # (x^x)''' = x^x ((log x + 1)^3 + 3 (log x + 1) / x - 1 / x^2)
    "x ** x": (lambda x: x ** x, lambda x: (lambda p, l: [
        p, p * l, p * (l * l + 1 / x), p * (l ** 3 + 3 * l / x - 1 / x ** 2)])(
        x ** x, math.log(x) + 1)),
    "x * sin(x)": (lambda x: x * np.sin(x), lambda x: [
        x * math.sin(x), math.sin(x) + x * math.cos(x),
        2 * math.cos(x) - x * math.sin(x), -3 * math.sin(x) - x * math.cos(x)]),
    "neg, abs, relu": (lambda x: -abs(x) + T.relu(x) * 2.0, lambda x: [x, 1.0, 0.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(HAND))
@pytest.mark.parametrize("x", [X, 1.3])
def test_derivatives_to_third_order_match_hand_derived_ones(name, x):
    f, want = HAND[name]
    got = taylor.derivatives(f, x, 1.0, 3)
    np.testing.assert_allclose([float(g) for g in got], want(x), rtol=1e-13, atol=1e-14)


def test_a_direction_scales_the_kth_derivative_by_its_kth_power():
    got = taylor.derivatives(np.sin, X, 0.5, 4)
    want = [math.sin(X), math.cos(X), -math.sin(X), -math.cos(X), math.sin(X)]
    np.testing.assert_allclose([float(g) for g in got],
                               [w * 0.5 ** k for k, w in enumerate(want)], rtol=1e-14)


def test_elementwise_over_arrays_with_broadcasting():
    x = np.array([[0.2, 0.5, 1.1], [0.7, 1.4, 0.9]])
    v = np.array([1.0, -2.0, 0.5])                     # broadcast over rows
    got = taylor.derivatives(lambda z: np.log(z) * 3.0, x, v, 3)
    for k, want in enumerate([3 * np.log(x), 3 * v / x, -3 * v ** 2 / x ** 2,
                              6 * v ** 3 / x ** 3]):
        np.testing.assert_allclose(got[k], want, rtol=1e-13)


def test_reductions_and_layout():
    x = np.array([0.3, -1.2, 0.8])
    v = np.array([1.0, 0.5, -2.0])
    p = np.exp(x) / np.exp(x).sum()
    lse = taylor.derivatives(T.logsumexp, x, v, 2)
    np.testing.assert_allclose(lse[0], np.log(np.exp(x).sum()), rtol=1e-14)
    np.testing.assert_allclose(lse[1], p @ v, rtol=1e-14)
    np.testing.assert_allclose(lse[2], p @ v ** 2 - (p @ v) ** 2, rtol=1e-13)
    for fn, want in [(np.sum, v.sum()), (np.mean, v.mean()), (np.max, v[2]),
                     (np.min, v[1]), (lambda z: z[::-1][0], v[2]),
                     (lambda z: np.reshape(np.stack([z, z]), (6,))[4], v[1])]:
        d = taylor.derivatives(lambda z: fn(z) ** 2, x, v, 2)
        value = float(np.asarray(fn(x)))
        np.testing.assert_allclose([d[1], d[2]], [2 * value * want, 2 * want ** 2],
                                   rtol=1e-14)


def test_matmul_is_a_product_of_series():
    A, V = np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([[0.3, 0.0], [1.0, 2.0]])
    B = np.array([0.7, -0.2])
    jet = taylor.seed(A, V, 3)
    y = jet @ taylor.seed(B, B, 3, jet.tag)                # (A + tV) @ (B + tB)
    np.testing.assert_allclose(y.c[0], A @ B)
    np.testing.assert_allclose(y.c[1], A @ B + V @ B)
    np.testing.assert_allclose(y.c[2], V @ B)
    np.testing.assert_allclose(y.c[3], 0.0)


def test_maximum_and_minimum_follow_the_larger_and_the_smaller():
    f = lambda z: np.maximum(z * z, 0.5) + np.minimum(np.sin(z), z)     # noqa: E731
    for x, want in [(0.8, [2 * 0.8 + math.cos(0.8), 2 - math.sin(0.8)]),   # z*z, sin
                    (0.6, [math.cos(0.6), -math.sin(0.6)]),               # 0.5, sin
                    (-0.8, [-1.6 + 1.0, 2.0])]:                           # z*z, z
        d = taylor.derivatives(f, x, 1.0, 2)
        np.testing.assert_allclose([d[1], d[2]], want, rtol=1e-14)


@pytest.mark.parametrize("fn", [T.relu, abs, lambda z: np.maximum(z, 0.0),
                                lambda z: np.max(np.stack([z, -z]))])
def test_a_jet_on_a_kink_refuses(fn):
    for x in [0.0, 1e-10]:
        with pytest.raises(NearKink):
            taylor.derivatives(fn, x, 1.0, 2)


def test_a_constant_on_a_kink_is_no_choice():
    # relu of an exact zero that does not move, the maximum of two equal series
    x = np.array([0.4, 0.0])
    d = taylor.derivatives(lambda z: T.relu(z * np.array([1.0, 0.0]))
                           + np.maximum(z, z), x, np.array([1.0, 1.0]), 2)
    np.testing.assert_allclose(d[1], [2.0, 1.0])


def test_every_elementwise_c_op_has_a_jet_rule_or_a_reason():
    elementwise = {name.lower() for name, code in _core.OPS.items()
                   if _core.lib.ad_op_kind(code) == _core.lib.AD_KIND_ELEMENTWISE}
    rows, absent = set(taylor.RULES), set(taylor.ABSENT)
    assert not rows & absent
    assert rows | absent == elementwise
    assert all(taylor.ABSENT.values())


@pytest.mark.parametrize("name", sorted(taylor.RULES))
def test_each_jet_rule_has_the_oracle_rows_first_and_second_partials(name):
    """Every row of the jets' table against rules.py's row of the same op
    (the calculus written out, no series), along each operand."""
    rule = RULES[name]
    if rule.arity == 1:
        xs = [float(into_domain(rule, 0.37))]
    else:
        xs = [0.7, 1.3]
    v = rule.value(*xs)
    e = np.eye(rule.arity)

    def f(z):
        return taylor.apply(name, *(z[k] for k in range(rule.arity)))
    for i in range(rule.arity):
        d = taylor.derivatives(f, np.array(xs), e[i], 2)
        want = [v, rule.d[i](*xs, v), rule.dd[0 if i == 0 else 2](*xs, v)]
        np.testing.assert_allclose([d[0], d[1], d[2]], want, rtol=1e-13, atol=1e-15,
                                   err_msg=name)
    if rule.arity == 2:                                     # d2/dxdy, nested
        np.testing.assert_allclose(taylor.mixed(f, np.array(xs), [e[0], e[1]]),
                                   rule.dd[1](*xs, v), rtol=1e-13, atol=1e-15)


def test_no_silent_numbers():
    jet = taylor.seed(X, 1.0, 2)
    with pytest.raises(TypeError, match="numpy.floor"):
        np.floor(jet)
    with pytest.raises(TypeError, match="truth value"):
        bool(jet)
    with pytest.raises(TypeError):
        float(jet)


def test_nested_jets_do_not_confuse_their_variables():
    # d/dx [x * d/dy sin(x y) at y = x] = d/dx [x^2 cos(x^2)]
    g = lambda x: x * T.grad(lambda y: np.sin(x * y))(x)       # noqa: E731
    want = 2 * X * math.cos(X * X) - 2 * X ** 3 * math.sin(X * X)
    np.testing.assert_allclose(T.grad(g)(X), want, rtol=1e-14)
    # the classic test of perturbation confusion: d/dx [x d/dy (x + y)] = 1
    np.testing.assert_allclose(T.grad(lambda x: x * T.grad(lambda y: x + y)(1.0))(X), 1.0)


def test_mixed_partials_by_nesting_and_by_polarization_agree():
    f = lambda z: np.sum(np.sin(z) * z[::-1]) * np.exp(z[0])     # noqa: E731
    x = np.array([0.3, -0.8, 1.1])
    u, v, w = np.eye(3)
    H = T.hessian(f)(x)
    assert H.shape == (3, 3)
    for a, b, i, j in [(u, v, 0, 1), (v, w, 1, 2), (u, u, 0, 0)]:
        np.testing.assert_allclose(taylor.mixed(f, x, [a, b]), H[i, j], rtol=1e-12)
    # third order: the Jacobian of the Hessian, entry (i, j, k), nested three deep
    J = T.jacobian(T.hessian(f))(x)
    np.testing.assert_allclose(taylor.mixed(f, x, [u, v, w]), J[0, 1, 2], rtol=1e-12)
    np.testing.assert_allclose(J, np.transpose(J, (1, 0, 2)), rtol=1e-12)
    np.testing.assert_allclose(J, np.transpose(J, (2, 1, 0)), rtol=1e-12)


def _scalar_programs(n, seed):
    rng = random.Random(seed)
    while n:
        steps, xs = fuzz_second.random_program(rng, 15)
        if fuzz_scalars.near_kink(steps, xs):
            continue
        try:
            _, _, hess = hyperdual.hyperdual_derivatives(fuzz_second.program(steps), xs)
        except (OverflowError, ZeroDivisionError, ValueError):
            continue
        if fuzz_second.usable(hess):
            n -= 1
            yield steps, xs, hess


@pytest.mark.parametrize("seed", range(4))
def test_order_2_agrees_with_hyperduals_on_random_programs(seed):
    """The scalar fuzzer's programs run on jets as they do on hyper-duals
    (methods and operators); Hessians by polarized order-2 jets and by
    nested order-1 ones."""
    for steps, xs, hess in _scalar_programs(10, seed):
        program = fuzz_second.program(steps)

        def f(z, n=len(xs)):
            return program(*[z[k] for k in range(n)])
        x = np.array(xs)
        try:
            with np.errstate(all="raise"):
                H = T.hessian(f)(x)
        except NearKink:
            continue
        np.testing.assert_allclose(H, hess, rtol=1e-9, atol=1e-9, err_msg=str(steps))
        e = np.eye(len(xs))
        np.testing.assert_allclose(taylor.mixed(f, x, [e[0], e[-1]]), hess[0][-1],
                                   rtol=1e-9, atol=1e-9)


def _third_difference(f, x, v, h=2e-3):
    """d^3/dt^3 f(x + t v) by central differences of values."""
    g = lambda t: float(np.asarray(f(x + t * v)))     # noqa: E731
    return (g(2 * h) - 2 * g(h) + 2 * g(-h) - g(-2 * h)) / (2 * h ** 3)


ARRAY_FUNCTIONS = [
    lambda z: np.sum(np.tanh(z) * np.log1p(z * z) + T.sigmoid(z) ** 3),
    lambda z: T.logsumexp(np.sin(z) * 2.0) + np.sqrt(np.sum(z * z) + 0.5),
    lambda z: np.mean(np.arctan(z) / (z * z + 1.0)) * np.exp(z[0]),
    lambda z: np.sum((z * z + 0.5) ** np.tanh(z[::-1])) + np.max(np.expm1(z)),
    lambda z: np.sum(np.reshape(z[:2], (2, 1)) @ np.reshape(np.cos(z[1:]), (1, 2))),
    lambda z: np.sum(np.minimum(z, 0.35) * np.maximum(z, -0.1)) - np.abs(z[1]) + T.relu(z[2]),
]


@pytest.mark.parametrize("k", range(len(ARRAY_FUNCTIONS)))
def test_order_3_agrees_with_central_differences(k):
    f = ARRAY_FUNCTIONS[k]
    rng = np.random.default_rng(k)
    for _ in range(3):
        x = rng.uniform(-1.0, 1.0, 3)
        v = rng.uniform(-1.0, 1.0, 3)
        d3 = taylor.derivatives(f, x, v, 3)[3]
        np.testing.assert_allclose(d3, _third_difference(f, x, v), rtol=1e-4, atol=1e-5)
        # and a mixed third partial, nested, against differences of the
        # polarized second
        u, w = rng.uniform(-1.0, 1.0, (2, 3))
        h = 1e-4
        diff = (T.hvp(f)(x + h * w, u) - T.hvp(f)(x - h * w, u)) / (2 * h)
        np.testing.assert_allclose(taylor.mixed(f, x, [u, v, w]), diff @ v,
                                   rtol=1e-6, atol=1e-7)


def test_a_jet_is_a_jet():
    jet = taylor.seed(np.zeros((2, 3)), 1.0, 2)
    assert isinstance(jet, Jet) and jet.shape == (2, 3) and jet.order == 2
    assert jet.T.shape == (3, 2) and jet[0].shape == (3,) and jet.size == 6
