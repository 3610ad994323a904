"""An operation whose second operand is recorded as a new leaf (a number,
an ndarray, a Value from an enclosing tape) may compact the tape while it
records that leaf; the first operand's entry, looked up before, must still
be the one the operation reads."""
import numpy as np
import pytest

import pyautodiff as ad

BASE = np.array([-1.0, -0.4, 0.3, 0.6, 1.2])


def _tape_due_for_compaction():
    """An explicit tape holding x, an entry nothing refers to, and y = 2x;
    the next array element recorded compacts it (as a long loop's tape
    gets to be by itself), which renumbers y."""
    t = ad.Tape()
    t.__enter__()
    x = ad.Array(BASE)
    x * 1.0                               # dropped by the compaction
    y = x * 2.0
    t.compact_elems = t.array_elems
    return t, x, y


@pytest.mark.parametrize("name, op, reference", [
    ("maximum with an array", lambda y: ad.maximum(y, np.zeros(5)),
     lambda y: np.maximum(y, 0.0)),
    ("sum with an array", lambda y: y + np.full(5, 0.5), lambda y: y + 0.5),
    ("product with a list", lambda y: y * [3.0, 3.0, 3.0, 3.0, 3.0],
     lambda y: y * 3.0),
    ("comparison with an array", lambda y: y < np.zeros(5),
     lambda y: (y < 0.0).astype(float)),
])
def test_the_first_operand_survives_a_compaction_made_by_the_second(name, op, reference):
    t, x, y = _tape_due_for_compaction()
    try:
        z = op(y)
        generation = t.generation
        np.testing.assert_array_equal(z.data, reference(2.0 * BASE))
        assert generation == 1            # the compaction did happen
    finally:
        t.__exit__(None, None, None)


def test_a_relu_loop_runs_through_its_compactions():
    """ad.maximum(y, 0.0) records the constant 0.0 as a leaf after taking
    y's entry; in a long loop the tape's compaction falls on that leaf for
    one of three alignments of the loop's three entries."""
    for dead in range(3):
        with ad.Tape() as t:
            x = ad.Array(BASE)
            for _ in range(dead):
                x * 1.0
            kept = []
            for step in range(22_000):       # past 65,536 entries
                c = float(step % 5 - 2)
                z = ad.maximum(x * c, 0.0)
                kept.append(z)
                np.testing.assert_array_equal(z.data, np.maximum(BASE * c, 0.0))
            assert t.generation >= 1
            z.sum().backward()
            np.testing.assert_array_equal(x.grad, np.where(BASE * c > 0, c, 0.0))


def test_a_product_with_an_imported_operand_differentiates_its_first_operand():
    """y @ w, w from the enclosing tape: importing w may compact this tape;
    the gradient still reaches y's entry (the product's values are
    NumPy's either way)."""
    w = ad.Array(np.arange(15.0).reshape(5, 3))
    t, x, y = _tape_due_for_compaction()
    try:
        t.compact_elems = t.array_elems - 1   # the import compacts
        z = y @ w
        assert t.generation == 1
        z.sum().backward()
        np.testing.assert_allclose(x.grad, 2.0 * w.data.sum(axis=1), rtol=1e-15)
    finally:
        t.__exit__(None, None, None)
