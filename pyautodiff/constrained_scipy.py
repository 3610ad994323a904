"""scipy's constrained methods under ``ad.minimize``, with exact derivatives.

The constraints become G (constrained.py), recorded once:

* 'trust-constr' gets one NonlinearConstraint lb <= G(x) <= ub with G's
  sparse Jacobian, and its Hessian hess(x, v) = Hess (v . G) from the
  Lagrangian's recording, L(x, 0, v); the objective's Hessian is L(x, 1, 0)
  from the same recording;
* 'SLSQP' gets an 'eq' dict for the rows with lb == ub and an 'ineq' dict
  for the others (G - lb >= 0 where lb is finite, ub - G >= 0 where ub is),
  each with its dense Jacobian;
* 'COBYLA' and 'COBYQA' get the same dicts without Jacobians.

The result's ``multipliers`` are split per constraint, in constrained.py's
convention (grad f = sum_k J_k^T lambda_k + z).
"""
import numpy as np

from .constrained import (Problem, check_start, parse_bounds,
                          parse_constraints)

CONSTRAINED = {"trust-constr", "slsqp", "cobyla", "cobyqa"}


def minimize_constrained(f, space, name, method, bounds, constraints, tol,
                         options, callback, objective, scipy_callback):
    """scipy.optimize.minimize with the constraints' exact derivatives
    (objective: f's minimize._Recording)."""
    import scipy.optimize as so
    if name not in CONSTRAINED:
        raise ValueError(f"minimize: method {method!r} takes no constraints; "
                         "the methods with constraints are 'ipopt', "
                         "'trust-constr', 'SLSQP', 'COBYLA' and 'COBYQA'")
    n = space.x0.size
    lb, ub = parse_bounds(bounds, n)
    problem = Problem(f, space, parse_constraints(constraints),
                      hessian=name == "trust-constr")
    check_start(objective, problem, space.x0,
                jacobian=name in ("trust-constr", "slsqp"))
    G = _Cached(problem)
    kwargs = {}
    if name == "trust-constr":
        zeros = np.zeros(problem.m)
        kwargs["hess"] = lambda x: problem.hessian_matrix(x, 1.0, zeros)
        scipy_constraints = [so.NonlinearConstraint(
            G.values, problem.lb, problem.ub, jac=G.sparse_jacobian,
            hess=lambda x, v: problem.hessian_matrix(x, 0.0, v))]
    else:
        scipy_constraints, rows = _dicts(problem, G, jacobians=name == "slsqp")
    if problem.m == 0:
        # constraints with no outputs constrain nothing (and scipy's
        # methods fail on them)
        scipy_constraints = []
    if name in ("trust-constr", "slsqp"):
        kwargs.update(fun=objective.value_and_grad, jac=True)
    else:
        kwargs["fun"] = objective.value
    res = so.minimize(x0=space.x0.copy(), method=method,
                      bounds=None if lb is None else so.Bounds(lb, ub),
                      constraints=scipy_constraints, tol=tol, options=options,
                      callback=scipy_callback, **kwargs)
    lam = None
    if name == "trust-constr":
        # scipy's Lagrangian there is f + v . G: the opposite sign; its
        # multipliers are the constraint's (none where it has no outputs),
        # then the bounds'
        v = [np.zeros(0)] * (problem.m == 0) + list(res.v)
        lam = -np.asarray(v[0], np.float64)
        if lb is not None:
            res.bound_multipliers = space.arg(-np.asarray(v[1], np.float64))
    elif name == "slsqp" and "multipliers" in res:
        lam = _slsqp_multipliers(res.multipliers, rows, problem.m)
        if lb is not None:
            res.bound_multipliers = space.arg(_bound_multipliers(
                objective, problem, res.x, lam, lb, ub))
    if lam is not None:
        res.multipliers = problem.split(lam)
    res.constr = problem.split(problem.constraint_values(res.x))
    return res      # (x and the gradient shaped by the caller)


class _Cached:
    """G and its Jacobian at the last x (scipy asks for both at each x)."""

    def __init__(self, problem):
        self.problem = problem
        self._v = self._j = None

    def values(self, x):
        if self._v is None or not np.array_equal(self._v[0], x):
            self._v = (np.array(x), self.problem.constraint_values(x))
        return self._v[1]

    def sparse_jacobian(self, x):
        if self._j is None or not np.array_equal(self._j[0], x):
            p = self.problem
            self._j = (np.array(x), p.jac_pattern.matrix(p.jacobian_values(x)))
        return self._j[1]

    def dense_jacobian(self, x):
        return self.sparse_jacobian(x).toarray()


def _dicts(problem, G, jacobians):
    """scipy's old-style dicts: 'eq' rows G - lb == 0, 'ineq' rows G - lb >= 0
    and ub - G >= 0; and which rows of G (with which sign) each entry is."""
    lb, ub = problem.lb, problem.ub
    eq = np.flatnonzero(lb == ub)
    lo = np.flatnonzero((lb != ub) & np.isfinite(lb))
    hi = np.flatnonzero((lb != ub) & np.isfinite(ub))
    out = []
    if eq.size:
        d = {"type": "eq", "fun": lambda x: G.values(x)[eq] - lb[eq]}
        if jacobians:
            d["jac"] = lambda x: G.dense_jacobian(x)[eq]
        out.append(d)
    if lo.size or hi.size:
        def ineq(x):
            g = G.values(x)
            return np.concatenate([g[lo] - lb[lo], ub[hi] - g[hi]])
        d = {"type": "ineq", "fun": ineq}
        if jacobians:
            def ineq_jac(x):
                J = G.dense_jacobian(x)
                return np.concatenate([J[lo], -J[hi]])
            d["jac"] = ineq_jac
        out.append(d)
    rows = (eq, lo, hi)
    return out, rows


def _bound_multipliers(objective, problem, x, lam, lb, ub):
    """SLSQP returns no multipliers of the bounds: z from the stationarity
    condition grad f = J^T lambda + z at x where x is on a bound, to
    within 1e-6 of its size (SLSQP leaves an active one's x about there),
    and 0 elsewhere.  A bound near x but not active costs nothing: the
    condition leaves about 0 there too."""
    _, g = objective.value_and_grad(np.array(x, dtype=np.float64))
    z = np.asarray(g, np.float64).reshape(-1).copy()
    if problem.m:
        J = problem.jac_pattern.matrix(problem.jacobian_values(x))
        z -= J.T @ lam
    near = lambda b: np.isfinite(b) & (np.abs(x - b) <= 1e-6 * (1 + np.abs(b)))  # noqa: E731
    on_bound = near(lb) | near(ub)
    return np.where(on_bound, z, 0.0)


def _slsqp_multipliers(mult, rows, m):
    """SLSQP's multipliers (eq rows, then the ineq dict's rows) per row of G:
    an upper-bound row ub - G >= 0 has G's Jacobian negated."""
    eq, lo, hi = rows
    mult = np.asarray(mult, np.float64)
    lam = np.zeros(m)
    lam[eq] = mult[:eq.size]
    rest = mult[eq.size:]
    np.add.at(lam, lo, rest[:lo.size])
    np.subtract.at(lam, hi, rest[lo.size:lo.size + hi.size])
    return lam
