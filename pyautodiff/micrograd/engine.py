"""micrograd's ``Value`` on pyautodiff's tape: a drop-in for
``micrograd.engine.Value`` that gives micrograd's numbers, faster.

What it keeps from micrograd, on purpose:
- the op decomposition: ``-a`` is ``a * -1``, ``a - b`` is ``a + (-b)``,
  ``a / b`` is ``a * b**-1``, and a number operand becomes a leaf Value, so
  the graph (``_prev``, ``_op``) is micrograd's node for node;
- data as given, the very object (``Value(2).data`` is the int 2, a NumPy
  scalar or a size-1 ndarray stays one), and results computed from it as
  micrograd computes them (``Value(np.float64(2)) * 3`` holds np.float64(6.0),
  ``relu`` of a negative is 0); the tape records the float it stands for.
  Python numbers and NumPy scalars take the generated fast path unchanged;
  only an ndarray, which the record cannot hold, takes the slow path;
- results of operations are plain ``Value``s, also on a subclass's
  operands (micrograd's ops call ``Value(...)``), and a Value takes
  arbitrary attributes (``v.velocity = 0.0``);
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
  rules refer to their own nodes (a cycle), through a closure's cells,
  default arguments, a partial or a bound method: the tape's compaction
  counts such references as the node's own (``_held``), so a node nothing
  else holds is dropped, and freed, with them.
"""
import collections
import copy
import functools
import gc
import numbers
import pickle
import sys
import types

import numpy as np

from .. import _core
from .._core import TapeError
from .._generated import micrograd_operators
from ..ops import BINARY, UNARY
from ..tape_state import DETACHED, current_tape, state
from ..value import (OPS, Value as _Value, _detached, _slow_binary, _slow_unary,
                     install_operators)


class Value(_Value):
    """micrograd's Value: ``Value(data, _children=(), _op='')``."""

    # __dict__: micrograd's Values take any attribute (an optimizer's
    # v.velocity); it costs a pointer per Value, and nothing until used
    __slots__ = ("_kids", "_opname", "_bw", "__dict__")
    _fuse_constants = frozenset({"__pow__", "__rpow__"})
    _typed_ints = True
    _keeps_data = True
    _value_exprs = {"RELU": "0 if x < 0 else x"}    # 0 of the data's type
    _sweep_mode = _core.SWEEP_INPLACE

    def __init__(self, data, _children=(), _op="", label=""):
        super().__init__(data, label=label)
        if self._d is not data:               # kept as given, as micrograd does
            self._d = data
        if _children or _op:                  # a node of the user's own
            self._kids = tuple(_children)
            self._opname = _op

    @staticmethod
    def _coerce(data):
        """The number the tape records for data (data itself, unless it is
        a NumPy scalar, a bool or a size-1 ndarray: then its Python number)."""
        if data.__class__ is float:
            return data
        if data.__class__ is int:
            float(data)     # OverflowError now for an int no float can hold
            return data
        if isinstance(data, np.ndarray):
            if data.size != 1 or data.dtype.kind not in "biuf":
                raise TypeError("Value() takes a number or a real ndarray of "
                                f"one element, not an ndarray of shape "
                                f"{data.shape} and dtype {data.dtype}")
            data = data.item()
        if not isinstance(data, (numbers.Real, np.bool_)):
            raise TypeError("Value() takes an int or float, not "
                            f"{type(data).__name__}")
        return _core_number(data)

    @property
    def data(self):
        return self._d

    @data.setter
    def data(self, value):
        _set_data(self, value)      # the tape takes its number ...
        self._d = value             # ... the Value the object itself

    def _leaf_on(self, tape, flags):
        d = self._coerce(self._d)
        out = tape.record(Value, OPS["LEAF"], -1, -1, d, d,
                          self._int_flags(d, None) | flags)
        out._d = self._d
        return out

    # micrograd's type for this gradient where it is no Python number, in
    # the instance's __dict__ (see _grad_kinds): a NumPy scalar of that
    # type, or the ndarray micrograd would hold, the same object from one
    # backward to the next (micrograd's += updates it in place); None for
    # an int or a float
    _gk = None

    @property
    def grad(self):
        t = self._t
        if t is DETACHED:
            return 0
        g, flags = t.grad_and_flags_of(self)
        if not flags & _core.FLAG_GRAD_FLOAT:
            g = int(g)
        kind = self._gk
        return g if kind is None else _as_kind(kind, g)

    @grad.setter
    def grad(self, value):
        if self._t is DETACHED:
            return
        if value.__class__ is float or value.__class__ is int:
            self._t.set_grad(self, float(value), value.__class__ is float)
            if self._gk is not None:
                del self._gk
            return
        g = self._coerce(value)
        self._t.set_grad(self, float(g), g.__class__ is float)
        self._gk = value if isinstance(value, np.ndarray) else value * 0

    @property
    def _prev(self):
        kids = getattr(self, "_kids", None)
        return set(kids) if kids is not None else _Value._prev.fget(self)

    @property
    def _op(self):
        name = getattr(self, "_opname", None)
        if name is not None:
            return name
        op, _, _, imm, _ = self._entry()
        if op == OPS["POWC"] and not self._t.flags_of(self) & _core.FLAG_IMM_INT:
            return f"**{imm}"           # micrograd's f'**{other}': **2.0
        return _Value._op.fget(self)

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
            raise TapeError("this Value is a constant (computed under no_grad, "
                            "or by a step function such as //)")
        if getattr(self, "_bw", None) is None:
            self._t.custom += 1
        self._bw = fn

    def _held(self):
        """The Values this node alone refers to: its children, and what its
        rule captured -- through a closure's cells, a function's default
        arguments, a functools.partial's arguments, a bound method's
        object, a list -- where nothing else holds the objects in between
        (the tuple, the function, the cell, the method).  The tape's
        compaction does not count these references as uses (a rule that
        captures its own node would otherwise keep it for good)."""
        held, todo = [], [self]
        while todo:
            obj = todo.pop()
            for x in gc.get_referents(obj):
                if isinstance(x, _Value):
                    held.append(x)
                elif sys.getrefcount(x) <= _SOLE and gc.is_tracked(x):
                    todo.append(x)          # obj's alone: what it holds, too
        return held

    def backward(self):
        t = self._t
        if t is not DETACHED and not (self._d.__class__ is float
                                      or self._d.__class__ is int):
            _set_grad_kinds(self)       # NumPy data: micrograd's grad types
        if t is DETACHED or not t.custom:
            return _Value.backward(self)
        # a user's node may be in the graph: micrograd's algorithm, verbatim
        topo = _topological_order(self)
        self.grad = 1
        for node in reversed(topo):
            node._backward()

    # -- copies and pickles, as micrograd's: copy.copy is a node like this
    # one over the same children, deepcopy copies the graph below it, a
    # pickle carries that graph (micrograd's own pickles fail on their
    # _backward closures).  Each is a node of its own on the tape, so that
    # writing one's .data leaves the other.

    def __copy__(self):
        return _replicate(self, _parts(self), lambda v: v, dict(self.__dict__),
                          getattr(self, "_bw", None))

    def __deepcopy__(self, memo):
        for node in _topological_order(self):
            if id(node) not in memo:
                _deepcopy_node(node, memo)
        return memo[id(self)]

    def __reduce__(self):
        topo = _topological_order(self)
        where = {id(node): k for k, node in enumerate(topo)}
        specs = []
        for node in topo:
            if getattr(node, "_bw", None) is not None:
                raise pickle.PicklingError(
                    f"cannot pickle a Value whose derivative rule is a Python "
                    f"function (its _op is {node._op!r}): functions made "
                    f"inside another function do not pickle; pickle the "
                    f"inputs and build the graph again")
            parts = _parts(node)
            specs.append((parts._replace(
                operands=tuple(where[id(v)] for v in parts.operands),
                kids=None if parts.kids is None else
                tuple(where[id(v)] for v in parts.kids)), dict(node.__dict__)))
        return _unpickle, (specs,)

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


_set_data = _Value.data.fset


def _nothing():
    return None


def _core_number(x):
    """x (a real number) as the Python int or float the tape records."""
    if x.__class__ is float or x.__class__ is int:
        return x
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, np.generic):
        return x.item()
    return float(x)


def _is_data(x):
    """Whether micrograd would take x as the data of a Value (a number, or
    an ndarray of one real element)."""
    if isinstance(x, np.ndarray):
        return x.size == 1 and x.dtype.kind in "biuf"
    return isinstance(x, (numbers.Real, np.bool_))


def _recorded(t, code, a, b, c, d, flags=None):
    """Record op `code` on tape t with result d (micrograd's data) as a
    plain Value; the record holds d's number, the Value d itself."""
    if flags is None:
        flags = Value._int_flags(d, c)
    out = t.record(Value, code, a, b, c, Value._coerce(d), flags)
    out._d = d
    return out


def _dropin_binary(self, other, name):
    """An operator the fast path did not take: a subclass's operand, data
    the record cannot hold, a number that is not a float or int.  The result
    is a plain Value, as micrograd's ops make one."""
    vv_op, vc_op, cexpr = BINARY[name]
    t = state.rec
    if self._t is t:                    # recording, and self is on the tape
        if (other.__class__ is float or other.__class__ is int
                or not isinstance(other, _Value) and _is_data(other)):
            if name not in Value._fuse_constants:   # micrograd: Value(other)
                return getattr(self, name)(Value(other))
            c = _core_number(other)
            return _recorded(t, OPS[vc_op], self._i, -1, c,
                             Value._fn[vc_op](self._d, c=other))
        if isinstance(other, Value) and other._t is t and vv_op:
            return _recorded(t, OPS[vv_op], self._i, other._i, 0.0,
                             Value._fn[vv_op](self._d, other._d))
    return _slow_binary(self, other, name, Value)


def _dropin_unary(self, name):
    t = state.rec
    if self._t is t:
        op = UNARY[name]
        return _recorded(t, OPS[op], self._i, -1, 0.0, Value._fn[op](self._d))
    return _slow_unary(self, name, Value)


def _sole():
    # What sys.getrefcount says, in _held's loop, of a referent that
    # nothing but the object whose referents are walked refers to.
    holder = (object(),)
    for x in gc.get_referents(holder):
        return sys.getrefcount(x)


_SOLE = _sole()


_UNITS = {}


def _unit(x):
    """A one of x's type (and shape): a stand-in for data."""
    if isinstance(x, np.ndarray):
        return np.ones_like(x)
    unit = _UNITS.get(x.__class__)
    if unit is None:
        unit = _UNITS[x.__class__] = x.__class__(1)
    return unit


def _as_kind(kind, g):
    """The gradient g (the tape's number) as micrograd's type for it."""
    dtype = kind.dtype
    if dtype.kind in "biu" and not float(g).is_integer():
        dtype = np.dtype(np.float64)     # never a truncated number
    if not isinstance(kind, np.ndarray):
        return dtype.type(g)
    if dtype != kind.dtype or not kind.flags.writeable:
        return np.full(kind.shape, g, dtype)
    kind[...] = g
    return kind


_ADD, _MUL, _RELU, _POWC, _LEAF = (OPS[k] for k in ("ADD", "MUL", "RELU", "POWC",
                                                    "LEAF"))


def _grad_kinds(root):
    """micrograd's backward from root run on stand-ins (zeros for the
    gradients, ones for the data), so that only types come out: {entry:
    the type its gradient ends with}.  Entries are visited from the root
    down, which puts every node after all the nodes it feeds, as
    micrograd's topological order does.  A user's node contributes nothing
    here; its _backward, run by the sweep, assigns its operands' gradients
    through .grad, which keeps their types."""
    t = root._t
    t.flush()
    c, nodes, n = t._c, t.nodes, root._i + 1
    ops, first, second = (_core.ffi.unpack(arr, n) for arr in (c.op, c.a, c.b))
    kinds = {root._i: 0}                # micrograd's self.grad = 1

    def add(k, term):
        kind = kinds.get(k)
        if kind is None:
            kind = nodes[k]._gk
            if kind is None:
                kind = 0.0 if c.flags[k] & _core.FLAG_GRAD_FLOAT else 0
        kinds[k] = kind + term

    for i in range(root._i, -1, -1):
        g = kinds.get(i)
        if g is None:
            continue
        op, a, b, node = ops[i], first[i], second[i], nodes[i]
        _sync_data(node)
        if op == _LEAF:
            continue
        if op == _ADD:
            add(a, g)
            add(b, g)
        elif op == _MUL:
            add(a, _unit(nodes[b]._d) * g)
            add(b, _unit(nodes[a]._d) * g)
        elif op == _RELU:
            add(a, (_unit(node._d) > 0) * g)
        elif op == _POWC:
            add(a, _power_term(nodes[a], c.imm[i], c.flags[i], g))
        else:       # the superset's ops: rules in the result's data
            term = _unit(node._d) * g
            for k in (a, b):
                if k >= 0:
                    add(k, term)
    return kinds


def _power_term(x, imm, flags, g):
    """micrograd's (other * x.data**(other-1)) * out.grad, on stand-ins."""
    e = int(imm) if flags & _core.FLAG_IMM_INT else imm
    try:
        return (e * _unit(x._d) ** (e - 1)) * g
    except (ArithmeticError, ValueError):   # an int array to a negative power
        return _unit(x._d) * g


def _sync_data(node):
    """An ndarray's element may have been written in place (p.data[0] = x,
    no assignment of .data): the tape takes the number it holds now, as
    micrograd's backward reads .data."""
    d = node._d
    if isinstance(d, np.ndarray) and node._t.entry_value(node._i) != d.item():
        n = Value._coerce(d)
        node._t.set_value(node, n, n.__class__ is int)


def _set_grad_kinds(root):
    # (the lock: other threads' sweeps write the flags read there)
    with np.errstate(all="ignore"), root._t.lock:
        kinds = _grad_kinds(root)
    nodes = root._t.nodes
    for i, k in kinds.items():
        node = nodes[i]
        if k.__class__ is float or k.__class__ is int:
            if node._gk is not None:
                del node._gk
        elif not (isinstance(k, np.ndarray) and isinstance(node._gk, np.ndarray)
                  and k.shape == node._gk.shape and k.dtype == node._gk.dtype):
            node._gk = k        # else micrograd's += keeps the array it had


# What a copy of a node is made of: its entry on the tape (op, operands,
# constant, int flags), its data and gradient, and a user's node's own
# children and label.
_Parts = collections.namedtuple(
    "_Parts", "op operands imm flags data grad grad_float kind kids opname")
_COPIED_FLAGS = _core.FLAG_VALUE_INT | _core.FLAG_IMM_INT | _core.FLAG_VARIABLE


def _parts(node):
    t = node._t
    kids = getattr(node, "_kids", None)
    opname = getattr(node, "_opname", None)
    if t is DETACHED:           # computed under no_grad: a constant
        return _Parts(None, (), 0.0, 0, node._d, 0, False, None, kids, opname)
    op, a, b, imm, _ = node._entry()
    grad, flags = t.grad_and_flags_of(node)
    return _Parts(op, tuple(t.nodes[k] for k in (a, b) if k >= 0), imm,
                  flags & _COPIED_FLAGS, node._d, grad,
                  bool(flags & _core.FLAG_GRAD_FLOAT), node._gk, kids, opname)


def _replicate(node, parts, operand, attrs, rule, tape=None):
    """A new node made of parts on tape (by default node's), its operands
    and children mapped by operand(); attrs become its __dict__ and rule
    its _backward."""
    t = tape or node._t
    if parts.op is None:
        out = _detached(Value, parts.data)
    else:
        ops = [operand(v)._i for v in parts.operands] + [-1, -1]
        out = _recorded(t, parts.op, ops[0], ops[1], parts.imm, parts.data,
                        parts.flags)
        if parts.grad or parts.grad_float:
            t.set_grad(out, parts.grad, parts.grad_float)
    if attrs:
        out.__dict__.update(attrs)
    if parts.kind is not None:
        out._gk = parts.kind
    if parts.kids is not None:
        out._kids = tuple(operand(v) for v in parts.kids)
        out._opname = parts.opname
    if rule is not None:
        out._backward = rule
    return out


def _deepcopy_node(node, memo):
    """node's copy over the copies (in memo) of its operands."""
    parts = _parts(node)
    parts = parts._replace(data=copy.deepcopy(parts.data, memo),
                           kind=copy.deepcopy(parts.kind, memo))
    out = _replicate(node, parts, lambda v: memo[id(v)], {}, None)
    memo[id(node)] = out
    if node.__dict__:
        out.__dict__.update(copy.deepcopy(node.__dict__, memo))
    fn = getattr(node, "_bw", None)
    if fn is not None:
        out._backward = _rebound(fn, memo)


def _rebound(fn, memo):
    """A user's _backward closure over the copies of what it captured (its
    own node and operands, in memo), so that the copy's rule updates the
    copies; a function without a closure is kept."""
    cells = getattr(fn, "__closure__", None)
    if not cells:
        return fn
    new = tuple(types.CellType(copy.deepcopy(c.cell_contents, memo)) for c in cells)
    out = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__,
                             fn.__defaults__, new)
    out.__kwdefaults__ = fn.__kwdefaults__
    return out


def _unpickle(specs):
    """The graph that __reduce__ flattened, rebuilt on the current tape."""
    t = current_tape()
    built = []
    for parts, attrs in specs:
        built.append(_replicate(None, _Parts(*parts), built.__getitem__, attrs,
                                None, t))
    return built[-1]


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


# the rest, generated (codegen.py): + * ** and the math methods, recorded
# as micrograd does
install_operators(Value, micrograd_operators, slow_binary=_dropin_binary,
                  slow_unary=_dropin_unary)
