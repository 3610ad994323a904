"""ad.minimize with constraints: method='ipopt' (IPOPT's C interface),
'trust-constr' and 'SLSQP' against published and hand-derived optima; the
multipliers against the KKT conditions, with the gradients and Jacobians
taken by central differences; the error paths."""
import json
import os
import subprocess
import sys
import textwrap
from ctypes import util as ctypes_util
from pathlib import Path

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import ipopt_library

so = pytest.importorskip("scipy.optimize")
try:
    ipopt_library.load()
    HAVE_IPOPT = True
except ImportError:
    HAVE_IPOPT = False
needs_ipopt = pytest.mark.skipif(not HAVE_IPOPT, reason="no IPOPT library is installed")

METHODS = [pytest.param("ipopt", marks=needs_ipopt), "trust-constr", "SLSQP"]
# how close each method gets with its default tolerances
XTOL = {"ipopt": 1e-7, "trust-constr": 1e-4, "slsqp": 1e-5}


def xtol(method):
    return XTOL[method.lower()]


# --- independent derivatives: central differences ----------------------------

def num_grad(fun, x, h=1e-6):
    x = np.asarray(x, np.float64)
    out = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        e = e.reshape(x.shape)
        out.append((np.asarray(fun(x + e), np.float64) -
                    np.asarray(fun(x - e), np.float64)) / (2 * h))
    return np.stack(out, axis=-1).reshape(-1, x.size)   # (m, n)


def kkt_residual(f, funs, res):
    """grad f(x) - sum_k J_k(x)^T lambda_k - z, the convention documented
    in docs/constrained.md."""
    x = np.asarray(res.x, np.float64)
    r = num_grad(f, x)[0]
    for fun, lam in zip(funs, res.multipliers):
        r = r - num_grad(fun, x).T @ np.reshape(lam, -1)
    z = res.get("bound_multipliers")
    if z is not None:
        r = r - np.reshape(z, -1)
    return r


# --- HS071, IPOPT's own example -----------------------------------------------

def hs071_f(x):
    return x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]


def hs071_product(x):
    return x[0] * x[1] * x[2] * x[3] - 25.0


def hs071_squares(x):
    return np.sum(x ** 2) - 40.0


HS071_CONSTRAINTS = [{"type": "ineq", "fun": hs071_product},
                     {"type": "eq", "fun": hs071_squares}]
HS071_X0 = np.array([1.0, 5.0, 5.0, 1.0])
HS071_X = np.array([1.00000000, 4.74299963, 3.82114998, 1.37940829])
HS071_F = 17.0140173


@pytest.mark.parametrize("method", METHODS)
def test_hs071_reaches_its_published_optimum(method):
    res = ad.minimize(hs071_f, HS071_X0, method=method, bounds=[(1, 5)] * 4,
                      constraints=HS071_CONSTRAINTS)
    assert res.success, res.message
    tol = xtol(method)
    np.testing.assert_allclose(res.x, HS071_X, atol=10 * tol)
    assert abs(res.fun - HS071_F) < max(1e-7, 10 * tol)
    # IPOPT's published multipliers, in its convention (f + lam . g), are
    # (-0.55229366, 0.16146857): ours are their negatives
    lam = np.concatenate(res.multipliers)
    np.testing.assert_allclose(lam, [0.55229366, -0.16146857], atol=100 * tol)
    if "bound_multipliers" in res:
        np.testing.assert_allclose(kkt_residual(
            hs071_f, [hs071_product, hs071_squares], res), 0, atol=1e-3)


@needs_ipopt
def test_hs071_with_ipopt_in_detail():
    res = ad.minimize(hs071_f, HS071_X0, method="ipopt",
                      bounds=so.Bounds(np.ones(4), 5 * np.ones(4)),
                      constraints=HS071_CONSTRAINTS, tol=1e-10)
    np.testing.assert_allclose(res.x, HS071_X, atol=1e-8)
    assert abs(res.fun - HS071_F) < 1e-7
    assert res.status == 0 and 5 <= res.nit <= 12
    # z: x1 sits on its lower bound 1, with IPOPT's published z_L 1.08787121
    np.testing.assert_allclose(res.bound_multipliers,
                               [1.08787121, 0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(kkt_residual(
        hs071_f, [hs071_product, hs071_squares], res), 0, atol=1e-6)
    # the constraints' values at x: the product active (25), the sum of
    # squares 40
    np.testing.assert_allclose(np.concatenate(res.constr), [0, 0], atol=1e-8)


# --- small problems with optima derived by hand --------------------------------

def circle_problem():
    # min x0 + x1 on x0^2 + x1^2 = 2: x = (-1, -1); grad f = (1, 1) =
    # lambda (2 x0, 2 x1) = lambda (-2, -2), lambda = -1/2
    return (lambda x: x[0] + x[1], [{"type": "eq", "fun": lambda x: x[0] ** 2 + x[1] ** 2 - 2}],
            np.array([-0.5, -1.5]), np.array([-1.0, -1.0]), [-0.5])


def scipy_tutorial_problem():
    # scipy's SLSQP tutorial: min (x0 - 1)^2 + (x1 - 2.5)^2 over three
    # half-planes, x >= 0: x = (1.4, 1.7), where only the first is active;
    # grad f = (0.8, -1.6) = lambda (1, -2), lambda = 0.8
    cons = [{"type": "ineq", "fun": lambda x: x[0] - 2 * x[1] + 2},
            {"type": "ineq", "fun": lambda x: -x[0] - 2 * x[1] + 6},
            {"type": "ineq", "fun": lambda x: -x[0] + 2 * x[1] + 2}]
    return (lambda x: (x[0] - 1) ** 2 + (x[1] - 2.5) ** 2, cons,
            np.array([2.0, 0.0]), np.array([1.4, 1.7]), [0.8, 0.0, 0.0])


def upper_side_problem():
    # max x0 + x1 on the ring 1 <= |x|^2 <= 4 (NonlinearConstraint with two
    # sides): x = (sqrt 2, sqrt 2) on the outer circle; grad f = (-1, -1) =
    # lambda (2 sqrt 2, 2 sqrt 2), lambda = -1/(2 sqrt 2), negative: the
    # upper side is active
    r = np.sqrt(2.0)
    return (lambda x: -(x[0] + x[1]),
            [so.NonlinearConstraint(lambda x: x[0] ** 2 + x[1] ** 2, 1.0, 4.0)],
            np.array([1.0, 0.5]), np.array([r, r]), [-1 / (2 * r)])


def lower_side_problem():
    # min |x|^2 with 1 <= x0 + x1 <= 4: x = (1/2, 1/2), the lower side
    # active; grad f = (1, 1) = lambda (1, 1), lambda = 1
    return (lambda x: np.sum(x ** 2),
            [so.NonlinearConstraint(lambda x: x[0] + x[1], 1.0, 4.0)],
            np.array([2.0, 1.0]), np.array([0.5, 0.5]), [1.0])


PROBLEMS = [circle_problem, scipy_tutorial_problem, upper_side_problem,
            lower_side_problem]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("make", PROBLEMS, ids=lambda p: p.__name__)
def test_small_problems_reach_their_optima_with_kkt_multipliers(make, method):
    f, cons, x0, xstar, lamstar = make()
    bounds = [(0, None)] * 2 if make is scipy_tutorial_problem else None
    res = ad.minimize(f, x0, method=method, constraints=cons, bounds=bounds)
    assert res.success, res.message
    tol = xtol(method)
    np.testing.assert_allclose(res.x, xstar, atol=10 * tol)
    np.testing.assert_allclose(np.concatenate(res.multipliers), lamstar,
                               atol=100 * tol)
    funs = [c["fun"] if isinstance(c, dict) else c.fun for c in cons]
    if "bound_multipliers" in res or bounds is None:
        np.testing.assert_allclose(kkt_residual(f, funs, res), 0,
                                   atol=1e3 * tol)


@pytest.mark.parametrize("method", METHODS)
def test_a_vector_constraint_on_a_matrix_x(method):
    # min |x|^2 subject to A vec(x) = b: x = A^T (A A^T)^-1 b, and from
    # 2 x = A^T lambda, lambda = 2 (A A^T)^-1 b
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 6))
    b = rng.normal(size=3)
    AAt = A @ A.T
    xstar = A.T @ np.linalg.solve(AAt, b)
    lamstar = 2 * np.linalg.solve(AAt, b)
    cons = {"type": "eq", "fun": lambda x, A, b: A @ np.reshape(x, -1) - b,
            "args": (A, b)}
    res = ad.minimize(lambda x: np.sum(x ** 2), np.ones((2, 3)), method=method,
                      constraints=cons)
    assert res.success, res.message
    assert res.x.shape == (2, 3)
    np.testing.assert_allclose(res.x.reshape(-1), xstar, atol=10 * xtol(method))
    np.testing.assert_allclose(res.multipliers[0], lamstar,
                               atol=100 * xtol(method))
    # f's gradient comes back in x0's shape too (trust-constr names it
    # grad; its jac is scipy's list of the constraints' Jacobians)
    g = res.grad if method == "trust-constr" else res.jac
    assert g.shape == (2, 3)
    np.testing.assert_allclose(g, 2 * res.x, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_bounds_and_sides_broadcast_as_scipy_broadcasts_them(method):
    import scipy.optimize as so
    # Bounds(0, 0.5) holds one number a side, for every element; a vector
    # constraint's single lb for each of its outputs
    res = ad.minimize(lambda x: np.sum((x - 1) ** 2), np.zeros(4), method=method,
                      bounds=so.Bounds(0, 0.5),
                      constraints=so.NonlinearConstraint(lambda x: x[:2] - x[2:], [0.1], np.inf))
    assert res.success, res.message
    # x0 - x2 >= 0.1 and x1 - x3 >= 0.1 under x <= 0.5: (0.5, 0.5, 0.4, 0.4)
    # (trust-constr's interior point ends about 1e-3 inside its bounds)
    np.testing.assert_allclose(res.x, [0.5, 0.5, 0.4, 0.4], atol=20 * xtol(method))
    with pytest.raises(ValueError, match="lower bounds have 3 elements where 4"):
        ad.minimize(lambda x: np.sum(x ** 2), np.zeros(4), method=method,
                    bounds=so.Bounds([0, 0, 0], 1),
                    constraints={"type": "ineq", "fun": lambda x: x[0]})


@pytest.mark.parametrize("method", METHODS)
def test_a_constraint_with_no_outputs_constrains_nothing(method):
    res = ad.minimize(lambda x: np.sum((x - 1) ** 2), np.zeros(2), method=method,
                      constraints=[{"type": "ineq", "fun": lambda x: x[:0]}])
    assert res.success, res.message
    np.testing.assert_allclose(res.x, [1, 1], atol=10 * xtol(method))
    assert res.multipliers[0].shape == (0,)


@needs_ipopt
def test_ipopt_bounds_only_and_a_scalar_x():
    # (x - 3)^2 per element with x0 <= 1, x1 >= 0, -5 <= x2 <= 5: x = (1, 3, 3)
    # and z0 = grad f = 2 (1 - 3) = -4 (an active upper bound: z <= 0)
    res = ad.minimize(lambda x: np.sum((x - 3) ** 2), np.zeros(3),
                      method="ipopt", bounds=[(None, 1), (0, None), (-5, 5)])
    np.testing.assert_allclose(res.x, [1, 3, 3], atol=1e-7)
    np.testing.assert_allclose(res.bound_multipliers, [-4, 0, 0], atol=1e-6)
    assert res.multipliers == []
    # a float x, a float constraint: 1 - x >= 0, x = 1, lambda = 4
    res = ad.minimize(lambda x: (x - 3) ** 2, 0.0, method="ipopt",
                      constraints={"type": "ineq", "fun": lambda x: 1 - x})
    assert isinstance(res.x, float) and abs(res.x - 1) < 1e-7
    np.testing.assert_allclose(res.multipliers[0], [4.0], atol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_a_linear_constraint_and_a_list_valued_constraint(method):
    # min |x - (1, 2, 3)|^2 with x0 + x1 + x2 = 3 (LinearConstraint) and
    # [x0 - x1, x2] >= 0 from a list: x = (0, 1, 2), the projection
    # onto the plane, where neither listed constraint is active
    cons = [so.LinearConstraint(np.ones((1, 3)), 3.0, 3.0),
            {"type": "ineq", "fun": lambda x: [x[1] - x[0], x[2]]}]
    res = ad.minimize(lambda x: np.sum((x - np.array([1.0, 2.0, 3.0])) ** 2),
                      np.array([1.0, 1.0, 1.0]), method=method, constraints=cons)
    assert res.success, res.message
    np.testing.assert_allclose(res.x, [0, 1, 2], atol=10 * xtol(method))
    np.testing.assert_allclose(res.multipliers[0], [-2.0], atol=100 * xtol(method))


@needs_ipopt
def test_ipopt_options_tol_and_callback():
    seen = []
    res = ad.minimize(hs071_f, HS071_X0, method="ipopt", bounds=[(1, 5)] * 4,
                      constraints=HS071_CONSTRAINTS, callback=seen.append,
                      options={"max_iter": 3})
    assert res.status == -1 and not res.success      # Maximum_Iterations_Exceeded
    assert res.nit == 3 and len(seen) == 4           # iterations 0 to 3
    assert all(x.shape == (4,) for x in seen)

    def stop(xk):
        raise StopIteration
    res = ad.minimize(hs071_f, HS071_X0, method="ipopt", bounds=[(1, 5)] * 4,
                      constraints=HS071_CONSTRAINTS, callback=stop)
    assert res.status == 5 and not res.success and "callback" in res.message
    # a looser tol stops earlier; scipy's maxiter is IPOPT's max_iter
    loose = ad.minimize(hs071_f, HS071_X0, method="ipopt", bounds=[(1, 5)] * 4,
                        constraints=HS071_CONSTRAINTS, tol=1e-2)
    assert loose.success and loose.nit <= 8
    res = ad.minimize(hs071_f, HS071_X0, method="ipopt", bounds=[(1, 5)] * 4,
                      constraints=HS071_CONSTRAINTS, options={"maxiter": 2})
    assert res.nit == 2 and res.status == -1
    # scipy's other callback form, and IPOPT's quasi-Newton Hessian (no
    # Lagrangian recorded): the same optimum
    results = []

    def collect(intermediate_result):
        results.append(intermediate_result)
    res = ad.minimize(hs071_f, HS071_X0, method="ipopt", bounds=[(1, 5)] * 4,
                      constraints=HS071_CONSTRAINTS, callback=collect,
                      options={"hessian_approximation": "limited-memory"})
    assert res.success and abs(res.fun - HS071_F) < 1e-6
    assert len(results) == res.nit + 1 and results[-1].nit == res.nit
    assert abs(results[-1].fun - res.fun) < 1e-9


@pytest.mark.parametrize("method", METHODS)
def test_a_constraint_that_depends_on_no_x(method):
    # 1 >= 0 always holds: the minimum of |x|^2 is at 0 (its multiplier
    # multiplies a zero Jacobian: any value satisfies the KKT conditions)
    res = ad.minimize(lambda x: np.sum(x ** 2), np.ones(2), method=method,
                      constraints={"type": "ineq", "fun": lambda x: 1.0})
    assert res.success, res.message
    np.testing.assert_allclose(res.x, 0, atol=10 * xtol(method))
    assert res.multipliers[0].shape == (1,)


@pytest.mark.parametrize("method", METHODS)
def test_a_constraint_whose_guard_flips_is_recorded_again(method):
    # a branch: at x0 = -0.5 the recording takes the else side; the
    # optimum (1, 1) of (x0 - 2)^2 + (x1 - 1)^2 with x0^2 <= 1 is on the
    # other, where the constraint is recorded again
    def c(x):
        return 1 - (x[0] ** 2 if x[0] > 0 else -x[0])
    res = ad.minimize(lambda x: (x[0] - 2) ** 2 + (x[1] - 1) ** 2,
                      np.array([-0.5, 0.0]), method=method,
                      constraints={"type": "ineq", "fun": c})
    assert res.success, res.message
    np.testing.assert_allclose(res.x, [1, 1], atol=1e-3)


@needs_ipopt
def test_every_derivative_ipopt_gets_is_the_one_at_its_x(monkeypatch):
    # the constraints' Jacobian reuses their replay at the same x (IPOPT's
    # new_x), the values come as the plans computed them: each one handed
    # over equals the dense derivative at the x it was asked at
    from pyautodiff import constrained
    seen = {"jac": 0, "hess": 0, "shared": 0}
    jac, hess = constrained.Problem.jacobian_values, constrained.Problem.hessian_values

    def checked_jac(self, flat, replay=True):
        out = jac(self, flat, replay)
        J = ad.jacobian(self._g)(flat)
        np.testing.assert_allclose(out, J[self.jac_pattern.rows, self.jac_pattern.cols],
                                   rtol=1e-13, atol=1e-13)
        seen["jac"] += 1
        seen["shared"] += not replay
        return out

    def checked_hess(self, flat, sigma, lam):
        out = hess(self, flat, sigma, lam)
        H = ad.hessian(lambda x: self._lagrangian(x, sigma, lam))(flat)
        np.testing.assert_allclose(out, H[self.hess_pattern.rows, self.hess_pattern.cols],
                                   rtol=1e-13, atol=1e-13)
        seen["hess"] += 1
        return out
    monkeypatch.setattr(constrained.Problem, "jacobian_values", checked_jac)
    monkeypatch.setattr(constrained.Problem, "hessian_values", checked_hess)
    n = 12
    x0 = np.where(np.arange(n) % 2 == 0, -1.2, 1.0)
    res = ad.minimize(
        lambda x: np.sum(100 * (x[:-1] ** 2 - x[1:]) ** 2 + (x[:-1] - 1) ** 2), x0,
        method="ipopt", constraints={"type": "eq", "fun": lambda x: (
            3 * x[1:-1] ** 3 + 2 * x[2:] - 5 + np.sin(x[1:-1] - x[2:]) * np.sin(x[1:-1] + x[2:])
            + 4 * x[1:-1] - x[:-2] * np.exp(x[:-2] - x[1:-1]) - 3)})
    assert res.success, res.message
    assert seen["jac"] > 3 and seen["hess"] > 3 and seen["shared"] > 0


@needs_ipopt
def test_a_flip_that_leaves_the_sparsity_structure_is_an_error():
    # at x0 the constraint depends on x0 alone; past x2 = 0 on x1 alone,
    # outside the structure IPOPT was given
    def c(x):
        return x[0] - 1 if x[2] > 0 else x[1] - 1

    with pytest.raises(RuntimeError, match="outside the sparsity structure"):
        ad.minimize(lambda x: x[0] ** 2 + (x[1] - 3) ** 2 + (x[2] + 1) ** 2,
                    np.array([0.0, 0.0, 1.0]), method="ipopt",
                    constraints={"type": "eq", "fun": c})


# --- errors ---------------------------------------------------------------------

ERROR_METHODS = [pytest.param("ipopt", marks=needs_ipopt), "SLSQP", "trust-constr"]


@pytest.mark.parametrize("method", ERROR_METHODS)
def test_bad_constraints_are_clear_errors(method):
    def f(x):
        return np.sum(x ** 2)

    def shrinking(x):
        # two values at x0, one past x0 = 0.5, where the optimum pulls x:
        # the recording made there returns another shape
        return x[:2] - 0.1 if x[0] > 0.5 else x[:1] - 0.1
    x0 = np.ones(3)
    with pytest.raises(ValueError, match="keep its shape"):
        ad.minimize(f, x0, method=method,
                    constraints={"type": "ineq", "fun": shrinking})
    with pytest.raises(ValueError, match="type 'equal'"):
        ad.minimize(f, x0, method=method, constraints={"type": "equal", "fun": f})
    with pytest.raises(ValueError, match="constraint 1 .* not finite at x0"):
        ad.minimize(f, x0, method=method, constraints=[
            {"type": "eq", "fun": f}, {"type": "ineq", "fun": lambda x: x[0] + np.nan}])
    with pytest.raises(ValueError, match="f is nan at x0"):
        ad.minimize(lambda x: np.sum(x) + np.nan, x0, method=method,
                    constraints={"type": "eq", "fun": f})
    with pytest.raises(ValueError, match="3 elements"):
        ad.minimize(f, x0, method=method, bounds=[(0, 1)] * 2,
                    constraints={"type": "eq", "fun": f})
    with pytest.raises(ValueError, match="lower 2.0 > upper 1.0"):
        ad.minimize(f, x0, method=method, bounds=[(2, 1)] * 3,
                    constraints={"type": "eq", "fun": f})
    with pytest.raises(TypeError, match="callable 'fun'"):
        ad.minimize(f, x0, method=method, constraints={"type": "eq"})
    with pytest.raises(TypeError, match="constraint 0 is a int"):
        ad.minimize(f, x0, method=method, constraints=[3])
    with pytest.raises(ValueError, match="lb > ub"):
        ad.minimize(f, x0, method=method,
                    constraints=so.NonlinearConstraint(lambda x: x[0], 1.0, 0.0))


def test_a_method_without_constraints_refuses_them():
    for method in ("L-BFGS-B", "BFGS", "lbfgs"):
        with pytest.raises(ValueError, match="takes no constraints"):
            ad.minimize(lambda x: np.sum(x ** 2), np.ones(2), method=method,
                        constraints={"type": "eq", "fun": lambda x: x[0]})


@needs_ipopt
def test_ipopt_refuses_an_unknown_option_by_name():
    with pytest.raises(ValueError, match="option no_such_option"):
        ad.minimize(lambda x: np.sum(x ** 2), np.ones(2), method="ipopt",
                    options={"no_such_option": 1})


def test_ipopt_without_a_library_says_what_to_install(monkeypatch):
    monkeypatch.delenv(ipopt_library.ENV, raising=False)
    monkeypatch.setattr(ipopt_library, "_loaded", [])
    monkeypatch.setattr(ipopt_library, "candidates", lambda: [])
    with pytest.raises(ImportError, match=r"pip install pyautodiff\[ipopt\]"):
        ad.minimize(lambda x: np.sum(x ** 2), np.ones(2), method="ipopt")


def test_a_library_named_by_the_environment_is_the_only_one_tried(monkeypatch, tmp_path):
    monkeypatch.setattr(ipopt_library, "_loaded", [])
    monkeypatch.setenv(ipopt_library.ENV, str(tmp_path / "libipopt.so"))
    with pytest.raises(ImportError, match=ipopt_library.ENV + ".*libipopt.so"):
        ipopt_library.load()
    libm = ctypes_util.find_library("m")
    monkeypatch.setenv(ipopt_library.ENV, libm)
    with pytest.raises(ImportError, match="no IPOPT C interface"):
        ipopt_library.load()


def test_library_versions_are_read_off_their_real_names(tmp_path):
    real = tmp_path / "libipopt-1234abcd.so.3.14.19"
    real.write_bytes(b"")
    link = tmp_path / "libipopt.so.3"
    link.symlink_to(real)
    assert ipopt_library._version_of_name(str(link)) == (3, 14, 19)
    assert ipopt_library._version_of_name(str(tmp_path / "libipopt.so")) is None


@needs_ipopt
def test_the_library_in_use_is_ipopt_3_14_or_newer():
    lib = ipopt_library.load()
    assert lib.version >= (3, 14, 0)
    assert Path(lib.path).exists() or lib.source == "system"
    assert "IPOPT 3." in repr(lib)


def _installed_libraries():
    if not HAVE_IPOPT:
        return []
    return [pytest.param(path, id=source) for path, source, _ in
            ipopt_library.candidates()]


@pytest.mark.parametrize("path", _installed_libraries())
def test_every_installed_ipopt_reaches_hs071s_optimum(path):
    # each library in a process of its own (one IPOPT per process)
    code = textwrap.dedent(f"""
        import numpy as np, pyautodiff as ad
        from pyautodiff import ipopt_library
        from scipy.optimize import NonlinearConstraint
        f = lambda x: x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]
        g = NonlinearConstraint(lambda x: [x[0] * x[1] * x[2] * x[3],
                                           np.sum(x ** 2)], [25, 40], [np.inf, 40])
        res = ad.minimize(f, np.array([1.0, 5, 5, 1]), method="ipopt",
                          bounds=[(1, 5)] * 4, constraints=g)
        print(ipopt_library.load().path)
        print(repr(res.fun), res.nit, res.success)
    """)
    env = dict(os.environ, **{ipopt_library.ENV: path})
    run = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    out = run.stdout.split("\n")
    assert out[0] == path
    fun, nit, ok = out[1].split()
    assert ok == "True" and abs(float(fun) - HS071_F) < 1e-6 and int(nit) < 20


@needs_ipopt
def test_an_exception_in_a_function_ipopt_calls_is_raised_from_minimize():
    # a constraint's guard flips on the way (x[0] passes 0.45), so it is
    # recorded again inside IPOPT's callback, and raises there
    def c_flips(x):
        if x[0] < 0.4:
            raise ZeroDivisionError("from the constraint")
        return x[0] + x[1] - 1 if x[0] > 0.45 else x[0] - x[1]

    with pytest.raises(ZeroDivisionError, match="from the constraint"):
        ad.minimize(lambda x: (x[0] + 1) ** 2 + x[1] ** 2, np.array([1.0, 0.0]),
                    method="ipopt", constraints={"type": "eq", "fun": c_flips})


@pytest.mark.parametrize("method", METHODS)
def test_bound_multipliers_on_a_lower_and_an_upper_bound(method):
    # min (x0 - 2)^2 + (x1 + 1)^2 + x2^2 on x0 <= 1, x1 >= 0, with
    # x2 >= 0.5 as a constraint: x = (1, 0, 0.5); grad f = (-2, 2, 1) =
    # J^T lambda + z with lambda = 1 and z = (-2, 2, 0)
    f = lambda x: (x[0] - 2) ** 2 + (x[1] + 1) ** 2 + x[2] ** 2   # noqa: E731
    res = ad.minimize(f, np.array([0.0, 1.0, 1.0]), method=method,
                      bounds=[(None, 1), (0, None), (None, None)],
                      constraints={"type": "ineq", "fun": lambda x: x[2] - 0.5})
    assert res.success, res.message
    tol = xtol(method)
    np.testing.assert_allclose(res.x, [1, 0, 0.5], atol=10 * tol)
    np.testing.assert_allclose(np.concatenate(res.multipliers), [1], atol=100 * tol)
    np.testing.assert_allclose(res.bound_multipliers, [-2, 2, 0], atol=100 * tol)


@pytest.mark.parametrize("method", METHODS)
def test_a_constraint_returning_np_array_of_traced_numbers(method):
    # scipy's examples write np.array([...]) of expressions in x: with plain
    # NumPy that is an object array, whose derivatives must not be lost
    res = ad.minimize(lambda x: np.sum(x ** 2), np.ones(2), method=method,
                      constraints={"type": "eq",
                                   "fun": lambda x: np.array([x[0] + x[1] - 1])})
    assert res.success, res.message
    np.testing.assert_allclose(res.x, [0.5, 0.5], atol=10 * xtol(method))
    np.testing.assert_allclose(np.concatenate(res.multipliers), [1], atol=100 * xtol(method))


# --- nan and inf: a clear error where the solver starts, a failed evaluation
# after; never a crash (each run in a process of its own) ---------------------

NONFINITE_SCRIPT = r'''
import json, sys, warnings
import numpy as np
import pyautodiff as ad

warnings.simplefilter("ignore", RuntimeWarning)     # numpy's, at the nans


def zero(u):
    return np.zeros_like(u)


# 0, with a slope that is nan where u < 0 (as a user's op may have)
nan_slope = ad.custom_op(
    zero, lambda g, out, u: (g * np.where(u < 0, np.nan, 0.0),),
    lambda t, out, u: t[0] * np.where(u < 0, np.nan, 0.0))
# 0, with a zero slope whose own slope (the curvature) is nan where u < 0
nan_curvature = ad.custom_op(zero, lambda g, out, u: (g * nan_slope(u),),
                             lambda t, out, u: t[0] * nan_slope(u))
norm_ball = {"type": "ineq", "fun": lambda x: 1.0 - np.sqrt(np.sum(x ** 2))}
matrix_constraints = [
    {"type": "eq", "fun": lambda x: x[0, 0] + x[1, 1]},
    {"type": "ineq", "fun": lambda x: 5.0 - np.sum(x[1] ** 1.5)}]
pseudo_huber = lambda x: np.sum(np.sqrt(1.0 + x ** 2))   # Newton overshoots 0

CASES = {
    # the norm's Jacobian at 0 is 0/0
    "norm at 0": (lambda x: np.sum((x - 3.0) ** 2), np.zeros(3), norm_ball, None),
    "gradient of f": (lambda x: np.sum(np.sqrt(x)) + np.sum((x - 2.0) ** 2),
                      np.array([1.0, 0.0]), norm_ball, None),
    "f": (lambda x: np.sum(x) / 0.0, np.zeros(2), norm_ball, None),
    "a constraint": (lambda x: np.sum((x - 2.0) ** 2), np.zeros(2),
                     {"type": "ineq", "fun": lambda x: np.log(x)}, None),
    "Hessian of f": (lambda x: np.sum(x ** 1.5) + np.sum((x - 1.0) ** 2),
                     np.zeros(3), {"type": "ineq", "fun": lambda x: 5.0 - x[0]}, None),
    "Hessian of a constraint": (lambda x: np.sum((x - 1.0) ** 2), np.zeros((2, 2)),
                                matrix_constraints, None),
    # x0 on the bound x >= 0: IPOPT starts inside, at 0.00999999, where
    # the slope of nan_slope(0.005 - x) is nan (at x0 it is 0)
    "starting point": (lambda x: np.sum((x - 1.0) ** 2) + np.sum(nan_slope(0.005 - x)),
                       np.zeros(2), [], [(0.0, None)] * 2),
    # x**1.5's curvature is inf at x0 = 0, on the bound: IPOPT starts
    # inside, and min x**1.5 + (x - 1)**2 is at sqrt(x) = (sqrt(18.25) - 1.5) / 4
    "curvature on a bound": (lambda x: np.sum(x ** 1.5) + np.sum((x - 1.0) ** 2),
                             np.zeros(3), [], [(0.0, None)] * 3),
    # from 0.9 Newton's step reaches -0.729, where f is lower but the
    # derivatives named are nan: the step is refused and IPOPT steps back
    "slope of f on the way": (lambda x: pseudo_huber(x) + np.sum(nan_slope(x + 0.5)),
                              np.array([0.9]), [], None),
    "slope of a constraint on the way": (
        lambda x: pseudo_huber(x[:1]) + x[1] ** 2, np.array([0.9, 0.0]),
        {"type": "eq", "fun": lambda x: x[1] - nan_slope(x[0] + 0.5)}, None),
    # the Hessian is only asked at points IPOPT accepted: it stops there
    "curvature of f on the way": (lambda x: pseudo_huber(x) + np.sum(nan_curvature(x + 0.5)),
                                  np.array([0.9]), [], None),
}

for name in sys.argv[1:]:
    case, method, repeat = name.split("|")
    f, x0, constraints, bounds = CASES[case]
    for _ in range(int(repeat)):
        try:
            res = ad.minimize(f, x0, method=method, constraints=constraints,
                              bounds=bounds)
            out = {"x": np.ravel(res.x).tolist(), "status": int(res.status),
                   "success": bool(res.success), "message": res.message}
        except Exception as exc:
            out = {"error": type(exc).__name__, "message": str(exc)}
    print(json.dumps({"case": name, **out}), flush=True)
'''

NONFINITE_RUNS = [
    ("norm at 0", "ipopt", 3), ("norm at 0", "trust-constr", 1), ("norm at 0", "SLSQP", 1),
    ("gradient of f", "ipopt", 1), ("gradient of f", "SLSQP", 1),
    ("f", "ipopt", 1), ("f", "trust-constr", 1),
    ("a constraint", "ipopt", 1), ("a constraint", "SLSQP", 1),
    ("Hessian of f", "ipopt", 1), ("Hessian of f", "trust-constr", 1),
    ("Hessian of a constraint", "ipopt", 1), ("Hessian of a constraint", "trust-constr", 1),
    ("Hessian of a constraint", "SLSQP", 1),
    ("starting point", "ipopt", 1), ("curvature on a bound", "ipopt", 1),
    ("slope of f on the way", "ipopt", 1), ("slope of a constraint on the way", "ipopt", 1),
    ("curvature of f on the way", "ipopt", 1),
]


@pytest.fixture(scope="module")
def nonfinite_outcomes():
    """Each run of NONFINITE_RUNS in one child process: case -> what
    minimize returned or raised there.  A crash leaves the runs after it
    without an outcome, and says how the process ended."""
    runs = [f"{case}|{method}|{repeat}" for case, method, repeat in NONFINITE_RUNS
            if HAVE_IPOPT or method != "ipopt"]
    out = subprocess.run([sys.executable, "-c", NONFINITE_SCRIPT, *runs],
                         capture_output=True, text=True, timeout=600,
                         cwd=Path(ad.__file__).parent.parent)
    outcomes = {}
    for line in out.stdout.splitlines():
        record = json.loads(line)
        outcomes[record.pop("case")] = record
    return outcomes, f"exit status {out.returncode}: {out.stderr[-2000:]}"


def _outcome(outcomes, case, method, repeat=1):
    found, ended = outcomes
    key = f"{case}|{method}|{repeat}"
    assert key in found, f"the child process ended before {key}: {ended}"
    return found[key]


def _error(outcomes, case, method, repeat=1):
    got = _outcome(outcomes, case, method, repeat)
    assert got.get("error") == "ValueError", got
    return got["message"]


@pytest.mark.parametrize("method", ERROR_METHODS)
def test_a_nan_jacobian_at_x0_is_a_value_error_not_a_crash(nonfinite_outcomes, method):
    # norm(x) at x = 0 crashed IPOPT's linear solver (on the first solve
    # or a later one: three here); trust-constr failed inside scipy, SLSQP
    # returned x0 as 'Inequality constraints incompatible'
    repeat = 3 if method == "ipopt" else 1
    message = _error(nonfinite_outcomes, "norm at 0", method, repeat)
    assert message.startswith(
        "minimize: the Jacobian of constraint 0 (ineq) is not finite at x0: "
        "the derivative of its element 0 in x[0] is nan"), message


@pytest.mark.parametrize("case, method, says", [
    ("gradient of f", "ipopt", "the gradient of f is not finite at x0: its component in x[1] is inf"),
    ("gradient of f", "SLSQP", "the gradient of f is not finite at x0: its component in x[1] is inf"),
    ("f", "ipopt", "f is nan at x0, not a finite number"),
    ("f", "trust-constr", "f is nan at x0, not a finite number"),
    ("a constraint", "ipopt", "constraint 0 (ineq) is not finite at x0: its element 0 is -inf"),
    ("a constraint", "SLSQP", "constraint 0 (ineq) is not finite at x0: its element 0 is -inf"),
    ("Hessian of f", "ipopt", "the Hessian of f is not finite at x0: its entry (x[0], x[0]) is inf"),
    ("Hessian of f", "trust-constr", "the Hessian of f is not finite at x0: its entry (x[0], x[0]) is inf"),
    ("Hessian of a constraint", "ipopt", "the Hessian of constraint 1 (ineq) is not finite at "
     "x0: its entry (x[1, 0], x[1, 0]) is -inf"),
    ("Hessian of a constraint", "trust-constr", "the Hessian of constraint 1 (ineq) is not "
     "finite at x0: its entry (x[1, 0], x[1, 0]) is -inf"),
    ("starting point", "ipopt", "the gradient of f is not finite at IPOPT's starting point "
     "(x0 moved inside the bounds): its component in x[0] is nan"),
])
def test_a_nan_or_inf_where_the_solver_starts_is_a_value_error_naming_it(
        nonfinite_outcomes, case, method, says):
    if method == "ipopt" and not HAVE_IPOPT:
        pytest.skip("no IPOPT library is installed")
    message = _error(nonfinite_outcomes, case, method)
    assert message.startswith("minimize: " + says), message


def test_slsqp_takes_no_hessian_so_a_nan_one_is_no_error(nonfinite_outcomes):
    got = _outcome(nonfinite_outcomes, "Hessian of a constraint", "SLSQP")
    assert got["success"], got
    np.testing.assert_allclose(got["x"], [0, 1, 1, 0], atol=1e-5)


@needs_ipopt
def test_ipopt_is_checked_where_it_starts_not_at_x0_on_a_bound(nonfinite_outcomes):
    got = _outcome(nonfinite_outcomes, "curvature on a bound", "ipopt")
    assert got["success"], got
    root = ((np.sqrt(18.25) - 1.5) / 4) ** 2
    np.testing.assert_allclose(got["x"], [root] * 3, atol=1e-7)


@needs_ipopt
@pytest.mark.parametrize("case, x", [("slope of f on the way", [0.0]),
                                     ("slope of a constraint on the way", [0.0, 0.0])])
def test_ipopt_steps_back_from_a_nan_derivative_on_the_way(nonfinite_outcomes, case, x):
    # before: IPOPT took the nans at -0.729 into its factorization and
    # ended there (status -13 or -3)
    got = _outcome(nonfinite_outcomes, case, "ipopt")
    assert got["success"], got
    np.testing.assert_allclose(got["x"], x, atol=1e-6)


@needs_ipopt
def test_ipopt_stops_cleanly_on_a_nan_hessian_on_the_way(nonfinite_outcomes):
    got = _outcome(nonfinite_outcomes, "curvature of f on the way", "ipopt")
    assert (got["status"], got["success"]) == (-13, False), got
    assert "the Hessian of the Lagrangian had a nan or inf" in got["message"]
    assert got["x"] == pytest.approx([-0.729])     # where Newton's first step went


# --- Ctrl-C ---------------------------------------------------------------------

IPOPT_CTRL_C_SCRIPT = r'''
import os, signal, sys, threading, time, traceback
import numpy as np
import pyautodiff as ad
from pyautodiff import ipopt_library

library = ipopt_library.load()
solving = threading.Event()


class Watched:
    """IPOPT's C functions; IpoptSolve says when it starts."""
    def __getattr__(self, name):
        return getattr(real, name)

    def IpoptSolve(self, *args):
        solving.set()
        return real.IpoptSolve(*args)


real, library.lib = library.lib, Watched()
sent = []


def ctrl_c():
    solving.wait()
    time.sleep(0.5)
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)


threading.Thread(target=ctrl_c, daemon=True).start()
n = 20_000
# mu brought down by 1% an iteration, never superlinearly: thousands of
# iterations of IPOPT (without the power, 15 iterations end the solve
# before the interrupt comes)
options = {"mu_strategy": "monotone", "mu_init": 1e3, "mu_linear_decrease_factor": 0.99,
           "mu_superlinear_decrease_power": 1.0001,
           "mu_allow_fast_monotone_decrease": "no", "tol": 1e-12, "max_iter": 10 ** 6}
try:
    ad.minimize(lambda x: np.sum((x - 1.0) ** 2) + 0.1 * np.sum(x[1:] * x[:-1]),
                np.zeros(n), method="ipopt", bounds=[(-10, 10)] * n, options=options)
except KeyboardInterrupt as exc:
    where = "/".join(frame.name for frame in traceback.extract_tb(exc.__traceback__))
    print("interrupted", where, time.perf_counter() - sent[0])
else:
    print("finished")
'''


@needs_ipopt
def test_ctrl_c_stops_an_ipopt_solve_with_keyboard_interrupt():
    # before: 'Exception ignored from cffi callback ... KeyboardInterrupt'
    # and the solve went on.  A Ctrl-C lands at IPOPT's next callback
    # (within one of its iterations, a fraction of a second here)
    try:
        out = subprocess.run([sys.executable, "-c", IPOPT_CTRL_C_SCRIPT],
                             capture_output=True, text=True, timeout=120,
                             cwd=Path(ad.__file__).parent.parent)
    except subprocess.TimeoutExpired:
        pytest.fail("Ctrl-C did not stop minimize(method='ipopt') in 120 s")
    assert out.returncode == 0, out.stderr
    assert "Exception ignored" not in out.stderr, out.stderr
    word, where, delay = out.stdout.split()
    # raised out of minimize once IPOPT stopped, as itself
    assert word == "interrupted"
    assert where.startswith("<module>/minimize/minimize_recorded/minimize_ipopt"), where
    assert float(delay) < 10.0          # generous: the machine may be busy


class _CountedProblems:
    """IPOPT's C functions, counting the problems made and freed."""

    def __init__(self, lib):
        self._lib, self.made, self.freed = lib, 0, 0

    def __getattr__(self, name):
        return getattr(self._lib, name)

    def CreateIpoptProblem(self, *args):
        self.made += 1
        return self._lib.CreateIpoptProblem(*args)

    def FreeIpoptProblem(self, handle):
        self.freed += 1
        self._lib.FreeIpoptProblem(handle)


@needs_ipopt
@pytest.mark.parametrize("raised", [KeyboardInterrupt, ZeroDivisionError])
def test_an_exception_from_the_callback_frees_ipopts_problem(monkeypatch, raised):
    library = ipopt_library.load()
    counted = _CountedProblems(library.lib)
    monkeypatch.setattr(library, "lib", counted)

    def callback(x):
        if len(seen) == 3:
            raise raised
        seen.append(x)
    seen = []
    with pytest.raises(raised):
        ad.minimize(hs071_f, HS071_X0, method="ipopt", bounds=[(1, 5)] * 4,
                    constraints=HS071_CONSTRAINTS, callback=callback)
    assert (counted.made, counted.freed) == (1, 1)
    # and the next solve in this process runs as ever
    res = ad.minimize(hs071_f, HS071_X0, method="ipopt", bounds=[(1, 5)] * 4,
                      constraints=HS071_CONSTRAINTS)
    assert res.success and abs(res.fun - HS071_F) < 1e-6
    assert (counted.made, counted.freed) == (2, 2)
