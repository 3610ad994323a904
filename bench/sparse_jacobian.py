"""Sparse Jacobians: the Luksan-Vlcek constraints

    c_i(x) = 3 x[i+1]^3 + 2 x[i+2] - 5 + sin(x[i+1] - x[i+2]) sin(x[i+1] + x[i+2])
             + 4 x[i+1] - x[i] exp(x[i] - x[i+1]) - 3,        i = 0 .. n-3

whose (n-2, n) Jacobian is a band of 3 columns per row (so 3 colours are
the fewest), at n = 1e4, 1e5 and 1e6 (1e3 to 1e5 with --quick), from
x0 = (-1.2, 1, -1.2, 1, ...).  'setup' is what is paid once: pyautodiff
records c, reads the Jacobian's pattern off the tape and colours it;
CasADi builds its SX graph and Jacobian function.  'evaluation' is one
Jacobian at x0 after that (a first evaluation, which allocates the
sweeps' scratch, is not timed).

At the smallest n pyautodiff's Jacobian is checked, untimed, against the
one derived by hand and, where casadi imports, CasADi's, nonzero by
nonzero; at every n the runner compares the nonzero counts and sums.
"""
import time

import numpy as np

from bench.registry import problem
from bench.sparse_common import METRICS, label as _label, run_sizes, sizes as _sizes

RTOL = 1e-12


def _point(n):
    return np.where(np.arange(n) % 2 == 0, -1.2, 1.0)


def constraints(x, sin, exp):
    """The n-2 constraints, with the engine's sin and exp (NumPy's for
    pyautodiff, CasADi's for its symbols)."""
    n = x.shape[0]
    p, a, b = x[0:n - 2], x[1:n - 1], x[2:n]
    return 3.0 * a ** 3 + 2.0 * b - 5.0 + sin(a - b) * sin(a + b) \
        + 4.0 * a - p * exp(p - a) - 3.0


def _by_hand(x):
    """The Jacobian's three diagonals, derived on paper: with
    sin(a-b) sin(a+b) = sin(a)^2 - sin(b)^2, row i is
    (-(1 + p) e, 9 a^2 + sin(2a) + 4 + p e, 2 - sin(2b)) at columns
    i, i+1, i+2, where e = exp(p - a)."""
    import scipy.sparse
    p, a, b = x[:-2], x[1:-1], x[2:]
    e = np.exp(p - a)
    m = len(x) - 2
    rows = np.repeat(np.arange(m), 3)
    cols = rows + np.tile(np.arange(3), m)
    vals = np.column_stack([-(1.0 + p) * e, 9.0 * a ** 2 + np.sin(2.0 * a) + 4.0 + p * e,
                            2.0 - np.sin(2.0 * b)]).ravel()
    return scipy.sparse.csr_array((vals, (rows, cols)), shape=(m, len(x)))


def _casadi_function(n):
    import casadi
    x = casadi.SX.sym("x", n)
    J = casadi.jacobian(constraints(x, casadi.sin, casadi.exp), x)
    return casadi.Function("lv_jacobian", [x], [J])


def _casadi_csr(value, shape):
    import scipy.sparse
    rows, cols = value.sparsity().get_triplet()
    return scipy.sparse.csr_array((np.array(value.nonzeros()), (rows, cols)), shape=shape)


def _verify(J, x):
    """Raises unless J equals the Jacobian by hand and CasADi's (where it
    imports), nonzero by nonzero."""
    oracles = {"the Jacobian by hand": _by_hand(x)}
    try:
        import casadi  # noqa: F401
    except ImportError:
        pass
    else:
        oracles["CasADi's"] = _casadi_csr(_casadi_function(len(x))(x), J.shape)
    for name, K in oracles.items():
        if J.nnz != K.nnz:
            raise AssertionError(f"{J.nnz} nonzeros, {K.nnz} in {name}")
        diff = abs(J - K).max()
        if diff > RTOL * abs(K).max():
            raise AssertionError(f"the Jacobian differs from {name} by {diff:g}")


def _pyautodiff(n, verify):
    import pyautodiff as ad
    from pyautodiff import sparse
    sparse._scipy_sparse()          # its import is no part of the setup

    def c(x):
        return constraints(x, np.sin, np.exp)
    x = _point(n)
    t0 = time.perf_counter()
    F = ad.record(c, x)
    F.jacobian_sparsity()           # the pattern and its colouring, kept
    t1 = time.perf_counter()
    F.sparse_jacobian(x)
    t2 = time.perf_counter()
    J = F.sparse_jacobian(x)
    t3 = time.perf_counter()
    if verify:
        _verify(J, x)
    plan = sparse.recorded_plan(F, "jacobian", "bench")
    how = "reverse sweeps" if plan.by_rows else "forward sweeps"
    return (t1 - t0) * 1e3, (t3 - t2) * 1e3, J.nnz, float(J.sum()), \
        f"{plan.ncolors} colours, {how}"


def _casadi(n, verify):
    x0 = _point(n)
    t0 = time.perf_counter()
    jac = _casadi_function(n)
    t1 = time.perf_counter()
    jac(x0)
    t2 = time.perf_counter()
    value = jac(x0)
    t3 = time.perf_counter()
    return (t1 - t0) * 1e3, (t3 - t2) * 1e3, value.nnz(), \
        float(np.sum(value.nonzeros())), "SX graph, casadi.jacobian"


@problem("sparse-jacobian", METRICS,
         size=lambda cfg: "Luksan-Vlcek constraints, " + ", ".join(_label(n) for n in _sizes(cfg)),
         note="sparse-jacobian: the Jacobian of the Luksan-Vlcek constraints "
              "(3 columns per row). setup: pyautodiff records c, finds the "
              "Jacobian's pattern on the tape and colours it; CasADi builds its "
              "SX graph and Jacobian function. evaluation: one Jacobian after "
              "that (a first, untimed, allocates scratch). pyautodiff's values "
              "are checked at the smallest n against the Jacobian by hand and "
              "CasADi's.")
def sparse_jacobian(backend, cfg):
    # the values are checked at the smallest n only (first)
    return run_sizes(backend, cfg, {"pyautodiff": _pyautodiff, "casadi": _casadi},
                     "Jacobian", "J")
