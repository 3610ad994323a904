"""pyautodiff.dask on a real cluster: a LocalCluster of two worker
processes.  Every block is F.map's rows bit for bit (every method, shared
arguments, uneven blocks), a data-parallel gradient is the in-memory one,
minimize_many is a serial loop of ad.minimize, a worker killed mid-run
costs a rerun and no row, a corrupted recording is a ValueError on the
client, and without Dask the import error names the extra."""
import os
import pickle
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

import pyautodiff as ad  # noqa: E402
import pyautodiff.dask  # noqa: E402,F401  (ad.dask)
from helpers import same_rows  # noqa: E402
from pyautodiff import tapefile  # noqa: E402

RNG = np.random.default_rng(11)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic_loss(w, row):
    """One data row's loss: row = (features..., label in {-1, 1})."""
    return np.log1p(np.exp(-row[-1] * (row[:-1] @ w)))


_same = same_rows


def _computed(client, result):
    if isinstance(result, tuple):
        return tuple(client.gather(client.compute(list(result))))
    return client.compute(result).result()


X = RNG.normal(size=(103, 6))
UNEVEN = ((30, 41, 7, 25),)            # four blocks, none alike


@pytest.mark.parametrize("method", ["value", "grad", "value_and_grad", "hessian",
                                    "jacobian"])
def test_every_block_is_f_map_bit_for_bit(client, method):
    F = ad.record(rosen, X[0]) if method != "jacobian" else \
        ad.record(lambda x: np.tanh(x) * x[::-1], X[0])
    got = ad.dask.map(F, da.from_array(X, chunks=UNEVEN + ((3, 3),)), method=method)
    assert (got[-1] if isinstance(got, tuple) else got).chunks[0] == UNEVEN[0]
    _same(_computed(client, got), F.map(X, method=method))
    single = F.__call__ if method == "value" else getattr(F, method)
    rows = [single(x) for x in X[[0, 29, 30, 70, 71, 77, 102]]]
    want = tuple(np.stack(r) for r in zip(*rows)) if isinstance(rows[0], tuple) \
        else np.stack(rows)
    got = _computed(client, got)
    _same(tuple(g[[0, 29, 30, 70, 71, 77, 102]] for g in got)
          if isinstance(got, tuple) else got[[0, 29, 30, 70, 71, 77, 102]], want)


def test_shared_arguments_and_vectors(client):
    F = ad.record(rosen, X[0])
    V = RNG.normal(size=X.shape)
    DX = da.from_array(X, chunks=40)
    _same(ad.dask.map(F, DX, da.from_array(V, chunks=25), method="hvp").compute(),
          F.map(X, V, method="hvp"))
    _same(ad.dask.map(F, DX, V[3], method="hvp", in_axes=(0, None)).compute(),
          F.map(X, V[3], method="hvp", in_axes=(0, None)))
    _same(_computed(client, ad.dask.map(F, DX, V[3], method="jvp", in_axes=(0, None))),
          F.map(X, V[3], method="jvp", in_axes=(0, None)))
    # shared parameters, batched data: as a numpy array, a dask.array and
    # a float argument
    D = RNG.normal(size=(90, 5))
    w = RNG.normal(size=4)
    L = ad.record(logistic_loss, w, D[0])
    DD = da.from_array(D, chunks=(33, 5))
    want = L.map(w, D, method="value_and_grad", in_axes=(None, 0))
    _same(_computed(client, ad.dask.map(L, w, DD, method="value_and_grad",
                                        in_axes=(None, 0))), want)
    _same(_computed(client, ad.dask.map(L, da.from_array(w), DD, method="value_and_grad",
                                        in_axes=(None, 0))), want)
    S = ad.record(lambda a, x: a * np.sum(x ** 2), 2.0, X[0])
    want = S.map(1.5, X, method="grad", in_axes=(None, 0))
    _same(ad.dask.map(S, 1.5, DX, method="grad", in_axes=(None, 0)).compute(), want)
    _same(ad.dask.map(S, da.from_array(np.array(1.5)), DX, method="grad",
                      in_axes=(None, 0)).compute(), want)
    # floats as points, and a block of none
    Q = ad.record(lambda a: a ** 3 - a, 2.0)
    _same(_computed(client, ad.dask.map(Q, da.arange(9.0, chunks=4), method="value_and_grad")),
          Q.map(np.arange(9.0), method="value_and_grad"))
    _same(ad.dask.map(F, da.zeros((0, 6), chunks=5), method="grad").compute(),
          np.zeros((0, 6)))


def test_a_data_parallel_gradient_is_the_in_memory_one(client):
    n, p = 20_000, 6
    rng = np.random.default_rng(3)
    features = rng.normal(size=(n, p))
    labels = np.where(features @ rng.normal(size=p) + rng.normal(size=n) > 0, 1.0, -1.0)
    D = np.column_stack([features, labels])
    w = np.full(p, 0.1)
    margin = labels * (features @ w)
    want = features.T @ (-labels / (1.0 + np.exp(margin)))    # written out, in NumPy

    # recorded per row: one gradient row per data row, summed by Dask
    per_row = ad.record(logistic_loss, w, D[0])
    DD = da.from_array(D, chunks=(3_000, p + 1))
    got = ad.dask.map(per_row, w, DD, method="grad", in_axes=(None, 0)).sum(axis=0)
    assert np.allclose(got.compute(), want, rtol=1e-12, atol=0)

    # recorded per chunk of 500 rows: one point per chunk
    def chunk_loss(w, rows):
        return np.sum(np.log1p(np.exp(-rows[:, -1] * (rows[:, :-1] @ w))))
    per_chunk = ad.record(chunk_loss, w, D[:500])
    chunks = DD.reshape(n // 500, 500, p + 1).rechunk((7, 500, p + 1))
    got = ad.dask.map(per_chunk, w, chunks, method="grad", in_axes=(None, 0)).sum(axis=0)
    assert np.allclose(got.compute(), want, rtol=1e-12, atol=0)


def test_an_ad_function_is_recorded_at_the_first_point(client):
    @ad.function
    def f(x):
        return np.sum(np.sin(x) * x)
    DX = da.from_array(X, chunks=50)
    got = ad.dask.map(f, DX, method="value_and_grad")
    _same(_computed(client, got), f.map(X, method="value_and_grad"))
    V = RNG.normal(size=X.shape)
    _same(ad.dask.map(f, DX, da.from_array(V, chunks=50), method="hvp").compute(),
          f.map(X, V, method="hvp"))


def test_a_flipped_guard_names_its_row_of_the_whole_array(client):
    def f(x):
        return np.sum(x ** 2) if x[0] > 0 else np.sum(x)
    P = np.abs(X)
    P[57, 0] = -1.0                        # in the second block of 40
    F = ad.record(f, P[0])
    DP = da.from_array(P, chunks=40)
    with pytest.raises(ad.BranchError, match="point 57 of the batch"):
        ad.dask.map(F, DP, method="grad").compute()
    got = ad.dask.map(F, DP, method="grad", errors="nan").compute()
    assert np.isnan(got[57]).all()
    keep = np.arange(len(P)) != 57
    _same(got[keep], F.map(P[keep], method="grad"))


def test_what_ad_dask_map_refuses(client):
    F = ad.record(rosen, X[0])
    DX = da.from_array(X, chunks=40)
    with pytest.raises(ValueError, match="points of shape"):
        ad.dask.map(F, da.from_array(X[:, :5], chunks=40))
    with pytest.raises(ValueError, match="sparse"):
        ad.dask.map(F, DX, method="sparse_hessian")
    with pytest.raises(ValueError, match="no argument is batched"):
        ad.dask.map(F, X[0], in_axes=None)
    with pytest.raises(TypeError, match="takes a recording"):
        ad.dask.map(rosen, DX)
    with pytest.raises(ValueError, match="errors must be"):
        ad.dask.map(F, DX, errors="ignore")
    with pytest.raises(ValueError, match="threads must be"):
        ad.dask.map(F, DX, threads=0)
    T = ad.record(lambda xs: xs[0] @ xs[1], (X[0], X[1]))
    with pytest.raises(TypeError, match="plain arguments"):
        ad.dask.map(T, DX)


def test_the_recording_travels_once_to_every_worker_and_in_no_task(client):
    C = np.random.default_rng(0).normal(size=30_000)
    F = ad.record(lambda x: np.sum(np.tanh(x[0] * C)), np.zeros(3))
    size = len(tapefile.dumps(F))                   # C is in it: some 240 kB
    Y = ad.dask.map(F, da.zeros((100, 3), chunks=10), method="grad")
    assert len(pickle.dumps(dict(Y.__dask_graph__()))) < size / 10   # ten blocks
    Y.compute()
    sent = pyautodiff.dask._SENT[F][client.id]
    assert len(client.who_has(sent)[sent.key]) == 2
    ad.dask.map(F, da.zeros((10, 3), chunks=5)).compute()
    assert pyautodiff.dask._SENT[F][client.id] is sent     # not sent again


def test_minimize_many_is_a_serial_loop_of_minimize(client):
    X0 = np.random.default_rng(5).uniform(-2.0, 2.0, (6, 8))
    for method in ("L-BFGS-B", "lbfgs", "trust-ncg"):
        got = ad.dask.minimize_many(rosen, X0, method=method)
        want = [ad.minimize(rosen, x0, method=method) for x0 in X0]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            for key in ("x", "fun", "jac", "nit", "status", "success"):
                assert np.array_equal(g[key], w[key]), (method, key)
    # a recording itself, and f's further arguments
    F = ad.record(rosen, X0[0])
    got = ad.dask.minimize_many(F, X0, method="lbfgs")
    assert [g.fun for g in got] == [w.fun for w in
                                    (ad.minimize(rosen, x0, method="lbfgs") for x0 in X0)]

    def shifted(x, c):
        return np.sum((x - c) ** 2)
    got = ad.dask.minimize_many(shifted, X0[:3], args=(0.5,), method="BFGS")
    for g, x0 in zip(got, X0):
        assert np.array_equal(g.x, ad.minimize(shifted, x0, args=(0.5,), method="BFGS").x)
    assert ad.dask.minimize_many(rosen, []) == []
    # several starts a task: the same results, in the order of the starts
    got = ad.dask.minimize_many(rosen, X0[:5], method="lbfgs", starts_per_task=2)
    assert [g.fun for g in got] == [w.fun for w in
                                    (ad.minimize(rosen, x0, method="lbfgs") for x0 in X0[:5])]
    futures = ad.dask.submit_minimize(rosen, X0[:5], method="lbfgs", starts_per_task=2)
    assert [len(task) for task in client.gather(futures)] == [2, 2, 1]
    with pytest.raises(ValueError, match="starts_per_task"):
        ad.dask.minimize_many(rosen, X0, starts_per_task=0)


def test_minimize_many_records_again_where_a_guard_flips(client):
    def f(x):
        return np.sum((x - 1.0) ** 2) if x[0] > 0 else np.sum((x + 1.0) ** 2)
    X0 = np.array([[1.0, 2.0], [-1.0, -2.0], [3.0, 0.5]])   # recorded at the first
    got = ad.dask.minimize_many(f, X0, method="lbfgs")
    for g, x0 in zip(got, X0):
        assert np.array_equal(g.x, ad.minimize(f, x0, method="lbfgs").x)
    with pytest.raises(ad.BranchError, match="no function to record again"):
        ad.dask.minimize_many(ad.record(f, X0[0]), X0, method="lbfgs")


def _corrupted(dumps):
    def corrupt(rec):
        data = bytearray(dumps(rec))
        data[-40] ^= 0x40                  # a bit of the last column
        return bytes(data)
    return corrupt


def test_a_recording_corrupted_on_the_way_is_a_value_error_on_the_client(client, monkeypatch):
    pids = client.run(os.getpid)
    monkeypatch.setattr(tapefile, "dumps", _corrupted(tapefile.dumps))
    F = ad.record(rosen, X[0])
    with pytest.raises(ValueError, match="the recording sent to this worker: "
                                         "checksum mismatch"):
        ad.dask.map(F, da.from_array(X, chunks=40), method="grad").compute()
    with pytest.raises(ValueError, match="the recording sent to this worker: "
                                         "checksum mismatch"):
        ad.dask.minimize_many(rosen, X[:4])
    monkeypatch.undo()
    # nothing else lost: the same workers compute on
    G = ad.record(rosen, X[0])
    _same(ad.dask.map(G, da.from_array(X, chunks=40), method="grad").compute(),
          G.map(X, method="grad"))
    assert client.run(os.getpid) == pids


def _slowly(block):
    time.sleep(0.25)
    return block


def test_a_worker_killed_mid_run_costs_a_rerun_and_no_row(client):
    P = RNG.normal(size=(2_000, 6))
    F = ad.record(rosen, P[0])
    # 20 blocks of a quarter second each: about 2.5 s on two workers
    slow = da.from_array(P, chunks=100).map_blocks(_slowly, dtype=np.float64)
    futures = client.compute(list(ad.dask.map(F, slow, method="value_and_grad")))
    time.sleep(1.0)
    assert not any(f.done() for f in futures)
    victim = next(iter(client.run(os.getpid).values()))
    os.kill(victim, signal.SIGKILL)
    _same(tuple(client.gather(futures)), F.map(P, method="value_and_grad"))
    client.wait_for_workers(2, timeout=60)
    assert victim not in client.run(os.getpid).values()


def test_the_same_code_on_a_client_of_the_schedulers_address(client):
    F = ad.record(rosen, X[0])
    with distributed.Client(client.scheduler.address) as other:
        got = ad.dask.map(F, da.from_array(X, chunks=40), method="grad", client=other)
        _same(other.compute(got).result(), F.map(X, method="grad"))
        results = ad.dask.minimize_many(rosen, X[:3], method="lbfgs", client=other)
        assert [r.fun for r in results] == [ad.minimize(rosen, x, method="lbfgs").fun
                                            for x in X[:3]]


def test_no_client_is_a_clear_error():
    script = ("import numpy as np, dask.array as da, pyautodiff as ad, pyautodiff.dask\n"
              "F = ad.record(lambda x: x @ x, np.zeros(2))\n"
              "try:\n"
              "    ad.dask.map(F, da.zeros((4, 2)))\n"
              "except ValueError as e:\n"
              "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert "ad.dask.map: no Dask client" in out.stdout, out.stderr


def test_without_dask_the_import_error_names_the_extra(monkeypatch):
    out = subprocess.run([sys.executable, "-c", "import sys, pyautodiff; "
                          "print(sorted({'dask', 'distributed'} & set(sys.modules)))"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr      # import pyautodiff imports no Dask
    monkeypatch.setitem(sys.modules, "distributed", None)    # (import distributed fails)
    monkeypatch.delitem(sys.modules, "pyautodiff.dask")
    monkeypatch.delattr(ad, "dask")
    with pytest.raises(ImportError, match=r"pip install 'pyautodiff\[dask\]'"):
        import pyautodiff.dask  # noqa: F401
    with pytest.raises(ImportError, match=r"pip install 'pyautodiff\[dask\]'"):
        ad.dask
