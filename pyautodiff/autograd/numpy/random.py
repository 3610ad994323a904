"""numpy.random for autograd programs (``import pyautodiff.autograd.numpy.random``):
NumPy's own functions, which dispatch to traced values themselves."""
from numpy.random import *           # noqa: F401,F403
