"""The nested-derivative fuzzer (pyautodiff/testing/fuzz_nested.py; ``python
-m pyautodiff.testing.fuzz --kind nested`` runs many more): random programs
under random nestings of the functional API against Taylor-series jets.
A nesting pyautodiff does not support yet raises NotImplementedError and
is counted apart; no program may disagree.  The reference itself is checked
against central differences, level by level."""
import random
import re

import numpy as np
import pytest

from helpers import fuzz_size
from pyautodiff.testing import fuzz, fuzz_nested, taylor_api
from pyautodiff.testing.fuzz_nested import Tally, check, random_program


def _quiet(*args):
    pass


def test_random_programs_have_no_disagreement():
    n = fuzz_size(20, long=500)
    tally = fuzz_nested.fuzz_nested(n, seed=11, strict=True, out=_quiet)
    c = tally.counts
    assert sum(c.values()) == n
    assert c["disagree"] == 0, tally.disagreements[0]
    assert c["unsupported"] == 0, tally.unsupported
    assert c["agree"] >= 0.8 * n
    assert tally.failures(strict=True) == 0


def test_the_nestings_of_interest_agree():
    """Third order, mixed modes, forward over reverse over forward, and
    closures over the outer variable (which every shape draws at times)."""
    nestings = [("grad", "grad", "grad"), ("jacobian", "hessian"), ("hvp", "hvp"),
                ("jvp", "vjp"), ("vjp", "jvp"), ("grad", "hvp"), ("jvp", "grad", "vjp")] + \
        [(name,) for name in fuzz_nested.ORDERS]
    tally = fuzz_nested.fuzz_nested(60, seed=5, nestings=nestings, out=_quiet)
    assert tally.counts["disagree"] == 0, tally.disagreements[0]
    assert tally.counts["unsupported"] == 0, tally.unsupported
    assert set(tally.agreed) >= {"grad(grad(grad(f)))", "jacobian(hessian(f))",
                                 "grad(f)", "hessian(f)"}
    assert any("closure" in label for label in tally.agreed)


def test_the_command_line_profile():
    assert fuzz.main(["--kind", "nested", "--count", "5", "--seed", "2"]) == 0
    tally = fuzz_nested.fuzz_nested(5, seed=2, out=_quiet)
    strict = fuzz.main(["--kind", "nested", "--count", "5", "--seed", "2", "--strict"])
    assert strict == (1 if tally.counts["unsupported"] else 0)
    assert fuzz.main(["--kind", "nested", "--count", "5", "--nesting", "grad(grad(f))"]) == 0
    with pytest.raises(ValueError, match="not a nesting"):
        fuzz_nested.parse_nesting("grad(foo(f))")


KINKED = re.compile(r"relu|abs|maximum|minimum|np\.max|np\.min")


def _smooth_programs(n, seed):
    """Programs without ops that have kinks (differences across one are
    meaningless) whose reference is defined."""
    k = 0
    while n:
        k += 1
        program = random_program(random.Random(f"{seed}/{k}"), seed=k)
        if KINKED.search(program.source):
            continue
        want = fuzz_nested.reference(program)
        if not isinstance(want, str):
            n -= 1
            yield program, want


@pytest.mark.parametrize("seed", range(3))
def test_the_reference_agrees_with_central_differences(seed):
    """At each level of the nesting in turn, the derivative by central
    differences (of the jets below it, and on the jets above it)."""
    for program, want in _smooth_programs(4, seed):
        for depth in range(1, len(program.levels) + 1):
            got = program.run(taylor_api.CentralDifferences(depth))
            scale = max(1.0, float(np.max(np.abs(want))))
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale,
                                       err_msg=f"depth {depth}\n{program}")


class _Tampered(taylor_api.Transforms):
    """The jets' API with one wrong number: hvp 1% too large."""

    def hvp(self, f, argnum=0):
        return lambda x, v: super(_Tampered, self).hvp(f)(x, v) * 1.01


class _Unsupported(taylor_api.Transforms):
    def hvp(self, f, argnum=0):
        raise NotImplementedError("hvp here is not supported yet")


def test_a_wrong_number_is_a_disagreement_and_not_implemented_is_unsupported():
    program = next(p for p in (random_program(random.Random(k), seed=k,
                                              nestings=[("hvp", "grad")])
                               for k in range(100))
                   if not isinstance(fuzz_nested.reference(p), str))
    assert check(program, _Tampered())[0] == "disagree"
    assert check(program, taylor_api.Transforms())[0] == "agree"
    outcome, detail = check(program, _Unsupported())
    assert outcome == "unsupported" and "not supported" in detail
    tally = Tally()
    tally.add(program, outcome, detail)
    assert tally.unsupported == {program.label: (1, detail)}


def test_the_programs_reach_every_op_and_transform():
    programs = [random_program(random.Random(f"ops/{k}")) for k in range(400)]
    text = "\n".join(p.source for p in programs)
    for spelled in ["+", "-", "*", "/", "** np.tanh(", "** 3", "** 2", "(-",
                    "np.abs(", "ad.relu(", "np.tanh(", "np.exp(", "np.log(",
                    "ad.sigmoid(", "np.sin(", "np.cos(", "np.sqrt(", "np.log1p(",
                    "np.expm1(", "np.arctan(", "np.maximum(", "np.minimum(",
                    "np.sum(", "np.mean(", "np.max(", "np.min(", "ad.logsumexp(",
                    "axis=", "np.reshape(", "np.transpose(", "[::-1]", "@",
                    "ad.grad(", "ad.value_and_grad(", "ad.jvp(", "ad.vjp(", "back",
                    "ad.hvp(", "ad.jacobian(", "ad.hessian("]:
        assert spelled in text, spelled
    # the inner function closing over the outer variable
    closing = [p for p in programs if len(p.levels) > 1 and p.levels[1].closure]
    assert closing
    for p in closing:
        inner = p.source.split("def F2(x2):")[1].split("\n    p2 = ")[0]
        assert "x1" in inner, p


@pytest.mark.parametrize("nesting", ["grad(grad(grad(f)))", "grad(jvp(f))",
                                     "grad(hvp(f))", "jacobian(hessian(f))",
                                     "jvp(vjp(f))", "hvp(hvp(f))"])
def test_the_nestings_of_interest_are_drawn_and_have_a_reference(nesting):
    names = fuzz_nested.parse_nesting(nesting)
    found = 0
    for k in range(20):
        program = random_program(random.Random(k), nestings=[names], seed=k)
        assert program.label.split(" [")[0] == nesting
        found += not isinstance(fuzz_nested.reference(program), str)
    assert found >= 10


def test_a_wrong_second_derivative_in_pyautodiff_would_be_caught(monkeypatch):
    """The check has teeth on the real library: a grad of a grad whose
    inner gradient's recorded rules (each partial derivative times the
    adjoint) are 1% off disagrees."""
    from pyautodiff import derivatives
    times = derivatives.times
    monkeypatch.setattr(derivatives, "times", lambda g, d: times(g, d) * 1.01)
    outcomes = [check(random_program(random.Random(k), seed=k,
                                     nestings=[("grad", "grad")]))[0] for k in range(20)]
    assert outcomes.count("disagree") >= 5, outcomes
