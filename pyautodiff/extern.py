"""Extern ops: tape entries whose rules are Python functions, called from
the C sweeps (AD_EXTERN).  Matrix products use them to run at BLAS speed
through NumPy, and ``ad.custom_op`` lets users plug in ops of their own.
"""
import numpy as np

from . import _core
from .tape import NO_GRAD, recording_tape
from .value import Traced, Value, _detached as _detached_value

_array_module = None


def _arrays():
    """pyautodiff.array, which imports this module (bound on first use, as
    an import statement in a function costs more than recording an entry)."""
    global _array_module
    if _array_module is None:
        from . import array
        _array_module = array
    return _array_module

OPS = _core.OPS


class ExternRule:
    """forward(*inputs) -> output; vjp(g, output, *inputs) -> one cotangent
    per input (None for none).  A rule that takes_needs is also passed
    needs=[bool per input] and may skip the cotangents not needed.

    The forward-mode and second-order sweeps need more: jvp(tangents,
    output, *inputs) -> the output's tangent (a tangent is None for a
    constant input).  A bilinear rule (a matrix product) derives both from
    forward and vjp: its tangent is forward(ta, b) + forward(a, tb), and the
    tangent of its vjp is vjp(dg, a, b) + vjp(g, ta, tb).

    A pure rule (ours, not a user's) neither keeps nor changes the arrays
    it is given, so the sweep hands it the adjoint block itself.  Its
    forward returns a new array (recorded without a copy), or, given
    out=, writes the entry's values in place (a replay), and its vjp
    takes into=[array or None per input]: an operand's adjoint block that
    holds nothing yet, where the rule may write that cotangent (returning
    the block itself) instead of making a new array to be copied in."""

    __slots__ = ("forward", "vjp", "name", "takes_needs", "jvp", "bilinear",
                 "pure")

    def __init__(self, forward, vjp, name, takes_needs=False, jvp=None,
                 bilinear=False, pure=False):
        self.forward = forward
        self.vjp = vjp
        self.name = name
        self.takes_needs = takes_needs
        self.jvp = jvp
        self.bilinear = bilinear
        self.pure = pure

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

    def cotangent_tangents(self, g, dg, out, inputs, tangents, needs):
        """The tangents of the cotangents: what the second-order sweep
        adds to the operands' adjoint tangents."""
        if not self.bilinear:
            raise NotImplementedError(
                f"{self.name}: second derivatives through this op are not "
                "available (a custom op or a nested derivative has first-"
                "order rules only)")
        first = self.cotangents(dg, out, inputs, needs)
        zeros = [np.zeros(np.shape(x)) if t is None else t
                 for x, t in zip(inputs, tangents)]
        a, b = inputs
        ta, tb = zeros
        # d(vjp_a(g, b)) needs tb, d(vjp_b(g, a)) needs ta
        cross = self.cotangents(g, out, [ta, tb], needs)
        return [None if f is None else f + c for f, c in zip(first, cross)]


def record_extern(rule, operands, value):
    """Record value = rule.forward(*operands) (already computed) as one
    entry on the recording tape; operands are one or two Values/Arrays."""
    arrays = _arrays()
    t = recording_tape()
    t.route_callbacks()
    # every operand recorded before any index is read (see _operands)
    nodes = [arrays._node(x, t)[0] for x in operands]
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
            out = arrays._append(t, object.__new__(arrays.Array), OPS["EXTERN"],
                                 idx[0], idx[1], 0.0, value)
    except BaseException:
        if len(t.nodes) <= i:           # the entry was not kept
            t.externs.pop(i, None)
        raise
    return out


def custom_op(forward, vjp, jvp=None):
    """An op with derivative rules of its own.

    ``forward(*inputs) -> output`` on plain floats/ndarrays;
    ``vjp(g, output, *inputs) -> tuple`` with one cotangent per input.
    The returned function takes Values, Arrays and plain numbers; with no
    Value or Array among its inputs it is just ``forward``.  With
    ``jvp(tangents, output, *inputs) -> output tangent`` (a tangent is None
    for an input that does not move) the op also works in forward mode
    (``ad.jvp``, ``ad.hvp``'s tangent sweep)."""
    Array = _arrays().Array

    name = getattr(forward, "__name__", "custom_op")

    def op(*inputs):
        traced = [k for k, x in enumerate(inputs) if isinstance(x, (Value, Array))]
        plain = [x._d if isinstance(x, (Value, Array)) else x for x in inputs]
        value = forward(*plain)
        if not traced or recording_tape() is NO_GRAD:
            return _wrap_plain(value, inputs)
        if len(traced) > 2:
            raise TypeError(f"{name}: a custom op takes at most two Values or "
                            "Arrays (pass the rest as plain numbers/ndarrays)")

        def fwd(*ops):
            args = list(plain)
            for k, x in zip(traced, ops):
                args[k] = x
            return forward(*args)

        def back(g, out, *ops):
            args = list(plain)
            for k, x in zip(traced, ops):
                args[k] = x
            cts = vjp(g, out, *args)
            if not isinstance(cts, (tuple, list)):
                cts = (cts,)
            if len(cts) != len(inputs):
                raise ValueError(f"{name}: vjp returned {len(cts)} cotangents "
                                 f"for {len(inputs)} inputs")
            return [cts[k] for k in traced]

        def tangent(tangents, out, *ops):
            ts = [None] * len(inputs)
            args = list(plain)
            for k, x, tx in zip(traced, ops, tangents):
                args[k] = x
                ts[k] = tx
            return jvp(ts, out, *args)

        return record_extern(ExternRule(fwd, back, name,
                                        jvp=tangent if jvp else None),
                             [inputs[k] for k in traced], value)

    op.__name__ = name
    op.jvp = jvp
    return op


def _wrap_plain(value, inputs):
    """A result computed without recording: plain when the inputs were."""
    Array, _detached = _arrays().Array, _arrays()._detached
    if any(isinstance(x, Array) for x in inputs) or np.ndim(value) > 0:
        if any(isinstance(x, (Value, Array)) for x in inputs):
            return _detached(value)
        return value
    if any(isinstance(x, Value) for x in inputs):
        return _detached_value(Value, float(value))
    return value
