"""Differential fuzzing of the scalar tape.

A program is a list of steps ``(op, i, j, c)``: apply ``op`` to nodes ``i``
and ``j`` (taken modulo the nodes so far) with constant ``c``.  Every op of
the C enum is reached, constants sit on either side, nodes are reused many
times and several results are combined at the end, so shared subgraphs are
reached along many paths.  Each program is run three ways and compared:

- on ``ad.Value``, recorded, then ``backward()`` (values and gradients);
- on forward-mode dual numbers (``pyautodiff.testing.dual``, one pass per
  input), whose rules are the oracle table's (``rules.py``);
- replayed by the C forward sweep at the recorded inputs (bit for bit) and
  at fresh inputs (against the duals evaluated there).

``python -m pyautodiff.testing.fuzz --examples N [--seed S]`` (or
``python -m bench.fuzz`` in a checkout) runs N random programs and reports
how many were tried and how many disagreed (fuzz.py); ``--kind
arrays|second|all`` runs the array programs (fuzz_arrays.py) and second
derivatives (fuzz_second.py) too.  The test suite runs bounded profiles of
the same checks through hypothesis.
"""
import math
import operator
import random
import time

import pyautodiff as ad
from pyautodiff import _core, ops
from pyautodiff._core import ffi, lib
from .dual import Dual
from .rules import RULES, into_domain, spelled

# a custom op (an extern entry, its rule in Python) as the tape sees it
_cube = ad.custom_op(lambda x: x * x * x, lambda g, out, x: (3.0 * x * x * g,))


def _custom_cube(a):
    return _cube(a) if isinstance(a, ad.Value) else a * a * a


def _unary_step(op):
    """The step of a unary op of the package's table (ops.py), spelled as
    Values spell it, its operand mapped into the oracle row's domain."""
    rule = RULES[op.name.lower()]
    if op.method.startswith("__"):                   # -x, abs(x)
        fn = getattr(operator, op.method.strip("_"))
    else:
        fn = operator.methodcaller(op.method)
    return lambda a, b, c: fn(into_domain(rule, a))


# op -> what it does on Values and duals alike; domains kept valid by
# construction (division by a nonzero number, powers of a positive one, and
# each unary op's operand in its row's domain)
STEPS = {
    "custom": lambda a, b, c: _custom_cube(a.tanh()),
    "add": lambda a, b, c: a + b,
    "sub": lambda a, b, c: a - b,
    "mul": lambda a, b, c: a * b,
    "div": lambda a, b, c: a / (b * b + 1.0),
    "pow": lambda a, b, c: (a * a + 0.5) ** (b.tanh() if hasattr(b, "tanh") else b),
    "addc": lambda a, b, c: c + a,
    "subc": lambda a, b, c: a - c,
    "rsubc": lambda a, b, c: c - a,
    "mulc": lambda a, b, c: a * c,
    "divc": lambda a, b, c: a / c,
    "rdivc": lambda a, b, c: c / (a * a + 1.0),
    "powc": lambda a, b, c: (a * a + 0.5) ** c,
    "square": lambda a, b, c: a ** 2,
    "rpowc": lambda a, b, c: c ** a.tanh(),
    **{op.name.lower(): _unary_step(op) for op in ops.ELEMENTWISE
       if op.method in ops.UNARY},
    # NumPy's functions of two operands (np.arctan2(a, b) of Values), the
    # singular point (0, 0) of arctan2 and hypot out of reach (and hypot's
    # second operand bounded, so that it does not grow a program's values)
    "arctan2": lambda a, b, c: spelled(RULES["arctan2"])(a, b * b + 0.5),
    "hypot": lambda a, b, c: spelled(RULES["hypot"])(a, b.tanh() + 1.5),
    "logaddexp": lambda a, b, c: spelled(RULES["logaddexp"])(a, b),
}


def random_program(rng, max_steps=30, max_inputs=4):
    """(steps, inputs) drawn from rng."""
    n = rng.randint(1, max_steps)
    steps = [(rng.choice(sorted(STEPS)), rng.randrange(1000), rng.randrange(1000),
              rng.uniform(0.5, 2.0)) for _ in range(n)]
    inputs = [rng.uniform(-2.0, 2.0) for _ in range(rng.randint(1, max_inputs))]
    return steps, inputs


def run_program(steps, leaves):
    """The program's result on these leaves (Values or duals)."""
    nodes = list(leaves)
    for op, i, j, c in steps:
        nodes.append(STEPS[op](nodes[i % len(nodes)], nodes[j % len(nodes)], c))
    out = nodes[-1]
    for extra in nodes[len(leaves):-1][-3:]:
        out = out + extra * 0.5
    return out


def near_kink(steps, inputs):
    """True where a unary op with a kink (relu, abs) sits (almost) on it:
    there the one-sided derivatives differ and any two AD methods may
    rightly disagree."""
    watch = []
    nodes = [Dual(x) for x in inputs]
    for op, i, j, c in steps:
        a = nodes[i % len(nodes)]
        rule = RULES.get(op)
        if rule is not None and rule.arity == 1 and rule.kink is not None:
            watch.append(abs(rule.kink(into_domain(rule, a)).a))
        nodes.append(STEPS[op](a, nodes[j % len(nodes)], c))
    return any(w < 1e-9 for w in watch)


def _close(x, y, rel=1e-9, abs_=1e-9):
    return math.isclose(x, y, rel_tol=rel, abs_tol=abs_) or (math.isnan(x) and math.isnan(y))


def disagreements(steps, inputs):
    """What differs between the tape, the duals and the replays (a list of
    strings, empty when all agree)."""
    problems = []
    with ad.Tape() as tape:
        leaves = [ad.Value(x) for x in inputs]
        out = run_program(steps, leaves)
        out.backward()
        grads = [v.grad for v in leaves]
        for k in range(len(inputs)):
            d = run_program(steps, [Dual(x, 1.0 if j == k else 0.0)
                                    for j, x in enumerate(inputs)])
            if not _close(out.data, d.a, 1e-12, 1e-12):
                problems.append(f"value {out.data!r} vs dual {d.a!r}")
            if not _close(grads[k], d.b):
                problems.append(f"d/dx{k}: tape {grads[k]!r} vs dual {d.b!r}")
        problems += _replay_problems(tape, leaves, out, steps, inputs)
    return problems


def _replay_problems(tape, leaves, out, steps, inputs):
    tape.flush()
    c = tape._c
    n = tape.nflushed
    recorded = list(ffi.unpack(c.val, n))
    _core.check(lib.ad_forward(c, 0, n, 0), c)
    if list(ffi.unpack(c.val, n)) != recorded:
        return ["replay at the recorded inputs changed a value"]
    moved = [x * 0.9 + 0.05 for x in inputs]
    for leaf, x in zip(leaves, moved):
        c.imm[leaf._i] = x
    _core.check(lib.ad_forward(c, 0, n, 0), c)
    expected = run_program(steps, [Dual(x) for x in moved]).a
    if not _close(c.val[out._i], expected, 1e-12, 1e-12):
        return [f"replay at new inputs {c.val[out._i]!r} vs {expected!r}"]
    return []


def tally(cases, show=5, out=print):
    """Count checked programs: cases yields (skip reason or None, problems,
    describe) per program, describe() printing the program.  Prints the
    first `show` disagreements; returns (tried, {reason: skipped},
    disagreed).  Every fuzzer's loop is this one."""
    tried = bad = 0
    skipped = {}
    for reason, problems, describe in cases:
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        tried += 1
        if problems:
            bad += 1
            if bad <= show:
                out(f"disagreement: {problems[0]}\n{describe()}")
    return tried, skipped, bad


def fuzz_scalars(examples, seed=0, max_steps=30, show=5, out=print):
    """Check `examples` random scalar programs; returns (tried, skipped,
    disagreed)."""
    rng = random.Random(seed)

    def cases():
        for _ in range(examples):
            steps, inputs = random_program(rng, max_steps)
            if near_kink(steps, inputs):
                yield "kink", None, None
                continue
            try:
                problems = disagreements(steps, inputs)
            except (OverflowError, ZeroDivisionError, ValueError) as exc:
                problems = [f"{type(exc).__name__}: {exc}"]
            yield None, problems, lambda: f"  program {steps}\n  inputs {inputs}"
    t0 = time.perf_counter()
    tried, skipped, bad = tally(cases(), show, out)
    out(f"{tried} programs tried ({skipped.get('kink', 0)} skipped on a kink), "
        f"{bad} disagreed, {time.perf_counter() - t0:.1f} s, seed {seed}")
    return tried, skipped, bad
