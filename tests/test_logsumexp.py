"""ad.logsumexp as one reduction entry (LSE): values against scipy's rule,
its gradient, tangent and Hessian against central differences and the
closed form (the softmax s, and diag(s) - s s^T), replays, saved files,
and the softmax functions built on it."""
import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import _core
from helpers import numeric_grad

try:
    from scipy.special import logsumexp as reference_lse
except ImportError:             # scipy is optional: its rule, in NumPy
    def reference_lse(x, axis=None, keepdims=False):
        m = np.amax(x, axis=axis, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
        return out if keepdims else np.squeeze(out, axis=axis)

rng = np.random.default_rng(7)

AXES = [((3, 4, 5), None), ((3, 4, 5), 0), ((3, 4, 5), 1), ((3, 4, 5), -1),
        ((3, 4, 5), (0, 2)), ((3, 4, 5), (-1, -2)), ((3, 4, 5), (0, 1, 2)),
        ((4, 1, 3), 1), ((1, 6), 0), ((1, 6), 1), ((7,), 0), ((), None),
        ((2, 300), 1), ((300, 2), 0)]


def ops_of(t):
    t.flush()
    return [_core.OP_NAMES[t._c.op[i]] for i in range(t.nflushed)]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape, axis", AXES)
def test_values_are_scipys_in_one_entry(shape, axis, keepdims):
    x = rng.normal(size=shape) * 4
    with ad.Tape() as t:
        out = ad.logsumexp(ad.Array(x), axis=axis, keepdims=keepdims)
        ops = ops_of(t)
    want = reference_lse(x, axis=axis, keepdims=keepdims)
    # NumPy's reductions' shape (scipy makes a 0-d input's kept result 1-d)
    assert out.shape == np.sum(x, axis=axis, keepdims=keepdims).shape
    want = np.reshape(want, out.shape)
    np.testing.assert_allclose(out.data, want, rtol=1e-14, atol=1e-14)
    # a leaf, the entry, and a reshape where dims are dropped but not all
    assert ops.count("lse") == 1 and len(ops) <= 3
    with ad.no_grad():
        np.testing.assert_allclose(ad.logsumexp(ad.Array(x), axis=axis,
                                                keepdims=keepdims).data,
                                   want, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("shape, axis", AXES)
def test_gradient_is_the_softmax_and_matches_central_differences(shape, axis):
    x = rng.normal(size=shape)
    xa = ad.Array(x)
    out = ad.logsumexp(xa, axis=axis)
    w = rng.normal(size=out.shape)
    out.backward(w)
    num = numeric_grad(lambda y: float(np.sum(reference_lse(y, axis=axis) * w)), [x], 0)
    np.testing.assert_allclose(xa.grad, num, rtol=1e-6, atol=1e-8)
    kept = reference_lse(x, axis=axis, keepdims=True)
    wk = np.reshape(w, kept.shape)
    np.testing.assert_allclose(xa.grad, np.exp(x - kept) * wk, rtol=1e-13, atol=1e-15)


def test_special_rows_follow_scipy_and_give_no_nan_gradients():
    inf, nan = np.inf, np.nan
    x = np.array([[-inf, -inf, -inf],       # -inf, no gradient
                  [inf, 1.0, -inf],          # +inf
                  [nan, 1.0, 2.0],           # nan
                  [800.0, 800.0, -inf],      # exp(800) would overflow
                  [1e308, -1e308, 0.0],
                  [0.5, -inf, 2.0]])         # an unused -inf element
    with np.errstate(over="ignore"):            # -1e308 - 1e308 in scipy
        want = reference_lse(x, axis=1)
    xa = ad.Array(x)
    out = ad.logsumexp(xa, axis=1)
    np.testing.assert_array_equal(out.data[[0, 1, 2]], want[[0, 1, 2]])
    np.testing.assert_allclose(out.data[3:], want[3:], rtol=1e-15)
    assert out.data[3] == 800.0 + np.log(2.0) and out.data[4] == 1e308
    out.backward(np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0]))
    g = xa.grad
    np.testing.assert_array_equal(g[0], 0.0)
    np.testing.assert_array_equal(g[[1, 2]], 0.0)   # a zero adjoint gives 0
    np.testing.assert_allclose(g[3], [0.5, 0.5, 0.0], rtol=1e-13)
    np.testing.assert_array_equal(g[4], [1.0, 0.0, 0.0])
    e = np.exp([0.5 - 2.0, 0.0])
    np.testing.assert_allclose(g[5], [e[0] / e.sum(), 0.0, e[1] / e.sum()], rtol=1e-14)
    # a whole reduction of huge values, and of an empty array
    for x in ([1e308, -1e308, 1e308], [-1e308, -1e308]):
        with np.errstate(over="ignore"):
            want = reference_lse(np.array(x))
        assert ad.logsumexp(ad.Array(x)).data == want


@pytest.mark.parametrize("shape, axis, keepdims", [
    ((3, 0), 1, False), ((3, 0), 1, True), ((0,), None, False), ((0, 4), 0, True),
    ((2, 0, 3), (0, 1), False)])
def test_empty_reductions_are_minus_inf(shape, axis, keepdims):
    xa = ad.Array(np.zeros(shape))
    out = ad.logsumexp(xa, axis=axis, keepdims=keepdims)
    assert out.shape == np.sum(xa.data, axis=axis, keepdims=keepdims).shape
    np.testing.assert_array_equal(out.data, -np.inf)
    if out.size:
        out.backward(np.ones(out.shape))
        np.testing.assert_array_equal(xa.grad, np.zeros(shape))


def test_a_0d_operand_and_a_value_are_their_own_logsumexp():
    for x in (0.75, -np.inf, np.inf):
        xa = ad.Array(x)
        out = ad.logsumexp(xa)
        assert out.shape == () and float(out.data) == x
        if np.isfinite(x):
            out.backward()
            assert float(xa.grad) == 1.0
    v = ad.Value(-1.25)
    out = ad.logsumexp(v, keepdims=True)
    out.backward()
    assert float(out.data) == -1.25 and v.grad == 1.0


def softmax_hessian(x, axis, w):
    """The Hessian of sum(w * lse(x, axis)): per reduced group, w times
    diag(s) - s s^T, from the softmax s."""
    kept = reference_lse(x, axis=axis, keepdims=True)
    s = np.exp(x - kept)
    groups = np.broadcast_to(np.arange(kept.size).reshape(kept.shape), x.shape).ravel()
    sf = s.ravel()
    wf = np.reshape(w, -1)[groups]
    H = np.diag(sf * wf) - np.outer(sf * wf, sf) * (groups[:, None] == groups[None, :])
    return H.reshape(x.shape + x.shape)


@pytest.mark.parametrize("shape, axis", [((3, 4), 1), ((3, 4), 0), ((2, 3, 4), (0, 2)),
                                         ((5,), None), ((2, 3, 2), None)])
def test_jvp_hvp_and_hessian_against_finite_differences_and_the_closed_form(shape, axis):
    x = rng.normal(size=shape)
    v = rng.normal(size=shape)
    w = rng.normal(size=reference_lse(x, axis=axis).shape)

    def f(y):
        return (ad.logsumexp(y, axis=axis) * w).sum()

    def f_np(y):
        return float(np.sum(reference_lse(y, axis=axis) * w))

    h = 1e-6
    value, tangent = ad.jvp(lambda y: ad.logsumexp(y, axis=axis))(x, v)
    np.testing.assert_allclose(value, reference_lse(x, axis=axis), rtol=1e-14)
    fd = (reference_lse(x + h * v, axis=axis) - reference_lse(x - h * v, axis=axis)) / (2 * h)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6, atol=1e-8)
    H = softmax_hessian(x, axis, w)
    n = x.size
    np.testing.assert_allclose(ad.hessian(f)(x).reshape(n, n), H.reshape(n, n),
                               rtol=1e-12, atol=1e-14)
    Hv = ad.hvp(f)(x, v)
    np.testing.assert_allclose(Hv.ravel(), H.reshape(n, n) @ v.ravel(), rtol=1e-12, atol=1e-14)
    # the gradient's central differences along v, from the reference alone
    g = lambda y: numeric_grad(f_np, [y], 0, h=1e-5)            # noqa: E731
    fd_hv = (g(x + 1e-4 * v) - g(x - 1e-4 * v)) / 2e-4
    np.testing.assert_allclose(Hv, fd_hv, rtol=1e-3, atol=1e-4)
    F = ad.record(f, x)
    np.testing.assert_allclose(F.hvp(x, v), Hv, rtol=1e-13, atol=1e-15)


def test_second_order_through_an_all_minus_inf_row_stays_finite():
    x = np.array([[-np.inf, -np.inf], [0.3, -0.2]])

    def f(y):
        return (ad.logsumexp(y, axis=1) * np.array([1.0, 2.0]) + 0.0).sum()

    v = np.array([[1.0, -1.0], [0.5, 2.0]])
    Hv = ad.hvp(f)(x, v)
    s = np.exp(x[1] - reference_lse(x[1]))
    want = 2.0 * (np.diag(s) - np.outer(s, s)) @ v[1]
    np.testing.assert_array_equal(Hv[0], 0.0)
    np.testing.assert_allclose(Hv[1], want, rtol=1e-13)


@pytest.mark.parametrize("axis", [1, 0, (0, 1), None])
def test_replays_are_bit_exact_and_do_not_overflow_far_away(axis):
    def f(y):
        return (ad.logsumexp(y, axis=axis) * w).sum()

    x = rng.normal(size=(4, 6))
    w = rng.normal(size=reference_lse(x, axis=axis).shape)
    F = ad.record(f, x)
    assert F(x) == f(ad.Array(x)).data
    far = x + np.array([[800.0], [-3000.0], [1e300], [-1e300]])
    np.testing.assert_allclose(F(far), float(np.sum(reference_lse(far, axis=axis) * w)),
                               rtol=1e-14)
    xa = ad.Array(far)
    f(xa).backward()
    np.testing.assert_array_equal(F.grad(far), xa.grad)
    assert np.all(np.isfinite(F.grad(far)))


def test_save_and_load_keep_the_entry(tmp_path):
    def f(y):
        return (ad.logsumexp(y, axis=(0, 2), keepdims=True) * 3.0).sum() \
            + ad.logsumexp(y[0], axis=-1).sum()

    x = rng.normal(size=(2, 3, 4))
    F = ad.record(f, x)
    F.save(tmp_path / "lse.adtape")
    G = ad.load(tmp_path / "lse.adtape")
    assert str(G).count("lse") == str(F).count("lse") == 2
    for _ in range(3):
        y = x + rng.normal(size=x.shape)
        assert G(y) == F(y)
        np.testing.assert_array_equal(G.grad(y), F.grad(y))


def composed_logsumexp(a, axis):
    """The former composition of seven entries (the shift recorded as a
    max): the reference the single entry must agree with."""
    shift = a.max(axis=axis, keepdims=True)
    return (a - shift).exp().sum(axis=axis, keepdims=True).log() + shift


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_log_softmax_and_cross_entropy_agree_with_the_composition(axis):
    x = rng.normal(size=(5, 4)) * 3
    w = rng.normal(size=x.shape)
    for ours, old in [(lambda a: ad.softmax(a, axis=axis),
                       lambda a: (a - composed_logsumexp(a, axis)).exp()),
                      (lambda a: ad.log_softmax(a, axis=axis),
                       lambda a: a - composed_logsumexp(a, axis))]:
        xa, xb = ad.Array(x), ad.Array(x)
        new, ref = ours(xa), old(xb)
        np.testing.assert_allclose(new.data, ref.data, rtol=1e-14, atol=1e-16)
        new.backward(w)
        ref.backward(w)
        np.testing.assert_allclose(xa.grad, xb.grad, rtol=1e-12, atol=1e-15)
    labels = np.array([0, 3, 1, 1, 2])
    xa = ad.Array(x)
    loss = ad.nn.cross_entropy(xa, labels)
    ls = x - reference_lse(x, axis=1, keepdims=True)
    assert float(loss.data) == pytest.approx(-ls[np.arange(5), labels].mean(), rel=1e-14)
    loss.backward()
    want = (np.exp(ls) - np.eye(4)[labels]) / 5
    np.testing.assert_allclose(xa.grad, want, rtol=1e-12, atol=1e-16)
