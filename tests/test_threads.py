"""Values, Arrays and recordings used from other threads than their own:
a model built here and trained in a worker, results of finished threads,
many threads' backward sweeps reaching shared leaves, a recording replayed
from a thread pool."""
import concurrent.futures
import sys
import threading
import time

import numpy as np
import pytest

import pyautodiff as ad


@pytest.fixture
def switch_often():
    """Threads switch every microsecond: races show within a short test."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def run_in_thread(fn, *args):
    """fn(*args) in a new thread, joined; its result, or its exception
    raised here."""
    box = {}

    def target():
        try:
            box["result"] = fn(*args)
        except BaseException as exc:       # re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


def _moons_like(n=32):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 2))
    y = (X[:, :1] * X[:, 1:] > 0).astype(np.float64)
    return X, y


def _train_mlp(model, steps=15):
    X, y = _moons_like()
    opt = ad.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        loss = ad.nn.mse_loss(model(X), y)
        loss.backward()
        opt.step()
    return [p.data.copy() for p in model.parameters()]


def test_a_model_built_here_trains_in_a_worker_as_it_does_here():
    here = ad.nn.MLP([2, 8, 1], rng=0)
    there = ad.nn.MLP([2, 8, 1], rng=0)
    start = [p.data.copy() for p in there.parameters()]
    expected = _train_mlp(here)
    got = run_in_thread(_train_mlp, there)
    for e, g, s in zip(expected, got, start):
        assert np.array_equal(e, g)                     # bit for bit
        assert not np.array_equal(g, s)                 # and it did train
    for p, g in zip(there.parameters(), got):
        assert p._t is ad.current_tape() and np.array_equal(p.data, g)


def _train_scalars(w, b, steps=10):
    """Plain SGD by hand on Values: each step's data assignment must be
    what the next step computes with."""
    data = [(0.5, 2.0), (-1.0, -1.5), (2.0, 4.5)]
    for _ in range(steps):
        loss = sum(((w * x + b) - t) ** 2 for x, t in data)
        w.grad = b.grad = 0.0
        loss.backward()
        w.data -= 0.05 * w.grad
        b.data -= 0.05 * b.grad
    return w.data, b.data


def test_scalar_parameters_built_here_train_in_a_worker_as_here():
    expected = _train_scalars(ad.Value(0.1), ad.Value(-0.2))
    w, b = ad.Value(0.1), ad.Value(-0.2)
    assert run_in_thread(_train_scalars, w, b) == expected
    assert (w.data, b.data) == expected and expected != (0.1, -0.2)


def test_values_of_a_finished_thread_take_gradients_here():
    def make():
        w = ad.Value(3.0)
        a = ad.Array([1.0, -2.0])
        return w, w * w, a, a * a           # leaves and results of them

    w, h, a, s = run_in_thread(make)
    y = h * 2.0 + w                         # 2 w^2 + w
    y.backward()
    assert w.grad == 4 * 3.0 + 1 and h.grad == 2.0
    (s * 3.0).sum().backward()              # 3 sum(a^2)
    assert a.grad.tolist() == [6.0, -12.0] and s.grad.tolist() == [3.0, 3.0]
    again = h * w                           # used again: w^3
    again.backward()
    assert w.grad == 13.0 + 27.0


def test_many_threads_backward_into_shared_leaves_lose_no_update(switch_often):
    w = ad.Value(1.0)
    h = w
    for _ in range(3000):       # the sweeps into w are long enough to overlap
        h = h * 1.0
    size = 5000
    p = ad.Array(np.ones(size))
    q = p * 1.0
    nthreads, rounds = 8, 40
    start = threading.Barrier(nthreads + 1)

    def worker(k):
        start.wait()
        for r in range(rounds):
            # contributions are integers: their sum is exact
            loss = h * float(k + 1) + (q * float(r)).sum()
            loss.backward()

    def meanwhile_here():
        """This thread records on the leaves' own tape meanwhile (arrays of
        new shapes, compactions) and adds contributions of its own."""
        for r in range(rounds):
            junk = ad.Array(np.ones(r + 2)) * 2.0
            junk.sum().backward()
            (h * 1.0).backward()
        ad.current_tape().compact()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(nthreads)]
    for t in threads:
        t.start()
    start.wait()
    meanwhile_here()
    for t in threads:
        t.join()
    assert w.grad == rounds * (sum(range(1, nthreads + 1)) + 1)
    assert h.grad == w.grad
    assert np.array_equal(p.grad, np.full(size, nthreads * sum(range(rounds))))


def _f(x):
    return ad.sum(ad.tanh(x) * x) + x[0] * x[1]


def _f_and_grad(x):
    """_f and its gradient in plain NumPy, derived by hand."""
    t = np.tanh(x)
    g = t + x * (1 - t * t)
    g[0] += x[1]
    g[1] += x[0]
    return float(np.sum(t * x) + x[0] * x[1]), g


def test_a_recording_replays_correctly_from_a_thread_pool(switch_often):
    F = ad.record(_f, np.zeros(5))
    G = ad.function(_f)
    points = [np.linspace(-1.0, 1.0, 5) * (k + 1) / 7 for k in range(48)]

    def use(x):
        return F(x), F.grad(x), F.value_and_grad(x), G(x), G.grad(x)

    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(use, points))
    for x, (value, grad, (v2, g2), gv, gg) in zip(points, results):
        want, want_grad = _f_and_grad(x)
        for v in (value, v2, gv):
            assert v == pytest.approx(want, rel=1e-14, abs=1e-15)
        for g in (grad, g2, gg):
            np.testing.assert_allclose(g, want_grad, rtol=1e-14, atol=1e-15)


def test_a_released_tapes_values_raise_from_any_thread():
    with ad.Tape():
        v = ad.Value(1.0)
        a = ad.Array([1.0, 2.0])

    def use():
        errors = []
        for op in (lambda: v * 2.0, lambda: a + 1.0, lambda: v.backward(),
                   lambda: a.sum()):
            with pytest.raises(ad.TapeError, match="released") as info:
                op()
            errors.append(info.value)
        return errors

    assert len(run_in_thread(use)) == 4
    assert len(use()) == 4



def test_recording_and_reading_grads_here_while_workers_sweep_into_this_tape(
        switch_often):
    """This thread records scalar and array operations on its leaves (C
    appends that read the operands' flags, without the tape's lock) and
    reads their gradients, while workers' sweeps run over this tape's
    entries (receive_grads: marks and gradients written with the GIL
    released).  Every read sees a whole gradient of whole contributions,
    and none is lost."""
    tape = ad.current_tape()
    w = ad.Value(1.0)
    h = w
    for _ in range(2000):       # long sweeps over this tape, to overlap
        h = h * 1.0
    small = ad.Array(np.ones(8))        # pooled rows: C keeps the GIL
    q = small
    for _ in range(200):
        q = q * 1.0
    big = ad.Array(np.ones(3000))       # its own block: C releases the GIL
    b = big * 1.0
    z = ad.Value(3.0)           # its gradient assigned from the workers
    nthreads, rounds = 4, 30
    start = threading.Barrier(nthreads + 1)
    steps = [0]         # this thread's, which the workers keep pace with
    stop = threading.Event()    # (set should this thread fail)

    def worker(k):
        start.wait()
        for r in range(rounds):
            while steps[0] < 2 * r and not stop.is_set():
                time.sleep(0)
            # integer contributions: every partial sum is exact
            loss = h * float(k + 1) + (q * float(r)).sum() + (b * 2.0).sum()
            loss.backward()
            z.grad = 5.0

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(nthreads)]
    for t in threads:
        t.start()
    start.wait()
    seen = {"w": 0.0, "h": 0.0, "small": np.zeros(8), "big": np.zeros(3000)}
    own = 0
    try:
        while any(t.is_alive() for t in threads):
            steps[0] += 1
            # operations on entries the workers' sweeps are marking
            s = w * 2.0 + h - w * h + z
            a = small * 2.0 + q * small
            c = big * 3.0 + b
            assert (s.data, a.data[0], c.data[0]) == (5.0, 3.0, 4.0)
            if steps[0] % 10 == 0:
                (h * 1.0).backward()        # this thread's own contribution
                own += 1
            # an Array's .grad is the ndarray the sweeps add into: its copy
            # is whole with them shut out
            with tape.lock:
                arrays = np.array(small.grad), np.array(big.grad)
            for name, grad in (("w", w.grad), ("h", h.grad), ("small", arrays[0]),
                               ("big", arrays[1])):
                grad = np.asarray(grad)
                # whole contributions only, none taken back
                assert np.array_equal(grad, np.round(grad)), (name, grad)
                assert np.all(grad >= seen[name]), (name, grad, seen[name])
                seen[name] = grad
    finally:
        stop.set()
    for t in threads:
        t.join()
    assert w.grad == h.grad == rounds * sum(range(1, nthreads + 1)) + own
    assert z.grad == 5.0
    assert np.array_equal(small.grad, np.full(8, nthreads * sum(range(rounds))))
    assert np.array_equal(q.grad, small.grad)
    assert np.array_equal(big.grad, np.full(3000, 2.0 * nthreads * rounds))
    assert np.array_equal(b.grad, big.grad)
