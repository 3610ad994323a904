"""Derivatives of derivatives: the third derivative of a scalar function of
1,000 ops and the Jacobian of the Hessian of a small array function, each
one program run with autograd and with pyautodiff's drop-in; and a
recorded gradient program (``ad.record(ad.grad(f))``) replayed, against
the gradient of the recording of f itself.
"""
import time

import numpy as np

from bench.dropin import packages
from bench.registry import Result, Unsupported, problem

CHAIN = 200          # five ops each: 1,000 ops


def chain(anp):
    def f(x):
        y = x
        for _ in range(CHAIN):
            y = anp.sin(y) * 0.9 + y * 0.2 + 0.1
        return y
    return f


def small(anp, A):
    def f(x):
        return anp.sum(anp.tanh(anp.dot(A, x)) ** 2) + anp.log(anp.sum(x * x) + 1.0)
    return f


def _timed(fn, repeat):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        out = fn()
        ns = time.perf_counter_ns() - t0
        best = ns if best is None else min(best, ns)
    return best, out


@problem("third-derivative", {"d3f/dx3": "ms"},
         size=lambda cfg: f"{5 * CHAIN} ops",
         note="third-derivative: grad(grad(grad(f)))(0.3) of a scalar chain of "
              "1,000 ops (sin, *, +), one program under autograd and "
              "pyautodiff.autograd.")
def third_derivative(backend, cfg):
    G, anp = packages(backend)
    d3 = G.grad(G.grad(G.grad(chain(anp))))
    ns, value = _timed(lambda: d3(0.3), 1 if cfg.quick else 3)
    return Result({"d3f/dx3": [ns / 1e6]}, {"d3": float(value)})


@problem("jacobian-of-hessian", {"jacobian(hessian)": "ms"},
         size=lambda cfg: "n = 8",
         note="jacobian-of-hessian: jacobian(hessian(f)) of f(x) = "
              "sum(tanh(A x)^2) + log(|x|^2 + 1), x of 8 elements, under autograd "
              "and pyautodiff.autograd.")
def jacobian_of_hessian(backend, cfg):
    G, anp = packages(backend)
    rng = np.random.default_rng(0)
    A = rng.normal(size=(8, 8))
    x = rng.normal(size=8)
    jh = G.jacobian(G.hessian(small(anp, A)))
    ns, T = _timed(lambda: jh(x), 1 if cfg.quick else 3)
    return Result({"jacobian(hessian)": [ns / 1e6]},
                  {"|T|": float(np.abs(np.asarray(T)).sum())})


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@problem("recorded-gradient", {"F.grad(x)": "ms", "G(x)": "ms"},
         size=lambda cfg: "Rosenbrock, n = 10,000",
         note="recorded-gradient: F = ad.record(f, x0) and G = ad.record(ad.grad(f), "
              "x0) for the Rosenbrock function of 10,000 variables: F.grad(x) (C "
              "forward and reverse sweeps) against G(x), the recorded gradient "
              "program replayed (one C forward sweep).")
def recorded_gradient(backend, cfg):
    if backend.name != "pyautodiff":
        raise Unsupported("pyautodiff only")
    import pyautodiff as ad
    x0 = np.full(10_000, 0.5)
    x = np.linspace(-1.0, 1.0, 10_000)
    F = ad.record(rosenbrock, x0)
    G = ad.record(ad.grad(rosenbrock), x0)
    repeat = 5 if cfg.quick else 30
    f_ns, g1 = _timed(lambda: F.grad(x), repeat)
    g_ns, g2 = _timed(lambda: G(x), repeat)
    if not np.allclose(g1, g2, rtol=1e-12):
        raise AssertionError("the recorded gradient differs from F.grad")
    return Result({"F.grad(x)": [f_ns / 1e6], "G(x)": [g_ns / 1e6]},
                  {"|g|": float(np.abs(g2).sum())})
