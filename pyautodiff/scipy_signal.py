"""scipy.signal.convolve on Arrays (scipy itself is optional: it is imported
only to compute on plain arrays).

Every convolution is brought to one canonical form: a of shape (p, d,
*ca) and b of shape (q, d, *cb), out[i, j, n] = sum over the shared axis
d and over k of a[i, d, k] b[j, d, n - k] ('full'), or the part of it
where the smaller operand lies inside the larger ('valid').  The axes
that are neither convolved nor summed are flattened into p and q, the
summed ones (autograd's dot_axes) into d, by recorded transposes and
reshapes; 'same' is a recorded slice of 'full'.  The canonical
convolution is one extern entry, bilinear in (a, b), whose cotangents
are canonical convolutions again: they record when given Arrays, so the
derivatives nest to every order."""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .array import Array, _asarray, _constant_result
from .extern import ExternRule, record_extern
from .extern_patterns import convolution
from .tape_state import NO_GRAD, recording_tape
from .value import Value

NAME = "scipy.signal.convolve"
_MODES = ("full", "valid", "same")


def _traced(x):
    return isinstance(x, (Array, Value))


def _flip(x):
    """x reversed along its convolved axes (all but the first two)."""
    return x[(slice(None), slice(None)) + (slice(None, None, -1),) * (x.ndim - 2)]


def _swap(x):
    """The first two axes swapped."""
    return x.swapaxes(0, 1)


def _plain_canonical(a, b, mode):
    """The canonical convolution of ndarrays (for 'valid', a at least as
    large as b along every convolved axis): windows of a (zero-padded for
    'full') of b's size, against b reversed."""
    nc = a.ndim - 2
    cb = b.shape[2:]
    if mode == "full":
        a = np.pad(a, [(0, 0), (0, 0)] + [(n - 1, n - 1) for n in cb])
    windows = sliding_window_view(a, cb, axis=tuple(range(2, 2 + nc)))
    conv = list(range(3, 3 + nc))
    kernel = list(range(3 + nc, 3 + 2 * nc))
    return np.einsum(windows, [0, 2] + conv + kernel, _flip(b), [1, 2] + kernel,
                     [0, 1] + conv, optimize=True)


def _canonical(a, b, mode):
    """The canonical convolution: plain on ndarrays, an extern entry when
    either operand is an Array."""
    if not (_traced(a) or _traced(b)):
        return _plain_canonical(np.asarray(a, dtype=np.float64),
                                np.asarray(b, dtype=np.float64), mode)
    ops = [_asarray(x) for x in (a, b)]
    value = _plain_canonical(ops[0]._d, ops[1]._d, mode)
    if recording_tape() is NO_GRAD:
        return _constant_result(value)
    return record_extern(_RULES[mode], ops, value)


def _vjp(mode):
    """The cotangents of the canonical convolution: correlations with the
    other operand, written as canonical convolutions of reversed,
    axis-swapped operands (see the module's docstring for the shapes)."""
    def vjp(g, out, a, b, needs):
        ga = gb = None
        if mode == "full":
            if needs[0]:
                ga = _canonical(g, _swap(_flip(b)), "valid")
            if needs[1]:
                gb = _canonical(_swap(g), _swap(_flip(a)), "valid")
        else:
            if needs[0]:
                ga = _canonical(g, _swap(_flip(b)), "full")
            if needs[1]:
                gb = _swap(_canonical(_swap(_flip(a)), _swap(g), "valid"))
        return ga, gb
    return vjp


def _nested_vjp(mode):
    rule = _vjp(mode)

    def vjp(g, out, a, b, needs):
        return rule(_asarray(g), out, a, b, needs)
    return vjp


def _nested_jvp(mode):
    def jvp(tangents, out, a, b):
        ta, tb = tangents
        parts = ([_canonical(ta, b, mode)] if ta is not None else []) + \
            ([_canonical(a, tb, mode)] if tb is not None else [])
        return sum(parts[1:], parts[0])
    return jvp


def _rule(mode):
    """The canonical convolution's rule (bilinear: of a constant filter it
    is linear, which sparse.py's Hessian patterns read off the entry)."""
    return ExternRule(lambda a, b: _plain_canonical(a, b, mode), _vjp(mode), NAME,
                      takes_needs=True, bilinear=True,
                      nested=(_nested_vjp(mode), _nested_jvp(mode)),
                      sparsity=convolution(mode))


_RULES = {mode: _rule(mode) for mode in ("full", "valid")}


# -- the axes: which are convolved, summed, or kept ---------------------------------

def _axis_list(axes, ndim, what):
    out = []
    for ax in axes:
        ax = int(ax)
        if not -ndim <= ax < ndim:
            raise ValueError(f"{NAME}: axis {ax} of {what} is out of bounds "
                             f"for an array of dimension {ndim}")
        out.append(ax % ndim)
    return out


def _layout(sa, sb, axes, dot_axes):
    """Each operand's (kept, summed, convolved) axes, checked."""
    if axes is None:
        if len(sa) != len(sb):
            raise ValueError(f"{NAME}: in1 and in2 should have the same dimensionality")
        axes = (range(len(sa)), range(len(sb)))
    conv = [_axis_list(axes[0], len(sa), "in1"), _axis_list(axes[1], len(sb), "in2")]
    dot = [_axis_list(dot_axes[0], len(sa), "in1"), _axis_list(dot_axes[1], len(sb), "in2")]
    if len(conv[0]) != len(conv[1]) or len(dot[0]) != len(dot[1]):
        raise ValueError(f"{NAME}: axes and dot_axes must pair as many axes of "
                         "in1 as of in2")
    layout = []
    for k, shape in enumerate((sa, sb)):
        used = conv[k] + dot[k]
        if len(set(used)) != len(used):
            raise ValueError(f"{NAME}: an axis is named twice in axes and dot_axes")
        kept = [ax for ax in range(len(shape)) if ax not in used]
        layout.append((kept, dot[k], conv[k]))
    for i, j in zip(dot[0], dot[1]):
        if sa[i] != sb[j]:
            raise ValueError(f"{NAME}: dot_axes of sizes {sa[i]} and {sb[j]} do not match")
    return layout


def _canonical_operand(x, kept, dot, conv):
    shape = x.shape
    x = x.transpose(tuple(kept + dot + conv))
    return x.reshape((int(np.prod([shape[k] for k in kept])),
                      int(np.prod([shape[k] for k in dot])))
                     + tuple(shape[k] for k in conv))


def _convolve(a, b, mode, axes, dot_axes):
    """The convolution of Arrays (or ndarrays) in autograd's layout: the
    output's axes are in1's kept axes, in2's, then the convolved ones."""
    (ka, da, ca), (kb, db, cb) = _layout(a.shape, b.shape, axes, dot_axes)
    na = tuple(a.shape[k] for k in ca)
    nb = tuple(b.shape[k] for k in cb)
    x = _canonical_operand(a, ka, da, ca)
    y = _canonical_operand(b, kb, db, cb)
    if mode == "valid":
        if all(m >= n for m, n in zip(na, nb)):
            out = _canonical(x, y, "valid")
        elif all(m <= n for m, n in zip(na, nb)):
            out = _swap(_canonical(y, x, "valid"))
        else:
            raise ValueError(f"{NAME}: for 'valid' mode, one must be at least "
                             "as large as the other in every dimension")
    else:
        out = _canonical(x, y, "full")
        if mode == "same":
            # the centre of 'full', of in1's size (scipy's)
            out = out[(slice(None), slice(None)) +
                      tuple(slice((n - 1) // 2, (n - 1) // 2 + m) for m, n in zip(na, nb))]
    shape = tuple(a.shape[k] for k in ka) + tuple(b.shape[k] for k in kb) + out.shape[2:]
    return out.reshape(shape)


def convolve(in1, in2, mode="full", method="auto", *, axes=None, dot_axes=((), ())):
    """scipy.signal.convolve(in1, in2, mode, method) of Arrays, plus HIPS
    autograd's axes (the pairs of axes convolved) and dot_axes (the pairs
    summed over).  On plain arrays with the default axes it is scipy's own.
    method ('auto', 'direct', 'fft') chooses only how scipy computes plain
    arrays: traced ones are convolved directly, exactly.  Without scipy,
    plain arrays are convolved here too."""
    if mode not in _MODES:
        raise ValueError(f"{NAME}: acceptable mode flags are 'valid', 'same', or 'full'")
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"{NAME}: acceptable method flags are 'auto', 'direct', or 'fft'")
    default = axes is None and not any(len(d) for d in dot_axes)
    if not (_traced(in1) or _traced(in2)):
        if default:
            try:
                import scipy.signal
            except ImportError:     # computed here, as for Arrays
                pass
            else:
                return scipy.signal.convolve(in1, in2, mode=mode, method=method)
        return _convolve(np.asarray(in1, dtype=np.float64),
                         np.asarray(in2, dtype=np.float64), mode, axes, dot_axes)
    a, b = _asarray(in1), _asarray(in2)
    if default and a.ndim == 0 and b.ndim == 0:
        return a * b                # scipy's: the product of two scalars
    if a.size == 0 or b.size == 0:
        raise ValueError(f"{NAME}: an empty operand has no convolution to differentiate")
    return _convolve(a, b, mode, axes, dot_axes)


def correlate(in1, in2, mode="full", method="auto"):
    """scipy.signal.correlate of Arrays: the convolution with in2 reversed.
    On plain arrays it is scipy's own (where scipy is installed)."""
    traced = _traced(in1) or _traced(in2)
    if not traced:
        try:
            import scipy.signal
        except ImportError:
            pass
        else:
            return scipy.signal.correlate(in1, in2, mode=mode, method=method)
    b = _asarray(in2) if traced else np.asarray(in2, dtype=np.float64)
    return convolve(in1, b[(slice(None, None, -1),) * b.ndim], mode, method)
