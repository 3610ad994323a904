"""A value that a derivative or a recording is tracing and that would
become a plain float (float(x), math.sin(x), np.float64(x), writing it into
an ndarray, np.asarray(x, dtype=float)) raises DetachError, a TypeError that
names the construct and the fix: no derivative would flow through that
number, so the derivative would silently miss terms.  Where no plain number
is made, or one is asked for on purpose (ad.stop_gradient, .item()), the
derivative is exact."""
import asyncio
import math
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import pyautodiff as ad
import pyautodiff.autograd as pag

# name: f of an array x, each making a plain number of a traced value
DETACHING = {
    "write an element": lambda x: _written(np.zeros(2), 0, x[0] ** 2) + x[1],
    "write a slice": lambda x: np.sum(_written(np.zeros(4), slice(1, 3), x) ** 2),
    "write a scalar": lambda x: _written(np.zeros(3), 1, np.sum(x)) * x[0],
    "float()": lambda x: float(x[0]) * x[1],
    "math.sin": lambda x: math.sin(x[0]) * x[1],
    "math.exp of a sum": lambda x: math.exp(np.sum(x)),
    "np.float64": lambda x: np.float64(x[0]) * x[1],
    "np.asarray(dtype=float)": lambda x: np.sum(np.asarray(x, dtype=float) ** 2),
    "np.array(dtype=float)": lambda x: np.sum(np.array([x[0], x[1]], dtype=float)),
    "a list of floats": lambda x: np.sum(np.array([float(v) for v in x]) * x),
}


def _written(g, index, value):
    g[index] = value
    return g if g.ndim == 1 and isinstance(index, slice) else np.sum(g)


@pytest.mark.parametrize("name", DETACHING)
def test_conversions_of_traced_arrays_raise(name):
    f = DETACHING[name]
    x = np.array([3.0, 1.0])
    transforms = (ad.grad, ad.hessian, lambda f: lambda x: ad.jvp(f)(x, np.ones(2)),
                  lambda f: lambda x: ad.record(f, x), pag.grad,
                  lambda f: lambda x: ad.minimize(f, x, method="lbfgs"))
    for transform in transforms:
        with pytest.raises(ad.DetachError, match="ad.stop_gradient") as info:
            transform(f)(x)
        assert isinstance(info.value, TypeError)


def test_the_reported_cases():
    def f(x):
        g = np.zeros(2)
        g[0] = x[0] ** 2
        return np.sum(g) + x[1]

    def h(x):
        xx = np.zeros(4)
        xx[1:-1] = x
        return np.sum(xx ** 2)
    for fn in (f, h):
        with pytest.raises(ad.DetachError):
            ad.grad(fn)(np.array([3.0, 1.0]))
    # written the way the message says: exact
    assert ad.grad(lambda x: np.sum(np.array([x[0] ** 2, 0.0])) + x[1])(
        np.array([3.0, 1.0])).tolist() == [6.0, 1.0]
    assert ad.grad(lambda x: np.sum(np.concatenate([[0.0], x, [0.0]]) ** 2))(
        np.array([3.0, 1.0])).tolist() == [6.0, 2.0]


@pytest.mark.parametrize("f", [lambda s: float(s) * s, lambda s: math.sin(s) * s,
                               lambda s: np.float64(s) * s, lambda s: math.exp(s),
                               lambda s: _written(np.zeros(2), 0, s * s)])
def test_conversions_of_traced_scalars_raise(f):
    for transform in (ad.grad, pag.grad, ad.hessian,
                      lambda f: lambda x: ad.record(f, x)):
        with pytest.raises(ad.DetachError):
            transform(f)(2.0)


def test_in_another_thread_too():
    def f(x):
        box = []
        t = threading.Thread(target=lambda: box.append(_catch(lambda: float(np.sum(x)))))
        t.start()
        t.join()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0] * x[0]
    with pytest.raises(ad.DetachError):
        ad.grad(f)(np.array([1.0, 2.0]))


def _catch(fn):
    try:
        return fn()
    except BaseException as e:      # handed back to the caller's thread
        return e


def test_stop_gradient_detaches_on_purpose():
    x = np.array([1.0, 2.0])
    # d/dx (x * sg(x)) = sg(x): the stopped factor is a constant
    np.testing.assert_array_equal(ad.grad(lambda x: np.sum(x * ad.stop_gradient(x)))(x), x)
    assert ad.grad(lambda s: s * ad.stop_gradient(s) ** 2)(3.0) == 9.0
    np.testing.assert_array_equal(
        ad.hessian(lambda x: np.sum(x ** 2 * ad.stop_gradient(x)))(x), np.diag(2 * x))
    # in a recording the stopped value is recomputed at every replay: no guard
    f = lambda x: np.sum(x * ad.stop_gradient(np.sin(x)))      # noqa: E731
    F = ad.record(f, x)
    assert not F.trace.tape.guards
    x1 = np.array([-0.5, 3.0])
    assert F(x1) == f(x1)
    np.testing.assert_array_equal(F.grad(x1), np.sin(x1))
    # plain values, containers and outside any derivative
    assert ad.stop_gradient(2.5) == 2.5
    assert ad.stop_gradient([1.0, {"a": x}])[1]["a"] is x
    v = ad.Value(3.0)
    w = ad.stop_gradient(v) * v
    w.backward()
    assert (w.data, v.grad) == (9.0, 3.0)
    a = ad.Array([1.0, 2.0])
    (ad.stop_gradient(a) * a).sum().backward()
    np.testing.assert_array_equal(a.grad, [1.0, 2.0])
    with ad.no_grad():
        assert ad.stop_gradient(v).data == 3.0


def test_what_stays_exact_raises_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ad.grad(lambda x: np.sin(x) * x)(1.0) == pytest.approx(
            math.sin(1.0) + math.cos(1.0))
        assert ad.grad(lambda x: x.item() * x)(3.0) == 3.0          # a constant asked for
        assert ad.grad(lambda x: x * 2 if int(x) == 1 else x)(1.5) == 2.0
        assert ad.grad(lambda x: round(x) * x)(2.2) == 2.0            # piecewise constant
        assert f"{ad.grad(lambda x: x ** 2)(3.0):.1f}" == "6.0"
        np.testing.assert_allclose(
            ad.grad(lambda x: np.sum(np.array([x[0] * x[1], x[1]])))(np.array([2.0, 3.0])),
            [3.0, 3.0])
        # outside any derivative, Values and Arrays convert quietly
        assert float(ad.Value(2.5)) == 2.5
        assert float(ad.Array(2.5)) == 2.5
        np.testing.assert_array_equal(np.asarray(ad.Array([1.0, 2.0]), dtype=float),
                                      [1.0, 2.0])


def test_numbers_with_no_derivative_convert():
    """float() of a comparison's mask or a step function's result carries
    no derivative to lose: it converts (a guard of a recording), as autograd
    differentiates it (zero)."""
    x = np.array([0.7, 1.3])
    np.testing.assert_array_equal(
        ad.grad(lambda x: float(x[0] >= 0) * x[1])(x), [0.0, 1.0])
    np.testing.assert_array_equal(
        ad.grad(lambda x: float(np.floor(x[0])) * x[1] + x[0])(x), [1.0, 0.0])
    assert ad.grad(lambda s: float(s > 0) * s)(2.0) == 1.0
    F = ad.record(lambda x: float(x[0] >= 0) * x[1], x)
    assert F(np.array([0.2, 2.0])) == 2.0
    with pytest.raises(ad.BranchError):
        F(np.array([-0.2, 2.0]))


def test_numbers_taken_out_of_an_array_are_guards_in_a_recording():
    # item() of a traced Array: a replay at other values must not reuse the
    # recorded number
    for f in (lambda x: x.sum() * x.sum().item(),
              lambda x: x.sum() * x[0].item()):
        F = ad.record(f, np.array([1.0, 2.0]))
        assert F(np.array([1.0, 2.0])) == f(np.array([1.0, 2.0]))
        with pytest.raises(ad.BranchError):
            F(np.array([3.0, 4.0]))
