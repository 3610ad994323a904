"""np.prod of an Array as one C reduction (PROD): values against NumPy, and
its derivatives -- in the C sweeps of a recording's replay (gradient,
Jacobian-vector and Hessian-vector products, Hessians, sparse ones, many
points at once) and nested to third order -- against the products of the
other elements written out by hand, exact where one, two or three
elements of a group are zero.  The operands are small dyadic numbers, so
every product by hand is exact and the comparisons are bit for bit."""
import itertools

import numpy as np
import pytest

import pyautodiff as ad

W = np.array([1.0, -2.0, 0.5])          # a weight per group (row)
ROWS = {                                # rows of x.reshape(3, 4) by zeros
    "none": [[0.5, 2.0, -1.5, 4.0], [1.5, -0.5, 2.0, 0.25], [3.0, 0.5, -2.0, 1.0]],
    "one": [[0.5, 0.0, -1.5, 4.0], [1.5, -0.5, 2.0, 0.0], [0.0, 0.5, -2.0, 1.0]],
    "two": [[0.0, 2.0, 0.0, 4.0], [1.5, 0.0, 2.0, 0.0], [3.0, 0.5, -2.0, 1.0]],
    "three": [[0.0, 0.0, -1.5, 0.0], [0.0, -0.5, 0.0, 0.25], [0.0, 0.0, 0.0, 0.0]],
}


def f(x):
    return np.sum(np.prod(x.reshape(3, 4), axis=1) * W)


def _others(row, skip):
    """The product of the row's elements but those at the indices skip (0.0
    where any index repeats: prod is linear in each element)."""
    if len(set(skip)) < len(skip):
        return 0.0
    return float(np.prod([v for k, v in enumerate(row) if k not in skip]))


def by_hand(rows, order):
    """The order-th derivative of f at the flattened rows, (12,) * order:
    W[r] times the product of the others of row r where every index lies
    in row r, else 0."""
    out = np.zeros((12,) * order)
    for idx in itertools.product(range(12), repeat=order):
        r = idx[0] // 4
        if all(i // 4 == r for i in idx):
            out[idx] = W[r] * _others(rows[r], [i % 4 for i in idx])
    return out


@pytest.mark.parametrize("zeros", sorted(ROWS))
def test_a_replay_is_exact_at_zeros_to_second_order(zeros):
    x0 = np.linspace(0.5, 1.6, 12)
    F = ad.record(f, x0)
    x = np.array(ROWS[zeros]).ravel()
    value, grad = F.value_and_grad(x)
    assert value == f(x)
    np.testing.assert_array_equal(grad, by_hand(ROWS[zeros], 1))
    H = by_hand(ROWS[zeros], 2)
    np.testing.assert_array_equal(F.hessian(x), H)
    V = np.eye(12)[[0, 5, 11]] + 0.5 * np.eye(12)[[1, 6, 8]]
    for v in V:
        np.testing.assert_array_equal(F.hvp(x, v), H @ v)
        np.testing.assert_array_equal(ad.jvp(f)(x, v)[1], grad @ v)
    np.testing.assert_array_equal(F.sparse_hessian(x).toarray(), H)
    X = np.stack([x, x[::-1].copy(), np.array(ROWS["one"]).ravel()])
    np.testing.assert_array_equal(F.map(X, method="grad", threads=2)[0], grad)
    np.testing.assert_array_equal(F.map(X, method="hessian", threads=2)[0], H)


@pytest.mark.parametrize("zeros", ["none", "one", "two", "three"])
def test_nested_derivatives_are_exact_at_zeros_to_third_order(zeros):
    x = np.array(ROWS[zeros]).ravel()
    np.testing.assert_array_equal(ad.jacobian(ad.grad(f))(x), by_hand(ROWS[zeros], 2))
    np.testing.assert_array_equal(ad.jacobian(ad.hessian(f))(x), by_hand(ROWS[zeros], 3))
    # a recorded gradient program replays its rules in C at other points
    G = ad.record(ad.grad(f), np.linspace(0.5, 1.6, 12))
    np.testing.assert_array_equal(G(x), by_hand(ROWS[zeros], 1))
    np.testing.assert_array_equal(G.jacobian(x), by_hand(ROWS[zeros], 2))


CASES = [((3, 4), None, False), ((3, 4), 0, False), ((3, 4), -1, True),
         ((2, 3, 2), (0, 2), False), ((2, 3, 2), (0, 2), True), ((2, 3, 2), 1, True),
         ((12,), 0, True), ((1, 12), 0, False)]


@pytest.mark.parametrize("shape, axis, keepdims", CASES)
def test_axes_and_keepdims_against_numpy_and_autograd(shape, axis, keepdims):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    n = int(np.prod(shape))
    x0 = np.random.default_rng(n).uniform(0.5, 1.5, n)
    out_shape = np.prod(np.ones(shape), axis=axis, keepdims=keepdims).shape
    C = np.linspace(-1.0, 1.0, int(np.prod(out_shape)))

    def g(x, np=np):
        p = np.prod(np.reshape(x, shape), axis=axis, keepdims=keepdims)
        return np.sum(np.sin(p) * np.reshape(C, np.shape(p)))
    F = ad.record(g, x0)
    x = x0 * 1.1
    assert ad.Array(x.reshape(shape)).prod(axis=axis, keepdims=keepdims).shape == out_shape
    np.testing.assert_allclose(F(x), g(x), rtol=1e-14)
    np.testing.assert_allclose(F.grad(x), autograd.grad(lambda z: g(z, anp))(x),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(F.hessian(x), autograd.hessian(lambda z: g(z, anp))(x),
                               rtol=1e-11, atol=1e-14)


def test_a_replay_runs_in_c_and_saves(tmp_path):
    # one PROD entry, no extern (Python) rule: a recording of it saves too
    F = ad.record(f, np.linspace(0.5, 1.6, 12))
    listing = str(F)
    assert " prod " in listing and " extern " not in listing
    F.save(tmp_path / "prod.adtape")
    G = ad.load(tmp_path / "prod.adtape")
    x = np.array(ROWS["two"]).ravel()
    np.testing.assert_array_equal(G.grad(x), by_hand(ROWS["two"], 1))
    np.testing.assert_array_equal(G.hessian(x), by_hand(ROWS["two"], 2))


def test_empty_and_scalar_products():
    empty = ad.Array(np.zeros((2, 0)))
    assert empty.prod(axis=1).data.tolist() == [1.0, 1.0]
    F = ad.record(lambda x: np.sum(np.prod(x.reshape(3, 0, 2), axis=1) * 2.0), np.zeros(0))
    assert F(np.zeros(0)) == 12.0
    assert F.grad(np.zeros(0)).shape == (0,) and F.hessian(np.zeros(0)).shape == (0, 0)
    # a 0-d array is its own product, with derivative 1
    assert ad.grad(lambda x: np.prod(x) * 3.0)(2.5) == 3.0
    assert ad.hessian(lambda x: np.prod(x) ** 2)(np.array(2.5)) == 2.0
