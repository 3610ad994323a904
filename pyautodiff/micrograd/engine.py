"""micrograd's ``Value`` on pyautodiff's tape: a drop-in for
``micrograd.engine.Value`` that gives micrograd's numbers, faster.

What it keeps from micrograd, on purpose:
- the op decomposition: ``-a`` is ``a * -1``, ``a - b`` is ``a + (-b)``,
  ``a / b`` is ``a * b**-1``, and a number operand becomes a leaf Value, so
  the graph (``_prev``, ``_op``) is micrograd's node for node;
- data as given (``Value(2).data`` is the int 2, ``relu`` of a negative is 0);
- gradients typed as micrograd's arithmetic types them: an int while every
  contribution to it is an int (0 before any backward, 1 on the root,
  ``a*b`` with int data), else a float, so reprs match;
- backward sweeps through the gradients already stored, so gradients left
  by an earlier backward are propagated again, as micrograd does;
- the extension points of micrograd's lecture: ``Value(data, children, op)``
  builds a node of your own, ``node._backward = fn`` gives it a derivative
  rule in Python, and every node's ``_backward()`` can be called by hand.
  A backward over a tape holding such nodes runs micrograd's own algorithm
  (a topological sort, then each node's ``_backward``, the built-in ones
  applying their rule in C), so they behave exactly as in micrograd.  Their
  closures refer to their own nodes (a cycle): the tape's compaction
  counts such references as the node's own (``_held``), so a node nothing
  else holds is dropped, and freed, with them.
"""
import functools
import numbers
import sys

import numpy as np

from .. import _core
from .._core import TapeError
from ..tape import DETACHED
from ..value import Value as _Value, install_operators


class Value(_Value):
    """micrograd's Value: ``Value(data, _children=(), _op='')``."""

    __slots__ = ("_kids", "_opname", "_bw")
    _fuse_constants = frozenset({"__pow__", "__rpow__"})
    _typed_ints = True
    _sweep_mode = _core.SWEEP_INPLACE

    def __init__(self, data, _children=(), _op="", label=""):
        super().__init__(data, label=label)
        if _children or _op:                  # a node of the user's own
            self._kids = tuple(_children)
            self._opname = _op

    @staticmethod
    def _coerce(data):
        if data.__class__ is float or data.__class__ is int:
            float(data)     # OverflowError now for an int no float can hold
            return data
        if isinstance(data, (bool, np.bool_)) or not isinstance(data, numbers.Real):
            raise TypeError("Value() takes an int or float, not "
                            f"{type(data).__name__}")
        return data.item() if isinstance(data, np.generic) else float(data)

    @property
    def grad(self):
        t = self._t
        if t is DETACHED:
            return 0
        g = t.grad_of(self)
        return g if t.flags_of(self) & _core.FLAG_GRAD_FLOAT else int(g)

    @grad.setter
    def grad(self, value):
        if self._t is DETACHED:
            return
        self._t.set_grad(self, float(value), isinstance(value, float))

    @property
    def _prev(self):
        kids = getattr(self, "_kids", None)
        return set(kids) if kids is not None else _Value._prev.fget(self)

    @property
    def _op(self):
        name = getattr(self, "_opname", None)
        return name if name is not None else _Value._op.fget(self)

    @property
    def _backward(self):
        """This node's derivative rule: a user's closure, or the built-in
        rule applied in C to this node alone."""
        fn = getattr(self, "_bw", None)
        if fn is not None:
            return fn
        if self._t is DETACHED:
            return _nothing
        return functools.partial(self._t.reverse_step, self._i)

    @_backward.setter
    def _backward(self, fn):
        if self._t is DETACHED:
            raise TapeError("this Value was computed under no_grad")
        if getattr(self, "_bw", None) is None:
            self._t.custom += 1
        self._bw = fn

    def _held(self):
        """The objects this node alone refers to: its children, and what
        its rule's closure captured, where nothing else holds the tuple,
        the function or the cell in between.  The tape's compaction does
        not count these references as uses (a closure that captures its
        own node would otherwise keep it for good)."""
        held = []
        kids = getattr(self, "_kids", None)
        if kids is not None and sys.getrefcount(kids) <= _ONE_OWNER:
            held += kids
        fn = getattr(self, "_bw", None)
        if fn is not None and sys.getrefcount(fn) <= _ONE_OWNER:
            cells = getattr(fn, "__closure__", None)
            if cells is not None and sys.getrefcount(cells) <= _ONE_OWNER:
                for cell in cells:
                    if sys.getrefcount(cell) <= _ONE_OWNER:
                        try:
                            held.append(cell.cell_contents)
                        except ValueError:      # a variable not yet bound
                            pass
        return held

    def backward(self):
        t = self._t
        if t is DETACHED or not t.custom:
            return _Value.backward(self)
        # a user's node may be in the graph: micrograd's algorithm, verbatim
        topo = _topological_order(self)
        self.grad = 1
        for node in reversed(topo):
            node._backward()

    def __neg__(self):                # -self
        return self * -1

    def __radd__(self, other):        # other + self
        return self + other

    def __sub__(self, other):         # self - other
        return self + (-other)

    def __rsub__(self, other):        # other - self
        return other + (-self)

    def __rmul__(self, other):        # other * self
        return self * other

    def __truediv__(self, other):     # self / other
        return self * other**-1

    def __rtruediv__(self, other):    # other / self
        return other * self**-1


def _nothing():
    return None


def _one_owner():
    # What sys.getrefcount says of an object bound to a local variable
    # while exactly one other object refers to it, as _held() asks.
    owner = [object()]
    x = owner[0]
    return sys.getrefcount(x)


_ONE_OWNER = _one_owner()


def _topological_order(root):
    """Nodes reachable from root, each after all of its _prev: micrograd's
    depth-first order, without recursion."""
    order, seen = [], {root}
    stack = [(root, iter(root._prev))]
    while stack:
        node, children = stack[-1]
        for child in children:
            if child not in seen:
                seen.add(child)
                stack.append((child, iter(child._prev)))
                break
        else:
            stack.pop()
            order.append(node)
    return order


# generates the rest: + * ** and the math methods, recorded as micrograd does
install_operators(Value, expr_overrides={"RELU": "0 if x < 0 else x"})
