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

from . import _core, scipy_own
from .array import Array, _holds_traced
from .complex_array import complex_value
from .pytree import (as_leaf, flatten, holds_complex, is_complex_node,
                     lift_object_arrays, unflatten)
from .detach import DIFFERENTIATING, differentiated
from .tape import Tape
from .tape_nesting import thread_hooks
from .tape_state import state
from .tape_sweeps import DADJ, TAN
from .value import Traced, Value


def checked(f, argnum, name):
    """argnum as the transforms use it, after checking that f is callable
    and that argnum is an int or a tuple of ints (NumPy integers count;
    a bool, a float or a string is a mistake, not an argument position)."""
    if not callable(f):
        raise TypeError(f"ad.{name} needs a callable, got {f!r}")
    if _is_position(argnum):
        return int(argnum)
    if isinstance(argnum, (tuple, list)) and all(_is_position(k) for k in argnum):
        return tuple(int(k) for k in argnum)
    raise TypeError(f"{name}: argnum must be an int or a tuple of ints, "
                    f"got {argnum!r}")


def call_traced(f, args, kwargs):
    """f(*args, **kwargs) on traced arguments, recorded on the current tape;
    values of it that other threads computed are brought onto that tape
    (threads.py's lift).  pyautodiff's own error that NumPy reported as
    one of its own (a DetachError raised by a traced value written into an
    ndarray element, which NumPy reports as "setting an array element with
    a sequence"), and SciPy's Python functions failing deep in their code
    on traced values, are raised as what they are (scipy_own.reported)."""
    try:
        out = f(*args, **kwargs)
    except (TypeError, ValueError) as error:
        instead = scipy_own.reported(error, _holds_traced)
        if instead is None or instead is error:
            raise
        raise instead from error
    return thread_hooks.lift(out, state.rec)


def _is_position(k):
    return isinstance(k, (int, np.integer)) and not isinstance(k, bool)


def refuse_variables(leaves, message):
    """NotImplementedError(message) where one of leaves (a cotangent, a
    vector, a replay's argument) is a variable of an enclosing derivative:
    what is computed from its plain value would silently cut off every
    path through it."""
    if any(differentiated(x) for x in leaves):
        raise NotImplementedError(message)


def _through(name, what):
    return (f"{name}: the {what} is a variable of an enclosing derivative or "
            f"recording; derivatives through a {what} are not supported yet")


def argnums_of(argnum):
    return (argnum,) if isinstance(argnum, int) else tuple(argnum)


def positions(f, args, argnum, name, inputs=None):
    """(argnum, the differentiated argument positions, the positions that
    get leaves: inputs, by default those) after checking them against
    f's arguments."""
    argnum = checked(f, argnum, name)
    nargs = len(args)
    for k in argnums_of(argnum):
        if not -nargs <= k < nargs:
            raise TypeError(f"{name}: argnum {k}, but the function got "
                            f"{nargs} positional argument"
                            f"{'' if nargs == 1 else 's'}")
    argnums = [k % nargs for k in argnums_of(argnum)]
    return argnum, argnums, sorted(set(argnums if inputs is None else inputs))


def complex_result_error(name):
    """What a derivative that needs a real scalar result says of a complex
    one (autograd's grad refuses it too)."""
    return TypeError(f"{name} only applies to real scalar-output functions; "
                     "this one returned a complex number (differentiate "
                     "np.real, np.imag or np.abs of it, or use "
                     "pyautodiff.autograd.holomorphic_grad)")


def pick(argnum, results):
    """One result per argnum: the result itself for an int argnum."""
    return results[0] if isinstance(argnum, int) else tuple(results)


class Trace:
    """f run once at args on a tape of its own.  Every float and ndarray in
    the arguments `inputs` (argument positions) gets a leaf; derivatives are
    taken with respect to those in `argnum` (an int or a tuple).  With
    guards, every comparison f makes is recorded for replays to check."""

    _variables = None            # variables(), once asked for
    tape = None                  # until made (an argnum may be refused first)

    def __init__(self, f, args, kwargs, argnum, name, inputs=None, guards=False):
        self.name = name
        self.argnum, self.argnums, self.inputs = positions(f, args, argnum, name,
                                                           inputs)
        self.tape = Tape()
        DIFFERENTIATING.add(self.tape)
        self.structures = {}     # argument position -> Structure
        self.leaves = {}         # argument position -> its leaf nodes
        self.outer = []          # enclosing tapes' nodes given as arguments
        if guards:
            self.tape.guards = []
        call_args = list(args)
        saved_no_grad, state.no_grad = state.no_grad, 0
        thread_hooks.tracing(self.tape)
        try:
            with self.tape.recording():
                for k in self.inputs:
                    values, st = flatten(args[k], f"{name}: argument {k}")
                    nodes = [self._leaf(kind, v)
                             for kind, v in zip(st.kinds, values)]
                    self.structures[k] = st
                    self.leaves[k] = nodes
                    call_args[k] = unflatten(st, nodes)
                self.out = lift_object_arrays(call_traced(f, call_args, kwargs))
        finally:
            thread_hooks.release_joined(self.tape)
            state.no_grad = saved_no_grad
            state.refresh()

    def _leaf(self, kind, v):
        if isinstance(v, (Value, Array)):       # a derivative inside another
            self.outer.append(v)
            v = v._d
        return Traced(float(v)) if kind == "float" else Array(v)

    def release(self):
        self.tape.release(keep_grads=False)

    def second_order_rules(self, builtin=False):
        """Whether every op on the tape has rules of second order (the C
        second-order sweep's): not a custom op's first-order rules; with
        builtin, the library's own rules only (a custom op's differentiated
        vjp may hold ops that have no jvp)."""
        return all(rule.second_order and not (builtin and rule.custom)
                   for rule in self.tape.externs.values())

    def __del__(self):
        # A trace kept past its call (vjp's vjp_fn, a recording) owns its
        # tape, whose nodes refer back to it: free them with the trace, so
        # that no cycle waits for the collector.
        if self.tape is not None and not self.tape.closed:
            self.tape.discard()

    # -- the output ------------------------------------------------------------
    # The result may be a float, an array, a Value or Array, or lists,
    # tuples and dicts of them; flattened, each leaf is an entry of this
    # tape or a constant.

    def outputs(self):
        """(leaves, Structure) of the result."""
        if not hasattr(self, "_outputs"):
            self._outputs = flatten(self.out, f"{self.name}: the function's result")
        return self._outputs

    def entry_of(self, leaf):
        """leaf's entry on this tape, or None for a constant."""
        if isinstance(leaf, (Value, Array)) and leaf._t is self.tape:
            return leaf._i
        return None

    def output_entry(self):
        """The entry of a single-leaf result, or None for a constant."""
        leaves, _ = self.outputs()
        return self.entry_of(leaves[0]) if len(leaves) == 1 else None

    def _leaf_value(self, leaf):
        if isinstance(leaf, Value):
            i = self.entry_of(leaf)
            if i is None:
                return leaf._d
            self.tape.flush()
            return self.tape._c.val[i]
        if isinstance(leaf, Array):
            return leaf.data.copy() if leaf.ndim else float(leaf.data)
        return leaf

    def output_value(self):
        """The result as it stands (after a replay too), with plain floats
        and ndarrays in its structure."""
        leaves, st = self.outputs()
        return unflatten(st, [self._leaf_value(leaf) for leaf in leaves])

    def scalar_output(self, needs=None):
        """(entry or None, value) of a function that must return a scalar;
        else TypeError: `needs` says who needs one (the transform's name
        and what to use instead by default)."""
        out = self.out
        if out.__class__ is Traced and out._t is self.tape:    # the common cases
            self.tape.flush()
            return out._i, self.tape._c.val[out._i]
        if out.__class__ is Array and out._t is self.tape and out._d.size == 1:
            return out._i, out._d.item()
        leaves, st = self.outputs()
        if holds_complex(st.node):
            raise complex_result_error(self.name)
        value = self._leaf_value(leaves[0]) if len(leaves) == 1 else None
        if st.node is not None or np.size(value) != 1:
            got = f"shape {np.shape(value)}" if st.node is None \
                else "a " + type(self.out).__name__
            raise TypeError((needs or f"{self.name} needs a function with a "
                             "scalar output (for others use jacobian or vjp)")
                            + f"; this one returned {got}")
        return self.entry_of(leaves[0]), float(np.reshape(value, ()))

    # -- the leaves ------------------------------------------------------------

    def variables(self):
        """The leaves derivatives are taken with respect to, in order."""
        if self._variables is None:
            self._variables = list(itertools.chain.from_iterable(
                self.leaves[k] for k in self.argnums))
        return self._variables

    def read(self, reader):
        """pick(argnum, ...) of reader(leaf) in each argument's structure."""
        if isinstance(self.argnum, int) and \
                self.structures[self.argnums[0]].node is None:    # the common case
            k = self.argnums[0]
            return as_leaf(self.structures[k].kinds[0], reader(self.leaves[k][0]))
        return pick(self.argnum, [
            unflatten(self.structures[k],
                      [as_leaf(kind, reader(node)) for kind, node in
                       zip(self.structures[k].kinds, self.leaves[k])],
                      conjugate=True)
            for k in self.argnums])

    def zeros(self):
        return self.read(lambda node: np.zeros(np.shape(node._d)))

    def scratch_of(self, node, which, copy=True):
        """node's scratch from the last sweep (zeros where it reached no
        scratch); with copy False, a view valid until the next sweep."""
        view = self.tape.scratch(node._i, which)
        return np.zeros(np.shape(node._d)) if view is None else \
            view.copy() if copy else view

    def vector_leaves(self, vector):
        """vector's leaves, one per variable, after checking that it is
        structured like the differentiated arguments (one per argnum for a
        tuple argnum)."""
        vectors = [vector] if isinstance(self.argnum, int) else list(vector)
        if len(vectors) != len(self.argnums):
            raise ValueError(f"{self.name}: {len(vectors)} vectors for "
                             f"{len(self.argnums)} arguments")
        leaves = []
        for k, v in zip(self.argnums, vectors):
            st = self.structures[k]
            values, vst = flatten(v, f"{self.name}: the vector for argument {k}")
            if vst.node != st.node or vst.shapes != st.shapes:
                raise ValueError(f"{self.name}: the vector for argument {k} "
                                 "must have the argument's structure and "
                                 f"shapes ({_describe(st)}), not "
                                 f"{_describe(vst)}")
            leaves += values
        return leaves

    def directions(self, vector):
        """The tangent seed of every variable from vector, as plain arrays."""
        values = self.vector_leaves(vector)
        refuse_variables(values, _through(self.name, "vector"))
        return [np.asarray(x._d if isinstance(x, (Value, Array)) else x,
                           dtype=np.float64) for x in values]

    # -- sweeps ------------------------------------------------------------------

    def sweep(self, idx, seeds):
        """The variables' gradients, in variables() order, for adjoint seeds
        at entries idx (the leaves an enclosing tape lent are constants
        here)."""
        variables = self.variables()
        self.tape.zero_grads(variables)
        self.tape.backward(list(idx), list(seeds), _core.SWEEP_LEAVES,
                           route_imports=False)
        return self.tape.take_grads(variables)

    def reverse(self, idx, seeds):
        """sweep(idx, seeds) in the differentiated arguments' structure."""
        grads = dict(zip(map(id, self.variables()), self.sweep(idx, seeds)))
        return self.read(lambda node: grads[id(node)])

    def tangent(self, seeds):
        self.tape.tangent([n._i for n in self.variables()], seeds)

    def lane_seeds(self, shapes, directions):
        """The seeds of one tangent sweep along every row of directions (at
        most LANES rows, each flat over the variables' elements: the
        variables of these shapes, one per differentiated argument)."""
        parts = np.split(directions, np.cumsum([int(np.prod(s)) for s in shapes])[:-1],
                         axis=1)
        return [np.ascontiguousarray(p).reshape((len(directions),) + tuple(s))
                for p, s in zip(parts, shapes)]

    def tangent_lanes(self, seeds, lanes):
        """One tangent sweep of lanes directions, seeds from lane_seeds."""
        self.tape.tangent([n._i for n in self.variables()], seeds, lanes=lanes)

    def lane_columns(self, out, lo, lanes, read):
        """out[:, lo + l] = read() in each lane l of the last tangent sweep."""
        try:
            for lane in range(lanes):
                self.tape.select_lane(lane)
                out[:, lo + lane] = read()
        finally:
            self.tape.select_lane(0)

    # -- derivatives at the traced point -----------------------------------------

    def value_and_grad(self):
        idx, value = self.scalar_output()
        if idx is None:
            return value, self.zeros()
        return value, self.reverse([idx], [1.0])

    def vjp(self, cotangent):
        """cotangent (structured like the result) times the Jacobian."""
        leaves, st = self.outputs()
        seeds, cst = flatten(complex_like(cotangent, st), f"{self.name}: the cotangent",
                             conjugate=True)
        refuse_variables(seeds, _through(self.name, "cotangent"))
        if cst.node != st.node or cst.shapes != [tuple(np.shape(self._leaf_value(leaf)))
                                                  for leaf in leaves]:
            raise ValueError(f"{self.name}: the cotangent has shapes "
                             f"{cst.shapes}, the result {st.shapes}")
        idx, vals = [], []
        for leaf, seed in zip(leaves, seeds):
            i = self.entry_of(leaf)
            if i is not None:
                idx.append(i)
                vals.append(np.asarray(getattr(seed, "_d", seed), dtype=np.float64)
                            if np.ndim(getattr(seed, "_d", seed)) else float(getattr(seed, "_d", seed)))
        if not idx:
            return self.zeros()
        return self.reverse(idx, vals)

    def jvp(self, vector):
        """(result, Jacobian times vector), the tangent structured like the
        result."""
        seeds = self.directions(vector)
        leaves, st = self.outputs()
        value = self.output_value()
        if any(self.entry_of(leaf) is not None for leaf in leaves):
            self.tangent(seeds)
        tangents = [as_leaf(kind, np.zeros(np.shape(self._leaf_value(leaf)))
                            if self.entry_of(leaf) is None
                            else self.scratch_of(leaf, TAN))
                    for kind, leaf in zip(st.kinds, leaves)]
        return value, unflatten(st, tangents)

    def hvp(self, vector):
        self.refuse_complex("hvp")
        idx, _ = self.scalar_output()
        seeds = self.directions(vector)
        if idx is None:
            return self.zeros()
        self.tangent(seeds)
        self.tape.second_order([idx], [1.0])
        return self.read(lambda node: self.scratch_of(node, DADJ))

    def refuse_complex(self, what):
        """TypeError where a differentiated argument is complex: a second
        derivative of a function of complex numbers has no convention
        (autograd's hessian and hessian_vector_product raise too)."""
        for k in self.argnums:
            if holds_complex(self.structures[k].node):
                raise TypeError(
                    f"{self.name}: argument {k} is complex: {what} with "
                    "respect to complex numbers is not supported (a second "
                    "derivative has no complex convention; autograd's "
                    "hessian raises too); pass the real and imaginary parts "
                    "as two real arguments (f(x + 1j * y)), or take grad of "
                    "a real function of grad")

    def _plain_variables(self, what, complex_ok=False):
        """The variables, one float or ndarray per differentiated argument
        (with complex_ok, a complex argument's two parts): (leaf nodes,
        kinds, shapes)."""
        nodes, kinds, shapes = [], [], []
        for k in self.argnums:
            st = self.structures[k]
            if complex_ok and is_complex_node(st.node):
                nodes += self.leaves[k]
                kinds += st.kinds
                shapes += st.shapes
                continue
            if holds_complex(st.node):
                self.refuse_complex(what)
            if st.node is not None:
                raise TypeError(f"{self.name}: argument {k} must be one float "
                                f"or ndarray for {what} (use jvp, vjp or hvp "
                                "for nested arguments)")
            nodes.append(self.leaves[k][0])
            kinds.append(st.kinds[0])
            shapes.append(st.shapes[0])
        return nodes, kinds, shapes

    def _blocks(self, matrix, rows, cols):
        """matrix cut into blocks: rows and cols are (kind, shape) lists; a
        block is a float where both sides are floats."""
        out, r0 = [], 0
        for rkind, rshape in rows:
            m = int(np.prod(rshape))
            line, c0 = [], 0
            for ckind, cshape in cols:
                n = int(np.prod(cshape))
                block = matrix[r0:r0 + m, c0:c0 + n].reshape(rshape + cshape)
                line.append(self.scalar_block(block) if rkind == ckind == "float"
                            else block)
                c0 += n
            out.append(line)
            r0 += m
        return out

    def scalar_block(self, block):
        """A block of one element, between float arguments and results."""
        return float(block)

    def complex_columns(self, line):
        """A line of Jacobian blocks, one per variable, with each complex
        argument's two (its parts') read as one: the gradient's b_x - i b_y."""
        out, blocks = [], iter(line)
        for k in self.argnums:
            block = next(blocks)
            if is_complex_node(self.structures[k].node):
                block = complex_value(block, -next(blocks))
            out.append(block)
        return out

    def refuse_complex_result(self):
        if holds_complex(self.outputs()[1].node):
            raise TypeError(
                f"{self.name} of a function with a complex result is not "
                "defined (autograd's jacobian fails there too); take it of "
                "np.real and np.imag of the result")

    def jacobian(self):
        """Per result leaf, d(leaf)/d(argument) of shape leaf.shape +
        argument.shape (a tuple over a tuple argnum), in the result's
        structure; with respect to a complex argument, each row is a
        gradient (autograd's convention)."""
        self.refuse_complex_result()
        nodes, kinds, shapes = self._plain_variables("jacobian", complex_ok=True)
        leaves, st = self.outputs()
        oshapes = [tuple(np.shape(self._leaf_value(leaf))) for leaf in leaves]
        sizes = [int(np.prod(s)) for s in shapes]
        osizes = [int(np.prod(s)) for s in oshapes]
        M, N = sum(osizes), sum(sizes)
        jac = np.zeros((M, N))
        entries = [self.entry_of(leaf) for leaf in leaves]
        if any(e is not None for e in entries):
            if M <= N:                              # one reverse sweep per row
                row = 0
                for e, oshape, m in zip(entries, oshapes, osizes):
                    for r in range(m):
                        if e is not None:
                            seed = np.zeros(m)
                            seed[r] = 1.0
                            grads = self.sweep([e], [seed.reshape(oshape)
                                                     if oshape else 1.0])
                            jac[row] = np.concatenate([np.reshape(g, -1)
                                                       for g in grads])
                        row += 1
            else:                                   # a tangent per column
                for lo, lanes in lane_batches(N):
                    self.tangent_lanes(self.lane_seeds(shapes, _units(N, lo, lanes)), lanes)
                    self.lane_columns(jac, lo, lanes, lambda: np.concatenate([
                        np.zeros(m) if e is None else
                        np.reshape(self.scratch_of(leaf, TAN), -1)
                        for e, leaf, m in zip(entries, leaves, osizes)]))
        blocks = self._blocks(jac, list(zip(st.kinds, oshapes)),
                              list(zip(kinds, shapes)))
        per_leaf = [pick(self.argnum, self.complex_columns(line)) for line in blocks]
        return unflatten(st, per_leaf) if st.node is not None else per_leaf[0]

    def hessian(self):
        """The exact Hessian: shape x.shape + x.shape, or nested tuples of
        blocks over a tuple argnum."""
        nodes, kinds, shapes = self._plain_variables("hessian")
        idx, _ = self.scalar_output()
        sizes = [int(np.prod(s)) for s in shapes]
        N = sum(sizes)
        hess = np.zeros((N, N))
        if idx is not None:
            for lo, lanes in lane_batches(N):
                self.tangent_lanes(self.lane_seeds(shapes, _units(N, lo, lanes)), lanes)
                self.tape.second_order([idx], [1.0])
                self.lane_columns(hess, lo, lanes, lambda: np.concatenate(
                    [np.reshape(self.scratch_of(n, DADJ), -1) for n in nodes]))
        blocks = self._blocks(hess, list(zip(kinds, shapes)), list(zip(kinds, shapes)))
        return pick(self.argnum, [pick(self.argnum, line) for line in blocks])


def jvp_apart(f, args, argnum, vector, name):
    """(f(*args), the Jacobian of f times vector) on a tape of f's own,
    whatever derivative is being traced around the call: what an extern
    op's second-order rule, called back from a C sweep on plain values,
    takes (ad.jvp there would record on that derivative's tape)."""
    tr = Trace(f, args, {}, argnum, name)
    try:
        return tr.jvp(vector)
    finally:
        tr.release()


# The most directions one tangent sweep carries (csrc/ad.h's AD_MAX_LANES):
# each elementwise partial is computed once for all of them.
LANES = 4


def lane_batches(k):
    """(first, lanes) of the tangent sweeps along k directions."""
    return [(lo, min(LANES, k - lo)) for lo in range(0, k, LANES)]


def _units(n, lo, lanes):
    """Rows lo, ..., lo + lanes - 1 of the identity of size n."""
    rows = np.zeros((lanes, n))
    rows[np.arange(lanes), np.arange(lo, lo + lanes)] = 1.0
    return rows


def complex_like(cotangent, st):
    """A real cotangent of a complex result as the complex number it is
    (autograd takes one)."""
    if is_complex_node(st.node) and not holds_complex(flatten(cotangent)[1].node):
        return np.asarray(cotangent) + 0j
    return cotangent


def _describe(st):
    """A structure in words: 'shape (3,)' or 'a list of shapes [(), ()]'."""
    if st.node is None:
        return f"shape {st.shapes[0]}"
    if is_complex_node(st.node):
        return f"complex, shape {st.shapes[0]}"
    return f"a {st.node[0].__name__} of shapes {st.shapes}"
