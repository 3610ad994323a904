"""numpy.linalg for autograd programs (``import pyautodiff.autograd.numpy.linalg``):
NumPy's own functions, which dispatch to traced values themselves."""
from numpy.linalg import *           # noqa: F401,F403
