"""``ad.minimize(method='ipopt')``: IPOPT (through cyipopt) with exact sparse
derivatives.

IPOPT solves  min f(x)  s.t.  g_L <= g(x) <= g_U,  x_L <= x <= x_U.  It
gets f and its gradient from f's recording (one C replay for both), g and
its sparse Jacobian from the constraints' recording, and the sparse
Hessian of its Lagrangian sigma f + lam . g from one recording of that
Lagrangian (constrained.py), the structures once, at the start.
cyipopt's ``Problem`` class is used directly: it needs no scipy.
"""
import numpy as np

from .constrained import (Problem, check_objective, parse_bounds,
                          parse_constraints)
from .result import OptimizeResult, takes_intermediate_result

# IPOPT's own options that this method sets unless options= says otherwise:
# quiet (no banner, no iteration log) as scipy's methods are by default
DEFAULT_OPTIONS = {"print_level": 0, "sb": "yes"}
# scipy's option names, spelled as IPOPT spells them
ALIASES = {"maxiter": "max_iter", "disp": "print_level"}
SUCCESS = (0, 1)   # Solve_Succeeded, Solved_To_Acceptable_Level
USER_STOP = 5      # User_Requested_Stop: the callback raised StopIteration


def _cyipopt():
    try:
        import cyipopt
    except ImportError as exc:
        raise ImportError(
            "minimize(method='ipopt') runs IPOPT through cyipopt, which is not "
            "installed: pip install pyautodiff[ipopt] (or pip install "
            "cyipopt-wheels)") from exc
    return cyipopt


class _Callbacks:
    """What cyipopt.Problem calls: the recordings' values and derivatives.
    IPOPT asks for f and its gradient (and g and its Jacobian) at the same x
    one after the other: one replay answers both."""

    def __init__(self, objective, problem, callback, space):
        self.f_rec, self.problem = objective, problem
        self.callback, self.space = callback, space
        self._at = None
        self.nit = 0
        self.stopped = False
        self.nlp = None
        self.error = None

    def _value_and_grad(self, x):
        if self._at is None or not np.array_equal(self._at[0], x):
            f, g = self.f_rec.value_and_grad(x)
            self._at = (np.array(x), f, g)
        return self._at[1], self._at[2]

    def objective(self, x):
        return self._value_and_grad(x)[0]

    def gradient(self, x):
        return self._value_and_grad(x)[1]

    def constraints(self, x):
        if self.problem.m == 0:
            return np.zeros(0)
        return self.problem.constraint_values(x)

    def jacobianstructure(self):
        p = self.problem.jac_pattern
        if p is None:                   # no constraints
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if p.nnz == 0:
            # constraints that depend on no x: IPOPT takes no Jacobian
            # without an entry, so it gets one that stays 0
            return np.zeros(1, np.int64), np.zeros(1, np.int64)
        return p.rows, p.cols

    def jacobian(self, x):
        if self.problem.m == 0:
            return np.zeros(0)
        if self.problem.jac_pattern.nnz == 0:
            return np.zeros(1)
        return self.problem.jacobian_values(x)

    def hessianstructure(self):
        p = self.problem.hess_pattern
        if p is None:                   # hessian_approximation='limited-memory'
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return p.rows, p.cols

    def hessian(self, x, lagrange, obj_factor):
        return self.problem.hessian_values(x, obj_factor, lagrange)

    def intermediate(self, alg_mod, iter_count, obj_value, inf_pr, inf_du, mu,
                     d_norm, regularization_size, alpha_du, alpha_pr,
                     ls_trials):
        self.nit = int(iter_count)
        if self.callback is None:
            return True
        x = self.space.arg(self.nlp.get_current_iterate(scaled=False)["x"])
        try:
            if takes_intermediate_result(self.callback):
                self.callback(intermediate_result=OptimizeResult(
                    x=x, fun=float(obj_value), nit=self.nit))
            else:
                self.callback(x)
        except StopIteration:
            self.stopped = True
            return False
        return True


def _kept(method):
    """The callback with its exception kept, to be raised from minimize
    after IPOPT returns: cyipopt does not pass every one on (an error in a
    structure callback ends up as IPOPT's 'Invalid option encountered')."""
    def kept(self, *args):
        try:
            return method(self, *args)
        except Exception as exc:
            if self.error is None:
                self.error = exc
            raise
    kept.__name__ = method.__name__
    return kept


for _name in ("objective", "gradient", "constraints", "jacobianstructure",
              "jacobian", "hessianstructure", "hessian", "intermediate"):
    setattr(_Callbacks, _name, _kept(getattr(_Callbacks, _name)))


def minimize_ipopt(f, space, objective, bounds, constraints, tol, options,
                   callback):
    """IPOPT on f (objective: its minimize._Recording) from space.x0."""
    cyipopt = _cyipopt()
    n = space.x0.size
    lb, ub = parse_bounds(bounds, n)
    if lb is None:
        lb, ub = np.full(n, -np.inf), np.full(n, np.inf)
    cons = parse_constraints(constraints)
    check_objective(objective, space)
    opts = _options(tol, options)
    exact = opts.get("hessian_approximation", "exact") != "limited-memory"
    problem = Problem(f, space, cons, hessian=exact)
    calls = _Callbacks(objective, problem, callback, space)
    nlp = cyipopt.Problem(n=n, m=problem.m, problem_obj=calls, lb=lb, ub=ub,
                          cl=problem.lb, cu=problem.ub)
    calls.nlp = nlp
    for name, value in opts.items():
        try:
            nlp.add_option(name, value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"minimize(method='ipopt'): IPOPT refuses the "
                             f"option {name}={value!r} ({exc})") from None
    x, info = nlp.solve(space.x0.copy())
    if calls.error is not None:
        raise calls.error
    status = int(info["status"])
    message = info["status_msg"]
    if isinstance(message, bytes):
        message = message.decode(errors="replace")
    if calls.stopped:
        message = "stopped: the callback raised StopIteration"
    # IPOPT's multipliers are of f + lam . g - zL (x - xL) + zU (x - xU):
    # the user's convention (constrained.py) is grad f = J^T lambda + z
    lam = -np.asarray(info["mult_g"], dtype=np.float64)
    z = np.asarray(info["mult_x_L"], np.float64) - \
        np.asarray(info["mult_x_U"], np.float64)
    fun, jac = objective.value_and_grad(x)
    return OptimizeResult(
        x=space.arg(x), fun=float(fun), jac=space.arg(jac),
        status=status, success=status in SUCCESS, message=message,
        nit=calls.nit, multipliers=problem.split(lam),
        bound_multipliers=space.arg(z),
        constr=problem.split(np.asarray(info["g"], np.float64)))


def _options(tol, options):
    """IPOPT's options: the defaults, then options= (scipy's maxiter and
    disp under IPOPT's names), then tol."""
    opts = dict(DEFAULT_OPTIONS)
    for name, value in dict(options or {}).items():
        if not isinstance(name, str):
            raise TypeError(f"minimize(method='ipopt'): option names are "
                            f"strings, not {name!r}")
        name = ALIASES.get(name, name)
        if isinstance(value, bool):
            value = {"print_level": 5 if value else 0}.get(name, "yes" if value else "no")
        elif isinstance(value, np.integer):
            value = int(value)
        elif isinstance(value, np.floating):
            value = float(value)
        opts[name] = value
    if tol is not None:
        opts["tol"] = float(tol)
    return opts
