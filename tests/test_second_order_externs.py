"""Second derivatives in one sweep through the library's extern ops whose
vjps are themselves differentiable (scipy.special's functions,
numpy.linalg's; prod, a C reduction now, with them as a check): the second-order sweep differentiates the op's vjp along
each direction on a tape of its own, so a recording's Hessian, sparse
Hessian and Hessian-vector products work through them, as do
ad.minimize(method='ipopt') and trust-constr on functions that use them.
Oracles: the Jacobian of the recorded gradient (no second-order rule in
common) and central differences of the gradient."""
import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import ipopt_library

scipy = pytest.importorskip("scipy")
import scipy.special as sc  # noqa: E402


def _central(f, x, h=1e-5):
    g = ad.grad(f)
    return np.array([(g(x + h * u) - g(x - h * u)) / (2 * h) for u in np.eye(x.size)])


A = np.array([[2.0, 0.3, -0.1], [0.3, 1.5, 0.2], [-0.1, 0.2, 1.8]])

FUNCTIONS = {
    "erf": lambda x: np.sum(sc.erf(x[1:] * x[:-1])),
    "gammaln": lambda x: np.sum(sc.gammaln(x * x + 1.0)),
    "digamma of exp": lambda x: np.sum(sc.digamma(np.exp(x)) * x),
    "expit and log_ndtr": lambda x: np.sum(sc.expit(x) * sc.log_ndtr(x)),
    "prod": lambda x: np.prod(x[:4]) + np.sum(np.prod(np.reshape(x, (2, 3)), axis=0)),
    "solve": lambda x: np.sum(np.linalg.solve(A + np.diag(x[:3] ** 2), x[3:]) ** 2),
    "det and inv": lambda x: np.linalg.det(A + np.outer(x[:3], x[3:]))
    + np.sum(np.linalg.inv(A + np.diag(x[3:] ** 2))),
}
X = np.array([0.3, -0.7, 1.1, 0.5, -0.2, 0.9])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_a_recordings_hessians_through_the_op(name):
    f = FUNCTIONS[name]
    want = np.asarray(ad.jacobian(ad.grad(f))(X))
    np.testing.assert_allclose(want, _central(f, X), rtol=1e-6, atol=1e-7)
    F = ad.record(f, X)
    np.testing.assert_allclose(F.hessian(X), want, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(F.sparse_hessian(X).toarray(), want, rtol=1e-11, atol=1e-12)
    v = np.linspace(-1.0, 1.0, X.size)
    np.testing.assert_allclose(F.hvp(X, v), want @ v, rtol=1e-11, atol=1e-12)
    # replayed at another point
    x2 = X + 0.05
    np.testing.assert_allclose(F.sparse_hessian(x2).toarray(),
                               ad.jacobian(ad.grad(f))(x2), rtol=1e-11, atol=1e-12)
    # the functional forms take the one-sweep path too
    np.testing.assert_allclose(ad.hessian(f)(X), want, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(ad.sparse_hessian(f)(X).toarray(), want,
                               rtol=1e-11, atol=1e-12)


def test_scalar_entries_through_the_op():
    def f(x):
        a, b = x[0], x[1]
        return sc.erf(a * b) + sc.gammaln(a * a + 2.0) * b
    x = np.array([0.4, -0.8])
    np.testing.assert_allclose(ad.record(f, x).hessian(x), ad.jacobian(ad.grad(f))(x),
                               rtol=1e-12, atol=1e-13)


try:
    ipopt_library.load()
    HAVE_IPOPT = True
except ImportError:
    HAVE_IPOPT = False


def _erf_in_a_ball():
    """min sum((x - 0.5)^2 - erf(x)) in the unit ball: f falls along the
    diagonal up to the ball's boundary (2 (t - 0.5) - erf'(t) < 0 at
    t = 0.5), so the optimum is x_i = 0.5, the constraint active."""
    def f(x):
        return np.sum((x - 0.5) ** 2) - np.sum(sc.erf(x))
    cons = {"type": "ineq", "fun": lambda x: 1.0 - np.sum(x ** 2)}
    return f, np.full(4, 0.1), cons, 4 * -sc.erf(0.5)


@pytest.mark.parametrize("method, tol", [
    pytest.param("ipopt", 1e-7, marks=pytest.mark.skipif(
        not HAVE_IPOPT, reason="no IPOPT library is installed")),
    ("trust-constr", 1e-3)])        # (its barrier's tolerance)
def test_constrained_solvers_on_a_function_through_scipy_special(method, tol):
    f, x0, cons, want = _erf_in_a_ball()
    res = ad.minimize(f, x0, method=method, constraints=cons)
    assert res.success
    np.testing.assert_allclose(res.x, 0.5, atol=tol)
    assert abs(res.fun - want) < tol


def test_an_op_without_differentiable_rules_still_says_so():
    op = ad.custom_op(lambda a: np.cumsum(a), lambda g, out, a: (np.cumsum(g[::-1])[::-1],))
    f = lambda x: ad.sum(op(x) ** 2)   # noqa: E731
    with pytest.raises(NotImplementedError, match="first order|jvp"):
        ad.record(f, X).hessian(X)


def test_a_custom_ops_vjp_through_an_op_with_no_jvp():
    """opA's vjp calls opB, which has no jvp: the one-sweep products cannot
    differentiate it forward, so ad.hessian and ad.hvp differentiate the
    recorded gradient instead; a recording, which has no function to trace
    again, says what is missing."""
    op_b = ad.custom_op(lambda a: np.cos(a), lambda g, out, a: (-g * np.sin(a),))
    op_a = ad.custom_op(lambda a: np.sin(a), lambda g, out, a: (g * op_b(a),),
                        jvp=lambda ts, out, a: ts[0] * np.cos(a))
    f = lambda x: ad.sum(op_a(x) ** 2)   # noqa: E731
    x = np.array([0.3, -0.7, 1.1])
    want = np.diag(2 * np.cos(2 * x))      # d2/dx2 sin(x)^2
    np.testing.assert_allclose(ad.hessian(f)(x), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ad.hvp(f)(x, np.ones(3)), want @ np.ones(3), rtol=1e-12)
    np.testing.assert_allclose(ad.sparse_hessian(f)(x).toarray(), want, rtol=1e-12,
                               atol=1e-14)
    with pytest.raises(NotImplementedError, match="jvp"):
        ad.record(f, x).hessian(x)


def test_second_order_rules_inside_another_derivative_record_nothing_there():
    """A recording's Hessian taken while another derivative traces its
    function: the ops' second-order rules run on tapes of their own (no
    value of the outer trace is made, none is taken out as a float)."""
    import warnings
    f = lambda x: np.sum(sc.erf(x[1:] * x[:-1])) + np.prod(x) + np.sum(sc.gammaln(x * x + 1))  # noqa: E731
    x = np.array([0.3, -0.7, 1.1])
    F = ad.record(f, x)
    total = float(np.sum(F.hessian(x)))

    def outer(y):
        return ad.sum(y * np.sum(F.hessian(x)).item())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(ad.grad(outer)(np.ones(2)), [total, total], rtol=1e-14)
