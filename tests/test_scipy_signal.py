"""scipy.signal.convolve on traced Arrays (pyautodiff.scipy_signal and the
drop-in pyautodiff.autograd.scipy.signal): values against scipy;
gradients against central differences and HIPS autograd; Hessians
against autograd's and central differences of our gradient; third order
through nesting; autograd's axes and dot_axes; the errors; and what
scipy's own function does with traced values."""
import zlib

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff.scipy_signal import convolve, correlate

ss = pytest.importorskip("scipy.signal")

# (in1 shape, in2 shape): in1 larger, smaller, mixed (no 'valid'), 3-D
SHAPES = [((5,), (3,)), ((2,), (4,)), ((4, 3), (2, 2)), ((3, 5), (4, 2)),
          ((2, 3), (4, 5)), ((2, 3, 2), (2, 2, 3))]
MODES = ["full", "valid", "same"]


def _seeded(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _valid_ok(sa, sb):
    return all(m >= n for m, n in zip(sa, sb)) or all(m <= n for m, n in zip(sa, sb))


CASES = [(sa, sb, mode) for sa, sb in SHAPES for mode in MODES
         if mode != "valid" or _valid_ok(sa, sb)]


def _problem(sa, sb, mode):
    """A point p (both operands packed), the loss's weights, and
    f(p, conv, xp): a smooth scalar loss of the convolution."""
    rng = _seeded(sa, sb, mode)
    na = int(np.prod(sa))
    p = rng.normal(size=na + int(np.prod(sb)))
    w = rng.normal(size=ss.convolve(np.ones(sa), np.ones(sb), mode).shape)

    def f(p, conv=convolve, xp=np):
        out = conv(p[:na].reshape(sa), p[na:].reshape(sb), mode=mode)
        return xp.sum(xp.sin(out) * w)
    return p, f


def _central(f, p, h=1e-6):
    return np.array([(f(p + h * e) - f(p - h * e)) / (2 * h) for e in np.eye(p.size)])


@pytest.mark.parametrize("sa,sb,mode", CASES)
@pytest.mark.parametrize("method", ["auto", "direct", "fft"])
def test_values_match_scipy(sa, sb, mode, method):
    rng = _seeded(sa, sb, mode, method)
    a, b = rng.normal(size=sa), rng.normal(size=sb)
    with ad.Tape():
        out = convolve(ad.Array(a), b, mode, method)
        assert isinstance(out, ad.Array)
        np.testing.assert_allclose(out.data, ss.convolve(a, b, mode), rtol=1e-10, atol=1e-12)
        flipped = correlate(a, ad.Array(b), mode)
        np.testing.assert_allclose(flipped.data, ss.correlate(a, b, mode),
                                   rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sa,sb,mode", CASES)
def test_gradient_against_central_differences_and_autograd(sa, sb, mode):
    p, f = _problem(sa, sb, mode)
    grad = ad.grad(f)(p)
    np.testing.assert_allclose(grad, _central(lambda q: f(q, ss.convolve), p),
                               rtol=1e-6, atol=1e-8)
    # autograd's convolve has 'full' and 'valid' only, of operands one of
    # which is at least as large as the other along every axis
    if mode != "same" and _valid_ok(sa, sb):
        autograd = pytest.importorskip("autograd")
        anp = pytest.importorskip("autograd.numpy")
        asig = pytest.importorskip("autograd.scipy.signal")
        theirs = autograd.grad(lambda q: f(q, asig.convolve, anp))(p)
        np.testing.assert_allclose(grad, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sa,sb,mode", CASES[:9])
def test_hessian(sa, sb, mode):
    p, f = _problem(sa, sb, mode)
    hess = ad.hessian(f)(p)
    g = ad.grad(f)
    np.testing.assert_allclose(hess, _central(g, p, 1e-5), rtol=1e-6, atol=1e-7)
    if mode != "same" and _valid_ok(sa, sb):
        autograd = pytest.importorskip("autograd")
        anp = pytest.importorskip("autograd.numpy")
        asig = pytest.importorskip("autograd.scipy.signal")
        theirs = autograd.hessian(lambda q: f(q, asig.convolve, anp))(p)
        np.testing.assert_allclose(hess, theirs, rtol=1e-9, atol=1e-11)


def test_second_order_runs_in_one_c_sweep():
    """The entry is bilinear: a recording's Hessian is the C sweep's."""
    p, f = _problem((4, 3), (2, 2), "full")
    rec = ad.record(f, p)
    np.testing.assert_allclose(rec.hessian(p), ad.hessian(f)(p), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sa,sb,mode", [((5,), (3,), "valid"), ((4, 3), (2, 2), "same"),
                                        ((2, 3), (4, 5), "full")])
def test_third_order_through_nesting(sa, sb, mode):
    p, f = _problem(sa, sb, mode)
    v = np.sin(np.arange(1, p.size + 1))

    def quadratic(q):
        return np.sum(ad.hvp(f)(q, v) * v)
    third = ad.grad(quadratic)(p)
    np.testing.assert_allclose(third, _central(quadratic, p, 1e-5), rtol=1e-5, atol=1e-6)


def test_tangent():
    p, f = _problem((3, 5), (4, 2), "same")
    t = np.cos(np.arange(p.size))
    na = 15

    def conv(q):
        return convolve(q[:na].reshape(3, 5), q[na:].reshape(4, 2), "same")
    _, tangent = ad.jvp(conv)(p, t)
    h = 1e-6
    np.testing.assert_allclose(tangent, (conv(p + h * t) - conv(p - h * t)) / (2 * h),
                               rtol=1e-6, atol=1e-8)


# -- autograd's axes and dot_axes ------------------------------------------------------

AXES = [((3, 5), (3, 4), dict(axes=([1], [0]))),
        ((3, 5), (3, 4), dict(axes=([], []), dot_axes=([0], [0]))),
        ((3, 5), (3, 4, 2), dict(axes=([1], [2]), dot_axes=([0], [0]))),
        ((2, 5, 4, 3), (2, 4, 2, 3, 2), dict(axes=([1, 2], [2, 4]), dot_axes=([0, 3], [0, 3]))),
        ((4, 3), (3, 2), dict(axes=([0], [1]))),
        ((4, 3), (3, 2), dict(axes=([1, 0], [1, 0]))),
        ((3, 3, 2), (3, 2, 3), dict(axes=([1], [1]), dot_axes=([0], [2])))]


@pytest.mark.parametrize("sa,sb,kwargs", AXES)
@pytest.mark.parametrize("mode", ["full", "valid"])
def test_axes_and_dot_axes_as_autograds(sa, sb, kwargs, mode):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    asig = pytest.importorskip("autograd.scipy.signal")
    from pyautodiff.autograd.scipy import signal as dropin
    rng = _seeded(sa, sb, mode, repr(kwargs))
    a, b = rng.normal(size=sa), rng.normal(size=sb)
    expected = asig.convolve(a, b, mode=mode, **kwargs)
    with ad.Tape():
        out = dropin.convolve(ad.Array(a), ad.Array(b), mode=mode, **kwargs)
        np.testing.assert_allclose(out.data, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dropin.convolve(a, b, mode=mode, **kwargs), expected,
                               rtol=1e-10, atol=1e-12)
    w = rng.normal(size=expected.shape)

    def loss(conv, xp):
        return lambda x, y: xp.sum(xp.tanh(conv(x, y, mode=mode, **kwargs)) * w)
    ours = ad.grad(loss(dropin.convolve, np), (0, 1))(a, b)
    theirs = autograd.grad(loss(asig.convolve, anp), (0, 1))(a, b)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-10, atol=1e-12)


def test_the_axes_of_the_output_follow_autograds_order():
    """in1's kept axes, in2's, then the convolved ones: a slice of it is
    scipy's 1-D convolution."""
    rng = _seeded("order")
    a, b = rng.normal(size=(3, 5)), rng.normal(size=(3, 4))
    with ad.Tape():
        out = convolve(ad.Array(a), b, "valid", axes=([1], [0]))
    assert out.shape == (3, 4, 3)
    np.testing.assert_allclose(out.data[1, 2], ss.convolve(a[1], b[:, 2], "valid"))


def test_dropin_takes_scipys_positional_mode():
    from pyautodiff.autograd.scipy import signal as dropin
    g = ad.grad(lambda x: np.sum(dropin.convolve(x, np.ones(2), "valid")))(np.ones(4))
    np.testing.assert_allclose(g, [1.0, 2.0, 2.0, 1.0])


def test_plain_arrays_are_scipys():
    a, b = np.arange(4), np.arange(3)           # integers stay integers
    out = convolve(a, b)
    assert out.dtype == ss.convolve(a, b).dtype
    np.testing.assert_array_equal(out, ss.convolve(a, b))


def test_scalars_multiply():
    g = ad.grad(lambda x: convolve(x, 3.0))(2.0)
    assert g == 3.0


# -- errors -----------------------------------------------------------------------------

@pytest.mark.parametrize("call,match", [
    (lambda x: convolve(x, np.ones(2), "middle"), "mode"),
    (lambda x: convolve(x, np.ones(2), method="slow"), "method"),
    (lambda x: convolve(x, np.ones((2, 2))), "same dimensionality"),
    (lambda x: convolve(x.reshape(2, 2), np.ones((3, 1)), "valid"), "at least as large"),
    (lambda x: convolve(x, np.ones(2), axes=([0], [0]), dot_axes=([0], [0])), "twice"),
    (lambda x: convolve(x, np.ones(2), axes=([0, 0], [0])), "pair"),
    (lambda x: convolve(x, np.ones(0)), "empty"),
])
def test_errors_name_the_function(call, match):
    with ad.Tape():
        with pytest.raises(ValueError, match=match) as info:
            call(ad.Array(np.ones(4)))
    assert "scipy.signal.convolve" in str(info.value)


def test_scipys_own_function_does_not_return_a_silent_wrong_number():
    """scipy's convolve does not dispatch to Arrays: directly on 2-D
    arrays it refuses them; by FFT it takes plain numbers out of them,
    which raises DetachError."""
    def loss(method):
        return lambda x: np.sum(ss.convolve(x, np.ones((2, 2)), method=method))
    with pytest.raises((ValueError, ad.DetachError)):
        ad.grad(loss("direct"))(np.ones((3, 3)))
    with pytest.raises(ad.DetachError):
        ad.grad(loss("fft"))(np.ones((3, 3)))


def test_pyautodiff_imports_and_convolves_without_scipy():
    """scipy is optional: with it unimportable, the modules import, and
    convolve computes on traced and plain arrays alike."""
    import os
    import subprocess
    import sys
    code = """
import sys
sys.modules["scipy"] = None          # import scipy raises ImportError
import numpy as np
import pyautodiff as ad
from pyautodiff import scipy_integrate, scipy_linalg, scipy_signal
import pyautodiff.autograd.scipy
g = ad.grad(lambda x: np.sum(scipy_signal.convolve(x, np.ones(2)) ** 2))(np.ones(3))
print(g.tolist(), scipy_signal.convolve(np.ones(2), np.ones(2)).tolist())
try:
    scipy_linalg.sqrtm(np.eye(2))
except ImportError:
    print("ImportError")
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.split("\n")
    assert out[0] == "[6.0, 8.0, 6.0] [1.0, 2.0, 1.0]"
    assert out[1] == "ImportError"
