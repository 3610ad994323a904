"""Optimizer problems: one Adam update of many scalar parameters.

Two ways to run the same update (torch.optim.Adam's arithmetic):

* "step": what a user of the engine writes.  pyautodiff has
  ``ad.optim.Adam(params).step()``, one C call over all parameters; the
  other engines have no optimizer, so their row is the Python loop below.
* "python loop": a plain Python loop over the parameters' ``.data`` and
  ``.grad`` with the moment estimates in lists, constants hoisted out of
  the loop, on every engine (for pyautodiff: over the same Values that
  ``step`` updates).

The parameters are the 337 weights of micrograd's moons MLP, and 10,000
fresh Values; every parameter has a fixed gradient, set before timing.
"""
import math
import random
import time

from bench.registry import Result, Unsupported, problem

LR, BETAS, EPS = 1e-3, (0.9, 0.999), 1e-8
STEPS = {"337": 200, "10k": 10}     # steps timed per repeat


def python_adam_loop(params, state):
    """One Adam step in plain Python: per element the same operations, in
    the same order, as csrc/optim.c (so the results agree exactly)."""
    b1, b2 = BETAS
    state["t"] += 1
    t = state["t"]
    m, v = state["m"], state["v"]
    w1, w2 = 1.0 - b1, 1.0 - b2
    step_size = LR / (1.0 - b1 ** t)
    bc2_sqrt = math.sqrt(1.0 - b2 ** t)
    for k, p in enumerate(params):
        g = p.grad
        mk = m[k] + w1 * (g - m[k])
        vk = v[k] * b2 + (w2 * g) * g
        m[k], v[k] = mk, vk
        p.data = p.data + ((-step_size) * mk) / (math.sqrt(vk) / bc2_sqrt + EPS)


def _params(backend, which):
    if not backend.scalar or backend.Value is None:
        raise Unsupported("no scalar Values to optimize")
    if which == "337":
        if backend.MLP is None:
            raise Unsupported(backend.moons_note or "no micrograd-style MLP")
        random.seed(1337)                   # micrograd's demo weights
        params = backend.MLP(2, [16, 16, 1]).parameters()
    else:
        rng = random.Random(0)
        params = [backend.Value(rng.uniform(-1, 1)) for _ in range(10_000)]
    for k, p in enumerate(params):
        p.grad = math.sin(k + 1.0)          # a fixed gradient, no backward
    return params


def _adam_step(backend):
    """The engine's own optimizer, or None."""
    if not backend.name.startswith("pyautodiff"):
        return None
    import pyautodiff as ad
    return lambda params: ad.optim.Adam(params, lr=LR, betas=BETAS, eps=EPS).step


def _time(fn, steps):
    t0 = time.perf_counter_ns()
    for _ in range(steps):
        fn()
    return (time.perf_counter_ns() - t0) / steps / 1e3


def _run(backend, which):
    params = _params(backend, which)
    steps = STEPS[which]
    make_step = _adam_step(backend)
    samples = {}
    stepped = None
    if make_step is not None:
        stepped = params
        samples["step"] = [_time(make_step(stepped), steps)]
        params = _params(backend, which)    # fresh ones for the Python loop
    state = {"t": 0, "m": [0.0] * len(params), "v": [0.0] * len(params)}
    loop = _time(lambda: python_adam_loop(params, state), steps)
    samples["python loop"] = [loop]
    if make_step is None:
        samples["step"] = [loop]
    total = math.fsum(p.data for p in params)
    if stepped is not None and math.fsum(p.data for p in stepped) != total:
        raise AssertionError("Adam.step() and the Python loop disagree")
    return Result(samples, {"sum of parameters after the steps": total})


METRICS = {"step": "us/step", "python loop": "us/step"}
NOTE = ("adam-step: one Adam update (torch's arithmetic) of every parameter. "
        "'step' is ad.optim.Adam.step() on the pyautodiff rows and the Python "
        "loop on the others (they have no optimizer); 'python loop' is a plain "
        "Python Adam loop over .data and .grad of the same kind of Values on "
        "every engine, so pyautodiff's step / python loop rows compare the "
        "two ways of updating the same Values.")


@problem("adam-step 337", METRICS, size=lambda cfg: "moons MLP parameters",
         note=NOTE)
def adam_step_moons(backend, cfg):
    return _run(backend, "337")


@problem("adam-step 10k", METRICS, size=lambda cfg: "10,000 Values")
def adam_step_10k(backend, cfg):
    return _run(backend, "10k")
