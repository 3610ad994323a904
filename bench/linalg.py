"""numpy.linalg's solve, inv and cholesky: value and gradient of a loss
through each, on a small matrix (3x3: what an extern entry's glue costs,
recording it and calling back into Python for its vjp) and a large one
(300x300: LAPACK's own time), against NumPy by hand (the forward call
and the closed-form gradient, no AD) and autograd.

Each loss is sum(f(A, ...) * W) for a fixed W; pyautodiff runs the
NumPy code on its Arrays (numpy.linalg dispatches to its rules), with
the parameter made before the timer as a model's are.
"""
import numpy as np
import scipy.linalg

from bench.arrays import _engine, _timed
from bench.registry import Result, problem

SIZES = (3, 300)
# calls per timed step: a 3x3 call takes microseconds, too few to time alone
CALLS = {3: 100, 300: 1}


def _data(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n)) / np.sqrt(n) + 2.0 * np.eye(n)
    spd = a @ a.T + np.eye(n)
    return {"A": a, "S": spd, "B": rng.normal(size=(n, 2)),
            "W": rng.normal(size=(n, n)), "Wb": rng.normal(size=(n, 2))}


# -- the losses, written once for NumPy, pyautodiff's Arrays and autograd ---

def _solve_loss(np_, a, d):
    return np_.sum(np_.linalg.solve(a, d["B"]) * d["Wb"])


def _inv_loss(np_, a, d):
    return np_.sum(np_.linalg.inv(a) * d["W"])


def _cholesky_loss(np_, s, d):
    return np_.sum(np_.linalg.cholesky(s) * d["W"])


# -- NumPy by hand: the value and its gradient in closed form ---------------

def _solve_by_hand(a, d):
    x = np.linalg.solve(a, d["B"])
    gb = np.linalg.solve(a.T, d["Wb"])          # the adjoint system
    return np.sum(x * d["Wb"]), -gb @ x.T


def _inv_by_hand(a, d):
    x = np.linalg.inv(a)
    return np.sum(x * d["W"]), -x.T @ d["W"] @ x.T


def _cholesky_by_hand(s, d):
    # S = L L^T; with Lbar = tril(W): Sbar = L^-T P L^-1, P the lower
    # triangle of L^T Lbar with its diagonal halved, made symmetric
    lower = np.linalg.cholesky(s)
    p = np.tril(lower.T @ np.tril(d["W"]))
    p[np.diag_indices_from(p)] *= 0.5
    right = scipy.linalg.solve_triangular(lower, p.T, lower=True, trans="T",
                                         check_finite=False).T
    sbar = scipy.linalg.solve_triangular(lower, right, lower=True, trans="T",
                                         check_finite=False)
    return np.sum(lower * d["W"]), 0.5 * (sbar + sbar.T)


PROBLEMS = {"solve": (_solve_loss, _solve_by_hand, "A"),
            "inv": (_inv_loss, _inv_by_hand, "A"),
            "cholesky": (_cholesky_loss, _cholesky_by_hand, "S")}


def _repeat(call, calls):
    def step():
        for _ in range(calls):
            out = call()
        return out
    return step


def _numpy(name, d, calls):
    _, by_hand, arg = PROBLEMS[name]
    return _repeat(lambda: by_hand(d[arg], d), calls)


def _pyautodiff(name, d, calls):
    import pyautodiff as ad
    loss, _, arg = PROBLEMS[name]
    x = ad.Array(d[arg])

    def call():
        x.zero_grad()
        with ad.Tape():
            out = loss(np, x, d)
            out.backward()
        return float(out.data), lambda: x.grad
    return _repeat(call, calls)


def _autograd(name, d, calls):
    import autograd
    import autograd.numpy as anp
    loss, _, arg = PROBLEMS[name]
    f = autograd.value_and_grad(lambda x: loss(anp, x, d))
    return _repeat(lambda: f(d[arg]), calls)


IMPLS = {"numpy (by hand)": _numpy, "pyautodiff": _pyautodiff,
         "autograd": _autograd}


def _register(name, n):
    calls = CALLS[n]

    @problem(f"linalg-{name}-{n}", {"value+grad": "us/call"},
             size=lambda cfg: f"{n}x{n}",
             note=f"linalg-{name}-{n}: sum(numpy.linalg.{name}(...) * W) and "
                  "its gradient; numpy (by hand) is the forward call and the "
                  "closed-form gradient" + (f"; {calls} calls per timed step"
                                            if calls > 1 else ""))
    def run(backend, cfg):
        d = _data(n, seed=n)
        step = _engine(IMPLS, backend)(name, d, calls)
        ns, (value, grad) = _timed(step)
        return Result({"value+grad": [ns / 1e3 / calls]},
                      {"value": float(value), "|grad|": float(np.abs(grad).sum())})
    return run


for _name in PROBLEMS:
    for _n in SIZES:
        _register(_name, _n)
