"""F.map: one recording at many points in one call.  Every row is bit for
bit the single call's at its point, for every method, in_axes, thread
count, guard flip (raised, or NaN rows) and input layout."""
import signal
import threading

import numpy as np
import pytest

import pyautodiff as ad
from helpers import same_rows

RNG = np.random.default_rng(7)


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rows(fn, points):
    rows = [fn(p) for p in points]
    if isinstance(rows[0], tuple):
        return tuple(np.stack([np.asarray(r[i]) for r in rows]) for i in range(len(rows[0])))
    return np.stack([np.asarray(r) for r in rows])


_same = same_rows


X = RNG.normal(size=(37, 6))


@pytest.mark.parametrize("threads", [1, 2, 3, None])
@pytest.mark.parametrize("method", ["value", "grad", "value_and_grad"])
def test_value_and_gradient_in_c_bit_for_bit(method, threads):
    F = ad.record(rosen, X[0])
    single = F.__call__ if method == "value" else getattr(F, method)
    _same(F.map(X, method=method, threads=threads), _rows(single, X))


def test_the_other_methods():
    F = ad.record(lambda x: np.tanh(x) * x[::-1], X[0])
    _same(F.map(X[:5], method="jacobian"), _rows(F.jacobian, X[:5]))
    _same(F.map(X[:5], method="sparse_jacobian"),
          np.stack([F.sparse_jacobian(x).toarray() for x in X[:5]]))
    G = ad.record(rosen, X[0])
    _same(G.map(X[:5], method="hessian"), _rows(G.hessian, X[:5]))
    _same(G.map(X[:5], method="sparse_hessian"),
          np.stack([G.sparse_hessian(x).toarray() for x in X[:5]]))


def test_hvp_and_jvp_take_a_vector_per_point_or_one_for_all():
    F = ad.record(rosen, X[0])
    V = RNG.normal(size=X.shape)
    _same(F.map(X, V, method="hvp"), np.stack([F.hvp(x, v) for x, v in zip(X, V)]))
    _same(F.map(X, V[0], method="hvp", in_axes=(0, None)),
          np.stack([F.hvp(x, V[0]) for x in X]))
    _same(F.map(X, V, method="jvp"), _rows(lambda p: F.jvp(*p), list(zip(X, V))))


def test_array_results_and_scalar_arguments():
    F = ad.record(lambda x: np.sin(x) * x ** 2, X[0])
    _same(F.map(X), _rows(F, X))
    s = RNG.normal(size=11)
    G = ad.record(lambda t: np.sin(t) * t ** 3, 0.5)
    _same(G.map(s), _rows(G, s))
    _same(G.map(s, method="grad"), _rows(G.grad, s))


def test_in_axes_shared_data_and_several_arguments():
    data = RNG.normal(size=(50, 6))

    def loss(p, d):
        return np.sum((d @ p - 1.0) ** 2)
    F = ad.record(loss, X[0], data)
    _same(F.map(X, data, in_axes=(0, None), method="grad"),
          np.stack([F.grad(x, data) for x in X]))
    D = RNG.normal(size=(4, 50, 6))
    _same(F.map(X[0], D, in_axes=(None, 0)), np.stack([F(X[0], d) for d in D]))
    G = ad.record(loss, X[0], data, argnum=1)
    _same(G.map(X[:3], D[:3], method="grad"),
          np.stack([G.grad(x, d) for x, d in zip(X[:3], D)]))


def test_structured_arguments():
    def f(params):
        return np.sum(params["w"] ** 2) * params["b"] + np.sum(np.sin(params["w"]))
    p0 = {"w": X[0], "b": 0.5}
    F = ad.record(f, p0)
    batch = {"w": X[:8], "b": np.linspace(0.0, 1.0, 8)}
    want = [F.grad({"w": X[k], "b": float(batch["b"][k])}) for k in range(8)]
    got = F.map(batch, method="grad")
    np.testing.assert_array_equal(got["w"], np.stack([w["w"] for w in want]))
    np.testing.assert_array_equal(got["b"], [w["b"] for w in want])
    _same(F.map(batch), np.array([F({"w": X[k], "b": float(batch["b"][k])})
                                  for k in range(8)]))


def _branchy(x):
    return np.sum(x ** 2) if np.sum(x) > 0 else np.sum(x ** 3)


def test_a_flipped_guard_names_the_point_or_gives_nan():
    F = ad.record(_branchy, np.ones(6))
    pts = np.abs(X[:10])
    pts[3] *= -1.0
    pts[7] *= -1.0
    with pytest.raises(ad.BranchError, match="point 3"):
        F.map(pts)
    for method in ("value", "grad", "value_and_grad", "hessian"):
        got = F.map(pts, method=method, errors="nan")
        ok = [k for k in range(10) if k not in (3, 7)]
        single = F.__call__ if method == "value" else getattr(F, method)
        want = _rows(single, pts[ok])
        rows = got if not isinstance(got, tuple) else got
        if isinstance(want, tuple):
            for g, w in zip(got, want):
                _same(g[ok], w)
                assert np.isnan(g[[3, 7]]).all()
        else:
            _same(rows[ok], want)
            assert np.isnan(rows[[3, 7]]).all()


def test_a_function_records_again_where_a_guard_flips():
    G = ad.function(_branchy)
    pts = np.abs(X[:10])
    pts[3] *= -1.0
    _same(G.map(pts), np.array([_branchy(p) for p in pts]))
    got = G.map(pts, method="grad")
    _same(got[3], 3 * pts[3] ** 2)
    _same(got[0], 2 * pts[0])


def test_empty_one_point_and_layouts():
    F = ad.record(rosen, X[0])
    assert F.map(X[:0]).shape == (0,)
    assert F.map(X[:0], method="grad").shape == (0, 6)
    _same(F.map(X[:1], method="grad"), F.grad(X[0])[None])
    fortran = np.asfortranarray(X)
    strided = np.concatenate([X, X], axis=1)[:, ::2]
    for layout in (fortran, strided, X[::-2]):
        _same(F.map(layout, method="value_and_grad"), _rows(F.value_and_grad, layout))


def test_python_extern_ops_go_point_by_point():
    F = ad.record(lambda x: np.linalg.det(x.reshape(2, 3) @ x.reshape(3, 2)) + rosen(x),
                  X[0])
    _same(F.map(X[:6], method="grad"), _rows(F.grad, X[:6]))
    _same(F.map(X[:6]), _rows(F, X[:6]))


def test_matrix_products_run_in_c():
    A = RNG.normal(size=(6, 6))
    F = ad.record(lambda x: np.sum(np.tanh(A @ x) ** 2), X[0])
    _same(F.map(X, method="value_and_grad", threads=2), _rows(F.value_and_grad, X))


def test_threads_mapping_at_once():
    F = ad.record(rosen, X[0])
    G = ad.record(lambda x: np.sum(np.sin(x) * x), X[0])
    want_f, want_g = _rows(F.grad, X), _rows(G.grad, X)
    errors = []

    def work(rec, want):
        try:
            for _ in range(20):
                _same(rec.map(X, method="grad", threads=2), want)
        except BaseException as e:      # noqa: BLE001 -- reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=a)
          for a in ((F, want_f), (G, want_g), (F, want_f))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


def test_bad_batches_say_what_is_wrong():
    F = ad.record(lambda p, d: np.sum(d @ p), X[0], np.ones((3, 6)))
    with pytest.raises(ValueError, match="argument 1 has points of shape"):
        F.map(X, np.ones((37, 3, 5)))
    with pytest.raises(ValueError, match="argument 1 has 5 points"):
        F.map(X, np.ones((5, 3, 6)))
    with pytest.raises(ValueError, match="no argument is batched"):
        F.map(X[0], np.ones((3, 6)), in_axes=None)
    with pytest.raises(ValueError, match="in_axes"):
        F.map(X, np.ones((3, 6)), in_axes=(0, 1))
    with pytest.raises(ValueError, match="method"):
        F.map(X, np.ones((3, 6)), method="gradient")
    with pytest.raises(ValueError, match="threads"):
        F.map(X, np.ones((3, 6)), in_axes=(0, None), threads=0)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        F.map(X)


def _smooth(x):
    return np.sum(np.exp(-x ** 2) * np.tanh(x[::-1])) / (1.0 + np.sum(x ** 2))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_second_order_in_c_bit_for_bit(threads):
    # six variables: a Hessian takes two tangent sweeps, of four lanes and two
    A = RNG.normal(size=(6, 6))
    for f in (rosen, _smooth, lambda x: np.sum(np.sin(A @ x) ** 2)):
        F = ad.record(f, X[0])
        V = RNG.normal(size=X.shape)
        _same(F.map(X, method="hessian", threads=threads), _rows(F.hessian, X))
        _same(F.map(X, V, method="hvp", threads=threads),
              np.stack([F.hvp(x, v) for x, v in zip(X, V)]))
        _same(F.hessian(X[3]), ad.hessian(f)(X[3]))     # F itself unchanged


def test_second_order_of_one_argument_among_several():
    def loss(p, d, s):
        return s * np.sum(np.log1p(np.exp(-(d @ p))))
    D = RNG.normal(size=(4, 3))
    F = ad.record(loss, X[0, :3], D, 0.5)
    P = X[:, :3]
    _same(F.map(P, D, 0.5, method="hessian", in_axes=(0, None, None)),
          np.stack([F.hessian(p, D, 0.5) for p in P]))
    V = RNG.normal(size=P.shape)
    _same(F.map(P, D, 0.5, V, method="hvp", in_axes=(0, None, None, 0)),
          np.stack([F.hvp(p, D, 0.5, v) for p, v in zip(P, V)]))
    s = np.linspace(0.1, 2.0, 5)
    G = ad.record(lambda t, x: t ** 3 * np.sum(np.sin(x)), 0.5, X[0], argnum=0)
    _same(G.map(s, X[0], method="hessian", in_axes=(0, None)),
          np.array([G.hessian(t, X[0]) for t in s]))


def test_ctrl_c_lands_between_chunks():
    # about 40 s of work at a few hundred ns an entry: an interrupt after a
    # fraction of a second must stop it at the next chunk
    def long(x):
        y = x[0]
        for _ in range(2000):
            y = np.sin(y) * x[1] + 0.5
        return y
    F = ad.record(long, np.array([0.3, 0.7]))
    pts = np.tile([0.3, 0.7], (1_000_000, 1))
    timer = threading.Timer(0.3, signal.raise_signal, (signal.SIGINT,))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            F.map(pts, method="grad", threads=2)
    finally:
        timer.cancel()
    _same(F.map(pts[:3], method="grad"), _rows(F.grad, pts[:3]))   # still whole


@pytest.mark.parametrize("threads", [1, 2])
def test_jacobians_in_c_bit_for_bit(threads):
    from pyautodiff import batch
    cases = [
        (lambda x: np.tanh(x) * x[::-1], X[0]),             # square: reverse rows
        (lambda x: np.sin(x[:3] * x[3:]), X[0]),             # fewer rows than columns
        (lambda x: np.outer(np.exp(x[:2]), x[2:]), X[0]),    # more rows: tangent lanes
        (lambda x: np.sum(x ** 3), X[0]),                    # a scalar result
        (lambda t: np.sin(t * np.arange(1.0, 4.0)) * t, 0.3),           # a float
    ]
    for f, x0 in cases:
        F = ad.record(f, x0)
        assert batch._native(F, "jacobian") == "jacobian"
        pts = X if np.ndim(x0) else X[:, 0]
        _same(F.map(pts, method="jacobian", threads=threads), _rows(F.jacobian, pts))


def test_map_while_other_threads_record_and_differentiate():
    F = ad.record(_smooth, X[0])
    want = _rows(F.hessian, X)
    stop = threading.Event()
    errors = []

    def record_elsewhere(seed):
        rng = np.random.default_rng(seed)
        try:
            while not stop.is_set():
                x = rng.normal(size=6)
                g = ad.grad(rosen)(x)
                want_g = np.concatenate([[0.0], 200 * (x[1:] - x[:-1] ** 2)]) + \
                    np.concatenate([-400 * x[:-1] * (x[1:] - x[:-1] ** 2)
                                    - 2 * (1 - x[:-1]), [0.0]])
                np.testing.assert_allclose(g, want_g, rtol=1e-12, atol=1e-12)
                ad.record(_smooth, x).map(X[:4], method="grad", threads=2)
        except BaseException as e:      # noqa: BLE001 -- reported below
            errors.append(e)
    ts = [threading.Thread(target=record_elsewhere, args=(s,)) for s in range(2)]
    for t in ts:
        t.start()
    try:
        for _ in range(10):
            _same(F.map(X, method="hessian", threads=2), want)
    finally:
        stop.set()
        for t in ts:
            t.join()
    assert not errors, errors[0]


def _every_elementwise(a, b):
    """Every elementwise op of the table on floats, chained, with numbers
    on both sides and a guard: a recording of scalars, which map replays
    several points at a time (csrc/lanes.c)."""
    s = np.sin(a) * b + np.cos(b) / (1.5 + a * a) - a ** 3 + 2.0 ** b
    s = s + np.tanh(s) + np.exp(-a * a) + np.log(1.0 + b * b) + np.sqrt(2.0 + np.sin(s))
    s = s + ad.sigmoid(a) + ad.relu(b - 0.3) + abs(a - b) + np.arctan(s) + np.tan(0.3 * a)
    s = s + np.log1p(b * b) + np.expm1(0.1 * a) + np.arcsin(0.5 * np.tanh(a))
    s = s + np.arccos(0.5 * np.tanh(b)) + np.sinh(0.2 * a) + np.cosh(0.2 * b)
    s = s + np.arcsinh(s) + np.arccosh(2.0 + b * b) + np.arctanh(0.5 * np.tanh(s))
    s = s + np.cbrt(a - 2.0) - (-a) + 3.0 / (2.0 + b * b) - 1.0 + a ** b ** 0 * 0.5
    s = s + (b / 2.0) - (4.0 - a) + a ** 2 + np.maximum(a, b) + np.minimum(a, b)
    return s * s if a > -0.5 else -s


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_recordings_of_scalars_run_several_points_at_a_time_bit_for_bit(threads):
    F = ad.record(_every_elementwise, 0.3, 0.7)
    assert all(F.trace.tape._c.aux[i] < 0 for i in range(len(F.trace.tape)))
    A = RNG.uniform(-0.4, 1.0, 45)          # not a multiple of the lanes
    B = RNG.uniform(0.1, 1.2, 45)
    A[7] = -0.9                             # a guard flips here
    for method in ("value", "grad", "value_and_grad"):
        got = F.map(A, B, method=method, threads=threads, errors="nan")
        rows = []
        for a, b in zip(A, B):
            try:
                rows.append(F(a, b) if method == "value" else getattr(F, method)(a, b))
            except ad.BranchError:
                rows.append(None)
        assert rows[7] is None
        ok = [k for k in range(45) if k != 7]
        want = _rows(lambda k: rows[k], ok)
        if method == "value":
            _same(got[ok], want)
            assert np.isnan(got[7])
        elif method == "grad":      # the first argument's gradient
            _same(got[ok], want)
        else:
            _same(got[0][ok], want[0])
            _same(got[1][ok], want[1])
    G = ad.record(_every_elementwise, 0.3, 0.7, argnum=1)
    _same(G.map(A[ok], B[ok], method="grad", threads=threads),
          np.array([G.grad(a, b) for a, b in zip(A[ok], B[ok])]))


def test_random_programs_of_scalars_map_bit_for_bit():
    # the scalar fuzzer's programs (every op of the C enum, custom ops'
    # extern entries among them, which go point by point): each mapped row
    # is the single replay's
    import random

    from pyautodiff.testing.fuzz_scalars import random_program, run_program
    rng = random.Random(11)
    done = 0
    for _ in range(60):
        steps, inputs = random_program(rng, max_steps=40)
        f = lambda *xs: run_program(steps, xs)      # noqa: E731
        try:
            F = ad.record(f, *inputs)
        except (ValueError, ZeroDivisionError, OverflowError):
            continue                                # outside an op's domain
        near = np.array(inputs) + RNG.uniform(-1e-3, 1e-3, (13, len(inputs)))
        pts = [near[:, k] for k in range(len(inputs))]     # one array per input
        got = F.map(*pts, method="value_and_grad", errors="nan")
        for k in range(13):
            point = [float(x[k]) for x in pts]
            try:
                want = F.value_and_grad(*point)
            except ad.BranchError:
                assert np.isnan(got[0][k])
                continue
            except (ValueError, ZeroDivisionError, OverflowError):
                continue
            _same(got[0][k], want[0])
            _same(got[1][k], want[1])
        done += 0 if F.trace.tape.externs else 1     # (those ran in lanes)
    assert done > 25


def test_shared_data_is_not_copied_per_point():
    # 2,000 points sharing 800 KB of data: one copy per point would take
    # 1.6 GB, and so would gradients of every leaf rather than the
    # differentiated argument's
    import tracemalloc
    D = RNG.normal(size=(20_000, 5))
    F = ad.record(lambda p, d: np.sum(np.tanh(d * p)), np.ones(5), D)
    from pyautodiff import batch
    assert batch._native(F, "value_and_grad") == "value_and_grad"
    P = RNG.normal(size=(2000, 5)) * 0.1
    F.map(P[:2], D, method="grad", in_axes=(0, None))
    tracemalloc.start()
    try:
        got = F.map(P, D, method="value_and_grad", in_axes=(0, None))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20, peak
    for k in (0, 977, 1999):
        _same((got[0][k], got[1][k]), F.value_and_grad(P[k], D))


def test_misaligned_points_are_read_as_aligned_copies():
    # an array unpickled from a buffer (as Dask hands over a block) may
    # start at any byte; C reads doubles aligned
    raw = bytearray(8 * X.size + 1)
    pts = np.frombuffer(raw, dtype=np.float64, count=X.size, offset=1).reshape(X.shape)
    pts[...] = X
    assert not pts.flags.aligned
    F = ad.record(rosen, X[0])
    _same(F.map(pts, method="grad"), _rows(F.grad, X))
    _same(F(pts[3]), F(X[3]))
    G = ad.record(lambda a, b: np.sin(a) * b, 0.3, 0.7)       # scalars: lanes
    _same(G.map(pts[:, 0], pts[:, 1], method="grad"),
          np.array([G.grad(a, b) for a, b in X[:, :2]]))
