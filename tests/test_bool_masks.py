"""A comparison's result acts as NumPy's bool array (dtype, repr, asarray,
boolean indexing, np.where(mask), logical operators, counting) while it
stays a recorded entry, so that recordings replay masks at new inputs.
Oracle: NumPy's own bool arrays on the same values."""
import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff.array import is_mask

X = np.array([1.0, 2.0, 3.0])
Y = np.array([2.0, 2.0, 0.5])


def masks(a, b):
    return {"a > 1.5": (a > 1.5), "a == a": (a == a), "a <= b": (a <= b),
            "np.less(a, b)": np.less(a, b), "a != b": (a != b)}


def test_masks_look_like_numpys_bool_arrays():
    ours, theirs = masks(ad.Array(X), ad.Array(Y)), masks(X, Y)
    for name, m in ours.items():
        want = theirs[name]
        assert is_mask(m)
        assert m.dtype == np.dtype(bool), name
        assert m.shape == want.shape
        assert repr(m) == "Array(" + np.array2string(want, separator=", ",
                                                     prefix="Array(") + ")"
        for got in (np.asarray(m), np.array(m)):
            assert got.dtype == np.dtype(bool)
            np.testing.assert_array_equal(got, want)
        assert m.tolist() == want.tolist()
        assert all(type(e) is bool for e in m.tolist())
        np.testing.assert_array_equal(np.arange(3.0)[m], np.arange(3.0)[want])
        np.testing.assert_array_equal(ad.Array(X)[m]._d, X[want])
        for got, exp in zip(np.where(m), np.where(want)):
            np.testing.assert_array_equal(got, exp)
            assert got.dtype == exp.dtype
        assert int(m.sum()._d) == want.sum() == int(np.sum(m)._d)
        assert np.count_nonzero(m) == np.count_nonzero(want)
        f = m.astype(float)
        assert not is_mask(f) and f.dtype == np.float64
        np.testing.assert_array_equal(f._d, want.astype(float))
        assert m.any() == want.any() and m.all() == want.all()
        np.testing.assert_array_equal((m * ad.Array(X))._d, want * X)
        np.testing.assert_array_equal((m + 1)._d, want + 1)
        assert (m * ad.Array(X)).dtype == (want * X).dtype


def test_logical_operators_give_masks():
    a, b = ad.Array(X), ad.Array(Y)
    m, n = a > 1.5, a <= b
    wm, wn = X > 1.5, X <= Y
    plain = np.array([True, False, True])
    for got, want in ((~m, ~wm), (m & n, wm & wn), (m | n, wm | wn),
                      (m ^ n, wm ^ wn), (m & plain, wm & plain),
                      (plain | m, plain | wm), (~(m ^ n), ~(wm ^ wn))):
        assert is_mask(got) and got.dtype == np.dtype(bool)
        np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(TypeError, match="mask"):
        m & np.array([1.0, 0.0, 1.0])
    assert bool(a[0:1] > 0.5) is True and bool(a[0:1] > 1.5) is False


def test_sum_of_a_mask_is_a_number():
    x, y = ad.Array(Y), ad.Array(X)
    assert float((np.sum(x <= y) + 0.0)._d) == float(np.sum(Y <= X))
    assert float((np.sum(x > 10.0) + 0.0)._d) == 0.0


def test_masks_inside_grad():
    def f(x):
        m = (x > 1.5) & (x < 2.5)
        return (np.where(m, x * x, -x) + (~m) * x * 3.0).sum()
    g = ad.grad(f)(X)
    np.testing.assert_array_equal(g, [-1.0 + 3.0, 4.0, -1.0 + 3.0])
    assert ad.grad(lambda x: (x[x > 1.5] ** 2).sum())(X).tolist() == [0.0, 4.0, 6.0]


def test_masks_replay_at_inputs_where_they_change():
    def f(x):
        m = (x > 1.5) | (x < 0.0)
        return (np.where(m, x * x, -x) + (m ^ (x > 2.5)) * x).sum()
    F = ad.record(f, X)
    for z in (np.array([3.0, -1.0, 1.0]), np.array([0.5, 0.2, 4.0]), X):
        m = (z > 1.5) | (z < 0.0)
        k = (m ^ (z > 2.5)).astype(float)
        assert F(z) == pytest.approx(np.sum(np.where(m, z * z, -z) + k * z))
        np.testing.assert_allclose(F.grad(z), np.where(m, 2 * z, -1.0) + k)
    G = ad.record(lambda x: x[~(x > 1.5)].sum(), X)
    assert G(np.array([0.0, 2.0, 3.0])) == 0.0
    with pytest.raises(ad.BranchError, match="mask"):
        G(np.array([2.0, 2.0, 3.0]))
