"""scipy.integrate for autograd programs: odeint, differentiable with
respect to y0, t and the traced numbers in args (first order)."""
from ...scipy_integrate import odeint  # noqa: F401

__all__ = ["odeint"]
