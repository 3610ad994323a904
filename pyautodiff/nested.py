"""A derivative taken while another derivative or a recording traces its
function: ``ad.grad(ad.grad(f))``, ``make_vjp`` inside ``make_jvp``, a
function that closes over the enclosing one's variables, ``ad.record(ad.grad
(f), x0)``.

Its function is traced on the tape already being recorded, not on one of
its own, and its derivative is computed by derivatives.py's sweeps, which
record it there too: the result is Values and Arrays of that tape, which
the enclosing derivative differentiates again (in C, or here if it is
itself nested), to any order.

Each differentiated argument gets a fresh entry of its own -- a leaf for a
plain number, a copy (x * 1) of an enclosing variable -- and the
derivative is taken with respect to those entries only.  So the levels'
perturbations never mix: in d/dx (x * d/dy (x + y)) the inner derivative
sees x as a constant (x comes before its y), and its result 1 has no
derivative in x.
"""
import numpy as np

from . import derivatives
from .array import Array, concatenate, stack
from .pytree import flatten, holds_complex, lift_object_arrays, unflatten
from ._core import TapeError
from .detach import DIFFERENTIATING
from .tape_state import state
from .trace import (Trace, call_traced, complex_like, complex_result_error, pick,
                    positions)
from .value import Traced, Value


def nesting():
    """Whether a derivative or recording is tracing its function here, so
    that a derivative taken now must be recorded on its tape."""
    t = state.rec
    return t is not None and t in DIFFERENTIATING and not t.closed


class NestedTrace(Trace):
    """f traced on the tape of the derivative under way (see the module's
    docstring); the derivatives of Trace, as Values and Arrays there."""

    def __init__(self, f, args, kwargs, argnum, name, inputs=None):
        self.name = name
        self.argnum, self.argnums, self.inputs = positions(f, args, argnum, name,
                                                           inputs)
        self.tape = t = state.rec
        self.structures, self.leaves, self.outer = {}, {}, []
        call_args = list(args)
        for k in self.inputs:
            values, st = flatten(args[k], f"{name}: argument {k}")
            nodes = [self._variable(t, kind, v) for kind, v in zip(st.kinds, values)]
            self.structures[k] = st
            self.leaves[k] = nodes
            call_args[k] = unflatten(st, nodes)
        self.out = lift_object_arrays(call_traced(f, call_args, kwargs))

    @staticmethod
    def _variable(t, kind, v):
        """A fresh entry for one differentiated number or array."""
        if isinstance(v, (Value, Array)):
            if v._t is not t and v._t in DIFFERENTIATING and not v._t.closed:
                raise NotImplementedError(
                    "a derivative of a value traced by another derivative "
                    "than the one under way (a vjp function kept from an "
                    "earlier trace, say) is not supported")
            return t.adopt(v) * 1.0
        return Traced(float(v)) if kind == "float" else Array(v)

    def release(self):
        pass            # the tape is the enclosing derivative's

    def __del__(self):
        pass

    # -- results ------------------------------------------------------------

    def output_value(self):
        return self.out

    def _in_structure(self, results):
        """Per variable result (a node, or None for zero) in the
        differentiated arguments' structure."""
        results = iter(results)
        return pick(self.argnum, [
            unflatten(self.structures[k],
                      [_or_zeros(next(results), node) for node in self.leaves[k]],
                      conjugate=True)
            for k in self.argnums])

    def _scalar_node(self):
        leaves, st = self.outputs()
        if holds_complex(st.node):
            raise complex_result_error(self.name)
        if st.node is not None or len(leaves) != 1 or np.size(_data(leaves[0])) != 1:
            got = "a " + type(self.out).__name__ if st.node is not None \
                else f"shape {np.shape(_data(leaves[0]))}"
            raise TypeError(f"{self.name} needs a function with a scalar output "
                            f"(for others use jacobian or vjp); this one returned {got}")
        out = leaves[0]
        if isinstance(out, Array) and out._d.shape != ():
            out = out.reshape(())
        return out

    # -- derivatives --------------------------------------------------------

    def _here(self):
        """The derivatives below record on the enclosing derivative's tape:
        only while it traces its function (a vjp function kept past it
        would otherwise find nothing to differentiate, and give zeros)."""
        if self.tape.closed or state.rec is not self.tape:
            raise TapeError(
                f"{self.name}: this derivative was taken inside another one, "
                "and can be used only while that one traces its function "
                "(not after it returned)")

    def value_and_grad(self):
        self._here()
        out = self._scalar_node()
        return out, self._in_structure(
            derivatives.reverse([out], [1.0], self.variables()))

    def vjp(self, cotangent):
        self._here()
        leaves, st = self.outputs()
        seeds, cst = flatten(complex_like(cotangent, st), f"{self.name}: the cotangent",
                             conjugate=True)
        if cst.node != st.node or cst.shapes != [np.shape(_data(x)) for x in leaves]:
            raise ValueError(f"{self.name}: the cotangent has shapes "
                             f"{cst.shapes}, the result {st.shapes}")
        return self._in_structure(derivatives.reverse(leaves, seeds, self.variables()))

    def jvp(self, vector):
        self._here()
        leaves, st = self.outputs()
        tangents = derivatives.tangent(self.variables(), self.vector_leaves(vector), leaves)
        return self.out, unflatten(st, [_or_zeros(tk, x) for tk, x in zip(tangents, leaves)])

    def _gradient_nodes(self):
        out = self._scalar_node()
        return [_or_zeros(g, w) for g, w in
                zip(derivatives.reverse([out], [1.0], self.variables()),
                    self.variables())]

    def hvp(self, vector):
        self._here()
        self.refuse_complex("hvp")
        grads = self._gradient_nodes()
        return self._in_structure(
            derivatives.tangent(self.variables(), self.vector_leaves(vector), grads))

    def _columns(self, outs):
        """d(outs)/d(variables), one tangent sweep per variable element:
        per element of the variables, the outputs' tangents flattened and
        joined (a node of shape (M,), or None where nothing moves)."""
        nodes, kinds, shapes = self._plain_variables(self.name, complex_ok=True)
        columns = []
        for k, (node, shape) in enumerate(zip(nodes, shapes)):
            for j in range(int(np.prod(shape))):
                seeds = [None] * len(nodes)
                if shape == ():
                    seeds[k] = 1.0
                else:
                    unit = np.zeros(int(np.prod(shape)))
                    unit[j] = 1.0
                    seeds[k] = unit.reshape(shape)
                ts = derivatives.tangent(nodes, seeds, outs)
                columns.append(_joined([_or_zeros(t, o) for t, o in zip(ts, outs)]))
        return columns, kinds, shapes

    def _matrix(self, outs, oshapes, okinds):
        columns, kinds, shapes = self._columns(outs)
        M = sum(int(np.prod(s)) for s in oshapes)
        N = len(columns)
        if N == 0 or M == 0:
            matrix = np.zeros((M, N))
        elif any(isinstance(c, Array) for c in columns):
            matrix = stack(columns, axis=1)
        else:
            matrix = np.stack([np.asarray(c, dtype=np.float64) for c in columns], axis=1)
        blocks = self._blocks(matrix, list(zip(okinds, oshapes)), list(zip(kinds, shapes)))
        return [pick(self.argnum, self.complex_columns(line)) for line in blocks]

    def scalar_block(self, block):
        return block.reshape(()) if isinstance(block, Array) else float(block)

    def jacobian(self):
        self._here()
        self.refuse_complex_result()
        leaves, st = self.outputs()
        oshapes = [tuple(np.shape(_data(x))) for x in leaves]
        per_leaf = self._matrix(list(leaves), oshapes, st.kinds)
        return unflatten(st, per_leaf) if st.node is not None else per_leaf[0]

    def hessian(self):
        self._here()
        grads = self._gradient_nodes()
        _, kinds, shapes = self._plain_variables("hessian")
        per_leaf = self._matrix(grads, shapes, kinds)
        return pick(self.argnum, per_leaf)


def _data(x):
    return x._d if isinstance(x, (Value, Array)) else x


def _or_zeros(result, like):
    """A derivative's result, or zeros of like's shape where it is None."""
    if result is not None:
        return result
    shape = np.shape(_data(like))
    return 0.0 if isinstance(like, Value) or (not isinstance(like, Array) and shape == ()) \
        else np.zeros(shape)


def _joined(parts):
    """Nodes and numbers flattened and joined into one vector."""
    flat = [p.reshape(-1) if isinstance(p, Array) else
            (p + Array(np.zeros(1), _variable=False)) if isinstance(p, Value) else
            np.reshape(np.asarray(p, dtype=np.float64), -1) for p in parts]
    if not any(isinstance(p, Array) for p in flat):
        return np.concatenate(flat)
    return concatenate([p if isinstance(p, Array) else Array(p, _variable=False)
                        for p in flat])
