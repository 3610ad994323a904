"""Tape control: threads, no_grad, explicit tapes, anomaly mode, memory."""
import gc
import math
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import tape as tape_module
from pyautodiff import tape_buffer, tape_compaction


def run_isolated(code):
    """Run code in a fresh interpreter, so a crash fails the test instead of
    killing the suite; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)


# -- threads ------------------------------------------------------------------

def test_each_thread_records_on_its_own_tape():
    results = {}

    def work(k):
        t = ad.current_tape()
        x = ad.Value(float(k))
        y = x * x + 3.0 * x
        y.backward()
        results[k] = (t, x.grad, y._t is t)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    tapes = {id(r[0]) for r in results.values()}
    assert len(tapes) == 4 and id(ad.current_tape()) not in tapes
    for k, (_, grad, own) in results.items():
        assert own and grad == 2 * k + 3.0


def test_concurrent_recording_gives_correct_gradients():
    errors = []

    def work(seed):
        try:
            for step in range(50):
                w = ad.Value(0.5 + seed)
                loss = w
                for _ in range(200):
                    loss = (loss * 0.999).tanh() + w * 0.001
                loss.backward()
                assert w.grad != 0.0
                x = ad.Value(float(seed + step))
                (x * x).backward()
                assert x.grad == 2 * (seed + step)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


def _in_thread(fn):
    box = {}

    def run():
        try:
            box["result"] = fn()
        except Exception as exc:
            box["error"] = exc

    th = threading.Thread(target=run)
    th.start()
    th.join()
    return box


def test_values_from_another_thread_are_inputs_there():
    x = ad.Value(2.0)
    y = x * 3.0
    for fn, data in ((lambda: x * 2.0, 4.0), (lambda: x + x, 4.0),
                     (lambda: x.tanh(), math.tanh(2.0)),
                     (lambda: ad.Value(1.0) * x, 2.0)):
        box = _in_thread(fn)
        assert box["result"].data == data and box["result"]._t is not x._t
    assert _in_thread(y.backward) == {"result": None}
    assert x.grad == 3.0
    # the owner thread is unaffected
    y.backward()
    assert x.grad == 6.0


# -- no_grad ------------------------------------------------------------------

def test_no_grad_computes_without_recording():
    w = ad.Value(1.5)
    tape = ad.current_tape()
    before = len(tape)
    with ad.no_grad():
        y = (w * 2.0 + w).tanh()
        z = y * y
    assert len(tape) == before
    assert isinstance(z, ad.Value)
    assert z.data == pytest.approx(__import__("math").tanh(4.5) ** 2)
    with pytest.raises(ad.TapeError):
        z.backward()
    # a no_grad result used later is a constant
    out = w * z
    out.backward()
    assert w.grad == z.data


def test_leaves_made_under_no_grad_are_still_inputs():
    with ad.no_grad():
        p = ad.Value(3.0)
    (p * p).backward()
    assert p.grad == 6.0


# -- explicit tapes -----------------------------------------------------------

def test_explicit_tape_records_frees_and_invalidates():
    w = ad.Value(2.0)             # on the thread's tape
    outer = ad.current_tape()
    # The block's end compacts the thread's tape where arrays that earlier
    # tests dropped lie on it (tape_lifetime.py): compacted first, it has
    # none, and its length tells whether anything landed on it
    gc.collect()
    outer.compact()
    outer_len = len(outer)
    with ad.Tape() as t:
        assert ad.current_tape() is t
        x = ad.Value(3.0)
        y = x * w + w
        y.backward()
        assert len(t) >= 4 and t.nbytes > 0
        listing = str(t)
    assert ad.current_tape() is outer
    assert len(outer) == outer_len            # nothing landed outside
    assert "mul" in listing and "leaf" in listing
    # the outer parameter got its gradient through the import
    assert w.grad == 4.0
    # data and grads of the released Values stay readable
    assert (x.grad, y.data) == (2.0, 8.0)
    assert len(t) == 0 and "released" in repr(t)
    for use in (lambda: y * 2.0, lambda: y + x, lambda: y.tanh(),
                lambda: y.backward(), lambda: w * y, lambda: y._prev):
        with pytest.raises(ad.TapeError):
            use()


def test_ending_a_tape_from_another_thread_raises_and_changes_nothing():
    t = ad.Tape()
    t.__enter__()
    try:
        x = ad.Value(2.0)
        y = x * x
        errors = []

        def end_elsewhere():
            for end in (lambda: t.__exit__(None, None, None), t.release):
                try:
                    end()
                except ad.TapeError as e:
                    errors.append(str(e))

        worker = threading.Thread(target=end_elsewhere)
        worker.start()
        worker.join()
        assert len(errors) == 2
        assert all("entered in another thread" in e for e in errors)
        assert ad.current_tape() is t       # still recording here
        z = y * 3
        z.backward()
        assert x.grad == 12.0               # d(3 x^2)/dx at 2
    finally:
        t.__exit__(None, None, None)
    assert t.closed


def test_nested_tapes_route_gradients_outward():
    a = ad.Value(2.0)
    with ad.Tape():
        b = a * a                     # on the middle tape
        with ad.Tape():
            c = b * 3.0 + a           # dc/da = 3*2a + 1 = 13
            c.backward()
        assert b.grad == 3.0
    assert a.grad == 13.0


def test_use_after_release_does_not_crash_in_a_fresh_process():
    proc = run_isolated("""
        import pyautodiff as ad
        with ad.Tape():
            x = ad.Value(1.0)
            y = x.exp()
        for use in (lambda: y * 2, lambda: y.backward(), lambda: x.log(),
                    lambda: setattr(y, 'grad', 1.0), lambda: print(y._op)):
            try:
                use()
            except ad.TapeError:
                pass
            else:
                raise SystemExit('no TapeError')
        print('ok', y.data, x.grad)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok")


def test_print_tape_lists_the_wengert_list():
    with ad.Tape() as t:
        x = ad.Value(2.0)
        y = ad.Value(3.0)
        f = x * y + y ** 2
        f.backward()
        lines = str(t).splitlines()
    assert lines[0].split() == ["index", "op", "operands", "value", "adjoint"]
    rows = [ln.split() for ln in lines[1:]]
    assert [r[1] for r in rows] == ["leaf", "leaf", "mul", "powc", "add"]
    assert rows[2][:4] == ["2", "mul", "0,", "1"]
    assert float(rows[4][-2]) == 15.0 and float(rows[1][-1]) == 8.0


# -- detect_anomaly -------------------------------------------------------------

def test_anomaly_names_the_op_that_made_a_nan():
    x = ad.Value(1e308)
    with ad.detect_anomaly():
        y = x * 0.5
        with pytest.raises(FloatingPointError, match=r"mul\w* at tape index \d+ produced inf"):
            x * 10.0
        inf = ad.Value(float("inf"))
        with pytest.raises(FloatingPointError, match=r"produced nan"):
            inf - inf
    assert (x * 10.0).data == float("inf")   # no check outside the block
    y.backward()


def test_anomaly_in_backward():
    x = ad.Value(0.0)
    y = x.sqrt()
    with ad.detect_anomaly():
        with pytest.raises(FloatingPointError, match=r"backward of sqrt at tape index \d+ produced inf"):
            y.backward()
    assert x.grad == 0.0          # the failed sweep left no partial gradient
    y.backward()
    assert x.grad == float("inf")


# -- memory -------------------------------------------------------------------

def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_training_loop_runs_in_bounded_memory():
    # in a thread of its own, so the loop's tape starts empty: a tape may
    # hold up to about twice the largest graph it ever had alive
    box = _in_thread(_training_loop_memory)
    assert "error" not in box, box.get("error")


def _training_loop_memory():
    import random
    from pyautodiff.micrograd.nn import MLP
    from pyautodiff.micrograd.engine import Value

    random.seed(0)
    model = MLP(2, [8, 8, 1])
    data = [([random.uniform(-1, 1), random.uniform(-1, 1)], random.choice([-1, 1]))
            for _ in range(8)]
    tape = ad.current_tape()
    lengths, rss = [], []
    for step in range(1000):
        loss = sum(((1 + -y * model([Value(a), Value(b)])).relu()
                    for (a, b), y in data), Value(0.0))
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data -= 0.01 * p.grad
        lengths.append(len(tape))
        if step in (300, 999):
            rss.append(_rss_bytes())
    per_step = lengths[1] - lengths[0]
    bound = 3 * (per_step + len(model.parameters())) + tape_compaction.COMPACT_MIN + tape_buffer.SPILL_EVERY
    assert max(lengths) < bound, (max(lengths), bound)
    if not os.environ.get("PYAUTODIFF_SANITIZED"):   # ASan keeps freed memory
        assert rss[1] - rss[0] < 16 * 2**20


def test_scalar_records_spill_only_as_their_buffer_needs(monkeypatch):
    # Scalar entries take no array block, so the blocks kept free for
    # arrays must not make a scalar graph spill every few hundred records
    # (a spill takes the tape's lock and costs more than a record).
    calls = []
    spill = tape_module.Tape.spill
    monkeypatch.setattr(tape_module.Tape, "spill",
                        lambda self, out=None: (calls.append(1), spill(self, out))[1])
    with ad.Tape():
        x, y = ad.Value(0.5), ad.Value(0.25)
        z = x
        for _ in range(20000):
            z = z * 0.999 + y
        z.backward()
        expected = sum(0.999 ** k for k in range(20000))
        assert math.isclose(y.grad, expected, rel_tol=1e-12)
    # 40,000 records: the buffer doubles from 64 records (10 spills), never
    # one spill per block reserve (156)
    assert len(calls) <= 16, len(calls)


def test_array_entries_still_spill_before_the_blocks_run_out(monkeypatch):
    # The C tape's block table may move only in spill (under the lock), so
    # an array append must always find a free block there already.
    caps = []
    spill = tape_module.Tape.spill

    def counted(self, out=None):
        spill(self, out)
        caps.append(self._c.blk_cap)
    monkeypatch.setattr(tape_module.Tape, "spill", counted)
    with ad.Tape() as t:
        a = ad.Array([1.0, 2.0])
        s = ad.Value(1.0)
        caps.append(t._c.blk_cap)
        for _ in range(tape_buffer.BLOCKS_AHEAD * 3):
            a = a * 1.0001
            s = s * 1.0     # scalars between them take no block
            assert t._c.blk_cap == caps[-1]     # grown by spill alone
        assert len(caps) > 3                   # it did have to grow
        (a.sum() * s).backward()
        want = np.array([1.0, 2.0])
        for _ in range(tape_buffer.BLOCKS_AHEAD * 3):
            want = want * 1.0001
        assert np.array_equal(a.data, want)
