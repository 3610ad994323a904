"""autograd.scipy for autograd programs (``import pyautodiff.autograd.scipy.stats
as stats``): scipy.special's and scipy.stats' functions that record
derivatives on Values and Arrays (pyautodiff.scipy_special and
pyautodiff.scipy_stats), under autograd's module names.  SciPy is imported at the first call that needs it."""
from . import misc, special, stats  # noqa: F401
