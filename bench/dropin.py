"""An autograd program, unchanged, under autograd and under the drop-in.

The program is written once against autograd's API (``grad`` and
``autograd.numpy``) and given either package: logistic regression trained
by gradient descent, the example autograd's README opens with, at a size
where the arrays matter (1,000 points, 20 features, 50 steps).
"""
import time

import numpy as np

from bench.registry import Result, Unsupported, problem

STEPS = 50


def train(grad, anp, X, y):
    def sigmoid(z):
        return 0.5 * (anp.tanh(z / 2.0) + 1.0)

    def loss(w):
        p = sigmoid(anp.dot(X, w))
        return -anp.sum(anp.log(p * y + (1.0 - p) * (1.0 - y)))

    w = np.zeros(X.shape[1])
    step = grad(loss)
    for _ in range(STEPS):
        w = w - 1e-3 * step(w)
    return loss(w), w


def packages(backend):
    """(autograd or pyautodiff.autograd, its numpy) for these backends."""
    if backend.name == "autograd":
        import autograd
        import autograd.numpy as anp
        return autograd, anp
    if backend.name == "pyautodiff":
        import pyautodiff.autograd as pag
        import pyautodiff.autograd.numpy as pnp
        return pag, pnp
    raise Unsupported("not autograd or its drop-in")


@problem("autograd-program", {"train": "ms"},
         size=lambda cfg: f"logistic regression, {STEPS} steps",
         note="autograd-program: one autograd program (gradient descent on a "
              "logistic regression, 1,000 x 20) run unchanged with autograd and "
              "with pyautodiff.autograd; only the imports differ.")
def autograd_program(backend, cfg):
    G, anp = packages(backend)
    grad = G.grad
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 20))
    y = (X @ rng.normal(size=20) + 0.3 * rng.normal(size=1000) > 0).astype(float)
    t0 = time.perf_counter_ns()
    loss, w = train(grad, anp, X, y)
    ns = time.perf_counter_ns() - t0
    return Result({"train": [ns / 1e6]}, {"loss": float(loss), "|w|": float(np.abs(w).sum())})
