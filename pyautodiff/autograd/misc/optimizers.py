"""autograd.misc.optimizers: sgd, rmsprop and adam for loops written as
``grad(x, i)`` (i the iteration number), on any nest of lists, tuples and
dicts of arrays (flattened with misc.flatten).

Each optimizer is a plain loop of NumPy arithmetic; with the NumPy of
``pyautodiff.autograd.numpy`` the loop itself is differentiable, for
derivatives with respect to a step size or a starting point.
"""
import functools

from .. import numpy as np
from .flatten import flatten

__all__ = ["unflatten_optimizer", "sgd", "rmsprop", "adam"]


def unflatten_optimizer(optimize):
    """optimize(grad, x, callback, ...) of flat vectors as an optimizer of
    nests: grad and callback(x, i, g) see nests shaped like x0, and the
    result is one."""
    @functools.wraps(optimize)
    def nested(grad, x0, callback=None, *args, **kwargs):
        flat_x0, unflatten = flatten(x0)

        def flat_grad(x, i):
            return flatten(grad(unflatten(x), i))[0]

        flat_callback = None
        if callback is not None:
            def flat_callback(x, i, g):
                return callback(unflatten(x), i, unflatten(g))
        return unflatten(optimize(flat_grad, flat_x0, flat_callback, *args, **kwargs))
    return nested


@unflatten_optimizer
def sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    """Gradient descent with momentum: the velocity is an exponential
    average of the negative gradients, with weight mass on the past."""
    velocity = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@unflatten_optimizer
def rmsprop(grad, x, callback=None, num_iters=100, step_size=0.1, gamma=0.9,
            eps=10**-8):
    """Steps scaled by a running root mean square of the gradients (whose
    average starts at one)."""
    mean_square = np.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        mean_square = mean_square * gamma + g**2 * (1 - gamma)
        x = x - step_size * g / (np.sqrt(mean_square) + eps)
    return x


@unflatten_optimizer
def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9,
         b2=0.999, eps=10**-8):
    """Adam (Kingma and Ba): momentum over an RMSprop scale, both moment
    estimates corrected for their start at zero."""
    m = np.zeros(len(x))
    v = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * (g**2) + b2 * v
        m_hat = m / (1 - b1**(i + 1))
        v_hat = v / (1 - b2**(i + 1))
        x = x - step_size * m_hat / (np.sqrt(v_hat) + eps)
    return x
