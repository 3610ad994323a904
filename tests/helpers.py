"""Shared test helpers: central differences, and the forward-mode oracle."""
import numpy as np

from pyautodiff.testing.dual import Dual, dual_grad  # noqa: F401  (re-exported for tests)

# Ops that scalar Values never record: array reductions, reshapes, gathers,
# choices, and extern entries; tests/test_array.py walks them.
ARRAY_ONLY_OPS = {"SUM", "MAX", "MIN", "RESHAPE", "GATHER", "SCATTER",
                  "MAXIMUM", "MINIMUM", "SELECT", "EXTERN", "SQUARE", "LSE"}
# recorded for Values only as guards of ad.record (tests/test_record.py)
COMPARISON_OPS = {"LT", "LE", "EQ", "NE"}


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


def numeric_grad(f, arrays, k, h=1e-6):
    """d f / d arrays[k], elementwise, by central differences."""
    x = arrays[k]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up = [a.copy() for a in arrays]
        down = [a.copy() for a in arrays]
        up[k][idx] += h
        down[k][idx] -= h
        g[idx] = (f(*up) - f(*down)) / (2 * h)
    return g
