"""scipy for autograd programs (``import pyautodiff.autograd.scipy.stats as
stats``, ``pyautodiff.autograd.scipy.linalg`` ...): HIPS autograd's modules
of the same names, whose functions take traced values -- scipy.special's
and scipy.stats' (pyautodiff.scipy_special, pyautodiff.scipy_stats),
scipy.linalg's, scipy.signal's and scipy.integrate's (pyautodiff.scipy_linalg,
scipy_signal, scipy_integrate).  SciPy is imported at the first call that
needs it.  scipy.special's ufuncs dispatch on traced values themselves;
scipy's other functions do not: import these instead."""
from . import integrate, linalg, misc, signal, special, stats  # noqa: F401
