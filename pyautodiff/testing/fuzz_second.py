"""Differential fuzzing of the tangent and second-order sweeps.

The scalar fuzzer's random programs (fuzz_scalars.py, without custom ops:
they have first-order rules only), differentiated twice: every column of
the Hessian from ``ad.hvp`` and every directional derivative from
``ad.jvp``, against hyper-dual numbers (hyperdual.py, exact second
derivatives by forward mode, no code shared with the tape); then the same
through ``ad.record`` replayed at moved inputs.

``python -m pyautodiff.testing.fuzz --kind second --examples N`` runs it.
"""
import math
import random
import time

import pyautodiff as ad
from . import fuzz_scalars
from . import hyperdual

OPS = sorted(name for name in fuzz_scalars.STEPS if name != "custom")


def random_program(rng, max_steps=20, max_inputs=3):
    n = rng.randint(1, max_steps)
    steps = [(rng.choice(OPS), rng.randrange(1000), rng.randrange(1000),
              rng.uniform(0.5, 2.0)) for _ in range(n)]
    return steps, [rng.uniform(-2.0, 2.0) for _ in range(rng.randint(1, max_inputs))]


def program(steps):
    def f(*xs):
        return fuzz_scalars.run_program(steps, list(xs))
    return f


def hyperdual_derivatives(steps, xs):
    """(value, gradient, Hessian) of the program at xs, by hyper-duals."""
    return hyperdual.hyperdual_derivatives(program(steps), xs)


def usable(hess):
    """Second derivatives the comparison can be trusted on."""
    return all(math.isfinite(h) and abs(h) < 1e8 for row in hess for h in row)


def _close(x, y):
    return math.isclose(x, y, rel_tol=1e-8, abs_tol=1e-8)


def compare(hvp, jvp, steps, xs, where):
    """What hvp/jvp (argnum: every input) get wrong against hyper-duals."""
    value, grad, hess = hyperdual_derivatives(steps, xs)
    if not usable(hess):
        return None
    k = len(xs)
    problems = []
    for j in range(k):
        e = tuple(float(n == j) for n in range(k))
        column = hvp(*xs, e)
        for i in range(k):
            if not _close(column[i], hess[i][j]):
                problems.append(f"{where}: d2/dx{i}dx{j} {column[i]!r} vs "
                                f"hyper-dual {hess[i][j]!r}")
        got_value, tangent = jvp(*xs, e)
        if not (_close(got_value, value) and _close(tangent, grad[j])):
            problems.append(f"{where}: jvp along x{j} ({got_value!r}, {tangent!r}) "
                            f"vs hyper-dual ({value!r}, {grad[j]!r})")
    return problems


def disagreements(steps, xs):
    """Problems eagerly and in a replay at moved inputs; None where the
    program's second derivatives are not usable for a comparison."""
    argnum = tuple(range(len(xs)))
    f = program(steps)
    problems = compare(ad.hvp(f, argnum), ad.jvp(f, argnum), steps, xs, "eager")
    if problems is None:
        return None
    moved = [x * 0.9 + 0.05 for x in xs]
    if fuzz_scalars.near_kink(steps, moved):
        return problems
    F = ad.record(f, *xs, argnum=argnum)
    replayed = compare(F.hvp, F.jvp, steps, moved, "replay")
    return problems + (replayed or [])


def fuzz_second(examples, seed=0, max_steps=20, show=5, out=print):
    """Check `examples` random programs; returns (tried, skipped, disagreed)."""
    rng = random.Random(seed)

    def cases():
        for _ in range(examples):
            steps, xs = random_program(rng, max_steps)
            if fuzz_scalars.near_kink(steps, xs):
                yield "kink", None, None
                continue
            try:
                problems = disagreements(steps, xs)
            except (OverflowError, ZeroDivisionError, ValueError):
                problems = None                  # outside the ops' domains
            yield ("range" if problems is None else None), problems, \
                (lambda: f"  program {steps}\n  inputs {xs}")
    t0 = time.perf_counter()
    tried, skipped, bad = fuzz_scalars.tally(cases(), show, out)
    out(f"{tried} programs' second derivatives tried "
        f"({skipped.get('kink', 0) + skipped.get('range', 0)} skipped on a kink "
        f"or out of range), {bad} disagreed, {time.perf_counter() - t0:.1f} s, "
        f"seed {seed}")
    return tried, skipped, bad
