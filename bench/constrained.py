"""Constrained optimization with IPOPT: ad.minimize(method='ipopt') against
CasADi's nlpsol('ipopt'), the same solver fed by symbolic derivatives.

The Luksan-Vlcek problem (chained Rosenbrock with n - 2 equality
constraints, from x0 = (-1.2, 1, -1.2, 1, ...)) at two sizes, and HS071
(IPOPT's own example).  For each: setup (pyautodiff: f, the constraints
and the Lagrangian recorded, their sparsity patterns and colourings, what
ad.minimize does before IPOPT starts; CasADi: the symbolic graph and
nlpsol's construction), solve (pyautodiff: the rest of ad.minimize's
time; CasADi: the solver's call), the iterations and the optimum.
"""
import time

import numpy as np

from bench.registry import Result, Unsupported, problem

SIZES, QUICK_SIZES = (10_000, 100_000), (1_000, 10_000)
IPOPT_OPTIONS = {"tol": 1e-8, "print_level": 0}


# --- the problems, on NumPy (pyautodiff records them) ---------------------------

def lv_f(x):
    return np.sum(100.0 * (x[:-1] ** 2 - x[1:]) ** 2 + (x[:-1] - 1.0) ** 2)


def lv_c(x):
    a, b, d = x[:-2], x[1:-1], x[2:]
    return (3 * b ** 3 + 2 * d - 5 + np.sin(b - d) * np.sin(b + d) + 4 * b
            - a * np.exp(a - b) - 3)


def lv_x0(n):
    return np.where(np.arange(n) % 2 == 0, -1.2, 1.0)


def hs071_f(x):
    return x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]


HS071 = dict(x0=np.array([1.0, 5.0, 5.0, 1.0]), lb=np.ones(4), ub=5 * np.ones(4))


def _hs071_g(x, sum_):
    return [x[0] * x[1] * x[2] * x[3], sum_(x ** 2)]   # >= 25, == 40


# --- pyautodiff -------------------------------------------------------------------

def _ad_lv(n):
    return lv_f, lv_x0(n), {"constraints": {"type": "eq", "fun": lv_c}}


def _ad_hs071():
    from scipy.optimize import NonlinearConstraint
    g = NonlinearConstraint(lambda x: _hs071_g(x, np.sum), [25, 40], [np.inf, 40])
    return hs071_f, HS071["x0"], {"constraints": g,
                                  "bounds": list(zip(HS071["lb"], HS071["ub"]))}


def _ad_run(f, x0, kwargs):
    """(setup, solve, iterations, f*, success) of ad.minimize(method='ipopt').
    Setup ends when minimize has built its recordings and their patterns
    (the Problem of pyautodiff.constrained, timed by wrapping it), just
    before IPOPT starts."""
    import pyautodiff as ad
    import pyautodiff.ipopt as ipopt_module
    built, Problem = [], ipopt_module.Problem

    def timed(*args, **kwargs):
        problem = Problem(*args, **kwargs)
        built.append(time.perf_counter())
        return problem
    ipopt_module.Problem = timed
    try:
        t0 = time.perf_counter()
        res = ad.minimize(f, x0, method="ipopt", options=IPOPT_OPTIONS, **kwargs)
        t1 = time.perf_counter()
    finally:
        ipopt_module.Problem = Problem
    return built[0] - t0, t1 - built[0], res.nit, res.fun, res.success


# --- CasADi -------------------------------------------------------------------------

def _casadi_solver(build):
    import casadi as ca
    nlp, bounds = build(ca)
    opts = {"print_time": 0, "ipopt.sb": "yes"}
    opts.update({f"ipopt.{k}": v for k, v in IPOPT_OPTIONS.items()})
    return ca.nlpsol("S", "ipopt", nlp, opts), bounds


def _casadi_lv(n):
    def build(ca):
        x = ca.MX.sym("x", n)
        return ({"x": x, "f": _lv_casadi_f(ca, x), "g": _lv_casadi_c(ca, x)},
                dict(x0=lv_x0(n), lbg=0, ubg=0))
    return build


def _lv_casadi_f(ca, x):
    return ca.sum1(100.0 * (x[:-1] ** 2 - x[1:]) ** 2 + (x[:-1] - 1.0) ** 2)


def _lv_casadi_c(ca, x):
    a, b, d = x[:-2], x[1:-1], x[2:]
    return (3 * b ** 3 + 2 * d - 5 + ca.sin(b - d) * ca.sin(b + d) + 4 * b
            - a * ca.exp(a - b) - 3)


def _casadi_hs071(ca):
    x = ca.MX.sym("x", 4)
    g = ca.vertcat(*_hs071_g(x, ca.sum1))
    return ({"x": x, "f": hs071_f(x), "g": g},
            dict(x0=HS071["x0"], lbx=HS071["lb"], ubx=HS071["ub"],
                 lbg=[25, 40], ubg=[np.inf, 40]))


def _casadi_run(build):
    t0 = time.perf_counter()
    S, bounds = _casadi_solver(build)
    t1 = time.perf_counter()
    r = S(**bounds)
    t2 = time.perf_counter()
    stats = S.stats()
    return t1 - t0, t2 - t1, stats["iter_count"], float(r["f"]), stats["success"]


# --- the problem -------------------------------------------------------------------

SCALES = ("small", "large")     # the metrics' names for the two sizes
METRICS = {f"LV {scale} {what}": "s" for scale in SCALES for what in ("setup", "solve")}
METRICS["HS071 total"] = "ms"


def _size(cfg):
    small, large = QUICK_SIZES if cfg.quick else SIZES
    return f"Luksan-Vlcek small n = {small:,}, large n = {large:,}; HS071"


@problem("ipopt", METRICS, size=_size,
         note="ipopt: ad.minimize(method='ipopt') (IPOPT's C interface, exact "
              "sparse Jacobian and Lagrangian Hessian from recordings) against "
              "CasADi's nlpsol('ipopt') (symbolic derivatives), tol 1e-8. setup: "
              "pyautodiff's recordings of f, the constraints and the Lagrangian, "
              "their sparsity patterns and colourings; CasADi's graph and "
              "nlpsol. solve: the rest, IPOPT's run with its callbacks. Same "
              "iterations, same optimum. pyautodiff runs the newest IPOPT "
              "installed (or PYAUTODIFF_IPOPT_LIBRARY's): when it is CasADi's "
              "own build, both sides run the same solver and the solve's gap "
              "is the derivatives'; cyipopt-wheels' IPOPT 3.14.11 (MUMPS "
              "5.5.1) solves the same KKT systems about 3x slower.")
def ipopt(backend, cfg):
    sizes = QUICK_SIZES if cfg.quick else SIZES
    if backend.name == "pyautodiff":
        from pyautodiff.ipopt_library import load
        try:
            notes_library = repr(load())
        except ImportError:
            raise Unsupported("no IPOPT library is installed (pip install "
                              "pyautodiff[ipopt])") from None
        import scipy.sparse  # noqa: F401  (imported once per process, not timed)
        lv = lambda n: _ad_run(*_ad_lv(n))                       # noqa: E731
        hs = lambda: _ad_run(*_ad_hs071())                       # noqa: E731
    elif backend.name == "casadi":
        lv = lambda n: _casadi_run(_casadi_lv(n))                # noqa: E731
        hs = lambda: _casadi_run(_casadi_hs071)                  # noqa: E731
        notes_library = "CasADi's own IPOPT"
    else:
        raise Unsupported("no IPOPT interface")
    samples, check, notes = {}, {}, [notes_library]
    for n, scale in zip(sizes, SCALES):
        setup, solve, nit, fun, ok = lv(n)
        if not ok:
            raise AssertionError(f"Luksan-Vlcek n={n} did not converge")
        samples[f"LV {scale} setup"] = [setup]
        samples[f"LV {scale} solve"] = [solve]
        check[f"LV n={n:,} optimum"] = fun
        notes.append(f"LV n={n:,}: {nit} iterations, f* = {fun:.10g}")
    setup, solve, nit, fun, ok = hs()
    samples["HS071 total"] = [(setup + solve) * 1e3]
    check["HS071 optimum"] = round(fun, 7)
    notes.append(f"HS071: {nit} iterations, f* = {fun:.9g}")
    return Result(samples, check, "; ".join(notes))
