"""Derivatives that are themselves differentiable: every op's rules written
with pyautodiff's own operations, and the two sweeps that apply them.

The C sweeps (csrc/) compute derivatives as plain numbers, which is what
a derivative of first order -- or the forward-over-reverse second order --
needs.  A derivative taken inside another one (``ad.grad(ad.grad(f))``,
``make_vjp`` inside ``make_jvp``, ``ad.record(ad.grad(f))``) must instead
be recorded, so that the enclosing derivative can differentiate it in
turn.  ``reverse`` and ``tangent`` below walk a stretch of the tape being
recorded, entry by entry, and apply each entry's rule to Values and Arrays
of that same tape: the adjoints and tangents they compute are new entries,
which any later sweep -- C or this one again -- differentiates like any
other.  That gives every order.

An elementwise op's rule is its row's partial derivatives (``rule`` in
ops.py, expressions in x, y, v and c as the row's value is); the other
ops' rules are the functions in RULES below, one per op.  Decisions a
rule makes on values (the sign in abs's derivative, which elements of a
max are the largest) are comparison entries, never Python branches on the
traced numbers, so that a replay of a recorded derivative recomputes them
and the derivatives of those decisions are exactly zero.
"""
import math

import numpy as np

from . import _core, buffers
from ._generated import derivative_rules, link
from .array import (Array, _append, _binary_op, _constant, _detached as _detached_array,
                    _mapped, _new, _operand)
from .broadcasting import unbroadcast
from .reductions import others_product
from .ops import ELEMENTWISE, OTHER_PARTIALS
from .tape_state import NO_GRAD, recording_tape
from .value import Traced, Value, _detached as _detached_value

OPS = _core.OPS
NAMES = {code: name for name, code in OPS.items()}


# -- the operations rules are written with ------------------------------------

def _is_node(z):
    return isinstance(z, (Value, Array))


def _shape(z):
    if isinstance(z, Value) or z.__class__ is float:
        return ()
    return z._d.shape if isinstance(z, Array) else np.shape(z)


def _scalar_constant(t, d):
    return t.record(Traced, OPS["LEAF"], -1, -1, d, d)


def mask(op, x, y):
    """The comparison op (LT, LE, EQ, NE) of x and y as 1.0/0.0 entries: a
    constant to every derivative, recomputed by a replay (no guard)."""
    if not (isinstance(x, Array) or isinstance(y, Array)):
        t = recording_tape()
        xv = x._d if isinstance(x, Value) else float(x)
        yv = y._d if isinstance(y, Value) else float(y)
        xs = t.adopt(x) if isinstance(x, Value) else _scalar_constant(t, xv)
        ys = t.adopt(y) if isinstance(y, Value) else _scalar_constant(t, yv)
        holds = {"LT": xv < yv, "LE": xv <= yv, "EQ": xv == yv, "NE": xv != yv}[op]
        return t.record(Traced, OPS[op], xs._i, ys._i, 0.0, 1.0 if holds else 0.0)
    return _binary_op(op, x, y)


def select(z, m):
    """z where the mask m is 1, else 0 (a 0 even where z is inf or NaN)."""
    if isinstance(z, Array) or isinstance(m, Array):
        return _binary_op("SELECT", z, m)
    if not _is_node(z):
        z = _scalar_constant(recording_tape(), float(z))
    t = recording_tape()
    return t.record(Traced, OPS["SELECT"], t.adopt(z)._i, t.adopt(m)._i, 0.0,
                    z._d if m._d != 0.0 else 0.0)


def _unary(name, fn):
    def apply(z):
        return getattr(z, name)() if _is_node(z) else fn(z)
    apply.__name__ = name
    return apply


# What a rule may name besides x, y, v, c and Python's operators (the
# generated partials run in this module's globals)
cos = _unary("cos", math.cos)
sin = _unary("sin", math.sin)
exp = _unary("exp", math.exp)
log = _unary("log", math.log)
sinh = _unary("sinh", math.sinh)
cosh = _unary("cosh", math.cosh)


def sign(z):
    """1.0 where z > 0, -1.0 where z < 0, else 0.0."""
    return mask("LT", 0.0, z) - mask("LT", z, 0.0)


def positive(z):
    return mask("LT", 0.0, z)


# code: (d/dx, d/dy) of each elementwise op (d/dy only for binary ops)
PARTIALS = {OPS[name]: tuple(link(fn, globals()) for fn in fns)
            for name, fns in derivative_rules.PARTIALS.items()}


def times(g, d):
    """g (an adjoint or tangent) times d (a partial derivative), 0 where g
    is 0 even if d is infinite there, as the C sweeps skip a zero adjoint:
    the derivative of a branch not taken (where(x > 0, log(x), 0) at 0)
    stays 0.  The multiplications by 1 and -1 that rules name are
    skipped."""
    if not _is_node(d):
        if d == 1:
            return g
        if d == -1:
            return -g
        if d == 0 and not _is_node(g):
            return 0.0
        return g * d if math.isfinite(d) or not _is_node(g) else _times(g, d)
    if not _is_node(g):
        return 0.0 if g == 0 else d * g
    return _times(g, d)


def _times(g, d):
    """The TIMES entry of g and d (nodes or numbers)."""
    t = recording_tape()
    if t is NO_GRAD:
        gv, dv = (np.asarray(z._d if _is_node(z) else z, dtype=np.float64) for z in (g, d))
        with np.errstate(all="ignore"):
            value = np.where(gv == 0.0, 0.0, gv * dv)
        if isinstance(g, Array) or isinstance(d, Array):
            return _detached_array(value)
        return _detached_value(Traced, float(value))
    if isinstance(g, Array) or isinstance(d, Array):
        return _binary_op("TIMES", g, d)
    gv = g._d if isinstance(g, Value) else float(g)
    dv = d._d if isinstance(d, Value) else float(d)
    gs = t.adopt(g) if isinstance(g, Value) else _scalar_constant(t, gv)
    ds = t.adopt(d) if isinstance(d, Value) else _scalar_constant(t, dv)
    return t.record(Traced, OPS["TIMES"], gs._i, ds._i, 0.0,
                    0.0 if gv == 0.0 else gv * dv)


def add(a, b):
    """a + b where either may be None (nothing yet)."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def sum_to(z, shape):
    """z summed down to shape, as NumPy broadcast it up."""
    if _shape(z) == tuple(shape):
        return z
    if isinstance(z, Array):
        return unbroadcast(z, tuple(shape)).reshape(shape)
    return z      # a number: the same for every element


def broadcast_to(z, shape):
    """z repeated over shape (NumPy's broadcasting, as a strided gather)."""
    shape = tuple(shape)
    if _shape(z) == shape:
        return z
    if not _is_node(z):
        return _constant(np.broadcast_to(np.asarray(z, dtype=np.float64), shape).copy())
    zs = _shape(z)
    if isinstance(z, Value):
        z = z + _constant(np.zeros(()))        # as a 0-d Array
    t = recording_tape()
    strides, inner = [], 1
    for n in reversed(zs):
        strides.append(0 if n == 1 else inner)
        inner *= n
    strides = [0] * (len(shape) - len(zs)) + strides[::-1]
    # a strided gather whose strides are 0 along the broadcast dimensions
    return _append(t, object.__new__(Array), OPS["GATHER"], _operand(z, t)[0], -1,
                   0.0, buffers.empty(shape), strided=(0, tuple(strides)))


def reduce_like(op, z, out_shape, c):
    """The reduction op of z (SUM, MAX, MIN, LSE, PROD) to out_shape: 1 for each
    dimension reduced, or () for all of them, as the C core records it."""
    t = recording_tape()
    return _new(t, OPS[op], _operand(z, t)[0], -1, c, tuple(out_shape))


# -- an entry as a rule sees it -------------------------------------------------

class Entry:
    """One entry of the stretch being differentiated: its node, op code,
    operand nodes, constant and (for a gather or scatter) its flat index
    map, read before any rule records anything (recording may compact the
    tape and renumber it)."""

    __slots__ = ("node", "op", "operands", "c", "index_map", "rule", "position",
                 "needs")

    def shape(self):
        return _shape(self.node)


def _index_map(c, i):
    """A gather's or scatter's flat index map (a strided gather's too)."""
    bk = c.blk[c.aux[i]]
    if bk.map != _core.ffi.NULL:
        return np.frombuffer(_core.ffi.buffer(bk.map, 8 * bk.nmap), np.int64).copy()
    shape = bk.shape[0:bk.ndim]
    idx = np.full(tuple(shape), bk.offset, np.int64)
    for d in range(bk.ndim):
        idx += (np.arange(shape[d], dtype=np.int64) * bk.stride[d]).reshape(
            (-1,) + (1,) * (bk.ndim - 1 - d))
    return idx.reshape(-1)


def stretch(t, lo, hi):
    """Entries lo..hi of tape t (flushed) as Entry objects."""
    t.flush()
    c, nodes = t._c, t.nodes
    n = hi + 1

    def column(name, dtype):
        return np.frombuffer(_core.ffi.buffer(getattr(c, name), dtype.itemsize * n),
                             dtype)[lo:].tolist()
    i32, f64 = np.dtype(np.int32), np.dtype(np.float64)
    ops, a_col, b_col, imm = (column("op", i32), column("a", i32), column("b", i32),
                              column("imm", f64))
    maps = (OPS["GATHER"], OPS["SCATTER"])
    extern = OPS["EXTERN"]
    out = []
    for k in range(n - lo):
        e = Entry()
        e.node = nodes[lo + k]
        e.op = op = ops[k]
        a, b = a_col[k], b_col[k]
        if b >= 0:
            e.operands = [nodes[a], nodes[b]]
            e.position = [a - lo if a >= lo else -1, b - lo if b >= lo else -1]
        elif a >= 0:
            e.operands = [nodes[a]]
            e.position = [a - lo if a >= lo else -1]
        else:
            e.operands = e.position = []
        e.c = imm[k]
        e.index_map = e.rule = None
        if op in maps:
            e.index_map = _index_map(c, lo + k)
        elif op == extern:
            e.rule = t.externs[lo + k]
        out.append(e)
    return out


# -- the rules of the ops with no elementwise row ----------------------------------
# reverse(e, g) -> one cotangent per operand (None where there is none);
# tangent(e, ts) -> the entry's tangent from its operands' (None: still).

def _partial(fn, x, y, v, c):
    """fn(x, y, v, c), a partial derivative.  Python's float arithmetic
    raises where IEEE's gives inf or NaN (0.0 ** -0.5 at the kink of
    relu(t) ** 1.5): there the partial is taken on 0-d Arrays, whose
    arithmetic is IEEE's as the C sweeps' is, and a zero adjoint drops the
    infinity (TIMES)."""
    try:
        return fn(x, y, v, c)
    except (ArithmeticError, ValueError):
        if not any(isinstance(z, Value) for z in (x, y, v)):
            raise
        zero = _constant(np.zeros(()))
        return fn(*[z + zero if isinstance(z, Value) else z for z in (x, y, v)], c)


def _elementwise_reverse(e, g):
    x = e.operands[0]
    y = e.operands[1] if len(e.operands) > 1 else None
    parts = PARTIALS[e.op]
    out = []
    for k, operand in enumerate(e.operands):
        if e.position[k] < 0 or not e.needs[k]:
            out.append(None)
            continue
        d = _partial(parts[k], x, y, e.node, e.c)
        out.append(sum_to(times(g, d), _shape(operand)))
    return out


def _elementwise_tangent(e, ts):
    x = e.operands[0]
    y = e.operands[1] if len(e.operands) > 1 else None
    parts = PARTIALS[e.op]
    out = None
    for k, tk in enumerate(ts):
        if tk is not None:
            out = add(out, times(tk, _partial(parts[k], x, y, e.node, e.c)))
    return None if out is None else broadcast_to(out, e.shape())


def _reduction_weights(e):
    """d(entry)/d(operand) of a reduction, elementwise in the operand's
    shape (None: 1/c everywhere, a sum)."""
    # (the result has the operand's dimensions, the reduced ones as 1, or
    # none: either way it broadcasts back over the operand)
    x, v = e.operands[0], e.node
    if e.op == OPS["PROD"]:
        # each element's product of the others in its group (exact at zeros)
        kept = e.shape()
        return others_product(x, tuple(d for d in range(x.ndim) if not kept or kept[d] == 1))
    spread = broadcast_to(v, _shape(x))
    if e.op == OPS["LSE"]:
        return (x - spread).exp()
    # MAX, MIN: the elements equal to the result share its derivative
    ties = mask("EQ", x, spread)
    return ties / broadcast_to(reduce_like("SUM", ties, e.shape(), 1.0), _shape(x))


def _reduce_reverse(e, g):
    x = e.operands[0]
    if isinstance(x, Value):       # one element: the rule of that element
        return [g / e.c if e.op == OPS["SUM"] and e.c != 1.0 else g]
    spread = broadcast_to(g, _shape(x))
    if e.op == OPS["SUM"]:
        return [spread / e.c if e.c != 1.0 else spread]
    return [spread * _reduction_weights(e)]


def _reduce_tangent(e, ts):
    (tx,) = ts
    x = e.operands[0]
    if isinstance(x, Value):
        return tx / e.c if e.op == OPS["SUM"] and e.c != 1.0 else tx
    if e.op == OPS["SUM"]:
        return reduce_like("SUM", broadcast_to(tx, _shape(x)), e.shape(), e.c)
    return reduce_like("SUM", broadcast_to(tx, _shape(x)) * _reduction_weights(e),
                       e.shape(), 1.0)


def _reshape_reverse(e, g):
    return [g.reshape(_shape(e.operands[0])) if isinstance(g, Array)
            else broadcast_to(g, _shape(e.operands[0]))]


def _reshape_tangent(e, ts):
    (tx,) = ts
    return tx.reshape(e.shape()) if isinstance(tx, Array) else broadcast_to(tx, e.shape())


def _map_rules(op, transpose):
    """The rules of the map op (GATHER: v[k] = x[map[k]]; SCATTER: v = 0,
    v[map[k]] += x[k]): a tangent moves as the values do, an adjoint back
    along the same map by the transposed op (repeated indices add up)."""
    def moved(op, z, shape, index_map):
        t = recording_tape()
        return _mapped(t, OPS[op], _operand(z, t)[0], tuple(shape), index_map)

    def reverse(e, g):
        return [moved(transpose, broadcast_to(g, e.shape()), _shape(e.operands[0]),
                      e.index_map)]

    def tangent(e, ts):
        return moved(op, broadcast_to(ts[0], _shape(e.operands[0])), e.shape(),
                     e.index_map)
    return reverse, tangent


def _extern_reverse(e, g):
    return e.rule.nested_cotangents(g, e.node, e.operands, e.needs)


def _extern_tangent(e, ts):
    return e.rule.nested_tangent(ts, e.node, e.operands)


def _no_derivative_reverse(e, g):
    return [None] * len(e.operands)


def _no_derivative_tangent(e, ts):
    return None


# op name: (reverse, tangent)
_ELEMENTWISE_RULES = (_elementwise_reverse, _elementwise_tangent)
RULES = {
    "LEAF": (_no_derivative_reverse, _no_derivative_tangent),
    "LT": (_no_derivative_reverse, _no_derivative_tangent),
    "LE": (_no_derivative_reverse, _no_derivative_tangent),
    "EQ": (_no_derivative_reverse, _no_derivative_tangent),
    "NE": (_no_derivative_reverse, _no_derivative_tangent),
    "MAXIMUM": _ELEMENTWISE_RULES, "MINIMUM": _ELEMENTWISE_RULES,
    "SELECT": _ELEMENTWISE_RULES,
    "SUM": (_reduce_reverse, _reduce_tangent),
    "MAX": (_reduce_reverse, _reduce_tangent),
    "MIN": (_reduce_reverse, _reduce_tangent),
    "LSE": (_reduce_reverse, _reduce_tangent),
    "PROD": (_reduce_reverse, _reduce_tangent),
    "RESHAPE": (_reshape_reverse, _reshape_tangent),
    "GATHER": _map_rules("GATHER", "SCATTER"),
    "SCATTER": _map_rules("SCATTER", "GATHER"),
    "EXTERN": (_extern_reverse, _extern_tangent),
}
RULES.update({name: (_no_derivative_reverse, _no_derivative_tangent)
              for name in ("FLOOR", "CEIL", "TRUNC", "RINT", "SIGN", "STOP")})
RULES.update({op.name: _ELEMENTWISE_RULES for op in ELEMENTWISE})
RULES.update({name: _ELEMENTWISE_RULES for name in OTHER_PARTIALS})
_BY_CODE = {OPS[name]: rules for name, rules in RULES.items()}


# -- the sweeps ---------------------------------------------------------------------

def _span(t, starts, ends):
    """The entries from the first of starts to the last of starts and ends
    (an output may come before a variable: f(a, b) = a)."""
    t.flush()
    lo = min(n._i for n in starts)
    hi = max(max(n._i for n in ends), max(n._i for n in starts))
    return lo, hi


def _depending(entries, lo, seeds):
    """Which entries depend on the seeded positions; each entry's needs
    (per operand: does it depend on them)."""
    dep = [False] * len(entries)
    for p in seeds:
        dep[p] = True
    for k, e in enumerate(entries):
        position = e.position
        if len(position) == 2:
            a, b = position
            needs = e.needs = [a >= 0 and dep[a], b >= 0 and dep[b]]
            if needs[0] or needs[1]:
                dep[k] = True
        elif position:
            a = position[0]
            if a >= 0 and dep[a]:
                e.needs = [True]
                dep[k] = True
            else:
                e.needs = [False]
        else:
            e.needs = []
    return dep


def _quietly(sweep):
    """sweep with NumPy's floating-point warnings off: a rule may compute
    an infinite partial that a zero adjoint then drops (TIMES), where the
    C sweeps would not have computed it at all."""
    def quiet(*args):
        with np.errstate(all="ignore"):
            return sweep(*args)
    quiet.__name__, quiet.__doc__ = sweep.__name__, sweep.__doc__
    return quiet


@_quietly
def reverse(outs, cotangents, wrt):
    """The cotangents (nodes or numbers, one per output node) times the
    Jacobian of outs with respect to the nodes wrt, recorded on the tape
    being recorded: one cotangent per wrt node, None where none reaches it.
    wrt must be entries with no operand inside the stretch (leaves, or
    copies made for the derivative)."""
    t = recording_tape()
    live = [(o, g) for o, g in zip(outs, cotangents)
            if _is_node(o) and o._t is t and g is not None]
    if not live or not wrt:
        return [None] * len(wrt)
    lo, hi = _span(t, wrt, [o for o, _ in live])
    entries = stretch(t, lo, hi)
    wpos = [w._i - lo for w in wrt]
    dep = _depending(entries, lo, wpos)
    adj = {}
    for o, g in live:
        p = o._i - lo
        if p >= 0 and dep[p]:
            adj[p] = add(adj.get(p), _as_operand(g))
    results = {}
    wanted = set(wpos)
    for p in range(len(entries) - 1, -1, -1):
        g = adj.pop(p, None)
        if g is None:
            continue
        if p in wanted:
            results[p] = g
            continue
        e = entries[p]
        if not any(e.needs):
            continue
        for k, ct in enumerate(_BY_CODE[e.op][0](e, g)):
            q = e.position[k]
            if ct is not None and q >= 0 and e.needs[k]:
                adj[q] = add(adj.get(q), ct)
    return [results.get(p) for p in wpos]


@_quietly
def tangent(wrt, seeds, outs):
    """The tangents of the output nodes outs when the nodes wrt move along
    seeds (nodes or numbers), recorded on the tape being recorded; None
    where an output does not move."""
    t = recording_tape()
    moving = [(w, s) for w, s in zip(wrt, seeds) if s is not None]
    nodes = [o for o in outs if _is_node(o) and o._t is t]
    if not moving or not nodes:
        return [None] * len(outs)
    lo, hi = _span(t, [w for w, _ in moving], nodes)
    entries = stretch(t, lo, hi)
    tan = {}
    for w, s in moving:
        tan[w._i - lo] = add(tan.get(w._i - lo), _as_operand(s))
    seeded = set(tan)
    for p, e in enumerate(entries):
        if p in seeded:
            continue
        ts = [tan.get(q) if q >= 0 else None for q in e.position]
        if all(tk is None for tk in ts):
            continue
        e.needs = [tk is not None for tk in ts]
        tk = _BY_CODE[e.op][1](e, ts)
        if tk is not None:
            tan[p] = tk
    return [tan.get(o._i - lo) if _is_node(o) and o._t is t and o._i >= lo else None
            for o in outs]


def _as_operand(g):
    """A seed as the rules take it: nodes and floats as they are, an
    ndarray as a constant Array."""
    if _is_node(g) or isinstance(g, float):
        return g
    if np.ndim(g) == 0:
        return float(g)
    return _constant(np.asarray(g, dtype=np.float64))
