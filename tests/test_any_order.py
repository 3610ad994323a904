"""Derivatives of any order.

Every op of the C enum has a differentiable rule (derivatives.RULES): a
derivative taken inside another one applies it, recording its result on
the enclosing tape.  The tests walk every op and check that the recorded
path and the C sweeps agree -- first order (a recorded gradient program
replayed), second order (reverse over the recorded reverse, and over the
recorded tangent, against the C forward-over-reverse Hessian-vector
product) -- and that the third order agrees with central differences of
the C path's second order.  Then the classic nesting cases: perturbation
confusion, closures, pytrees, custom ops, recorded gradients.
"""
import math

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import _core, derivatives
from pyautodiff.ops import ELEMENTWISE, OTHER_OPS, OTHER_PARTIALS
from pyautodiff.testing.rules import RULES, into_domain

RNG = np.random.default_rng(7)


def _unary(name):
    rule = RULES[name.lower()]

    def f(x):
        z = into_domain(rule, x * 0.7 + 0.1)
        spelled = {"NEG": lambda z: -z, "ABS": abs, "SQUARE": lambda z: z ** 2,
                   "RELU": ad.relu, "SIGMOID": ad.sigmoid}.get(name)
        return spelled(z) if spelled else getattr(np, name.lower())(z)
    return f


def _with_constant(name):
    forms = {"ADDC": lambda z: z + 1.3, "MULC": lambda z: z * -1.7,
             "DIVC": lambda z: z / 2.3, "RSUBC": lambda z: 0.4 - z,
             "RDIVC": lambda z: 1.5 / (z * z + 1.0),
             "POWC": lambda z: (z * z + 0.5) ** 1.7,
             "RPOWC": lambda z: 2.3 ** z}
    return forms[name]


BINARY = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply,
          "DIV": lambda a, b: a / (b * b + 0.5),
          "POW": lambda a, b: (a * a + 0.5) ** np.sin(b),
          "MAXIMUM": np.maximum, "MINIMUM": np.minimum,
          "ARCTAN2": lambda a, b: np.arctan2(a, b + 2.0),
          "HYPOT": lambda a, b: np.hypot(a, b + 0.5),
          "LOGADDEXP": np.logaddexp}


def program(name):
    """A function of a (6,) array whose derivatives go through op name,
    mixed with a few others so that no derivative vanishes."""
    W = np.linspace(-0.8, 1.1, 6)
    if name in BINARY:
        op = BINARY[name]
        return lambda x: np.sum(op(x, x[::-1] * W) * np.sin(x))
    others = {
        "SELECT": lambda x: np.sum(np.where(x > 0.1, x ** 3, np.sin(x)) * W),
        "SUM": lambda x: np.sum(np.sin(x).reshape(2, 3).sum(axis=0) ** 2),
        "MAX": lambda x: np.max(np.sin(x) * W) * np.sum(x ** 2),
        "MIN": lambda x: np.min((x * W).reshape(2, 3), axis=1).sum() * np.sum(x ** 3),
        "LSE": lambda x: ad.logsumexp(np.sin(x) * W * 3.0) ** 2,
        "PROD": lambda x: np.sum(np.prod((np.sin(x) + W).reshape(2, 3), axis=1) ** 2)
        + np.prod(x[:4] * W[:4]),
        "RESHAPE": lambda x: np.sum(np.tanh(x.reshape(3, 2)) * W.reshape(3, 2) ** 2),
        "GATHER": lambda x: np.sum(x[[0, 2, 2, 5]] ** 3) + np.sum(x.reshape(2, 3).T ** 2 * x[0]),
        "SCATTER": lambda x: np.sum(np.concatenate([np.sin(x[:3]), x[3:] ** 2]) ** 2 * W),
        "EXTERN": lambda x: np.sum(np.sin(x.reshape(2, 3) @ np.cos(x).reshape(3, 2))),
        "LEAF": lambda x: np.sum(x ** 3),
        "TIMES": lambda x: np.sum(derivatives._times(np.sin(x), x * W + 0.5) * x),
        # no derivative through the step, which a replay recomputes
        "FLOOR": lambda x: np.sum(np.floor(3.0 * x) * x ** 2 * W),
        "CEIL": lambda x: np.sum(np.ceil(3.0 * x) * x ** 2 * W),
        "TRUNC": lambda x: np.sum(np.trunc(3.0 * x) * x ** 2 * W),
        "RINT": lambda x: np.sum(np.rint(3.0 * x) * x ** 2 * W),
        "SIGN": lambda x: np.sum(np.sign(x) * x ** 2 * W),
        "STOP": lambda x: np.sum(ad.stop_gradient(np.sin(x)) * x ** 2 * W),
    }
    if name in others:
        return others[name]
    if name in ("ADDC", "MULC", "DIVC", "RSUBC", "RDIVC", "POWC", "RPOWC"):
        form = _with_constant(name)
        return lambda x: np.sum(form(np.sin(x)) * x * W)
    f = _unary(name)
    return lambda x: np.sum(f(x) * (x * W + 1.0))


def _covered():
    names = [op.name for op in ELEMENTWISE] + list(OTHER_PARTIALS)
    names += ["SUM", "MAX", "MIN", "LSE", "PROD", "RESHAPE", "GATHER", "SCATTER", "EXTERN", "LEAF",
              "FLOOR", "CEIL", "TRUNC", "RINT", "SIGN", "STOP"]
    names = list(dict.fromkeys(names))
    return names


COMPARISONS = {"LT", "LE", "EQ", "NE"}     # masks: no derivative (SELECT's test)


def test_every_op_has_a_differentiable_rule_and_a_test_here():
    for name in _core.OPS:
        assert name in derivatives.RULES, name
        assert name in _covered() or name in COMPARISONS, name
    assert set(OTHER_PARTIALS) <= set(OTHER_OPS)


X = RNG.uniform(-1.0, 1.0, 6)
V = RNG.normal(size=6)


@pytest.mark.parametrize("name", _covered())
def test_the_recorded_and_the_C_paths_agree(name):
    f = program(name)
    # first order: the gradient computed by the differentiable rules (a
    # recorded gradient program), replayed at another point
    F = ad.record(ad.grad(f), X)
    x1 = X * 0.9 + 0.05
    np.testing.assert_allclose(F(x1), ad.grad(f)(x1), rtol=1e-12, atol=1e-14)
    # second order, three ways: reverse over the recorded reverse, reverse
    # over the recorded tangent, and the C forward-over-reverse sweep
    hv = ad.hvp(f)(X, V)
    rr = ad.grad(lambda z: np.sum(ad.grad(f)(z) * V))(X)
    rt = ad.grad(lambda z: ad.jvp(f)(z, V)[1])(X)
    np.testing.assert_allclose(rr, hv, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rt, hv, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(F.jacobian(X) @ V, hv, rtol=1e-10, atol=1e-12)
    # third order: the gradient of <H(x) v, v>, nested twice, against
    # central differences of the C path's H v (which see the stopped value
    # move: STOP's third derivative is its own, 0 through the stop)
    third = ad.grad(lambda z: np.sum(ad.hvp(f)(z, V) * V))(X)
    if name == "STOP":          # <Hv, v> = sum(2 sin(x) W v**2), sin stopped
        np.testing.assert_array_equal(third, np.zeros(6))
        np.testing.assert_allclose(ad.hvp(f)(X, V), 2 * np.sin(X) * np.linspace(-0.8, 1.1, 6) * V,
                                   rtol=1e-14)
        return
    h = 1e-4
    central = np.array([
        (np.dot(ad.hvp(f)(X + h * e, V), V) - np.dot(ad.hvp(f)(X - h * e, V), V)) / (2 * h)
        for e in np.eye(6)])
    np.testing.assert_allclose(third, central, rtol=2e-5, atol=2e-6)


# -- nestings -------------------------------------------------------------------------

def test_no_perturbation_confusion():
    # d/dx (x * d/dy (x + y)) = d/dx (x * 1) = 1, not 2
    assert ad.grad(lambda x: x * ad.grad(lambda y: x + y)(2.0))(3.0) == 1.0
    # the inner variable taken at the outer one itself
    assert ad.grad(lambda x: ad.grad(lambda y: x * y)(x))(3.0) == 1.0
    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(
        ad.grad(lambda x: np.sum(x * ad.grad(lambda y: np.sum(x * y))(x)))(x), 2 * x)


def test_derivatives_of_any_order_of_a_scalar_function():
    f = lambda x: np.exp(np.sin(x)) / (1.0 + x * x)    # noqa: E731
    d = f
    values = []
    for _ in range(5):
        d = ad.grad(d)
        values.append(d(0.4))
    # against the Taylor coefficients of f at 0.4 by a complex-step-free
    # route: central differences of the previous order, each checked
    h = 1e-4
    prev = f
    for k, value in enumerate(values):
        cd = (prev(0.4 + h) - prev(0.4 - h)) / (2 * h)
        assert value == pytest.approx(cd, rel=1e-6, abs=1e-7), k + 1
        prev = _nth(f, k + 1)


def _nth(f, n):
    for _ in range(n):
        f = ad.grad(f)
    return f


def test_jacobian_of_hessian_and_hvp_of_hvp_on_arrays():
    A = RNG.normal(size=(3, 3))

    def f(x):
        return np.sum(np.tanh(A @ x) ** 2) + np.log(np.sum(x * x) + 1.0)
    x = RNG.normal(size=3)
    T = ad.jacobian(ad.hessian(f))(x)
    assert T.shape == (3, 3, 3)
    np.testing.assert_allclose(T, np.swapaxes(T, 0, 2), atol=1e-12)   # symmetric
    h = 1e-5
    central = np.stack([(ad.hessian(f)(x + h * e) - ad.hessian(f)(x - h * e)) / (2 * h)
                        for e in np.eye(3)], axis=-1)
    np.testing.assert_allclose(T, central, rtol=1e-5, atol=1e-7)
    v = RNG.normal(size=3)
    g = lambda z: np.sum(ad.hvp(f)(z, v) * z)     # noqa: E731
    # the recorded path over the recorded path, against the C Hessian of g
    # (g itself recorded once) and the tensor: H(g) = T v + (T v)^T-ish terms
    np.testing.assert_allclose(ad.hvp(g)(x, v), ad.hessian(g)(x) @ v, rtol=1e-10)
    by_tensor = np.einsum("ijk,j->ik", T, v)        # d/dz (H(z) v), symmetric
    np.testing.assert_allclose(ad.hessian(g)(x), by_tensor + by_tensor.T +
                               np.einsum("ijkl,j,l->ik", _fourth(f, x), v, x),
                               rtol=1e-5, atol=1e-6)


def _fourth(f, x):
    return ad.jacobian(ad.jacobian(ad.hessian(f)))(x)


def test_closures_and_pytrees():
    def f(p):
        inner = ad.grad(lambda q: np.sum(q["w"] ** 2 * p["b"]) + q["s"] * p["s"])
        g = inner({"w": p["w"], "s": 1.5})
        return np.sum(g["w"] * p["w"]) + g["s"] ** 2
    p = {"w": np.array([0.3, -1.2]), "b": 0.7, "s": 2.0}
    # f = sum(2 w^2 b) + s^2: d/dw = 4 w b, d/db = 2 sum w^2, d/ds = 2 s
    g = ad.grad(f)(p)
    np.testing.assert_allclose(g["w"], 4 * p["w"] * p["b"])
    assert g["b"] == pytest.approx(2 * np.sum(p["w"] ** 2))
    assert g["s"] == pytest.approx(2 * p["s"])


def test_a_recorded_gradient_replays_and_differentiates_again():
    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    x0 = np.full(5, 0.5)
    F = ad.record(ad.grad(rosen), x0)
    for x in (x0, RNG.normal(size=5), np.linspace(-1, 1, 5)):
        np.testing.assert_allclose(F(x), ad.grad(rosen)(x), rtol=1e-13)
        np.testing.assert_allclose(F.jacobian(x), ad.hessian(rosen)(x), rtol=1e-12)
    G = ad.record(ad.grad(lambda t: t * ad.relu(t - 1.0)), 0.5)
    # the recorded decisions of the rules (relu's step) are recomputed
    assert G(0.5) == 0.0 and G(3.0) == 2 * 3.0 - 1.0


def test_nested_custom_ops():
    op = ad.custom_op(lambda x: np.sin(x), lambda g, out, x: (g * np.cos(x),),
                      jvp=lambda ts, out, x: ts[0] * np.cos(x))
    assert ad.grad(ad.grad(ad.grad(op)))(0.3) == pytest.approx(-math.cos(0.3))
    x = np.array([0.2, 0.9])
    np.testing.assert_allclose(ad.jacobian(ad.grad(lambda z: np.sum(op(z))))(x),
                               np.diag(-np.sin(x)))
    np.testing.assert_allclose(ad.grad(lambda z: ad.jvp(op)(z, np.ones(2))[1].sum())(x),
                               -np.sin(x))


def test_singular_second_derivatives_follow_the_C_rules():
    # abs and relu: kinks; the second derivative is 0 away from them
    for f in (lambda x: abs(x) * x, lambda x: ad.relu(x) ** 2):
        for x in (-0.5, 0.7):
            assert ad.grad(ad.grad(f))(x) == pytest.approx(ad.hessian(f)(x))


def test_tuple_argnums_and_hessian_blocks_nested():
    f = lambda x, y: np.sin(x) * np.sum(y ** 3) + x ** 2 * y[0]     # noqa: E731
    x, y = 0.4, np.array([0.3, -1.2])
    # the gradient of a nested Hessian's trace, against central differences
    def trace_of_hessian(t):
        H = ad.hessian(f, argnum=(0, 1))(t * x, t * y)
        return H[0][0] + H[1][1][0, 0] + H[1][1][1, 1]
    h = 1e-5
    cd = (_plain_trace(f, 1.0 + h, x, y) - _plain_trace(f, 1.0 - h, x, y)) / (2 * h)
    assert ad.grad(trace_of_hessian)(1.0) == pytest.approx(cd, rel=1e-6)


def _plain_trace(f, t, x, y):
    H = ad.hessian(f, argnum=(0, 1))(t * x, t * y)
    return H[0][0] + H[1][1][0, 0] + H[1][1][1, 1]


def test_a_saved_recorded_gradient_loads_and_replays(tmp_path):
    f = lambda x: np.sum(np.exp(np.sin(x)) * x)    # noqa: E731
    G = ad.record(ad.grad(f), np.array([0.1, 0.2, 0.3]))
    path = tmp_path / "grad.padt"
    G.save(path)
    H = ad.load(path)
    x = np.array([0.7, -0.4, 1.1])
    np.testing.assert_allclose(H(x), ad.grad(f)(x), rtol=1e-14)
    np.testing.assert_allclose(H.jacobian(x), ad.hessian(f)(x), rtol=1e-13)


def test_nested_derivatives_in_threads():
    import threading
    f = lambda x: np.sum(np.tanh(x) ** 3)    # noqa: E731
    x = np.linspace(-1.0, 1.0, 5)
    expected = ad.jacobian(ad.hessian(f))(x)
    results = []

    def work():
        for _ in range(5):
            results.append(ad.jacobian(ad.hessian(f))(x))
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 10
    for r in results:
        np.testing.assert_array_equal(r, expected)


def test_a_vjp_function_kept_past_its_derivative_says_so():
    kept = []

    def f(x):
        value, vjp_fn = ad.vjp(lambda z: z ** 3)(x)
        kept.append(vjp_fn)
        return value
    assert ad.grad(f)(2.0) == pytest.approx(12.0)
    with pytest.raises(ad.TapeError, match="taken inside another"):
        kept[0](1.0)


def test_pow_where_the_exponent_is_zero():
    # d/dx x**y = y x**(y-1) is 0 at y = 0, but its derivative in y is not:
    # the nested rule must not cut it off there
    f = lambda x: np.sum((np.sum(x * x) + 0.5) ** np.tanh(x))     # noqa: E731
    x = np.array([[-0.74, 0.05], [1.15, 0.0]])
    np.testing.assert_allclose(ad.jacobian(ad.grad(f))(x), ad.hessian(f)(x),
                               rtol=1e-12, atol=1e-14)
    g = lambda t: (t * t + 0.5) ** (t - 0.3)      # noqa: E731
    assert ad.grad(ad.grad(g))(0.3) == pytest.approx(ad.hessian(g)(0.3), rel=1e-12)


def test_an_output_recorded_before_a_variable():
    # f(a, b) = a: its result comes before b on the tape
    assert ad.grad(lambda x: ad.grad(lambda a, b: a * b, argnum=(0, 1))(x, 2.0)[1])(1.5) == 1.0
    assert ad.grad(lambda x: ad.grad(lambda a, b: a, argnum=(0, 1))(x, 2.0)[0])(1.0) == 0.0
    _, t = ad.jvp(lambda x: ad.jvp(lambda a, b: a, argnum=(0, 1))(x, 2.0, (1.0, 1.0))[1])(1.0, 1.0)
    assert t == 0.0


def test_a_branch_not_taken_has_a_zero_derivative_at_every_order():
    # the partial of sqrt is infinite at 0, where the branch is not taken:
    # the C sweeps skip its zero adjoint, and so do the recorded rules
    g = lambda a: np.sum(np.where(a > 0, np.sqrt(np.abs(a)), 0.0) + a * a)     # noqa: E731
    x = np.array([0.0, 4.0])
    H = ad.hessian(g)(x)
    assert np.all(np.isfinite(H))
    np.testing.assert_allclose(ad.jacobian(ad.grad(g))(x), H, rtol=1e-14)
    np.testing.assert_allclose(ad.record(ad.grad(g), np.array([1.0, 4.0]))(x),
                               ad.grad(g)(x), rtol=1e-14)
    h = lambda t: ad.relu(t) ** 1.5 + t     # noqa: E731
    assert ad.grad(ad.grad(ad.grad(h)))(-1.0) == 0.0
