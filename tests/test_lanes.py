"""Tangent sweeps of several lanes (csrc/ad.h: a sweep along up to four
directions at once, each elementwise partial computed once for all) give
bit for bit what one sweep per direction gives: the sparse Jacobians and
Hessians, which take their colours four at a time, and the dense ones,
which take their columns four at a time, are compared against the same
evaluation one direction per sweep, over random programs of every op
kind (pyautodiff/testing/fuzz_sparse.py), scalar programs, NumPy's matrix
products (a Python rule run once per lane) and more colours than one
sweep carries."""
import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import sparse, trace
from pyautodiff.testing import fuzz_sparse
from pyautodiff.tape_sweeps import DADJ, TAN

pytest.importorskip("scipy")


def _evaluations(monkeypatch, evaluate, *args):
    """evaluate(*args) with colours in sweeps of up to four lanes and of
    one: the two csr_arrays."""
    with_lanes = evaluate(*args)
    monkeypatch.setattr(trace, "LANES", 1)
    one_by_one = evaluate(*args)
    monkeypatch.setattr(trace, "LANES", 4)
    return with_lanes, one_by_one


def _same_bits(a, b):
    assert a.shape == b.shape
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    # equal as numbers, and NaN where the other is NaN
    np.testing.assert_array_equal(a.data, b.data)


@pytest.mark.parametrize("k", range(40))
def test_random_programs_give_the_same_bits_with_lanes(k, monkeypatch):
    rng, n, hessian = fuzz_sparse.draw(17, k)
    f = fuzz_sparse.random_program(rng, n, hessian)
    x = rng.normal(size=n)
    try:
        F = ad.record(f, x)
    except (ValueError, FloatingPointError, ZeroDivisionError):
        pytest.skip("not finite at x")
    evaluate = F.sparse_hessian if hessian else F.sparse_jacobian
    try:
        a, b = _evaluations(monkeypatch, evaluate, x)
    except (ValueError, FloatingPointError):
        pytest.skip("derivatives not finite at x")
    _same_bits(a, b)
    # and the functional form (a trace per call)
    fn = ad.sparse_hessian(f) if hessian else ad.sparse_jacobian(f)
    _same_bits(*_evaluations(monkeypatch, fn, x))
    # the dense ones: a column per lane
    dense = ad.hessian(f) if hessian else ad.jacobian(f)
    np.testing.assert_array_equal(*_evaluations(monkeypatch, dense, x))


def test_scalar_entries_take_every_lane(monkeypatch):
    """Values (scalar tape entries) run once per lane."""
    def f(x):
        a, b, c, d, e = (x[i] for i in range(5))
        return (ad.sin(a * b) + ad.exp(b - c) * c + d ** 3 / (1.0 + e * e)
                + ad.tanh(a + e) * ad.log(c * c + 1.0))
    x = np.array([0.3, -0.7, 1.1, 0.4, -1.3])
    a, b = _evaluations(monkeypatch, ad.sparse_hessian(f), x)
    _same_bits(a, b)
    np.testing.assert_allclose(a.toarray(), ad.hessian(f)(x), rtol=1e-13, atol=1e-14)


def test_more_colours_than_one_sweep_carries(monkeypatch):
    """Seven colours: a sweep of four lanes, then one of three."""
    A = np.random.default_rng(0).normal(size=(7, 7))

    def f(x):
        return ad.sum(ad.tanh(A @ x) ** 2) + ad.sum(x ** 4)
    x = np.linspace(-1.0, 1.0, 7)
    plan_hessian, _ = _evaluations(monkeypatch, ad.sparse_hessian(f), x)
    np.testing.assert_allclose(plan_hessian.toarray(), ad.hessian(f)(x),
                               rtol=1e-12, atol=1e-13)
    F = ad.record(f, x)
    assert sparse.recorded_plan(F, "hessian", "test").ncolors == 7
    _same_bits(*_evaluations(monkeypatch, F.sparse_hessian, x))
    # the tape's scratch, made with room for four lanes, serves the sweeps
    # of three and of one that follow, in any order
    first = F.sparse_hessian(x)
    v = np.arange(7.0)
    np.testing.assert_array_equal(F.hvp(x, v), ad.hvp(f)(x, v))
    _same_bits(F.sparse_hessian(x), first)
    np.testing.assert_allclose(first.toarray() @ v, F.hvp(x, v), rtol=1e-12)


def test_numpy_matrix_products_run_their_rule_once_per_lane(monkeypatch):
    """A large product is a Python rule (not the small products the C
    sweeps compute): the second-order sweep calls it for each lane, which
    adds the adjoints once."""
    rng = np.random.default_rng(1)
    W = rng.normal(size=(40, 40)) / 6.0

    def f(x):
        h = ad.tanh(W @ ad.reshape(x, (40, 3)))
        return ad.sum(h * h) + ad.sum(ad.sin(x[:-3] * x[3:]))
    x = rng.normal(size=120)
    F = ad.record(f, x)
    a, b = _evaluations(monkeypatch, F.sparse_hessian, x)
    _same_bits(a, b)
    np.testing.assert_allclose(a.toarray(), ad.hessian(f)(x), rtol=1e-11, atol=1e-12)


def test_a_tape_sweeps_lanes_and_shows_each():
    """Tape.tangent(lanes=3): select_lane shows each direction's tangents
    and Hessian-vector products, equal to three sweeps of one."""
    seeds = np.eye(3)
    with ad.Tape() as t:
        x = ad.Array(np.array([0.5, -1.0, 2.0]))
        y = ad.sum(ad.sin(x) * ad.exp(x[::-1]) + x ** 3)
        t.flush()
        t.tangent([x._i], [seeds], lanes=3)
        t.second_order([y._i], [1.0])
        got = []
        for lane in range(3):
            t.select_lane(lane)
            got.append([t.scratch(j, which).copy()
                        for j, which in ((x._i, TAN), (y._i, TAN), (x._i, DADJ))])
        t.select_lane(0)
        for lane in range(3):
            t.tangent([x._i], [seeds[lane]])
            t.second_order([y._i], [1.0])
            want = [t.scratch(j, which)
                    for j, which in ((x._i, TAN), (y._i, TAN), (x._i, DADJ))]
            for g, w in zip(got[lane], want):
                np.testing.assert_array_equal(g, w)
    H = np.array([row for _, _, row in got])
    np.testing.assert_allclose(H, ad.hessian(
        lambda v: ad.sum(ad.sin(v) * ad.exp(v[::-1]) + v ** 3))(np.array([0.5, -1.0, 2.0])),
        rtol=1e-13)


def test_bad_lane_counts_and_lanes_are_errors():
    with ad.Tape() as t:
        x = ad.Array(np.ones(2))
        ad.sum(x * x)
        t.flush()
        for lanes in (0, 5, -1):
            with pytest.raises(ValueError, match="1 to 4 directions"):
                t.tangent([x._i], [np.ones((max(lanes, 1), 2))], lanes=lanes)
        t.tangent([x._i], [np.ones((2, 2))], lanes=2)
        t.select_lane(1)
        for lane in (2, -1):
            with pytest.raises(IndexError, match="lane"):
                t.select_lane(lane)


def test_a_sweep_starts_from_lane_0_whatever_lane_was_shown():
    """select_lane(3) left on: the next sweeps still write every lane
    where it belongs (once they wrote past the blocks' ends)."""
    n = 1000
    seeds = np.stack([np.full(n, lane + 1.0) for lane in range(4)])
    with ad.Tape() as t:
        x = ad.Array(np.linspace(0.1, 1.0, n))
        z = ad.sin(x) * x
        y = ad.sum(z)
        t.flush()

        def sweep_and_read():
            t.tangent([x._i], [seeds], lanes=4)
            t.second_order([y._i], [1.0])
            out = []
            for lane in range(4):
                t.select_lane(lane)
                out.append((t.scratch(z._i, TAN).copy(), t.scratch(x._i, DADJ).copy()))
            return out
        first = sweep_and_read()            # ends on lane 3
        t.second_order([y._i], [1.0])
        again = sweep_and_read()
        for (tz, hx), (tz2, hx2) in zip(first, again):
            np.testing.assert_array_equal(tz, tz2)
            np.testing.assert_array_equal(hx, hx2)
        xs = np.linspace(0.1, 1.0, n)
        for lane, (tz, hx) in enumerate(first):
            np.testing.assert_allclose(tz, (lane + 1.0) * (np.cos(xs) * xs + np.sin(xs)),
                                       rtol=1e-13)
            np.testing.assert_allclose(hx, (lane + 1.0) * (2 * np.cos(xs) - xs * np.sin(xs)),
                                       rtol=1e-12, atol=1e-14)


def test_seeds_must_hold_every_lane():
    with ad.Tape() as t:
        x = ad.Array(np.ones(3))
        ad.sum(x * x)
        t.flush()
        for seed in (np.ones(3), np.ones((2, 3)), np.ones((4, 2))):
            with pytest.raises(ValueError, match="12 numbers"):
                t.tangent([x._i], [seed], lanes=4)
        with pytest.raises(ValueError, match="3 numbers, not 4"):
            t.tangent([x._i], [np.ones(4)])
