"""The tour ``python -m pyautodiff`` runs.

1. The moons demo: micrograd's classic MLP trained on two half moons with
   ``pyautodiff.micrograd``, then the same training step timed on the
   pure-Python reference engine (``pyautodiff.testing.pure``, part of the
   package, so the comparison is the same from any directory).  The
   training code is written once, against micrograd's API, and takes the
   engine (a Value class and an MLP class) as arguments.
2. Optimization: the Rosenbrock function in 100 dimensions, written with
   NumPy, recorded once and minimized by the built-in L-BFGS in C; then its
   exact Hessian at the minimum, and the replayed gradient against a fresh
   trace of the same function.
"""
import random
import time

from .datasets import make_moons
from .micrograd import engine, nn
from .testing import pure


def moons_loss(model, Value, X, y, alpha=1e-4):
    """micrograd's demo loss: mean max-margin loss plus alpha * L2, and the
    accuracy of the current scores."""
    inputs = [[Value(a), Value(b)] for a, b in X]
    scores = [model(row) for row in inputs]
    losses = [(1 + -yi * si).relu() for yi, si in zip(y, scores)]
    data_loss = sum(losses) * (1.0 / len(losses))
    reg_loss = alpha * sum(p * p for p in model.parameters())
    accuracy = sum((yi > 0) == (si.data > 0) for yi, si in zip(y, scores)) / len(y)
    return data_loss + reg_loss, accuracy


def train_step(model, Value, X, y, lr):
    """One step: loss, zero_grad, backward, SGD.  Returns (loss, accuracy)."""
    loss, accuracy = moons_loss(model, Value, X, y)
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data -= lr * p.grad
    return loss.data, accuracy


def make_model(MLP, seed=1337):
    random.seed(seed)            # micrograd's demo seeds the global generator
    return MLP(2, [16, 16, 1])


def time_steps(Value, MLP, X, y, steps):
    """Seconds per training step (median of `steps`)."""
    model = make_model(MLP)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        train_step(model, Value, X, y, lr=0.1)
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def rosenbrock(x):
    """The Rosenbrock function in len(x) dimensions, in plain NumPy."""
    import numpy as np
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def optimization_demo(n=100, out=print):
    """Minimize Rosenbrock from zeros with the built-in L-BFGS, report its
    progress, the Hessian at the minimum and the cost of a replay.  Returns
    the result."""
    import numpy as np

    import pyautodiff as ad

    out(f"\nMinimizing the Rosenbrock function in {n} dimensions from zeros "
        "(recorded once, L-BFGS in C)")
    progress = []

    def report(x):
        progress.append(x)
        k = len(progress)
        if k % 50 == 0:
            out(f"  iteration {k:3d}  f {rosenbrock(x):.3e}")
    t0 = time.perf_counter()
    res = ad.minimize(rosenbrock, np.zeros(n), method="lbfgs", callback=report)
    elapsed = time.perf_counter() - t0
    out(f"{res.message}: f = {res.fun:.2e} at max |x - 1| = "
        f"{np.abs(res.x - 1).max():.1e} after {res.nit} iterations, "
        f"{res.nfev} evaluations ({1e3 * elapsed:.0f} ms)")
    H = ad.hessian(rosenbrock)(res.x)
    eig = np.linalg.eigvalsh(H)
    out(f"Exact Hessian at the minimum: {H.shape}, eigenvalues from "
        f"{eig[0]:.3g} to {eig[-1]:.4g} (positive: a minimum)")
    F = ad.record(rosenbrock, res.x)
    x = np.linspace(-1.0, 1.5, n)
    replay = _best_time(lambda: F.grad(x))
    fresh = _best_time(lambda: ad.grad(rosenbrock)(x))
    out(f"A gradient: {1e6 * replay:.0f} us replayed, {1e6 * fresh:.0f} us "
        f"traced afresh ({len(F)} tape entries)")
    return res


def _best_time(fn, repeat=20):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def tour(out=print):
    """The moons demo, then the optimization demo."""
    accuracy = main(out=out)
    optimization_demo(out=out)
    return accuracy


def main(steps=100, compare_steps=5, out=print):
    X, y = make_moons(n=100, noise=0.1)
    model = make_model(nn.MLP)
    out(f"Training micrograd's moons MLP {[2, 16, 16, 1]} "
        f"({len(model.parameters())} parameters) on {len(X)} points "
        "with pyautodiff")
    t0 = time.perf_counter()
    for k in range(steps):
        loss, accuracy = train_step(model, engine.Value, X, y, lr=1.0 - 0.9 * k / steps)
        if k % 10 == 0 or k == steps - 1:
            out(f"  step {k:3d}  loss {loss:.4f}  accuracy {accuracy:.0%}")
    elapsed = time.perf_counter() - t0
    out(f"Final accuracy {accuracy:.0%} after {steps} steps "
        f"({elapsed:.2f} s, {1e3 * elapsed / steps:.1f} ms/step)")

    ours = time_steps(engine.Value, nn.MLP, X, y, compare_steps)
    theirs = time_steps(pure.Value, pure.MLP, X, y, compare_steps)
    out(f"One training step: pyautodiff {1e3 * ours:.1f} ms, the pure-Python "
        f"reference engine (pyautodiff.testing.pure) {1e3 * theirs:.1f} ms: "
        f"{theirs / ours:.1f}x faster")
    return accuracy


if __name__ == "__main__":          # python -m pyautodiff.demo, as python -m pyautodiff
    tour()
