"""np.fft of traced values (pyautodiff/fourier.py): values against NumPy
for every function, n/s, axis/axes and norm; gradients against central
differences along every real and imaginary part (ad.check_grad), and
against HIPS autograd wherever autograd's rules are right (its rfft
rules are wrong under norm="forward" and for most n, and it raises for
odd lengths, repeated axes and hfft; ours are checked there against
central differences); forward mode (autograd has none); second and third
order; recordings; and the errors."""
import zlib

import numpy as np
import pytest

import pyautodiff as ad
import pyautodiff.autograd as pag
import pyautodiff.autograd.numpy as pnp

autograd = pytest.importorskip("autograd")
import autograd.numpy as anp                      # noqa: E402

RNG = np.random.default_rng(7)
REAL = RNG.normal(size=(4, 6))
COMPLEX = RNG.normal(size=(4, 6)) + 1j * RNG.normal(size=(4, 6))
REAL3 = RNG.normal(size=(4, 6, 2))
COMPLEX3 = RNG.normal(size=(4, 6, 2)) + 1j * RNG.normal(size=(4, 6, 2))
NORMS = [None, "backward", "ortho", "forward"]


def close(ours, theirs, rtol=1e-10, atol=1e-12):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert np.iscomplexobj(ours) == np.iscomplexobj(theirs)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


def loss(np_, name, kwargs, weights):
    """A real function of the transform: its real part, its imaginary
    part and its magnitude, each weighted."""
    def f(x):
        out = getattr(np_.fft, name)(x, **kwargs)
        return np_.sum(np_.real(out * weights) ** 2 + np_.abs(out) * 0.5)
    return f


def _weights(shape, complex_out, seed):
    # a test's own numbers, whatever ran before it in its process
    rng = np.random.default_rng(zlib.crc32(repr(seed).encode()))
    w = rng.normal(size=shape)
    return w + 1j * rng.normal(size=shape) if complex_out else w


def _check(name, x, kwargs, autograd_right):
    out = getattr(np.fft, name)(x, **kwargs)
    value, _ = ad.vjp(lambda x: getattr(np.fft, name)(x, **kwargs))(x)
    close(value, out, rtol=1e-12, atol=1e-12)
    w = _weights(out.shape, np.iscomplexobj(out), (name, kwargs))
    f = loss(np, name, kwargs, w)
    ours = ad.grad(f)(x)
    if autograd_right:
        close(ours, autograd.grad(loss(anp, name, kwargs, w))(x))
        close(pag.grad(loss(pnp, name, kwargs, w))(x), ours)
    # a central difference's rounding grows with the loss (transforms
    # along an axis taken twice make it some 10^5): allow for it
    ad.check_grad(f, x, atol=1e-7 + 1e-10 * abs(f(x)))


# -- the 1-D transforms: every n, axis and norm ------------------------------------

ONE_D = [(name, n, axis, norm) for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
         for n in (None, 4, 5, 8, 11) for axis in (-1, 0) for norm in NORMS]


@pytest.mark.parametrize("name, n, axis, norm", ONE_D)
def test_one_dimensional_transforms(name, n, axis, norm):
    real_input = name in ("rfft", "ihfft")
    x = REAL if real_input else COMPLEX
    length = x.shape[axis] if n is None else n
    if name in ("irfft", "hfft") and n is None:
        length = 2 * (x.shape[axis] - 1)
    # autograd's rules: c2c always right; real ones only without n (rfft)
    # or with an even n (irfft), and under norm None or "ortho" (it scales
    # "backward", the default spelled out, as "forward"); none for hfft
    right = name in ("fft", "ifft") or (
        name in ("rfft", "irfft") and norm in (None, "ortho") and length % 2 == 0
        and (name == "irfft" or n is None))
    _check(name, x, dict(n=n, axis=axis, norm=norm), right)


def test_transforms_of_real_input_to_complex_functions():
    for name in ("fft", "ifft", "irfft", "hfft"):
        _check(name, REAL, {}, name in ("fft", "ifft", "irfft"))


# -- the N-d transforms: s, axes (repeated too) and norm -----------------------------

ND = [(name, s, axes, norm)
      for name in ("fftn", "ifftn", "fft2", "ifft2", "rfftn", "irfftn", "rfft2", "irfft2")
      for s, axes in [(None, None), (None, (0, 2)), ((4, 4), (1, 0)), ((3, 8), (0, 1)),
                      ((5, 3), (2, 1)), (None, (1, 1)), ((4, 7), (1, 1))]
      for norm in NORMS]


@pytest.mark.parametrize("name, s, axes, norm", ND)
def test_n_dimensional_transforms(name, s, axes, norm):
    real_input = name.startswith("rfft")
    x = REAL3 if real_input else COMPLEX3
    kwargs = dict(s=s, norm=norm) if axes is None else dict(s=s, axes=axes, norm=norm)
    if axes is None and name.endswith("2"):
        axes = (-2, -1)
    axes = axes or tuple(range(x.ndim))
    repeated = len(set(axes)) < len(axes)
    last = x.shape[axes[-1]] if s is None else s[-1]
    if name.startswith("irfft") and s is None:
        last = 2 * (x.shape[axes[-1]] - 1)
    right = not repeated and (not name.startswith(("rfft", "irfft")) or
                              (norm in (None, "ortho") and last % 2 == 0))
    _check(name, x, kwargs, right)


# -- fftshift and ifftshift ------------------------------------------------------------

@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("axes", [None, 0, (0, 1), -1])
@pytest.mark.parametrize("x", [REAL, COMPLEX], ids=["real", "complex"])
def test_shifts(name, axes, x):
    _check(name, x, dict(axes=axes), True)


# -- forward mode, higher orders ---------------------------------------------------------

@pytest.mark.parametrize("name, kwargs", [
    ("fft", dict(n=5)), ("ifft2", dict(norm="ortho")), ("rfft", dict(n=7, axis=0)),
    ("irfftn", dict(s=(3, 5), axes=(0, 1), norm="forward")), ("hfft", {}), ("fftshift", {}),
])
def test_jacobian_vector_products(name, kwargs):
    x = REAL if name.startswith("rfft") else COMPLEX
    f = lambda x: getattr(np.fft, name)(x, **kwargs)     # noqa: E731
    ad.check_grad(f, x, modes=("fwd",), atol=1e-7)
    # linear: the jvp along v is the transform of v
    v = REAL.copy() if name.startswith("rfft") else COMPLEX[::-1].copy()
    close(ad.jvp(f)(x, v)[1], f(v), rtol=1e-12, atol=1e-12)


def _real_loss(np_, name, kwargs):
    """A real function of a real vector through a transform, not
    quadratic (so its Hessian depends on the point)."""
    def f(x):
        out = getattr(np_.fft, name)(x * np_.sin(x), **kwargs)
        return np_.sum(np_.abs(out) ** 3 * 0.1 + np_.real(out) * np_.cos(np_.imag(out)))
    return f


X = RNG.normal(size=8)


@pytest.mark.parametrize("name, kwargs, right", [
    ("fft", {}, True), ("ifft", dict(n=6, norm="ortho"), True), ("rfft", {}, True),
    ("fft", dict(norm="forward", n=11), True), ("rfft", dict(n=7), False),
    ("ihfft", {}, False), ("rfft", dict(norm="forward"), False),
])
def test_hessians(name, kwargs, right):
    ours = ad.hessian(_real_loss(np, name, kwargs))(X)
    if right:
        close(ours, autograd.hessian(_real_loss(anp, name, kwargs))(X))
    ad.check_grad(_real_loss(np, name, kwargs), X, order=2, atol=1e-6)
    # by nesting (jacobian of grad) and as a recording's Hessian, the same
    close(ad.jacobian(ad.grad(_real_loss(np, name, kwargs)))(X), ours)
    close(ad.record(_real_loss(np, name, kwargs), X).hessian(X), ours)


def test_real_spectrum_of_a_real_signal_through_irfft():
    # irfft(rfft(x)) is x: its Hessian is that of the loss alone
    f = lambda np_: lambda x: np_.sum(np_.fft.irfft(np_.fft.rfft(x) * (1 + 0.5j), n=8) ** 3)
    close(ad.hessian(f(np))(X), autograd.hessian(f(anp))(X))


def test_grad_of_a_real_function_of_grad_of_a_complex_argument():
    def f(np_):
        return lambda z: np_.sum(np_.abs(np_.fft.fft(z * np_.conj(z) + z, norm="ortho")) ** 2
                                 * np_.arange(6.0))
    z = COMPLEX[0]
    for part in ("real", "imag"):
        def outer(np_, grad):
            return lambda u: getattr(np_, part)(np_.sum(grad(f(np_))(u) * (1 - 2j)))
        close(ad.grad(outer(np, ad.grad))(z), autograd.grad(outer(anp, autograd.grad))(z))


def test_third_order():
    f = lambda np_: lambda t: np_.sum(np_.abs(np_.fft.rfft(np_.sin(t * np_.arange(8.0)))) ** 2)
    close(ad.grad(ad.grad(ad.grad(f(np))))(0.3),
          autograd.grad(autograd.grad(autograd.grad(f(anp))))(0.3))


# -- recordings --------------------------------------------------------------------------

def test_recordings_replay_ffts():
    f = _real_loss(np, "rfft", dict(n=10))
    F = ad.record(f, X)
    for x in (X, RNG.normal(size=8), RNG.normal(size=8)):
        close(F(x), f(x), rtol=1e-13)
        close(F.grad(x), ad.grad(f)(x), rtol=1e-13)
    G = ad.record(ad.grad(f), X)
    x = RNG.normal(size=8)
    close(G(x), ad.grad(f)(x), rtol=1e-12)
    close(G.jacobian(x), ad.hessian(f)(x))
    # complex arguments and results replay too
    H = ad.record(lambda z: np.fft.ifft2(z * 2j), COMPLEX)
    close(H(COMPLEX[::-1]), np.fft.ifft2(COMPLEX[::-1] * 2j), rtol=1e-13)
    close(H.map(np.stack([COMPLEX, 2 * COMPLEX])),
          np.stack([np.fft.ifft2(COMPLEX * 2j), np.fft.ifft2(4j * COMPLEX)]))


def test_saving_a_recording_with_an_fft_raises():
    F = ad.record(lambda x: np.sum(np.abs(np.fft.fft(x))), X)
    with pytest.raises(ValueError, match="'fft'"):
        F.save(__import__("io").BytesIO())


def test_s_without_axes_warns_as_numpy_does():
    with pytest.warns(DeprecationWarning, match="`axes` should not be `None`"):
        ad.grad(lambda z: np.sum(np.abs(np.fft.fftn(z, s=(3, 3)))))(COMPLEX)


# -- errors -------------------------------------------------------------------------------

@pytest.mark.parametrize("call, exc, match", [
    (lambda z: np.fft.rfft(z), TypeError, "rfft takes real input"),
    (lambda z: np.fft.rfftn(z), TypeError, "rfftn takes real input"),
    (lambda z: np.fft.fft(z, norm="unitary"), ValueError, "Invalid norm"),
    (lambda z: np.fft.fft(z, n=0), ValueError, "Invalid number of FFT data points"),
    (lambda z: np.fft.fftn(z, s=(2, 3, 4), axes=(0, 1)), ValueError, "different lengths"),
    (lambda z: np.fft.fft(z, axis=2), np.exceptions.AxisError, "axis 2"),
    (lambda z: np.fft.fft(z, out=np.empty(6, complex)), TypeError, "out="),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        ad.grad(lambda z: np.sum(np.abs(call(z))))(COMPLEX)
