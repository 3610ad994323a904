"""Threads inside a derivative: traced values handed to other threads.

Every thread records on its own tape (tape.py), and a value of another
thread's tape used in an operation enters as a leaf.  Inside a derivative
that would cut the derivative off: a function differentiated by ``ad.grad``
that hands its traced ``x`` to a worker thread (``threading.Thread``,
``ThreadPoolExecutor.map``, ``asyncio.to_thread``) gets back a result
recorded on the worker's tape, whose dependence on ``x`` the derivative's
tape does not see -- a silent zero.

So a thread's tape that takes in a value of a derivative under way (or of a
recording) *joins* that derivative while it traces its function (``join``):
numbers taken out of its values raise ``DetachError`` as the derivative's own
do, and inside a recording its decisions are guards.  When the derivative's
tape meets a value of a joined tape (an operation on it, or the function's
result), the entries that value was computed by, back to the derivative's own
values, are recorded again on the derivative's tape (``transplant``), op by
op with the worker's operands mapped to the derivative's entries, so that
every sweep, every order and every replay sees the whole computation, as if
it had run in the derivative's thread.  The worker's decisions made in a
recording go with them, as guards.  When the function returns, the joined
tapes are let go (``release_joined``).

The worker's own tape keeps its entries: the worker's objects stay as they
were.  Transplanting reads its columns under its lock, as a sweep from
another thread would.
"""
import numpy as np

from . import _core
from ._core import ffi
from .array import Array, _append, _mapped
from .extern import record_computed, record_extern
from .detach import DIFFERENTIATING
from .tape_nesting import thread_hooks
from .value import Value

OPS = _core.OPS
_LEAF, _EXTERN, _GATHER = OPS["LEAF"], OPS["EXTERN"], OPS["GATHER"]
_MAP_OPS = (OPS["GATHER"], OPS["SCATTER"])


def traced_by(tape):
    """The derivative or recording under way whose values tape (a thread's
    own) has taken in, or None."""
    joined = tape.joined
    if joined is not None and joined.closed:
        return None
    return joined


def join(tape, trace_tape):
    """tape, another thread's own, takes in a value of trace_tape, the tape
    of a derivative or recording under way: from now on until that
    derivative has traced its function, tape counts as traced by it."""
    if tape.joined is trace_tape or trace_tape.joiners is None:
        return          # (joined already; or a kept trace's values: plain)
    other = traced_by(tape)
    if other is not None:
        raise NotImplementedError(
            "one thread took in traced values of two derivatives under way "
            "in other threads at once; give each derivative threads of its own")
    tape.joined = trace_tape
    DIFFERENTIATING.add(tape)
    if trace_tape.guards is not None and tape.guards is None:
        tape.guards = []
    trace_tape.joiners.append(tape)


def tracing(trace_tape):
    """trace_tape's derivative starts tracing its function: threads that
    take in its values join it from now on."""
    trace_tape.joiners = []


def release_joined(trace_tape):
    """The derivative of trace_tape has traced its function: the guards its
    joined tapes still hold move to it (a recording), and the tapes are
    their threads' own again."""
    for tape in trace_tape.joiners or ():
        if tape.joined is not trace_tape:
            continue
        if trace_tape.guards is not None and not trace_tape.closed \
                and not tape.closed:
            _move_guards(tape, trace_tape)
        tape.joined = None
        DIFFERENTIATING.discard(tape)
        tape.guards = None
    trace_tape.joiners = None


def lift(out, trace_tape):
    """The function's result with each Value or Array of a tape that joined
    trace_tape transplanted onto it (lists, tuples and dicts walked)."""
    if not trace_tape.joiners:
        return out
    if isinstance(out, (Value, Array)):
        owner = out._t
        if owner is not trace_tape and getattr(owner, "joined", None) is trace_tape:
            return trace_tape.adopt(out)
        return out
    if out.__class__ in (list, tuple):
        return out.__class__(lift(v, trace_tape) for v in out)
    if isinstance(out, dict):
        return {k: lift(v, trace_tape) for k, v in out.items()}
    return out


def transplant(v, tape):
    """v, a Value or Array of a tape that joined tape (the derivative's),
    recorded again on tape: the entries it was computed by, back to tape's
    own values.  Returns v's node on tape."""
    source = v._t
    done = tape.transplanted
    hit = done.get(id(v))
    if hit is not None:
        return hit[1]
    with source.lock:
        source.flush()
        nodes = list(source.nodes)
        cone = _cone(source._c, v._i)
        origins = {leaf._i: outer for outer, leaf in list(source.imports.values())
                   if leaf._t is source and 0 <= leaf._i < len(nodes)
                   and nodes[leaf._i] is leaf}
        steps = [_step(source, nodes, i, origins) for i in cone]
    for node, step in zip((nodes[i] for i in cone), steps):
        if id(node) not in done:
            done[id(node)] = (node, step(tape, done))
    _move_guards(source, tape)
    return done[id(v)][1]


def _cone(c, top):
    """The entries top depends on (top included), in order."""
    need = {top}
    stack = [top]
    while stack:
        i = stack.pop()
        for j in (c.a[i], c.b[i]):
            if j >= 0 and j not in need:
                need.add(j)
                stack.append(j)
    return sorted(need)


def _step(source, nodes, i, origins):
    """What records entry i of source again on the derivative's tape: a
    function of (tape, done), done mapping id(source node) -> (it, its node
    there).  Everything about the entry is read here, under source's lock."""
    c = source._c
    node = nodes[i]
    op, a, b = c.op[i], c.a[i], c.b[i]
    imm, flags = c.imm[i], c.flags[i]
    if getattr(node, "_bw", None) is not None:
        raise NotImplementedError(
            "a Value with a derivative rule of its own (_backward), computed "
            "in another thread from traced values, is not supported inside a "
            "derivative")
    if op == _LEAF:
        outer = origins.get(i)
        if outer is not None:       # a value the thread took in
            return lambda tape, done: tape.adopt(outer)
        if flags & _core.FLAG_VARIABLE:     # the thread's own variable
            return lambda tape, done: tape.adopt(node)
        if isinstance(node, Value):
            return lambda tape, done: tape.record(type(node), _LEAF, -1, -1, imm,
                                                  node._d, 0)
        return lambda tape, done: node._constant_on(tape)
    operand = (lambda tape, done, j=a: done[id(nodes[j])][1]) if a >= 0 else None
    other = (lambda tape, done, j=b: done[id(nodes[j])][1]) if b >= 0 else None
    if isinstance(node, Value):
        cls, value = type(node), node._d

        def scalar(tape, done):
            if op == _EXTERN:
                return record_extern(source.externs[i], _present(tape, done, operand, other),
                                     value)
            x = operand(tape, done) if operand else None
            y = other(tape, done) if other else None
            return tape.record(cls, op, x._i if x is not None else -1,
                               y._i if y is not None else -1, imm, value, flags)
        return scalar
    blk = c.blk[c.aux[i]]
    shape = tuple(blk.shape[k] for k in range(blk.ndim))
    if op == _EXTERN:
        rule, value = source.externs[i], node._d

        def extern(tape, done):
            operands = _present(tape, done, operand, other)
            if imm != 0.0:            # computed in C (a small matrix product)
                return record_computed(rule, operands, imm, shape)
            return record_extern(rule, operands, value)
        return extern
    if op in _MAP_OPS and blk.map != ffi.NULL:
        index_map = np.frombuffer(ffi.buffer(blk.map, 8 * blk.nmap), np.int64).copy()
        return lambda tape, done: _mapped(tape, op, operand(tape, done)._i, shape,
                                          index_map)
    strided = None
    if op == _GATHER:
        strided = (blk.offset, tuple(blk.stride[k] for k in range(blk.ndim)))

    def array(tape, done):
        x = operand(tape, done)
        y = other(tape, done) if other else None
        return _append(tape, object.__new__(Array), op, x._i,
                       y._i if y is not None else -1, imm, np.empty(shape),
                       strided=strided)
    return array


def _present(tape, done, *operands):
    return [f(tape, done) for f in operands if f is not None]


def _move_guards(source, tape):
    """The decisions the thread took on its joined tape (inside a
    recording): guards of tape's, on their entries transplanted there."""
    if not source.guards or tape.guards is None:
        return
    pending, source.guards = source.guards, []
    for node, expected, what in pending:
        tape.guards.append((tape.adopt(node), expected, what))


thread_hooks.join = join
thread_hooks.transplant = transplant
thread_hooks.tracing = tracing
thread_hooks.lift = lift
thread_hooks.release_joined = release_joined
