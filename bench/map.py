"""One recording at many points: the Rosenbrock function's gradient at
10^4 points, n = 10 and n = 1000 (10^3 points with --quick).

pyautodiff: F = ad.record(rosen, x0), then F.map(X, method="grad") with one
thread and with every core, against a Python loop of F.grad at each point.
CasADi: the gradient as a Function, evaluated point by point through its
buffer API (one call per point, serial), and by Function.map(N) over the
points, serial and with the "thread" parallelization on every core.
Times are microseconds per point (the best of the repeats' medians).
"""
import os
import time

import numpy as np

from bench.registry import Result, Unsupported, problem

SIZES = (10, 1000)


def _points(n, cfg):
    count = 1000 if cfg.quick else 10_000
    return np.random.default_rng(0).uniform(-1.0, 2.0, (count, n))


def _cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1


def _per_point(fn, count, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best / count * 1e6


def _pyautodiff(X):
    import pyautodiff as ad

    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    F = ad.record(rosen, X[0])
    count = len(X)
    one = _per_point(lambda: F.map(X, method="grad", threads=1), count)
    every = _per_point(lambda: F.map(X, method="grad"), count)
    loop = _per_point(lambda: [F.grad(x) for x in X[:1000]], min(count, 1000), 1)
    g = F.map(X, method="grad")
    return {"map, 1 thread": one, "map, every core": every,
            "loop of F.grad": loop}, float(np.sum(g))


def _casadi(X):
    import casadi
    count, n = X.shape
    x = casadi.MX.sym("x", n)
    f = casadi.sum1(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    grad = casadi.Function("g", [x], [casadi.gradient(f, x)])
    serial = grad.map(count, "serial")
    threaded = grad.map(count, "thread", _cores())
    XT = X.T.copy()
    arg, res = np.zeros(n), np.zeros(n)
    buf, evaluate = grad.buffer()
    buf.set_arg(0, memoryview(arg))
    buf.set_res(0, memoryview(res))

    def point_by_point():
        for row in X:
            arg[:] = row
            evaluate()
    total = float(np.sum(np.asarray(threaded(XT))))
    return {"buffer API, a call per point": _per_point(point_by_point, count),
            "Function.map serial": _per_point(lambda: serial(XT), count),
            "Function.map thread, every core": _per_point(lambda: threaded(XT), count)}, \
        total


METRICS = {f"{what} (n = {n})": "us/point" for n in SIZES for what in (
    "map, 1 thread", "map, every core", "loop of F.grad", "buffer API, a call per point",
    "Function.map serial", "Function.map thread, every core")}


@problem("map", METRICS, size=lambda cfg: "Rosenbrock gradient, n = 10 and 1000, "
         f"{1000 if cfg.quick else 10_000} points",
         note="map: a recording's gradient at many points in one call "
              "(F.map), one thread and every core, against a Python loop "
              "of F.grad; CasADi's gradient Function point by point and by "
              "Function.map, serial and threaded.")
def map_points(backend, cfg):
    run = {"pyautodiff": _pyautodiff, "casadi": _casadi}.get(backend.name)
    if run is None:
        raise Unsupported("no batched evaluation here")
    samples, check = {}, {}
    for n in SIZES:
        times, total = run(_points(n, cfg))
        for what, t in times.items():
            samples[f"{what} (n = {n})"] = [t]
        check[f"sum of the gradients (n = {n})"] = total
    return Result(samples, check)
