"""ad.optim against a reference written from torch.optim's documented
single-tensor formulas (plain Python floats, same order of operations), and
against torch itself when it imports."""
import math
import threading

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff.micrograd.engine import Value as MicrogradValue


# --- the reference: one parameter is a list of floats -----------------------

def lerp(x, y, w):
    # torch's lerp: the formula depends on the size of the weight
    return x + w * (y - x) if abs(w) < 0.5 else y - (y - x) * (1 - w)


class Reference:
    """A torch.optim rule on lists of floats; grads None are skipped."""

    def __init__(self, rule, **hyper):
        self.rule = rule
        self.h = hyper
        self.state = {}

    def step(self, params, grads):
        for k, (p, g) in enumerate(zip(params, grads)):
            if g is None:
                continue
            st = self.state.setdefault(k, {"step": 0, "bufs": None})
            st["step"] += 1
            params[k] = [getattr(self, self.rule)(st, e, pe, ge)
                         for e, (pe, ge) in enumerate(zip(p, g))]

    def sgd(self, st, e, p, g):
        h = self.h
        lr, mom, damp = h["lr"], h.get("momentum", 0), h.get("dampening", 0)
        wd = h.get("weight_decay", 0)
        if wd != 0:
            g = g + wd * p
        if mom != 0:
            if st["step"] == 1:
                b = g
            else:
                b = st["buf"][e] * mom + (1 - damp) * g
            st.setdefault("buf", {})[e] = b
            g = g + mom * b if h.get("nesterov") else b
        return p + (-lr) * g

    def adam(self, st, e, p, g, decoupled=False):
        h = self.h
        lr, (b1, b2), eps = h["lr"], h["betas"], h["eps"]
        wd = h["weight_decay"]
        if decoupled:
            p = p * (1 - lr * wd)
        elif wd != 0:
            g = g + wd * p
        m = lerp(st.setdefault("m", {}).get(e, 0.0), g, 1 - b1)
        v = st.setdefault("v", {}).get(e, 0.0) * b2 + ((1 - b2) * g) * g
        st["m"][e], st["v"][e] = m, v
        t = st["step"]
        step_size = lr / (1 - b1 ** t)
        denom = math.sqrt(v) / math.sqrt(1 - b2 ** t) + eps
        return p + ((-step_size) * m) / denom

    def adamw(self, st, e, p, g):
        return self.adam(st, e, p, g, decoupled=True)

    def rmsprop(self, st, e, p, g):
        h = self.h
        lr, alpha, eps = h["lr"], h["alpha"], h["eps"]
        wd, mom = h["weight_decay"], h["momentum"]
        if wd != 0:
            g = g + wd * p
        s = st.setdefault("s", {}).get(e, 0.0) * alpha + ((1 - alpha) * g) * g
        st["s"][e] = s
        if h["centered"]:
            a = lerp(st.setdefault("a", {}).get(e, 0.0), g, 1 - alpha)
            st["a"][e] = a
            avg = math.sqrt(s + (-a) * a)
        else:
            avg = math.sqrt(s)
        avg = avg + eps
        if mom > 0:
            b = st.setdefault("b", {}).get(e, 0.0) * mom + g / avg
            st["b"][e] = b
            return p + (-lr) * b
        return p + ((-lr) * g) / avg


ADAM = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0}
RMS = {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0,
       "momentum": 0, "centered": False}

CASES = [
    ("SGD", "sgd", {"lr": 0.05}),
    ("SGD", "sgd", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", "sgd", {"lr": 0.03, "momentum": 0.8, "dampening": 0.3,
                    "weight_decay": 0.1}),
    ("SGD", "sgd", {"lr": 0.05, "momentum": 0.9, "nesterov": True,
                    "weight_decay": 0.01}),
    ("Adam", "adam", dict(ADAM)),
    ("Adam", "adam", dict(ADAM, lr=0.05, weight_decay=0.1)),
    # betas below 0.5: torch's lerp takes its other formula
    ("Adam", "adam", dict(ADAM, lr=0.02, betas=(0.3, 0.45), eps=1e-3)),
    ("AdamW", "adamw", dict(ADAM, weight_decay=1e-2)),
    ("AdamW", "adamw", dict(ADAM, lr=0.05, betas=(0.8, 0.99), weight_decay=0.3)),
    ("RMSprop", "rmsprop", dict(RMS)),
    ("RMSprop", "rmsprop", dict(RMS, momentum=0.9, weight_decay=0.05)),
    ("RMSprop", "rmsprop", dict(RMS, centered=True, alpha=0.9)),
    ("RMSprop", "rmsprop", dict(RMS, centered=True, momentum=0.5, alpha=0.3,
                                lr=1e-3)),
]
CASE_IDS = [f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)]


def make_optimizer(name, params, hyper):
    return getattr(ad.optim, name)(params, **hyper)


# --- parameters, and the gradient they are given ------------------------------

SHAPES = {"values": [None] * 5, "arrays": [(3,), (2, 3), ()],
          "mixed": [None, (4,), None, (2, 2), None]}


def make_params(kind, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for shape in SHAPES[kind]:
        if shape is None:
            params.append(ad.Value(float(rng.normal())))
        else:
            params.append(ad.Array(rng.normal(size=shape)))
    return params


def flat(p):
    return [p.data] if isinstance(p, ad.Value) else p.data.ravel().tolist()


def oracle(x, k):
    """The gradient given to parameter k at data x: a fixed smooth
    function, the same on both sides, so trajectories can agree exactly."""
    x = np.asarray(x, dtype=float)
    scale = 1.0 + 0.5 * k
    return scale * (x - 0.3 * k) + 0.7 * np.cos(3.0 * x)


def set_grad(p, g):
    """Give parameter p the gradient g exactly (after a zero_grad)."""
    if isinstance(p, ad.Value):
        p.grad = float(g[0])
    else:
        p.backward(np.reshape(g, p.shape))   # a leaf's own seed: grad += g


def run_both(name, rule, hyper, params, steps, present=lambda step, k: True):
    opt = make_optimizer(name, params, hyper)
    ref = Reference(rule, **hyper)
    ref_params = [flat(p) for p in params]
    for step in range(steps):
        opt.zero_grad()
        grads = []
        for k, p in enumerate(params):
            if present(step, k):
                g = oracle(ref_params[k], k).tolist()
                set_grad(p, np.array(g))
                grads.append(g)
            else:
                grads.append(None)
        opt.step()
        ref.step(ref_params, grads)
    return ref_params


def assert_close(params, ref_params, rtol=1e-12):
    for p, r in zip(params, ref_params):
        np.testing.assert_allclose(flat(p), r, rtol=rtol, atol=1e-12)


# --- trajectories -------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(SHAPES))
@pytest.mark.parametrize("name,rule,hyper", CASES, ids=CASE_IDS)
def test_trajectory_matches_torch_formulas(name, rule, hyper, kind):
    params = make_params(kind)
    start = [flat(p) for p in params]
    ref = run_both(name, rule, hyper, params, steps=60)
    assert_close(params, ref)
    assert all(flat(p) != s for p, s in zip(params, start))   # they moved


@pytest.mark.parametrize("name,rule,hyper", CASES, ids=CASE_IDS)
def test_parameters_without_gradient_are_skipped(name, rule, hyper):
    """Parameter 1 has no gradient on some steps: it does not move then,
    and its step count (Adam's bias correction) and momentum wait."""
    params = make_params("mixed", seed=1)
    absent = {(0, 1), (1, 1), (4, 1), (5, 1), (5, 3), (9, 0)}
    ref = run_both(name, rule, hyper, params, steps=12,
                   present=lambda step, k: (step, k) not in absent)
    assert_close(params, ref)


def test_a_parameter_never_reached_does_not_move():
    used, unused = ad.Value(1.0), ad.Array([2.0, 3.0])
    opt = ad.optim.AdamW([used, unused], lr=0.1, weight_decay=0.5)
    for _ in range(5):
        opt.zero_grad()
        (used * used).backward()
        opt.step()
    assert used.data < 1.0
    assert unused.data.tolist() == [2.0, 3.0]      # no decay without a grad


def test_zero_grad_keeps_zero_gradients_when_not_set_to_none():
    """set_to_none=False: zero gradients are gradients, so momentum and
    weight decay keep moving an unused parameter, as in torch."""
    p = ad.Array([1.0, -2.0])
    opt = ad.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.1)
    ref = Reference("sgd", lr=0.1, momentum=0.9, weight_decay=0.1)
    rp = [[1.0, -2.0]]
    (p * p).sum().backward()
    g = [2.0, -4.0]
    opt.step()
    ref.step(rp, [g])
    for _ in range(3):
        opt.zero_grad(set_to_none=False)
        assert p.grad.tolist() == [0.0, 0.0]
        opt.step()
        ref.step(rp, [[0.0, 0.0]])
    assert_close([p], rp)
    opt.zero_grad()             # set_to_none: now it is skipped
    before = p.data.copy()
    opt.step()
    assert p.data.tolist() == before.tolist()


def test_an_array_reset_to_zero_grad_still_steps():
    """Array.zero_grad() gives the gradient's memory back (it reads as
    zeros); a step still treats it as a zero gradient, not as none."""
    p = ad.Array(np.linspace(-1.0, 1.0, 1000))      # big enough to be cached
    opt = ad.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.1)
    ref = Reference("sgd", lr=0.1, momentum=0.9, weight_decay=0.1)
    rp = [p.data.tolist()]
    (p * p).sum().backward()
    opt.step()
    ref.step(rp, [(2.0 * np.array(rp[0])).tolist()])
    for _ in range(3):
        p.zero_grad()
        assert not p.grad.any()
        opt.step()
        ref.step(rp, [[0.0] * 1000])
    assert_close([p], rp)
    (p * 3.0).sum().backward()      # accumulates from zero again
    assert p.grad.tolist() == [3.0] * 1000
    (p * 2.0).sum().backward()
    assert p.grad.tolist() == [5.0] * 1000


def test_zero_grad_resets_values_and_arrays():
    v, a = ad.Value(2.0), ad.Array([1.0, 2.0, 3.0])
    opt = ad.optim.SGD([v, a], lr=0.1)
    (v * (a * a).sum()).backward()
    assert v.grad == 14.0 and a.grad.tolist() == [4.0, 8.0, 12.0]
    opt.zero_grad()
    assert v.grad == 0.0 and a.grad.tolist() == [0.0, 0.0, 0.0]
    (v * a.sum()).backward()          # gradients accumulate from zero again
    assert v.grad == 6.0 and a.grad.tolist() == [2.0, 2.0, 2.0]


def test_end_to_end_with_backward_on_a_mixed_model():
    """Real gradients from backward(); the reference takes the same ones."""
    rng = np.random.default_rng(3)
    W = ad.Array(rng.normal(size=(3, 2)))
    b = ad.Array(np.zeros(2))
    s = ad.Value(0.5)
    X = rng.normal(size=(8, 3))
    Y = rng.normal(size=(8, 2))
    params = [W, b, s]
    hyper = dict(ADAM, lr=0.05, weight_decay=0.01)
    opt = ad.optim.Adam(params, **hyper)
    ref = Reference("adam", **hyper)
    rp = [flat(p) for p in params]
    losses = []
    for _ in range(40):
        opt.zero_grad()
        loss = ((ad.tanh(X @ W + b) * s - Y) ** 2).mean()
        loss.backward()
        losses.append(loss.item())
        ref.step(rp, [flat_grad(p) for p in params])
        opt.step()
        assert_close(params, rp)
    assert losses[-1] < 0.8 * losses[0]


def flat_grad(p):
    return [p.grad] if isinstance(p, ad.Value) else p.grad.ravel().tolist()


def test_learning_rate_can_change_between_steps():
    p = ad.Value(1.0)
    opt = ad.optim.SGD([p], lr=0.1)
    p.grad = 2.0
    opt.step()
    opt.lr = 0.01
    opt.step()
    assert p.data == (1.0 + (-0.1) * 2.0) + (-0.01) * 2.0
    with pytest.raises(ValueError, match="learning rate"):
        opt.lr = -1.0
    assert opt.lr == 0.01


def test_params_from_an_iterator_and_micrograd_values():
    from pyautodiff.micrograd.nn import MLP
    import random
    random.seed(0)
    model = MLP(2, [3, 1])
    opt = ad.optim.SGD(iter(model.parameters()), lr=0.1)
    x = [MicrogradValue(1.0), MicrogradValue(-1.0)]
    before = [p.data for p in model.parameters()]
    out = model(x)
    model.zero_grad()
    out.backward()
    grads = [p.grad for p in model.parameters()]
    opt.step()
    for p, d, g in zip(model.parameters(), before, grads):
        assert p.data == d + (-0.1) * g
        assert isinstance(p.data, float)


# --- data, tapes and compaction -------------------------------------------------

def test_value_data_and_tape_agree_after_a_step():
    p = ad.Value(3.0)
    opt = ad.optim.SGD([p], lr=0.5)
    p.grad = 1.0
    opt.step()
    assert p.data == 2.5
    y = p * 2.0                       # recording reads the new data
    assert y.data == 5.0
    y.backward()
    assert p.grad == 3.0              # 1.0 left from before, plus 2.0


def test_array_data_is_updated_in_place():
    p = ad.Array([1.0, 2.0])
    buffer = p.data
    opt = ad.optim.SGD([p], lr=0.5)
    p.backward(np.array([1.0, -1.0]))
    opt.step()
    assert p.data is buffer and buffer.tolist() == [0.5, 2.5]
    (p * p).sum().backward()          # the tape computes with the new data
    assert p.grad.tolist() == [1.0 + 1.0, -1.0 + 5.0]


def test_steps_follow_parameters_renumbered_by_compaction():
    tape = ad.current_tape()
    garbage = [ad.Value(float(k)) * 2.0 for k in range(50)]
    params = make_params("mixed", seed=4)
    name, rule, hyper = CASES[5]
    opt = make_optimizer(name, params, hyper)
    ref = Reference(rule, **hyper)
    rp = [flat(p) for p in params]
    before = [p._i for p in params]
    for step in range(6):
        if step == 3:
            del garbage
            tape.compact()            # the parameters' entries move down
            assert [p._i for p in params] != before
        opt.zero_grad()
        grads = [oracle(r, k).tolist() for k, r in enumerate(rp)]
        for p, g in zip(params, grads):
            set_grad(p, np.array(g))
        opt.step()
        ref.step(rp, grads)
    assert_close(params, rp)


def test_long_training_loop_survives_automatic_compaction():
    w, b = ad.Value(0.0), ad.Value(0.0)
    opt = ad.optim.SGD([w, b], lr=0.02, momentum=0.5)
    xs = [0.1 * k for k in range(40)]
    for _ in range(400):              # ~50k entries a run: compactions happen
        opt.zero_grad()
        loss = sum((w * x + b - (2 * x + 1)) ** 2 for x in xs) / len(xs)
        loss.backward()
        opt.step()
    assert ad.current_tape().generation > 0
    assert abs(w.data - 2.0) < 1e-3 and abs(b.data - 1.0) < 1e-3


def test_params_on_an_explicit_tape_and_across_tapes():
    outer = ad.Value(1.5)
    with ad.Tape() as t:
        inner = ad.Array([1.0, -1.0])
        opt = ad.optim.RMSprop([outer, inner], lr=0.01, momentum=0.5)
        ref = Reference("rmsprop", **dict(RMS, lr=0.01, momentum=0.5))
        rp = [flat(outer), flat(inner)]
        for _ in range(5):
            opt.zero_grad()
            loss = (inner * outer).sum() + (inner * inner).sum()
            loss.backward()
            grads = [flat_grad(outer), flat_grad(inner)]
            ref.step(rp, grads)
            opt.step()
        assert_close([outer, inner], rp)
        assert inner._t is t and outer._t is not t
    with pytest.raises(ad.TapeError):
        opt.step()                    # the inner tape is released


def test_params_of_another_thread_are_optimized():
    box = {}
    thread = threading.Thread(target=lambda: box.update(
        v=ad.Value(1.0), a=ad.Array([1.0, 2.0])))
    thread.start()
    thread.join()
    v, a = box["v"], box["a"]
    opt = ad.optim.SGD([v, a], lr=0.1)
    (v * 3.0 + (a * a).sum()).backward()
    assert v.grad == 3.0 and a.grad.tolist() == [2.0, 4.0]
    opt.step()
    assert v.data == pytest.approx(0.7, abs=1e-15)
    assert a.data.tolist() == pytest.approx([0.8, 1.6], abs=1e-15)


# --- errors, as torch gives them --------------------------------------------------

@pytest.mark.parametrize("make,match", [
    (lambda p: ad.optim.SGD(p, lr=-0.1), "learning rate"),
    (lambda p: ad.optim.SGD(p, lr=float("nan")), "learning rate"),
    (lambda p: ad.optim.SGD(p, lr=0.1, momentum=-0.5), "momentum"),
    (lambda p: ad.optim.SGD(p, lr=0.1, weight_decay=-1), "weight_decay"),
    (lambda p: ad.optim.SGD(p, lr=0.1, nesterov=True), "Nesterov"),
    (lambda p: ad.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1,
                            nesterov=True), "Nesterov"),
    (lambda p: ad.optim.Adam(p, lr=-1e-3), "learning rate"),
    (lambda p: ad.optim.Adam(p, eps=-1e-8), "epsilon"),
    (lambda p: ad.optim.Adam(p, betas=(1.0, 0.999)), "beta parameter at index 0"),
    (lambda p: ad.optim.Adam(p, betas=(0.9, -0.1)), "beta parameter at index 1"),
    (lambda p: ad.optim.Adam(p, weight_decay=-0.1), "weight_decay"),
    (lambda p: ad.optim.AdamW(p, betas=(0.9, 1.5)), "index 1"),
    (lambda p: ad.optim.RMSprop(p, alpha=-0.9), "alpha"),
    (lambda p: ad.optim.RMSprop(p, eps=-1.0), "epsilon"),
    (lambda p: ad.optim.RMSprop(p, momentum=-0.1), "momentum"),
    (lambda p: ad.optim.RMSprop(p, lr=-0.1), "learning rate"),
])
def test_bad_hyperparameters_raise_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make([ad.Value(1.0)])


def test_bad_parameter_lists():
    v = ad.Value(1.0)
    with pytest.raises(ValueError, match="empty"):
        ad.optim.Adam([])
    with pytest.raises(TypeError, match="iterable"):
        ad.optim.Adam(v)
    with pytest.raises(TypeError, match="iterable"):
        ad.optim.Adam(ad.Array([1.0, 2.0]))
    with pytest.raises(TypeError, match="set"):
        ad.optim.Adam({v})
    with pytest.raises(TypeError, match="float"):
        ad.optim.Adam([v, 2.0])
    with pytest.raises(ValueError, match="non-leaf"):
        ad.optim.Adam([v * 2.0])
    with pytest.raises(ValueError, match="non-leaf"):
        ad.optim.Adam([ad.Array([1.0]) + 1.0])
    with pytest.raises(ValueError, match="twice"):
        ad.optim.Adam([v, v])
    with ad.no_grad():
        detached = v * 2.0
    with pytest.raises(ValueError, match="no_grad"):
        ad.optim.Adam([detached])


def test_a_stale_table_is_an_error_not_a_wild_write():
    p = ad.Value(1.0)
    q = ad.Value(2.0) * 3.0
    opt = ad.optim.SGD([p], lr=0.1)
    opt._entry[0] = q._i              # as if the table missed a renumbering
    with pytest.raises(ValueError, match="not a leaf"):
        opt.step()
    opt._entry[0] = 10 ** 9
    with pytest.raises(ValueError, match="not a leaf"):
        opt.zero_grad()
    opt._size[0] = 5
    opt._entry[0] = p._i
    with pytest.raises(ValueError, match="elements"):
        opt.step()


def test_c_rejects_a_malformed_optimizer_struct():
    from pyautodiff._core import check, ffi, lib
    o = ffi.new("ad_optim *")
    o.nparams = 1                     # but no table
    with pytest.raises(ValueError, match="table"):
        check(lib.ad_optim_step(o), o)
    o.nparams = -1
    with pytest.raises(ValueError, match="negative"):
        check(lib.ad_optim_zero_grad(o, 1), o)
    o.nparams = 0
    o.rule = 99
    with pytest.raises(ValueError, match="rule"):
        check(lib.ad_optim_step(o), o)


# --- torch itself, when it is installed -------------------------------------------

@pytest.mark.parametrize("name,rule,hyper", CASES, ids=CASE_IDS)
def test_against_torch(name, rule, hyper):
    torch = pytest.importorskip("torch")
    params = make_params("mixed", seed=2)
    tparams = [torch.tensor(np.array(flat(p)), dtype=torch.float64,
                            requires_grad=True) for p in params]
    opt = make_optimizer(name, params, hyper)
    topt = getattr(torch.optim, name)(tparams, foreach=False, **hyper)
    for _ in range(60):
        opt.zero_grad()
        topt.zero_grad()
        for k, (p, tp) in enumerate(zip(params, tparams)):
            g = oracle(flat(p), k)
            set_grad(p, g)
            tp.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        topt.step()
    # torch's vectorized CPU kernels may fuse multiply-adds: last-bit
    # differences that grow a little over the steps
    for p, tp in zip(params, tparams):
        np.testing.assert_allclose(flat(p), tp.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
