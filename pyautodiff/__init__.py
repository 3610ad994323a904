"""pyautodiff: exact gradients of plain Python, recorded on a tape in C.

    import pyautodiff as ad
    x, y = ad.Value(2.0), ad.Value(3.0)
    f = x * y + y ** 2
    f.backward()
    f.data, x.grad, y.grad      # 15.0, 3.0, 8.0
"""
from ._version import __version__
from ._core import TapeError
from .detach import DetachError
from .tape import Tape
from .tape_state import current_tape, detect_anomaly, no_grad
from .value import Value
from .array import (Array, clip, concatenate, expand_dims, maximum, minimum,
                    reshape, squeeze, stack, transpose, where)
# (these three give Array its reductions, @ and NumPy's protocols)
from .reductions import log_softmax, logsumexp, softmax
from .matmul import matmul
from .products import cross, dot, einsum, inner, kron, outer, tensordot, vdot
from . import numpy_interop
from . import threads     # threads inside a derivative (tape.thread_hooks)
from . import scipy_stats as _scipy_stats  # noqa: F401  (its names, for scipy_own's errors)
from .extern import custom_op
from . import functions
# ad.abs, ad.exp ... (one per row of the op table, ops.py, that names a
# function), and ad.sum, mean, max, min
from .functions import *  # noqa: F401,F403
from .numpy_elementwise import *  # noqa: F401,F403  (ad.log2, ad.arctan2 ...)
from . import numpy_elementwise as _numpy_elementwise
from .numpy_reductions import PUBLIC as _REDUCTIONS
globals().update(_REDUCTIONS)     # ad.sort, ad.median, ad.cumprod ...
from .viz import draw_dot
from .functional import grad, hessian, hvp, jacobian, jvp, value_and_grad, vjp
from .testing import check_grad
from .record import BranchError, Recorded, function, load, record
from .sparse import (hessian_sparsity, jacobian_sparsity, sparse_hessian,
                     sparse_jacobian)
from .minimize import minimize
from . import nn, optim


def __getattr__(name):
    # ad.dask (pyautodiff/dask.py) is imported on first use, so that
    # `import pyautodiff` does not import Dask, an optional dependency
    if name == "dask":
        import importlib
        return importlib.import_module("pyautodiff.dask")
    raise AttributeError(f"module 'pyautodiff' has no attribute {name!r}")


__all__ = [
    "__version__", "TapeError", "DetachError", "stop_gradient", "Tape", "current_tape", "detect_anomaly",
    "no_grad", "Value", "Array", "custom_op", "draw_dot",
    # the functional API
    "grad", "value_and_grad", "jacobian", "hessian", "hvp", "jvp", "vjp",
    "check_grad",
    # record once, replay many
    "record", "function", "load", "Recorded", "BranchError",
    # sparse derivatives (scipy.sparse results)
    "jacobian_sparsity", "hessian_sparsity", "sparse_jacobian", "sparse_hessian",
    # minimization, with scipy or in C
    "minimize",
    # elementwise math, for Values, Arrays and plain numbers/ndarrays
    *functions.ELEMENTWISE, *_numpy_elementwise.__all__,
    # array functions with NumPy's signatures
    "sum", "mean", "max", "min", "matmul", "reshape", "transpose",
    "expand_dims", "squeeze", "concatenate", "stack", "maximum", "minimum",
    "clip", "where", "logsumexp", "softmax", "log_softmax",
    "einsum", "tensordot", "dot", "vdot", "inner", "outer", "kron", "cross",
    *_REDUCTIONS,
]
