"""What the sparse benchmarks share: their sizes, labels and metrics, and
the run over the sizes that turns each engine's (setup, evaluation,
nonzeros, sum, note) into a Result."""
import numpy as np

from bench.registry import Result, Unsupported

SIZES, QUICK_SIZES = (10 ** 4, 10 ** 5, 10 ** 6), (10 ** 3, 10 ** 4, 10 ** 5)


def sizes(cfg):
    return QUICK_SIZES if cfg.quick else SIZES


def label(n):
    return f"n = 1e{int(round(np.log10(n)))}"


METRICS = {f"{what} {label(n)}": "ms" for n in SIZES + QUICK_SIZES
           for what in ("setup", "evaluation")}


def run_sizes(backend, cfg, engines, what, matrix):
    """engines: backend name -> run(n, first) -> (setup ms, evaluation ms,
    nonzeros, sum of the matrix, note); first is True at the smallest n."""
    run = engines.get(backend.name)
    if run is None:
        raise Unsupported(f"no sparse {what} here")
    try:
        import scipy.sparse  # noqa: F401
    except ImportError:
        raise Unsupported("scipy is not installed") from None
    samples, check, notes = {}, {}, []
    for k, n in enumerate(sizes(cfg)):
        setup, evaluation, nnz, total, note = run(n, k == 0)
        samples[f"setup {label(n)}"] = [setup]
        samples[f"evaluation {label(n)}"] = [evaluation]
        check[f"nonzeros {label(n)}"] = float(nnz)
        check[f"sum of {matrix} {label(n)}"] = total
        if note not in notes:
            notes.append(note)
    return Result(samples, check, "; ".join(notes))
