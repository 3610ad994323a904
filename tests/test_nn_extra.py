"""ad.nn's binary cross-entropies, Dropout, Embedding and train()/eval():
values against NumPy written out by hand, gradients against their closed
forms and central differences (ad.check_grad)."""
import warnings

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import nn


def grad_of(loss_fn, x, *rest):
    """The loss and d loss / d x for an ndarray x, through one backward()."""
    xa = ad.Array(x)
    loss = loss_fn(xa, *rest)
    loss.backward()
    return loss.item(), xa.grad


def np_sigmoid(x):
    """1 / (1 + exp(-x)) without overflow, in plain NumPy."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


# --- binary_cross_entropy ------------------------------------------------------

def test_bce_value_and_gradient_match_the_formula():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, size=(4, 3))
    y = np.array([[0, 1, 1], [1, 0, 0], [0.25, 0.5, 1], [1, 1, 0]], float)
    loss, g = grad_of(nn.binary_cross_entropy, p, y)
    want = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert loss == pytest.approx(want, rel=1e-15)
    # torch's log1p(-p) for log(1 - p): the same to rounding
    torch_form = -np.mean(y * np.log(p) + (1 - y) * np.log1p(-p))
    assert loss == pytest.approx(torch_form, rel=1e-14)
    np.testing.assert_allclose(g, (p - y) / (p * (1 - p)) / p.size, rtol=1e-12)
    ad.check_grad(lambda q: nn.binary_cross_entropy(q, y), p)


def test_bce_clamps_each_log_at_minus_100_without_warnings_or_nans():
    p = np.array([0.0, 1.0, 0.5, 0.0])
    y = np.array([1.0, 0.0, 1.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss, g = grad_of(nn.binary_cross_entropy, p, y)
    assert loss == pytest.approx((100 + 100 + np.log(2) + 0) / 4, rel=1e-15)
    # the clamped logs pass no gradient; the others -y/p + (1-y)/(1-p), / 4
    np.testing.assert_array_equal(g, [0.0, 0.0, -0.5, 0.25])


def test_bce_with_a_batch_of_arrays_and_targets_that_are_arrays():
    p = ad.Array([[0.3, 0.6], [0.9, 0.2]])
    y = ad.Array([[1.0, 0.0], [1.0, 1.0]])
    loss = nn.binary_cross_entropy(p, y)
    loss.backward()
    pd, yd = p.data, y.data
    np.testing.assert_allclose(y.grad, -(np.log(pd) - np.log(1 - pd)) / 4,
                               rtol=1e-14)


@pytest.mark.parametrize("bad", [-0.1, 1.5, np.nan])
def test_bce_rejects_probabilities_outside_0_1(bad):
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.binary_cross_entropy(ad.Array([0.5, bad]), np.array([1.0, 0.0]))


def test_bce_shapes_must_match():
    with pytest.raises(ValueError, match=r"probs has shape \(3, 1\) but "
                                         r"targets has shape \(3,\)"):
        nn.binary_cross_entropy(ad.Array(np.full((3, 1), 0.5)), np.ones(3))


# --- binary_cross_entropy_with_logits -----------------------------------------

def test_bce_with_logits_matches_logaddexp_and_sigmoid_minus_y():
    x = np.array([[-30.0, -3.2, -0.5, 0.0], [0.0, 0.7, 4.0, 35.0]])
    y = np.array([[0.0, 1.0, 0.3, 1.0], [0.0, 1.0, 0.0, 1.0]])
    loss, g = grad_of(nn.binary_cross_entropy_with_logits, x, y)
    want = np.mean(np.logaddexp(0.0, x) - x * y)
    assert loss == pytest.approx(want, rel=1e-15, abs=1e-16)
    np.testing.assert_allclose(g, (np_sigmoid(x) - y) / x.size, rtol=1e-14,
                               atol=1e-18)
    # at x = 0 exactly: sigmoid(0) - y, no convention of max or |x| leaking in
    assert g[0, 3] == (0.5 - 1.0) / 8 and g[1, 0] == 0.5 / 8
    ad.check_grad(lambda z: nn.binary_cross_entropy_with_logits(z, y), x)


def test_bce_with_logits_does_not_overflow_for_huge_logits():
    x = np.array([-800.0, 800.0, -800.0, 800.0])
    y = np.array([0.0, 1.0, 1.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss, g = grad_of(nn.binary_cross_entropy_with_logits, x, y)
    assert loss == 400.0                  # the two wrong ones cost 800 each
    np.testing.assert_array_equal(g, [0.0, 0.0, -0.25, 0.25])


def test_bce_with_logits_is_bce_of_the_sigmoid():
    x = np.linspace(-6, 6, 13).reshape(13, 1)
    y = (np.arange(13) % 2).astype(float).reshape(13, 1)
    a = nn.binary_cross_entropy_with_logits(ad.Array(x), y).item()
    b = nn.binary_cross_entropy(ad.Array(np_sigmoid(x)), y).item()
    assert a == pytest.approx(b, rel=1e-13)


def test_bce_with_logits_shapes_must_match():
    with pytest.raises(ValueError, match="logits has shape"):
        nn.binary_cross_entropy_with_logits(ad.Array(np.zeros((2, 1))),
                                            np.zeros(2))


# --- Dropout ---------------------------------------------------------------------

def test_dropout_in_training_is_the_generators_mask_scaled():
    x = np.arange(1.0, 25.0).reshape(4, 6)
    drop = nn.Dropout(0.25, rng=7)
    xa = ad.Array(x)
    out = drop(xa)
    keep = np.random.default_rng(7).random((4, 6)) >= 0.25
    scale = keep / 0.75                   # torch's mask: bernoulli / (1 - p)
    np.testing.assert_array_equal(out.data, x * scale)
    c = np.linspace(-1, 1, 24).reshape(4, 6)
    (out * c).sum().backward()
    np.testing.assert_array_equal(xa.grad, c * scale)
    # a new mask each call
    assert not np.array_equal(drop(xa).data, out.data)


def test_dropout_keeps_1_minus_p_and_the_mean():
    out = nn.Dropout(0.3, rng=1)(ad.Array(np.ones(200_000))).data
    assert np.mean(out == 0) == pytest.approx(0.3, abs=0.005)
    assert set(np.unique(out)) == {0.0, 1 / 0.7}
    assert out.mean() == pytest.approx(1.0, abs=0.01)


def test_dropout_in_eval_or_with_p_0_passes_the_input_through():
    x = ad.Array(np.ones((3, 2)))
    drop = nn.Dropout(0.5, rng=0)
    assert drop.eval() is drop and drop.training is False
    assert drop(x) is x
    assert nn.Dropout(0.0)(x) is x


def test_dropout_with_p_1_zeroes_everything():
    x = ad.Array(np.full((2, 3), 4.0))
    out = nn.Dropout(1.0)(x)
    out.sum().backward()
    np.testing.assert_array_equal(out.data, np.zeros((2, 3)))
    np.testing.assert_array_equal(x.grad, np.zeros((2, 3)))


@pytest.mark.parametrize("p", [-0.1, 1.01])
def test_dropout_probability_is_checked(p):
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(p)


class Net(nn.Module):
    def __init__(self):
        self.body = nn.Sequential(nn.Linear(2, 4, rng=0), ad.tanh,
                                  nn.Dropout(0.5, rng=1))
        self.heads = {"a": [nn.Dropout(0.2)], "b": nn.Linear(4, 1, rng=2)}


def test_train_and_eval_reach_every_module_and_return_it():
    net = Net()
    modules = net.modules()
    assert len(modules) == 6 and modules[0] is net
    assert all(m.training for m in modules)
    assert net.eval() is net
    assert not any(m.training for m in modules)
    assert net.train() is net
    assert all(m.training for m in modules)
    net.train(False)
    x = ad.Array(np.ones((5, 2)))
    np.testing.assert_allclose(net.body(x).data,
                               np.tanh(x.data @ net.body[0].W.data
                                       + net.body[0].b.data), rtol=1e-15)


# --- Embedding -------------------------------------------------------------------

def test_embedding_weight_is_standard_normal_from_the_generator():
    emb = nn.Embedding(10, 3, rng=4)
    want = np.random.default_rng(4).standard_normal((10, 3))
    np.testing.assert_array_equal(emb.weight.data, want)
    big = nn.Embedding(1000, 100, rng=0).weight.data
    assert abs(big.mean()) < 0.01 and big.std() == pytest.approx(1.0, abs=0.01)
    assert emb.parameters()[0] is emb.weight


def test_embedding_gathers_rows_and_scatters_repeats_back():
    emb = nn.Embedding(6, 4, rng=0)
    idx = np.array([[1, 5, 1], [0, 1, 3]])
    out = emb(idx)
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out.data, emb.weight.data[idx])
    g = np.random.default_rng(1).standard_normal((2, 3, 4))
    (out * g).sum().backward()
    want = np.zeros((6, 4))
    np.add.at(want, idx, g)               # row 1 picked three times
    np.testing.assert_array_equal(emb.weight.grad, want)
    assert emb(2).shape == (4,) and emb([]).shape == (0, 4)

    def f(w):
        emb.weight = w
        return (ad.tanh(emb(idx)) * g).sum()
    ad.check_grad(f, np.random.default_rng(2).standard_normal((6, 4)))


def test_embedding_rejects_bad_indices():
    emb = nn.Embedding(3, 2)
    with pytest.raises(IndexError, match="index 3 is out of range for 3"):
        emb(np.array([0, 3]))
    with pytest.raises(IndexError, match="index -1"):
        emb([-1])
    with pytest.raises(TypeError, match="must be integers, not float64"):
        emb(np.array([0.0, 1.0]))
    with pytest.raises(TypeError, match="not an Array"):
        emb(ad.Array([0.0]))
    with pytest.raises(ValueError, match="sizes must be positive"):
        nn.Embedding(0, 2)
