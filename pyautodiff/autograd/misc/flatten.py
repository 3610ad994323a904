"""autograd.misc.flatten: a nest of lists, tuples and dicts of arrays and
floats as one flat vector, and back.

The vector holds the leaves in order, a dict's under its sorted keys;
``unflatten`` rebuilds the nest (dicts in their own key order, floats as
0-d arrays, as autograd's does).  Both directions are differentiable: a
nest holding traced Values or Arrays flattens into a traced vector (one
concatenation), and a traced vector unflattens into slices of it.
"""
import numpy as np

from ... import array as _array
from ...value import Value

__all__ = ["flatten", "flatten_func"]


def _traced(x):
    return isinstance(x, (Value, _array.Array))


def _walk(value, leaves):
    """The nest's skeleton; its leaves appended to leaves in vector order."""
    if isinstance(value, (list, tuple)):
        return ("sequence", type(value), [_walk(v, leaves) for v in value])
    if isinstance(value, dict):
        # the vector's order is the sorted keys', the rebuilt dict's the
        # keys' own
        parts = {k: _walk(value[k], leaves) for k in sorted(value)}
        return ("dict", {k: parts[k] for k in value})
    leaves.append(value)
    return ("leaf", np.shape(value))


def flatten(value):
    """(vector, unflatten): the 1-D array of value's numbers, and the
    function that turns such a vector back into value's nest."""
    leaves = []
    skeleton = _walk(value, leaves)
    sizes = [int(np.prod(np.shape(x))) for x in leaves]
    if any(_traced(x) for x in leaves):
        pieces = [x if isinstance(x, _array.Array) else _array.stack([x])
                  for x in leaves]
        vector = _array.concatenate([p.reshape((-1,)) for p in pieces])
    elif leaves:
        vector = np.concatenate([np.ravel(x) for x in leaves])
    else:
        vector = np.array([])
    total = sum(sizes)

    def unflatten(vector):
        if np.shape(vector) != (total,):
            raise ValueError(f"unflatten needs a vector of shape ({total},), "
                             f"got shape {np.shape(vector)}")
        return _build(skeleton, vector, [0])
    return vector, unflatten


def _build(skeleton, vector, at):
    """The nest of skeleton from vector's numbers from at[0] on."""
    kind = skeleton[0]
    if kind == "dict":
        # the numbers run in sorted-key order
        children = skeleton[1]
        built = {k: _build(children[k], vector, at) for k in sorted(children)}
        return {k: built[k] for k in children}
    if kind == "sequence":
        return skeleton[1](_build(s, vector, at) for s in skeleton[2])
    shape = skeleton[1]
    n = int(np.prod(shape))
    piece = vector[at[0]:at[0] + n]
    at[0] += n
    if _traced(piece):
        return piece.reshape(shape)
    return np.array(piece).reshape(shape)      # a copy: not a view of vector


def flatten_func(func, example):
    """(flat_func, unflatten, flat_example): func of a nest shaped like
    example, as a function of flat vectors returning a flat vector."""
    flat_example, unflatten = flatten(example)

    def flat_func(vector, *args):
        return flatten(func(unflatten(vector), *args))[0]
    return flat_func, unflatten, flat_example
