"""Shared test helpers: central differences, the forward-mode oracle, and
which C ops the oracle table covers."""
import os

import numpy as np

from pyautodiff.testing.dual import Dual, dual_grad  # noqa: F401  (re-exported for tests)
from pyautodiff.testing.rules import RULES

# The fuzz tests' profile: how many random programs or hypothesis examples
# they run.  The README's test command (and CI) runs the short one;
# PYAUTODIFF_FUZZ=long runs ten times as many (docs/reliability.md).
FUZZ_PROFILE = os.environ.get("PYAUTODIFF_FUZZ", "short")
if FUZZ_PROFILE not in ("short", "long"):
    raise ValueError(f"PYAUTODIFF_FUZZ={FUZZ_PROFILE!r}: 'short' (the default) or 'long'")


def fuzz_size(short, long=None):
    """The number of programs (or examples) of a fuzz test in this profile:
    long, if not given, is ten times short."""
    if FUZZ_PROFILE == "long":
        return 10 * short if long is None else long
    return short

# The C ops that are not elementwise, so no row of the oracle table
# (pyautodiff/testing/rules.py) is theirs, and what checks each instead
# (the array reference is pyautodiff/testing/arrays.py).
NOT_ELEMENTWISE = {
    "LEAF": "an input: nothing to differentiate",
    "SUM": "the reference's sum and mean",
    "MAX": "the reference's max",
    "MIN": "the reference's min",
    "RESHAPE": "the reference's reshape, expand_dims and squeeze",
    "GATHER": "the reference's indexing and transpose",
    "SCATTER": "the reference's concatenate and stack",
    "EXTERN": "the reference's matmul; custom ops (the fuzzers') as rows composed",
    "LSE": "the reference's logsumexp, softmax and log_softmax",
    "PROD": "products of the other elements by hand and autograd's "
            "(tests/test_methods.py, test_second_order_externs.py)",
    # no derivative, and values NumPy's: tests/test_traced.py,
    # test_any_order.py and test_nondifferentiable.py check them
    "FLOOR": "piecewise constant: NumPy's floor", "CEIL": "piecewise constant: NumPy's ceil",
    "TRUNC": "piecewise constant: NumPy's trunc", "RINT": "piecewise constant: NumPy's rint",
    "SIGN": "piecewise constant: NumPy's sign", "STOP": "the identity, with no derivative",
}
# The rows' C ops that the scalar tests and fuzzers do not draw on Values
# (np.maximum and np.minimum of two Values record theirs; tests/test_ops.py
# checks them on Arrays) ...
ARRAY_ONLY_OPS = {"MAXIMUM", "MINIMUM", "SELECT", "SQUARE"}
# ... or record only as guards of ad.record (tests/test_record.py)
COMPARISON_OPS = {"LT", "LE", "EQ", "NE"}
# ... or only nested derivatives' rules record (pyautodiff/derivatives.py:
# tests/test_ops.py and tests/test_any_order.py test it; the nested fuzzer
# records it in every program of order two or more)
DERIVATIVE_ONLY_OPS = {"TIMES"}
# no derivative and no oracle row (NOT_ELEMENTWISE): the step functions
# and stop_gradient, which the fuzzers do not draw
STEP_OPS = {"FLOOR", "CEIL", "TRUNC", "RINT", "SIGN", "STOP"}
# the C ops of the rows that Values record
VALUE_OPS = {name.upper() for name in RULES} - ARRAY_ONLY_OPS - COMPARISON_OPS \
    - DERIVATIVE_ONLY_OPS


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


def same_rows(got, want):
    """got equals want bit for bit (NaN matching NaN), tuples member by
    member: what F.map's rows must be against the single calls."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same_rows(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.array_equal(got, want, equal_nan=True)
