"""ad.optim.lr_scheduler: the learning rates over 50 steps against torch's
documented closed forms (computed here by hand), param_groups as torch
code uses them, and the optimizer's C step reading the lr a scheduler
set."""
import math
import pickle

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff.optim import lr_scheduler

STEPS = 50


def make_opt(cls=ad.optim.SGD, lr=0.1, **kw):
    return cls([ad.Array(np.ones(3)), ad.Value(2.0)], lr=lr, **kw)


def run(opt, sched, metrics=None):
    """The lr in force at each of STEPS epochs: read before the epoch's
    optimizer step, then the scheduler steps, as torch's loop does."""
    lrs = []
    for k in range(STEPS):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[k])
        assert sched.get_last_lr() == [opt.lr]
    return lrs


def test_steplr_is_gamma_to_the_epoch_over_step_size():
    opt = make_opt(lr=0.5)
    sched = lr_scheduler.StepLR(opt, step_size=7, gamma=0.3)
    lrs = run(opt, sched)
    assert lrs == pytest.approx([0.5 * 0.3 ** (t // 7) for t in range(STEPS)],
                                rel=1e-14)
    assert sched.last_epoch == STEPS
    assert lrs[:7] == [0.5] * 7           # unchanged until the first decay


def test_exponentiallr_is_gamma_to_the_epoch():
    opt = make_opt(ad.optim.Adam, lr=0.01)
    lrs = run(opt, lr_scheduler.ExponentialLR(opt, gamma=0.9))
    assert lrs == pytest.approx([0.01 * 0.9 ** t for t in range(STEPS)],
                                rel=1e-13)


@pytest.mark.parametrize("T_max, eta_min", [(10, 0.0), (17, 0.001), (50, 0.0)])
def test_cosine_annealing_recursion_equals_the_closed_form(T_max, eta_min):
    base = 0.1
    opt = make_opt(lr=base)
    lrs = run(opt, lr_scheduler.CosineAnnealingLR(opt, T_max, eta_min))
    closed = [eta_min + (base - eta_min)
              * (1 + math.cos(math.pi * t / T_max)) / 2 for t in range(STEPS)]
    np.testing.assert_allclose(lrs, closed, rtol=0, atol=1e-12)
    assert lrs[0] == base
    # past T_max it climbs back up (no restart), through the 0/0 point
    if T_max < STEPS:
        assert lrs[T_max] == pytest.approx(eta_min, abs=1e-12)
        assert lrs[T_max + 1] > lrs[T_max]


def test_cosine_annealing_is_recursive_on_the_current_lr():
    # torch's chainable form: a hand-set lr is carried on, not overwritten
    opt = make_opt(lr=0.1)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    opt.step()
    sched.step()
    opt.param_groups[0]["lr"] = 0.05
    sched.step()
    ratio = (1 + math.cos(2 * math.pi / 10)) / (1 + math.cos(math.pi / 10))
    assert opt.lr == pytest.approx(0.05 * ratio, rel=1e-15)


def test_lambdalr_is_the_initial_lr_times_the_function():
    opt = make_opt(ad.optim.RMSprop, lr=0.02)
    lrs = run(opt, lr_scheduler.LambdaLR(opt, lambda t: 1.0 / (1 + t)))
    assert lrs == pytest.approx([0.02 / (1 + t) for t in range(STEPS)],
                                rel=1e-15)


def plateau_oracle(metrics, lr, factor, patience, threshold, cooldown,
                   min_lr, mode="min", rel=True, eps=1e-8):
    """ReduceLROnPlateau's rule as its documentation states it."""
    best = math.inf if mode == "min" else -math.inf
    bad = cool = 0
    lrs = []
    for m in metrics:
        lrs.append(lr)
        if mode == "min":
            better = m < (best * (1 - threshold) if rel else best - threshold)
        else:
            better = m > (best * (1 + threshold) if rel else best + threshold)
        if better:
            best, bad = m, 0
        else:
            bad += 1
        if cool > 0:
            cool -= 1
            bad = 0
        if bad > patience:
            new = max(lr * factor, min_lr)
            if lr - new > eps:
                lr = new
            cool, bad = cooldown, 0
    return lrs


@pytest.mark.parametrize("mode, rel", [("min", True), ("min", False),
                                       ("max", True), ("max", False)])
def test_reduce_on_plateau_follows_its_rule(mode, rel):
    rng = np.random.default_rng(3)
    # improves, then stalls with noise, then a small bump
    metrics = np.concatenate([np.linspace(1.0, 0.5, 10),
                              0.5 + 0.01 * rng.random(30),
                              np.linspace(0.45, 0.44, 10)])
    if mode == "max":
        metrics = 2.0 - metrics
    kw = dict(factor=0.5, patience=3, threshold=0.01, cooldown=2, min_lr=0.02)
    opt = make_opt(lr=0.1)
    sched = lr_scheduler.ReduceLROnPlateau(
        opt, mode=mode, threshold_mode="rel" if rel else "abs", **kw)
    lrs = run(opt, sched, metrics)
    want = plateau_oracle(metrics, 0.1, mode=mode, rel=rel, **kw)
    assert lrs == want
    assert min(lrs) == 0.02 and lrs[0] == 0.1   # it did reduce, to the floor


def test_reduce_on_plateau_defaults_are_torchs():
    opt = make_opt(lr=1.0)
    sched = lr_scheduler.ReduceLROnPlateau(opt)
    for _ in range(11):
        sched.step(1.0)
    assert opt.lr == 1.0                  # patience 10: not yet
    sched.step(1.0)
    assert opt.lr == pytest.approx(0.1, rel=1e-15)
    # eps: a change smaller than 1e-8 is not made
    opt.lr = 1e-8
    sched = lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    sched.step(1.0)
    sched.step(1.0)
    assert opt.lr == 1e-8


def test_the_c_step_uses_the_lr_the_scheduler_set():
    w = ad.Array(np.array([1.0, -2.0]))
    opt = ad.optim.SGD([w], lr=0.5)
    sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.1)
    expected = w.data.copy()
    for lr in (0.5, 0.05, 0.005):
        opt.zero_grad()
        (w * w).sum().backward()
        expected = expected - lr * (2 * expected)
        opt.step()
        sched.step()
        np.testing.assert_array_equal(w.data, expected)


def test_param_groups_behave_as_torchs_dicts():
    opt = make_opt(ad.optim.Adam, lr=0.01, betas=(0.8, 0.9))
    group = opt.param_groups[0]
    assert len(opt.param_groups) == 1
    assert group["lr"] == 0.01 and group["betas"] == (0.8, 0.9)
    assert group["params"] is opt.params
    group["lr"] = 0.002
    assert opt.lr == 0.002                # the optimizer's own setting
    opt.lr = 0.003
    assert group["lr"] == 0.003
    with pytest.raises(ValueError, match="Invalid learning rate: -1.0"):
        group["lr"] = -1
    group["initial_lr"] = 0.5             # a key of the user's
    assert dict(group)["initial_lr"] == 0.5 and "initial_lr" in group
    with pytest.raises(KeyError, match="can't delete 'lr'"):
        del group["lr"]
    with pytest.raises(TypeError, match="parameters are fixed"):
        group["params"] = []


def test_scheduler_state_dict_round_trips():
    opt = make_opt(lr=0.1)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=20)
    straight = run(opt, sched)[:STEPS]
    opt2 = make_opt(lr=0.1)
    sched2 = lr_scheduler.CosineAnnealingLR(opt2, T_max=20)
    for _ in range(20):
        opt2.step()
        sched2.step()
    saved = pickle.loads(pickle.dumps((sched2.state_dict(), opt2.state_dict())))
    opt3 = make_opt(lr=0.1)
    sched3 = lr_scheduler.CosineAnnealingLR(opt3, T_max=20)
    opt3.load_state_dict(saved[1])
    sched3.load_state_dict(saved[0])
    rest = []
    for _ in range(STEPS - 20):
        rest.append(opt3.lr)
        opt3.step()
        sched3.step()
    assert rest == straight[20:]


def test_scheduler_arguments_are_checked():
    opt = make_opt()
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        lr_scheduler.StepLR([], 3)
    with pytest.raises(ValueError, match="step_size"):
        lr_scheduler.StepLR(opt, 0)
    with pytest.raises(ValueError, match="T_max"):
        lr_scheduler.CosineAnnealingLR(opt, 0)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode 'low' is unknown"):
        lr_scheduler.ReduceLROnPlateau(opt, mode="low")
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.ExponentialLR(make_opt(), 0.9, last_epoch=4)
    with pytest.raises(TypeError, match="lr_lambda should be a function"):
        lr_scheduler.LambdaLR(opt, 0.5)


def test_lr_scheduler_is_reachable_as_in_torch():
    assert ad.optim.lr_scheduler is lr_scheduler
    from pyautodiff.optim.lr_scheduler import StepLR     # noqa: F401
