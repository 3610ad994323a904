"""The ndarray's methods on ad.Array, np.asarray of an Array, and the
messages of common mistakes.  Values are checked against NumPy on the same
data, gradients against central differences (ad.check_grad), hand-derived
values or HIPS autograd."""
import autograd
import autograd.numpy as hips_np
import numpy as np
import pytest

import pyautodiff as ad

X = np.array([[0.5, -1.25, 2.0], [1.5, 0.75, -0.5]])
B = np.array([[1.0, -2.0], [0.5, 3.0], [-1.0, 0.25]])

# name -> a call that is the same on an ndarray and on an Array
DIFFERENTIABLE = {
    "ravel": lambda x: x.ravel(), "ravel F": lambda x: x.ravel("F"),
    "ravel K": lambda x: x.ravel(order="K"),
    "flatten": lambda x: x.flatten(), "flatten F": lambda x: x.flatten("F"),
    "copy": lambda x: x.copy(), "astype float64": lambda x: x.astype(np.float64),
    "astype float no copy": lambda x: x.astype(float, copy=False),
    "dot matrix": lambda x: x.dot(B), "dot vector": lambda x: x.dot(B[:, 0]),
    "dot scalar": lambda x: x.dot(2.5),
    "cumsum": lambda x: x.cumsum(), "cumsum 1": lambda x: x.cumsum(axis=1),
    "cumsum -2": lambda x: x.cumsum(-2),
    "prod": lambda x: x.prod(), "prod 0": lambda x: x.prod(axis=0),
    "prod both": lambda x: x.prod(axis=(1, 0)),
    "prod keepdims": lambda x: x.prod(axis=1, keepdims=True),
    "var": lambda x: x.var(), "var 0": lambda x: x.var(axis=0),
    "var ddof keepdims": lambda x: x.var(axis=1, ddof=1, keepdims=True),
    "std": lambda x: x.std(), "std ddof": lambda x: x.std(axis=(0,), ddof=1),
    "std keepdims": lambda x: x.std(1, keepdims=True),
    "clip": lambda x: x.clip(-0.6, 1.0), "clip min": lambda x: x.clip(0.6),
    "clip max keyword": lambda x: x.clip(max=0.6),
    "squeeze": lambda x: x[:1].squeeze(), "squeeze axis": lambda x: x[:, 1:2].squeeze(axis=1),
    "swapaxes": lambda x: x.swapaxes(0, 1), "swapaxes -1": lambda x: x[None].swapaxes(-1, 0),
    "repeat": lambda x: x.repeat(2), "repeat axis": lambda x: x.repeat([1, 0, 3], axis=1),
    "sum": lambda x: x.sum(axis=1), "mean": lambda x: x.mean(axis=0, keepdims=True),
    "max": lambda x: x.max(axis=1), "min": lambda x: x.min(),
}


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_differentiable_methods_match_numpy_and_central_differences(name):
    call = DIFFERENTIABLE[name]
    out = call(ad.Array(X))
    expected = call(X.copy())
    assert isinstance(out, ad.Array) and out.shape == np.shape(expected)
    np.testing.assert_allclose(out.data, expected, rtol=1e-13, atol=1e-15)
    w = np.random.default_rng(1).normal(size=np.shape(expected))
    ad.check_grad(lambda x: (call(x) * w).sum(), X)


@pytest.mark.parametrize("call", [np.cumsum, lambda a: np.cumsum(a, axis=0),
                                  np.prod, lambda a: np.prod(a, axis=1),
                                  np.var, lambda a: np.std(a, axis=0, ddof=1),
                                  np.ravel, lambda a: np.swapaxes(a, 0, 1),
                                  lambda a: np.repeat(a, 2, axis=0), np.copy])
def test_numpys_functions_record_as_the_methods(call):
    out = call(ad.Array(X))
    assert isinstance(out, ad.Array)
    np.testing.assert_allclose(out.data, call(X), rtol=1e-13)
    ad.check_grad(lambda x: (call(x) ** 2).sum(), X)


def test_prod_gradient_is_exact_where_elements_are_zero():
    # d/dx_i prod(x) is the product of the others, also where x_i is 0
    g = ad.grad(lambda x: x.prod())(np.array([2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 6.0, 0.0])
    g = ad.grad(lambda x: x.prod())(np.array([0.0, 4.0, 0.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])
    x = np.array([[0.0, 2.0], [3.0, 0.0], [0.0, 0.0]])
    g = ad.grad(lambda x: x.prod(axis=1).sum())(x)
    np.testing.assert_array_equal(g, [[2.0, 0.0], [0.0, 3.0], [0.0, 0.0]])
    assert ad.Array(np.zeros((2, 0))).prod(axis=1).data.tolist() == [1.0, 1.0]


def test_forward_mode_and_second_derivatives():
    x = np.array([0.5, -1.0, 2.0])
    v = np.array([1.0, 0.5, -2.0])
    _, t = ad.jvp(lambda x: x.prod())(x, v)
    assert float(t) == pytest.approx(v[0] * x[1] * x[2] + x[0] * v[1] * x[2] + x[0] * x[1] * v[2])
    _, t = ad.jvp(lambda x: x.cumsum())(x, v)
    np.testing.assert_allclose(t, np.cumsum(v))
    # cumsum is linear: its second derivatives are exact, as autograd's
    f = lambda x, np=np: (np.cumsum(x) ** 3).sum() + np.var(x) * np.std(x)  # noqa: E731
    np.testing.assert_allclose(ad.hessian(f)(x),
                               autograd.hessian(lambda x: f(x, hips_np))(x), rtol=1e-12)
    # prod's rules are of first order: its second derivatives are those of
    # its vjp, exact where elements are zero
    np.testing.assert_allclose(ad.hessian(lambda x: x.prod())(x),
                               autograd.hessian(lambda x: hips_np.prod(x))(x), rtol=1e-12)
    A = np.array([[1.5, -0.5], [0.7, 2.0], [0.3, 1.1]])
    np.testing.assert_allclose(
        ad.jacobian(ad.jacobian(lambda a: a.prod(axis=0)))(A),
        autograd.jacobian(autograd.jacobian(lambda a: hips_np.prod(a, axis=0)))(A),
        rtol=1e-12, atol=1e-15)
    # where elements are zero (autograd divides by them there): by hand,
    # d2/dxi dxj prod(x) is the product of the others, 0 on the diagonal
    z = np.array([0.5, 0.0, 2.0, 0.0, -1.5])
    by_hand = np.array([[0.0 if i == j else np.prod(np.delete(z, [i, j]))
                         for j in range(5)] for i in range(5)])
    np.testing.assert_array_equal(ad.hessian(lambda x: x.prod())(z), by_hand)
    # cumsum nests too
    np.testing.assert_allclose(
        ad.hessian(lambda x: np.sum(np.cumsum(x) ** 3))(x),
        autograd.hessian(lambda x: hips_np.sum(hips_np.cumsum(x) ** 3))(x), rtol=1e-12)
    np.testing.assert_allclose(
        ad.grad(lambda x: np.sum(ad.grad(lambda z: np.sum(np.cumsum(z) ** 3))(x)))(x),
        autograd.grad(lambda x: hips_np.sum(autograd.grad(
            lambda z: hips_np.sum(hips_np.cumsum(z) ** 3))(x)))(x), rtol=1e-12)


def test_var_with_no_degrees_of_freedom_is_numpys_inf_or_nan():
    with pytest.warns(RuntimeWarning):
        out = ad.Array([1.0, 2.0]).var(ddof=2)
    assert out.data == np.inf
    with pytest.warns(RuntimeWarning):
        assert np.isnan(ad.Array([1.0, 1.0]).var(ddof=2).data)


def test_the_spread_of_one_element_is_zero_with_a_zero_derivative():
    # (sqrt of a variance that is 0 whatever the values: inf * 0 otherwise)
    assert ad.grad(np.std)(3.5) == 0.0
    np.testing.assert_array_equal(
        ad.grad(lambda x: np.std(x, axis=0).sum() + np.var(x, axis=0).sum())(X[:1]),
        np.zeros_like(X[:1]))
    assert ad.grad(ad.grad(lambda x: np.std(x) + x))(0.5) == 0.0
    np.testing.assert_array_equal(np.std(ad.Array(X[:1]), axis=0).data, np.zeros(X.shape[1:]))


def test_float_dtypes_keep_the_trace_in_float64():
    a = ad.Array(X)
    for dtype in (np.float32, np.float16, "float64", float):
        out = a.astype(dtype)
        assert isinstance(out, ad.Array) and out.dtype == np.float64
        np.testing.assert_array_equal(out.data, X)
    assert a.astype(float, copy=False) is a
    g = ad.grad(lambda x: (x.astype(np.float32) * x).sum())(X)
    np.testing.assert_allclose(g, 2 * X)
    with pytest.raises(TypeError, match="complex128"):
        a.astype(complex)
    with pytest.raises(TypeError, match="out= is not supported"):
        a.var(out=np.empty(3))
    with pytest.raises(TypeError, match="dtype=int64 is not supported"):
        a.cumsum(dtype=np.int64)


def test_copy_is_independent_of_the_original():
    a = ad.Array(X)
    c = a.copy()
    a.data[0, 0] = 100.0
    assert c.data[0, 0] == X[0, 0]
    with ad.no_grad():
        c = a.copy()
    a.data[0, 0] = -7.0
    assert c.data[0, 0] == 100.0


def test_methods_that_leave_the_tape_give_numpys_plain_results():
    a = ad.Array(X)
    assert a.tolist() == X.tolist() and type(a.tolist()[0][0]) is float
    assert ad.Array(2.5).tolist() == 2.5
    for call in (lambda x: x.argmax(), lambda x: x.argmin(), lambda x: x.argmax(axis=0),
                 lambda x: x.argmin(1, keepdims=True), lambda x: x.astype(int),
                 lambda x: x.astype(np.int8), lambda x: x.astype(bool),
                 lambda x: x.any(axis=0), lambda x: x.all(axis=1, keepdims=True)):
        out, expected = call(a), call(X)
        assert type(out) is type(expected) and np.shape(out) == np.shape(expected)
        np.testing.assert_array_equal(out, expected)
        assert getattr(out, "dtype", None) == getattr(expected, "dtype", None)
    assert a.any() is True and (a > 0).all() is False


def test_round_is_a_constant():
    a = ad.Array(X)
    out = a.round(1)
    assert isinstance(out, ad.Array)
    np.testing.assert_array_equal(out.data, X.round(1))
    # (round(x) * x)' = round(x): the rounding itself has no derivative
    np.testing.assert_array_equal(ad.grad(lambda x: (x.round() * x).sum())(X), X.round())


def test_results_that_leave_the_tape_are_guards_in_a_recording():
    x1 = X[::-1].copy()
    for fn in (lambda x: x * x.argmax(), lambda x: x * x.tolist()[0][0],
               lambda x: x * x.astype(int).sum()):
        F = ad.record(fn, X)
        np.testing.assert_allclose(F(X), fn(X))
        with pytest.raises(ad.BranchError):
            F(x1)


# -- np.asarray of an Array --------------------------------------------------

def test_asarray_gives_the_float_values():
    a = ad.Array(X)
    for out in (np.asarray(a), np.array(a), np.asanyarray(a)):
        assert type(out) is np.ndarray and out.dtype == np.float64
        np.testing.assert_array_equal(out, X)
    assert np.asarray(a, dtype=np.float32).dtype == np.float32
    assert np.array(a, dtype=int).tolist() == X.astype(int).tolist()
    copied = np.array(a, copy=True)
    copied[0, 0] = 9.0
    assert a.data[0, 0] == X[0, 0]
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(a, dtype=int, copy=False)
    np.testing.assert_allclose(a * 2, 2 * X)       # NumPy's testing reads it
    assert np.array([ad.Array([1.0, 2.0]), ad.Array([3.0, 4.0])]).tolist() == \
        [[1.0, 2.0], [3.0, 4.0]]


def test_numpy_dispatch_still_records():
    a = ad.Array(X)
    for out in (np.exp(a), X * a, np.sum(a, axis=0), np.stack([a, a]),
                np.concatenate([a, a]), np.dot(a, B)):
        assert isinstance(out, ad.Array)
    np.sum(np.exp(a)).backward()
    np.testing.assert_allclose(a.grad, np.exp(X))


def test_np_array_of_traced_arrays_stays_traced():
    # inside a derivative, np.array([x, y]) of traced Arrays records (as of
    # traced scalars), where floats would silently cut the derivative off
    def f(x):
        v = np.array([x[0] * x[1], x[1], np.sin(x[0])])
        return np.sum(v ** 2) + np.sum(np.asarray(x) * x)

    def df(x):                    # by hand
        return np.array([2 * x[0] * x[1] ** 2 + 2 * np.sin(x[0]) * np.cos(x[0]) + 2 * x[0],
                         2 * x[0] ** 2 * x[1] + 4 * x[1]])
    x = np.array([0.5, -1.5])
    np.testing.assert_allclose(ad.grad(f)(x), df(x), rtol=1e-13)
    F = ad.record(f, x)
    x1 = np.array([2.0, 0.25])
    assert F(x1) == pytest.approx(f(x1))
    np.testing.assert_allclose(F.grad(x1), df(x1), rtol=1e-13)
    # a float dtype asks for plain numbers: refused, as float(x) is
    with pytest.raises(ad.DetachError, match="numpy.asarray"):
        ad.grad(lambda x: np.sum(np.asarray(x, float) * x))(x)


# -- messages ----------------------------------------------------------------

def test_backward_with_a_grad_that_is_not_an_array_says_what_it_needs():
    y = ad.Array([1.0, 2.0]) * 2.0
    for bad in ("x", 1j, [[1.0], [2.0, 3.0]]):
        with pytest.raises(TypeError, match=r"backward\(grad\): grad must be an "
                           r"array of real numbers of this Array's shape \(2,\)"):
            y.backward(bad)


def test_minimize_of_a_vector_function_names_minimize_and_the_shape():
    for method in ("lbfgs", "L-BFGS-B", "Nelder-Mead"):
        with pytest.raises(TypeError, match=r"ad.minimize needs a function "
                           r"returning a scalar.*shape \(3,\)"):
            ad.minimize(lambda x: x ** 2, np.ones(3), method=method)
    with pytest.raises(TypeError, match=r"grad needs a function with a scalar "
                       r"output \(for others use jacobian or vjp\); this one "
                       r"returned shape \(3,\)"):
        ad.grad(lambda x: x ** 2)(np.ones(3))


def test_in_place_numpy_operations_on_an_ndarray_say_what_to_write():
    a = ad.Array([1.0, 2.0])
    x = np.zeros(2)
    with pytest.raises(TypeError, match=r"in-place NumPy operations on an "
                       r"ndarray cannot record.*x = x \+ a"):
        x += a
    with pytest.raises(TypeError, match="numpy.exp writes into an ndarray"):
        np.exp(a, out=x)
    with pytest.raises(TypeError, match="numpy.sum writes into an ndarray"):
        np.sum(a, out=np.zeros(()))
    np.testing.assert_array_equal(x, [0.0, 0.0])
    x = x + a                     # what to write instead
    assert isinstance(x, ad.Array)
