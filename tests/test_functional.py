"""The functional API (grad, value_and_grad, jacobian, hessian, hvp, jvp,
vjp, check_grad) on plain Python/NumPy functions, checked against
hand-derived derivatives and central differences of the functions
themselves (or, for second derivatives, of ``ad.grad``)."""
import warnings
import math

import numpy as np
import pytest

import pyautodiff as ad
from helpers import central_diff


# -- finite differences of plain functions -------------------------------------

def fd(f, x, h=1e-6):
    """d f(x) / d x by central differences, of shape f(x).shape + x.shape;
    x is a float or an ndarray, f returns a float or an ndarray."""
    if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        step = h * max(1.0, abs(x))
        return (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * step)
    x = np.asarray(x, dtype=np.float64)
    out_shape = np.shape(f(x.copy()))
    jac = np.zeros(out_shape + x.shape)
    for pos in np.ndindex(x.shape):
        step = h * max(1.0, abs(x[pos]))
        up, down = x.copy(), x.copy()
        up[pos] += step
        down[pos] -= step
        jac[(Ellipsis,) + pos] = (np.asarray(f(up)) - np.asarray(f(down))) / (2 * step)
    return jac


def close(actual, expected, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


RNG = np.random.default_rng(1234)


# -- grad and value_and_grad --------------------------------------------------

def test_grad_of_a_float_function_is_a_float():
    def f(x):
        return x ** 3 - 2.0 * x
    g = ad.grad(f)(1.5)
    assert type(g) is float
    assert g == pytest.approx(3 * 1.5 ** 2 - 2.0, rel=1e-14)
    assert ad.grad(f)(2) == pytest.approx(10.0)       # an int argument
    assert type(ad.grad(f)(np.float64(2.0))) is float
    assert g == pytest.approx(central_diff(f, [1.5])[0], rel=1e-7)


def test_value_and_grad_returns_value_then_gradient():
    def f(x, y):
        return x * y + y ** 2
    value, g = ad.value_and_grad(f)(2.0, 3.0)
    assert value == pytest.approx(15.0) and g == pytest.approx(3.0)
    value, g = ad.value_and_grad(f, 1)(2.0, 3.0)
    assert value == pytest.approx(15.0) and g == pytest.approx(8.0)
    value, gs = ad.value_and_grad(f, (0, 1))(2.0, 3.0)
    assert value == pytest.approx(15.0)
    assert isinstance(gs, tuple) and gs == pytest.approx((3.0, 8.0))


@pytest.mark.parametrize("shape", [(), (1,), (4,), (2, 3), (2, 1, 3)])
def test_grad_of_arrays_of_several_shapes(shape):
    x = RNG.normal(size=shape)

    def f(x):
        return np.sum(np.sin(x) * x ** 2)
    g = ad.grad(f)(x)
    assert isinstance(g, np.ndarray) and g.shape == x.shape
    close(g, np.cos(x) * x ** 2 + 2 * x * np.sin(x), rtol=1e-12)
    close(g, fd(f, x))
    value, g2 = ad.value_and_grad(f)(x)
    assert value == pytest.approx(f(x), rel=1e-12)
    close(g2, g, rtol=0, atol=0)


def test_grad_of_a_0d_array_without_a_reduction():
    x = np.array(0.7)
    g = ad.grad(lambda x: np.tanh(x) * x)(x)
    assert isinstance(g, np.ndarray) and g.shape == ()
    assert float(g) == pytest.approx(np.tanh(0.7) + 0.7 * (1 - np.tanh(0.7) ** 2))


def test_grad_does_not_modify_its_arguments():
    x = RNG.normal(size=4)
    keep = x.copy()
    ad.grad(lambda x: np.sum(x ** 2))(x)
    ad.hessian(lambda x: np.sum(x ** 3))(x)
    np.testing.assert_array_equal(x, keep)


def test_argnum_int_negative_and_tuple():
    def f(x, y, z):
        return x * y ** 2 * np.sum(z ** 3)
    x, y, z = 1.5, -0.5, RNG.normal(size=3)
    s = np.sum(z ** 3)
    dx, dy, dz = y ** 2 * s, 2 * x * y * s, x * y ** 2 * 3 * z ** 2
    assert ad.grad(f)(x, y, z) == pytest.approx(dx)
    assert ad.grad(f, 1)(x, y, z) == pytest.approx(dy)
    close(ad.grad(f, 2)(x, y, z), dz, rtol=1e-12)
    close(ad.grad(f, -1)(x, y, z), dz, rtol=1e-12)
    both = ad.grad(f, (0, 2))(x, y, z)
    assert isinstance(both, tuple) and len(both) == 2
    assert both[0] == pytest.approx(dx)
    close(both[1], dz, rtol=1e-12)
    one = ad.grad(f, (1,))(x, y, z)
    assert isinstance(one, tuple) and len(one) == 1
    assert one[0] == pytest.approx(dy)
    rev = ad.grad(f, (2, 0))(x, y, z)
    close(rev[0], dz, rtol=1e-12)
    assert rev[1] == pytest.approx(dx)


def test_gradients_keep_the_structure_of_list_tuple_and_dict_arguments():
    def f(p):
        a, (b, c) = p["a"], p["bc"]
        return a * np.sum(b ** 2) + np.sum(np.sin(c)) * a ** 2
    p = {"a": 1.3, "bc": [RNG.normal(size=3), RNG.normal(size=(2, 2))]}
    g = ad.grad(f)(p)
    assert isinstance(g, dict) and list(g) == ["a", "bc"]
    assert type(g["a"]) is float
    assert isinstance(g["bc"], list) and len(g["bc"]) == 2
    b, c = p["bc"]
    assert g["a"] == pytest.approx(np.sum(b ** 2) + 2 * 1.3 * np.sum(np.sin(c)))
    assert g["bc"][0].shape == (3,) and g["bc"][1].shape == (2, 2)
    close(g["bc"][0], 2 * 1.3 * b, rtol=1e-12)
    close(g["bc"][1], 1.3 ** 2 * np.cos(c), rtol=1e-12)
    # the same against central differences, leaf by leaf
    close(g["bc"][1], fd(lambda c_: f({"a": 1.3, "bc": [b, c_]}), c))


def test_tuple_of_floats_argument_gives_a_tuple_of_floats():
    g = ad.grad(lambda t: t[0] * t[1] ** 2)((2.0, 3.0))
    assert isinstance(g, tuple) and all(type(v) is float for v in g)
    assert g == pytest.approx((9.0, 12.0))
    g = ad.grad(lambda xs: sum(x ** 2 for x in xs))([1.0, -2.0, 0.5])
    assert isinstance(g, list) and g == pytest.approx([2.0, -4.0, 1.0])


def test_keyword_arguments_are_passed_through():
    def f(x, scale=1.0, power=2):
        return scale * np.sum(x ** power)
    x = np.array([0.5, 1.5, -1.0])
    v = np.array([1.0, 2.0, -1.0])
    close(ad.grad(f)(x, scale=3.0, power=3), 9.0 * x ** 2, rtol=1e-12)
    value, g = ad.value_and_grad(f)(x, scale=2.0)
    assert value == pytest.approx(2.0 * np.sum(x ** 2)) and g == pytest.approx(4 * x)
    close(ad.hessian(f)(x, scale=3.0, power=3), np.diag(18.0 * x), rtol=1e-12)
    close(ad.hvp(f)(x, v, scale=3.0, power=3), 18.0 * x * v, rtol=1e-12)
    close(ad.jacobian(lambda x, c: c * x ** 2)(x, c=2.0), np.diag(4 * x), rtol=1e-12)
    value, t = ad.jvp(lambda x, c: c * x ** 2)(x, v, c=2.0)
    close(value, 2 * x ** 2)
    close(t, 4 * x * v)
    value, vjp_fn = ad.vjp(lambda x, c: c * x ** 2)(x, c=2.0)
    close(vjp_fn(v), 4 * x * v, rtol=1e-12)


# -- plain NumPy code: gradients against hand formulas and central differences --

A = RNG.normal(size=(4, 3))
W = RNG.normal(size=(3, 3))


def softmax_xent(x):
    z = np.exp(x - np.max(x))
    return -np.log(z[1] / np.sum(z))


def _softmax(x):
    z = np.exp(x - np.max(x))
    return z / np.sum(z)


# name -> (f, x, hand-derived gradient or None)
PROGRAMS = {
    "matmul x@A": (lambda x: np.sum(np.sin(x @ A)), RNG.normal(size=4),
                   lambda x: A @ np.cos(x @ A)),
    "matmul A@x": (lambda x: np.sum((A @ x) ** 2), RNG.normal(size=3),
                   lambda x: 2 * A.T @ (A @ x)),
    "matmul 2-D": (lambda X: np.sum(np.tanh(X @ W)), RNG.normal(size=(2, 3)),
                   lambda X: (1 - np.tanh(X @ W) ** 2) @ W.T),
    "np.dot": (lambda x: np.dot(x, x) * 0.5, RNG.normal(size=5), lambda x: x),
    "sin": (lambda x: np.sum(np.sin(x)), RNG.normal(size=(2, 2)), np.cos),
    "power": (lambda x: np.sum(x ** 2), RNG.normal(size=4), lambda x: 2 * x),
    "python sum": (lambda x: sum(x ** 3), RNG.normal(size=4), lambda x: 3 * x ** 2),
    "python sum of terms": (lambda x: sum(x[i] * x[i + 1] for i in range(3)),
                            RNG.normal(size=4),
                            lambda x: np.array([x[1], x[0] + x[2], x[1] + x[3], x[2]])),
    "where": (lambda x: np.sum(np.where(x > 0, x ** 2, -3 * x)),
              np.array([-1.5, -0.2, 0.3, 2.0]),
              lambda x: np.where(x > 0, 2 * x, -3.0)),
    "maximum": (lambda x: np.sum(np.maximum(x, 0.25) ** 2), np.array([-1.0, 0.1, 0.7, 2.0]),
                lambda x: np.where(x > 0.25, 2 * x, 0.0)),
    "minimum": (lambda x: np.sum(np.minimum(x, -x ** 2)), np.array([-1.5, 0.5, 2.0]),
                lambda x: np.where(x < -x ** 2, 1.0, -2 * x)),
    "slicing": (lambda x: np.sum(x[1:, ::2] ** 2) + x[0, 1] * x[2, 3],
                RNG.normal(size=(3, 4)), None),
    "int-array index": (lambda x: np.sum(x[[0, 0, 2]] ** 2), np.array([0.5, 1.0, -2.0]),
                        lambda x: np.array([4 * x[0], 0.0, 2 * x[2]])),
    "tanh": (lambda x: np.sum(np.tanh(2 * x)), RNG.normal(size=3),
             lambda x: 2 * (1 - np.tanh(2 * x) ** 2)),
    "softmax cross-entropy": (softmax_xent, RNG.normal(size=5),
                              lambda x: _softmax(x) - np.eye(5)[1]),
    "logsumexp": (lambda x: np.log(np.sum(np.exp(x))), RNG.normal(size=(2, 3)), _softmax),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_grad_of_numpy_programs(name):
    f, x, hand = PROGRAMS[name]
    g = ad.grad(f)(x)
    assert isinstance(g, np.ndarray) and g.shape == x.shape
    if hand is not None:
        close(g, hand(x), rtol=1e-10, atol=1e-12)
    close(g, fd(f, x), rtol=1e-6, atol=1e-8)


def test_mixed_scalar_and_array_arguments():
    def f(s, x):
        return np.sum(s * x ** 2) + np.tanh(s) * x[0] + s ** 2
    s, x = 0.8, RNG.normal(size=3)
    gs, gx = ad.grad(f, (0, 1))(s, x)
    assert type(gs) is float and gx.shape == (3,)
    assert gs == pytest.approx(np.sum(x ** 2) + (1 - np.tanh(s) ** 2) * x[0] + 2 * s)
    close(gx, 2 * s * x + np.tanh(s) * np.eye(3)[0], rtol=1e-12)
    assert gs == pytest.approx(fd(lambda s_: f(s_, x), s), rel=1e-7)


def test_grad_of_a_constant_function_is_zero():
    assert ad.grad(lambda x: 3.0)(2.0) == 0.0
    g = ad.grad(lambda x: 1.5)(np.ones((2, 2)))
    assert g.shape == (2, 2) and not g.any()


# -- Hessians ---------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_hessian_shape_symmetry_and_finite_differences(shape):
    x = RNG.normal(size=shape)

    def f(x):
        return np.sum(np.sin(x) * np.tanh(x)) + np.sum(x) ** 3
    H = ad.hessian(f)(x)
    assert H.shape == x.shape + x.shape
    n = x.size
    Hm = H.reshape(n, n)
    close(Hm, Hm.T, rtol=1e-12, atol=1e-12)
    close(H, fd(ad.grad(f), x), rtol=1e-6, atol=1e-7)


def test_hessian_of_a_quadratic_form_is_exact():
    M = RNG.normal(size=(4, 4))
    x = RNG.normal(size=4)
    H = ad.hessian(lambda x: x @ M @ x)(x)
    close(H, M + M.T, rtol=1e-13, atol=1e-14)


def test_hessian_of_a_float_function_is_a_number():
    H = ad.hessian(lambda x: x ** 4)(1.5)
    assert np.shape(H) == ()
    assert float(H) == pytest.approx(12 * 1.5 ** 2, rel=1e-14)
    H = ad.hessian(lambda x: x ** 4)(np.array(1.5))            # a 0-d array
    assert np.shape(H) == ()
    assert float(H) == pytest.approx(12 * 1.5 ** 2, rel=1e-14)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    """The Rosenbrock Hessian written out by hand."""
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        H[i + 1, i + 1] += 200.0
        H[i, i + 1] = H[i + 1, i] = -400.0 * x[i]
    return H


def test_rosenbrock_hessian_at_n_100_against_the_hand_written_one():
    x = RNG.uniform(-2, 2, size=100)
    H = ad.hessian(rosenbrock)(x)
    assert H.shape == (100, 100)
    close(H, rosenbrock_hessian(x), rtol=1e-12, atol=1e-9)
    v = RNG.normal(size=100)
    close(ad.hvp(rosenbrock)(x, v), rosenbrock_hessian(x) @ v, rtol=1e-10, atol=1e-8)


@pytest.mark.parametrize("shape", [(4,), (2, 3)])
def test_hvp_is_hessian_times_vector(shape):
    x, v = RNG.normal(size=shape), RNG.normal(size=shape)

    def f(x):
        return np.sum(np.exp(0.3 * x) * np.cos(x)) + np.sum(x ** 2) ** 2
    Hv = ad.hvp(f)(x, v)
    assert isinstance(Hv, np.ndarray) and Hv.shape == shape
    H = ad.hessian(f)(x)
    close(Hv, np.tensordot(H, v, axes=len(shape)), rtol=1e-12, atol=1e-12)
    # the directional derivative of the gradient along v
    close(Hv, fd(lambda t: ad.grad(f)(x + t * v), 0.0), rtol=1e-6, atol=1e-7)


def test_hvp_for_nested_arguments_and_tuple_argnum():
    def f(x, y):
        return x ** 2 * y + y ** 3
    hx, hy = ad.hvp(f, (0, 1))(1.5, -2.0, (1.0, 0.5))
    # H = [[2y, 2x], [2x, 6y]]
    assert hx == pytest.approx(2 * -2.0 * 1.0 + 2 * 1.5 * 0.5)
    assert hy == pytest.approx(2 * 1.5 * 1.0 + 6 * -2.0 * 0.5)
    r = ad.hvp(lambda p: p["a"] ** 2 * np.sum(p["b"] ** 2))(
        {"a": 2.0, "b": np.array([1.0, -1.0])}, {"a": 1.0, "b": np.array([0.0, 1.0])})
    # d2/da2 = 2|b|^2 = 4; d2/da db = 4 a b; d2/db2 = 2 a^2 I
    assert r["a"] == pytest.approx(4.0 * 1.0 + np.dot(4 * 2.0 * np.array([1.0, -1.0]), [0, 1]))
    close(r["b"], 4 * 2.0 * np.array([1.0, -1.0]) * 1.0 + 2 * 4.0 * np.array([0.0, 1.0]))


# -- Jacobians, jvp and vjp -------------------------------------------------------

def tall(x):          # R^3 -> R^7: more outputs than inputs (forward sweeps)
    return np.concatenate([np.sin(x) * x[0], x ** 2, np.sum(x, keepdims=True)])


def wide(x):          # R^5 -> R^2: fewer outputs than inputs (reverse sweeps)
    return np.array([1.0, 0.0]) * np.sum(np.tanh(x)) + np.array([0.0, 1.0]) * (x[1] * x[3])


def square(x):        # R^(2x2) -> R^(2x2): m == n
    return np.tanh(x) @ np.array([[1.0, 2.0], [-1.0, 0.5]])


@pytest.mark.parametrize("f,shape", [(tall, (3,)), (wide, (5,)), (square, (2, 2)),
                                     (lambda x: x[:, None] * x[None, :2], (3,))])
def test_jacobian_jvp_vjp_agree_with_central_differences(f, shape):
    x = RNG.normal(size=shape)
    J = ad.jacobian(f)(x)
    out = f(x)
    assert J.shape == out.shape + x.shape
    close(J, fd(f, x), rtol=1e-6, atol=1e-8)
    m, n = out.size, x.size
    Jm = J.reshape(m, n)
    v = RNG.normal(size=shape)
    value, Jv = ad.jvp(f)(x, v)
    close(value, out, rtol=1e-14)
    assert Jv.shape == out.shape
    close(Jv.reshape(-1), Jm @ v.reshape(-1), rtol=1e-12, atol=1e-12)
    u = RNG.normal(size=out.shape)
    value, vjp_fn = ad.vjp(f)(x)
    close(value, out, rtol=1e-14)
    uJ = vjp_fn(u)
    assert uJ.shape == x.shape
    close(uJ.reshape(-1), u.reshape(-1) @ Jm, rtol=1e-12, atol=1e-12)
    # the vjp function can be called again with another cotangent
    close(vjp_fn(2 * u), 2 * uJ, rtol=1e-14)


def test_jacobian_by_hand_tall_and_wide():
    x = np.array([0.5, -1.0, 2.0])
    J = ad.jacobian(tall)(x)
    hand = np.vstack([np.diag(np.cos(x) * x[0]), np.diag(2 * x), np.ones((1, 3))])
    hand[0:3, 0] += np.sin(x)
    close(J, hand, rtol=1e-12, atol=1e-14)
    x = np.array([0.1, 0.2, -0.3, 0.4, 0.5])
    hand = np.zeros((2, 5))
    hand[0] = 1 - np.tanh(x) ** 2
    hand[1, 1], hand[1, 3] = x[3], x[1]
    close(ad.jacobian(wide)(x), hand, rtol=1e-12, atol=1e-14)


def test_jacobian_of_scalar_functions():
    g = ad.jacobian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    close(g, [3.0, 12.0])
    assert float(ad.jacobian(lambda x: x ** 3)(2.0)) == pytest.approx(12.0)
    J = ad.jacobian(lambda x: np.ones(3) * 2.0)(np.ones(2))    # constant output
    assert J.shape == (3, 2) and not J.any()


def test_jvp_and_vjp_of_float_functions():
    value, t = ad.jvp(lambda x: x ** 3)(2.0, 0.5)
    assert value == pytest.approx(8.0) and t == pytest.approx(6.0)
    value, fn = ad.vjp(lambda x: np.sin(x))(0.3)
    assert value == pytest.approx(math.sin(0.3))
    assert float(fn(2.0)) == pytest.approx(2 * math.cos(0.3))


def test_jvp_with_tuple_argnum_and_nested_arguments():
    def f(x, y):
        return x ** 2 * y
    value, t = ad.jvp(f, (0, 1))(1.5, 2.0, (1.0, -1.0))
    assert value == pytest.approx(4.5)
    assert t == pytest.approx(2 * 1.5 * 2.0 - 1.5 ** 2)
    value, t = ad.jvp(lambda p: p["a"] * np.sum(p["b"]))(
        {"a": 2.0, "b": np.array([1.0, 3.0])}, {"a": 0.5, "b": np.array([1.0, 1.0])})
    assert value == pytest.approx(8.0) and t == pytest.approx(0.5 * 4.0 + 2.0 * 2.0)


# -- second derivatives of every elementwise op ------------------------------------

# name -> (op, f', f'', points): op works on floats' Values and on Arrays
UNARY = {
    "neg": (lambda x: -x, lambda x: -1.0, lambda x: 0.0, [-0.7, 1.3]),
    "abs": (abs, np.sign, lambda x: 0.0, [-0.7, 1.3]),
    "np.abs": (np.abs, np.sign, lambda x: 0.0, [-0.7, 1.3]),
    "relu": (ad.relu, lambda x: float(x > 0), lambda x: 0.0, [-0.7, 1.3]),
    "tanh": (ad.tanh, lambda x: 1 - np.tanh(x) ** 2,
             lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2), [-0.7, 1.3]),
    "np.tanh": (np.tanh, lambda x: 1 - np.tanh(x) ** 2,
                lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2), [0.4]),
    "exp": (ad.exp, np.exp, np.exp, [-0.7, 1.3]),
    "np.exp": (np.exp, np.exp, np.exp, [0.4]),
    "log": (ad.log, lambda x: 1 / x, lambda x: -1 / x ** 2, [0.3, 2.5]),
    "np.log": (np.log, lambda x: 1 / x, lambda x: -1 / x ** 2, [0.4]),
    "sigmoid": (ad.sigmoid, lambda x: sig(x) * (1 - sig(x)),
                lambda x: sig(x) * (1 - sig(x)) * (1 - 2 * sig(x)), [-0.7, 1.3]),
    "sin": (ad.sin, np.cos, lambda x: -np.sin(x), [-0.7, 1.3]),
    "np.sin": (np.sin, np.cos, lambda x: -np.sin(x), [0.4]),
    "cos": (ad.cos, lambda x: -np.sin(x), lambda x: -np.cos(x), [-0.7, 1.3]),
    "np.cos": (np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x), [0.4]),
    "sqrt": (ad.sqrt, lambda x: 0.5 / np.sqrt(x), lambda x: -0.25 * x ** -1.5, [0.3, 2.5]),
    "np.sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x), lambda x: -0.25 * x ** -1.5, [0.4]),
    "square": (lambda x: x ** 2, lambda x: 2 * x, lambda x: 2.0, [-0.7, 1.3]),
    "pow 3.5": (lambda x: x ** 3.5, lambda x: 3.5 * x ** 2.5,
                lambda x: 8.75 * x ** 1.5, [0.3, 2.5]),
    "pow -2": (lambda x: x ** -2, lambda x: -2 * x ** -3.0, lambda x: 6 * x ** -4.0,
               [-0.7, 1.3]),
    "2 ** x": (lambda x: 2.0 ** x, lambda x: 2.0 ** x * math.log(2),
               lambda x: 2.0 ** x * math.log(2) ** 2, [-0.7, 1.3]),
    "x + 2": (lambda x: x + 2.0, lambda x: 1.0, lambda x: 0.0, [-0.7]),
    "2 + x": (lambda x: 2.0 + x, lambda x: 1.0, lambda x: 0.0, [-0.7]),
    "x - 2": (lambda x: x - 2.0, lambda x: 1.0, lambda x: 0.0, [-0.7]),
    "2 - x": (lambda x: 2.0 - x, lambda x: -1.0, lambda x: 0.0, [-0.7]),
    "x * 2": (lambda x: x * 2.0, lambda x: 2.0, lambda x: 0.0, [-0.7]),
    "2 * x": (lambda x: 2.0 * x, lambda x: 2.0, lambda x: 0.0, [-0.7]),
    "x / 2": (lambda x: x / 2.0, lambda x: 0.5, lambda x: 0.0, [-0.7]),
    "2 / x": (lambda x: 2.0 / x, lambda x: -2 / x ** 2, lambda x: 4 / x ** 3, [-0.7, 1.3]),
    "maximum(x, 0.1)": (lambda x: ad.maximum(x, 0.1), lambda x: float(x > 0.1),
                        lambda x: 0.0, [-0.7, 1.3]),
    "minimum(x, 0.1)": (lambda x: ad.minimum(x, 0.1), lambda x: float(x < 0.1),
                        lambda x: 0.0, [-0.7, 1.3]),
    "maximum(0.1, x)": (lambda x: ad.maximum(0.1, x), lambda x: float(x > 0.1),
                        lambda x: 0.0, [-0.7, 1.3]),
}


def sig(x):
    return 1 / (1 + np.exp(-x))


UNARY_CASES = [(name, x0) for name in sorted(UNARY) for x0 in UNARY[name][3]]


@pytest.mark.parametrize("name,x0", UNARY_CASES)
def test_unary_op_second_derivative_on_floats(name, x0):
    op, d1, d2, _ = UNARY[name]
    # the op alone
    assert ad.grad(op)(x0) == pytest.approx(d1(x0), rel=1e-12, abs=1e-14)
    assert ad.hessian(op)(x0) == pytest.approx(d2(x0), rel=1e-12, abs=1e-14)
    assert ad.hvp(op)(x0, 0.5) == pytest.approx(0.5 * d2(x0), rel=1e-12, abs=1e-14)

    # between other ops: u = op(0.9 x + 0.05), f = sin(u) * x
    # f'' = (-sin(u) u'^2 + cos(u) u'') x + 2 cos(u) u'
    def f(x):
        return ad.sin(op(0.9 * x + 0.05)) * x
    y = 0.9 * x0 + 0.05
    u, du, ddu = float(op(y)), 0.9 * d1(y), 0.81 * d2(y)
    hand = (-math.sin(u) * du ** 2 + math.cos(u) * ddu) * x0 + 2 * math.cos(u) * du
    assert ad.hessian(f)(x0) == pytest.approx(hand, rel=1e-10, abs=1e-12)
    assert ad.hessian(f)(x0) == pytest.approx(fd(ad.grad(f), x0), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_op_second_derivative_on_arrays(name):
    op, d1, d2, points = UNARY[name]
    x = np.array(points + [p * 1.1 for p in points])
    d1x = np.array([d1(p) for p in x])
    d2x = np.array([d2(p) for p in x])
    # elementwise: a diagonal Hessian
    H = ad.hessian(lambda x: np.sum(op(x)))(x)
    close(H, np.diag(d2x), rtol=1e-12, atol=1e-14)

    # coupled: f = sin(sum(op(x))) * x[0]
    def f(x):
        return np.sin(np.sum(op(x))) * x[0]
    s = float(np.sum(op(x)))
    e0 = np.eye(len(x))[0]
    hand = (-math.sin(s) * np.outer(d1x, d1x) + math.cos(s) * np.diag(d2x)) * x[0] \
        + math.cos(s) * (np.outer(d1x, e0) + np.outer(e0, d1x))
    H = ad.hessian(f)(x)
    close(H, hand, rtol=1e-10, atol=1e-12)
    close(H, fd(ad.grad(f), x), rtol=1e-6, atol=1e-7)
    v = RNG.normal(size=x.shape)
    close(ad.hvp(f)(x, v), hand @ v, rtol=1e-10, atol=1e-12)


# name -> (op, value, gradient, Hessian) in (x, y); points keep away from ties
BINARY = {
    "add": (lambda x, y: x + y, lambda x, y: x + y,
            lambda x, y: [1.0, 1.0], lambda x, y: [[0, 0], [0, 0]]),
    "sub": (lambda x, y: x - y, lambda x, y: x - y,
            lambda x, y: [1.0, -1.0], lambda x, y: [[0, 0], [0, 0]]),
    "mul": (lambda x, y: x * y, lambda x, y: x * y,
            lambda x, y: [y, x], lambda x, y: [[0, 1], [1, 0]]),
    "div": (lambda x, y: x / y, lambda x, y: x / y,
            lambda x, y: [1 / y, -x / y ** 2],
            lambda x, y: [[0, -1 / y ** 2], [-1 / y ** 2, 2 * x / y ** 3]]),
    "pow": (lambda x, y: x ** y, lambda x, y: x ** y,
            lambda x, y: [y * x ** (y - 1), x ** y * math.log(x)],
            lambda x, y: [[y * (y - 1) * x ** (y - 2), x ** (y - 1) * (1 + y * math.log(x))],
                          [x ** (y - 1) * (1 + y * math.log(x)), x ** y * math.log(x) ** 2]]),
    "maximum": (ad.maximum, max, lambda x, y: [float(x > y), float(y > x)],
                lambda x, y: [[0, 0], [0, 0]]),
    "minimum": (ad.minimum, min, lambda x, y: [float(x < y), float(y < x)],
                lambda x, y: [[0, 0], [0, 0]]),
}
BINARY_POINTS = [(1.3, 0.6), (0.7, 2.2)]


def binary_hand(name, x, y):
    """(value, gradient, Hessian) of sin(op(x, y)) + op(x, y) ** 2 by the
    chain rule from the op's own hand-derived derivatives."""
    _, val, grad_, hess = BINARY[name]
    u, g, h = val(x, y), np.array(grad_(x, y), float), np.array(hess(x, y), float)
    d1, d2 = math.cos(u) + 2 * u, -math.sin(u) + 2.0
    return math.sin(u) + u ** 2, d1 * g, d2 * np.outer(g, g) + d1 * h


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("x0,y0", BINARY_POINTS)
def test_binary_op_second_derivatives_on_floats(name, x0, y0):
    op, val, grad_, hess = BINARY[name]
    # the op alone, both operands varying: H e_k by hvp with a tuple argnum
    H = np.array([ad.hvp(op, (0, 1))(x0, y0, tuple(e)) for e in np.eye(2)]).T
    close(H, hess(x0, y0), rtol=1e-12, atol=1e-14)
    close(ad.grad(op, (0, 1))(x0, y0), grad_(x0, y0), rtol=1e-12)

    # the op between other ops
    def f(x, y):
        u = op(x, y)
        return ad.sin(u) + u ** 2
    value, g, h = binary_hand(name, x0, y0)
    v, gs = ad.value_and_grad(f, (0, 1))(x0, y0)
    assert v == pytest.approx(value, rel=1e-12)
    close(gs, g, rtol=1e-12, atol=1e-14)
    H = np.array([ad.hvp(f, (0, 1))(x0, y0, tuple(e)) for e in np.eye(2)]).T
    close(H, h, rtol=1e-10, atol=1e-12)
    fd_H = fd(lambda z: np.array(ad.grad(f, (0, 1))(z[0], z[1])), np.array([x0, y0]))
    close(H, fd_H, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_op_second_derivatives_on_arrays(name):
    op, val, grad_, hess = BINARY[name]
    xs = np.array([p[0] for p in BINARY_POINTS])
    ys = np.array([p[1] for p in BINARY_POINTS])
    n = len(xs)

    def f(z):                      # both operands are slices of one array
        u = op(z[:n], z[n:])
        return np.sum(np.sin(u) + u ** 2)
    z = np.concatenate([xs, ys])
    hand = np.zeros((2 * n, 2 * n))
    for k in range(n):
        _, _, h = binary_hand(name, xs[k], ys[k])
        idx = [k, n + k]
        hand[np.ix_(idx, idx)] = h
    H = ad.hessian(f)(z)
    close(H, hand, rtol=1e-10, atol=1e-12)
    close(H, fd(ad.grad(f), z), rtol=1e-6, atol=1e-7)

    # two array arguments, hvp with a tuple argnum
    def f2(x, y):
        u = op(x, y)
        return np.sum(np.sin(u) + u ** 2)
    vx, vy = RNG.normal(size=n), RNG.normal(size=n)
    hx, hy = ad.hvp(f2, (0, 1))(xs, ys, (vx, vy))
    close(np.concatenate([hx, hy]), hand @ np.concatenate([vx, vy]), rtol=1e-10, atol=1e-12)


def test_binary_ops_with_constant_operands_on_arrays():
    x = np.array([0.4, 1.7])
    c = np.array([1.5, -0.5])
    cases = [  # (f, hand Hessian diagonal)
        (lambda x: np.sum(x * c * x), 2 * c),
        (lambda x: np.sum(c / x), 2 * c / x ** 3),
        (lambda x: np.sum(x / c), 0 * x),
        (lambda x: np.sum(x ** c), c * (c - 1) * x ** (c - 2)),
        (lambda x: np.sum(2.0 ** x), 2.0 ** x * math.log(2) ** 2),
        (lambda x: np.sum((c - x) ** 3), 6 * (c - x)),
        (lambda x: np.sum((x - c) ** 3), 6 * (x - c)),
    ]
    for f, diag in cases:
        H = ad.hessian(f)(x)
        if diag is not None:
            close(H, np.diag(diag), rtol=1e-12, atol=1e-14)
        close(H, fd(ad.grad(f), x), rtol=1e-6, atol=1e-7)


def test_scalar_times_array_second_derivatives():
    def f(s, x):
        return np.sum(np.tanh(s * x))
    s, x = 0.7, np.array([0.3, -1.2, 2.0])
    t = np.tanh(s * x)
    d2 = -2 * t * (1 - t ** 2)
    # d2f/ds2 = sum(x^2 tanh''), d2f/ds dx = tanh' + s x tanh''
    hs, hx = ad.hvp(f, (0, 1))(s, x, (1.0, np.zeros(3)))
    assert hs == pytest.approx(np.sum(x ** 2 * d2), rel=1e-12)
    close(hx, (1 - t ** 2) + s * x * d2, rtol=1e-12)
    assert ad.hessian(f)(s, x) == pytest.approx(np.sum(x ** 2 * d2), rel=1e-12)
    close(ad.hessian(f, 1)(s, x), np.diag(s ** 2 * d2), rtol=1e-12, atol=1e-14)


# -- gradients of gradients -------------------------------------------------------

def test_grad_of_grad_on_floats():
    def f(x):
        return x ** 4 + ad.sin(x)
    x0 = 0.8
    assert ad.grad(ad.grad(f))(x0) == pytest.approx(12 * x0 ** 2 - math.sin(x0), rel=1e-12)
    v, g = ad.value_and_grad(ad.grad(f))(x0)
    assert v == pytest.approx(4 * x0 ** 3 + math.cos(x0), rel=1e-12)
    assert g == pytest.approx(12 * x0 ** 2 - math.sin(x0), rel=1e-12)


def test_grad_of_grad_on_arrays_is_a_hessian_vector_product():
    w = np.array([1.0, -2.0, 0.5])

    def f(x):
        return np.sum(np.sin(x)) * np.sum(x ** 2)

    def g(x):
        return ad.grad(f)(x) @ w
    x = np.array([0.3, -0.4, 1.1])
    close(ad.grad(g)(x), ad.hessian(f)(x) @ w, rtol=1e-10, atol=1e-12)
    close(ad.grad(g)(x), fd(g, x), rtol=1e-6, atol=1e-8)


def test_grad_of_grad_with_a_second_argument_and_kwargs():
    def f(x, a, power=3):
        return a * x ** power
    d2 = ad.grad(ad.grad(f))(1.5, 2.0, power=4)
    assert d2 == pytest.approx(2.0 * 12 * 1.5 ** 2, rel=1e-12)


def test_third_and_fourth_order_nesting():
    assert ad.grad(ad.grad(ad.grad(lambda x: x ** 4)))(1.5) == pytest.approx(24 * 1.5)
    assert ad.grad(ad.grad(ad.grad(ad.grad(lambda x: x ** 4))))(1.5) == pytest.approx(24)


# -- custom ops -------------------------------------------------------------------

def _cube(x):
    return x ** 3


cube_with_jvp = ad.custom_op(_cube, lambda g, out, x: (3 * x ** 2 * g,),
                             jvp=lambda tangents, out, x: 3 * x ** 2 * tangents[0])
cube_without_jvp = ad.custom_op(_cube, lambda g, out, x: (3 * x ** 2 * g,))


@pytest.mark.parametrize("x,v", [(1.5, 0.5), (np.array([0.5, -2.0]), np.array([1.0, 3.0]))])
def test_custom_op_with_jvp_in_jvp_and_grad(x, v):
    def f(x):
        return cube_with_jvp(x) * 2.0
    value, t = ad.jvp(f)(x, v)
    close(value, 2 * x ** 3, rtol=1e-14)
    close(t, 6 * x ** 2 * v, rtol=1e-14)
    if np.ndim(x):
        close(ad.grad(lambda x: np.sum(f(x)))(x), 6 * x ** 2, rtol=1e-14)
    else:
        assert ad.grad(f)(x) == pytest.approx(6 * x ** 2, rel=1e-14)


def test_custom_op_without_jvp_raises_in_jvp():
    with pytest.raises(NotImplementedError):
        ad.jvp(cube_without_jvp)(1.5, 1.0)
    # reverse mode still works
    assert ad.grad(cube_without_jvp)(1.5) == pytest.approx(3 * 1.5 ** 2)


@pytest.mark.parametrize("op", [cube_with_jvp, cube_without_jvp])
def test_hessian_through_a_custom_op_differentiates_its_vjp(op):
    # (the C second-order sweep has no second-order rules of a custom op:
    # its vjp, written with NumPy, is differentiated instead)
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(ad.hessian(lambda x: np.sum(op(x)))(x), np.diag(6 * x))
    assert ad.hvp(op)(1.5, 2.0) == pytest.approx(6 * 1.5 * 2.0)
    np.testing.assert_allclose(ad.hvp(lambda x: np.sum(op(x)))(x, x), 6 * x * x)


# -- what a custom op's rules return is checked ----------------------------------------

def _square(x):
    return x * x


def _square_vjp(g, out, x):
    return (2 * x * g,)


def _square_op(vjp=_square_vjp, jvp=None, forward=_square):
    return ad.custom_op(forward, vjp, jvp=jvp)


INPUTS = [2.0, np.array([1.0, -3.0])]


def _tape_still_works():
    """An unrelated backward after the error has the right gradient."""
    w = ad.Value(3.0)
    (w * w + ad.Value(1.0)).backward()
    assert w.grad == 6.0
    g = ad.grad(lambda x: np.sum(_square_op()(x)))(np.array([0.5, 2.0]))
    assert g.tolist() == [1.0, 4.0]


def _loss(op):
    return lambda x: np.sum(op(x))


def _leaf(x):
    return ad.Value(x) if np.ndim(x) == 0 else ad.Array(x)


@pytest.mark.parametrize("x", INPUTS, ids=["Value", "Array"])
@pytest.mark.parametrize("vjp,error,message", [
    (lambda g, out, x: None, TypeError, r"_square: vjp returned None"),
    (lambda g, out, x: (None,), TypeError,
     r"_square: vjp returned None as the cotangent of input 0"),
    (lambda g, out, x: (g, g), ValueError,
     r"_square: vjp returned 2 cotangents for 1 input"),
    (lambda g, out, x: (), ValueError, r"_square: vjp returned 0 cotangents"),
    (lambda g, out, x: (np.ones(5),), ValueError,
     r"_square: the cotangent vjp returned for input 0 has shape \(5,\)"),
    (lambda g, out, x: (np.ones((1,) + np.shape(x)),), ValueError,
     r"_square: the cotangent .* has shape \(1,"),
    (lambda g, out, x: ("abc",), TypeError, r"_square: the cotangent .* str 'abc'"),
    (lambda g, out, x: (np.array([g, "x"], dtype=object),), TypeError,
     r"_square: the cotangent .* dtype object"),
    (lambda g, out, x: (g * 1j,), TypeError, r"_square: the cotangent .* complex"),
    (lambda g, out, x: ([[1.0], [2.0, 3.0]],), TypeError, r"_square: the cotangent"),
], ids=["None", "None-cotangent", "too-many", "none-at-all", "shape", "extra-axis",
        "str", "object", "complex", "ragged"])
def test_custom_op_vjp_returning_no_cotangent_raises_naming_the_op(x, vjp, error, message):
    op = _square_op(vjp)
    with pytest.raises(error, match=message):
        ad.grad(_loss(op))(x)
    leaf = _leaf(x)
    y = op(leaf).sum() * 2.0 if np.ndim(x) else op(leaf) * 2.0
    with pytest.raises(error, match=message):
        y.backward()
    _tape_still_works()


@pytest.mark.parametrize("x", INPUTS, ids=["Value", "Array"])
def test_custom_op_nan_cotangent_is_a_number(x):
    op = _square_op(lambda g, out, x: (np.full(np.shape(x), np.nan),))
    assert np.all(np.isnan(ad.grad(_loss(op))(x)))


def test_custom_op_none_for_a_plain_input_is_fine_but_not_for_a_traced_one():
    scale = ad.custom_op(lambda x, k: x * k, lambda g, out, x, k: (g * k, None))
    assert ad.grad(lambda x: scale(x, 3.0))(2.0) == 3.0
    with pytest.raises(TypeError,
                       match="<lambda>: vjp returned None as the cotangent of input 1"):
        ad.grad(lambda x, k: scale(x, k), 1)(2.0, 3.0)


def _returns_none(x):
    return None


@pytest.mark.parametrize("x", INPUTS, ids=["Value", "Array"])
@pytest.mark.parametrize("forward,message", [
    (_returns_none, "_returns_none: forward's output is None"),
    (lambda x: x * 1j, "<lambda>: forward's output is .*complex"),
    (lambda x: "abc", "<lambda>: forward's output is str 'abc'"),
    (lambda x: np.array([x, None], dtype=object), "<lambda>: forward's output is .*object"),
], ids=["None", "complex", "str", "object"])
def test_custom_op_forward_returning_no_number_raises_at_the_op(x, forward, message):
    op = _square_op(forward=forward)
    with pytest.raises(TypeError, match=message):
        op(_leaf(x))
    with ad.no_grad(), pytest.raises(TypeError, match=message):
        op(_leaf(x))
    with pytest.raises(TypeError, match=message):
        ad.grad(_loss(op))(x)
    _tape_still_works()


def test_custom_op_forward_on_plain_inputs_is_just_forward():
    assert _square_op(forward=_returns_none)(2.0) is None
    assert _square_op()(np.array([1.0, 2.0])).tolist() == [1.0, 4.0]


@pytest.mark.parametrize("x", INPUTS, ids=["Value", "Array"])
@pytest.mark.parametrize("jvp,error,message", [
    (lambda t, out, x: None, TypeError, "_square: jvp's tangent is None"),
    (lambda t, out, x: np.ones(5), ValueError, r"_square: jvp's tangent has shape \(5,\)"),
    (lambda t, out, x: 1j * t[0], TypeError, "_square: jvp's tangent is .*complex"),
], ids=["None", "shape", "complex"])
def test_custom_op_jvp_returning_no_tangent_raises_naming_the_op(x, jvp, error, message):
    op = _square_op(jvp=jvp)
    with pytest.raises(error, match=message):
        ad.jvp(op)(x, np.ones(np.shape(x)) if np.ndim(x) else 1.0)
    _tape_still_works()


@pytest.mark.parametrize("x", INPUTS, ids=["Value", "Array"])
@pytest.mark.parametrize("jvp", [None, lambda t, out, x: 2 * x * t[0]],
                         ids=["no-jvp", "jvp"])
def test_second_derivatives_through_a_custom_op(x, jvp):
    # a custom op has rules of first order: its second derivatives are
    # those of its vjp
    op = _square_op(jvp=jvp)
    expected = 2.0 * np.ones(np.shape(x))
    np.testing.assert_allclose(
        ad.grad(lambda x: np.sum(ad.grad(_loss(op))(x)))(x), expected)
    np.testing.assert_allclose(ad.jacobian(ad.grad(_loss(op)))(x),
                               np.diag(expected) if np.ndim(x) else 2.0)
    np.testing.assert_allclose(ad.hessian(_loss(op))(x),
                               np.diag(expected) if np.ndim(x) else 2.0)
    _tape_still_works()


def test_a_custom_op_whose_vjp_takes_plain_numbers_raises_when_nested():
    def vjp(g, out, x):
        return (2.0 * float(x) * g,)
    op = ad.custom_op(_square, vjp)
    assert ad.grad(op)(1.5) == 3.0
    with pytest.raises(NotImplementedError, match="_square.*plain number"):
        ad.grad(ad.grad(op))(1.5)
    plain = ad.custom_op(_square, lambda g, out, x: (2.0 * np.array(x, dtype=float) * g,))
    with pytest.raises(NotImplementedError, match="_square.*plain number"):
        ad.grad(ad.grad(lambda x: np.sum(plain(x))))(np.array([1.5]))


def test_a_custom_op_whose_rules_call_scipy_on_traced_values_raises_when_nested():
    """Its vjp and jvp hand the raw input to scipy.linalg.expm, which takes
    plain numbers out of an object array of traced elements: NumPy reports
    that as its own 'setting an array element with a sequence'; every
    second-order path raises the NotImplementedError naming the op."""
    expm = pytest.importorskip("scipy.linalg").expm

    def expm_sum(A):
        return np.sum(expm(A))
    # for a diagonal A, d sum(expm(A)) / dA = expm(A)
    op = ad.custom_op(expm_sum, lambda g, out, A: (g * expm(A),),
                      jvp=lambda t, out, A: np.sum(expm(A) * t[0]))
    A = np.diag([0.3, -0.2])
    np.testing.assert_allclose(ad.grad(op)(A), expm(A), rtol=1e-14)
    second = [lambda: ad.hessian(op)(A), lambda: ad.grad(lambda B: np.sum(ad.grad(op)(B)))(A),
              lambda: ad.jvp(ad.grad(op))(A, np.ones((2, 2))),
              lambda: ad.grad(lambda B: ad.jvp(op)(B, np.ones((2, 2)))[1])(A),
              lambda: ad.hvp(op)(A, np.ones((2, 2))),
              lambda: ad.record(op, A).hessian(A)]
    for call in second:
        with pytest.raises(NotImplementedError, match="^expm_sum: inside another derivative"):
            call()
    _tape_still_works()


def test_a_replayed_custom_op_whose_output_changes_shape_raises():
    op = ad.custom_op(lambda x: np.ones(3) * x[0] if x[0] > 0 else np.ones(2) * x[0],
                      lambda g, out, x: (np.array([np.sum(g), 0.0]),))
    F = ad.record(lambda x: np.sum(op(x)), np.array([1.0, 1.0]))
    assert F(np.array([2.0, 0.0])) == 6.0
    with pytest.raises(ValueError, match=r"<lambda>: forward's output has shape \(2,\)"):
        F(np.array([-1.0, 0.0]))


# -- check_grad ---------------------------------------------------------------------

def test_check_grad_passes_on_correct_functions():
    ad.check_grad(lambda x, y: np.sum(np.sin(x) * y) + y ** 2, RNG.normal(size=3), 0.7)
    ad.check_grad(lambda p: p[0] * np.sum(np.tanh(p[1])), [1.3, RNG.normal(size=(2, 2))])
    ad.check_grad(lambda x: np.sum(cube_with_jvp(x)), np.array([0.5, -1.0, 2.0]))


def _bad_vjp(g, out, x):
    wrong = 3 * x ** 2 * g
    if np.ndim(x):
        wrong = wrong.copy()
        wrong[2] += 1.0          # only the entry at index 2 is wrong
    else:
        wrong = wrong + 1.0
    return (wrong,)


bad_cube = ad.custom_op(_cube, _bad_vjp)


def test_check_grad_names_the_wrong_entry():
    x = np.array([0.5, -1.0, 2.0, 0.3])
    with pytest.raises(AssertionError, match=r"argument 0.*index \(2,\)"):
        ad.check_grad(lambda x: np.sum(bad_cube(x)), x)
    with pytest.raises(AssertionError, match=r"argument 1"):
        ad.check_grad(lambda a, b: a * bad_cube(b), 2.0, 1.5)


def test_check_grad_on_a_wrong_rule_raises_even_when_the_error_is_small():
    small = ad.custom_op(np.sin, lambda g, out, x: (g * np.cos(x) * (1 + 1e-3),))
    with pytest.raises(AssertionError):
        ad.check_grad(lambda x: np.sum(small(x)), np.array([0.2, 0.4]))


# -- errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("transform", [ad.grad, ad.value_and_grad, ad.hessian])
def test_non_scalar_output_is_a_type_error(transform):
    with pytest.raises(TypeError):
        transform(lambda x: x * 2.0)(np.ones(3))


def test_non_scalar_output_to_hvp_is_a_type_error():
    with pytest.raises(TypeError):
        ad.hvp(lambda x: x * 2.0)(np.ones(3), np.ones(3))


@pytest.mark.parametrize("argnum", [1, -2, (0, 1), (0, 5)])
def test_out_of_range_argnum_is_a_type_error(argnum):
    with pytest.raises(TypeError):
        ad.grad(lambda x: x * 2.0, argnum)(1.0)


@pytest.mark.parametrize("argnum", ["0", 0.5, None])
def test_argnum_of_a_wrong_type_is_a_type_error(argnum):
    with pytest.raises(TypeError):
        ad.grad(lambda x: x * 2.0, argnum)(1.0)


TRANSFORMS = [ad.grad, ad.value_and_grad, ad.jacobian, ad.hessian, ad.hvp, ad.jvp,
              ad.vjp]


@pytest.mark.parametrize("transform", TRANSFORMS, ids=lambda t: t.__name__)
def test_a_transform_of_no_callable_fails_at_once(transform):
    with pytest.raises(TypeError,
                       match=f"ad.{transform.__name__} needs a callable, got None"):
        transform(None)
    with pytest.raises(TypeError, match="needs a callable, got 3.0"):
        transform(3.0, 0)
    with pytest.raises(TypeError, match="ad.record needs a callable, got None"):
        ad.record(None, 1.0)


@pytest.mark.parametrize("transform", TRANSFORMS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("argnum", ["0", 1.0, True, False, np.True_, (0, "1"), (0, True),
                                    (0, 1.0), None, {0: 1}])
def test_argnum_must_be_an_int_or_a_tuple_of_ints_at_once(transform, argnum):
    with pytest.raises(TypeError, match=r"argnum must be an int or a tuple of ints, got "):
        transform(lambda x, y: x * y, argnum)


@pytest.mark.parametrize("argnum", [np.int64(1), (np.int32(0), 1), [0, 1]])
def test_numpy_integers_and_lists_are_argument_positions(argnum):
    g = ad.grad(lambda x, y: x * y ** 2, argnum)(2.0, 3.0)
    assert g == (9.0, 12.0) if np.ndim(argnum) else g == 12.0


@pytest.mark.parametrize("argnum,shown", [(2, "argnum 2"), (-3, "argnum -3"),
                                          ((0, 7), "argnum 7")])
def test_out_of_range_argnum_names_it_and_the_number_of_arguments(argnum, shown):
    with pytest.raises(TypeError, match=f"grad: {shown}, but the function got 2 "
                                        "positional arguments"):
        ad.grad(lambda x, y: x * y, argnum)(1.0, 2.0)


@pytest.mark.parametrize("transform", [ad.hvp, ad.jvp])
def test_vector_of_the_wrong_shape_is_a_value_error(transform):
    def f(x):
        return np.sum(x ** 3)
    for bad in [np.ones(4), np.ones((3, 1)), 1.0]:
        with pytest.raises(ValueError):
            transform(f)(np.ones(3), bad)
    with pytest.raises(ValueError):
        transform(lambda p: p[0] * p[1])([1.0, 2.0], [1.0])


def test_cotangent_of_the_wrong_shape_is_a_value_error():
    _, fn = ad.vjp(lambda x: x ** 2)(np.ones(3))
    with pytest.raises(ValueError):
        fn(np.ones(4))


@pytest.mark.parametrize("bad", ["text", None, [1.0, "a"], {"a": object()}, True])
def test_non_numeric_argument_is_a_type_error(bad):
    with pytest.raises(TypeError):
        ad.grad(lambda x: 1.0)(bad)


def test_str_argument_not_differentiated_is_fine():
    assert ad.grad(lambda x, tag: x * len(tag))(2.0, "abc") == pytest.approx(3.0)


def test_grad_inside_no_grad_still_works():
    with ad.no_grad():
        assert ad.grad(lambda x: x ** 3)(2.0) == pytest.approx(12.0)
        close(ad.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0])),
              np.diag([6.0, 12.0]))
        # and the block still computes without recording afterwards
        y = ad.Value(2.0) * ad.Value(3.0)
        assert y.data == 6.0
    assert ad.grad(lambda x: x ** 3)(2.0) == pytest.approx(12.0)


# -- nested derivatives, NumPy calls on traced floats, structured results ----------

def _nested_or_not_implemented(compute, expected):
    """A derivative of a derivative must be right or refused, never
    silently wrong."""
    try:
        result = compute()
    except NotImplementedError:
        return
    close(result, expected, rtol=1e-10)


@pytest.mark.parametrize("case", ["grad", "grad array", "value_and_grad", "jvp", "vjp",
                                  "jacobian", "hvp"])
def test_inner_derivative_closing_over_an_outer_variable(case):
    inner = {
        "grad": lambda x: ad.grad(lambda y: x * y ** 2)(1.0),
        "grad array": lambda x: np.sum(ad.grad(lambda y: np.sum(x * y ** 2))(np.ones(2))) / 2,
        "value_and_grad": lambda x: ad.value_and_grad(lambda y: x * y ** 2)(1.0)[1],
        "jvp": lambda x: ad.jvp(lambda y: x * y ** 2)(1.0, 1.0)[1],
        "vjp": lambda x: ad.vjp(lambda y: x * y ** 2)(1.0)[1](1.0),
        "jacobian": lambda x: ad.jacobian(lambda y: x * y ** 2)(1.0),
        "hvp": lambda x: ad.hvp(lambda y: x * y ** 3)(1.0, 1.0) / 3,
    }[case]
    # every inner derivative is 2 x (x = 2), so the outer one is 2
    _nested_or_not_implemented(lambda: ad.grad(inner)(2.0), 2.0)


def test_value_of_an_inner_value_and_grad_is_differentiable():
    # d/dx of x**3 is 12 at x = 2
    _nested_or_not_implemented(
        lambda: ad.grad(lambda x: ad.value_and_grad(lambda y: y ** 3)(x)[0])(2.0), 12.0)


def test_np_sum_of_a_float_argument():
    assert ad.grad(lambda x: np.sum(x ** 2))(1.5) == pytest.approx(3.0)


def test_np_where_on_float_arguments():
    assert ad.grad(lambda x: np.where(x > 0, x ** 2, -x))(1.5) == pytest.approx(3.0)


def test_np_dot_of_0d_arrays():
    g = ad.grad(lambda x: np.dot(x, x))(np.array(1.5))
    assert float(g) == pytest.approx(3.0)


def test_np_concatenate_with_a_list_of_traced_numbers():
    J = ad.jacobian(lambda x: np.concatenate([x, [np.sum(x)]]))(np.array([1.0, 2.0]))
    close(J, np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))


def test_jvp_of_a_function_returning_a_tuple():
    value, tangent = ad.jvp(lambda x: (x ** 2, np.sin(x)))(0.5, 2.0)
    assert value == pytest.approx((0.25, np.sin(0.5)))
    assert tangent == pytest.approx((2.0, 2 * np.cos(0.5)))


def test_vjp_of_a_function_returning_a_dict():
    value, fn = ad.vjp(lambda x: {"sq": x ** 2, "sum": np.sum(x)})(np.array([1.0, 2.0]))
    close(value["sq"], [1.0, 4.0])
    close(fn({"sq": np.array([1.0, 1.0]), "sum": 2.0}), [4.0, 6.0])


def test_jacobian_with_a_tuple_argnum():
    x, y = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    jx, jy = ad.jacobian(lambda x, y: x * y, (0, 1))(x, y)
    close(jx, np.diag(y))
    close(jy, np.diag(x))


def test_hessian_with_a_tuple_argnum():
    # f = x^2 y: H = ((2y, 2x), (2x, 0)), nested by argnum as jax.hessian does
    (hxx, hxy), (hyx, hyy) = ad.hessian(lambda x, y: x ** 2 * y, (0, 1))(1.5, 2.0)
    assert (hxx, hxy, hyx, hyy) == pytest.approx((4.0, 3.0, 3.0, 0.0))


def test_an_argument_named_twice_gets_its_gradient_twice():
    x = np.array([1.0, 2.0])
    g0, g1 = ad.grad(lambda x: ad.sum(x * x), argnum=(0, 0))(x)
    np.testing.assert_array_equal(g0, [2.0, 4.0])
    np.testing.assert_array_equal(g1, [2.0, 4.0])
    value, (h0, h1) = ad.value_and_grad(lambda x: ad.sum(x * x), argnum=(0, -1))(x)
    assert value == 5.0
    np.testing.assert_array_equal(h1, [2.0, 4.0])
    j0, j1 = ad.jacobian(lambda x: x * x, argnum=(0, 0))(x)
    np.testing.assert_array_equal(j0, np.diag([2.0, 4.0]))
    np.testing.assert_array_equal(j1, np.diag([2.0, 4.0]))


def test_the_arguments_arrays_are_read_not_written():
    # the traced leaves are the Arrays' own copies: assigning one's data in
    # f, or replaying a recording at new points, leaves the caller's arrays
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])

    def f(d):
        a = d["a"][0]
        a.data = a.data * 10.0
        return ad.sum(a * a)

    assert ad.grad(f)({"a": [x]})["a"][0] == pytest.approx([20.0, 40.0])
    F = ad.record(lambda v: ad.sum(v * v), x)
    np.testing.assert_array_equal(F.grad(y), [6.0, 8.0])
    np.testing.assert_array_equal(x, [1.0, 2.0])
    np.testing.assert_array_equal(y, [3.0, 4.0])


def _object_array_result(x):
    # plain NumPy's np.array of traced numbers is an object array
    return np.array([x[0] - 1, x[1] * x[0], 3.0])


def test_a_result_built_by_np_array_of_traced_numbers_keeps_its_derivative():
    x = np.array([2.0, 3.0])
    J = [[1, 0], [3, 2], [0, 0]]
    np.testing.assert_array_equal(ad.jacobian(_object_array_result)(x), J)
    np.testing.assert_array_equal(ad.record(_object_array_result, x).jacobian(x), J)
    np.testing.assert_array_equal(ad.jacobian(lambda x: {"c": _object_array_result(x)})(x)["c"], J)
    # nested: the gradient of a sum of squares, differentiated again
    H = [[2 + 2 * 9, 4 * 6], [4 * 6, 2 * 4]]
    g = ad.grad(lambda x: np.sum(_object_array_result(x) ** 2))
    np.testing.assert_allclose(ad.jacobian(g)(x), H, rtol=1e-14)
    np.testing.assert_array_equal(
        ad.jacobian_sparsity(_object_array_result)(x).toarray(), np.array(J) != 0)
