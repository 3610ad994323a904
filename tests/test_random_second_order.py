"""Random programs (hypothesis) through the tangent and second-order sweeps:
Jacobian-vector and Hessian-vector products against hyper-dual numbers
(pyautodiff/testing/hyperdual.py, exact second derivatives by forward
mode, no code shared with the tape), eagerly and through ad.record replays
at moved inputs (pyautodiff/testing/fuzz_second.py; ``python -m
pyautodiff.testing.fuzz --kind second`` runs many more)."""
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import pyautodiff as ad
from pyautodiff import _core
from pyautodiff.testing import fuzz, fuzz_scalars, fuzz_second
from pyautodiff.testing.rules import RULES
from helpers import VALUE_OPS, fuzz_size

steps = st.lists(st.tuples(st.sampled_from(fuzz_second.OPS), st.integers(0, 1000),
                           st.integers(0, 1000), st.floats(0.5, 2.0)),
                 min_size=1, max_size=20)
inputs = st.lists(st.floats(-2.0, 2.0), min_size=1, max_size=3)


@settings(max_examples=fuzz_size(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(steps, inputs)
def test_random_programs_second_derivatives_agree_with_hyperduals(prog, xs):
    assume(not fuzz_scalars.near_kink(prog, xs))
    problems = fuzz_second.disagreements(prog, xs)
    assume(problems is not None)
    assert problems == []


def test_the_second_order_check_sees_every_scalar_op():
    with ad.Tape() as t:
        x, y = ad.Value(0.3), ad.Value(-0.7)
        for name in fuzz_second.OPS:
            fuzz_scalars.STEPS[name](x, y, 1.5)
        t.flush()
        reached = {t._c.op[i] for i in range(t.nflushed)}
    assert reached == {_core.OPS[name] for name in VALUE_OPS | {"LEAF"}}


@pytest.mark.parametrize("seed", range(3))
def test_a_wrong_second_partial_would_be_caught(seed, monkeypatch):
    """The check has teeth: the oracle table with a deliberately wrong
    tanh'' makes the hyper-duals disagree with the tape on a program
    through tanh."""
    monkeypatch.setattr(RULES["tanh"], "dd", (lambda x, v: +2.0 * v * (1.0 - v * v),))
    prog = [("tanh", 0, 0, 1.0), ("mul", 1, 0, 1.0)]
    assert fuzz_second.disagreements(prog, [0.3 + 0.2 * seed])


def test_fuzz_command_runs_the_second_order_kind(capsys):
    assert fuzz.main(["--kind", "second", "--examples", "100", "--seed", "3"]) == 0
    assert "0 disagreed" in capsys.readouterr().out
