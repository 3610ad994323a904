"""Peak memory of a gradient of large arrays: grad of sum(sin(x) * x) at
10**7 elements (10**6 with --quick), on pyautodiff, autograd and NumPy by
hand.

Each sample runs in a fresh Python process of its own, so that no engine
inherits another's heap: the process makes x, then calls the gradient
CALLS times with the cycle collector on, as a program would, and reports
how far its peak resident set grew over those calls (ru_maxrss after minus
before).  A call that leaves anything behind (a reference cycle holding
its arrays, say) shows as growth from one call to the next; the ratio to
autograd's peak is the second metric.
"""
import os
import statistics
import subprocess
import sys

from bench.registry import Result, Unsupported, problem

N, QUICK_N = 10**7, 10**6
CALLS = 3

# The engines' code, run in the child process; each defines g(x) -> the
# gradient of sum(sin(x) * x).
ENGINES = {
    "pyautodiff": """
import pyautodiff as ad
g = ad.grad(lambda x: np.sum(np.sin(x) * x))
""",
    "autograd": """
import autograd, autograd.numpy as anp
g = autograd.grad(lambda x: anp.sum(anp.sin(x) * x))
""",
    "numpy (by hand)": """
def g(x):
    return np.cos(x) * x + np.sin(x)
""",
}

CHILD = """
import resource
import numpy as np
{engine}
def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
x = np.linspace(0.0, 1.0, {n})
g(x[:10])                       # imports and first-call caches: not the call's
before = peak_mib()
for _ in range({calls}):
    grad = g(x)
    del grad
print(peak_mib() - before)
"""

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_autograd_peaks = []       # this run's autograd samples, for the ratio


def peak_growth(engine, n, calls=CALLS):
    """MiB the peak resident set of a fresh process grew by over `calls`
    gradients of n elements on `engine` (a key of ENGINES)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(engine=ENGINES[engine], n=n, calls=calls)],
        capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return float(out.stdout.split()[0])


@problem("grad-memory", {"peak": "MiB", "vs autograd": "x"},
         size=lambda cfg: f"n = {QUICK_N if cfg.quick else N:,}, {CALLS} calls",
         note="grad-memory: how far the peak resident set of a fresh process "
              "grows over 3 calls of grad(sum(sin(x) * x)) with x of n float64 "
              "(80 MB at n = 10**7), collector on; 'vs autograd' is the peak "
              "over autograd's (median of its samples this run).")
def grad_memory(backend, cfg):
    if backend.name not in ENGINES:
        raise Unsupported("measured on pyautodiff, autograd and NumPy by hand")
    n = QUICK_N if cfg.quick else N
    peak = peak_growth(backend.name, n)
    if backend.name == "autograd":
        _autograd_peaks.append(peak)
    elif not _autograd_peaks:
        try:
            _autograd_peaks.append(peak_growth("autograd", n))
        except subprocess.CalledProcessError:
            pass                    # autograd not installed: no ratio
    samples = {"peak": [peak]}
    if _autograd_peaks:
        samples["vs autograd"] = [peak / statistics.median(_autograd_peaks)]
    return Result(samples)
