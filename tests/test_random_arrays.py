"""Random array programs (hypothesis): values against NumPy running the same
program, gradients against central differences; then a bounded profile of
the differential fuzzer's array checks (pyautodiff/testing/fuzz_arrays.py) and of its
reference itself against central differences."""
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import pyautodiff as ad
from pyautodiff import _core
from helpers import DERIVATIVE_ONLY_OPS, STEP_OPS, fuzz_size
from pyautodiff.testing import fuzz, fuzz_arrays
from pyautodiff.testing.fuzz_arrays import FuzzReference

# step -> (on Arrays, on ndarrays); safe domains by construction
STEPS = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / (b * b + 1.0), lambda a, b: a / (b * b + 1.0)),
    "tanh": (lambda a, b: ad.tanh(a), lambda a, b: np.tanh(a)),
    "exp": (lambda a, b: ad.exp(ad.tanh(a)), lambda a, b: np.exp(np.tanh(a))),
    "log": (lambda a, b: ad.log(a * a + 1.0), lambda a, b: np.log(a * a + 1.0)),
    "sigmoid": (lambda a, b: ad.sigmoid(a), lambda a, b: 1 / (1 + np.exp(-a))),
    "sum0": (lambda a, b: a.sum(axis=0, keepdims=True),
             lambda a, b: a.sum(axis=0, keepdims=True)),
    "mean1": (lambda a, b: a.mean(axis=-1, keepdims=True),
              lambda a, b: a.mean(axis=-1, keepdims=True)),
    "T2": (lambda a, b: a.T.T, lambda a, b: a),
    "rev": (lambda a, b: a[::-1], lambda a, b: a[::-1]),
    "scale": (lambda a, b: 2.5 * a - 1.0, lambda a, b: 2.5 * a - 1.0),
    "square": (lambda a, b: a ** 2, lambda a, b: a ** 2),
}

shapes = st.sampled_from([(3,), (2, 3), (1, 3), (2, 1), (), (4, 1)])
programs = st.lists(st.tuples(st.sampled_from(sorted(STEPS)), st.integers(0, 99),
                              st.integers(0, 99)), min_size=1, max_size=8)


def run(prog, leaves, which):
    nodes = list(leaves)
    for name, i, j in prog:
        fn = STEPS[name][which]
        nodes.append(fn(nodes[i % len(nodes)], nodes[j % len(nodes)]))
    out = nodes[-1]
    for extra in nodes[len(leaves):-1][-2:]:
        out = out + extra * 0.5
    return out


@settings(max_examples=fuzz_size(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=programs, sa=shapes, sb=shapes, seed=st.integers(0, 2**32 - 1))
def test_random_array_programs(prog, sa, sb, seed):
    rng = np.random.default_rng(seed)
    xs = [rng.uniform(-1.5, 1.5, size=sa), rng.uniform(-1.5, 1.5, size=sb)]
    try:
        expected = run(prog, xs, 1)
    except (ValueError, IndexError) as exc:     # NumPy refuses: so do we
        with pytest.raises(type(exc)):
            run(prog, [ad.Array(x) for x in xs], 0)
        return
    leaves = [ad.Array(x) for x in xs]
    out = run(prog, leaves, 0)
    np.testing.assert_allclose(out.data, expected, rtol=1e-10, atol=1e-12)
    w = rng.normal(size=np.shape(expected))
    out.backward(w)
    for k, x in enumerate(xs):
        num = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            up = [y.copy() for y in xs]
            down = [y.copy() for y in xs]
            up[k][idx] += 1e-6
            down[k][idx] -= 1e-6
            num[idx] = (np.sum(run(prog, up, 1) * w) - np.sum(run(prog, down, 1) * w)) / 2e-6
        np.testing.assert_allclose(leaves[k].grad, num, rtol=1e-4, atol=1e-6)


# -- the differential fuzzer's array profile (python -m pyautodiff.testing.fuzz --arrays)

program_seeds = st.integers(0, 2**64 - 1)


@settings(max_examples=fuzz_size(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program_seeds)
def test_random_array_programs_agree_with_the_reference_and_replays(seed):
    prog = fuzz_arrays.random_program(random.Random(seed), max_steps=10)
    reason, problems = fuzz_arrays.check(prog)
    assert problems == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program_seeds)
def test_the_reference_gradients_agree_with_central_differences(seed):
    # the oracle itself, checked the slow way on small programs
    prog = fuzz_arrays.random_program(random.Random(seed), max_steps=6)
    inputs = [np.array(p["data"], dtype=float) for op, _, p in prog.steps if op == "input"]
    assume(sum(x.size for x in inputs) <= 40)
    nodes, grads, near = fuzz_arrays.reference(prog.steps, prog.seed)
    probe = FuzzReference(None)
    with np.errstate(all="ignore"):
        fuzz_arrays.run(prog.steps, probe)
    assume(nodes is not None and not near and not probe.on_kink)
    w = np.ones(nodes[-1].v.shape) if prog.seed is None else prog.seed

    def f(xs):
        with np.errstate(all="ignore"):
            out, _ = fuzz_arrays.run(prog.steps, FuzzReference(None), xs)
        return float(np.sum(out[-1].v * w))

    for k, x in enumerate(inputs):
        for idx in np.ndindex(x.shape):
            h = 1e-6 * max(1.0, abs(x[idx]))
            up = [y.copy() for y in inputs]
            down = [y.copy() for y in inputs]
            up[k][idx] += h
            down[k][idx] -= h
            num = (f(up) - f(down)) / (2 * h)
            assert np.asarray(grads[k])[idx] == pytest.approx(num, rel=1e-4, abs=1e-5)


# every op of the enum but those only nested derivatives record, and the
# step functions (tests/test_nondifferentiable.py, test_traced.py)
DRAWN = set(_core.OPS.values()) - {_core.OPS[name]
                                   for name in DERIVATIVE_ONLY_OPS | STEP_OPS}


def test_the_array_fuzzer_reaches_every_array_op_and_every_op_of_the_enum():
    ops, codes = set(), set()
    master = random.Random(0)
    for _ in range(1000):           # until every op is seen (a few hundred)
        prog = fuzz_arrays.random_program(random.Random(master.getrandbits(64)))
        ops |= {op for op, _, _ in prog.steps}
        with ad.Tape() as t:
            fuzz_arrays.run(prog.steps, fuzz_arrays.TapeOps())
            t.flush()
            codes |= {t._c.op[i] for i in range(t.nflushed)}
        if codes == DRAWN and ops == set(fuzz_arrays.OPS) | {"input"}:
            break
    assert ops == set(fuzz_arrays.OPS) | {"input"}
    assert codes == DRAWN


def test_the_array_checker_catches_a_wrong_derivative(monkeypatch):
    wrong = ad.custom_op(lambda x: x * x * x, lambda g, out, x: (3.0 * x * g,))
    monkeypatch.setattr(fuzz_arrays, "_cube", wrong)
    master = random.Random(1)
    caught = 0
    for _ in range(300):            # (cube is one op of many: a few in 300)
        prog = fuzz_arrays.random_program(random.Random(master.getrandbits(64)))
        if any(op == "cube" for op, _, _ in prog.steps):
            caught += bool(fuzz_arrays.check(prog)[1])
    assert caught >= 3


def test_fuzz_command_runs_array_programs(capsys):
    assert fuzz.main(["--arrays", "--examples", "40", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "array programs tried" in out and "0 disagreed" in out
    assert fuzz.main(["--kind", "all", "--examples", "20"]) == 0
    out = capsys.readouterr().out
    assert "array programs tried" in out and out.count("0 disagreed") == 3
