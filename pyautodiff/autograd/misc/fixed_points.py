"""autograd.misc.fixed_points: fixed_point(f, a, x0, distance, tol), the
point x = f(a)(x) reached by iterating f(a) from x0 until two iterates are
within tol by distance, differentiable in a (first order).

The iteration itself is not differentiated (its steps would be recorded
one by one, and its derivative would be that of the truncated iteration).
Its gradient is the implicit function's: for the fixed point x* and a
cotangent g, the adjoint w solves w = g + w J_x (J_x the Jacobian of f(a)
at x*), found as the fixed point of that map by the same iteration, and the
gradient is w J_a; both products are vector-Jacobian products of f traced
by pyautodiff.  A derivative of that gradient (second order) raises
NotImplementedError.
"""
from .. import make_vjp
from ..extend import _traced, defvjp, primitive


def _iterate(step, x0, distance, tol):
    previous, x = x0, step(x0)
    while distance(x, previous) > tol:
        previous, x = x, step(x)
    return x


@primitive
def fixed_point(f, a, x0, distance, tol):
    return _iterate(f(a), x0, distance, tol)


def _vjp_a(ans, f, a, x0, distance, tol):
    """g -> the gradient in a at the fixed point ans."""
    def gradient(g):
        if any(_traced(v) for v in (a, ans, g)):
            raise NotImplementedError(
                "pyautodiff.autograd.misc.fixed_points.fixed_point: derivatives "
                "of second and higher order are not supported")
        back_a, _ = make_vjp(lambda b: f(b)(ans))(a)
        back_x, _ = make_vjp(f(a))(ans)
        w = _iterate(lambda v: back_x(v) + g, 0.0 * g, distance, tol)
        return back_a(w)
    return gradient


defvjp(fixed_point, None, _vjp_a, None)
