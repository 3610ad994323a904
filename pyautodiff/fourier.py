"""NumPy's FFTs (``np.fft``) of traced values, as linear maps of a complex
array's pair of real parts.

One op computes them all: the complex transform of a pair (real part,
imaginary part) along some axes, NumPy's fftn or ifftn with its norm,
recorded as one extern entry whose value stacks the result's two parts.
It is linear, and its adjoint is the transform in the other direction
with the norm swapped (NumPy's own swap: the adjoint of fft under
"backward" is ifft under "forward"), so its vjp and its jvp are this op
again, on Arrays when derivatives nest: every order works, and a
recording replays it (its rules in Python, point by point).

Everything else is layout on the parts: n and s crop or zero-pad an axis
before its transform; a real FFT keeps the first n//2 + 1 elements of the
complex one; an inverse real FFT rebuilds the Hermitian spectrum of
length n from its input (element k for k > n//2 is the conjugate of
element n - k) and keeps the real part of the inverse transform, which is
what NumPy's c2r transform computes.  The N-d functions apply their 1-D
steps in NumPy's order, so repeated axes and s give NumPy's values too
(autograd raises there, and for odd lengths of real FFTs).
"""
import warnings

import numpy as np

from .array import Array, _detached
from .complex_array import ComplexArray, is_complex, pair_of
from .extern import ExternRule, record_extern
from .numpy_shapes import layout
from .tape_state import NO_GRAD, recording_tape

try:
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:          # NumPy < 2
    from numpy.core.numeric import normalize_axis_tuple

# the norm of the adjoint transform (NumPy's _swap_direction)
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _SWAPPED:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", '
                         '"ortho" or "forward".')
    return norm


# -- the one op: a complex transform along distinct axes ---------------------------

def transform(pair, axes, inverse, norm):
    """np.fft.fftn (ifftn if inverse) of the pair along axes (distinct,
    non-negative), with norm: the result's pair, of the same shape."""
    entry = _entry(pair, tuple(axes), inverse, norm)
    return entry[0], entry[1]


def _entry(pair, axes, inverse, norm):
    """The stacked parts of the transform: an extern entry for traced
    parts, an ndarray of plain ones."""
    operands = [p for p in pair if p is not None]
    rule = _rule(axes, inverse, norm)
    value = rule.forward(*[p._d if isinstance(p, Array) else np.asarray(p, np.float64)
                           for p in operands])
    if not any(isinstance(p, Array) for p in operands):
        return value
    if recording_tape() is NO_GRAD:
        return _detached(value)
    return record_extern(rule, operands, value)


def _rule(axes, inverse, norm):
    numpy_fn, adjoint_fn = (np.fft.ifftn, np.fft.fftn) if inverse else \
        (np.fft.fftn, np.fft.ifftn)
    swapped = _SWAPPED[norm]

    def forward(x, y=None):
        z = numpy_fn(x if y is None else x + 1j * y, axes=axes, norm=norm)
        return np.stack([z.real, z.imag])

    def vjp(g, out, *xs, needs):
        z = adjoint_fn(g[0] + 1j * g[1], axes=axes, norm=swapped)
        return [part if need else None for part, need in zip((z.real, z.imag), needs)]

    def jvp(tangents, out, *xs):
        return forward(*[np.zeros(np.shape(x)) if t is None else t
                         for t, x in zip(tangents, xs)])

    def nested_vjp(g, out, *xs, needs):
        if not isinstance(g, Array):            # a constant cotangent
            g = np.broadcast_to(np.asarray(g, dtype=np.float64), out._d.shape)
        parts = transform((g[0], g[1]), axes, not inverse, swapped)
        return [part if need else None for part, need in zip(parts, needs)]

    def nested_jvp(tangents, out, *xs):
        parts = [np.zeros(np.shape(x._d)) if t is None else t
                 for t, x in zip(tangents, xs)]
        return _entry(tuple(parts) + (None,) * (2 - len(parts)), axes, inverse, norm)

    return ExternRule(forward, vjp, "ifft" if inverse else "fft", takes_needs=True,
                      jvp=jvp, linear=True, nested=(nested_vjp, nested_jvp))


# -- lengths and axes, as NumPy reads them ----------------------------------------------

def _resized(x, n, axis):
    """x cropped or zero-padded to length n along axis (None stays None)."""
    if x is None:
        return None
    m = np.shape(x)[axis]
    if n < m:
        return x[(slice(None),) * axis + (slice(0, n),)]
    if n > m:
        widths = [(0, 0)] * np.ndim(x)
        widths[axis] = (0, n - m)
        return np.pad(x, widths)
    return x


def _length(n, default):
    if n is None:
        n = default
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return int(n)


def _axis(axis, ndim):
    return normalize_axis_tuple(axis, ndim)[0]


# NumPy 2's warning, given for the same calls
_S_WITHOUT_AXES = (
    "`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy "
    "2.0). In a future version of NumPy, this will raise an error and `s[i]` "
    "will correspond to the size along the transformed axis specified by "
    "`axes[i]`. To retain current behaviour, pass a sequence [0, ..., k-1] "
    "to `axes` for an array of dimension k.")


def _cooked(shape, s, axes, invreal=False):
    """(s, axes) of an N-d transform as NumPy's _cook_nd_args makes them
    (axes normalized, non-negative)."""
    shapeless = s is None
    if shapeless:
        s = list(shape) if axes is None else [shape[a] for a in axes]
    s = list(s)
    if axes is None:
        if not shapeless:
            warnings.warn(_S_WITHOUT_AXES, DeprecationWarning, stacklevel=4)
        axes = list(range(-len(s), 0))
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    axes = list(normalize_axis_tuple(axes, len(shape), allow_duplicate=True))
    if invreal and shapeless:
        s[-1] = (shape[axes[-1]] - 1) * 2
    s = [shape[a] if n == -1 or n is None else n for n, a in zip(s, axes)]
    return s, axes


def _along(pair, sizes, axes, inverse, norm, backwards=True):
    """Complex transforms along each axis with its size, in NumPy's order
    (the last axis first where backwards); one op for distinct axes."""
    if len(set(axes)) == len(axes):
        for n, axis in zip(sizes, axes):
            pair = tuple(_resized(p, _length(n, 0), axis) for p in pair)
        return transform(pair, axes, inverse, norm) if axes else pair
    steps = list(zip(sizes, axes))
    for n, axis in steps[::-1] if backwards else steps:
        pair = tuple(_resized(p, _length(n, 0), axis) for p in pair)
        pair = transform(pair, (axis,), inverse, norm)
    return pair


# -- the 1-D real transforms ---------------------------------------------------------------

def _real_pair(a, name):
    re, im = _pair(a)
    if im is not None:
        raise TypeError(f"numpy.fft.{name} takes real input; this one is complex "
                        "(take np.real of it, or use numpy.fft.fft)")
    return re


def _rfft(x, n, axis, norm):
    n = _length(n, np.shape(x)[axis])
    re, im = transform((_resized(x, n, axis), None), (axis,), False, norm)
    return _resized(re, n // 2 + 1, axis), _resized(im, n // 2 + 1, axis)


def _irfft(pair, n, axis, norm):
    """The real part of the inverse transform of the Hermitian spectrum of
    length n whose first n//2 + 1 elements are the (cropped or padded)
    input."""
    n = _length(n, 2 * (np.shape(pair[0])[axis] - 1))
    half = n // 2 + 1
    re, im = (_resized(p, half, axis) for p in pair)
    k = np.arange(n)
    mirrored = k >= half
    source = np.where(mirrored, n - k, k)
    sign = np.where(mirrored, -1.0, 1.0).reshape((n,) + (1,) * (np.ndim(re) - 1 - axis))
    full = (np.take(re, source, axis=axis),
            None if im is None else np.take(im, source, axis=axis) * sign)
    return transform(full, (axis,), True, norm)[0]


# -- NumPy's functions ------------------------------------------------------------------------

def _pair(a):
    pair = pair_of(a)
    if pair is None:
        raise TypeError(f"numpy.fft of a {type(a).__name__}")
    return pair


def _no_out(name, out):
    if out is not None:
        raise TypeError(f"numpy.fft.{name}(out=...) writes into an ndarray: "
                        "in-place NumPy operations cannot record a derivative")


def _c2c(name, inverse):
    def fn(a, n=None, axis=-1, norm=None, out=None):
        _no_out(name, out)
        pair = _pair(a)
        axis = _axis(axis, np.ndim(pair[0]))
        n = _length(n, np.shape(pair[0])[axis])
        return ComplexArray(*_along(pair, [n], [axis], inverse, _norm(norm)))
    fn.__name__ = fn.__qualname__ = name
    return fn


def _c2c_nd(name, inverse, default_axes=None):
    def fn(a, s=None, axes=default_axes, norm=None, out=None):
        _no_out(name, out)
        pair = _pair(a)
        s, axes = _cooked(np.shape(pair[0]), s, axes)
        return ComplexArray(*_along(pair, s, axes, inverse, _norm(norm)))
    fn.__name__ = fn.__qualname__ = name
    return fn


def rfft(a, n=None, axis=-1, norm=None, out=None):
    _no_out("rfft", out)
    x = _real_pair(a, "rfft")
    return ComplexArray(*_rfft(x, n, _axis(axis, np.ndim(x)), _norm(norm)))


def irfft(a, n=None, axis=-1, norm=None, out=None):
    _no_out("irfft", out)
    pair = _pair(a)
    return _irfft(pair, n, _axis(axis, np.ndim(pair[0])), _norm(norm))


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """The FFT of a Hermitian signal: NumPy's irfft of its conjugate, the
    norm swapped."""
    _no_out("hfft", out)
    re, im = _pair(a)
    pair = (re, None if im is None else -im)
    return _irfft(pair, n, _axis(axis, np.ndim(re)), _SWAPPED[_norm(norm)])


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    _no_out("ihfft", out)
    x = _real_pair(a, "ihfft")
    re, im = _rfft(x, n, _axis(axis, np.ndim(x)), _SWAPPED[_norm(norm)])
    return ComplexArray(re, -im)


def _rfft_nd(name, default_axes=None):
    def fn(a, s=None, axes=default_axes, norm=None, out=None):
        _no_out(name, out)
        x = _real_pair(a, name)
        s, axes = _cooked(np.shape(x), s, axes)
        norm = _norm(norm)
        pair = _rfft(x, s[-1], axes[-1], norm)
        return ComplexArray(*_along(pair, s[:-1], axes[:-1], False, norm))
    fn.__name__ = fn.__qualname__ = name
    return fn


def _irfft_nd(name, default_axes=None):
    def fn(a, s=None, axes=default_axes, norm=None, out=None):
        _no_out(name, out)
        pair = _pair(a)
        s, axes = _cooked(np.shape(pair[0]), s, axes, invreal=True)
        norm = _norm(norm)
        pair = _along(pair, s[:-1], axes[:-1], True, norm, backwards=False)
        return _irfft(pair, s[-1], axes[-1], norm)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _shift(numpy_fn):
    """np.fft.fftshift and ifftshift: a layout of each part."""
    def shift(x, axes=None):
        re, im = _pair(x)
        moved = [layout(p, lambda d: numpy_fn(d, axes)) for p in (re, im) if p is not None]
        return ComplexArray(*moved) if is_complex(x) else moved[0]
    shift.__name__ = shift.__qualname__ = numpy_fn.__name__
    return shift


# np.fft's function: its version for traced arguments, real or complex
NUMPY_FUNCTIONS = {
    np.fft.fft: _c2c("fft", False), np.fft.ifft: _c2c("ifft", True),
    np.fft.fftn: _c2c_nd("fftn", False), np.fft.ifftn: _c2c_nd("ifftn", True),
    np.fft.fft2: _c2c_nd("fft2", False, (-2, -1)),
    np.fft.ifft2: _c2c_nd("ifft2", True, (-2, -1)),
    np.fft.rfft: rfft, np.fft.irfft: irfft, np.fft.hfft: hfft, np.fft.ihfft: ihfft,
    np.fft.rfftn: _rfft_nd("rfftn"), np.fft.irfftn: _irfft_nd("irfftn"),
    np.fft.rfft2: _rfft_nd("rfft2", (-2, -1)),
    np.fft.irfft2: _irfft_nd("irfft2", (-2, -1)),
    np.fft.fftshift: _shift(np.fft.fftshift), np.fft.ifftshift: _shift(np.fft.ifftshift),
}
