"""Module and optimizer state dicts: names and copies as torch forms them,
checked loading, and training resumed from a saved state that ends bit for
bit where training straight through ends."""
import io
import pickle

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import nn


class Net(nn.Module):
    def __init__(self, rng):
        self.layers = [nn.Linear(3, 8, rng=rng), nn.Linear(8, 2, rng=rng)]
        self.extra = {"scale": ad.Value(1.5)}

    def forward(self, x):
        h = ad.tanh(self.layers[0](x))
        return self.layers[1](h) * self.extra["scale"]


def test_names_follow_attributes_and_container_positions():
    net = Net(rng=0)
    sd = net.state_dict()
    assert list(sd) == ["layers.0.W", "layers.0.b", "layers.1.W", "layers.1.b",
                        "extra.scale"]
    named, params = net.named_parameters(), net.parameters()
    assert len(named) == len(params) == 5
    assert all(p is q for (_, p), q in zip(named, params))
    assert sd["extra.scale"] == 1.5 and isinstance(sd["extra.scale"], float)
    np.testing.assert_array_equal(sd["layers.0.W"], net.layers[0].W.data)
    sd["layers.0.W"][0, 0] = 99.0          # a copy, not the parameter
    assert net.layers[0].W.data[0, 0] != 99.0
    # a Sequential's steps are named by index, as torch names them
    assert list(nn.MLP([2, 3, 1], rng=0).state_dict()) == ["0.W", "0.b",
                                                           "2.W", "2.b"]


def test_load_copies_into_the_existing_parameters():
    a, b = Net(rng=1), Net(rng=2)
    w = b.layers[0].W
    keys = b.load_state_dict(a.state_dict())
    assert keys.missing_keys == [] and keys.unexpected_keys == []
    assert b.layers[0].W is w              # the same Array, new data
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(np.asarray(p.data), np.asarray(q.data))
    x = np.random.default_rng(0).standard_normal((4, 3))
    np.testing.assert_array_equal(a(ad.Array(x)).data, b(ad.Array(x)).data)


def test_load_checks_names_and_shapes_before_copying_anything():
    net = Net(rng=0)
    before = net.state_dict()
    sd = Net(rng=1).state_dict()
    del sd["layers.1.b"]
    sd["layers.2.W"] = np.zeros((2, 2))
    with pytest.raises(RuntimeError, match=r"missing key\(s\): layers\.1\.b; "
                                           r"unexpected key\(s\): layers\.2\.W"):
        net.load_state_dict(sd)
    keys = net.load_state_dict(sd, strict=False)
    assert keys == (["layers.1.b"], ["layers.2.W"])
    np.testing.assert_array_equal(net.layers[1].b.data, before["layers.1.b"])

    net = Net(rng=0)
    bad = Net(rng=1).state_dict()
    bad["layers.1.W"] = np.zeros((2, 8))
    with pytest.raises(RuntimeError, match=r"size mismatch for layers\.1\.W: "
                                           r".*\(2, 8\).*\(8, 2\)"):
        net.load_state_dict(bad, strict=False)
    for name, value in net.state_dict().items():   # nothing changed
        np.testing.assert_array_equal(value, before[name])
    with pytest.raises(RuntimeError, match="size mismatch for extra.scale"):
        net.load_state_dict({**before, "extra.scale": np.ones(2)})


def loss_of(model, x, y):
    return nn.cross_entropy(model(ad.Array(x)), y)


def train(model, opt, x, y, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss_of(model, x, y).backward()
        opt.step()


def through_files(model_sd, opt_sd):
    """The model's dict through np.savez and the optimizer's through
    pickle, as a checkpoint would store them."""
    f = io.BytesIO()
    np.savez(f, **model_sd)
    f.seek(0)
    with np.load(f) as z:
        model_sd = {name: z[name] for name in z.files}
    return model_sd, pickle.loads(pickle.dumps(opt_sd))


OPTIMIZERS = [
    (ad.optim.Adam, dict(lr=0.01, weight_decay=1e-3)),
    (ad.optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True)),
    (ad.optim.SGD, dict(lr=0.05, momentum=0.8, dampening=0.1)),
    (ad.optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True)),
    (ad.optim.AdamW, dict(lr=0.01)),
]


@pytest.mark.parametrize("cls, hyper", OPTIMIZERS)
def test_resumed_training_is_bit_for_bit_straight_training(cls, hyper):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((32, 2))
    y = (x[:, 0] * x[:, 1] > 0).astype(int)

    straight = nn.MLP([2, 16, 16, 2], rng=3)
    opt = cls(straight.parameters(), **hyper)
    train(straight, opt, x, y, 50)

    first = nn.MLP([2, 16, 16, 2], rng=3)
    opt1 = cls(first.parameters(), **hyper)
    train(first, opt1, x, y, 25)
    model_sd, opt_sd = through_files(first.state_dict(), opt1.state_dict())

    resumed = nn.MLP([2, 16, 16, 2], rng=99)         # other weights
    opt2 = cls(resumed.parameters(), lr=1.0)        # other hyperparameters
    resumed.load_state_dict(model_sd)
    opt2.load_state_dict(opt_sd)
    train(resumed, opt2, x, y, 25)

    for (name, p), (_, q) in zip(straight.named_parameters(),
                                 resumed.named_parameters()):
        assert np.array_equal(p.data, q.data), name
    # and the run went somewhere: the state mattered
    fresh = nn.MLP([2, 16, 16, 2], rng=99)
    fresh.load_state_dict(model_sd)
    train(fresh, cls(fresh.parameters(), **hyper), x, y, 25)
    assert not np.array_equal(fresh[0].W.data, straight[0].W.data)


def test_optimizer_state_dict_is_torchs_layout():
    w, v = ad.Array(np.array([[1.0, 2.0]])), ad.Value(3.0)
    idle = ad.Array(np.ones(2))                      # never gets a gradient
    opt = ad.optim.Adam([w, v, idle], lr=0.1, betas=(0.8, 0.9))
    assert opt.state_dict()["state"] == {}           # no steps, no state
    (w * w).sum().backward()
    (v * v).backward()
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1]             # idle took no step
    gw, gv = 2 * np.array([[1.0, 2.0]]), 6.0
    s0, s1 = sd["state"][0], sd["state"][1]
    assert s0["step"] == 1.0 and s1["step"] == 1.0
    # a first step from zero moments: (1 - beta1) g and ((1 - beta2) g) g
    np.testing.assert_array_equal(s0["exp_avg"], (1 - 0.8) * gw)
    np.testing.assert_array_equal(s0["exp_avg_sq"], ((1 - 0.9) * gw) * gw)
    assert s0["exp_avg"].shape == (1, 2)
    assert s1["exp_avg"] == (1 - 0.8) * gv
    assert isinstance(s1["exp_avg"], float)
    group = sd["param_groups"][0]
    assert group["params"] == [0, 1, 2]
    assert group["lr"] == 0.1 and group["betas"] == (0.8, 0.9)
    assert group["eps"] == 1e-8 and group["weight_decay"] == 0.0


def test_optimizer_load_checks_the_dict_before_changing_anything():
    params = [ad.Array(np.ones(3)), ad.Value(1.0)]
    opt = ad.optim.SGD(params, lr=0.1, momentum=0.9)
    (params[0] * params[0]).sum().backward()
    (params[1] * 2.0).backward()
    opt.step()
    good = opt.state_dict()

    other = ad.optim.SGD([ad.Array(np.ones(3)), ad.Value(1.0)], lr=0.5)
    before = other.state_dict()
    bad = pickle.loads(pickle.dumps(good))
    bad["state"][0]["momentum_buffer"] = np.ones(4)
    with pytest.raises(ValueError, match=r"parameter 0: momentum_buffer has "
                                         r"shape \(4,\), the parameter \(3,\)"):
        other.load_state_dict(bad)
    assert other.state_dict() == before and other.lr == 0.5
    with pytest.raises(ValueError, match="has 1 parameters; this optimizer "
                                         "has 2"):
        other.load_state_dict({"state": {}, "param_groups": [
            {**good["param_groups"][0], "params": [0]}]})
    adam = ad.optim.Adam([ad.Array(np.ones(3)), ad.Value(1.0)])
    with pytest.raises(KeyError, match="no betas, eps for Adam"):
        adam.load_state_dict(good)
    with pytest.raises(KeyError, match="no exp_avg, exp_avg_sq for Adam"):
        adam.load_state_dict({"state": good["state"], "param_groups": [
            {"lr": 0.1, "betas": (0.9, 0.99), "eps": 1e-8,
             "weight_decay": 0.0, "params": [0, 1]}]})
    with pytest.raises(ValueError, match="Invalid learning rate"):
        other.load_state_dict({"state": {}, "param_groups": [
            {**good["param_groups"][0], "lr": -1.0}]})
    with pytest.raises(TypeError, match="keyed by parameter position, "
                                        "not '0'"):
        other.load_state_dict({"state": {"0": good["state"][0]},
                               "param_groups": good["param_groups"]})
    with pytest.raises(ValueError, match="state for parameter 2; this "
                                         "optimizer has 2"):
        other.load_state_dict({"state": {2: good["state"][0]},
                               "param_groups": good["param_groups"]})
    other.load_state_dict(good)
    assert other.state_dict()["state"][0]["step"] == 1.0
    assert other.momentum == 0.9
