"""``ad.minimize(method='ipopt')``: IPOPT with exact sparse derivatives.

IPOPT solves  min f(x)  s.t.  g_L <= g(x) <= g_U,  x_L <= x <= x_U.  It
gets f and its gradient from f's recording (one C replay for both), g and
its sparse Jacobian from the constraints' recording, and the sparse
Hessian of its Lagrangian sigma f + lam . g from one recording of that
Lagrangian (constrained.py), the structures once, at the start.  IPOPT is
called through its C interface (ipopt_library.py): its callbacks read x
from IPOPT's memory and write the values into it, with no copy between.
"""
import numpy as np

from .constrained import (Problem, check_start, parse_bounds,
                          parse_constraints)
from .ipopt_library import ffi, load as load_ipopt
from .result import optimize_result, takes_intermediate_result

# IPOPT's own options that this method sets unless options= says otherwise:
# quiet (no banner, no iteration log) as scipy's methods are by default
DEFAULT_OPTIONS = {"print_level": 0, "sb": "yes"}
# scipy's option names, spelled as IPOPT spells them
ALIASES = {"maxiter": "max_iter", "disp": "print_level"}
SUCCESS = (0, 1)   # Solve_Succeeded, Solved_To_Acceptable_Level
USER_STOP = 5      # User_Requested_Stop: a callback returned false
INVALID_NUMBER = -13
# what an evaluation IPOPT was refused (a nan or inf in it) held
REFUSED = {"f": "f or its gradient", "g": "a constraint",
           "jac_g": "the constraints' Jacobian",
           "h": "the Hessian of the Lagrangian"}
# IPOPT's ApplicationReturnStatus, in words
MESSAGES = {
    0: "Optimal Solution Found.",
    1: "Solved To Acceptable Level.",
    2: "Converged to a point of local infeasibility. Problem may be infeasible.",
    3: "Search Direction is becoming Too Small.",
    4: "Iterates diverging; problem might be unbounded.",
    5: "Stopping optimization at current point as requested by user.",
    6: "Feasible point for square problem found.",
    -1: "Maximum Number of Iterations Exceeded.",
    -2: "Restoration Failed!",
    -3: "Error in step computation!",
    -4: "Maximum CPU time exceeded.",
    -5: "Maximum wallclock time exceeded.",
    -10: "Problem has too few degrees of freedom.",
    -11: "Problem has inconsistent variable bounds or constraint sides.",
    -12: "Invalid option encountered.",
    -13: "Invalid number in NLP function or derivative detected.",
    -100: "Some uncaught Ipopt exception encountered.",
    -101: "Unknown exception caught in Ipopt.",
    -102: "Not enough memory.",
    -199: "INTERNAL ERROR: Unknown SolverReturn value - Notify IPOPT Authors.",
}
INT32_MAX = 2 ** 31 - 1


def _doubles(ptr, k):
    """IPOPT's double[k] at ptr as a NumPy array (no copy)."""
    return np.frombuffer(ffi.buffer(ptr, 8 * k), np.float64) if k else np.zeros(0)


def _ints(ptr, k):
    return np.frombuffer(ffi.buffer(ptr, 4 * k), np.int32)


class _Callbacks:
    """What IPOPT calls back: the recordings' values and derivatives.
    IPOPT asks for f and its gradient (and g and its Jacobian) at the same x
    one after the other: one replay answers both, and the constraints'
    replay (eval_g) serves their Jacobian at the same x (IPOPT's new_x
    says x has not moved since).  An exception (a KeyboardInterrupt too)
    is kept, to be raised from minimize once IPOPT has stopped: every
    later callback declines."""

    def __init__(self, objective, problem, callback, space):
        self.f_rec, self.problem = objective, problem
        self.callback, self.space = callback, space
        self._at = self._jac_at = None
        self.g_at_x = False         # G last replayed at the current x
        self.nit = 0
        self.stopped = False
        self.handle = None          # the IpoptProblem, while it solves
        self.error = None
        self.iterating = False      # IPOPT past its initialization
        self.hessian_evaluated = False
        self.refused = None         # the last evaluation refused to IPOPT

    def value_and_grad(self, x):
        """(x: a copy of IPOPT's, kept)"""
        if self._at is None or not np.array_equal(self._at[0], x):
            self._at = (x, *self.f_rec.value_and_grad(x))
        return self._at[1], self._at[2]

    def jacobian_structure(self):
        p = self.problem.jac_pattern
        if p is None or self.problem.m == 0:    # no constraints, or empty ones
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if p.nnz == 0:
            # constraints that depend on no x: IPOPT takes no Jacobian
            # without an entry, so it gets one that stays 0
            return np.zeros(1, np.int64), np.zeros(1, np.int64)
        return p.rows, p.cols

    def at(self, x, n, new_x):
        """IPOPT's x, a copy."""
        if new_x:
            self.g_at_x = False
        return _doubles(x, n).copy()

    def finite(self, kind, flat, values):
        """Whether IPOPT's evaluation `kind` at flat has finite values.
        Where IPOPT starts (x0, or x0 moved inside the bounds: every
        evaluation before its first iteration, and the first Hessian) a
        nan or inf is a ValueError naming it.  Later, false is a failed
        evaluation, which IPOPT takes instead of handing the nan to its
        linear solver (which may crash on it): from a trial point its line
        search steps back."""
        first_hessian = kind == "h" and not self.hessian_evaluated
        self.hessian_evaluated |= kind == "h"
        if np.isfinite(values).all():
            return True
        self.refused = kind
        if not self.iterating or first_hessian:
            where = "x0" if np.array_equal(flat, self.space.x0) else \
                "IPOPT's starting point (x0 moved inside the bounds)"
            check_start(self, self.problem, flat, where,
                        hessian=values if kind == "h" else None)
        return False

    def constraints(self, x):
        values = self.problem.constraint_values(x)
        self.g_at_x = True
        return values

    def jacobian(self, x):
        """(x: a copy of IPOPT's, kept)"""
        if self.problem.jac_pattern is None or self.problem.m == 0:
            return np.zeros(0)
        if self.problem.jac_pattern.nnz == 0:
            return np.zeros(1)
        if self._jac_at is None or not np.array_equal(self._jac_at[0], x):
            values = self.problem.jacobian_values(x, replay=not self.g_at_x)
            self.g_at_x = True
            self._jac_at = (x, values)
        return self._jac_at[1]

    def hessian_structure(self):
        p = self.problem.hess_pattern
        if p is None:                   # hessian_approximation='limited-memory'
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return p.rows, p.cols

    def intermediate(self, iter_count, obj_value):
        self.nit = int(iter_count)
        self.iterating = True
        if self.callback is None:
            return True
        n, m = self.problem.n, self.problem.m
        x = np.empty(n)
        if not load_ipopt().lib.GetIpoptCurrentIterate(
                self.handle, False, n, ffi.from_buffer("double[]", x),
                ffi.NULL, ffi.NULL, m, ffi.NULL, ffi.NULL):
            raise RuntimeError("minimize(method='ipopt'): IPOPT did not give "
                               "its current iterate to the callback")
        x = self.space.arg(x)
        try:
            if takes_intermediate_result(self.callback):
                self.callback(intermediate_result=optimize_result(
                    x=x, fun=float(obj_value), nit=self.nit))
            else:
                self.callback(x)
        except StopIteration:
            self.stopped = True
            return False
        return True


def _guarded(body):
    """A C callback's body, given the Python object from user_data.  After
    an exception (kept by _keep_error) every callback declines, and the
    intermediate callback's false stops IPOPT."""
    def callback(*args):
        calls = ffi.from_handle(args[-1])
        return calls.error is None and bool(body(calls, *args[:-1]))
    return callback


def _keep_error(exc_type, exc, tb):
    """cffi's onerror for every callback: an exception out of one is kept
    on its problem, to be raised from minimize, and IPOPT sees false.
    This is the one place that can take a KeyboardInterrupt: a Ctrl-C that
    lands while IPOPT computes in C is raised by Python at the next
    callback's first instruction, before any try inside it.  The problem
    is found from that callback's own arguments (its user_data)."""
    args = tb.tb_frame.f_locals.get("args") if tb is not None else None
    if not args:
        return None         # (nowhere to keep it: cffi reports it)
    calls = ffi.from_handle(args[-1])
    if calls.error is None:
        # (with where it was raised: an exception raised by a signal
        # handler comes without it)
        calls.error = exc.with_traceback(tb)
    return False


def _structure(rows_cols, nele, iRow, jCol):
    rows, cols = rows_cols
    _ints(iRow, nele)[:] = rows
    _ints(jCol, nele)[:] = cols


def _put(values, ptr, k):
    """values into IPOPT's double[k] at ptr (and that array)."""
    out = _doubles(ptr, k)
    out[:] = values
    return out


def _eval_f(calls, n, x, new_x, obj_value):
    flat = calls.at(x, n, new_x)
    f, grad = calls.value_and_grad(flat)
    obj_value[0] = f
    # one replay gives both: a trial point where the gradient is not finite
    # is refused here, so that the line search steps back from it (IPOPT
    # would stop on it at the next iteration)
    return calls.finite("f", flat, np.append(grad, f))


def _eval_grad_f(calls, n, x, new_x, grad_f):
    flat = calls.at(x, n, new_x)
    return calls.finite("f", flat, _put(calls.value_and_grad(flat)[1], grad_f, n))


def _eval_g(calls, n, x, new_x, m, g):
    if not m:
        return True
    flat = calls.at(x, n, new_x)
    # the Jacobian too, from the same replay (and kept for eval_jac_g, which
    # IPOPT calls at an accepted point): as f's gradient in eval_f
    return (calls.finite("g", flat, _put(calls.constraints(flat), g, m))
            and calls.finite("jac_g", flat, calls.jacobian(flat)))


def _eval_jac_g(calls, n, x, new_x, m, nele, iRow, jCol, values):
    if values == ffi.NULL:
        _structure(calls.jacobian_structure(), nele, iRow, jCol)
        return True
    flat = calls.at(x, n, new_x)
    return calls.finite("jac_g", flat, _put(calls.jacobian(flat), values, nele))


def _eval_h(calls, n, x, new_x, obj_factor, m, lam, new_lambda, nele, iRow,
            jCol, values):
    if values == ffi.NULL:
        _structure(calls.hessian_structure(), nele, iRow, jCol)
        return True
    if calls.problem.hess_pattern is None:
        return False
    flat = calls.at(x, n, new_x)
    hessian = calls.problem.hessian_values(flat, obj_factor, _doubles(lam, m).copy())
    return calls.finite("h", flat, _put(hessian, values, nele))


def _intermediate(calls, alg_mod, iter_count, obj_value, *rest):
    return calls.intermediate(iter_count, obj_value)


# the C function pointers, made once: user_data says whose problem it is
_C = {name: ffi.callback(ctype, _guarded(body), onerror=_keep_error)
      for name, ctype, body in (
          ("f", "Eval_F_CB", _eval_f), ("grad_f", "Eval_Grad_F_CB", _eval_grad_f),
          ("g", "Eval_G_CB", _eval_g), ("jac_g", "Eval_Jac_G_CB", _eval_jac_g),
          ("h", "Eval_H_CB", _eval_h),
          ("intermediate", "Intermediate_CB", _intermediate))}


def _vector(v):
    return ffi.from_buffer("double[]", np.ascontiguousarray(v, np.float64)) \
        if len(v) else ffi.NULL


def _set_option(lib, handle, name, value):
    key = name.encode()
    if isinstance(value, str):
        ok = lib.AddIpoptStrOption(handle, key, value.encode())
    elif isinstance(value, int):
        if not -INT32_MAX <= value <= INT32_MAX:
            raise ValueError(f"minimize(method='ipopt'): the option {name}="
                             f"{value!r} does not fit IPOPT's int")
        ok = lib.AddIpoptIntOption(handle, key, value)
    elif isinstance(value, float):
        ok = lib.AddIpoptNumOption(handle, key, value)
    else:
        raise TypeError(f"minimize(method='ipopt'): the option {name} takes a "
                        f"str, int or float, not {type(value).__name__}")
    if not ok:
        raise ValueError(f"minimize(method='ipopt'): IPOPT refuses the option "
                         f"{name}={value!r} (an unknown name, or a value of "
                         "the wrong type or out of its range)")


def minimize_ipopt(f, space, objective, bounds, constraints, tol, options,
                   callback):
    """IPOPT on f (objective: its minimize._Recording) from space.x0."""
    ipopt = load_ipopt()
    n = space.x0.size
    lb, ub = parse_bounds(bounds, n)
    if lb is None:
        lb, ub = np.full(n, -np.inf), np.full(n, np.inf)
    cons = parse_constraints(constraints)
    opts = _options(tol, options)
    exact = opts.get("hessian_approximation", "exact") != "limited-memory"
    problem = Problem(f, space, cons, hessian=exact)
    calls = _Callbacks(objective, problem, callback, space)
    m = problem.m
    nele_jac = calls.jacobian_structure()[0].size
    nele_hess = calls.hessian_structure()[0].size
    for what, size in (("variables", n), ("constraints", m),
                       ("Jacobian's nonzeros", nele_jac),
                       ("Hessian's nonzeros", nele_hess)):
        if size > INT32_MAX:
            raise ValueError(f"minimize(method='ipopt'): {size} {what}; "
                             "IPOPT's indices are 32-bit")
    # IPOPT keeps pointers to the bounds only during the call below
    handle = ipopt.lib.CreateIpoptProblem(
        n, _vector(lb), _vector(ub), m, _vector(problem.lb), _vector(problem.ub),
        nele_jac, nele_hess, 0, _C["f"], _C["g"], _C["grad_f"], _C["jac_g"],
        _C["h"])
    if handle == ffi.NULL:
        raise ValueError("minimize(method='ipopt'): IPOPT refused the problem "
                         "(its sizes or bounds)")
    try:
        for name, value in opts.items():
            _set_option(ipopt.lib, handle, name, value)
        ipopt.lib.SetIntermediateCallback(handle, _C["intermediate"])
        x = np.array(space.x0, dtype=np.float64)
        g = np.zeros(m)
        obj = ffi.new("double *")
        mult_g, mult_x_L, mult_x_U = np.zeros(m), np.zeros(n), np.zeros(n)
        calls.handle = handle
        user_data = ffi.new_handle(calls)
        status = ipopt.lib.IpoptSolve(
            handle, _out(x), _out(g), obj, _out(mult_g),
            _out(mult_x_L), _out(mult_x_U), user_data)
    finally:
        calls.handle = None
        ipopt.lib.FreeIpoptProblem(handle)
    if calls.error is not None:
        error, calls.error = calls.error, None
        try:
            raise error
        finally:
            del error   # this frame, in its traceback, would keep it: a cycle
    message = MESSAGES.get(status, f"IPOPT's status {status}")
    if calls.stopped:
        message = "stopped: the callback raised StopIteration"
    elif status == INVALID_NUMBER and calls.refused:
        message += f" ({REFUSED[calls.refused]} had a nan or inf at a point " \
                   "IPOPT reached)"
    # IPOPT's multipliers are of f + lam . g - zL (x - xL) + zU (x - xU):
    # the user's convention (constrained.py) is grad f = J^T lambda + z
    lam = -mult_g
    z = mult_x_L - mult_x_U
    fun, jac = objective.value_and_grad(x)
    return optimize_result(
        x=space.arg(x), fun=float(fun), jac=space.arg(jac),
        status=int(status), success=status in SUCCESS, message=message,
        nit=calls.nit, multipliers=problem.split(lam),
        bound_multipliers=space.arg(z),
        constr=problem.split(g))


def _out(v):
    return ffi.from_buffer("double[]", v) if v.size else ffi.NULL


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
