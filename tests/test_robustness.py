"""Edge cases of recording and tape bookkeeping: interrupted operations,
assigned data, contexts and threads, copies, out-of-order blocks."""
import asyncio
import contextvars
import copy
import pickle
import sys
import threading

import pytest

import numpy as np

import pyautodiff as ad
from pyautodiff import _core
from pyautodiff import array as array_module
from pyautodiff import extern as extern_module
from pyautodiff.micrograd.engine import Value as MValue


def _interrupt_record_at(line):
    """Run ad.Value(5.0) with a KeyboardInterrupt raised when the recording
    code reaches `line` of record_into, as Ctrl-C between bytecodes would."""
    def tracer(frame, event, arg):
        if frame.f_code.co_name != "record_into":
            return None

        def local(frame, event, arg):
            if event == "line" and frame.f_lineno - frame.f_code.co_firstlineno == line:
                raise KeyboardInterrupt
            return local
        return local

    sys.settrace(tracer)
    try:
        ad.Value(5.0)
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)


@pytest.mark.parametrize("line", range(1, 9))
def test_an_interrupted_operation_leaves_the_tape_consistent(line):
    with ad.Tape() as t:
        a = ad.Value(2.0)
        _interrupt_record_at(line)
        b = ad.Value(3.0)
        f = a * b + b
        f.backward()
        assert (f.data, a.grad, b.grad) == (9.0, 3.0, 3.0)
        t.flush()
        assert t.nflushed == len(t.nodes) == t._c.n
        t.compact()
        assert (a.grad, b.grad) == (3.0, 3.0)


def _interrupt_in(code, line, fn):
    """Run fn() with a KeyboardInterrupt raised when `code` reaches `line`
    (counted from its first line), as Ctrl-C between bytecodes would."""
    def tracer(frame, event, arg):
        if frame.f_code is not code:
            return None

        def local(frame, event, arg):
            if event == "line" and frame.f_lineno - code.co_firstlineno == line:
                raise KeyboardInterrupt
            return local
        return local

    sys.settrace(tracer)
    try:
        fn()
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)


def _lines(fn):
    code = fn.__code__
    return sorted({ln - code.co_firstlineno for _, _, ln in code.co_lines() if ln})


# x * y on 3 elements runs the generated operator's inline steps (a pooled
# row); on 100 elements _append and _keep_entry
_ARRAY_STEPS = ([(3, ad.Array.__mul__, n) for n in _lines(ad.Array.__mul__)]
                + [(100, fn, n) for fn in (array_module._append, array_module._keep_entry)
                   for n in _lines(fn)])


@pytest.mark.parametrize("size, fn, line", _ARRAY_STEPS,
                         ids=[f"{s}-{f.__name__}-{n}" for s, f, n in _ARRAY_STEPS])
def test_an_interrupted_array_operation_leaves_the_tape_consistent(size, fn, line):
    """Wherever a KeyboardInterrupt lands in recording x * y, the C tape
    and the Python nodes still agree afterwards, and later operations
    record and differentiate correctly."""
    x0 = np.linspace(0.1, 0.9, size)
    y0 = np.linspace(1.5, 0.5, size)
    with ad.Tape() as t:
        x, y = ad.Array(x0), ad.Array(y0)
        a = x * y
        _interrupt_in(fn.__code__, line, lambda: x * y)
        t.flush()
        assert t.nflushed == len(t.nodes) == t._c.n
        s = (ad.tanh(x * y) + a).sum()
        s.backward()
        xy = x0 * y0
        np.testing.assert_allclose(s.data, np.sum(np.tanh(xy) + xy), rtol=1e-14)
        np.testing.assert_allclose(x.grad, (1.0 - np.tanh(xy) ** 2) * y0 + y0, rtol=1e-14)
        np.testing.assert_allclose(y.grad, (1.0 - np.tanh(xy) ** 2) * x0 + x0, rtol=1e-14)
        t.flush()
        assert t.nflushed == len(t.nodes) == t._c.n
        t.compact()
        np.testing.assert_allclose((a * 2.0).sum().data, 2.0 * np.sum(xy), rtol=1e-14)


_cube = ad.custom_op(lambda x: x ** 3, lambda g, out, x: (3.0 * x ** 2 * g,))
_EXTERN_STEPS = [(size, n) for size in (0, 4) for n in _lines(extern_module.record_extern)]


@pytest.mark.parametrize("size, line", _EXTERN_STEPS,
                         ids=[f"{s}-{n}" for s, n in _EXTERN_STEPS])
def test_an_interrupted_custom_op_leaves_no_entry_without_its_rule(size, line):
    """Wherever a KeyboardInterrupt lands in recording a custom op (on a
    Value, size 0, or an Array), every EXTERN entry on the tape still has
    its rule, and the op records and differentiates correctly after."""
    x0 = np.linspace(0.5, 1.5, size) if size else 0.75
    make = ad.Array if size else ad.Value
    with ad.Tape() as t:
        x = make(x0)
        _interrupt_in(extern_module.record_extern.__code__, line, lambda: _cube(x))
        y = _cube(x) * 2.0
        (y.sum() if size else y).backward()
        np.testing.assert_allclose(y.data, 2.0 * np.power(x0, 3), rtol=1e-15)
        np.testing.assert_allclose(x.grad, 6.0 * np.power(x0, 2), rtol=1e-15)
        t.flush()
        assert t.nflushed == len(t.nodes) == t._c.n
        extern = _core.OPS["EXTERN"]
        assert all(k in t.externs for k in range(t._c.n) if t._c.op[k] == extern)


def test_assigning_data_of_a_fused_op_keeps_its_constant():
    x = ad.Value(2.0)
    y = x * 3
    y.data = 10.0
    y.backward()
    assert x.grad == 3.0
    a = MValue(2.0)
    b = a ** 3
    b.data = 5.0
    assert b._op == "**3"
    b.backward()
    assert a.grad == 12.0


def test_micrograd_grads_follow_the_type_of_assigned_data():
    w2, x, w1 = MValue(1), MValue(2), MValue(3)
    w2.data = 0.7                      # an SGD step made the int weight a float
    h = w1 * x
    y = w2 * h
    y.backward()
    assert h.grad == 0.7 and w1.grad == pytest.approx(1.4)
    assert repr(w2) == "Value(data=0.7, grad=6)"


def test_contexts_copied_into_other_threads_do_not_share_the_tape():
    x = ad.Value(2.0)
    box = {}

    def work():
        box["y"] = x * 3.0
        box["tape"] = ad.current_tape()

    ctx = contextvars.copy_context()
    th = threading.Thread(target=ctx.run, args=(work,))
    th.start()
    th.join()
    assert box["tape"] is not ad.current_tape() and box["y"]._t is box["tape"]
    box["y"].backward()               # x entered the thread's tape as an input
    assert x.grad == 3.0

    async def in_thread():
        return await asyncio.to_thread(lambda: ad.current_tape())

    assert asyncio.run(in_thread()) is not ad.current_tape()


def test_values_made_in_an_asyncio_task_are_usable_after_it():
    async def make():
        return ad.Value(2.0), ad.Value(1.0)

    w, b = asyncio.run(make())
    y = w * 3.0 + b
    y.backward()
    assert (w.grad, b.grad) == (3.0, 1.0)


def test_blocks_ending_out_of_order_leave_the_thread_usable():
    outer_tape = ad.current_tape()

    def gen():
        with ad.Tape():
            yield ad.Value(1.0)

    g = gen()
    inner_value = next(g)
    with ad.Tape() as t2:
        g.close()                       # the generator's tape ends inside t2
        assert ad.current_tape() is t2
        z = ad.Value(4.0) * 2.0
        z.backward()
    assert ad.current_tape() is outer_tape
    w = ad.Value(3.0)
    (w * w).backward()
    assert w.grad == 6.0
    with pytest.raises(ad.TapeError):
        inner_value * 2.0


def test_release_inside_the_block_is_refused():
    with ad.Tape() as t:
        with pytest.raises(ad.TapeError):
            t.release()
        x = ad.Value(1.0)
        (x * 2.0).backward()
    assert x.grad == 2.0


def test_copies_do_not_alias_tape_entries():
    p = ad.Value(11.0)
    s = copy.copy(p)
    q = copy.deepcopy(p)
    assert s is not p and q is not p and s.data == q.data == 11.0
    r = pickle.loads(pickle.dumps(p))
    assert r.data == 11.0
    (q * 3.0).backward()
    assert q.grad == 3.0 and p.grad == s.grad == r.grad == 0.0
    from pyautodiff.micrograd.nn import MLP
    model = pickle.loads(pickle.dumps(MLP(2, [3, 1])))
    assert len(model.parameters()) == 13


def test_micrograd_values_used_in_an_explicit_tape_are_not_double_counted():
    w = MValue(3.0)
    with ad.Tape():
        y = w * 2.0
        y.backward()
        y.backward()
    assert w.grad == 4.0 and isinstance(w.grad, float)


def test_compaction_gives_memory_back():
    def big():
        x = ad.Value(1.0)
        for _ in range(300_000):
            x = x * 1.0
        return x

    box = {}

    def work():
        tape = ad.current_tape()
        big().backward()
        peak = tape.nbytes
        tape.compact()               # the big graph is garbage by now
        box["sizes"] = (peak, tape.nbytes, len(tape))

    th = threading.Thread(target=work)
    th.start()
    th.join()
    peak, after, n = box["sizes"]
    assert n < 100_000 and after < peak / 2


def test_released_tapes_and_reentrant_managers():
    with ad.Tape() as t:
        x = ad.Value(1.0)
    with pytest.raises(ad.TapeError):
        t.compact()
    with ad.no_grad():
        with pytest.raises(ad.TapeError):
            x * 2.0                     # released: also under no_grad
    ng = ad.no_grad()
    with ng:
        with ng:
            y = ad.Value(1.0) * 2.0
    z = ad.Value(1.0) * 2.0
    assert len(y._prev) == 0 and len(z._prev) == 1
    anomaly = ad.detect_anomaly()
    with anomaly:
        with anomaly:
            pass
    assert (ad.Value(1e308) * 10.0).data == float("inf")
