"""A pure-Python reference scalar autodiff engine with micrograd's semantics.

It is the "versus pure Python" baseline of ``python -m pyautodiff`` (the
demo) and of ``python -m bench``: as fast as plain Python allows without
tricks, so a speedup measured against it is honest.  ``MLP`` is micrograd's
network on it.  Two choices differ from micrograd for speed, not for
results:

* No closure per node.  Each node keeps its op label, operands and one
  auxiliary number; ``backward()`` dispatches on the label in one loop.
  Allocating a closure per node costs about as much as the node itself.
* The topological sort is iterative, so a 100k-op chain needs no recursion.

Gradients accumulate as in micrograd: ``backward()`` sets the root's grad
to 1 and adds into every node, including interior nodes whose grads were left
over from an earlier call.  A first backward gives micrograd's numbers; a
repeated one does too where the graphs have the same nodes, but here ``-``,
``/`` and ``neg`` are one node each (micrograd records two), so the leftover
interior grads they re-propagate differ.
"""
import math

from ..micrograd import nn


class Value:
    """Stores a single scalar value and its gradient."""

    __slots__ = ("data", "grad", "_prev", "_op", "_aux")

    def __init__(self, data, _children=(), _op="", _aux=None):
        self.data = data
        self.grad = 0
        self._prev = _children  # operands, in order (a tuple, not a set)
        self._op = _op          # micrograd's label; backward() dispatches on it
        self._aux = _aux        # the exponent of '**'

    # primitives: each one records a node; backward() knows its rule

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data + other.data, (self, other), "+")

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data * other.data, (self, other), "*")

    def __sub__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data - other.data, (self, other), "-")

    def __truediv__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data / other.data, (self, other), "/")

    def __pow__(self, other):
        assert isinstance(other, (int, float)), "only supporting int/float powers for now"
        return Value(self.data ** other, (self,), f"**{other}", other)

    def __neg__(self):
        return Value(-self.data, (self,), "neg")

    def relu(self):
        return Value(0 if self.data < 0 else self.data, (self,), "ReLU")

    def tanh(self):
        return Value(math.tanh(self.data), (self,), "tanh")

    def exp(self):
        return Value(math.exp(self.data), (self,), "exp")

    def log(self):
        return Value(math.log(self.data), (self,), "log")

    # derived: number on the left

    def __radd__(self, other):  # other + self
        return self + other

    def __rmul__(self, other):  # other * self
        return self * other

    def __rsub__(self, other):  # other - self
        return Value(other) - self

    def __rtruediv__(self, other):  # other / self
        return Value(other) / self

    def backward(self):
        topo = _topological_order(self)
        self.grad = 1
        # One loop, one branch per op, most frequent first.  The local
        # derivative expressions follow micrograd's so the numbers match.
        for v in reversed(topo):
            op = v._op
            if not op:
                continue
            g = v.grad
            if op == "*":
                a, b = v._prev
                a.grad += b.data * g
                b.grad += a.data * g
            elif op == "+":
                a, b = v._prev
                a.grad += g
                b.grad += g
            elif op == "ReLU":
                v._prev[0].grad += (v.data > 0) * g
            elif op == "tanh":
                v._prev[0].grad += (1 - v.data ** 2) * g
            elif op == "-":
                a, b = v._prev
                a.grad += g
                b.grad -= g
            elif op == "/":
                a, b = v._prev
                a.grad += g / b.data
                b.grad -= g * v.data / b.data  # d(a/b)/db = -(a/b)/b
            elif op == "neg":
                v._prev[0].grad -= g
            elif op == "exp":
                v._prev[0].grad += v.data * g
            elif op == "log":
                a = v._prev[0]
                a.grad += g / a.data
            else:  # '**k'
                a = v._prev[0]
                k = v._aux
                a.grad += (k * a.data ** (k - 1)) * g

    def __repr__(self):
        return f"Value(data={self.data}, grad={self.grad})"


_OPERANDS_DONE = object()  # stack marker: the node below it can be emitted


def _topological_order(root):
    """Nodes reachable from root, every node after its operands.

    Depth-first with an explicit stack instead of recursion.  A visited node
    is pushed back under a marker; its operands go on top, so by the time the
    marker is popped they have all been emitted.
    """
    topo = []
    visited = set()
    stack = [root]
    push, pop, mark = stack.append, stack.pop, visited.add
    while stack:
        v = pop()
        if v is _OPERANDS_DONE:
            topo.append(pop())
        elif v not in visited:
            mark(v)
            push(v)
            push(_OPERANDS_DONE)
            for child in v._prev:
                if child not in visited:
                    push(child)
    return topo


# micrograd's nn on this engine: pyautodiff.micrograd.nn's network code
# (micrograd's constructors, order of random draws and of arithmetic) with
# this Value, so a seeded model has the same weights and does the same
# arithmetic on every engine.

class Neuron(nn.Neuron):
    value_type = Value


class Layer(nn.Layer):
    neuron_type = Neuron


class MLP(nn.MLP):
    layer_type = Layer


Module = nn.Module
