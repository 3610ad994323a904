"""NumPy's elementwise functions on traced values (pyautodiff/numpy_elementwise.py
and the op table's rows): values against NumPy and Python's math, first
derivatives against central differences and HIPS autograd, second order
against autograd's hessian (or hyper-dual numbers, or central differences
of the gradient where autograd has no rule), third order through nesting
against central differences of ad.hvp."""
import math
import warnings

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff.testing.hyperdual import HyperDual

RNG = np.random.default_rng(11)
W = np.array([[0.7, -1.2, 0.4], [1.1, 0.3, -0.6]])
V6 = RNG.normal(size=6)

# name: points of its domain, shape (2, 3), kept off kinks and singularities
_WIDE = np.array([[-1.3, 0.4, 0.9], [1.6, -0.5, 0.25]])
_POSITIVE = np.array([[0.4, 1.3, 2.1], [0.7, 1.8, 0.55]])
_UNIT = np.array([[-0.6, 0.2, 0.7], [0.45, -0.3, 0.1]])
UNARY = {
    "abs": _WIDE, "absolute": _WIDE, "fabs": _WIDE, "negative": _WIDE,
    "reciprocal": np.array([[0.5, 1.3, -0.8], [-1.7, 2.2, 0.9]]),
    "square": _WIDE, "sqrt": _POSITIVE,
    "cbrt": np.array([[-0.8, 0.6, 1.9], [-2.4, 0.3, 1.1]]),
    "exp": _WIDE, "exp2": _WIDE, "expm1": _WIDE,
    "log": _POSITIVE, "log2": _POSITIVE, "log10": _POSITIVE,
    "log1p": np.array([[-0.5, 0.3, 1.2], [2.0, -0.2, 0.6]]),
    "sin": _WIDE, "cos": _WIDE,
    "tan": np.array([[-1.0, 0.3, 1.2], [0.6, -0.4, 0.9]]),
    "arcsin": _UNIT, "arccos": _UNIT, "arctan": _WIDE,
    "sinh": _WIDE, "cosh": _WIDE, "tanh": _WIDE, "arcsinh": _WIDE,
    "arccosh": np.array([[1.2, 1.7, 2.5], [3.1, 1.4, 2.0]]),
    "arctanh": _UNIT,
    "deg2rad": _WIDE * 50, "rad2deg": _WIDE, "degrees": _WIDE, "radians": _WIDE * 50,
    "sinc": np.array([[-1.3, 0.4, 0.9], [2.6, -0.5, 0.0]]),   # 0: its own branch
    "nan_to_num": _WIDE,
}
# name: (x (2, 3), y (3,)), broadcast against each other
_XY = (_WIDE, np.array([0.8, -0.35, 1.45]))
BINARY = {
    "logaddexp": _XY, "logaddexp2": _XY, "arctan2": _XY, "hypot": _XY,
    "power": (_POSITIVE, _XY[1]), "float_power": (_POSITIVE, _XY[1]),
    "true_divide": _XY, "divide": _XY,
    # quotients well away from integers
    "mod": (np.array([[2.3, -1.7, 5.1], [0.35, 3.45, -2.2]]), np.array([0.7, 1.1, -1.6])),
    "remainder": (np.array([[2.3, -1.7, 5.1], [0.35, 3.45, -2.2]]), np.array([0.7, 1.1, -1.6])),
    "fmod": (np.array([[2.3, -1.7, 5.1], [0.35, 3.45, -2.2]]), np.array([0.7, 1.1, -1.6])),
    "maximum": _XY, "minimum": _XY, "fmax": _XY, "fmin": _XY,
}
# HIPS autograd has no rule for these: second order against the hyper-duals
# or central differences of our gradient instead
NOT_IN_AUTOGRAD = {"cbrt", "float_power", "fmod"}
PIECEWISE_CONSTANT = ["sign", "floor", "ceil", "round", "rint", "trunc"]


def unary_f(name, m=np):
    fn = getattr(m, name)
    return lambda p: m.sum(fn(m.reshape(p, (2, 3))) * W)


def binary_f(name, m=np):
    fn = getattr(m, name)
    # x and y from one parameter vector: the derivatives of both operands,
    # summed over the broadcast, in one gradient
    return lambda p: m.sum(fn(m.reshape(p[:6], (2, 3)), p[6:]) * W)


def case(name):
    if name in UNARY:
        return unary_f, UNARY[name].ravel()
    x, y = BINARY[name]
    return binary_f, np.concatenate([x.ravel(), y])


ALL = sorted(UNARY) + sorted(BINARY)


def quiet(fn, *args):
    """fn(*args) with autograd's own warnings (its NaN at sinc(0), its
    notes on constant outputs) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def central(f, x, h=1e-6):
    x = np.asarray(x, dtype=np.float64)
    out = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        out.append((f(x + e) - f(x - e)) / (2 * h))
    return np.array(out).reshape(x.shape + np.shape(out[0]))


# -- values --------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_values_of_arrays_are_numpys(name):
    fn = getattr(np, name)
    args = (UNARY[name],) if name in UNARY else BINARY[name]
    expected = fn(*args)
    with ad.Tape():
        traced = [ad.Array(a) for a in args]
        for out in (fn(*traced), getattr(ad, name)(*traced), fn(traced[0], *args[1:])):
            assert isinstance(out, ad.Array)
            np.testing.assert_allclose(out.data, expected, rtol=4e-16, atol=1e-300)
    # plain operands: NumPy's own result, from ad.NAME too
    np.testing.assert_array_equal(getattr(ad, name)(*args), expected)


@pytest.mark.parametrize("name", ALL)
def test_values_of_scalars_are_values(name):
    fn = getattr(np, name)
    args = (UNARY[name].flat[1],) if name in UNARY else (BINARY[name][0].flat[1],
                                                          BINARY[name][1][1])
    out = fn(*(ad.Value(a) for a in args))
    assert isinstance(out, ad.Value)
    np.testing.assert_allclose(out.data, fn(*args), rtol=4e-16)
    mixed = fn(ad.Value(args[0]), *args[1:])
    assert isinstance(mixed, ad.Value) and mixed.data == out.data


def test_the_c_ops_compute_with_pythons_math_on_scalars():
    for name, fn in [("tan", math.tan), ("arcsin", math.asin), ("arccos", math.acos),
                     ("sinh", math.sinh), ("cosh", math.cosh), ("arcsinh", math.asinh),
                     ("arctanh", math.atanh), ("cbrt", math.cbrt)]:
        assert getattr(np, name)(ad.Value(0.3)).data == fn(0.3)
    assert np.arccosh(ad.Value(1.3)).data == math.acosh(1.3)
    assert np.arctan2(ad.Value(0.3), -2.0).data == math.atan2(0.3, -2.0)
    assert np.hypot(ad.Value(3.0), ad.Value(4.0)).data == 5.0


def test_scalar_domain_errors_raise_as_pythons_math():
    for call in [lambda: np.arcsin(ad.Value(2.0)), lambda: np.arccos(ad.Value(-1.5)),
                 lambda: np.arccosh(ad.Value(0.5)), lambda: np.arctanh(ad.Value(1.0)),
                 lambda: np.log2(ad.Value(0.0)), lambda: np.log10(ad.Value(-1.0))]:
        with pytest.raises(ValueError):
            call()
    with pytest.raises(OverflowError):
        np.sinh(ad.Value(1000.0))
    with pytest.raises(ZeroDivisionError):
        np.reciprocal(ad.Value(0.0))


def test_arrays_give_numpys_infinities_and_warnings():
    with pytest.warns(RuntimeWarning, match="invalid value"):
        out = np.arcsin(ad.Array([0.5, 2.0]))
    np.testing.assert_array_equal(np.isnan(out.data), [False, True])
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        out = np.arctanh(ad.Array([1.0, 0.0]))
    assert out.data[0] == np.inf
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        out = np.log2(ad.Array([0.0, 8.0]))
    np.testing.assert_array_equal(out.data, [-np.inf, 3.0])
    with np.errstate(all="ignore"):           # NumPy's errstate governs them
        np.arccosh(ad.Array([0.5]))


def test_methods_and_the_functions_of_the_op_table():
    x = ad.Array(_UNIT)
    for name in ["tan", "arcsin", "arccos", "sinh", "cosh", "arcsinh", "arctanh", "cbrt"]:
        np.testing.assert_allclose(getattr(x, name)().data, getattr(np, name)(_UNIT), rtol=4e-16)
        assert getattr(ad.Value(0.25), name)().data == getattr(np, name)(0.25)
    np.testing.assert_array_equal(x.clip(-0.5, 0.5).data, _UNIT.clip(-0.5, 0.5))
    np.testing.assert_array_equal(ad.Array(_WIDE * 3).round().data, (_WIDE * 3).round())


# -- first order ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_gradients_against_central_differences_and_autograd(name):
    make, p = case(name)
    g = ad.grad(make(name))(p)
    np.testing.assert_allclose(g, central(make(name), p), rtol=1e-6, atol=1e-7)
    if name in NOT_IN_AUTOGRAD:
        return
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    expected = quiet(autograd.grad(make(name, anp)), p)
    if name == "sinc":          # autograd's sinc' is NaN at 0: ours is 0 (sinc's own)
        assert np.isnan(expected[p == 0]).all() and g[p == 0] == 0.0
        g, expected = g[p != 0], expected[p != 0]
    np.testing.assert_allclose(g, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", ALL)
def test_scalar_gradients(name):
    fn = getattr(np, name)
    if name in UNARY:
        x0 = UNARY[name].flat[2]
        f = lambda t: fn(t) * 1.7      # noqa: E731
    else:
        x0, y0 = BINARY[name][0].flat[2], BINARY[name][1][2]
        f = lambda t: fn(t, y0) + fn(x0, t * 0.5 + y0 * 0.5)      # noqa: E731
    d1 = ad.grad(f)(x0)
    assert abs(d1 - central(f, x0)) < 1e-6 * max(1.0, abs(d1))
    d2 = ad.grad(ad.grad(f))(x0)
    assert abs(d2 - central(ad.grad(f), x0)) < 1e-6 * max(1.0, abs(d2))


@pytest.mark.parametrize("name", PIECEWISE_CONSTANT)
def test_piecewise_constant_functions_have_zero_derivatives(name):
    x = _WIDE * 3
    f = lambda p: np.sum(getattr(np, name)(p) * p)      # noqa: E731
    np.testing.assert_array_equal(ad.grad(f)(x), getattr(np, name)(x))
    assert ad.grad(lambda t: getattr(np, name)(t) * t)(2.6) == getattr(np, name)(2.6)
    np.testing.assert_array_equal(getattr(ad, name)(x), getattr(np, name)(x))


def test_clip_and_where():
    x = _WIDE
    def f(p, m=np):
        return m.sum(m.clip(p, -0.6, 1.0) ** 2 + m.where(p > 0.3, m.sin(p), p ** 3))
    g = ad.grad(f)(x)
    np.testing.assert_allclose(g, central(f, x), rtol=1e-6, atol=1e-8)
    anp = pytest.importorskip("autograd.numpy")
    autograd = pytest.importorskip("autograd")
    def fa(p):
        return f(p, anp)
    np.testing.assert_allclose(g, autograd.grad(fa)(x), rtol=1e-14)
    np.testing.assert_allclose(ad.hessian(f)(x).reshape(6, 6),
                               quiet(autograd.hessian(fa), x).reshape(6, 6),
                               rtol=1e-13, atol=1e-15)


# -- second and third order -----------------------------------------------------------

def _hyperdual_hessian(name, p):
    """The Hessian of a unary case from the oracle table's rows."""
    f = unary_f(name)
    n = p.size
    h = np.zeros((n, n))
    for i in range(n):          # elementwise: the Hessian is diagonal
        out = getattr(HyperDual(p[i], 1.0, 1.0), name)()
        h[i, i] = out.d * W.flat[i]
    assert np.isfinite(f(p))
    return h


@pytest.mark.parametrize("name", ALL)
def test_second_order(name):
    make, p = case(name)
    f = make(name)
    h = ad.hessian(f)(p)
    if name == "cbrt":
        np.testing.assert_allclose(h, _hyperdual_hessian(name, p), rtol=1e-13)
    if name in NOT_IN_AUTOGRAD:
        np.testing.assert_allclose(h, central(ad.grad(f), p), rtol=1e-6, atol=1e-7)
    else:
        autograd = pytest.importorskip("autograd")
        anp = pytest.importorskip("autograd.numpy")
        expected = quiet(autograd.hessian(make(name, anp)), p)
        if name == "sinc":      # (NaN at 0, see test_sinc_at_zero_to_high_order)
            keep = np.ix_(p != 0, p != 0)
            expected, h_ = expected[keep], h[keep]
        else:
            h_ = h
        np.testing.assert_allclose(h_, expected, rtol=1e-12, atol=1e-13)
    v = np.resize(V6, p.size)
    np.testing.assert_allclose(ad.hvp(f)(p, v), h @ v, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", ALL)
def test_third_order_through_nesting(name):
    make, p = case(name)
    f = make(name)
    v = np.resize(V6, p.size)
    third = ad.grad(lambda x: np.sum(ad.hvp(f)(x, v) * v))(p)
    expected = central(lambda x: np.dot(ad.hvp(f)(x, v), v), p, h=1e-5)
    np.testing.assert_allclose(third, expected, rtol=2e-5, atol=2e-6)


# -- the functions' own conventions ---------------------------------------------------

def test_logaddexp_never_overflows():
    x = ad.Array([1000.0, -1000.0, 5.0, -np.inf, 710.0])
    y = np.array([1000.0, -1001.0, -np.inf, -np.inf, 0.0])
    np.testing.assert_array_equal(np.logaddexp(x, y).data, np.logaddexp(x.data, y))
    g = ad.grad(lambda a: np.sum(np.logaddexp(a, y[:3])))(x.data[:3])
    np.testing.assert_allclose(g, [0.5, 1 / (1 + math.exp(-1.0)), 1.0], rtol=1e-12)
    assert np.logaddexp(ad.Value(1000.0), 1000.0).data == 1000.0 + math.log(2.0)
    assert abs(ad.grad(lambda t: np.logaddexp2(t, 800.0))(800.0) - 0.5) < 1e-12
    # its second derivative at a tie: the softmax weights' w (1 - w) = 1/4
    assert abs(ad.hessian(lambda t: np.logaddexp(t, 3.0))(3.0) - 0.25) < 1e-15


def test_fmax_and_fmin_take_the_number_over_a_nan():
    a = np.array([1.0, np.nan, 3.0, np.nan, 2.0])
    b = np.array([np.nan, 2.0, 1.0, np.nan, 2.0])
    for name in ("fmax", "fmin"):
        fn = getattr(np, name)
        np.testing.assert_array_equal(fn(ad.Array(a), b).data, fn(a, b))
        np.testing.assert_array_equal(fn(b, ad.Array(a)).data, fn(b, a))
        ga, gb = ad.grad(lambda x, y: np.sum(fn(x, y)), argnum=(0, 1))(a, b)
        # the operand chosen gets the derivative, a tie splits it
        np.testing.assert_array_equal(ga[[0, 1, 4]], [1.0, 0.0, 0.5])
        np.testing.assert_array_equal(gb[[0, 1, 4]], [0.0, 1.0, 0.5])
        autograd = pytest.importorskip("autograd")
        anp = pytest.importorskip("autograd.numpy")
        expected = quiet(autograd.grad(lambda x: anp.sum(getattr(anp, name)(x, b))), a)
        np.testing.assert_array_equal(ga[[0, 1, 2, 4]], expected[[0, 1, 2, 4]])
        assert fn(ad.Value(math.nan), 2.0).data == 2.0
        assert ad.grad(lambda t: fn(t, math.nan))(1.5) == 1.0


def test_nan_to_num_has_derivative_one_where_finite():
    x = np.array([1.5, np.nan, np.inf, -np.inf, -2.0])
    for kwargs in ({}, {"nan": 5.0, "posinf": 7.0, "neginf": -7.0}):
        np.testing.assert_array_equal(np.nan_to_num(ad.Array(x), **kwargs).data,
                                      np.nan_to_num(x, **kwargs))
        np.testing.assert_array_equal(ad.nan_to_num(ad.Array(x), **kwargs).data,
                                      np.nan_to_num(x, **kwargs))
    w = np.linspace(0.2, 1.0, 5)        # (1.0 * the largest float: no overflow)
    g = ad.grad(lambda a: np.sum(np.nan_to_num(a * 3.0) * w))(x)
    np.testing.assert_array_equal(g, np.where(np.isfinite(x), 3.0 * w, 0.0))
    anp = pytest.importorskip("autograd.numpy")
    autograd = pytest.importorskip("autograd")
    np.testing.assert_array_equal(
        g, quiet(autograd.grad(lambda a: anp.sum(anp.nan_to_num(a * 3.0) * w)), x))
    assert np.nan_to_num(ad.Value(math.inf)).data == np.finfo(np.float64).max
    assert ad.grad(lambda t: np.nan_to_num(t * t))(3.0) == 6.0


def test_a_recording_recomputes_the_choices_at_its_inputs():
    w = np.array([0.5, -1.5, 2.0, 1.0])

    def f(a):
        return np.sum((np.nan_to_num(a) + np.fmax(a, 1.0)) * w + np.fmin(a, 0.5))
    x0 = np.array([0.5, 2.0, np.nan, 3.0])
    x1 = np.array([np.nan, 0.5, 2.0, -np.inf])     # NaNs and infinities elsewhere
    np.testing.assert_array_equal(ad.record(ad.grad(f), x0)(x1), ad.grad(f)(x1))
    np.testing.assert_array_equal(ad.record(f, x0)(x1), f(x1))

    def g(a):
        return np.sum(np.sinc(a) * w)
    x0, x1 = np.array([0.0, 1.5, 0.3, -2.0]), np.array([0.7, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(ad.record(ad.grad(g), x0)(x1), ad.grad(g)(x1), rtol=1e-15)
    np.testing.assert_allclose(ad.record(g, x0)(x1), g(x1), rtol=1e-15)


def test_sinc_at_zero_to_high_order():
    # sinc(x) = 1 - (pi x)^2 / 6 + (pi x)^4 / 120 - ...
    f = np.sinc
    d = [f, ad.grad(f)]
    for _ in range(3):
        d.append(ad.grad(d[-1]))
    assert d[0](ad.Value(0.0)).data == 1.0
    assert d[1](0.0) == 0.0
    np.testing.assert_allclose(d[2](0.0), -math.pi ** 2 / 3, rtol=1e-15)
    assert d[3](0.0) == 0.0
    np.testing.assert_allclose(d[4](0.0), math.pi ** 4 / 5, rtol=1e-14)
    np.testing.assert_allclose(ad.hessian(lambda a: np.sum(np.sinc(a)))(np.zeros(2)),
                               -math.pi ** 2 / 3 * np.eye(2), rtol=1e-15)


def test_arctan2_takes_numpys_argument_order():
    # arctan2(x1, x2) is the angle of the point (x2, x1)
    g = ad.grad(lambda y, x: np.arctan2(y, x), argnum=(0, 1))(1.0, 2.0)
    np.testing.assert_allclose(g, (2.0 / 5.0, -1.0 / 5.0), rtol=1e-15)
    assert np.arctan2(ad.Value(1.0), ad.Value(-1.0)).data == 3 * math.pi / 4


def test_unsupported_calls_name_the_function():
    a = ad.Array([0.5, 1.5])
    with pytest.raises(TypeError, match="numpy.logaddexp.accumulate"):
        np.logaddexp.accumulate(a)
    with pytest.raises(TypeError, match="numpy.hypot"):
        np.hypot(a, a, out=np.empty(2))
    with pytest.raises(TypeError, match="numpy.arctan2.outer"):
        np.arctan2.outer(a, a)
    # arguments a recording would silently ignore
    with pytest.raises(TypeError, match=r"numpy.tan\(where=...\)"):
        np.tan(a, where=np.array([True, False]))
    with pytest.raises(TypeError, match=r"numpy.logaddexp\(dtype=...\)"):
        np.logaddexp(a, a, dtype=np.float32)
    with pytest.raises(TypeError, match="numpy.clip"):
        np.clip(a, 0.0, 1.0, out=np.empty(2))
    np.testing.assert_array_equal(np.tan(a, dtype=np.float64).data, np.tan(a.data))


def test_clip_of_values_is_a_value_and_takes_numpys_keywords():
    out = np.clip(ad.Value(1.5), 0.0, 1.0)
    assert isinstance(out, ad.Value) and out.data == 1.0
    assert ad.grad(lambda t: np.clip(t, 0.0, 1.0))(0.5) == 1.0
    assert ad.grad(lambda t: np.clip(t, 0.0, 1.0))(1.5) == 0.0
    x = _WIDE
    np.testing.assert_array_equal(np.clip(ad.Array(x), max=0.5).data, np.clip(x, max=0.5))
    np.testing.assert_array_equal(np.clip(ad.Array(x), -0.4, None).data, np.clip(x, -0.4, None))
    np.testing.assert_array_equal(ad.grad(lambda a: np.sum(np.clip(a, min=-0.4)))(x), x > -0.4)


def test_complex_parts_of_real_traced_values():
    """real, conj, real_if_close are the value itself; imag is 0, angle is
    piecewise constant (0 or pi), as for real ndarrays and autograd."""
    x = np.array([1.5, -2.0, 0.25])

    def f(np_, x):
        return np_.sum(np_.real(x) ** 2 + np_.conj(x) * x + 3.0 * np_.imag(x) + np_.angle(x)
                       + np_.real_if_close(x) + np_.conjugate(x) + np_.real(x) * x)

    got = ad.grad(lambda v: f(np, v))(x)
    np.testing.assert_allclose(got, 6 * x + 2, rtol=1e-14)
    agnp = pytest.importorskip("autograd.numpy")
    ag = pytest.importorskip("autograd")
    np.testing.assert_allclose(got, ag.grad(lambda v: f(agnp, v))(x), rtol=1e-14)
    assert ad.grad(lambda v: f(np, v))(-3.0) == 6 * -3.0 + 2
    assert ad.hessian(lambda v: f(np, v))(x).tolist() == (6 * np.eye(3)).tolist()
    # the methods, as an ndarray's and a float's
    assert ad.grad(lambda v: np.sum(v.conjugate() * v.real + v.imag))(x).tolist() == (2 * x).tolist()
    assert ad.grad(lambda v: v.conj() * v.real + v.imag)(3.0) == 6.0


def test_hypot_of_values_is_cs_so_a_replay_gives_the_recorded_value():
    """math.hypot differs from C's hypot in the last bit at this point."""
    x = 1.373046875
    y = np.tanh(x) + 1.5
    assert np.hypot(ad.Value(x), y).data == np.hypot(x, y)          # eager, as C
    f = ad.record(lambda v: np.hypot(v, np.tanh(v) + 1.5), x)
    assert f(x) == np.hypot(x, y)                                   # the C replay
