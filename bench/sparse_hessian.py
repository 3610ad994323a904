"""Sparse Hessians: the chained Rosenbrock function

    f(x) = sum(100 (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2)

whose Hessian is tridiagonal, at n = 1e4, 1e5 and 1e6 (1e3 to 1e5 with
--quick).  'setup' is what is paid once: pyautodiff records f, reads the
Hessian's pattern off the tape and star-colours it (3 colours); CasADi
builds the expression graph and its Hessian function.  'evaluation' is
one Hessian at x after that, as a scipy.sparse / CasADi sparse matrix (a
first evaluation, which allocates the sweeps' scratch, is not timed).
"""
import time

import numpy as np

from bench.registry import problem
from bench.sparse_common import METRICS, label as _label, run_sizes, sizes as _sizes

def _point(n):
    return np.random.default_rng(0).uniform(-1.0, 2.0, n)


def _pyautodiff(n, first=False):
    import pyautodiff as ad
    from pyautodiff import sparse
    sparse._scipy_sparse()          # its import is no part of the setup

    def rosen(x):
        return ad.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    x = _point(n)
    t0 = time.perf_counter()
    F = ad.record(rosen, x)
    F.hessian_sparsity()            # the pattern and its colouring, kept
    t1 = time.perf_counter()
    F.sparse_hessian(x)
    t2 = time.perf_counter()
    H = F.sparse_hessian(x)
    t3 = time.perf_counter()
    colours = sparse.recorded_plan(F, "hessian", "bench").ncolors
    return (t1 - t0) * 1e3, (t3 - t2) * 1e3, H.nnz, float(H.sum()), \
        f"{colours} colours"


def _casadi(n, first=False):
    import casadi
    x0 = _point(n)
    t0 = time.perf_counter()
    x = casadi.MX.sym("x", n)
    f = casadi.sum1(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    H, _ = casadi.hessian(f, x)
    hess = casadi.Function("rosen_hessian", [x], [H])
    t1 = time.perf_counter()
    hess(x0)
    t2 = time.perf_counter()
    value = hess(x0)
    t3 = time.perf_counter()
    return (t1 - t0) * 1e3, (t3 - t2) * 1e3, value.nnz(), \
        float(np.sum(value.nonzeros())), "MX graph, casadi.hessian"


@problem("sparse-hessian", METRICS,
         size=lambda cfg: "chained Rosenbrock, " + ", ".join(_label(n) for n in _sizes(cfg)),
         note="sparse-hessian: the Hessian of the chained Rosenbrock function "
              "(tridiagonal). setup: pyautodiff records f, finds the Hessian's "
              "pattern on the tape and star-colours it; CasADi builds its graph "
              "and Hessian function. evaluation: one Hessian after that (a first, "
              "untimed, allocates scratch).")
def sparse_hessian(backend, cfg):
    return run_sizes(backend, cfg, {"pyautodiff": _pyautodiff, "casadi": _casadi},
                     "Hessian", "H")
