"""pyautodiff.testing: check_grad in every mode and order (and that each
reference it names is consulted), the pure-Python baseline engine against
micrograd and the dual numbers, the demo's baseline from any directory, and
that neither the package nor the tests import bench/."""
import ast
import math
import os
import random

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import demo
from pyautodiff.testing import Dual, check_grad, dual_grad, pure
from pyautodiff.testing.rules import RULES

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)
RNG = np.random.default_rng(7)


def test_ad_check_grad_is_the_testing_one():
    assert ad.check_grad is check_grad


@pytest.mark.parametrize("f, args", [
    (lambda x: x * x.tanh() if hasattr(x, "tanh") else x * math.tanh(x), (0.7,)),
    (lambda x, y: np.sum(np.tanh(x) * y) + y ** 2, (RNG.normal(size=3), 0.7)),
    (lambda p: p["a"] * np.sum(np.exp(np.sin(p["b"]))),
     ({"a": 1.3, "b": RNG.normal(size=(2, 2))},)),
    (lambda x, A: np.sum(np.sqrt(1.0 + (A @ x) ** 2)), (RNG.normal(size=2),
                                                        RNG.normal(size=(3, 2)))),
    (lambda x: np.var(x) + np.max(x) / (1.0 + np.abs(x[0])), (np.array([0.3, -1.2, 2.0]),)),
])
def test_check_grad_passes_in_every_mode_and_order(f, args):
    check_grad(f, *args, modes=("rev", "fwd"), order=2, duals=None)


def test_check_grad_fwd_takes_vector_outputs():
    A = RNG.normal(size=(3, 2))
    check_grad(lambda x: np.tanh(A @ x), RNG.normal(size=2), modes="fwd", duals=True)


def _cube(x):
    return x * x * x


def test_check_grad_catches_a_wrong_vjp_and_a_wrong_jvp():
    x = np.array([0.5, -1.0, 2.0])
    wrong_vjp = ad.custom_op(_cube, lambda g, out, x: (3.0 * x * g,),
                             jvp=lambda ts, out, x: 3.0 * x * x * ts[0])
    wrong_jvp = ad.custom_op(_cube, lambda g, out, x: (3.0 * x * x * g,),
                             jvp=lambda ts, out, x: 3.0 * x * ts[0])
    with pytest.raises(AssertionError, match=r"argument 0, index \(\d,\): gradient"):
        check_grad(lambda x: np.sum(wrong_vjp(x)), x)
    check_grad(lambda x: np.sum(wrong_vjp(x)), x, modes="fwd")
    with pytest.raises(AssertionError, match=r"argument 0, index \(\d,\): jvp"):
        check_grad(lambda x: np.sum(wrong_jvp(x)), x, modes="fwd")
    check_grad(lambda x: np.sum(wrong_jvp(x)), x)


def test_check_grad_consults_the_dual_numbers(monkeypatch):
    # a deliberately wrong oracle row: only the dual numbers see it
    monkeypatch.setattr(RULES["sin"], "d", (lambda x, v: 1.001 * math.cos(x),))
    x = np.array([0.3, 1.1])
    with pytest.raises(AssertionError, match="dual numbers"):
        check_grad(lambda x: np.sum(np.sin(x)), x)
    check_grad(lambda x: np.sum(np.sin(x)), x, duals=False)


def test_check_grad_consults_the_hyper_dual_numbers(monkeypatch):
    monkeypatch.setattr(RULES["tanh"], "dd", (lambda x, v: 2.0 * v * (1.0 - v * v),))
    x = np.array([0.3, 1.1])
    check_grad(lambda x: np.sum(np.tanh(x)), x)         # first order: unaffected
    with pytest.raises(AssertionError, match=r"argument 0, index \(\d,\) and argument 0, "
                       r"index \(\d,\): second derivative .* hyper-dual numbers"):
        check_grad(lambda x: np.sum(np.tanh(x)), x, order=2)


def test_check_grad_uses_duals_only_where_f_runs_on_them():
    # a forward that wants floats: it refuses dual numbers
    square = ad.custom_op(lambda x: np.asarray(x, dtype=np.float64) ** 2,
                          lambda g, out, x: (2.0 * x * g,))

    def f(x):
        return np.sum(square(x) * x)
    x = np.array([0.3, -0.4])
    check_grad(f, x)                            # the duals are skipped
    check_grad(f, x, duals=False)
    with pytest.raises(TypeError):
        check_grad(f, x, duals=True)


def test_check_grad_refuses_a_function_that_differs_on_duals():
    def f(x):
        return x * x if isinstance(x, float) else x * x * x
    with pytest.raises(AssertionError, match="does not compute the same"):
        check_grad(f, 0.7)


def test_check_grad_rejects_unknown_modes_and_orders():
    with pytest.raises(ValueError, match="modes"):
        check_grad(lambda x: x * x, 0.5, modes=("bwd",))
    with pytest.raises(ValueError, match="order"):
        check_grad(lambda x: x * x, 0.5, order=3)
    with pytest.raises(TypeError):
        check_grad(lambda: 1.0)


# -- the pure-Python baseline engine -----------------------------------------------------

def _leaf_graph(leaves):
    a, b, c = leaves
    d = a * b + c ** 2 - b / (a * a + 1.0)
    return ((-d).relu() + (d * 0.5 + 2.0).relu() * a) * c - 3.0 / (b * b + 1.0)


def test_the_pure_engine_agrees_with_micrograd():
    mg = pytest.importorskip("micrograd.engine")
    for seed in range(20):
        xs = [random.Random(seed).uniform(-2, 2) for _ in range(3)]
        ours, theirs = [pure.Value(x) for x in xs], [mg.Value(x) for x in xs]
        out, ref = _leaf_graph(ours), _leaf_graph(theirs)
        out.backward()
        ref.backward()
        assert out.data == pytest.approx(ref.data, rel=1e-14)
        assert [v.grad for v in ours] == pytest.approx([v.grad for v in theirs],
                                                       rel=1e-12, abs=1e-12)


def test_the_pure_engine_agrees_with_dual_numbers():
    def f(a, b):
        return (a.tanh() * b).exp() + (a * a + 1.0).log() - b ** 3 + 2.0 - a / (b * b + 1.0)
    for xs in [(0.3, -0.7), (1.2, 0.4), (-0.8, 1.5)]:
        leaves = [pure.Value(x) for x in xs]
        out = f(*leaves)
        out.backward()
        value, grads = dual_grad(f, xs)
        assert out.data == pytest.approx(value, rel=1e-13)
        assert [v.grad for v in leaves] == pytest.approx(grads, rel=1e-12, abs=1e-12)


def test_the_pure_engines_mlp_is_micrographs_network():
    random.seed(3)
    model = pure.MLP(2, [4, 1])
    out = model([pure.Value(0.5), pure.Value(-1.0)])
    assert isinstance(out, pure.Value) and len(model.parameters()) == 17


def test_the_demo_compares_with_the_packaged_engine_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = []
    demo.main(steps=1, compare_steps=1, out=lines.append)
    assert "the pure-Python reference engine (pyautodiff.testing.pure)" in lines[-1]


def _imports(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module or ""


def test_neither_the_package_nor_the_tests_import_bench():
    for top in ("pyautodiff", "tests"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    bad = [m for m in _imports(path) if m == "bench" or m.startswith("bench.")]
                    assert not bad, (path, bad)


def test_dual_numbers_mix_with_numpy_object_arrays():
    x = np.array([Dual(0.5, 1.0), Dual(-1.0, 0.0)], dtype=object)
    out = np.sum(np.sin(x) * 2.0 + x @ np.array([1.0, 3.0]))
    assert isinstance(out, Dual)
    # x @ [1, 3] = -2.5, added to both elements
    assert out.a == pytest.approx(2 * (math.sin(0.5) + math.sin(-1.0)) - 2 * 2.5)
    assert out.b == pytest.approx(2 * math.cos(0.5) + 2.0)
