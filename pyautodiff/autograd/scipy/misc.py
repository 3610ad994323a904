"""autograd.scipy.misc: logsumexp (scipy.special's, as older SciPy had it
in scipy.misc)."""
from .special import logsumexp  # noqa: F401
