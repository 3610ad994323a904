"""Random array programs (hypothesis): values against NumPy running the same
program, gradients against central differences."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pyautodiff as ad

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


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
