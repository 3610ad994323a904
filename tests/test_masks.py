"""Comparison masks (< <= > >= == != and NumPy's comparison ufuncs):
1.0/0.0 entries that take no gradient, mixed with Values, Arrays, ndarrays
and floats on either side, then reduced, combined and differentiated every
way the package can (backward, ad.grad, ad.jacobian, ad.jvp, ad.hvp,
ad.hessian, ad.record).  Oracles: NumPy's comparisons and central
differences of the same function with the mask held fixed (a mask is
piecewise constant: its derivative is zero)."""
import itertools
import operator

import numpy as np
import pytest

import autograd
import autograd.numpy as hips_np
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
           ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
           "np.less": np.less,
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
    close(ad.jacobian(f, argnum=1)(S, V, Z), grads[1])
    direction = np.arange(1.0, 7.0).reshape(V.shape)
    value_jvp, tangent = ad.jvp(f, argnum=1)(S, V, Z, direction)
    close(value_jvp, value)
    close(tangent, np.sum(grads[1] * direction))
    close(ad.hvp(f, argnum=1)(S, V, Z, direction),
          np.tensordot(hess, direction, axes=2))

    # recorded once, replayed at inputs where the masks differ
    F = ad.record(f, S, V, Z, argnum=(0, 1, 2))
    for s2, v2, z2 in ((S, V, Z), (2.5, V[::-1] * 1.5, np.array(0.75))):
        value2, grads2, _ = _oracle(op, left, right, after, s2, v2, z2)
        close(F(s2, v2, z2), value2)
        for got, want in zip(F.grad(s2, v2, z2), grads2):
            close(got, want)


# -- == and != are elementwise, as NumPy's ------------------------------------

def test_equality_is_an_elementwise_mask():
    a = ad.Array([0.0, 2.0, 0.0])
    for got, want in ((a == 0.0, [1, 0, 1]), (a != 0.0, [0, 1, 0]),
                      (0.0 == a, [1, 0, 1]), (a == a, [1, 1, 1]),
                      (a != np.array([0.0, 1.0, 1.0]), [0, 1, 1]),
                      (a == [0.0, 2.0, 1.0], [1, 1, 0]),
                      (np.equal(a, 2.0), [0, 1, 0]),
                      (np.not_equal(2.0, a), [1, 0, 1]),
                      (ad.Value(2.0) == a, [0, 1, 0]),
                      (a == ad.Value(2.0), [0, 1, 0]),
                      (ad.Value(2.0) != a, [1, 0, 1])):
        assert isinstance(got, ad.Array)
        np.testing.assert_array_equal(got.data, want)


def test_where_on_equality_has_numpys_gradient():
    f = lambda x: np.where(x == 0.0, 5 * x, x ** 2).sum()      # noqa: E731
    hips = autograd.grad(lambda x: hips_np.where(x == 0.0, 5 * x, x ** 2).sum())
    x = np.array([0.0, 2.0])
    np.testing.assert_array_equal(hips(x), [5.0, 4.0])
    np.testing.assert_array_equal(ad.grad(f)(x), hips(x))
    np.testing.assert_array_equal(ag.grad(f)(x), hips(x))
    g = lambda x: np.where(x != 0.0, x ** 2, 5 * x).sum()      # noqa: E731
    np.testing.assert_array_equal(ad.grad(g)(x), hips(x))


def test_arrays_are_unhashable_as_ndarrays_are():
    assert np.ndarray.__hash__ is None and ad.Array.__hash__ is None
    with pytest.raises(TypeError, match="unhashable"):
        {ad.Array([1.0]): 0}
    v = ad.Value(1.0)                  # a Value keeps micrograd's identity
    assert v != ad.Value(1.0) and v == v and {v: 0}[v] == 0


def test_equality_masks_index_choose_and_decide():
    a = ad.Array([0.0, 3.0, 0.0, 1.0])
    np.testing.assert_array_equal(a[a == 0.0].data, [0.0, 0.0])
    np.testing.assert_array_equal(a[a != 0.0].data, [3.0, 1.0])
    np.testing.assert_array_equal(((a == 0.0) * 2.0 + a).data, [2.0, 3.0, 2.0, 1.0])
    assert bool(a[1:2] == 3.0) and not bool(a[0:1] == 3.0)
    assert (a == 1.0).any() and not (a == 2.0).any()
    assert (a == a).all() and not (a != a).any()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a == 0.0)
    (a[a != 0.0] ** 2).sum().backward()
    np.testing.assert_array_equal(a.grad, [0.0, 6.0, 0.0, 2.0])


def test_equality_masks_are_guards_in_a_recording():
    def f(x):
        return (x[x == 0.0] + 1.0).sum() + x.sum()
    F = ad.record(f, np.array([0.0, 2.0, 3.0]))
    assert F(np.array([0.0, 5.0, 1.0])) == 7.0
    np.testing.assert_array_equal(F.grad(np.array([0.0, 5.0, 1.0])), [2.0, 1.0, 1.0])
    with pytest.raises(ad.BranchError, match="mask"):
        F(np.array([1.0, 2.0, 3.0]))
    G = ad.record(lambda x: x.sum() if (x == 1.0).any() else -x.sum(),
                  np.array([1.0, 2.0]))
    assert G(np.array([1.0, 5.0])) == 6.0
    with pytest.raises(ad.BranchError):
        G(np.array([3.0, 2.0]))


def test_equal_arrays_stay_distinct_parameters_and_imports():
    w, b = ad.Array([1.0, 2.0]), ad.Array([1.0, 2.0])  # equal values, two params
    opt = ad.optim.SGD([w, b], lr=0.5)
    (w * 3.0 + b).sum().backward()
    opt.step()
    np.testing.assert_array_equal(w.data, [-0.5, 0.5])
    np.testing.assert_array_equal(b.data, [0.5, 1.5])
    with pytest.raises(ValueError, match="same parameter twice"):
        ad.optim.Adam([w, b, w])

    class Two(ad.nn.Module):
        def __init__(self):
            self.first = ad.nn.Linear(2, 2, rng=0)
            self.again = [self.first, w]
            self.w, self.b = w, b
    params = Two().parameters()
    assert len(params) == 4 and params[2] is w and params[3] is b

    opt.zero_grad()
    with ad.Tape():                     # two equal Arrays imported, each once
        w.data = b.data
        (w * b + w).sum().backward()
    np.testing.assert_array_equal(w.grad, [1.5, 2.5])   # b + 1
    np.testing.assert_array_equal(b.grad, [0.5, 1.5])   # w


def test_arrays_in_pytrees_and_nested_derivatives():
    x = np.array([1.0, 2.0])            # one ndarray twice: two leaves
    f = lambda p: (p["a"] * p["b"][0] * (p["a"] == 1.0)).sum() + p["b"][1].sum()  # noqa: E731
    g = ad.grad(f)({"a": x, "b": [x, np.array([1.0, 1.0])]})
    np.testing.assert_array_equal(g["a"], [1.0, 0.0])
    np.testing.assert_array_equal(g["b"][0], [1.0, 0.0])
    np.testing.assert_array_equal(g["b"][1], [1.0, 1.0])
    jac = ad.jacobian(lambda x: {"m": x == 1.0, "y": x * 2.0})(x)
    np.testing.assert_array_equal(jac["m"], np.zeros((2, 2)))
    np.testing.assert_array_equal(jac["y"], 2.0 * np.eye(2))
    # a derivative inside a derivative imports the outer Arrays by identity
    h = ad.grad(lambda y: ad.grad(lambda z: (z * z * (z == 1.0)).sum())(y).sum())
    np.testing.assert_array_equal(h(np.array([1.0, 3.0])), [2.0, 0.0])
    # ... and the inner function may close over them
    np.testing.assert_array_equal(
        ad.grad(lambda y: ad.grad(lambda z: (z * y * y).sum())(y).sum())(x), 2 * x)
