"""``ad.minimize``: minimize f over x, recorded once, with exact derivatives.

f is recorded at x0 (``ad.record``) and every evaluation is a C replay:

* a scipy method ('L-BFGS-B' by default, or any other of
  ``scipy.optimize.minimize``'s) gets the value and the gradient from one
  replay (``jac=True``); the Newton-type methods also get exact
  Hessian-vector products (``hessp``), 'dogleg' and 'trust-exact' the
  Hessian;
* ``method='lbfgs'`` is L-BFGS run entirely in C on the recording
  (csrc/lbfgs.c): no Python per iteration and no scipy.

A recording holds where f takes the decisions it took when recorded
(record.py).  Where a guard flips, f is recorded again at that point and
the optimization goes on, as ``@ad.function`` does.
"""
import numbers

import numpy as np

from . import _core
from ._core import ffi, lib
from .record import BranchError, Recorded
from .result import optimize_result
from .result import takes_intermediate_result as _takes_intermediate_result

# methods that get more than the gradient, and those that use none
HESSP_METHODS = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
HESS_METHODS = {"dogleg", "trust-exact"}
DERIVATIVE_FREE = {"nelder-mead", "powell", "cobyla", "cobyqa"}

# method='lbfgs': its options and their defaults (L-BFGS-B's in scipy)
LBFGS_OPTIONS = {"maxiter": 15000, "m": 10, "gtol": 1e-5,
                 "ftol": 2.220446049250313e-09, "maxls": 20}
# The C run comes back to Python at an iteration's end this many seconds
# (to about twice that) into each call, so that a Ctrl-C, whose handler
# only runs in Python, lands promptly; a return costs microseconds, nothing
# at this rate.  With a callback it comes back after every iteration.
SLICE_SECONDS = 0.02

_MESSAGES = {
    lib.AD_LBFGS_GTOL: "converged: every gradient component is at most gtol",
    lib.AD_LBFGS_FTOL: "converged: the relative reduction of f is at most ftol",
    lib.AD_LBFGS_MAXITER: "stopped: maxiter iterations reached",
    lib.AD_LBFGS_LINESEARCH: "failed: the line search found no step with "
                             "sufficient decrease in maxls evaluations, "
                             "along -g either",
}
_STATUS = {lib.AD_LBFGS_GTOL: 0, lib.AD_LBFGS_FTOL: 0,
           lib.AD_LBFGS_MAXITER: 1, lib.AD_LBFGS_LINESEARCH: 2,
           lib.AD_LBFGS_NONFINITE: 3}
STOPPED_BY_CALLBACK = 99        # scipy's status when a callback stops it


class _Space:
    """x0's kind and shape: scipy and C work on one flat float64 vector."""

    def __init__(self, x0):
        if isinstance(x0, (bool, np.bool_)):
            raise TypeError("minimize: x0 must be real numbers, not a bool")
        self.scalar = isinstance(x0, numbers.Real)
        if self.scalar:
            flat = np.array([float(x0)])
            self.shape = ()
        else:
            arr = np.asarray(x0)
            if arr.dtype.kind not in "iuf":
                raise TypeError(f"minimize: x0 must be real numbers (a float "
                                f"or an array of floats), not {arr.dtype} data")
            flat = arr.astype(np.float64).ravel()
            self.shape = arr.shape
        if flat.size == 0:
            raise ValueError(f"minimize: x0 has shape {self.shape} and no "
                             "elements: there is nothing to minimize over")
        self.x0 = flat
        self.flat_input = not self.scalar and len(self.shape) == 1

    def arg(self, flat):
        """f's argument at the flat point (a copy)."""
        if self.scalar:
            return float(flat[0])
        return np.array(flat, dtype=np.float64).reshape(self.shape)

    def flatten(self, v):
        return np.asarray(v, dtype=np.float64).reshape(-1)

    def element(self, j):
        """Element j of the flat vector, named as f indexes x: x[1, 2]."""
        if self.scalar:
            return "x"
        return f"x[{', '.join(map(str, np.unravel_index(j, self.shape)))}]"

    def shape_result(self, res):
        """scipy's result with x, and f's gradient (jac; trust-constr's
        grad), in x0's shape."""
        res.x = self.arg(res.x)
        for key in ("jac", "grad"):
            g = res.get(key)
            if isinstance(g, np.ndarray) and g.size == self.x0.size:
                res[key] = self.arg(g)
        return res


class _Recording:
    """f recorded at one point and attached to a C minimizer state (the
    struct of csrc/lbfgs.h) that evaluates it: the built-in L-BFGS runs on
    it, and scipy's methods get each value and gradient from one C call.
    f is recorded again where a guard flips."""

    def __init__(self, f, space, m=1, recording=None):
        self.f = f
        self.space = space
        self.o = _core.new_lbfgs(space.x0.size, m)
        self.recordings = 0
        self._f = ffi.new("double *")
        self._g = np.empty(space.x0.size)
        self._g_ptr = ffi.from_buffer("double[]", self._g)
        self._outcome = ffi.new("int32_t *")
        if recording is None:
            self.record_at(space.x0)
        else:                   # made elsewhere (record_objective), perhaps at another x
            self._use(_matching(recording, space), None)

    def record_at(self, flat):
        """Record f at the flat point and point the C state at it."""
        flat = np.array(flat, dtype=np.float64)
        if self.recordings and np.array_equal(flat, self.recorded_at):
            raise RuntimeError("minimize: a guard of f flips at the point "
                               "where f was just recorded: f does not take "
                               "the same decisions twice at the same x")
        if self.f is None:
            raise BranchError(f"minimize: a guard of the recording of "
                              f"{self.rec.name} flips at x = {self.space.arg(flat)}, "
                              "and there is no function to record again there: "
                              "pass the function itself, not its recording")
        self._use(_record(self.f, self.space.arg(flat)), flat)
        self.recordings += 1

    def _use(self, rec, flat):
        """Point the C state at recording rec (made at the flat point, or
        None where it came made)."""
        self.rec = rec
        self.recorded_at = flat
        # a constant f has no entry to evaluate: the trace answers for it
        self.constant = rec.trace.output_entry() is None
        self._keep = None if self.constant else _attach(self.o, rec)

    def check(self, status):
        _core.check(status, self.o, self.rec.trace.tape)

    def _trace_at(self, flat):
        """The recording replayed at flat (recorded there if a guard flips)."""
        try:
            self.rec._replay((self.space.arg(flat),))
        except BranchError:
            self.record_at(flat)
        return self.rec.trace

    # -- what scipy's methods call --------------------------------------------

    def value_and_grad(self, flat):
        if self.constant:
            value, grad = self._trace_at(flat).value_and_grad()
            return value, self.space.flatten(grad)
        x = np.ascontiguousarray(flat, dtype=np.float64)
        self.check(lib.ad_lbfgs_evaluate(self.o, ffi.from_buffer("double[]", x),
                                         self._f, self._g_ptr, self._outcome))
        if self._outcome[0] == lib.AD_EVAL_GUARD:
            self.record_at(x)
            return self.value_and_grad(x)
        return self._f[0], self._g.copy()

    def value(self, flat):
        return self._trace_at(flat).scalar_output()[1]

    def hessp(self, flat, p):
        return self.space.flatten(self._trace_at(flat).hvp(self.space.arg(p)))

    def hess(self, flat):
        n = self.space.x0.size
        return np.reshape(self._trace_at(flat).hessian(), (n, n))


def minimize(f, x0, method="L-BFGS-B", bounds=None, constraints=(), tol=None,
             options=None, callback=None, args=()):
    """Minimize the scalar function f(x, *args) from x0 (a float or an
    ndarray).

    scipy.optimize.minimize's signature without jac, hess and hessp, which
    come from f's recording: the value and gradient from one C replay,
    exact Hessian-vector products for 'Newton-CG', 'trust-ncg',
    'trust-krylov' and 'trust-constr'.  Returns scipy's OptimizeResult, x
    with x0's shape.  method='lbfgs' is a built-in L-BFGS that runs in C
    and needs no scipy (options maxiter, m, gtol, ftol, maxls; tol sets
    gtol).

    constraints (scipy's: dicts {'type': 'eq' or 'ineq', 'fun': c, 'args':
    ...}, NonlinearConstraint, LinearConstraint) go to method='ipopt'
    (IPOPT with exact sparse Jacobians and Lagrangian Hessians, through
    cyipopt) or scipy's 'trust-constr', 'SLSQP', 'COBYLA' and 'COBYQA',
    with exact derivatives too; the result's multipliers are those of
    grad f = sum_k J_k^T lambda_k + z (constrained.py).  args (scipy's,
    by keyword: the third parameter here is method) are f's further
    arguments, constants to its derivatives.
    """
    return minimize_recorded(None, f, x0, method, bounds, constraints, tol,
                             options, callback, args)


def record_objective(f, x0, args=()):
    """f(x, *args) recorded at x0 as minimize records it: what
    minimize_recorded takes, to start from other points without recording
    f again (pyautodiff.dask records once and sends it to every worker)."""
    space = _Space(x0)
    return _record(_bound(f, args), space.arg(space.x0))


def minimize_recorded(recording, f, x0, method="L-BFGS-B", bounds=None,
                      constraints=(), tol=None, options=None, callback=None,
                      args=()):
    """minimize from x0 on a recording of f made already (record_objective's,
    at any point of x0's shape; None: record f at x0, as minimize does).
    Where one of its guards flips, f is recorded again there, as minimize
    does; with f None, that is a BranchError."""
    if isinstance(method, tuple):
        raise TypeError("minimize: method is a tuple; scipy's third "
                        "parameter, args, is a keyword here: "
                        "minimize(f, x0, args=(...), method=...)")
    f = _bound(f, args)
    space = _Space(x0)
    name = method.lower() if isinstance(method, str) else None
    if name == "ipopt":
        from .ipopt import minimize_ipopt
        objective = _Recording(f, space, recording=recording)
        return minimize_ipopt(f, space, objective, bounds, constraints, tol,
                              options, callback)
    if name == "lbfgs":
        if constraints:
            raise ValueError("minimize: method='lbfgs' takes no constraints; "
                             "use method='ipopt', 'trust-constr' or 'SLSQP'")
        if bounds is not None:
            raise ValueError("minimize: method='lbfgs' takes no bounds; use "
                             "method='L-BFGS-B' for bounds")
        return _lbfgs(f, space, tol, options, callback, recording)
    return _scipy_minimize(f, space, method, bounds, constraints, tol, options,
                           callback, recording)


def _bound(f, args):
    """x -> f(x, *args) (f itself without args; None stays None)."""
    if not isinstance(args, tuple):
        args = (args,)          # (as scipy takes a single argument)
    if not args or f is None:
        return f
    from .constrained import with_args
    return with_args(f, args)


def _record(f, x):
    """f recorded at x, checked to return a scalar."""
    rec = Recorded(f, (x,))
    rec.trace.scalar_output("ad.minimize needs a function returning a "
                            "scalar (the value to minimize)")
    return rec


def _matching(rec, space):
    """rec, checked to take one argument of x0's kind and shape and to
    return a scalar."""
    st = rec.trace.structures
    kind = "float" if space.scalar else "array"
    if rec.nargs != 1 or st[0].node is not None or st[0].kinds[0] != kind \
            or tuple(st[0].shapes[0]) != space.shape:
        raise ValueError(f"minimize: the recording of {rec.name} does not "
                         f"take one {kind} of x0's shape {space.shape}")
    rec.trace.scalar_output("ad.minimize needs a function returning a "
                            "scalar (the value to minimize)")
    return rec


# -- scipy's methods ------------------------------------------------------------

def _scipy_minimize(f, space, method, bounds, constraints, tol, options,
                    callback, recording=None):
    try:
        import scipy.optimize
    except ImportError as exc:
        raise ImportError(
            f"minimize(method={method!r}) runs scipy.optimize.minimize, and "
            "scipy is not installed: pip install 'pyautodiff[scipy]' (or pip "
            "install scipy); method='lbfgs' needs no scipy") from exc
    objective = _Recording(f, space, recording=recording)
    name = method.lower() if isinstance(method, str) else None
    if constraints:
        from .constrained_scipy import minimize_constrained
        return space.shape_result(minimize_constrained(
            f, space, name, method, bounds, constraints, tol, options,
            callback, objective, _scipy_callback(callback, space)))
    if name in DERIVATIVE_FREE:
        kwargs = {"fun": objective.value}
    else:
        kwargs = {"fun": objective.value_and_grad, "jac": True}
    if name in HESSP_METHODS:
        kwargs["hessp"] = objective.hessp
    elif name in HESS_METHODS:
        kwargs["hess"] = objective.hess
    res = scipy.optimize.minimize(
        x0=space.x0.copy(), method=method, bounds=bounds, tol=tol,
        options=options, callback=_scipy_callback(callback, space), **kwargs)
    return space.shape_result(res)


def _scipy_callback(callback, space):
    """callback as scipy calls it, with x in x0's shape."""
    if callback is None or space.flat_input:
        return callback
    if _takes_intermediate_result(callback):
        def in_shape(intermediate_result):
            result = type(intermediate_result)(intermediate_result)
            result.x = space.arg(result.x)
            return callback(intermediate_result=result)
        return in_shape

    def in_shape(xk, *rest):
        return callback(space.arg(xk), *rest)
    return in_shape


# -- method='lbfgs': L-BFGS in C ------------------------------------------------

def _lbfgs_options(tol, options):
    opts = dict(LBFGS_OPTIONS)
    given = dict(options or {})
    unknown = sorted(set(given) - set(opts))
    if unknown:
        raise TypeError(f"minimize(method='lbfgs'): unknown option "
                        f"{unknown[0]!r}; the options are "
                        f"{', '.join(LBFGS_OPTIONS)}")
    if tol is not None and "gtol" not in given:
        given["gtol"] = tol
    opts.update(given)
    for name in ("maxiter", "m", "maxls"):
        v = opts[name]
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"minimize: option {name} must be an int, not "
                            f"{type(v).__name__}")
        lowest = 0 if name == "maxiter" else 1
        if v < lowest:
            raise ValueError(f"minimize: option {name} must be at least "
                             f"{lowest}, not {v}")
        opts[name] = int(v)
    for name in ("gtol", "ftol"):
        v = opts[name]
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"minimize: {name} must be a number, not "
                            f"{type(v).__name__}")
        if not v >= 0:
            raise ValueError(f"minimize: {name} must be >= 0, not {v}")
        opts[name] = float(v)
    return opts


def _view(pointer, n):
    """n doubles of the minimizer's state as an ndarray (no copy)."""
    return np.frombuffer(ffi.buffer(pointer, 8 * n))


def _attach(o, rec):
    """Point the minimizer at recording rec (its tape and replay plan);
    returns what must stay alive while it does."""
    tape = rec.trace.tape
    tape._check_open()
    tape.flush()
    tape.sweep_mode = _core.SWEEP_LEAVES     # the extern rules read it
    o.tape = tape._c
    o.replay = rec.plan
    return (rec,)


def _lbfgs(f, space, tol, options, callback, recording=None):
    opts = _lbfgs_options(tol, options)
    n = space.x0.size
    problem = _Recording(f, space, opts["m"], recording)
    o = problem.o
    o.maxiter, o.maxls = opts["maxiter"], opts["maxls"]
    o.gtol, o.ftol = opts["gtol"], opts["ftol"]
    o.pause = 0.0 if callback is not None else SLICE_SECONDS
    x, g = _view(o.x, n), _view(o.g, n)
    x[:] = space.x0
    status = message = None
    while status is None:
        if problem.constant:
            # this recording's f is a number that does not depend on x
            o.f = problem.rec.trace.scalar_output()[1]
            g[:] = 0.0
            if problem.recorded_at is None or \
                    np.array_equal(problem.recorded_at, space.x0):   # (at the start)
                status, message = 0, "converged: f does not depend on x"
            else:
                x[:] = problem.recorded_at
                status, message = 2, ("stopped: f returned a constant at the "
                                      "point reached, with no dependence on x")
            break
        seen = o.nit
        # each pause ends here: a pending Ctrl-C raises KeyboardInterrupt
        # out of minimize, as from scipy's, and the callback runs
        while True:
            problem.check(lib.ad_lbfgs_run(o))
            if callback is not None and o.nit > seen:
                seen = o.nit
                if _call(callback, space, x, o.f):
                    status = STOPPED_BY_CALLBACK
                    message = "stopped: the callback raised StopIteration"
                    break
            if o.status != lib.AD_LBFGS_RUNNING:
                break
        if status is not None:
            break
        if o.status == lib.AD_LBFGS_GUARD:
            problem.record_at(_view(o.xt, n))    # and go on from there
            continue
        status = _STATUS[o.status]
        message = _MESSAGES.get(o.status) or _nonfinite_message(o.f)
    return optimize_result(
        x=space.arg(x), fun=float(o.f), jac=space.arg(g), nit=int(o.nit),
        # a recording evaluates f too; the gradients all come from C
        nfev=int(o.nfev) + problem.recordings, njev=int(o.nfev),
        status=status, success=status == 0, message=message)


def _nonfinite_message(f0):
    if not np.isfinite(f0):
        return f"failed: f(x0) is {f0}, not a finite number"
    return "failed: the gradient of f at x0 has nan or inf components"


def _call(callback, space, x, fun):
    """Call the user's callback after an iteration; True to stop."""
    xk = space.arg(x)
    try:
        if _takes_intermediate_result(callback):
            callback(intermediate_result=optimize_result(x=xk, fun=float(fun)))
        else:
            callback(xk)
    except StopIteration:
        return True
    return False
