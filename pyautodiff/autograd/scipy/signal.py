"""scipy.signal for autograd programs: convolve with HIPS autograd's
signature, convolve(A, B, axes=None, dot_axes=((), ()), mode='full'),
which also takes scipy's (a mode as the third argument, method=)."""
from ...scipy_signal import convolve as _convolve

__all__ = ["convolve"]


def convolve(A, B, axes=None, dot_axes=((), ()), mode="full", method="auto"):
    if isinstance(axes, str):       # scipy's convolve(in1, in2, mode)
        axes, mode = None, axes
    return _convolve(A, B, mode, method, axes=axes, dot_axes=dot_axes)
