"""A hanging chain by constrained minimization with exact sparse derivatives, checked against the catenary.

    python examples/hanging_chain.py [--links 400] [--length 1.5] [--method ipopt]

A chain of equal links hangs between (0, 0) and (1, 0).  Its shape
minimizes the potential energy (the sum of the links' mid-heights) with one
equality constraint per link: its length.  Each constraint couples two
neighbouring points, so the constraints' Jacobian has four nonzeros per
row and the Lagrangian's Hessian is banded; ad.minimize records the energy
and the constraints once, finds those patterns and colours them, and hands
the solver the exact sparse derivatives ('ipopt' when an IPOPT library is
installed, else scipy's 'trust-constr').  As the links get short the
chain's shape tends to the catenary y = a cosh((x - 1/2) / a) - a cosh(1 /
(2a)), whose a is fixed by the length, 2a sinh(1 / (2a)) = L: the check is
the largest distance between the chain's points and that curve.
"""
import argparse
import time

import numpy as np

import pyautodiff as ad


def unpack(z, n):
    """The chain's points, ends included, from the n - 1 free ones."""
    x = np.concatenate([[0.0], z[:n - 1], [1.0]])
    y = np.concatenate([[0.0], z[n - 1:], [0.0]])
    return x, y


def energy(z, n):
    _, y = unpack(z, n)
    return np.sum(y[:-1] + y[1:]) / 2


def link_lengths(z, n, link):
    """Each link's squared length less the one it must have (= 0)."""
    x, y = unpack(z, n)
    return (x[1:] - x[:-1]) ** 2 + (y[1:] - y[:-1]) ** 2 - link ** 2


def catenary(length):
    """y(x) of the catenary of this length through (0, 0) and (1, 0)."""
    lo, hi = 1e-3, 1e3        # 2a sinh(1/(2a)) falls from inf to 1 as a grows
    for _ in range(200):
        a = np.sqrt(lo * hi)
        lo, hi = (a, hi) if 2 * a * np.sinh(1 / (2 * a)) > length else (lo, a)
    return lambda x: a * np.cosh((x - 0.5) / a) - a * np.cosh(0.5 / a)


def start(n, length):
    """Evenly spaced x, and a parabola about as long as the chain."""
    t = np.linspace(0, 1, n + 1)[1:-1]
    sag = np.sqrt(3 * (length - 1) / 8)       # a parabola's length, to first order
    return np.concatenate([t, -4 * sag * t * (1 - t)])


def method_available():
    try:
        from pyautodiff.ipopt_library import load
        load()
        return "ipopt"
    except ImportError:
        return "trust-constr"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=400)
    parser.add_argument("--length", type=float, default=1.5)
    parser.add_argument("--method", default=None,
                        help="'ipopt' or 'trust-constr' (default: ipopt if installed)")
    args = parser.parse_args(argv)
    n, link = args.links, args.length / args.links
    method = args.method or method_available()
    z0 = start(n, args.length)

    J = ad.jacobian_sparsity(lambda z: link_lengths(z, n, link))(z0)
    print(f"{n} links, {z0.size} unknowns: the constraints' Jacobian is "
          f"{J.shape[0]} x {J.shape[1]} with {J.nnz} nonzeros")
    t0 = time.perf_counter()
    res = ad.minimize(lambda z: energy(z, n), z0, method=method,
                      constraints={"type": "eq",
                                   "fun": lambda z: link_lengths(z, n, link)})
    seconds = time.perf_counter() - t0
    x, y = unpack(res.x, n)
    gap = float(np.max(np.abs(y - catenary(args.length)(x))))
    worst = float(np.max(np.abs(link_lengths(res.x, n, link))))
    print(f"{method}: {res.message} ({res.nit} iterations, {seconds:.2f} s)")
    print(f"energy (the links' mid-heights summed) {res.fun:.6f}, lowest point {y.min():.6f}, links' length "
          f"error {worst:.1e}")
    print(f"largest distance from the catenary: {gap:.2e}")
    return res, gap


if __name__ == "__main__":
    main()
