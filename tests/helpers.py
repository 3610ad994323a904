"""Shared test helpers: central differences, and the forward-mode oracle."""
from bench.dual import Dual, dual_grad  # noqa: F401  (re-exported for tests)


def central_diff(f, xs, h=1e-6):
    """d f / d xs[k] for every k by central differences (f takes floats)."""
    grads = []
    for k in range(len(xs)):
        step = h * max(1.0, abs(xs[k]))
        up = list(xs)
        down = list(xs)
        up[k] += step
        down[k] -= step
        grads.append((f(*up) - f(*down)) / (2 * step))
    return grads
