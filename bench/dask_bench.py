"""pyautodiff.dask on a LocalCluster of two single-threaded worker processes.

multistart: 64 starts (16 with --quick) of L-BFGS on the 100-dimensional
Rosenbrock function, ``ad.dask.minimize_many`` against a serial loop of
``ad.minimize``, with scipy's L-BFGS-B and with the built-in
``method='lbfgs'``, a start per task and 8 starts per task (an 'lbfgs'
start takes milliseconds); the results must be the loop's bit for bit.
Both sides import first on every worker (not timed).  The loop
runs as one task on one of the workers, so that both sides run NumPy's
BLAS as Dask's workers do (one thread: in a process with a BLAS thread
per core, scipy's L-BFGS-B on n = 100 is several times slower on a busy
machine).  The time of minimize_many is from the call to the last result:
the recording made, sent to the workers, every start run and gathered
(the cluster's start is not in it).

data-parallel gradient: a logistic regression's gradient over 10^7 rows
of 8 features (10^6 with --quick) in 20 blocks, generated on the workers
(``dask.array.random`` with a seed), as ``ad.dask.map(L, w, D,
method="grad", in_axes=(None, 0)).sum(axis=0)``, with L recorded at one
row (a gradient row per data row) and at a chunk of 10,000 rows (D seen
as chunks: a gradient per chunk); each checked against the gradient
written out in NumPy on the whole data set in memory (generated again
here, from the same seed), to 1e-12 relative.  The times include making
the data on the workers, which is timed alone too (made and summed).
Each worker's peak memory (its ru_maxrss) after the per-row gradient is
shown against the size of the data set.
"""
import resource
import time

import numpy as np

from bench.registry import Result, Unsupported, problem

STARTS, QUICK_STARTS = 64, 16
N = 100                 # Rosenbrock's dimension
METHODS = ("L-BFGS-B", "lbfgs")
# a task per start, and 8 starts a task: a start of the built-in L-BFGS
# takes milliseconds, about what Dask's own work for a task takes
PER_TASK = (1, 8)
ROWS, QUICK_ROWS = 10 ** 7, 10 ** 6
FEATURES = 8
BLOCKS = 20
CHUNK = 10_000          # rows of a point, recorded at a chunk
MIB = 1 << 20


def _cluster():
    try:
        import distributed
    except ImportError:
        raise Unsupported("dask.distributed is not installed: pip install "
                          "'pyautodiff[dask]'") from None
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                       processes=True, dashboard_address=None)
    return cluster, distributed.Client(cluster)


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic_loss(w, row):
    """One row's loss: row = (features..., label in {-1, 1}).  (A sum of
    products: F.map runs this in C, where a vector @ vector, a product
    with Python rules, would go point by point.)"""
    return np.log1p(np.exp(-row[-1] * np.sum(row[:-1] * w)))


def chunk_loss(w, rows):
    """The loss of a chunk of rows, one point of its own."""
    return np.sum(np.log1p(np.exp(-rows[:, -1] * (rows[:, :-1] @ w))))


def _peak_rss():
    """This process's peak resident memory in bytes (Linux: ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _warm():
    """Import what the tasks import, so that neither side times a worker's
    first imports."""
    import scipy.optimize  # noqa: F401
    import pyautodiff.dask  # noqa: F401


def _serial(X0, method):
    import pyautodiff as ad
    return [ad.minimize(rosen, x0, method=method) for x0 in X0]


def _multistart(client, count):
    import pyautodiff as ad
    import pyautodiff.dask  # noqa: F401
    X0 = np.random.default_rng(0).uniform(-2.0, 2.0, (count, N))
    # the serial loop runs in a worker process too, so that both sides run
    # NumPy's BLAS as Dask's workers do (one thread each)
    one = sorted(client.scheduler_info()["workers"])[0]
    client.run(_warm)
    samples = {}
    for method in METHODS:
        t0 = time.perf_counter()
        serial = client.submit(_serial, X0, method, workers=[one], pure=False).result()
        loop = time.perf_counter() - t0
        samples[f"{method}: serial loop of ad.minimize"] = [loop]
        for per_task in PER_TASK:
            t0 = time.perf_counter()
            spread = ad.dask.minimize_many(rosen, X0, method=method, client=client,
                                           starts_per_task=per_task)
            t = time.perf_counter() - t0
            for s, d in zip(serial, spread):
                if not (np.array_equal(s.x, d.x) and s.fun == d.fun and s.nit == d.nit):
                    raise AssertionError(f"minimize_many ({method}) differs from the loop")
            samples[_run(method, per_task)] = [t]
            samples[_run(method, per_task) + ": speed-up"] = [loop / t]
    best = min(r.fun for r in spread)
    return samples, {"best f over the starts": best}


def _run(method, per_task):
    return (f"{method}: minimize_many, {per_task} start{'s' if per_task > 1 else ''} "
            "per task")


def _data(rows, seed=42):
    """The data set as a dask.array of BLOCKS blocks of rows, made on the
    workers: features and a label in {-1, 1} from a noisy linear model."""
    import dask.array as da
    rng = da.random.default_rng(seed)
    chunk = -(-rows // BLOCKS)
    X = rng.normal(size=(rows, FEATURES), chunks=(chunk, FEATURES))
    noise = rng.normal(size=rows, chunks=chunk)
    w_true = np.linspace(-1.0, 1.0, FEATURES)
    y = da.where(X @ w_true + noise > 0, 1.0, -1.0)
    return da.concatenate([X, y[:, None]], axis=1)


def _gradient(client, rows):
    import pyautodiff as ad
    import pyautodiff.dask  # noqa: F401
    w = np.full(FEATURES, 0.1)
    D = _data(rows)
    client.run(_warm)
    t0 = time.perf_counter()
    client.compute(D.sum(axis=0)).result()
    t_data = time.perf_counter() - t0          # the data made and summed, no gradient
    before = client.run(_peak_rss)
    # recorded at one row: a gradient row per data row, summed by Dask
    per_row = ad.record(logistic_loss, w, np.zeros(FEATURES + 1))
    t0 = time.perf_counter()
    got = ad.dask.map(per_row, w, D, method="grad", in_axes=(None, 0),
                      client=client).sum(axis=0)
    got = client.compute(got).result()
    t_row = time.perf_counter() - t0
    peaks = client.run(_peak_rss)
    # recorded at a chunk of CHUNK rows: one point per chunk
    per_chunk = ad.record(chunk_loss, w, np.zeros((CHUNK, FEATURES + 1)))
    chunks = D.reshape(rows // CHUNK, CHUNK, FEATURES + 1)
    t0 = time.perf_counter()
    by_chunk = ad.dask.map(per_chunk, w, chunks, method="grad", in_axes=(None, 0),
                           client=client).sum(axis=0)
    by_chunk = client.compute(by_chunk).result()
    t_chunk = time.perf_counter() - t0
    # the same data in this process, from the same seed, and the gradient
    # written out in NumPy
    data = _data(rows).compute(scheduler="synchronous")
    t0 = time.perf_counter()
    features, labels = data[:, :-1], data[:, -1]
    want = features.T @ (-labels / (1.0 + np.exp(labels * (features @ w))))
    in_memory = time.perf_counter() - t0
    worst = max(float(np.max(np.abs(g - want) / np.abs(want))) for g in (got, by_chunk))
    if not worst <= 1e-12:
        raise AssertionError(f"a gradient differs from the in-memory one by {worst:.2e}")
    samples = {"the data made on the workers and summed, no gradient": [t_data],
               "gradient, F recorded at a row": [t_row],
               f"gradient, F recorded at a chunk of {CHUNK} rows": [t_chunk],
               "gradient in NumPy, data in memory": [in_memory],
               "largest relative difference": [worst],
               "data set": [data.nbytes / MIB]}
    for k, address in enumerate(sorted(peaks)):
        samples[f"worker {k} peak memory"] = [peaks[address] / MIB]
        samples[f"worker {k} peak before"] = [before[address] / MIB]
    return samples, {"gradient norm": float(np.linalg.norm(got))}


def _metrics():
    out = {}
    for method in METHODS:
        out[f"{method}: serial loop of ad.minimize"] = "s"
        for per_task in PER_TASK:
            out[_run(method, per_task)] = "s"
            out[_run(method, per_task) + ": speed-up"] = "x"
    out.update({"the data made on the workers and summed, no gradient": "s",
                "gradient, F recorded at a row": "s",
                f"gradient, F recorded at a chunk of {CHUNK} rows": "s",
                "gradient in NumPy, data in memory": "s",
                "largest relative difference": "",
                "data set": "MiB"})
    for k in range(2):
        out[f"worker {k} peak memory"] = "MiB"
        out[f"worker {k} peak before"] = "MiB"
    return out


@problem("dask", _metrics(),
         size=lambda cfg: f"{QUICK_STARTS if cfg.quick else STARTS} starts, Rosenbrock "
                          f"n = {N}; logistic gradient over "
                          f"{QUICK_ROWS if cfg.quick else ROWS:.0e} rows",
         note="dask: pyautodiff.dask on a LocalCluster of 2 single-threaded worker "
              "processes (started anew for each part, not timed): multi-start "
              "L-BFGS against a serial loop in this process, and a data-parallel "
              "gradient against NumPy's on the data in memory; 'peak before' is a "
              "worker's peak memory once started, before the gradient.")
def dask_cluster(backend, cfg):
    if backend.name != "pyautodiff":
        raise Unsupported("pyautodiff.dask only")
    samples, check = {}, {}
    for part, size in ((_multistart, QUICK_STARTS if cfg.quick else STARTS),
                       (_gradient, QUICK_ROWS if cfg.quick else ROWS)):
        cluster, client = _cluster()
        try:
            s, c = part(client, size)
        finally:
            client.close()
            cluster.close()
        samples.update(s)
        check.update(c)
    return Result(samples, check)
