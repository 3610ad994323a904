"""np.where's branch not taken may hold NaNs (the sqrt or log of a
negative there): every derivative of the branch taken is still a number,
in forward mode and at second order too, where a tangent reaches the
select from the NaN side.  Oracles: the derivatives written out by hand
for the branch taken, and the Jacobian of the recorded gradient."""
import warnings

import numpy as np
import pytest

import pyautodiff as ad


def f(x):
    return np.sum(np.where(x > 0, np.sqrt(x), x ** 2))


def g(x):
    return np.sum(np.where(x > 0, np.log(x) * x, np.arcsin(x / 4.0)))


X = np.array([-1.0, 0.5, 2.0, -3.0])


def _f_hessian(x):
    return np.diag(np.where(x > 0, -0.25 * np.abs(x) ** -1.5, 2.0))


def _g_hessian(x):
    y = x / 4.0
    inner = y / (1.0 - y * y) ** 1.5 / 16.0
    return np.diag(np.where(x > 0, 1.0 / np.where(x > 0, x, 1.0), inner))


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # NumPy's sqrt(-1)
        yield


@pytest.mark.parametrize("fn, hessian", [(f, _f_hessian), (g, _g_hessian)])
def test_second_derivatives_are_the_branch_taken(fn, hessian, monkeypatch):
    want = hessian(X)
    np.testing.assert_allclose(ad.jacobian(ad.grad(fn))(X), want, rtol=1e-12)
    np.testing.assert_allclose(ad.hessian(fn)(X), want, rtol=1e-12)
    v = np.array([1.0, -2.0, 0.5, 3.0])
    np.testing.assert_allclose(ad.hvp(fn)(X, v), want @ v, rtol=1e-12)
    np.testing.assert_allclose(ad.sparse_hessian(fn)(X).toarray(), want, rtol=1e-12)
    F = ad.record(fn, X)
    np.testing.assert_allclose(F.hessian(X), want, rtol=1e-12)
    np.testing.assert_allclose(F.sparse_hessian(X).toarray(), want, rtol=1e-12)
    # one direction per sweep, as well as four
    from pyautodiff import trace
    monkeypatch.setattr(trace, "LANES", 1)
    np.testing.assert_allclose(ad.hessian(fn)(X), want, rtol=1e-12)


@pytest.mark.parametrize("fn", [f, g])
def test_forward_mode_is_the_branch_taken(fn):
    grad = ad.grad(fn)(X)
    assert np.all(np.isfinite(grad))
    for k in range(X.size):
        u = np.eye(X.size)[k]
        value, tangent = ad.jvp(fn)(X, u)
        assert tangent == pytest.approx(grad[k], rel=1e-13)
    J = ad.jacobian(lambda x: np.where(x > 0, np.sqrt(x), -x))(np.array([-1.0, 4.0, -2.0, 1.0, 9.0]))
    np.testing.assert_allclose(np.diag(J), [-1.0, 0.25, -1.0, 0.5, 1.0 / 6.0], rtol=1e-13)


def test_third_derivatives_too():
    d3 = ad.jacobian(ad.hessian(f))(X)
    want = np.zeros((4, 4, 4))
    for k, x in enumerate(X):
        want[k, k, k] = 0.375 * x ** -2.5 if x > 0 else 0.0
    np.testing.assert_allclose(d3, want, rtol=1e-12)
