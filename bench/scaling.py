"""Speed-up against threads and Dask workers: the plot of the docs' page
"From one core to a cluster".

``python -m bench.scaling [--quick] [--svg PATH]``

Threads: ``F.map(X, method="grad", threads=k)`` for k = 1 .. the cores
this process may use, on two workloads of the issue's figures: 10^4
points of a scalar tape of 10^4 entries, and of Rosenbrock's function at
n = 1000 (an array tape).  Workers: ``pyautodiff.dask.minimize_many``, 64
starts (16 with --quick) of L-BFGS on Rosenbrock n = 100, four to a task,
on a ``LocalCluster`` of k single-threaded worker processes (skipped
without ``dask[distributed]``).  The speed-ups are against one thread and
one worker in the same run.  The plot is written as SVG, with no plotting
library needed.
"""
import argparse
import os
import time

import numpy as np

import pyautodiff as ad


def cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1


def best_of(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def scalar_chain(a, b):
    """A scalar tape of some 10^4 entries (three an iteration)."""
    y = a
    for _ in range(3333):
        y = np.sin(y) * b + 0.5
    return y


def thread_series(quick):
    """{workload: [(threads, seconds)]}."""
    count = 1000 if quick else 10_000
    rng = np.random.default_rng(0)
    out = {}
    A, B = rng.uniform(0.1, 1.0, count), rng.uniform(0.1, 1.0, count)
    F = ad.record(scalar_chain, 0.3, 0.7)
    out["scalar tape, 10^4 entries"] = [
        (k, best_of(lambda: F.map(A, B, method="grad", threads=k)))
        for k in range(1, cores() + 1)]
    X = rng.uniform(-1.0, 2.0, (count, 1000))
    G = ad.record(rosen, X[0])
    out["Rosenbrock n = 1000"] = [
        (k, best_of(lambda: G.map(X, method="grad", threads=k)))
        for k in range(1, cores() + 1)]
    return out


def worker_series(quick):
    """(starts, [(workers, seconds)]); None without Dask.  Every count of
    workers, one included, runs the same tasks on a LocalCluster of
    single-threaded worker processes (so BLAS is single-threaded on each
    side, as a serial loop in this process would not be)."""
    try:
        from distributed import Client, LocalCluster
        from pyautodiff import dask as addask
    except ImportError:
        return None
    starts = np.random.default_rng(1).uniform(-2.0, 2.0, (16 if quick else 64, 100))
    series = []
    for k in range(1, cores() + 1):
        with LocalCluster(n_workers=k, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            run = lambda: addask.minimize_many(                # noqa: E731
                rosen, starts, method="L-BFGS-B", client=client, starts_per_task=4)
            run()                       # the workers warmed, the recording sent
            series.append((k, best_of(run, 2)))
    return len(starts), series


def svg(curves, path, title):
    """A line plot of speed-up against k for each curve ({label: [(k,
    speed-up)]}), with the ideal k as a dashed line."""
    width, height, pad = 560, 360, 50
    kmax = max(k for pts in curves.values() for k, _ in pts)
    smax = max([kmax] + [s for pts in curves.values() for _, s in pts]) * 1.1

    def xy(k, s):
        return (pad + (k - 1) / max(kmax - 1, 1) * (width - 2 * pad),
                height - pad - s / smax * (height - 2 * pad))
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="sans-serif" font-size="12">',
             f'<text x="{width / 2}" y="20" text-anchor="middle">{title}</text>',
             f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
             'stroke="black"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="black"/>',
             f'<text x="{width / 2}" y="{height - 12}" text-anchor="middle">'
             'threads (F.map) or worker processes (pyautodiff.dask)</text>',
             f'<text x="14" y="{height / 2}" transform="rotate(-90 14 {height / 2})" '
             'text-anchor="middle">speed-up</text>']
    for k in range(1, kmax + 1):
        x, y = xy(k, 0)
        parts.append(f'<text x="{x}" y="{y + 16}" text-anchor="middle">{k}</text>')
    for s in range(0, int(smax) + 1):
        x, y = xy(1, s)
        parts.append(f'<text x="{x - 8}" y="{y + 4}" text-anchor="end">{s}</text>')
    (x0, y0), (x1, y1) = xy(1, 1), xy(kmax, kmax)
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" stroke="grey" '
                 'stroke-dasharray="4 4"/>')
    for n, (label, pts) in enumerate(curves.items()):
        colour = colours[n % len(colours)]
        line = " ".join("%.1f,%.1f" % xy(k, s) for k, s in pts)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" '
                     'stroke-width="2"/>')
        for k, s in pts:
            x, y = xy(k, s)
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
        parts.append(f'<text x="{pad + 10}" y="{pad + 16 * n}" fill="{colour}">{label}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer points and starts")
    parser.add_argument("--svg", default=None, help="write the plot here")
    args = parser.parse_args(argv)
    curves = {}
    print(f"{cores()} cores; times are the best of three\n")
    print("| workload | threads or workers | time (s) | speed-up |")
    print("|---|--:|--:|--:|")
    for label, pts in thread_series(args.quick).items():
        base = pts[0][1]
        for k, t in pts:
            print(f"| F.map grad, {label} | {k} threads | {t:.3f} | {base / t:.2f}x |")
        curves[f"F.map, {label}"] = [(k, base / t) for k, t in pts]
    workers = worker_series(args.quick)
    if workers is None:
        print("\n(pyautodiff.dask: not run, dask[distributed] is not importable)")
    else:
        starts, workers = workers
        what = f"{starts} L-BFGS starts, Rosenbrock n = 100"
        base = workers[0][1]
        for k, t in workers:
            print(f"| {what} | {k} worker{'s' if k > 1 else ''} | {t:.3f} | {base / t:.2f}x |")
        curves[f"pyautodiff.dask, {starts} starts"] = [(k, base / t) for k, t in workers]
    if args.svg:
        svg(curves, args.svg, f"Speed-up on {cores()} cores")
        print(f"\nplot: {args.svg}")


if __name__ == "__main__":
    main()
