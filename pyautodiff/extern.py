"""Extern ops: tape entries whose rules are Python functions, called from
the C sweeps (AD_EXTERN): the rules (ExternRule), the step each sweep calls
back into Python for such an entry, and recording one.  Matrix products use
them to run at BLAS speed through NumPy, and ``ad.custom_op`` lets users
plug in ops of their own.
"""
import contextlib

import numpy as np

from . import _core, array as _array, scipy_own
from ._core import ffi, lib
from .detach import strict_rule
from .tape_state import NO_GRAD, recording_tape
from .tape_sweeps import ADJ, DADJ, TAN
from .value import Traced, Value, _detached as _detached_value

OPS = _core.OPS


class ExternRule:
    """forward(*inputs) -> output; vjp(g, output, *inputs) -> one cotangent
    per input (None for none).  A rule that takes_needs is also passed
    needs=[bool per input] and may skip the cotangents not needed.

    The forward-mode and second-order sweeps need more: jvp(tangents,
    output, *inputs) -> the output's tangent (a tangent is None for a
    constant input).  A bilinear rule (a matrix product) derives both from
    forward and vjp: its tangent is forward(ta, b) + forward(a, tb), and the
    tangent of its vjp is vjp(dg, a, b) + vjp(g, ta, tb).  A linear rule (a
    cumulative sum) has a vjp that does not depend on its input, so the
    tangent of its vjp is vjp(dg).

    A pure rule (ours, not a user's) neither keeps nor changes the arrays
    it is given, so the sweep hands it the adjoint block itself.  Its
    forward returns a new array (recorded without a copy), or, given
    out=, writes the entry's values in place (a replay), and its vjp
    takes into=[array or None per input]: an operand's adjoint block that
    holds nothing yet, where the rule may write that cotangent (returning
    the block itself) instead of making a new array to be copied in."""

    __slots__ = ("forward", "vjp", "name", "takes_needs", "jvp", "bilinear",
                 "pure", "linear", "nested", "sparsity", "custom")

    def __init__(self, forward, vjp, name, takes_needs=False, jvp=None,
                 bilinear=False, pure=False, linear=False, nested=None,
                 sparsity=None, custom=False):
        self.forward = forward
        self.vjp = vjp
        self.name = name
        self.takes_needs = takes_needs
        self.jvp = jvp
        self.bilinear = bilinear
        self.pure = pure
        self.linear = linear
        # The differentiable rules (derivatives.py), for derivatives that
        # nest: (vjp, jvp) on Values and Arrays, recording what they
        # compute, vjp(g, out, *inputs, needs) and jvp(tangents, out,
        # *inputs); a bilinear rule's jvp may be None (it is derived from
        # vjp's own forward, see nested_tangent).  None: the op's rules
        # work on plain numbers only, and a nested derivative through it
        # raises.
        self.nested = nested
        # sparsity(out_shape, *operand_shapes) -> one boolean matrix per
        # operand, (output size, operand size): which output elements
        # depend on which operand elements (sparse.py).  None: every
        # output element on every operand element.  A bilinear rule's
        # is also called with constants=[values or None per operand]
        # where one operand is a constant, to leave its zeros out.
        self.sparsity = sparsity
        # a user's op (ad.custom_op): its vjp may call ops of its own that
        # have no jvp, which a second order by nesting then meets
        self.custom = custom

    def cotangents(self, g, out, inputs, needs, into=None):
        if into is not None:        # a pure rule
            return self.vjp(g, out, *inputs, needs=needs, into=into)
        if self.takes_needs:        # skips the cotangents of constants
            return self.vjp(g, out, *inputs, needs=needs)
        return self.vjp(g, out, *inputs)

    def tangent(self, tangents, out, inputs):
        if self.bilinear:
            a, b = inputs
            ta, tb = tangents
            parts = ([self.forward(ta, b)] if ta is not None else []) + \
                    ([self.forward(a, tb)] if tb is not None else [])
            return sum(parts[1:], parts[0])
        if self.jvp is None:
            raise NotImplementedError(
                f"{self.name}: forward-mode derivatives need a jvp rule "
                "(custom_op(forward, vjp, jvp=...))")
        return self.jvp(tangents, out, *inputs)

    def _nested_rules(self):
        if self.nested is None:
            raise NotImplementedError(
                f"{self.name}: a derivative through this op inside another "
                "derivative or a recording is not available: its rules work "
                "on plain arrays only")
        return self.nested

    def nested_cotangents(self, g, out, inputs, needs):
        """The cotangents as Values and Arrays of the tape being recorded
        (derivatives.reverse), None for an input that needs none."""
        return self._nested_rules()[0](g, out, *inputs, needs=needs)

    def nested_tangent(self, tangents, out, inputs):
        vjp, jvp = self._nested_rules()
        if jvp is None:
            raise NotImplementedError(f"{self.name}: forward-mode derivatives "
                                      "need a jvp rule")
        return jvp(tangents, out, *inputs)

    @property
    def second_order(self):
        """Whether a tangent sweep and the second-order sweep after it can
        run this op's rules (a Hessian-vector product in one sweep)."""
        return self.bilinear or (self.jvp is not None and
                                 (self.linear or self.nested is not None))

    def cotangent_tangents(self, g, dg, out, inputs, tangents, needs):
        """The tangents of the cotangents: what the second-order sweep
        adds to the operands' adjoint tangents."""
        if self.linear:
            return self.cotangents(dg, out, inputs, needs)
        if not self.bilinear:
            if self.nested is not None:
                return self._nested_cotangent_tangents(g, dg, inputs, tangents, needs)
            raise NotImplementedError(
                f"{self.name}: second derivatives through this op are not "
                "available in one sweep (its rules are of first order); "
                "ad.jacobian(ad.grad(f)) differentiates its vjp instead")
        first = self.cotangents(dg, out, inputs, needs)
        zeros = [np.zeros(np.shape(x)) if t is None else t
                 for x, t in zip(inputs, tangents)]
        a, b = inputs
        ta, tb = zeros
        # d(vjp_a(g, b)) needs tb, d(vjp_b(g, a)) needs ta
        cross = self.cotangents(g, out, [ta, tb], needs)
        return [None if f is None else f + c for f, c in zip(first, cross)]

    def _nested_cotangent_tangents(self, g, dg, inputs, tangents, needs):
        """d vjp(g, x) along (dg, dx) for an op whose vjp is differentiable
        (its nested rules): one forward-mode sweep over the vjp recorded
        on a tape of its own, the op itself recorded on it for its output."""
        from .trace import jvp_apart

        def cotangents(g_, *xs):
            out_ = record_extern(self, list(xs),
                                 self.forward(*[getattr(x, "_d", x) for x in xs]))
            parts = self.nested_cotangents(g_, out_, list(xs), needs)
            return tuple(np.zeros(np.shape(x)) if p is None else p
                         for p, x in zip(parts, inputs))
        vector = (dg,) + tuple(np.zeros(np.shape(x)) if t is None else t
                               for x, t in zip(inputs, tangents))
        _, parts = jvp_apart(cotangents, (g, *inputs), tuple(range(len(inputs) + 1)),
                             vector, f"{self.name}'s second order")
        return [p if need else None for p, need in zip(parts, needs)]


# -- the C sweeps' callbacks: an extern entry's rules applied to tape t -------

def route_callbacks(t):
    """Before tape t's first extern entry: its C sweeps' callbacks call
    the steps below with t."""
    if not t.callbacks_routed:
        _core.register_callbacks(t._c, t, _STEPS)
        t.callbacks_routed = True


# Looked up once: the reverse sweep calls back here for every extern entry
# it passes, and for small operands these steps cost more than the rule.
_NULL = ffi.NULL
_buffer = ffi.buffer
_frombuffer = np.frombuffer
_asarray = np.asarray
_copyto = np.copyto
_count_nonzero = np.count_nonzero
_float64 = np.float64
_adjoint = lib.ad_entry_adjoint
_claim = lib.ad_entry_adjoint_claim
_VARIABLE = _core.FLAG_VARIABLE
# where ad_entry_adjoint_claim says whether a block is unset, read right
# after each call (the callbacks hold the GIL, so no other call runs between)
_UNSET = ffi.new("int *")


def _adjoint_view(t, j):
    """Entry j's adjoint in the sweep under way, as a writable array of
    the entry's shape (0-d for a scalar)."""
    return _entry_array(t, j, _adjoint(t._c, j, t.sweep_mode))


def _entry_array(t, j, p):
    """The doubles at p as an array of entry j's shape."""
    if p == _NULL:
        raise MemoryError("out of memory for adjoints")
    node = t.nodes[j]
    if isinstance(node, _array.Array):
        # (a small result's shape from its pool: its values are viewed
        # only when read, see Array._d)
        pool = node._p
        if pool:
            return _frombuffer(_buffer(p, 8 * pool.size)).reshape(pool.shape)
        d = node._v
        return _frombuffer(_buffer(p, 8 * d.size)).reshape(d.shape)
    return _frombuffer(_buffer(p, 8)).reshape(())     # a scalar's one double


def _operands(t, i):
    c = t._c
    a, b = c.a[i], c.b[i]
    operands = (a,) if b < 0 else (a, b)
    flags = c.flags
    needs = [bool(flags[j] & _VARIABLE) for j in operands]
    return operands, needs, [t.entry_value(j) for j in operands]


def reverse_step(t, i):
    """The C reverse sweep of t reached extern entry i: add its vjp into its
    operands' adjoints."""
    g = _adjoint_view(t, i)
    if not _count_nonzero(g):      # (ndarray.any is a Python-level wrapper)
        return
    operands, needs, inputs = _operands(t, i)
    rule = t.externs[i]
    # the operands' adjoints: a block that holds nothing yet this sweep
    # is assigned its cotangent (by a pure rule, written in place)
    c, mode, unset = t._c, t.sweep_mode, _UNSET
    targets = []
    for j, need in zip(operands, needs):
        if need:
            view = _entry_array(t, j, _claim(c, j, mode, unset))
            targets.append((view, unset[0]))
        else:
            targets.append((None, 0))
    if rule.pure:
        cotangents = rule.cotangents(g, t.entry_value(i), inputs, needs,
                                     [v if fresh else None for v, fresh in targets])
    else:
        cotangents = rule.cotangents(g.copy(), t.entry_value(i), inputs, needs)
    for (view, fresh), ct in zip(targets, cotangents):
        if view is None:
            continue
        if ct is None:
            if fresh:
                view[...] = 0.0
        elif ct is not view:
            if ct.__class__ is not np.ndarray or ct.dtype != _float64:
                ct = _asarray(ct, dtype=_float64)
            if ct.shape != view.shape:
                ct = ct.reshape(view.shape)
            if fresh:
                _copyto(view, ct)
            else:
                view += ct


def tangent_step(t, i):
    """The C tangent sweep of t reached extern entry i: its tangent from
    its operands' (None for a constant operand)."""
    operands, needs, inputs = _operands(t, i)
    tangents = [t.scratch(j, TAN).copy() if need else None
                for j, need in zip(operands, needs)]
    value = t.externs[i].tangent(tangents, t.entry_value(i), inputs)
    out = t.scratch(i, TAN)
    out[...] = np.asarray(value, dtype=np.float64).reshape(out.shape)


def second_step(t, i):
    """The C second-order sweep of t reached extern entry i: its adjoint and
    adjoint tangent into its operands'."""
    g, dg = t.scratch(i, ADJ).copy(), t.scratch(i, DADJ).copy()
    if not (g.any() or dg.any()):
        return
    operands, needs, inputs = _operands(t, i)
    rule, out = t.externs[i], t.entry_value(i)
    tangents = [t.scratch(j, TAN).copy() if need else None
                for j, need in zip(operands, needs)]
    # a sweep of several lanes calls this once per lane: the adjoints,
    # which are one for all of them, in lane 0 only
    lane0 = t._c.lane == 0
    first = rule.cotangents(g, out, inputs, needs) if lane0 else \
        [None] * len(operands)
    seconds = rule.cotangent_tangents(g, dg, out, inputs, tangents, needs)
    for j, ct, dct, need in zip(operands, first, seconds, needs):
        if need:
            for which, part in ((ADJ, ct), (DADJ, dct)):
                if part is not None:
                    view = t.scratch(j, which)
                    view += np.asarray(part, dtype=np.float64).reshape(view.shape)


def forward_step(t, i):
    """The C forward sweep of t reached extern entry i: recompute it."""
    c = t._c
    inputs = [t.entry_value(j) for j in (c.a[i], c.b[i]) if j >= 0]
    rule, node = t.externs[i], t.nodes[i]
    if c.aux[i] < 0:
        c.val[i] = float(rule.forward(*inputs))
        return
    node._d.flags.writeable = True
    try:
        if rule.pure:           # straight into the entry's values
            rule.forward(*inputs, out=node._d)
        else:
            node._d[...] = rule.forward(*inputs)
    finally:
        node._d.flags.writeable = False


# what _core calls for each sweep
_STEPS = {"forward": forward_step, "reverse": reverse_step,
          "tangent": tangent_step, "second": second_step}


def record_extern(rule, operands, value):
    """Record value = rule.forward(*operands) (already computed) as one
    entry on the recording tape; operands are one or two Values/Arrays."""
    t = recording_tape()
    route_callbacks(t)
    # every operand recorded before any index is read (see _operands)
    nodes = [_array._node(x, t)[0] for x in operands]
    idx = [node._i for node in nodes] + [-1]
    scalar = all(isinstance(x, Value) for x in operands) and np.ndim(value) == 0
    if not scalar:
        # a pure rule's value is a new array of its own: no copy
        value = np.array(value, dtype=np.float64, order="C",
                         copy=None if rule.pure else True)
    t.flush()
    i = len(t.nodes)
    # The rule goes in first, under the number the entry is about to take
    # (a compaction renumbers it with the entry), so that an interrupt
    # cannot leave an EXTERN entry without its rule.
    t.externs[i] = rule
    try:
        if scalar:
            # computed from a traced scalar, it is traced too (value.Traced)
            cls = Traced if any(isinstance(x, Traced) for x in operands) else Value
            out = t.record(cls, OPS["EXTERN"], idx[0], idx[1], 0.0, float(value))
            t.flush()
        else:
            out = _array._append(t, object.__new__(_array.Array), OPS["EXTERN"],
                                 idx[0], idx[1], 0.0, value)
    except BaseException:
        if len(t.nodes) <= i:           # the entry was not kept
            t.externs.pop(i, None)
        raise
    return out


def record_computed(rule, operands, imm, shape):
    """Record an extern entry that the C sweeps compute themselves, of two
    Arrays (or constants) and of this shape: imm names its kernel (ad.h's
    AD_EXTERN_MATMUL, csrc/matmul.c), which computes its values here and
    in every sweep with no call back into Python.  The rule stays the
    entry's for what runs in Python: nested derivatives, saving."""
    t = recording_tape()
    route_callbacks(t)
    # both operands recorded before either index is read (see _operands)
    x, y = [_array._node(v, t)[0] for v in operands]
    if len(t.nodes) != t.nflushed:
        t.flush()
    i = len(t.nodes)
    t.externs[i] = rule             # first, as in record_extern
    try:
        return _array._result(t, OPS["EXTERN"], x._i, y._i, imm, tuple(shape))
    except BaseException:
        if len(t.nodes) <= i:
            t.externs.pop(i, None)
        raise


@contextlib.contextmanager
def _nested_rule(name):
    """A user's rule (custom op name's) called on traced values inside
    another derivative: where it takes plain numbers out of them it
    raises NotImplementedError naming the op (refuse_detached), also where
    it does so through SciPy's Python functions, and where NumPy reports
    that as an error of its own."""
    with strict_rule(name):
        try:
            yield
        except (TypeError, ValueError) as error:
            instead = scipy_own.reported(error, _array._holds_traced)
            if instead is None:
                raise
            if not isinstance(instead, NotImplementedError):
                instead = NotImplementedError(
                    f"{name}: inside another derivative, its rule gave traced "
                    f"values to SciPy's code, which takes plain numbers out of "
                    f"them: {instead}")
            raise instead from error


def custom_op(forward, vjp, jvp=None, sparsity=None):
    """An op with derivative rules of its own.

    ``forward(*inputs) -> output`` on plain floats/ndarrays;
    ``vjp(g, output, *inputs) -> tuple`` with one cotangent per input.
    The returned function takes Values, Arrays and plain numbers; with no
    Value or Array among its inputs it is just ``forward``.  With
    ``jvp(tangents, output, *inputs) -> output tangent`` (a tangent is None
    for an input that does not move) the op also works in forward mode
    (``ad.jvp``, ``ad.hvp``'s tangent sweep).

    What the rules return is checked where it enters the tape: an output,
    cotangent or tangent that is not real numbers, or not of its input's
    (output's) shape, raises an error naming the op and the rule (a None
    or a complex number must not become a zero or a NaN gradient).

    ``sparsity(out_shape, *input_shapes) -> one boolean matrix per input``
    (output size x input size; the matrix alone for a one-input op), if
    given, is the op's Jacobian pattern for ad.jacobian_sparsity and the
    sparse derivatives (checked as the rules' results are); without it
    every output element is taken to depend on every input element."""
    Array = _array.Array

    name = getattr(forward, "__name__", "custom_op")

    def op(*inputs):
        traced = [k for k, x in enumerate(inputs) if isinstance(x, (Value, Array))]
        plain = [x._d if isinstance(x, (Value, Array)) else x for x in inputs]
        value = forward(*plain)
        if not traced:
            return value
        value = _real(value, name, "forward's output")
        if recording_tape() is NO_GRAD:
            return _wrap_plain(value, inputs)
        if len(traced) > 2:
            raise TypeError(f"{name}: a custom op takes at most two Values or "
                            "Arrays (pass the rest as plain numbers/ndarrays)")

        def args_at(ops):
            args = list(plain)
            for k, x in zip(traced, ops):
                args[k] = x
            return args

        def fwd(*ops):              # a replay: the recorded output's shape
            what = "forward's output"
            return _shaped(_real(forward(*args_at(ops)), name, what),
                           value.shape, name, what, "the recorded output")

        def back(g, out, *ops, needs):
            args = args_at(ops)
            cts = _cotangents(vjp(g, out, *args), len(inputs), name)
            return [_cotangent(cts[k], k, x, need, name)
                    for k, x, need in zip(traced, ops, needs)]

        def tangent(tangents, out, *ops):
            ts = [None] * len(inputs)
            for k, tx in zip(traced, tangents):
                ts[k] = tx
            what = "jvp's tangent"
            t = _real(jvp(ts, out, *args_at(ops)), name, what)
            return _shaped(t, np.shape(out), name, what, "the output")

        def nested_back(g, out, *ops, needs):
            with _nested_rule(name):
                cts = _cotangents(vjp(g, out, *args_at(ops)), len(inputs), name)
            return [_nested_result(cts[k], x, need, g, name, f"the cotangent "
                                   f"vjp returned for input {k}")
                    for k, x, need in zip(traced, ops, needs)]

        def nested_tangent(tangents, out, *ops):
            ts = [None] * len(inputs)
            for k, tx in zip(traced, tangents):
                ts[k] = tx
            moving = next((tx for tx in tangents if tx is not None), None)
            with _nested_rule(name):
                t = jvp(ts, out, *args_at(ops))
            return _nested_result(t, out, True, moving, name, "jvp's tangent")

        def pattern(out_shape, *shapes):    # the traced inputs' patterns
            shapes = [np.shape(x) for x in plain]
            parts = _patterns(sparsity(out_shape, *shapes), out_shape, shapes, name)
            return [parts[k] for k in traced]

        return record_extern(ExternRule(fwd, back, name, takes_needs=True,
                                        jvp=tangent if jvp else None,
                                        nested=(nested_back,
                                                nested_tangent if jvp else None),
                                        sparsity=pattern if sparsity else None,
                                        custom=True),
                             [inputs[k] for k in traced], value)

    op.__name__ = name
    op.jvp = jvp
    return op


def _real(x, name, what):
    """x as an ndarray of real numbers (NaN and inf are numbers), else a
    TypeError naming the op and the rule that returned it."""
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:     # ragged lists and the like
        raise TypeError(f"{name}: {what} is a {type(x).__name__} that is not "
                        f"a real number or array ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: {what} is {_described(x)}, not a real number "
                        "or array of real numbers")
    return arr


def _described(x):
    if isinstance(x, np.ndarray):
        return f"an array of dtype {x.dtype}"
    return "None" if x is None else f"{type(x).__name__} {x!r}"


def _shaped(arr, shape, name, what, whose):
    if arr.shape != shape:
        raise ValueError(f"{name}: {what} has shape {arr.shape}, but "
                         f"{whose} has shape {shape}")
    return arr


def _cotangents(cts, n, name):
    """A vjp's result as a sequence of n cotangents (a lone cotangent is
    accepted for a one-input op)."""
    if cts is None:
        raise TypeError(f"{name}: vjp returned None; it must return one "
                        f"cotangent per input ({n})")
    if not isinstance(cts, (tuple, list)):
        cts = (cts,)
    if len(cts) != n:
        raise ValueError(f"{name}: vjp returned {len(cts)} cotangents "
                         f"for {n} inputs")
    return cts


def _patterns(parts, out_shape, shapes, name):
    """A sparsity rule's result as one pattern per input (a lone one is
    accepted for a one-input op, as a lone cotangent is), each a boolean
    (or 0/1) matrix or scipy sparse array of shape (output size, input
    size) -- the constant inputs' too, as the rule is documented."""
    n, m = len(shapes), int(np.prod(out_shape))
    expected = (f"one boolean matrix per input ({n}), of shape (output size, "
                "input size)")
    if not isinstance(parts, (tuple, list)):
        if n != 1 or not hasattr(parts, "shape"):
            raise TypeError(f"{name}: its sparsity rule returned {_kind(parts)}; "
                            f"it must return a list of {expected}")
        parts = (parts,)
    if len(parts) != n:
        raise ValueError(f"{name}: its sparsity rule returned {len(parts)} patterns "
                         f"for {n} inputs; it must return {expected}")
    for k, (p, shape) in enumerate(zip(parts, shapes)):
        what = f"its sparsity rule's pattern for input {k}"
        want = (m, int(np.prod(shape)))
        dtype = getattr(p, "dtype", None)           # a scipy sparse array's
        if dtype is None:
            try:
                dtype = np.asarray(p).dtype
            except (TypeError, ValueError):             # ragged lists
                dtype = np.dtype(object)
        if dtype.kind not in "biuf":
            raise TypeError(f"{name}: {what} is {_kind(p)}, not a matrix of "
                            "booleans (or 0/1 numbers)")
        if np.shape(p) != want:
            raise ValueError(f"{name}: {what} has shape {np.shape(p)}, but input {k} "
                             f"of shape {shape} and the output of shape "
                             f"{tuple(out_shape)} need {want}")
    return parts


def _kind(x):
    """What x is, in a few words (not its values)."""
    if x is None:
        return "None"
    kind = type(x).__name__
    article = "an" if kind[0] in "aeiou" or kind == "ndarray" else "a"
    shape = f" of shape {x.shape}" if hasattr(x, "shape") else ""
    return f"{article} {kind}{shape}"


def _cotangent(ct, k, x, need, name):
    """The cotangent of input k (x): None only where no gradient is
    needed, else real numbers of x's shape."""
    if ct is None:
        if need:
            raise TypeError(f"{name}: vjp returned None as the cotangent of "
                            f"input {k}, which needs a gradient")
        return None
    what = f"the cotangent vjp returned for input {k}"
    return _shaped(_real(ct, name, what), np.shape(x), name, what, "the input")


def _nested_result(r, like, need, seed, name, what):
    """A user's rule applied to Values and Arrays (a nested derivative):
    its result must have been computed from them.  A plain nonzero number
    computed from a traced seed means the rule took plain numbers out of
    what it was given, and the enclosing derivative would silently miss
    its dependence on them."""
    if r is None:
        if need:
            raise TypeError(f"{name}: {what} is None, but a derivative is needed")
        return None
    # NumPy's functions on an object array of traced numbers (np.array of
    # them, SciPy's code given them) make one: the traced Array it stands for
    lifted = _array.from_object_array(r)
    r = r if lifted is None else lifted
    if isinstance(r, (Value, _array.Array)):
        if np.shape(r._d) != np.shape(like._d if isinstance(like, (Value, _array.Array))
                                      else like):
            raise ValueError(f"{name}: {what} has shape {np.shape(r._d)}, but "
                             f"it must have shape {np.shape(like._d)}")
        return r
    arr = _real(r, name, what)
    if isinstance(seed, (Value, _array.Array)) and arr.any():
        raise NotImplementedError(
            f"{name}: inside another derivative, {what} is a plain number "
            "or array computed from traced ones; write the rule with NumPy "
            "functions (or pyautodiff's) applied to the values it is given, "
            "so that it can be differentiated in turn")
    return _shaped(arr, np.shape(like._d), name, what, "the input") \
        if arr.shape != np.shape(like._d) else arr


def _wrap_plain(value, inputs):
    """A result computed without recording: plain when the inputs were."""
    Array, _detached = _array.Array, _array._detached
    if any(isinstance(x, Array) for x in inputs) or np.ndim(value) > 0:
        if any(isinstance(x, (Value, Array)) for x in inputs):
            return _detached(value)
        return value
    if any(isinstance(x, Value) for x in inputs):
        return _detached_value(Value, float(value))
    return value
