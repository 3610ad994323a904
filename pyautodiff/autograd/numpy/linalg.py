"""numpy.linalg for autograd programs (``import pyautodiff.autograd.numpy.linalg``):
NumPy's own functions, which dispatch to traced values themselves."""
from numpy.linalg import *           # noqa: F401,F403

import numpy.linalg as _la  # noqa: E402

from ._lists import lift_namespace as _lift_namespace  # noqa: E402

# lists of traced numbers are taken as NumPy takes lists of numbers
_lift_namespace(globals(), _la.__all__)
