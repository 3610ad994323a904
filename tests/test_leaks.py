"""Memory a derivative makes is freed when it is done with, by reference
counting alone: no call of the functional API, no recording, no
micrograd-style custom op leaves a reference cycle for the collector."""
import contextlib
import functools
import gc
import math
import sys
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import pyautodiff as ad
import pyautodiff.autograd as ag
import pyautodiff.autograd.numpy as anp
from pyautodiff import tape_buffer, tape_compaction
from pyautodiff.micrograd.engine import Value as MValue

import micrograd.engine

X = np.linspace(0.1, 1.0, 5)
V = np.linspace(-1.0, 1.0, 5)


@pytest.fixture(autouse=True, scope="module")
def thread_tape_compacted():
    """A collection takes time in proportion to the objects alive: the dead
    entries that earlier tests left on this thread's tape (a million, after
    tests/test_faults.py's long chains) are dropped first."""
    gc.collect()
    ad.current_tape().compact()


@contextlib.contextmanager
def collector_off():
    """The collector off inside; yields a function that collects and says
    how many unreachable objects (cycles) it found."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield gc.collect
    finally:
        if was:
            gc.enable()


def tapes_seen(f):
    """f, also noting (weakly) the tape each call of it records on."""
    seen = []

    def traced(*args):
        seen.append(weakref.ref(ad.current_tape()))
        return f(*args)
    return traced, seen


def f_array(x):
    return np.sum(np.sin(x) * x)


def f_scalar(x):
    return ad.sin(x) * x + x * x


def f_vector(x):
    return np.sin(x) * x


# (name, call(f) -> result, f, oracle): each call traces f on a tape of its own
CALLS = [
    ("grad array", lambda f: ad.grad(f)(X), f_array, np.cos(X) * X + np.sin(X)),
    ("grad scalar", lambda f: ad.grad(f)(0.7), f_scalar,
     np.cos(0.7) * 0.7 + np.sin(0.7) + 1.4),
    ("value_and_grad", lambda f: ad.value_and_grad(f)(X)[1], f_array,
     np.cos(X) * X + np.sin(X)),
    ("jacobian", lambda f: ad.jacobian(f)(X), f_vector,
     np.diag(np.cos(X) * X + np.sin(X))),
    ("hessian", lambda f: ad.hessian(f)(X), f_array,
     np.diag(2 * np.cos(X) - X * np.sin(X))),
    ("hessian scalar", lambda f: ad.hessian(f)(0.7), f_scalar,
     2 * np.cos(0.7) - 0.7 * np.sin(0.7) + 2.0),
    ("hvp", lambda f: ad.hvp(f)(X, V), f_array, (2 * np.cos(X) - X * np.sin(X)) * V),
    ("jvp", lambda f: ad.jvp(f)(X, V)[1], f_vector, (np.cos(X) * X + np.sin(X)) * V),
    ("vjp", lambda f: ad.vjp(f)(X)[1](V), f_vector, (np.cos(X) * X + np.sin(X)) * V),
    ("grad tuple argnum", lambda f: ad.grad(f, (0, 1))(X, 2.0)[0],
     lambda x, c: np.sum(np.sin(x) * c), 2.0 * np.cos(X)),
    ("grad nested", lambda f: ad.grad(f)({"a": [X]})["a"][0],
     lambda d: np.sum(np.sin(d["a"][0])), np.cos(X)),
    ("grad of grad", lambda f: ad.grad(ad.grad(f))(0.7), f_scalar,
     2 * np.cos(0.7) - 0.7 * np.sin(0.7) + 2.0),
    ("autograd grad", lambda f: ag.grad(f)(X), lambda x: anp.sum(anp.tanh(x)),
     1 - np.tanh(X) ** 2),
    ("autograd elementwise_grad", lambda f: ag.elementwise_grad(f)(X),
     lambda x: anp.tanh(x), 1 - np.tanh(X) ** 2),
    ("autograd make_vjp", lambda f: ag.make_vjp(f)(X)[0](V), f_vector,
     (np.cos(X) * X + np.sin(X)) * V),
    ("autograd make_jvp", lambda f: ag.make_jvp(f)(X)(V)[1], f_vector,
     (np.cos(X) * X + np.sin(X)) * V),
    ("autograd make_hvp", lambda f: ag.make_hvp(f)(X)[0](V), f_array,
     (2 * np.cos(X) - X * np.sin(X)) * V),
    ("autograd hessian_vector_product",
     lambda f: ag.hessian_vector_product(f)(X, V), f_array,
     (2 * np.cos(X) - X * np.sin(X)) * V),
    ("record", lambda f: ad.record(f, X).grad(V), f_array,
     np.cos(V) * V + np.sin(V)),
    ("record value_and_grad", lambda f: ad.record(f, X).value_and_grad(V)[1],
     f_array, np.cos(V) * V + np.sin(V)),
    ("record scalar", lambda f: ad.record(f, 0.7).grad(0.3), f_scalar,
     np.cos(0.3) * 0.3 + np.sin(0.3) + 0.6),
    ("record hessian", lambda f: ad.record(f, X).hessian(X), f_array,
     np.diag(2 * np.cos(X) - X * np.sin(X))),
    ("function", lambda f: ad.function(f).grad(X), f_array,
     np.cos(X) * X + np.sin(X)),
]


@pytest.mark.parametrize("name, call, f, expected", CALLS, ids=[c[0] for c in CALLS])
def test_a_call_frees_its_tape_without_the_collector(name, call, f, expected):
    traced, seen = tapes_seen(f)
    call(traced)                                # first-use caches, imports
    with collector_off() as collect:
        seen.clear()
        for _ in range(3):
            np.testing.assert_allclose(call(traced), expected, rtol=1e-12, atol=1e-12)
        assert seen and all(ref() is None for ref in seen), \
            f"{name}: a tape outlived its call"
        assert collect() == 0, f"{name}: the calls left reference cycles"


def test_vjp_fn_keeps_its_tape_and_frees_it_when_dropped():
    traced, seen = tapes_seen(f_vector)
    with collector_off() as collect:
        _, vjp_fn = ad.vjp(traced)(X)
        assert seen[0]() is not None
        np.testing.assert_allclose(vjp_fn(V), (np.cos(X) * X + np.sin(X)) * V,
                                   rtol=1e-12)
        del vjp_fn
        assert seen[0]() is None
        assert collect() == 0


def test_a_trace_dropped_on_another_thread_frees_its_tape_there(monkeypatch):
    traced, seen = tapes_seen(f_vector)
    errors = []
    monkeypatch.setattr(sys, "unraisablehook", errors.append)
    holder = [ad.vjp(traced)(X)[1]]
    worker = threading.Thread(target=holder.clear)
    worker.start()
    worker.join()
    assert not errors
    assert seen[0]() is None


def test_a_value_kept_from_a_dropped_trace_is_one_of_a_released_tape():
    kept = []

    def f(x):
        kept.append(x)
        return x * x

    _, vjp_fn = ad.vjp(f)(3.0)
    assert vjp_fn(1.0) == 6.0
    del vjp_fn
    assert kept[0].data == 3.0 and kept[0].grad == 0.0
    with pytest.raises(ad.TapeError, match="released"):
        kept[0] * 2.0


def test_a_recording_frees_its_tape_when_dropped():
    traced, seen = tapes_seen(f_array)
    with collector_off() as collect:
        F = ad.record(traced, X)
        value, g = F.value_and_grad(V)        # the one-call evaluator
        np.testing.assert_allclose(g, np.cos(V) * V + np.sin(V), rtol=1e-12)
        assert value == pytest.approx(np.sum(np.sin(V) * V), rel=1e-12)
        assert seen[0]() is not None
        del F
        assert seen[0]() is None
        assert collect() == 0


def _raises_in_f(x):
    y = ad.sin(x) * x
    raise ValueError("from f")


def _raising_vjp(g, out, x):
    raise KeyError("from a rule")


_broken_op = ad.custom_op(np.sin, _raising_vjp)


@pytest.mark.parametrize("call, error", [
    (lambda: ad.grad(_raises_in_f)(X), ValueError),
    (lambda: ad.record(_raises_in_f, X), ValueError),
    (lambda: ad.grad(lambda x: np.sum(_broken_op(x)))(X), KeyError),
    (lambda: ad.grad(lambda x: _broken_op(x))(0.5), KeyError),
    (lambda: ad.grad(f_vector)(X), TypeError),          # not a scalar
], ids=["f raises", "record: f raises", "array rule raises",
        "scalar rule raises", "refused"])
def test_a_failed_call_leaves_no_cycles(call, error):
    with pytest.raises(error):
        call()
    with collector_off() as collect:
        for _ in range(3):
            with pytest.raises(error):
                call()
        assert collect() == 0


# -- micrograd: a custom op's closure refers to its own node ---------------------

def cube(self):
    """The custom op of micrograd's lecture, written as micrograd does."""
    out = type(self)(self.data ** 3, (self,), "cube")

    def _backward():
        self.grad += 3 * self.data ** 2 * out.grad
    out._backward = _backward
    return out


def _train(Value, steps, w=0.5):
    """steps of gradient descent on (cube(w * x) - 0.01)**2; w's value."""
    w = Value(w)
    for step in range(steps):
        x = Value(0.3 + step % 7 * 0.01)
        loss = (cube(w * x) - 0.01) ** 2
        w.grad = 0
        loss.backward()
        w.data -= 0.5 * w.grad
    return w.data


def test_custom_op_nodes_are_dropped_by_compaction():
    expected = _train(micrograd.engine.Value, 200)   # (whose cycles remain)
    with collector_off() as collect, ad.Tape() as t:
        assert _train(MValue, 200) == pytest.approx(expected, rel=1e-12)
        t.compact()
        assert len(t) == 0              # every step's nodes: nothing holds them
        assert collect() == 0


def test_custom_op_training_memory_stays_bounded(monkeypatch):
    # compact every few dozen steps (instead of every 10,000) to see it soon
    monkeypatch.setattr(tape_compaction, "COMPACT_MIN", 512)
    with collector_off() as collect, ad.Tape() as t:
        t.compact_at = tape_compaction.COMPACT_MIN
        _train(MValue, 100)
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            _train(MValue, 1500)
            grown = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
        assert grown < 600_000          # kept for good, the nodes cost ~1 KB a step
        assert len(t) < 2 * tape_compaction.COMPACT_MIN
        assert collect() == 0


# The forms a rule takes that hold its own node and its operand: the
# closure of the lecture (by name, through cells), default arguments, a
# lambda, keyword-only defaults, functools.partial by position and by
# keyword, a bound method of an object holding them, a list in a cell

def _tanh_rule(z, out):
    z.grad += (1 - out.data ** 2) * out.grad


class _TanhRule:
    def __init__(self, z, out):
        self.z, self.out = z, out

    def run(self):
        _tanh_rule(self.z, self.out)


def _by_cells(z, out):
    def _backward():
        _tanh_rule(z, out)
    return _backward


def _by_defaults(z, out):
    def _backward(z=z, out=out):
        _tanh_rule(z, out)
    return _backward


def _by_keyword_defaults(z, out):
    def _backward(*, z=z, out=out):
        _tanh_rule(z, out)
    return _backward


def _by_list_in_a_cell(z, out):
    both = [z, out]

    def _backward():
        _tanh_rule(*both)
    return _backward


RULES = {
    "cells": _by_cells,
    "defaults": _by_defaults,
    "lambda": lambda z, out: (lambda z=z, out=out: _tanh_rule(z, out)),
    "keyword defaults": _by_keyword_defaults,
    "partial": lambda z, out: functools.partial(_tanh_rule, z, out),
    "partial by keyword": lambda z, out: functools.partial(_tanh_rule, z=z, out=out),
    "bound method": lambda z, out: _TanhRule(z, out).run,
    "list in a cell": _by_list_in_a_cell,
}


def _tanh_train(Value, rule, steps):
    """steps of gradient descent through a tanh node of the user's own
    whose rule (of the form rule makes) holds its own node: w's value."""
    w = Value(0.5)
    for step in range(steps):
        z = w * (0.3 + step % 7 * 0.01)
        out = Value(math.tanh(z.data), (z,), "tanh_custom")
        out._backward = rule(z, out)
        loss = (out - 0.01) ** 2
        w.grad = 0
        loss.backward()
        w.data -= 0.5 * w.grad
    return w.data


@pytest.mark.parametrize("form", list(RULES))
def test_custom_op_nodes_are_dropped_whatever_form_their_rule_takes(form):
    """The rule's hold on its node and operand -- through cells, default
    arguments, a partial's arguments, a bound method's object -- is the
    node's own: a few thousand steps leave no entry on the tape once
    compacted (the collector, which the cycles through the rules leave
    nothing to find, run first or not), with micrograd's numbers."""
    expected = _tanh_train(micrograd.engine.Value, RULES[form], 600)
    for collect_first in (False, True):
        with collector_off() as collect, ad.Tape() as t:
            assert _tanh_train(MValue, RULES[form], 600) == pytest.approx(expected, rel=1e-12)
            if collect_first:
                assert collect() == 0
            t.compact()
            assert len(t) == 0
            assert collect() == 0


@pytest.mark.parametrize("form", list(RULES))
def test_custom_op_training_through_any_rule_stays_bounded(monkeypatch, form):
    """The training loop alone, its compactions automatic (every few
    hundred entries here, to see them soon): the tape and the memory
    stay bounded -- where the rule held its node through anything but
    cells they grew by three entries and ~1 KB a step."""
    monkeypatch.setattr(tape_compaction, "COMPACT_MIN", 512)
    with collector_off() as collect, ad.Tape() as t:
        t.compact_at = tape_compaction.COMPACT_MIN
        _tanh_train(MValue, RULES[form], 100)
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            _tanh_train(MValue, RULES[form], 1000)
            grown = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
        assert len(t) < 2 * tape_compaction.COMPACT_MIN
        assert grown < 600_000
        assert collect() == 0


def test_what_a_kept_custom_node_holds_stays_on_the_tape():
    # y's closure and children alone hold wx (no variable does): compaction
    # must keep wx with y, and y's gradient must come out as micrograd's
    def run(Value, tape=None):
        w, x = Value(0.5), Value(0.7)
        y = cube(w * x)
        spare = cube(w)                 # held through its rule only
        spare.grad = 2.0
        rule = spare._backward
        del spare
        if tape is not None:
            tape.compact()
        y.backward()
        rule()
        return w.grad, x.grad

    with ad.Tape() as t:
        got = run(MValue, t)
    assert got == pytest.approx(run(micrograd.engine.Value), rel=1e-12)
