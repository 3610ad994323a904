"""A function traced once: its tape, its inputs' leaves, its output, and
the derivatives the tape's sweeps give at the traced point.

``Trace`` is what the functional API (functional.py) builds per call and
what ``ad.record`` (record.py) keeps and replays.  Each derivative is a
few lines over the sweeps:

    value_and_grad, vjp     one reverse sweep
    jvp                     one tangent (forward-mode) sweep
    hvp                     a tangent sweep, then a second-order sweep
    jacobian                reverse sweeps per output element, or tangent
                            sweeps per input element, whichever are fewer
    hessian                 one hvp per input element
"""
import itertools

import numpy as np

from . import _core
from .array import Array
from .pytree import as_leaf, flatten, unflatten
from .tape import DADJ, TAN, Tape, state
from .value import Value


def argnums_of(argnum):
    return (argnum,) if isinstance(argnum, int) else tuple(argnum)


def pick(argnum, results):
    """One result per argnum: the result itself for an int argnum."""
    return results[0] if isinstance(argnum, int) else tuple(results)


class Trace:
    """f run once at args on a tape of its own.  Every float and ndarray in
    the arguments `inputs` (argument positions) gets a leaf; derivatives are
    taken with respect to those in `argnum` (an int or a tuple).  With
    guards, every comparison f makes is recorded for replays to check."""

    def __init__(self, f, args, kwargs, argnum, name, inputs=None, guards=False):
        if not callable(f):
            raise TypeError(f"{name}: {f!r} is not callable")
        nargs = len(args)
        for k in argnums_of(argnum):
            if not -nargs <= k < nargs:
                raise TypeError(f"{name}: argnum {k}, but the function got "
                                f"{nargs} positional argument"
                                f"{'' if nargs == 1 else 's'}")
        self.name = name
        self.argnum = argnum
        self.argnums = [k % nargs for k in argnums_of(argnum)]
        self.inputs = sorted(set(self.argnums if inputs is None else inputs))
        self.tape = Tape()
        self.structures = {}     # argument position -> Structure
        self.leaves = {}         # argument position -> its leaf nodes
        self.outer = []          # enclosing tapes' nodes given as arguments
        if guards:
            self.tape.guards = []
        call_args = list(args)
        saved_no_grad, state.no_grad = state.no_grad, 0
        try:
            with self.tape.recording():
                for k in self.inputs:
                    values, st = flatten(args[k], f"{name}: argument {k}")
                    nodes = [self._leaf(kind, v)
                             for kind, v in zip(st.kinds, values)]
                    self.structures[k] = st
                    self.leaves[k] = nodes
                    call_args[k] = unflatten(st, nodes)
                self.out = f(*call_args, **kwargs)
        finally:
            state.no_grad = saved_no_grad
            state.refresh()

    def _leaf(self, kind, v):
        if isinstance(v, (Value, Array)):       # a derivative inside another
            self.outer.append(v)
            v = v._d
        return Value(float(v)) if kind == "float" else Array(v)

    def release(self):
        self.tape.release()

    # -- the output ------------------------------------------------------------

    def output_entry(self):
        """The output's entry on this tape, or None for a constant output."""
        out = self.out
        if isinstance(out, (Value, Array)) and out._t is self.tape:
            return out._i
        return None

    def output_value(self):
        """The output as it stands (after a replay too): a float or an
        ndarray."""
        out, i = self.out, self.output_entry()
        if isinstance(out, Value):
            if i is None:
                return out.data
            self.tape.flush()
            return self.tape._c.val[i]
        if isinstance(out, Array):
            return out.data.copy() if out.ndim else float(out.data)
        if isinstance(out, (list, tuple, dict)) or not _is_number(out):
            raise TypeError(f"{self.name}: the function returned "
                            f"{type(out).__name__}; it must return one float "
                            "or array")
        return np.array(out, dtype=np.float64) if np.ndim(out) else float(out)

    def scalar_output(self):
        """(entry or None, value) of a function that must return a scalar."""
        value = self.output_value()
        if np.size(value) != 1:
            raise TypeError(f"{self.name} needs a function with a scalar "
                            f"output; this one returned shape "
                            f"{np.shape(value)} (use jacobian or vjp)")
        return self.output_entry(), float(np.reshape(value, ()))

    # -- the leaves ------------------------------------------------------------

    def variables(self):
        """The leaves derivatives are taken with respect to, in order."""
        return list(itertools.chain.from_iterable(self.leaves[k]
                                                  for k in self.argnums))

    def read(self, reader):
        """pick(argnum, ...) of reader(leaf) in each argument's structure."""
        return pick(self.argnum, [
            unflatten(self.structures[k],
                      [as_leaf(kind, reader(node)) for kind, node in
                       zip(self.structures[k].kinds, self.leaves[k])])
            for k in self.argnums])

    def zeros(self):
        return self.read(lambda node: np.zeros(np.shape(node._d)))

    def scratch_of(self, node, which):
        view = self.tape.scratch(node._i, which)
        return np.zeros(np.shape(node._d)) if view is None else view.copy()

    def directions(self, vector):
        """The tangent seed of every variable from vector (structured like
        the differentiated arguments: one per argnum for a tuple argnum)."""
        vectors = [vector] if isinstance(self.argnum, int) else list(vector)
        if len(vectors) != len(self.argnums):
            raise ValueError(f"{self.name}: {len(vectors)} vectors for "
                             f"{len(self.argnums)} arguments")
        seeds = []
        for k, v in zip(self.argnums, vectors):
            st = self.structures[k]
            values, vst = flatten(v, f"{self.name}: the vector for argument {k}")
            if vst.node != st.node or vst.shapes != st.shapes:
                raise ValueError(f"{self.name}: the vector for argument {k} "
                                 f"has shapes {vst.shapes}, the argument "
                                 f"{st.shapes}")
            seeds += [np.asarray(x._d if isinstance(x, (Value, Array)) else x,
                                 dtype=np.float64) for x in values]
        return seeds

    # -- sweeps ------------------------------------------------------------------

    def reverse(self, idx, seed):
        """Gradients of the variables for adjoint seed at entry idx."""
        for node in self.variables():
            node.grad = 0.0
        self.tape.backward([idx], [seed], _core.SWEEP_ACCUM)
        return self.read(lambda node: node.grad)

    def tangent(self, seeds):
        self.tape.tangent([n._i for n in self.variables()], seeds)

    # -- derivatives at the traced point -----------------------------------------

    def value_and_grad(self):
        idx, value = self.scalar_output()
        if idx is None:
            return value, self.zeros()
        return value, self.reverse(idx, 1.0)

    def vjp(self, cotangent):
        value = self.output_value()
        seed = np.asarray(cotangent._d if isinstance(cotangent, (Value, Array))
                          else cotangent, dtype=np.float64)
        if seed.shape != np.shape(value):
            raise ValueError(f"{self.name}: the cotangent has shape "
                             f"{seed.shape}, the output {np.shape(value)}")
        idx = self.output_entry()
        if idx is None:
            return self.zeros()
        return self.reverse(idx, seed if seed.ndim else float(seed))

    def jvp(self, vector):
        seeds = self.directions(vector)
        value = self.output_value()
        idx = self.output_entry()
        if idx is None:
            return value, as_leaf("float" if np.ndim(value) == 0 else "array",
                                  np.zeros(np.shape(value)))
        self.tangent(seeds)
        tangent = self.scratch_of(self.out, TAN)
        return value, float(tangent) if np.ndim(value) == 0 else tangent

    def hvp(self, vector):
        idx, _ = self.scalar_output()
        seeds = self.directions(vector)
        if idx is None:
            return self.zeros()
        self.tangent(seeds)
        self.tape.second_order([idx], [1.0])
        return self.read(lambda node: self.scratch_of(node, DADJ))

    def single_variable(self):
        if len(self.argnums) != 1 or self.structures[self.argnums[0]].node is not None:
            raise TypeError(f"{self.name}: the argument must be one float or "
                            "ndarray (use jvp, vjp or hvp for nested arguments)")
        k = self.argnums[0]
        return self.leaves[k][0], self.structures[k].shapes[0]

    def jacobian(self):
        leaf, xshape = self.single_variable()
        value = self.output_value()
        oshape = np.shape(value)
        m, n = int(np.prod(oshape)), int(np.prod(xshape))
        jac = np.zeros((m, n))
        idx = self.output_entry()
        if idx is not None and m <= n:
            for r in range(m):
                seed = np.zeros(m)
                seed[r] = 1.0
                jac[r] = np.reshape(self.reverse(idx, seed.reshape(oshape)
                                                 if oshape else 1.0), -1)
        elif idx is not None:
            for k in range(n):
                seed = np.zeros(n)
                seed[k] = 1.0
                self.tangent([seed.reshape(xshape)])
                jac[:, k] = np.reshape(self.scratch_of(self.out, TAN), -1)
        jac = jac.reshape(oshape + xshape)
        return float(jac) if jac.ndim == 0 else jac

    def hessian(self):
        leaf, xshape = self.single_variable()
        idx, _ = self.scalar_output()
        n = int(np.prod(xshape))
        hess = np.zeros((n, n))
        if idx is not None:
            for k in range(n):
                seed = np.zeros(n)
                seed[k] = 1.0
                self.tangent([seed.reshape(xshape)])
                self.tape.second_order([idx], [1.0])
                hess[:, k] = np.reshape(self.scratch_of(leaf, DADJ), -1)
        hess = hess.reshape(xshape + xshape)
        return float(hess) if hess.ndim == 0 else hess


def _is_number(x):
    try:
        arr = np.asarray(x)
    except Exception:
        return False
    return arr.dtype.kind in "biuf"
