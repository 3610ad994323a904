"""Comparison masks: 1.0/0.0 entries that take no gradient, mixed with
Values, Arrays, ndarrays and floats on either side, then reduced, combined
and differentiated every way the package can (backward, ad.grad,
ad.hessian, ad.record).  Oracles: NumPy's comparisons and central
differences of the same function with the mask held fixed (a mask is
piecewise constant: its derivative is zero)."""
import itertools
import operator

import numpy as np
import pytest

import pyautodiff as ad
import pyautodiff.autograd as ag
import pyautodiff.autograd.numpy as anp
from helpers import numeric_grad


def test_a_sum_of_a_mask_differentiates_to_zero():
    f = lambda x, y: np.sum(x <= y) + 0.0              # noqa: E731
    assert ad.grad(f)(2.0, np.array([1.0, 3.0])) == 0.0
    assert ag.grad(lambda x, y: anp.sum(x <= y) + 0.0)(2.0, np.array([1.0, 3.0])) == 0.0
    y = ad.Array([1.0, 3.0])
    s = (y >= 2.0).sum()
    s.backward()
    np.testing.assert_array_equal(y.grad, [0.0, 0.0])
    assert s.grad == 1.0                                # the seed's own


def test_every_reduction_and_reshape_of_a_mask_backpropagates_nothing():
    y = ad.Array([[1.0, 3.0], [2.0, 0.5]])
    for reduce in (lambda m: m.sum(), lambda m: m.mean(), lambda m: m.max(),
                   lambda m: m.min(), lambda m: ad.logsumexp(m),
                   lambda m: m.reshape(4)[1:].sum(), lambda m: m.T[0].sum(),
                   lambda m: m[np.array([0, 0, 1])].sum(),
                   lambda m: ad.concatenate([m, m]).sum()):
        out = reduce(y > 1.0)
        out.backward()
        np.testing.assert_array_equal(y.grad, np.zeros((2, 2)))


def test_anomaly_mode_checks_only_the_operands_that_take_gradients():
    x = ad.Array([1.0, 3.0])
    with ad.detect_anomaly():
        (x * np.array([2.0, 3.0])).sum().backward()
        ((x < 2.0) * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 3.0])


# -- every combination, at random ---------------------------------------------

# The function's inputs: s a float (a Value when traced), v an array, z a
# 0-d array; c and C are constants, a float and an ndarray.
S, V, Z = 1.0, np.array([[1.0, 2.0, 3.0], [0.5, 1.0, 2.5]]), np.array(2.0)
C_FLOAT, C_ARRAY = 2.0, np.array([2.0, 1.0, 3.0])
OPERANDS = {"s": lambda s, v, z: s, "v": lambda s, v, z: v,
            "z": lambda s, v, z: z, "c": lambda s, v, z: C_FLOAT,
            "C": lambda s, v, z: C_ARRAY}
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt,
           ">=": operator.ge, "np.less": np.less,
           "np.less_equal": np.less_equal, "np.greater": np.greater,
           "np.greater_equal": np.greater_equal, "np.equal": np.equal,
           "np.not_equal": np.not_equal}
# what is done with mask m: reductions and arithmetic, all polynomials of
# degree two at most in the inputs (their Hessians are exact)
AFTER = {
    "sum": lambda m, s, v, z: np.sum(m) + 0.0,
    "mean": lambda m, s, v, z: np.mean(m) + 0.0,
    "max * s": lambda m, s, v, z: np.max(m) * s,
    "sum axis 0": lambda m, s, v, z: np.sum(np.sum(m, axis=0) * v),
    "m + v": lambda m, s, v, z: np.sum(m + v),
    "m * v * s": lambda m, s, v, z: np.sum(m * v * s),
    "m * m * z": lambda m, s, v, z: np.sum(m * m * z),
    "v ** 2 * m": lambda m, s, v, z: np.sum(v ** 2 * m),
    "where": lambda m, s, v, z: np.sum(np.where(m, v * s, z * v)),
    "sum(m) * s * z": lambda m, s, v, z: np.sum(m) * s * z,
}
TRACED = ("s", "v", "z")
COMBINATIONS = [(op, left, right, after)
                for op, left, right, after in itertools.product(
                    COMPARE, OPERANDS, OPERANDS, AFTER)
                # a mask needs an array side and a traced one (a Value
                # compared with a number is a Python bool)
                if {left, right} & {"v", "z", "C"} and {left, right} & set(TRACED)]
PICKED = [COMBINATIONS[k] for k in
          np.random.default_rng(0).choice(len(COMBINATIONS), 60, replace=False)]


def _function(op, left, right, after, fixed_mask=None):
    def f(s, v, z):
        m = COMPARE[op](OPERANDS[left](s, v, z), OPERANDS[right](s, v, z))
        return AFTER[after](m if fixed_mask is None else fixed_mask, s, v, z)
    return f


def _oracle(op, left, right, after, s, v, z):
    """NumPy's value, and the gradient and Hessian (in v) of the function
    with its mask fixed at these inputs, by central differences."""
    mask = COMPARE[op](OPERANDS[left](s, v, z), OPERANDS[right](s, v, z))
    fixed = _function(op, left, right, after, np.asarray(mask, dtype=float))
    flat = lambda s, v, z: float(fixed(float(s), v, z))    # noqa: E731
    args = [np.array(s), v.copy(), z.copy()]
    grads = [numeric_grad(flat, args, k) for k in range(3)]
    # (steps of 1e-3: central differences of a quadratic are exact, and
    # the rounding error of differences of differences stays small)
    hess = np.zeros(v.shape + v.shape)
    for idx in np.ndindex(v.shape):
        up, down = v.copy(), v.copy()
        up[idx] += 1e-3
        down[idx] -= 1e-3
        hess[(Ellipsis,) + idx] = (numeric_grad(flat, [args[0], up, z], 1, 1e-3) -
                                   numeric_grad(flat, [args[0], down, z], 1, 1e-3)) / 2e-3
    value = _function(op, left, right, after)(s, v, z)
    return value, grads, hess


@pytest.mark.parametrize("op, left, right, after", PICKED)
def test_masks_of_any_operands_differentiate_every_way(op, left, right, after):
    f = _function(op, left, right, after)
    value, grads, hess = _oracle(op, left, right, after, S, V, Z)
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)  # noqa: E731

    # backward from Values and Arrays made by hand
    s, v, z = ad.Value(S), ad.Array(V), ad.Array(Z)
    out = f(s, v, z)
    close(out.data, value)
    out.backward()
    for got, want in zip((s.grad, v.grad, z.grad), grads):
        close(got, want)

    # the functional API, and the autograd drop-in
    for got, want in zip(ad.grad(f, argnum=(0, 1, 2))(S, V, Z), grads):
        close(got, want)
    close(ag.grad(f, 1)(S, V, Z), grads[1])
    close(ad.hessian(f, argnum=1)(S, V, Z), hess)

    # recorded once, replayed at inputs where the masks differ
    F = ad.record(f, S, V, Z, argnum=(0, 1, 2))
    for s2, v2, z2 in ((S, V, Z), (2.5, V[::-1] * 1.5, np.array(0.75))):
        value2, grads2, _ = _oracle(op, left, right, after, s2, v2, z2)
        close(F(s2, v2, z2), value2)
        for got, want in zip(F.grad(s2, v2, z2), grads2):
            close(got, want)
