"""Minimize the n-dimensional Rosenbrock function from x = 0 to its minimum
at x = 1 twice, with scipy's L-BFGS-B driven by ad.minimize and with the
built-in L-BFGS that runs entirely in C (method='lbfgs').

    python examples/rosenbrock.py [--n 1000]

f is plain NumPy code; ad.minimize records it once and every evaluation
of f and its gradient is a replay of that recording in C.
"""
import argparse
import time

import numpy as np

import pyautodiff as ad


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="dimensions")
    args = ap.parse_args(argv)

    x0 = np.zeros(args.n)
    results = {}
    for method in ("L-BFGS-B", "lbfgs"):
        try:
            t0 = time.perf_counter()
            res = ad.minimize(rosenbrock, x0, method=method)
            seconds = time.perf_counter() - t0
        except ImportError as exc:          # scipy is optional
            print(f"{method:9s} skipped: {exc}")
            continue
        results[method] = res
        print(f"{method:9s} f = {res.fun:.3e}  max |x - 1| = "
              f"{np.abs(res.x - 1.0).max():.2e}  {res.nit} iterations, "
              f"{res.nfev} evaluations, {seconds:.2f} s  ({res.message})")
    return results


if __name__ == "__main__":
    main()
