"""pyautodiff: exact gradients of plain Python, recorded on a tape in C.

    import pyautodiff as ad
    x, y = ad.Value(2.0), ad.Value(3.0)
    f = x * y + y ** 2
    f.backward()
    f.data, x.grad, y.grad      # 15.0, 3.0, 8.0
"""
from ._version import __version__
from ._core import TapeError
from .tape import Tape, current_tape, detect_anomaly, no_grad
from .value import Value
from .array import Array, matmul
from .extern import custom_op
from .functions import abs, cos, exp, log, relu, sigmoid, sin, sqrt, tanh
from .viz import draw_dot

__all__ = [
    "__version__", "TapeError", "Tape", "current_tape", "detect_anomaly",
    "no_grad", "Value", "Array", "matmul", "custom_op", "abs", "cos", "exp", "log", "relu", "sigmoid", "sin",
    "sqrt", "tanh", "draw_dot",
]
