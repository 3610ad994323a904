"""Runs every registered problem on every backend that imports.

``python -m bench [--quick] [--only NAME] [--repeat N] [--no-gc]``

The repeats are interleaved across backends (so drift in machine speed hits
all alike) and the table shows the median of the samples.
"""
import argparse
import ctypes
import gc
import os
import platform
import statistics
import sys
import time

from bench import arrays, dropin, linalg, memory, minimize, nested, optimizers, replay, scalar  # noqa: F401  (register their problems)
from bench import sparse_hessian  # noqa: F401
from bench import sparse_jacobian  # noqa: F401
from bench import constrained  # noqa: F401
from bench import map as _map  # noqa: F401
from bench import dask_bench  # noqa: F401
from bench.backends import load_backends
from bench.registry import PROBLEMS, Unsupported

REFERENCES = ("micrograd", "pure")  # a "vs NAME" speedup column each
CHECK_RTOL = 1e-6  # summation order and micrograd's a * b**-1 for a / b differ in the last bits


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def steady_malloc():
    """Pin glibc malloc's thresholds for the whole run; what it reports.

    By default glibc gives heap memory back to the system whenever more
    than 128 KiB lies free at the top of the heap, and raises that limit
    (and the size above which it maps memory afresh) as large blocks are
    freed.  So whether a step's temporaries of ~100 KB cost page faults
    every time depended on the heap the previous engine left: NumPy by
    hand's Rosenbrock gradient took 3 to 5 times longer after some engines
    than after others.  Pinned at the values glibc's own raising tends to,
    every engine is timed with the same allocator."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    libc = ctypes.CDLL(None)
    if libc.mallopt(M_MMAP_THRESHOLD, 32 << 20) and \
            libc.mallopt(M_TRIM_THRESHOLD, 64 << 20):
        return "glibc malloc: mmap threshold 32 MiB, trim threshold 64 MiB (pinned)"
    return None


def machine_info(backends):
    lines = [f"python {platform.python_version()} ({platform.python_implementation()}), "
             f"{platform.system()} {platform.machine()}",
             f"cpu: {cpu_model()}, {os.cpu_count()} logical cores"]
    versions = [f"{b.name} {b.version}" for b in backends if b.version]
    if versions:
        lines.append("versions: " + ", ".join(versions))
    return lines


def measure(problem, backends, cfg, log):
    """{backend name: Result with all repeats' samples merged}, and
    {backend name: why it has no row}."""
    results, missing = {}, {}
    for rep in range(cfg.repeat):
        # Rotate the order each repeat so no backend always runs first.
        order = backends[rep % len(backends):] + backends[:rep % len(backends)]
        for backend in order:
            if backend.name in missing:
                continue
            log(f"{problem.name} [{rep + 1}/{cfg.repeat}] {backend.name}")
            gc.collect()  # garbage of the previous run is not this run's cost
            if cfg.no_gc:
                gc.disable()  # as timeit does; by default the collector runs, as in user code
            try:
                result = problem.fn(backend, cfg)
            except Unsupported as e:
                missing[backend.name] = f"not run: {e}"
                continue
            except Exception as e:  # a broken backend costs its row, not the run
                missing[backend.name] = f"failed: {type(e).__name__}: {e}".splitlines()[0]
                results.pop(backend.name, None)
                continue
            finally:
                gc.enable()
            if backend.name in results:
                for metric, samples in result.samples.items():
                    results[backend.name].samples[metric] += samples
            else:
                results[backend.name] = result
    return results, missing


def check_agreement(problem, results):
    """Warnings for check values that differ between backends."""
    warnings, first = [], {}
    for name, result in results.items():
        for key, value in result.check.items():
            if key not in first:
                first[key] = (name, value)
                continue
            ref_name, ref = first[key]
            if abs(value - ref) > CHECK_RTOL * max(abs(ref), abs(value)) + 1e-12:
                warnings.append(f"{problem.name}: {key} is {value!r} on {name} "
                                f"but {ref!r} on {ref_name}")
    return warnings


def fmt_time(t):
    return f"{t:.3g}" if t < 1000 else f"{t:.0f}"


def fmt_speedup(ref, t):
    return "" if ref is None else f"{ref / t:.2f}x"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    ap.add_argument("--only", metavar="NAME", help="run problems whose name contains NAME")
    ap.add_argument("--repeat", type=int, metavar="N",
                    help="runs per problem and backend (default 5, 3 with --quick)")
    ap.add_argument("--no-gc", action="store_true",
                    help="turn Python's cyclic garbage collector off while timing "
                         "(it runs by default, as it does in user code)")
    cfg = ap.parse_args(argv)
    if cfg.repeat is None:
        cfg.repeat = 3 if cfg.quick else 5
    if cfg.repeat < 1:
        ap.error("--repeat must be at least 1")
    problems = [p for p in PROBLEMS if not cfg.only or cfg.only in p.name]
    if not problems:
        ap.error(f"no problem matches {cfg.only!r}; have {', '.join(p.name for p in PROBLEMS)}")

    def log(msg):
        print(f"  running {msg}", file=sys.stderr, flush=True)

    malloc_note = steady_malloc()
    backends, skipped = load_backends()
    start = time.perf_counter()
    rows, notes, warnings = [], [], []
    for problem in problems:
        results, missing = measure(problem, backends, cfg, log)
        warnings += check_agreement(problem, results)
        if problem.note:
            notes.append(problem.note)
        title = f"{problem.name} ({problem.size(cfg)})" if problem.size(cfg) else problem.name
        for metric, unit in problem.metrics.items():
            medians = {name: statistics.median(r.samples[metric])
                       for name, r in results.items() if metric in r.samples}
            for backend in backends:
                name = backend.name
                if name in medians:
                    t = medians[name]
                    rows.append([f"{title} {metric}", name, fmt_time(t), unit,
                                 *(fmt_speedup(medians.get(ref), t) for ref in REFERENCES),
                                 results[name].note])
                elif name in missing and missing[name].startswith("failed") \
                        and metric == next(iter(problem.metrics)):
                    rows.append([title, name, "", "", *("" for _ in REFERENCES), missing[name]])
        notes += [f"{problem.name} on {name}: {why}" for name, why in missing.items()
                  if not why.startswith("failed")]

    print("# pyautodiff benchmarks" + (" (--quick)" if cfg.quick else ""))
    print()
    for line in machine_info(backends):
        print(f"- {line}")
    if malloc_note:
        print(f"- {malloc_note}")
    print(f"- median of {cfg.repeat} interleaved repeats per backend "
          f"(moons-step: of every step in them); GC {'off' if cfg.no_gc else 'on'} while timing; "
          "speedup = reference time / this time")
    print()
    header = ["problem", "backend", "time", "unit", *(f"vs {ref}" for ref in REFERENCES), "note"]
    align = ["---", "---", "--:", "---", *("--:" for _ in REFERENCES), "---"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(align) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    for note in notes:
        print(f"- {note}")
    for name, why in skipped.items():
        print(f"- skipped {name}: {why}")
    for w in warnings:
        print(f"- WARNING results differ: {w}")
    print(f"\n({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
