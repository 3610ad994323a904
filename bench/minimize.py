"""Optimization problems: a whole minimization, first evaluation to result.

Rosenbrock in n = 1,000 dimensions from x = 0, to scipy's L-BFGS-B
defaults.  Every engine drives the same scipy solver
(``scipy.optimize.minimize(..., jac=True, method='L-BFGS-B')``) with its
own value and gradient: NumPy written by hand (no AD) is the floor,
pyautodiff is ``ad.minimize`` (f recorded once, each evaluation one C
call), autograd and torch build their graph at every evaluation.  The
pyautodiff row also has ``method='lbfgs'``, its L-BFGS run entirely in C.
"""
import time

import numpy as np

from bench.registry import Result, Unsupported, problem

N, QUICK_N = 1000, 200


def _rosen(x, np_):
    return np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _numpy_fg(x):
    d = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * d - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * d
    return _rosen(x, np), g


def _autograd_fg():
    import autograd
    import autograd.numpy as anp
    return autograd.value_and_grad(lambda x: _rosen(x, anp))


def _torch_fg():
    import torch

    def fg(x):
        t = torch.tensor(x, requires_grad=True)
        f = _rosen(t, torch)
        f.backward()
        return f.item(), t.grad.numpy()
    return fg


def _scipy_lbfgsb(fg, x0):
    import scipy.optimize
    return scipy.optimize.minimize(fg, x0, jac=True, method="L-BFGS-B")


def _ad_minimize(method):
    import pyautodiff as ad
    return lambda x0: ad.minimize(lambda x: _rosen(x, np), x0, method=method)


def _timed(run, x0):
    t0 = time.perf_counter()
    res = run(x0)
    seconds = time.perf_counter() - t0
    if not res.success or np.abs(res.x - 1.0).max() > 1e-3:
        raise AssertionError(f"did not reach x = 1: {res.message}")
    return seconds * 1e3, res


SCIPY_ROW = "scipy L-BFGS-B"
BUILTIN_ROW = "built-in lbfgs"


@problem("minimize-rosenbrock", {SCIPY_ROW: "ms", BUILTIN_ROW: "ms"},
         size=lambda cfg: f"n = {QUICK_N if cfg.quick else N:,}",
         note="minimize-rosenbrock: Rosenbrock from x = 0 to scipy's L-BFGS-B "
              "defaults, total time. 'scipy L-BFGS-B' is the same scipy solver "
              "fed by each engine's value and gradient (pyautodiff: "
              "ad.minimize, recorded once, one C call per evaluation; numpy "
              "(by hand): the gradient written out); 'built-in lbfgs' is "
              "ad.minimize(method='lbfgs'), L-BFGS in C with no Python per "
              "iteration. scipy's L-BFGS-B calls BLAS: OPENBLAS_NUM_THREADS=1 "
              "keeps its thread pool from fighting over a busy machine.")
def minimize_rosenbrock(backend, cfg):
    x0 = np.zeros(QUICK_N if cfg.quick else N)
    try:
        import scipy.optimize  # noqa: F401
        have_scipy = True
    except ImportError:
        have_scipy = False
    samples, notes, res = {}, [], None
    if backend.name == "pyautodiff":
        samples[BUILTIN_ROW], res = _timed(_ad_minimize("lbfgs"), x0)
        notes.append(f"lbfgs: {res.nit} iterations, {res.nfev} evaluations")
        run = _ad_minimize("L-BFGS-B")
    else:
        fg = {"numpy (by hand)": lambda: _numpy_fg, "autograd": _autograd_fg,
              "torch": _torch_fg}.get(backend.name)
        if fg is None:
            raise Unsupported("no array code for this engine")
        if not have_scipy:
            raise Unsupported("scipy is not installed")
        fg = fg()
        run = lambda x0: _scipy_lbfgsb(fg, x0)       # noqa: E731
    if have_scipy:
        samples[SCIPY_ROW], res = _timed(run, x0)
        notes.insert(0, f"L-BFGS-B: {res.nit} iterations, {res.nfev} evaluations")
    for metric in samples:
        samples[metric] = [samples[metric]]
    return Result(samples, {"reached x = 1 (to 1e-3)": 1.0}, "; ".join(notes))
