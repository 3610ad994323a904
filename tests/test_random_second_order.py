"""Random programs (hypothesis) through the tangent and second-order sweeps:
Jacobian-vector and Hessian-vector products against hyper-dual numbers
(bench/hyperdual.py, exact second derivatives by forward mode, no code
shared with the tape), eagerly and through ad.record replays."""
import math

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import pyautodiff as ad
from bench import fuzz
from bench.hyperdual import HyperDual

# custom ops have first-order rules only (tested in test_functional)
OPS = sorted(name for name in fuzz.STEPS if name != "custom")
steps = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 1000),
                           st.integers(0, 1000), st.floats(0.5, 2.0)),
                 min_size=1, max_size=20)
inputs = st.lists(st.floats(-2.0, 2.0), min_size=1, max_size=3)


def program(prog):
    def f(*xs):
        return fuzz.run_program(prog, list(xs))
    return f


def hyperdual_hessian(prog, xs):
    k = len(xs)
    value, grad = None, [0.0] * k
    hess = [[0.0] * k for _ in range(k)]
    for i in range(k):
        for j in range(k):
            out = fuzz.run_program(prog, [HyperDual(x, float(n == i), float(n == j))
                                          for n, x in enumerate(xs)])
            value, grad[i], hess[i][j] = out.a, out.b, out.d
    return value, grad, hess


def close(x, y):
    return math.isclose(x, y, rel_tol=1e-8, abs_tol=1e-8)


def check_against_hyperduals(hvp, jvp, prog, xs, usable=assume):
    value, grad, hess = hyperdual_hessian(prog, xs)
    usable(all(math.isfinite(h) and abs(h) < 1e8 for row in hess for h in row))
    k = len(xs)
    for j in range(k):
        e = tuple(float(n == j) for n in range(k))
        column = hvp(*xs, e)
        for i in range(k):
            assert close(column[i], hess[i][j]), (i, j, column[i], hess[i][j])
        got_value, tangent = jvp(*xs, e)
        assert close(got_value, value) and close(tangent, grad[j])


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(steps, inputs)
def test_hvp_and_jvp_of_random_programs_agree_with_hyperduals(prog, xs):
    assume(not fuzz.near_kink(prog, xs))
    argnum = tuple(range(len(xs)))
    f = program(prog)
    check_against_hyperduals(ad.hvp(f, argnum), ad.jvp(f, argnum), prog, xs)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(steps, inputs, st.floats(0.8, 1.2))
def test_replayed_second_derivatives_at_new_points_agree_with_hyperduals(prog, xs, scale):
    argnum = tuple(range(len(xs)))
    F = ad.record(program(prog), *xs, argnum=argnum)
    moved = [x * scale + 0.01 for x in xs]
    assume(not fuzz.near_kink(prog, moved))
    check_against_hyperduals(F.hvp, F.jvp, prog, moved)


def test_the_second_order_check_sees_every_scalar_op():
    reached = set()
    with ad.Tape() as t:
        x, y = ad.Value(0.3), ad.Value(-0.7)
        for name in OPS:
            fuzz.STEPS[name](x, y, 1.5)
        t.flush()
        reached = {t._c.op[i] for i in range(t.nflushed)}
    from pyautodiff import _core
    from helpers import ARRAY_ONLY_OPS, COMPARISON_OPS
    assert reached == set(_core.OPS.values()) - {
        _core.OPS[n] for n in ARRAY_ONLY_OPS | COMPARISON_OPS}


@pytest.mark.parametrize("seed", range(3))
def test_a_wrong_second_partial_would_be_caught(seed):
    """The check has teeth: a hyper-dual with a deliberately wrong tanh''
    disagrees with the tape on a program through tanh."""
    prog = [("tanh", 0, 0, 1.0), ("mul", 1, 0, 1.0)]
    xs = [0.3 + 0.2 * seed]
    original = HyperDual.tanh

    def wrong(self):
        t = math.tanh(self.a)
        return self._chain(t, 1 - t * t, +2 * t * (1 - t * t))
    HyperDual.tanh = wrong
    try:
        with pytest.raises(AssertionError):
            check_against_hyperduals(ad.hvp(program(prog), (0,)),
                                     ad.jvp(program(prog), (0,)), prog, xs,
                                     usable=lambda ok: None)
    finally:
        HyperDual.tanh = original
