"""Logistic regression by Newton-CG with exact Hessian-vector products.

    python examples/logistic_newton.py [--samples 2000] [--features 20]

The loss is written once, in NumPy; ad.minimize records it and hands
scipy's Newton-CG the value and gradient from one C replay, and each
Hessian-vector product from a forward-mode sweep followed by a
second-order reverse sweep: exact, with no finite differences and no
n x n Hessian.  The check compares the gradient at the solution with the
gradient written out by hand, and the solution with the one scipy finds
with that hand-written gradient.
"""
import argparse

import numpy as np

import pyautodiff as ad


def make_data(samples, features, seed=0):
    """Points with Gaussian features, labelled 0/1 by a noisy linear rule."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(samples, features))
    w_true = rng.normal(size=features)
    p = 1.0 / (1.0 + np.exp(-(X @ w_true)))
    y = (rng.uniform(size=samples) < p).astype(float)
    return X, y


def loss(w, X, y, lam):
    """Mean logistic loss with an L2 penalty: the mean over the samples of
    log(1 + e^z) - y z, z = X w, plus lam/2 |w|^2."""
    z = X @ w
    return np.mean(np.log(1.0 + np.exp(z)) - y * z) + 0.5 * lam * np.sum(w ** 2)


def loss_and_grad_by_hand(w, X, y, lam):
    """The same loss and its gradient, X^T (sigmoid(z) - y) / m + lam w."""
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return loss(w, X, y, lam), X.T @ (p - y) / len(y) + lam * w


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--lam", type=float, default=1e-2, help="L2 penalty")
    args = ap.parse_args(argv)

    import scipy.optimize               # optional: pip install pyautodiff[scipy]

    X, y = make_data(args.samples, args.features)
    w0 = np.zeros(args.features)
    res = ad.minimize(lambda w: loss(w, X, y, args.lam), w0,
                      method="Newton-CG", tol=1e-10)
    print(f"Newton-CG: loss {res.fun:.10f} in {res.nit} iterations, "
          f"{res.nfev} evaluations, {res.nhev} Hessian-vector products "
          f"({res.message})")

    # the check: scipy with the hand-written gradient, and that gradient
    ref = scipy.optimize.minimize(loss_and_grad_by_hand, w0, jac=True,
                                  args=(X, y, args.lam), method="BFGS",
                                  options={"gtol": 1e-10})
    _, grad = loss_and_grad_by_hand(res.x, X, y, args.lam)
    gap = np.abs(res.x - ref.x).max()
    print(f"hand-written gradient at the solution: max |g| = "
          f"{np.abs(grad).max():.1e}")
    print(f"scipy BFGS with that gradient: loss {ref.fun:.10f}, "
          f"max |w - w_bfgs| = {gap:.1e}")
    accuracy = np.mean((X @ res.x > 0) == (y == 1))
    print(f"training accuracy {accuracy:.3f}")
    return res, ref


if __name__ == "__main__":
    main()
