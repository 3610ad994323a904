"""Nested arguments and results: floats and ndarrays inside lists, tuples
and dicts, flattened to a list of leaves and rebuilt in the same shape.

The functional API and ``ad.record`` differentiate with respect to every
leaf of an argument, and hand gradients back in the argument's structure:
a float's gradient is a float, an ndarray's an ndarray of its shape.

A complex number or array is a node of two real leaves, its real and
imaginary parts (complex_value rebuilds it: a ComplexArray of traced
parts).  A gradient or cotangent is conjugated on the way (conjugate=True):
the derivatives (df/dx, df/dy) of a real f with respect to the parts are
autograd's gradient df/dx - i df/dy, and a cotangent g of a complex result
seeds its parts with (Re g, -Im g).
"""
import numbers

import numpy as np

from .array import Array, from_object_array
from .complex_array import ComplexArray, complex_value
from .value import Value


class Structure:
    """How to rebuild a nested value from its leaves: the containers, and
    per leaf its kind ('float' or 'array') and shape."""

    __slots__ = ("node", "kinds", "shapes")

    def __init__(self, node, kinds, shapes):
        self.node = node
        self.kinds = kinds
        self.shapes = shapes

    def __eq__(self, other):
        return (isinstance(other, Structure) and self.node == other.node
                and self.kinds == other.kinds and self.shapes == other.shapes)

    def __hash__(self):
        return hash((self.node, tuple(self.kinds), tuple(self.shapes)))

    @property
    def size(self):
        return sum(int(np.prod(s)) for s in self.shapes)


def _leaf_kind(x, what):
    if x.__class__ is float:                                # the common cases
        return "float", (), x
    if x.__class__ is np.ndarray and x.dtype == np.float64:
        return "array", x.shape, x
    if isinstance(x, Value):
        return "float", (), x
    if isinstance(x, Array):
        return "array", x.shape, x
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{what}: cannot differentiate with respect to a bool")
    if isinstance(x, numbers.Real):
        return "float", (), float(x)
    if isinstance(x, np.ndarray) or (isinstance(x, np.generic) and x.ndim == 0):
        arr = np.asarray(x)
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{what}: cannot differentiate with respect to "
                            f"{arr.dtype} data (real numbers only)")
        if arr.ndim == 0 and isinstance(x, np.generic):
            return "float", (), float(arr)
        return "array", arr.shape, np.array(arr, dtype=np.float64)
    raise TypeError(f"{what}: cannot differentiate with respect to "
                    f"{type(x).__name__} (floats, ndarrays, and lists, tuples "
                    "and dicts of them)")


def flatten(x, what="argument", conjugate=False):
    """(leaves, Structure): leaves are floats, float64 ndarrays (x's own
    where they are float64 already: not copied, as Array() copies what it
    records) or the Values/Arrays found in x; a complex number's parts
    (with conjugate, the real part and minus the imaginary part)."""
    leaves, kinds, shapes = [], [], []
    node = _walk(x, what, leaves, kinds, shapes, conjugate)
    return leaves, Structure(node, kinds, shapes)


def _complex_parts(v):
    """(real part, imaginary part) of a complex number or array, else None."""
    if isinstance(v, ComplexArray):
        return v.real, v.imag
    if isinstance(v, (complex, np.complexfloating)):
        return float(v.real), float(v.imag)
    if isinstance(v, np.ndarray) and v.dtype.kind == "c":
        return (np.array(v.real, dtype=np.float64), np.array(v.imag, dtype=np.float64))
    return None


def is_complex_node(node):
    """Whether a structure's node is a complex number's (two parts)."""
    return node is not None and node[0] is complex_value


def holds_complex(node):
    """Whether a structure's node has a complex number in it."""
    if node is None:
        return False
    return is_complex_node(node) or any(holds_complex(n) for n in node[-1])


# The walks are module functions, not closures that call themselves: such
# a closure is a reference cycle (function -> cell -> function) that holds
# every leaf it saw until the cycle collector runs, the arguments' arrays
# and the traced leaves with them.

def _walk(v, what, leaves, kinds, shapes, conjugate):
    """v's container nodes; its leaves appended to the three lists."""
    if isinstance(v, (list, tuple)):
        return (type(v), tuple(_walk(e, what, leaves, kinds, shapes, conjugate)
                               for e in v))
    if isinstance(v, dict):
        keys = tuple(v)
        return (dict, keys, tuple(_walk(v[k], what, leaves, kinds, shapes, conjugate)
                                  for k in keys))
    parts = _complex_parts(v)
    if parts is not None:
        re, im = parts
        return (complex_value, tuple(_walk(p, what, leaves, kinds, shapes, False)
                                     for p in (re, -im if conjugate else im)))
    kind, shape, leaf = _leaf_kind(v, what)
    leaves.append(leaf)
    kinds.append(kind)
    shapes.append(tuple(shape))
    return None


def lift_object_arrays(v):
    """v with each object ndarray in it that holds traced numbers (what
    np.array([x[0] * x[1], 1.0]) makes of them) stacked into one traced
    Array; called on a function's result while its tape records."""
    if isinstance(v, (list, tuple)) and v.__class__ in (list, tuple):
        return v.__class__(lift_object_arrays(e) for e in v)
    if isinstance(v, dict):
        return {k: lift_object_arrays(e) for k, e in v.items()}
    lifted = from_object_array(v)
    return v if lifted is None else lifted


def unflatten(structure, leaves, conjugate=False):
    """The nested value of structure with these leaves, in order (with
    conjugate, complex numbers of the real part and minus the imaginary
    part: a gradient)."""
    return _build(structure.node, iter(leaves), conjugate)


def _build(node, it, conjugate):
    if node is None:
        return next(it)
    if node[0] is dict:
        return {k: _build(n, it, conjugate) for k, n in zip(node[1], node[2])}
    items = [_build(n, it, conjugate) for n in node[-1]]
    if node[0] is complex_value and conjugate:
        return complex_value(items[0], -items[1])
    return node[0](items) if node[0] in (list, tuple) else node[0](*items)


def as_leaf(kind, value):
    """A gradient-like result for a leaf of this kind (value is a fresh
    array of the caller's: not copied again)."""
    if kind == "float":
        return float(value)
    return np.asarray(value, dtype=np.float64)
