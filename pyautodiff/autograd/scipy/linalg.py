"""scipy.linalg for autograd programs: the functions of
pyautodiff.scipy_linalg (solve_triangular, cho_factor, cho_solve,
solve_banded, solve_sylvester, sqrtm and numpy.linalg's names with
scipy's signatures).  Any other name of scipy.linalg is scipy's own on
plain arrays, and refuses traced ones (it would not see their
derivatives)."""
import functools

from ...scipy_linalg import *  # noqa: F401,F403
from ...scipy_linalg import __all__, _traced


def __getattr__(name):
    import scipy.linalg
    fn = getattr(scipy.linalg, name)        # AttributeError as scipy's
    if not callable(fn) or isinstance(fn, type):
        return fn                           # (LinAlgError is caught as scipy's)

    @functools.wraps(fn)
    def plain_only(*args, **kwargs):
        if _traced(*args, *kwargs.values()):
            raise NotImplementedError(
                f"scipy.linalg.{name} is not differentiable in pyautodiff: called "
                "with traced values it would compute with plain numbers")
        return fn(*args, **kwargs)
    return plain_only
