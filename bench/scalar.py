"""Scalar problems: a long op chain, and one step of micrograd's moons demo."""
import math
import operator
import random
import time
from functools import lru_cache

from bench.registry import Result, Unsupported, problem
from pyautodiff.datasets import make_moons
from pyautodiff.demo import train_step

# --- a. the op chain -------------------------------------------------------

LEAVES = (0.5, 0.75, 1.5, -0.25)
MUL_LEAVES = (0, 1, 3)  # |leaf| < 1: multiplying pulls the running value toward 0
DIV_LEAF = 2            # 1.5: dividing pulls toward 0 as well
MIX = (("mul", 40), ("add", 30), ("sub", 10), ("unary", 10), ("square", 5), ("div", 5))
UNARY = {"tanh": math.tanh, "relu": lambda v: 0.0 if v < 0 else v}
BINARY = {"mul": operator.mul, "add": operator.add, "sub": operator.sub,
          "div": operator.truediv, "square": operator.pow}


def chain_ops(cfg):
    return 10_000 if cfg.quick else 100_000


def _float_step(x, kind, leaf, unary):
    if kind == "unary":
        return unary(x)
    if kind == "square":
        return x ** 2
    return BINARY[kind](x, LEAVES[leaf])


def _draw_leaf(rng, kind):
    if kind == "mul":
        return rng.choice(MUL_LEAVES)
    if kind in ("add", "sub"):
        return rng.randrange(len(LEAVES))
    if kind == "div":
        return DIV_LEAF
    return None


@lru_cache(maxsize=None)
def chain_plan(n, seed=0):
    """The op sequence: n (kind, leaf index or None) pairs, the same for
    every backend.

    Kinds are drawn with the weights in MIX.  Squaring is the one op that
    could run away, so a drawn square is postponed until the running value
    (followed in floats, for both the tanh and the relu variant) is within
    [-1, 1]; the mix stays as drawn, and |value| stays below ~20.
    """
    rng = random.Random(seed)
    kinds = [k for k, weight in MIX for _ in range(weight)]
    xs = {name: LEAVES[0] for name in UNARY}
    plan, pending_squares = [], 0
    while len(plan) < n:
        if pending_squares and all(abs(x) <= 1 for x in xs.values()):
            kind, leaf = "square", None
            pending_squares -= 1
        else:
            kind = rng.choice(kinds)
            if kind == "square":
                pending_squares += 1
                continue
            leaf = _draw_leaf(rng, kind)
        plan.append((kind, leaf))
        xs = {name: _float_step(x, kind, leaf, UNARY[name]) for name, x in xs.items()}
    return tuple(plan)


def _bind(plan, leaves, unary):
    """The plan as (function, argument) pairs on this backend's scalars.
    operator.mul(x, a) is exactly ``x * a``, so the loop runs what user code runs."""
    return [(unary, None) if kind == "unary"
            else (operator.pow, 2) if kind == "square"
            else (BINARY[kind], leaves[leaf])
            for kind, leaf in plan]


def _run(x, steps):
    for f, a in steps:
        x = f(x) if a is None else f(x, a)
    return x


@problem("scalar-chain", {"record": "ns/op", "backward": "ns/op"},
         size=lambda cfg: f"{chain_ops(cfg) // 1000}k ops",
         note="scalar-chain: ops 40% *, 30% +, 10% -, 10% tanh, 5% **2, 5% / on 4 leaves; "
              "ns per chain op. micrograd's API has no tanh, so the micrograd and "
              "pyautodiff.micrograd rows use relu in its place; micrograd also records "
              "a - b as a + (-1*b) and a / b as a * b**-1 (2 nodes each), all in the time.")
def scalar_chain(backend, cfg):
    if not backend.scalar:
        raise Unsupported("an array engine")
    n = chain_ops(cfg)
    plan = chain_plan(n)
    note = "" if backend.unary_name == "tanh" else f"{backend.unary_name} for tanh"
    if backend.Value is None:  # no-AD baseline: record only
        steps = _bind(plan, LEAVES, backend.unary)
        t0 = time.perf_counter_ns()
        y = _run(LEAVES[0], steps)
        t1 = time.perf_counter_ns()
        # Untimed: the relu variant's value too, so every backend is checked.
        check = {f"{backend.unary_name} value": y,
                 "relu value": _run(LEAVES[0], _bind(plan, LEAVES, UNARY["relu"]))}
        return Result({"record": [(t1 - t0) / n]}, check, note)

    leaves = [backend.Value(v) for v in LEAVES]
    steps = _bind(plan, leaves, backend.unary)
    t0 = time.perf_counter_ns()
    y = _run(leaves[0], steps)
    t1 = time.perf_counter_ns()
    y.backward()
    t2 = time.perf_counter_ns()
    check = {f"{backend.unary_name} value": y.data}
    check.update({f"{backend.unary_name} grad[{i}]": leaf.grad for i, leaf in enumerate(leaves)})
    return Result({"record": [(t1 - t0) / n], "backward": [(t2 - t1) / n]}, check, note)


# --- b. one training step of micrograd's moons demo ------------------------

MOONS_SEED = 1337  # micrograd's demo seeds numpy and random with 1337


def moons_steps(cfg):
    return 2 if cfg.quick else 3


@problem("moons-step", {"train step": "ms/step"},
         size=lambda cfg: "MLP 2-16-16-1, 100 pts",
         note="moons-step: micrograd's demo, forward + hinge loss + L2 + zero_grad + "
              "backward + SGD update, same seeded weights on every backend.")
def moons_step(backend, cfg):
    if not backend.scalar:
        raise Unsupported("an array engine")
    if backend.MLP is None:
        raise Unsupported(backend.moons_note or "no micrograd-style MLP")
    X, y = make_moons(100, noise=0.1, seed=MOONS_SEED)
    random.seed(MOONS_SEED)  # nn draws its weights from the global generator
    model = backend.MLP(2, [16, 16, 1])
    # Inputs are wrapped in the MLP's own Value class: pyautodiff's row uses
    # the drop-in MLP, whose Value is pyautodiff.micrograd.engine.Value.
    Value = type(model.parameters()[0])
    times, check = [], {}
    for k in range(moons_steps(cfg)):
        t0 = time.perf_counter_ns()
        # micrograd's demo step (pyautodiff/demo.py), the same code for every engine
        loss, _ = train_step(model, Value, X, y, lr=1.0 - 0.9 * k / 100)
        times.append((time.perf_counter_ns() - t0) / 1e6)
        check[f"loss at step {k}"] = loss
    return Result({"train step": times}, check, backend.moons_note)

