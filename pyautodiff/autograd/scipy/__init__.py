"""scipy for autograd programs (``import pyautodiff.autograd.scipy.linalg``
...): HIPS autograd's modules of the same names, whose functions take
traced values.  scipy's own functions do not dispatch to them: import
these instead."""
from . import integrate, linalg, signal  # noqa: F401
