"""ad.nn: layers against NumPy, losses against hand-computed values and
central differences, and a training run whose loss drops."""
import math

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import nn


def numeric_grad(f, x, h=1e-6):
    """d f / d x by central differences; f takes an ndarray, gives a float."""
    x = np.array(x, dtype=float)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += h
        down[idx] -= h
        g[idx] = (f(up) - f(down)) / (2 * h)
    return g


def value_of(loss_fn, *args):
    with ad.no_grad():
        return loss_fn(*args).item()


# --- Linear, Sequential, MLP --------------------------------------------------------

def test_linear_computes_x_at_w_plus_b():
    layer = nn.Linear(3, 2, rng=0)
    assert layer.W.shape == (3, 2) and layer.b.shape == (2,)
    assert layer.parameters() == [layer.W, layer.b]
    X = np.arange(12.0).reshape(4, 3) / 10
    out = layer(X)
    np.testing.assert_allclose(out.data, X @ layer.W.data + layer.b.data,
                               rtol=1e-14)
    single = layer(X[0])                         # one example, shape (3,)
    np.testing.assert_allclose(single.data, out.data[0], rtol=1e-14)


def test_linear_init_is_torchs_uniform_and_reproducible():
    a, b = nn.Linear(16, 5, rng=42), nn.Linear(16, 5, rng=42)
    np.testing.assert_array_equal(a.W.data, b.W.data)
    np.testing.assert_array_equal(a.b.data, b.b.data)
    big = nn.Linear(400, 50, rng=np.random.default_rng(1))
    bound = 1 / math.sqrt(400)
    for p in big.parameters():
        assert np.all(np.abs(p.data) <= bound)
        assert np.abs(p.data).max() > 0.9 * bound          # fills the range
    assert not np.array_equal(nn.Linear(4, 4).W.data, nn.Linear(4, 4).W.data)
    no_bias = nn.Linear(3, 2, bias=False, rng=0)
    assert no_bias.parameters() == [no_bias.W]
    with pytest.raises(ValueError):
        nn.Linear(0, 3)


def test_linear_gradients_match_central_differences():
    layer = nn.Linear(3, 2, rng=1)
    X = np.random.default_rng(2).normal(size=(5, 3))
    loss = ad.tanh(layer(X)).sum()
    loss.backward()

    def f_W(W):
        return np.tanh(X @ W + layer.b.data).sum()

    def f_b(b):
        return np.tanh(X @ layer.W.data + b).sum()
    np.testing.assert_allclose(layer.W.grad, numeric_grad(f_W, layer.W.data),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(layer.b.grad, numeric_grad(f_b, layer.b.data),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("activation,fn", [
    ("tanh", np.tanh), ("relu", lambda z: np.maximum(z, 0.0)),
    ("sigmoid", lambda z: 1 / (1 + np.exp(-z)))])
def test_mlp_matches_numpy_forward(activation, fn):
    mlp = nn.MLP([3, 7, 5, 2], activation=activation, rng=3)
    X = np.random.default_rng(4).normal(size=(6, 3))
    h = X
    layers = [s for s in mlp if isinstance(s, nn.Linear)]
    assert len(layers) == 3 and len(mlp) == 5
    for k, layer in enumerate(layers):
        h = h @ layer.W.data + layer.b.data
        if k < len(layers) - 1:                 # the last layer is linear
            h = fn(h)
    np.testing.assert_allclose(mlp(X).data, h, rtol=1e-13, atol=1e-15)
    assert [p.shape for p in mlp.parameters()] == [(3, 7), (7,), (7, 5), (5,),
                                                   (5, 2), (2,)]


def test_mlp_is_reproducible_and_checks_its_arguments():
    a, b = nn.MLP([2, 4, 1], rng=7), nn.MLP([2, 4, 1], rng=7)
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(p.data, q.data)
    with pytest.raises(ValueError, match="activation"):
        nn.MLP([2, 3], activation="gelu")
    with pytest.raises(ValueError, match="two sizes"):
        nn.MLP([2])


def test_sequential_and_module_subclasses_find_their_parameters():
    first, second = nn.Linear(2, 3, rng=0), nn.Linear(3, 1, rng=1)
    seq = nn.Sequential(first, ad.relu, second)
    assert seq.parameters() == first.parameters() + second.parameters()
    X = np.array([[1.0, -1.0], [0.5, 2.0]])
    expected = second(ad.relu(first(X))).data
    np.testing.assert_array_equal(seq(X).data, expected)

    class Residual(nn.Module):
        def __init__(self):
            self.inner = seq
            self.shared = [first]                 # already inside seq
            self.scale = ad.Value(0.5)

        def forward(self, x):
            return self.inner(x) * self.scale

    model = Residual()
    assert model.parameters() == seq.parameters() + [model.scale]
    out = model(X).sum()
    out.backward()
    assert model.scale.grad == pytest.approx(expected.sum() / 1.0)
    model.zero_grad()
    assert all(not np.any(p.grad) for p in model.parameters())
    with pytest.raises(TypeError):
        nn.Sequential(first, 3)
    with pytest.raises(NotImplementedError):
        nn.Module()(X)


# --- losses -------------------------------------------------------------------------

def test_mse_loss_value_and_gradient():
    pred = ad.Array([[1.0, 2.0], [3.0, 5.0]])
    target = np.array([[0.0, 2.0], [1.0, 1.0]])
    loss = nn.mse_loss(pred, target)
    assert loss.item() == (1 + 0 + 4 + 16) / 4
    loss.backward()
    np.testing.assert_array_equal(pred.grad, 2 * (pred.data - target) / 4)
    with pytest.raises(ValueError, match=r"\(2, 2\).*\(4,\)"):
        nn.mse_loss(pred, np.zeros(4))


def test_cross_entropy_hand_computed():
    # two classes with equal logits: -log(1/2)
    assert nn.cross_entropy(ad.Array([[0.0, 0.0]]), [0]).item() == \
        pytest.approx(math.log(2), rel=1e-15)
    logits = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 4.0]])
    labels = [2, 0]
    z0 = math.log(math.exp(1) + math.exp(2) + math.exp(3))
    z1 = math.log(2 + math.exp(4))
    expected = ((z0 - 3.0) + (z1 - 0.0)) / 2
    assert nn.cross_entropy(ad.Array(logits), labels).item() == \
        pytest.approx(expected, rel=1e-14)
    assert nn.cross_entropy(logits, np.array(labels)).item() == \
        pytest.approx(expected, rel=1e-14)      # plain ndarray logits too
    # one unbatched example
    assert nn.cross_entropy(ad.Array([1.0, 2.0, 3.0]), 2).item() == \
        pytest.approx(z0 - 3.0, rel=1e-14)


def test_cross_entropy_is_stable_for_huge_logits():
    logits = ad.Array([[1000.0, 0.0], [0.0, -1000.0]])
    loss = nn.cross_entropy(logits, [1, 1])
    assert loss.item() == pytest.approx((1000.0 + 1000.0) / 2)
    loss.backward()
    # d/dz = (softmax - onehot) / N
    np.testing.assert_allclose(logits.grad, [[0.5, -0.5], [0.5, -0.5]])


def test_cross_entropy_gradient_is_softmax_minus_onehot():
    rng = np.random.default_rng(5)
    z = rng.normal(size=(4, 3)) * 3
    labels = np.array([0, 2, 1, 2])
    logits = ad.Array(z)
    nn.cross_entropy(logits, labels).backward()
    soft = np.exp(z - z.max(axis=1, keepdims=True))
    soft /= soft.sum(axis=1, keepdims=True)
    onehot = np.eye(3)[labels]
    np.testing.assert_allclose(logits.grad, (soft - onehot) / 4, rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(
        logits.grad, numeric_grad(lambda x: value_of(nn.cross_entropy,
                                                     ad.Array(x), labels), z),
        rtol=1e-6, atol=1e-9)


def test_cross_entropy_rejects_bad_labels():
    logits = ad.Array(np.zeros((2, 3)))
    with pytest.raises(IndexError, match="3"):
        nn.cross_entropy(logits, [0, 3])
    with pytest.raises(IndexError):
        nn.cross_entropy(logits, [-1, 0])
    with pytest.raises(ValueError, match="labels"):
        nn.cross_entropy(logits, [0, 1, 2])
    with pytest.raises(ValueError, match="integers"):
        nn.cross_entropy(logits, [0.5, 1])
    with pytest.raises(ValueError):
        nn.cross_entropy(ad.Array(np.zeros((2, 3, 1))), [0, 1])


def test_hinge_loss_value_and_gradient():
    scores = ad.Array([2.0, 0.5, -0.25, -3.0])
    labels = [1, 1, -1, 1]
    # margins 1 - y*s: -1, 0.5, 0.75, 4 -> relu: 0, 0.5, 0.75, 4
    loss = nn.hinge_loss(scores, labels)
    assert loss.item() == (0 + 0.5 + 0.75 + 4) / 4
    loss.backward()
    np.testing.assert_array_equal(scores.grad, [0.0, -0.25, 0.25, -0.25])
    column = ad.Array([[2.0], [0.5], [-0.25], [-3.0]])   # (N, 1) scores
    assert nn.hinge_loss(column, labels).item() == loss.item()
    s = np.array([0.3, -1.7, 0.9, 2.2])
    y = np.array([1, -1, -1, 1])
    scores = ad.Array(s)
    nn.hinge_loss(scores, y).backward()
    np.testing.assert_allclose(
        scores.grad, numeric_grad(lambda x: value_of(nn.hinge_loss,
                                                     ad.Array(x), y), s),
        rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="-1 or \\+1"):
        nn.hinge_loss(ad.Array([1.0, 2.0]), [1, 0])
    with pytest.raises(ValueError, match="labels"):
        nn.hinge_loss(ad.Array([1.0, 2.0]), [1, -1, 1])


# --- training -------------------------------------------------------------------------

def test_training_with_adam_drops_the_loss():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)          # XOR of the signs
    model = nn.MLP([2, 16, 2], rng=1)
    opt = ad.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(150):
        loss = nn.cross_entropy(model(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.25 * losses[0]
    with ad.no_grad():
        accuracy = np.mean(model(X).data.argmax(axis=1) == y)
    assert accuracy >= 0.9


def test_regression_with_mse_and_sgd():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(32, 3))
    w_true = np.array([[1.5], [-2.0], [0.5]])
    Y = X @ w_true + 0.25
    layer = nn.Linear(3, 1, rng=2)
    opt = ad.optim.SGD(layer.parameters(), lr=0.3, momentum=0.5)
    for _ in range(300):
        loss = nn.mse_loss(layer(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    np.testing.assert_allclose(layer.W.data, w_true, atol=1e-4)
    np.testing.assert_allclose(layer.b.data, [0.25], atol=1e-4)


# --- parameters in containers ----------------------------------------------------------

def ids(params):
    """Parameters compared by identity (== on Arrays is elementwise)."""
    return [id(p) for p in params]


class DictModel(nn.Module):
    def __init__(self):
        self.d = {"w": ad.Array([0.5, -1.0]), "lin": nn.Linear(2, 1, rng=0)}
        self.blocks = [{"a": nn.Linear(1, 2, rng=1), "s": (ad.Value(2.0),)},
                       ({"b": [ad.Array([[1.0], [0.5]])]},)]

    def forward(self, x):
        h = self.d["lin"](x * self.d["w"])
        h = self.blocks[0]["a"](h) * self.blocks[0]["s"][0]
        return h @ self.blocks[1][0]["b"][0]


def test_parameters_in_dicts_and_nested_containers_in_definition_order():
    m = DictModel()
    lin, a = m.d["lin"], m.blocks[0]["a"]
    expected = [m.d["w"], lin.W, lin.b, a.W, a.b, m.blocks[0]["s"][0],
                m.blocks[1][0]["b"][0]]
    assert ids(m.parameters()) == ids(expected)
    assert ids(m.parameters()) == ids(m.parameters())          # deterministic
    m.zero_grad()


def test_shared_parameters_and_modules_are_found_once():
    class Shared(nn.Module):
        def __init__(self):
            self.lin = nn.Linear(2, 2, rng=0)
            self.w = ad.Array([1.0, 1.0])
            self.again = {"lin": self.lin, "w": self.w, "both": [self.w, self.lin]}
            self.twin = ad.Array([1.0, 1.0])        # equal to w, but its own
            self.me = [self]                        # a reference back up

    m = Shared()
    assert ids(m.parameters()) == ids([m.lin.W, m.lin.b, m.w, m.twin])


def test_a_module_overriding_parameters_inside_a_dict_is_asked():
    class OnlyW(nn.Linear):
        def parameters(self):
            return [self.W]

    class Holder(nn.Module):
        def __init__(self):
            self.d = {"layer": OnlyW(2, 2, rng=0)}

    h = Holder()
    assert ids(h.parameters()) == ids([h.d["layer"].W])


def test_an_optimizer_trains_the_parameters_held_in_dicts():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(16, 2))
    Y = X @ np.array([[1.0], [-2.0]])
    m = DictModel()
    before = [p.data.copy() if isinstance(p, ad.Array) else p.data for p in m.parameters()]
    opt = ad.optim.Adam(m.parameters(), lr=0.02)
    losses = []
    for _ in range(60):
        loss = nn.mse_loss(m(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    after = m.parameters()
    assert len(after) == len(before) == 7
    for old, new in zip(before, after):
        assert np.any(np.asarray(new.data) != old)        # every one was trained
