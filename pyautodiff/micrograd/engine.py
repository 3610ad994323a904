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
  by an earlier backward are propagated again, as micrograd does.
"""
import numbers

import numpy as np

from .. import _core
from ..tape import DETACHED
from ..value import Value as _Value, install_operators


class Value(_Value):
    """micrograd's Value: ``Value(data, _children=(), _op='')``."""

    __slots__ = ()
    _fuse_constants = frozenset({"__pow__", "__rpow__"})
    _typed_ints = True
    _sweep_mode = _core.SWEEP_INPLACE

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
        g = t.grad_of(self._i)
        return g if t.flags_of(self._i) & _core.FLAG_GRAD_FLOAT else int(g)

    @grad.setter
    def grad(self, value):
        if self._t is DETACHED:
            return
        flags = _core.FLAG_GRAD_FLOAT if isinstance(value, float) else 0
        self._t.set_grad(self._i, float(value), flags)

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


# generates the rest: + * ** and the math methods, recorded as micrograd does
install_operators(Value, expr_overrides={"RELU": "0 if x < 0 else x"})
