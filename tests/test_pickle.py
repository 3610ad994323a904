"""Pickle and copies of Values, Arrays, nn modules, optimizers and
recordings: each kind is pickled here and unpickled in a fresh interpreter,
which reports back what it finds; copies are independent of the original;
training resumed from a pickled (model, optimizer) ends bit for bit where
training straight through ends; a pickled recording is validated as a
saved file is."""
import copy
import hashlib
import json
import os
import pickle
import struct
import subprocess
import sys
import textwrap

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import nn, tapefile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def in_fresh_process(obj, code, tmp_path):
    """Unpickle obj in a new interpreter (as `obj`), run code there, and
    return what code left in `out` (plain data, pickled back)."""
    src, dst = tmp_path / "in.pickle", tmp_path / "out.pickle"
    src.write_bytes(pickle.dumps(obj))
    script = textwrap.dedent(f"""\
        import pickle, sys
        sys.path.insert(0, {os.path.join(ROOT, "tests")!r})   # for Net
        import numpy as np
        import pyautodiff as ad
        from pyautodiff import nn
        assert ad.__file__.startswith({ROOT!r}), ad.__file__
        with open(sys.argv[1], "rb") as f:
            obj = pickle.load(f)
        """) + textwrap.dedent(code) + textwrap.dedent("""
        with open(sys.argv[2], "wb") as f:
            pickle.dump(out, f)
        """)
    proc = subprocess.run([sys.executable, "-c", script, str(src), str(dst)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return pickle.loads(dst.read_bytes())


# -- Arrays ----------------------------------------------------------------------

def test_arrays_round_trip_with_their_gradients(tmp_path):
    rng = np.random.default_rng(0)
    W0, x0 = rng.normal(size=(3, 4)), rng.normal(size=4)
    W, x = ad.Array(W0), ad.Array(x0)
    y = W @ x                                   # interior
    ad.tanh(y).sum().backward()
    with ad.no_grad():
        plain = W * 2.0                         # computed under no_grad
    fresh = ad.Array([1.0, -2.0])               # no backward reached it
    out = in_fresh_process((W, y, plain, fresh), """
        W, y, plain, fresh = obj
        out = {k: (a.data.copy(), a.grad.copy()) for k, a in
               zip(("W", "y", "plain", "fresh"), obj)}
        (W * W).sum().backward()                # a live leaf: adds 2 W
        (y * 3.0).sum().backward()              # a leaf now: its own grad + 3
        out["W after"], out["y after"] = W.grad, y.grad
        # a parameter without a gradient is skipped (weight decay would
        # move it); one with a gradient takes the step
        opt = ad.optim.SGD([fresh, plain], lr=1.0, weight_decay=1.0)
        opt.step()
        out["fresh stepped"], out["plain stepped"] = fresh.data, plain.data
        """, tmp_path)
    dy = 1 - np.tanh(W0 @ x0) ** 2              # hand-derived
    np.testing.assert_array_equal(out["W"][0], W0)
    np.testing.assert_allclose(out["W"][1], np.outer(dy, x0), rtol=1e-12)
    np.testing.assert_array_equal(out["W"][1], W.grad)
    np.testing.assert_array_equal(out["y"][0], W0 @ x0)
    np.testing.assert_array_equal(out["y"][1], y.grad)
    np.testing.assert_allclose(out["y"][1], dy, rtol=1e-12)
    np.testing.assert_array_equal(out["plain"][0], 2.0 * W0)
    np.testing.assert_array_equal(out["plain"][1], np.zeros((3, 4)))
    np.testing.assert_array_equal(out["fresh"], ([1.0, -2.0], [0.0, 0.0]))
    np.testing.assert_allclose(out["W after"], np.outer(dy, x0) + 2 * W0, rtol=1e-12)
    np.testing.assert_allclose(out["y after"], dy + 3.0, rtol=1e-12)
    np.testing.assert_array_equal(out["fresh stepped"], [1.0, -2.0])
    np.testing.assert_array_equal(out["plain stepped"], 2.0 * W0)


def test_array_copies_are_independent_leaves():
    a = ad.Array([1.0, 2.0, 3.0])
    (a * a).sum().backward()
    for make in (copy.copy, copy.deepcopy, lambda v: pickle.loads(pickle.dumps(v))):
        b = make(a)
        assert b is not a
        np.testing.assert_array_equal(b.data, a.data)
        np.testing.assert_array_equal(b.grad, [2.0, 4.0, 6.0])
        b.data = [7.0, 8.0, 9.0]
        np.testing.assert_array_equal(a.data, [1.0, 2.0, 3.0])
        (b * 1.0).sum().backward()
        np.testing.assert_array_equal(b.grad, [3.0, 5.0, 7.0])
        np.testing.assert_array_equal(a.grad, [2.0, 4.0, 6.0])
    a.data = [0.0, 0.0, 0.0]
    np.testing.assert_array_equal(b.data, [7.0, 8.0, 9.0])


def test_arrays_of_a_released_tape_copy_their_data_and_gradient():
    with ad.Tape():
        a = ad.Array([1.0, -3.0])
        (a * a * a).sum().backward()
    b = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(b.data, [1.0, -3.0])
    np.testing.assert_array_equal(b.grad, [3.0, 27.0])     # 3 a**2
    (b * 2.0).sum().backward()                              # on a live tape
    np.testing.assert_array_equal(b.grad, [5.0, 29.0])


def test_copies_from_a_released_tape_keep_which_ones_have_a_gradient():
    # a parameter without a gradient is skipped by step(); with weight decay
    # a zero gradient would move it
    with ad.Tape():
        v, u = ad.Value(2.0), ad.Value(5.0)
        a, b = ad.Array([1.0, 2.0]), ad.Array([3.0, 4.0])
        (v * v + (a * a).sum()).backward()
    copies = pickle.loads(pickle.dumps((v, u, a, b)))
    assert [x.grad for x in copies[:2]] == [4.0, 0.0]
    ad.optim.SGD(copies, lr=1.0, weight_decay=1.0).step()
    # stepped: x - (grad + x); skipped: x
    assert [x.data for x in copies[:2]] == [-4.0, 5.0]
    np.testing.assert_array_equal(copies[2].data, [-2.0, -4.0])
    np.testing.assert_array_equal(copies[3].data, [3.0, 4.0])


class Scaled(ad.Array):
    """A user's subclass of Array."""


def test_copies_of_a_subclass_keep_its_class():
    s = Scaled([1.0, 2.0])
    (s * s).sum().backward()
    for t in (copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert type(t) is Scaled
        np.testing.assert_array_equal(t.grad, [2.0, 4.0])


def test_a_deepcopy_keeps_shared_arrays_shared():
    a = ad.Array([1.0])
    pair = copy.deepcopy([a, a])
    assert pair[0] is pair[1] and pair[0] is not a


# -- Values ------------------------------------------------------------------------

def test_values_round_trip_with_their_gradients(tmp_path):
    x, y = ad.Value(2.0), ad.Value(3.0)
    f = x * y + y ** 2
    f.backward()
    z = ad.Value(5.0, label="z")
    out = in_fresh_process((x, y, f, z), """
        x, y, f, z = obj
        out = [(v.data, v.grad) for v in obj] + [z.label]
        (x * y).backward()
        out.append((x.grad, y.grad))
        """, tmp_path)
    # API: x*y + y**2 at (2, 3) is 15 with grads 3 and 8
    assert out == [(2.0, 3.0), (3.0, 8.0), (15.0, 1.0), (5.0, 0.0), "z",
                   (6.0, 10.0)]


def test_value_copies_are_independent():
    v = ad.Value(4.0)
    (v * v).backward()
    for make in (copy.copy, copy.deepcopy, lambda v: pickle.loads(pickle.dumps(v))):
        w = make(v)
        assert w is not v and w.data == 4.0 and w.grad == 8.0
        w.data = 1.0
        (w * 3.0).backward()
        assert v.data == 4.0 and v.grad == 8.0 and w.grad == 11.0


# -- nn modules ----------------------------------------------------------------------

class Net(nn.Module):
    """A user module: parameters in a list, a dict and a Value."""

    def __init__(self):
        self.layers = [nn.Linear(3, 5, rng=0), nn.Linear(5, 2, rng=1)]
        self.drop = nn.Dropout(0.5, rng=2)
        self.extra = {"scale": ad.Value(1.5)}

    def forward(self, x):
        h = self.drop(ad.tanh(self.layers[0](x)))
        return self.layers[1](h) * self.extra["scale"]


def test_modules_round_trip_with_parameters_grads_and_state(tmp_path):
    X = np.random.default_rng(3).normal(size=(4, 3))
    net = Net()
    net(X).sum().backward()
    net.layers[1].eval()
    mlp = nn.MLP([3, 4, 1], rng=5)
    out = in_fresh_process((net, mlp, X), """
        net, mlp, X = obj
        out = {"names": [n for n, _ in net.named_parameters()],
               "data": [np.array(p.data) for p in net.parameters()],
               "grads": [np.array(p.grad) for p in net.parameters()],
               "training": [m.training for m in net.modules()],
               "next": net(X).data, "mlp": mlp(X).data, "repr": repr(mlp)}
        """, tmp_path)
    assert out["names"] == [n for n, _ in net.named_parameters()]
    for got, p in zip(out["data"], net.parameters()):
        np.testing.assert_array_equal(got, p.data)
    for got, p in zip(out["grads"], net.parameters()):
        np.testing.assert_array_equal(got, p.grad)
    assert any(np.any(g != 0) for g in out["grads"])
    assert out["training"] == [True, True, False, True]
    # the dropout's generator continues where the original's would
    np.testing.assert_array_equal(out["next"], net(X).data)
    np.testing.assert_array_equal(out["mlp"], mlp(X).data)
    assert out["repr"] == repr(mlp)


def test_module_deepcopy_is_independent():
    mlp = nn.MLP([2, 3, 1], rng=0)
    twin = copy.deepcopy(mlp)
    for p, q in zip(mlp.parameters(), twin.parameters()):
        assert p is not q
        np.testing.assert_array_equal(p.data, q.data)
    twin.parameters()[0].data = np.zeros((2, 3))
    assert np.all(mlp.parameters()[0].data != 0)


# -- optimizers ------------------------------------------------------------------------

OPTIMIZERS = {
    "SGD": (ad.optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True)),
    "Adam": (ad.optim.Adam, dict(lr=0.01, weight_decay=0.01)),
    "AdamW": (ad.optim.AdamW, dict(lr=0.01)),
    "RMSprop": (ad.optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True)),
}


def _problem(name):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(16, 3)), rng.normal(size=(16, 1))
    model = nn.MLP([3, 5, 1], rng=1)
    model.gain = ad.Value(1.0)                 # a scalar parameter too
    cls, kw = OPTIMIZERS[name]
    opt = cls(model.parameters(), **kw)
    sched = ad.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    return model, opt, sched, X, y


TRAIN = """
def train(model, opt, sched, X, y, steps):
    for _ in range(steps):
        opt.zero_grad()
        nn.mse_loss(model(X) * model.gain, y).backward()
        opt.step()
        sched.step()
"""
exec(TRAIN)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_training_resumed_from_a_pickle_ends_bit_for_bit(name, tmp_path):
    straight = _problem(name)
    train(*straight, 50)
    model, opt, sched, X, y = _problem(name)
    train(model, opt, sched, X, y, 25)
    copied = copy.deepcopy((model, opt, sched))
    out = in_fresh_process((model, opt, sched, X, y), TRAIN + textwrap.dedent("""
        model, opt, sched, X, y = obj
        assert all(p is q for p, q in zip(opt.params, model.parameters()))
        assert sched.optimizer is opt
        out = {"state": opt.state_dict()}
        train(model, opt, sched, X, y, 25)
        out["params"] = [np.array(p.data) for p in model.parameters()]
        """), tmp_path)
    want = opt.state_dict()
    assert out["state"]["param_groups"] == want["param_groups"]
    assert out["state"]["state"].keys() == want["state"].keys()
    for k, entry in want["state"].items():
        for key, value in entry.items():
            np.testing.assert_array_equal(out["state"]["state"][k][key], value)
    train(*copied, X, y, 25)
    for p, got, q in zip(straight[0].parameters(), out["params"],
                         copied[0].parameters()):
        assert np.array_equal(got, p.data), name
        assert np.array_equal(q.data, p.data), name


def test_optimizer_deepcopy_alone_steps_its_own_parameters():
    a = ad.Array([1.0, 2.0])
    opt = ad.optim.SGD([a], lr=0.5)
    (a * a).sum().backward()
    twin = copy.deepcopy(opt)
    twin.step()
    np.testing.assert_array_equal(a.data, [1.0, 2.0])
    np.testing.assert_array_equal(twin.params[0].data, [0.0, 0.0])   # a - 0.5 * 2a


# -- recordings ------------------------------------------------------------------------

def f_net(x):
    W = np.array([[0.5, -1.0, 0.25], [1.5, 0.3, -0.7]])
    return ad.logsumexp(ad.tanh(W @ x) * x[:2]) + (x ** 2).sum()


def f_net_np(x):
    W = np.array([[0.5, -1.0, 0.25], [1.5, 0.3, -0.7]])
    z = anp.tanh(anp.dot(W, x)) * x[:2]
    return anp.log(anp.sum(anp.exp(z))) + anp.sum(x ** 2)


def f_branch(x):
    return x * x if x > 0 else -x


def test_recordings_round_trip_values_gradients_hessians(tmp_path):
    F = ad.record(f_net, np.array([0.1, 0.2, 0.3]))
    B = ad.record(f_branch, 2.0)
    x = np.array([0.7, -0.4, 1.1])
    out = in_fresh_process((F, B, x), """
        F, B, x = obj
        out = {"value": F(x), "grad": F.grad(x), "hessian": F.hessian(x),
               "branch": (B(3.0), B.grad(3.0), len(B))}
        try:
            B(-1.0)
        except ad.BranchError as e:
            out["flipped"] = str(e)
        """, tmp_path)
    assert out["value"] == F(x)
    np.testing.assert_array_equal(out["grad"], F.grad(x))
    np.testing.assert_array_equal(out["hessian"], F.hessian(x))
    np.testing.assert_allclose(out["value"], f_net_np(x), rtol=1e-12)
    np.testing.assert_allclose(out["grad"], autograd.grad(f_net_np)(x), rtol=1e-10)
    np.testing.assert_allclose(out["hessian"], autograd.hessian(f_net_np)(x),
                               rtol=1e-9, atol=1e-12)
    assert out["branch"] == (9.0, 6.0, len(B))
    assert "comparison" in out["flipped"]


def test_recording_deepcopy_replays_the_same():
    F = ad.record(f_net, np.array([0.1, 0.2, 0.3]))
    G = copy.deepcopy(F)
    assert G is not F and G.trace.tape is not F.trace.tape
    x = np.array([-0.3, 0.9, 0.2])
    assert G(x) == F(x)
    np.testing.assert_array_equal(G.hvp(x, np.ones(3)), F.hvp(x, np.ones(3)))


def _resigned(data, edit):
    """data (a saved recording) with edit applied to its payload and the
    checksum made right again."""
    _, _, head_len = tapefile._PREFIX.unpack_from(data)
    start = tapefile._PREFIX.size + head_len
    body = bytearray(data[:-32])
    edit(body, start)
    return bytes(body) + hashlib.sha256(body).digest()


def test_a_tampered_pickled_recording_raises_value_error():
    F = ad.record(f_net, np.array([0.1, 0.2, 0.3]))
    blob = pickle.dumps(F)
    data = tapefile.dumps(F)
    assert blob.count(data) == 1          # pickle carries the saved file
    flipped = bytearray(data)
    flipped[-40] ^= 1
    with pytest.raises(ValueError, match="a pickled recording: checksum"):
        pickle.loads(blob.replace(data, bytes(flipped)))
    # edited and re-signed: the last entry's operand made a forward reference
    _, _, head_len = tapefile._PREFIX.unpack_from(data)
    header = json.loads(data[tapefile._PREFIX.size:tapefile._PREFIX.size + head_len])
    last = header["entries"] - 1
    at = header["columns"]["a"][0] + 4 * last

    def forward_ref(body, start):
        body[start + at:start + at + 4] = struct.pack("<i", last)

    edited = _resigned(data, forward_ref)
    with pytest.raises(ValueError, match="a pickled recording: not a valid recording"):
        pickle.loads(blob.replace(data, edited))


def test_recordings_that_cannot_be_saved_cannot_be_pickled():
    cube = ad.custom_op(lambda x: x ** 3, lambda g, out, x: (3 * x ** 2 * g,))
    F = ad.record(lambda x: cube(x).sum(), np.ones(2))
    for copier in (pickle.dumps, copy.deepcopy):
        with pytest.raises(ValueError, match="its rules are Python code"):
            copier(F)
    P = ad.record(lambda x: (x * 2.0, x * 3.0), 1.0)
    with pytest.raises(ValueError, match="one result"):
        pickle.dumps(P)


@ad.function
def lazy_square(x):
    return x * x


def test_functions_pickle_by_name():
    assert lazy_square(3.0) == 9.0
    assert pickle.loads(pickle.dumps(lazy_square)) is lazy_square
    assert copy.deepcopy(lazy_square) is lazy_square
    local = ad.function(lambda x: x + 1.0)
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(local)
