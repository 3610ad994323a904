"""Random programs (hypothesis) through the differential fuzzer's checks:
the tape's values and gradients against forward-mode duals, and replays of
the tape by the C forward sweep.  ``python -m pyautodiff.testing.fuzz`` runs the same
checks over many more programs."""
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import pyautodiff as ad
from pyautodiff import _core
from pyautodiff.testing import fuzz, fuzz_scalars
from helpers import VALUE_OPS, fuzz_size

steps = st.lists(
    st.tuples(st.sampled_from(sorted(fuzz_scalars.STEPS)),
              st.integers(0, 1000), st.integers(0, 1000), st.floats(0.5, 2.0)),
    min_size=1, max_size=25)
inputs = st.lists(st.floats(-2.0, 2.0), min_size=1, max_size=4)


def test_the_fuzzer_reaches_every_scalar_op_of_the_table():
    reached = set()
    with ad.Tape() as t:
        x, y = ad.Value(0.3), ad.Value(-0.7)
        for name in fuzz_scalars.STEPS:
            out = fuzz_scalars.STEPS[name](x, y, 1.5)
        t.flush()
        reached = {t._c.op[i] for i in range(t.nflushed)}
    # every row of the oracle table that Values record, inputs and a custom op
    assert reached == {_core.OPS[name] for name in VALUE_OPS | {"LEAF", "EXTERN"}}


@settings(max_examples=fuzz_size(200), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(steps, inputs)
def test_random_programs_agree_with_duals_and_replays(prog, xs):
    assume(not fuzz_scalars.near_kink(prog, xs))
    assert fuzz_scalars.disagreements(prog, xs) == []


@settings(max_examples=50, deadline=None)
@given(steps, inputs)
def test_two_roots_and_repeated_backward_add_up(prog, xs):
    leaves = [ad.Value(x) for x in xs]
    out = fuzz_scalars.run_program(prog, leaves)
    other = fuzz_scalars.run_program(prog[: max(1, len(prog) // 2)], leaves)
    out.backward()
    first = [v.grad for v in leaves]
    for v in leaves:
        v.grad = 0
    other.backward()
    second = [v.grad for v in leaves]
    out.backward()
    other.backward()
    assert [v.grad for v in leaves] == pytest.approx(
        [f + 2 * s for f, s in zip(first, second)], rel=1e-12, abs=1e-12)


def test_fuzz_command_reports_its_counts(capsys):
    assert fuzz.main(["--examples", "200", "--seed", "7"]) == 0
    out = capsys.readouterr().out
    assert "programs tried" in out and "0 disagreed" in out
