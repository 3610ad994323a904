"""Threads inside a derivative: a function differentiated by ad.grad & co.
(or recorded) that hands traced values to other threads gets the exact
derivative of what those threads computed, at every order, in recordings
(replayed at other points) and in the autograd drop-in -- never a silent
zero.  The oracle is the same function computed in one thread, and values
by hand."""
import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import pyautodiff as ad
import pyautodiff.autograd as pag

POOL = ThreadPoolExecutor(2)


def _body(v):
    return np.sum(np.sin(v) * v)


def _in_thread(fn, *args):
    box = []
    t = threading.Thread(target=lambda: box.append(fn(*args)))
    t.start()
    t.join()
    return box[0]


def _via_thread(v):
    return _in_thread(_body, v)


def _via_pool(v):
    parts = list(POOL.map(lambda k: np.sin(v[k]) * v[k], range(v.shape[0])))
    return sum(parts[1:], parts[0])


def _via_asyncio(v):
    async def main():
        return await asyncio.to_thread(_body, v)
    return asyncio.run(main())


def _mixed(v):
    """the main thread goes on with what a worker computed"""
    w = _in_thread(lambda v: np.exp(v) * v[0], v)
    return np.sum(w * np.cos(v)) + v[1] ** 3


def _mixed_direct(v):
    return np.sum(np.exp(v) * v[0] * np.cos(v)) + v[1] ** 3


def _two_hops(v):
    """a worker hands its result to another worker"""
    first = _in_thread(lambda v: np.tanh(v) * v, v)
    return _in_thread(lambda w: np.sum(w ** 2 * v), first)


def _two_hops_direct(v):
    return np.sum((np.tanh(v) * v) ** 2 * v)


def _matrix(v):
    a = v.reshape(2, 2)
    return _in_thread(lambda a: np.sum(np.tanh(a @ a.T)) + np.sum(a[:, ::-1] * a), a)


def _matrix_direct(v):
    a = v.reshape(2, 2)
    return np.sum(np.tanh(a @ a.T)) + np.sum(a[:, ::-1] * a)


CASES = {
    "threading.Thread": (_via_thread, _body),
    "ThreadPoolExecutor.map": (_via_pool, _body),
    "asyncio.to_thread": (_via_asyncio, _body),
    "the main thread goes on": (_mixed, _mixed_direct),
    "two hops": (_two_hops, _two_hops_direct),
    "matrix products and slices": (_matrix, _matrix_direct),
}
X = np.array([0.3, 0.7, -1.1, 0.4])
X1 = np.array([-0.5, 1.3, 0.2, 0.9])


@pytest.mark.parametrize("name", CASES)
def test_every_transform_is_exact(name):
    f, direct = CASES[name]
    np.testing.assert_allclose(ad.grad(f)(X), ad.grad(direct)(X), rtol=1e-14)
    np.testing.assert_allclose(ad.hessian(f)(X), ad.hessian(direct)(X), rtol=1e-14, atol=1e-15)
    value, tangent = ad.jvp(f)(X, X1)
    assert value == pytest.approx(direct(X), rel=1e-14)
    assert tangent == pytest.approx(ad.jvp(direct)(X, X1)[1], rel=1e-14)
    np.testing.assert_allclose(pag.grad(f)(X), ad.grad(direct)(X), rtol=1e-14)
    np.testing.assert_allclose(ad.jacobian(ad.grad(f))(X), ad.hessian(direct)(X),
                               rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", CASES)
def test_recordings_replay_the_threads_work(name):
    f, direct = CASES[name]
    F = ad.record(f, X)
    for x in (X, X1):
        assert F(x) == pytest.approx(direct(x), rel=1e-14)
        np.testing.assert_allclose(F.grad(x), ad.grad(direct)(x), rtol=1e-14)
        np.testing.assert_allclose(F.hessian(x), ad.hessian(direct)(x), rtol=1e-13,
                                   atol=1e-15)


def test_by_hand():
    true = np.cos(X) * X + np.sin(X)
    np.testing.assert_allclose(ad.grad(_via_thread)(X), true, rtol=1e-15)
    np.testing.assert_allclose(ad.grad(_via_pool)(X), true, rtol=1e-15)


def test_scalar_arguments_and_third_order():
    f = lambda s: _in_thread(lambda s: np.sin(s) * s ** 3, s)      # noqa: E731
    assert ad.grad(f)(0.7) == pytest.approx(np.cos(0.7) * 0.343 + 3 * np.sin(0.7) * 0.49)
    d3 = ad.grad(ad.grad(ad.grad(f)))(0.7)
    d3_direct = ad.grad(ad.grad(ad.grad(lambda s: np.sin(s) * s ** 3)))(0.7)
    assert d3 == pytest.approx(d3_direct, rel=1e-13)


def test_a_threads_decisions_are_guards_of_a_recording():
    def f(v):
        def work(v):
            return np.sum(v ** 2) if np.sum(v) > 0 else np.sum(v ** 3)
        return _in_thread(work, v)
    F = ad.record(f, X)
    np.testing.assert_allclose(F.grad(X1), 2 * X1)
    with pytest.raises(ad.BranchError):
        F(-X1)
    lazy = ad.function(f)
    assert lazy(-X1) == pytest.approx(np.sum((-X1) ** 3))


def test_the_threads_are_their_own_again_after_the_derivative():
    """After the derivative, a worker converts its own numbers freely, and
    records as before."""
    ad.grad(_via_pool)(X)
    got = list(POOL.map(lambda k: float(ad.Array(X)[k] * 2.0), range(4)))
    assert got == (2 * X).tolist()
    a = ad.Array(X)
    loss = POOL.submit(lambda: (np.sin(a) * a).sum()).result()
    loss.backward()
    np.testing.assert_allclose(a.grad, np.cos(X) * X + np.sin(X), rtol=1e-15)


def test_a_workers_own_parameter_gets_its_gradient():
    """A worker's own Array (made in it) used with traced values: the
    derivative's own variables get theirs, the worker's own Array keeps
    working as outside a derivative."""
    w = ad.Array([2.0, 3.0, 4.0, 5.0])
    f = lambda v: _in_thread(lambda v: np.sum(w * v ** 2), v)      # noqa: E731
    np.testing.assert_allclose(ad.grad(f)(X), 2 * w.data * X, rtol=1e-15)


def test_vjp_and_jacobian_of_a_vector_result():
    f = lambda v: _in_thread(lambda v: np.tanh(v) * v[::-1], v)    # noqa: E731
    direct = lambda v: np.tanh(v) * v[::-1]                        # noqa: E731
    np.testing.assert_allclose(ad.jacobian(f)(X), ad.jacobian(direct)(X), rtol=1e-14)
    out, vjp_fn = ad.vjp(f)(X)
    np.testing.assert_allclose(out, direct(X))
    np.testing.assert_allclose(vjp_fn(X1), ad.vjp(direct)(X)[1](X1), rtol=1e-14)
