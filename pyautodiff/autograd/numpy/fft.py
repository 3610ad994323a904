"""numpy.fft for autograd programs (``import pyautodiff.autograd.numpy.fft``):
NumPy's own functions, which dispatch to traced values themselves."""
from numpy.fft import *           # noqa: F401,F403
