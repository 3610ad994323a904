"""Differential fuzzing of traced values handed to threads and written into
arrays.

The programs are fuzz_nested.py's (random nestings of grad, jvp, vjp, hvp,
jacobian, hessian over small array programs, closures included), rewritten
in one of two ways:

- threads: each assignment of a function body runs, at random, in the
  calling thread, in a ``threading.Thread``, on a ``ThreadPoolExecutor``
  or through ``asyncio.to_thread``; the result must equal the Taylor-jet
  reference (taylor.py, run with no threads), as fuzz_nested checks it;
- writes: one assignment writes its traced value into a NumPy array
  (``g = np.zeros(shape); g[...] = value``), sometimes in another thread:
  the program must raise ``ad.DetachError``, never give a number.

``python -m pyautodiff.testing.fuzz --kind threads --count N [--seed S]``
runs it.
"""
import asyncio
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import pyautodiff as ad
from . import fuzz_nested

_ASSIGNMENT = re.compile(r"^(\s*)(t\d+_\d+) = (.*)$")
_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(2, thread_name_prefix="fuzz-threads")
    return _POOL


def _in_thread(how, fn):
    """fn() run as `how` says; an exception it raised is raised here."""
    if how == "here":
        return fn()
    if how == "pool":
        return _pool().submit(fn).result()
    if how == "asyncio":
        async def main():
            return await asyncio.to_thread(fn)
        return asyncio.run(main())
    box = []

    def run():
        try:
            box.append((True, fn()))
        except BaseException as exc:        # noqa: BLE001 -- handed back
            box.append((False, exc))
    t = threading.Thread(target=run)
    t.start()
    t.join()
    ok, value = box[0]
    if not ok:
        raise value
    return value


def _direct(how, fn):
    return fn()


def _written(value):
    """value written into a fresh float array of its shape."""
    g = np.zeros(np.shape(value))
    g[...] = value
    return g


class ThreadedProgram(fuzz_nested.Program):
    """A nested program whose source runs its work in threads (or writes
    into an array); the reference runs the same source with no threads."""

    def run(self, api):
        namespace = {"np": np, "ad": api, "_written": _written,
                     "_in_thread": _in_thread if api is ad else _direct}
        exec(compile(self.source, f"<threaded program {self.seed}>", "exec"), namespace)
        return fuzz_nested.flat(namespace["result"])

    def __repr__(self):
        return (super().__repr__().replace("import pyautodiff as ad\n",
                                           "import pyautodiff as ad\n"
                                           "from pyautodiff.testing.fuzz_threads import "
                                           "_in_thread, _written\n"))


def threaded(program, rng):
    """program with its assignments spread over threads at random."""
    lines = []
    for line in program.source.splitlines():
        m = _ASSIGNMENT.match(line)
        if m and rng.random() < 0.6:
            how = rng.choice(["thread", "pool", "asyncio", "here"])
            line = f"{m[1]}{m[2]} = _in_thread({how!r}, lambda: {m[3]})"
        lines.append(line)
    return ThreadedProgram("\n".join(lines) + "\n", program.levels, program.seed)


def writing(program, rng):
    """program with one assignment written into an ndarray (in another
    thread, sometimes), or None if it has none."""
    lines = program.source.splitlines()
    spots = [k for k, line in enumerate(lines) if _ASSIGNMENT.match(line)]
    if not spots:
        return None
    k = rng.choice(spots)
    m = _ASSIGNMENT.match(lines[k])
    how = rng.choice(["here", "here", "thread", "pool"])
    lines[k] = f"{m[1]}{m[2]} = _in_thread({how!r}, lambda: _written({m[3]}))"
    return ThreadedProgram("\n".join(lines) + "\n", program.levels, program.seed)


def check_writes(program):
    """("agree", None) where the program raises DetachError, else
    ("disagree", what it did)."""
    try:
        program.run(ad)
    except ad.DetachError:
        return "agree", None
    except NotImplementedError as exc:
        return "unsupported", str(exc)
    except Exception as exc:                   # noqa: BLE001 -- a finding
        return "disagree", f"raised {type(exc).__name__}: {exc}, not DetachError"
    return "disagree", "gave a result where it should raise DetachError"


def fuzz_threads(count, seed=0, max_steps=4, show=5, out=print):
    """Check `count` random programs, three of four spread over threads and
    one of four writing into an array; returns the fuzz_nested.Tally."""
    tally = fuzz_nested.Tally()
    t0 = time.perf_counter()
    for k in range(count):
        rng = random.Random(f"threads/{seed}/{k}")
        base = fuzz_nested.random_program(rng, max_steps, max_order=3,
                                          seed=f"threads/{seed}/{k}")
        if k % 4 == 3:
            program = writing(base, rng)
            if program is None:
                continue
            tally.add(program, *check_writes(program))
        else:
            program = threaded(base, rng)
            tally.add(program, *fuzz_nested.check(program))
    for program, detail in tally.disagreements[:show]:
        out(f"disagreement: {detail}\n{program}")
    c = tally.counts
    out(f"{count} threaded and array-writing programs: {c['agree']} agreed, "
        f"{c['disagree']} disagreed, {c['unsupported']} unsupported, "
        f"{c['kink'] + c['range']} skipped, {time.perf_counter() - t0:.1f} s, seed {seed}")
    return tally
