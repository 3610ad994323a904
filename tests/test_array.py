"""ad.Array: values against NumPy, gradients against central differences,
broadcasting, reductions, mixed Value/Array graphs and error paths."""
import contextlib
import itertools
import operator
import warnings

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import _core, derivatives, ops
from pyautodiff.testing.rules import RULES, into_domain
from helpers import numeric_grad

rng = np.random.default_rng(0)


def check(fn, *arrays, weights=None):
    """fn on Arrays against fn on ndarrays (values), and the gradient of
    sum(fn * weights) against central differences."""
    arrays = [np.asarray(a, dtype=float) for a in arrays]
    ads = [ad.Array(a) for a in arrays]
    out = fn(*ads)
    expected = fn(*arrays)
    assert isinstance(out, ad.Array)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out.data, expected, rtol=1e-12, atol=1e-12)
    w = rng.normal(size=np.shape(expected)) if weights is None else weights
    out.backward(w)
    for k in range(len(arrays)):
        num = numeric_grad(lambda *xs: float(np.sum(fn(*xs) * w)), arrays, k)
        np.testing.assert_allclose(ads[k].grad, num, rtol=1e-5, atol=1e-7)


def check_against(ours, reference, x, rtol=1e-12):
    """ours on an Array of x against reference on x (values), and the
    gradient of sum(ours * w) against central differences of reference."""
    xa = ad.Array(x)
    out = ours(xa)
    np.testing.assert_allclose(out.data, reference(x), rtol=rtol, atol=0)
    w = rng.normal(size=out.shape)
    out.backward(w)
    num = numeric_grad(lambda y: float(np.sum(reference(y) * w)), [x], 0)
    np.testing.assert_allclose(xa.grad, num, rtol=1e-5, atol=1e-7)


BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
}
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((1,), (2, 3)),
          ((), (3,)), ((5, 1), (1, 5))]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("sa, sb", SHAPES)
def test_binary_ops_broadcast_like_numpy(name, sa, sb):
    a = rng.uniform(0.5, 2.0, size=sa)
    b = rng.uniform(0.5, 2.0, size=sb)
    check(BINARY[name], a, b)


@pytest.mark.parametrize("fn", [
    lambda a: a + 2.5, lambda a: 2.5 + a, lambda a: a - 2.5, lambda a: 2.5 - a,
    lambda a: a * 2.5, lambda a: 2.5 * a, lambda a: a / 2.5, lambda a: 2.5 / a,
    lambda a: a ** 3, lambda a: a ** 0.5, lambda a: 2.5 ** a, lambda a: a ** 2,
], ids=["addc", "raddc", "subc", "rsubc", "mulc", "rmulc", "divc", "rdivc",
        "powc3", "powc_half", "rpowc", "square"])
def test_ops_with_constants(fn):
    check(fn, rng.uniform(0.5, 2.0, size=(2, 3)))


def _spelled(op):
    """ad.NAME where the package has it, else the operator (-x)."""
    if op.function:
        return getattr(ad, op.function)
    return getattr(operator, op.method.strip("_"))


# every unary op of the package's table (ops.py): (ours, the oracle row's
# value on ndarrays, the row)
UNARY = {op.name.lower(): (_spelled(op), RULES[op.name.lower()].value,
                           RULES[op.name.lower()])
         for op in ops.ELEMENTWISE if op.method in ops.UNARY}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops(name):
    ours, theirs, rule = UNARY[name]
    x = rng.uniform(0.2, 2.0, size=(3, 4)) * rng.choice([-1, 1], size=(3, 4))
    check_against(ours, theirs, into_domain(rule, x))


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (-1, 0)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("mean", [False, True])
def test_sum_and_mean(axis, keepdims, mean):
    x = rng.normal(size=(2, 3, 4))
    name = "mean" if mean else "sum"
    check(lambda a: getattr(a, name)(axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize("shape, axis", [((1_000_000,), None), ((40, 25_000), None),
                                         ((40, 25_000), 1), ((4, 10, 25_000), (1, 2))])
def test_sums_of_contiguous_rows_are_pairwise(shape, axis):
    # 0.1 a million times: a serial sum is off by about 1e-11 relative, a
    # pairwise one (log n roundings deep) by about 1e-16
    x = np.full(shape, 0.1)
    a = ad.Array(x)
    s = a.sum(axis=axis)
    count = x.size if axis is None else np.prod([shape[d] for d in axis]) \
        if isinstance(axis, tuple) else shape[axis]
    exact = 0.1 * count                     # of the double nearest 0.1, to 1e-16
    np.testing.assert_allclose(s.data, exact, rtol=4e-16, atol=0)
    np.testing.assert_allclose(a.mean(axis=axis).data, 0.1, rtol=4e-16, atol=0)
    F = ad.record(lambda v: v.sum(axis=axis), x)    # replay: the same bits
    y = rng.normal(size=shape)
    assert np.array_equal(F(y), ad.Array(y).sum(axis=axis).data)
    assert np.array_equal(F(x), s.data)
    s.sum().backward()
    assert np.array_equal(a.grad, np.ones(shape))


def test_reshape():
    x = rng.normal(size=(2, 6))
    check(lambda a: (a.reshape(3, 4) * np.arange(4.0)), x)
    check(lambda a: a.reshape((-1,)).reshape(4, 3), x)


def test_mixed_value_and_array_graph():
    v = ad.Value(1.5)
    A = ad.Array(rng.normal(size=(3, 2)))
    out = (v * A).tanh().sum() + v * v + A.mean() * v
    out.backward()
    a = A.data
    dv = np.sum(a * (1 - np.tanh(1.5 * a) ** 2)) + 3.0 + a.mean()
    dA = 1.5 * (1 - np.tanh(1.5 * a) ** 2) + 1.5 / a.size
    assert v.grad == pytest.approx(dv, rel=1e-12)
    np.testing.assert_allclose(A.grad, dA, rtol=1e-12)
    assert isinstance(out, ad.Array) and out.shape == ()


def test_values_in_array_functions_are_0d_operands():
    v, w = ad.Value(0.5), ad.Value(-2.0)
    a = ad.Array([1.0, 2.0])
    s = ad.stack([v, w, v])
    c = ad.concatenate([a, ad.expand_dims(w, 0)])
    r = ad.reshape(v, (1, 1))
    lse = ad.logsumexp(v)
    out = (s * np.array([1.0, 2.0, 3.0])).sum() + (c * c).sum() + 5.0 * r.sum() \
        + ad.softmax(w) * 7.0 + lse + ad.transpose(w) + ad.squeeze(v)
    np.testing.assert_array_equal(s.data, [0.5, -2.0, 0.5])
    np.testing.assert_array_equal(c.data, [1.0, 2.0, -2.0])
    assert r.shape == (1, 1) and lse.shape == () and float(lse.data) == 0.5
    out.backward()
    # d/dv: 1 + 3 (stack), 5 (reshape), 1 (logsumexp of one number), 1 (squeeze)
    assert v.grad == pytest.approx(11.0, rel=1e-12)
    # d/dw: 2 (stack), 2w (concatenate), 0 (softmax of one number is 1), 1
    assert w.grad == pytest.approx(2.0 - 4.0 + 1.0, rel=1e-12)
    np.testing.assert_array_equal(a.grad, [2.0, 4.0])
    with ad.no_grad():
        assert np.array_equal(ad.stack([v, w]).data, [0.5, -2.0])


def test_zero_d_and_empty_arrays():
    s = ad.Array(3.0)
    (s * s).backward()
    assert s.grad.shape == () and float(s.grad) == 6.0
    e = ad.Array(np.zeros((0, 3)))
    total = (e * 2.0).sum() + ad.Array(1.0)
    total.backward()
    assert e.grad.shape == (0, 3) and float(total.data) == 1.0


@pytest.mark.parametrize("shape", [(), (0,), (2, 0), (0, 3), (2, 1, 3), (4, 0, 2)])
def test_reductions_of_empty_and_0d_arrays_match_numpy(shape):
    """Values and shapes as NumPy's for every axis and keepdims, recorded
    and under no_grad: a mean over nothing is NaN, a max or min over an
    empty axis a ValueError, a bad axis NumPy's AxisError."""
    x = rng.normal(size=shape)
    axes = [None, (), 0, -1, 1, -2, (0, 1), (0, -1), 3]
    for name, axis, keepdims in itertools.product(("sum", "mean", "max", "min"),
                                                  axes, (False, True)):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
            except ValueError as exc:    # AxisError too
                for mode in (contextlib.nullcontext, ad.no_grad):
                    with mode(), pytest.raises(type(exc)):
                        getattr(ad.Array(x), name)(axis=axis, keepdims=keepdims)
                continue
            for mode in (contextlib.nullcontext, ad.no_grad):
                with mode():
                    got = getattr(ad.Array(x), name)(axis=axis, keepdims=keepdims)
                assert got.shape == np.shape(want), (name, axis, keepdims)
                np.testing.assert_array_equal(got.data, want)


def test_broadcast_shapes_with_empty_dimensions_match_numpy():
    dims = [(), (0,), (1,), (3,), (1, 0), (2, 1), (2, 3), (0, 1, 3), (1, 1, 1)]
    for sa, sb in itertools.product(dims, dims):
        a, b = ad.Array(np.ones(sa)), np.full(sb, 2.0)
        try:
            want = np.broadcast_shapes(sa, sb)
        except ValueError:
            with pytest.raises(ValueError) as info:
                a * b
            assert str(sa) in str(info.value) and str(sb) in str(info.value)
            continue
        out = a * b
        assert out.shape == want
        np.testing.assert_array_equal(out.data, np.ones(sa) * np.full(sb, 2.0))


def test_grads_accumulate_and_reset():
    A = ad.Array([1.0, 2.0])
    (A * 3.0).sum().backward()
    (A * 3.0).sum().backward()
    np.testing.assert_array_equal(A.grad, [6.0, 6.0])
    A.grad = 0
    np.testing.assert_array_equal(A.grad, [0.0, 0.0])


def test_parameter_updates_in_place():
    W = ad.Array([[1.0, -2.0]])
    for _ in range(3):
        loss = ((W * 2.0) ** 2).sum()
        W.grad = 0
        loss.backward()
        W.data -= 0.1 * W.grad          # d/dW 4W^2 = 8W: W *= 0.2
    np.testing.assert_allclose(W.data, [[0.008, -0.016]])


def test_errors():
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        ad.Array(np.ones(3)) + ad.Array(np.ones(4))
    with pytest.raises(ValueError, match="one element"):
        ad.Array(np.ones(3)).backward()
    with pytest.raises(ValueError, match="shape"):
        ad.Array(np.ones(3)).backward(np.ones(4))
    for bad in (np.array(["a"]), np.array([1j]), np.array([object()], dtype=object)):
        with pytest.raises(TypeError):
            ad.Array(bad)
    intermediate = ad.Array([1.0]) * 2.0
    with pytest.raises(ValueError):
        intermediate.data[0] = 5.0          # a recorded result is read-only


def test_no_grad_and_explicit_tape():
    A = ad.Array([1.0, 2.0])
    with ad.no_grad():
        B = (A * 2.0).exp()
    np.testing.assert_allclose(B.data, np.exp([2.0, 4.0]))
    with pytest.raises(ad.TapeError):
        B.backward()
    with ad.Tape():
        C = ad.Array([3.0, 4.0])
        (C * C).sum().backward()
    np.testing.assert_array_equal(C.grad, [6.0, 8.0])
    with pytest.raises(ad.TapeError):
        C * 2.0


def test_arrays_computed_under_no_grad_are_constants_later():
    """An Array computed under no_grad (as a torch tensor made there) is a
    constant when a recorded operation uses it: as either operand of an
    operator, sliced, reduced, on the default tape and in a Tape block;
    gradients flow to the recorded operands only."""
    x0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    A = ad.Array(x0)
    with ad.no_grad():
        B = A * 2.0                  # the same shape as A
        T = A.T                      # a transposed view under no_grad
    k0 = 2.0 * x0
    out = (B * A + A * B).sum() + (T[1:] * 3.0).sum() + (B[:, ::2].sum() * A).sum()
    out.backward()
    want = (k0 * x0 + x0 * k0).sum() + 3.0 * x0.T[1:].sum() + k0[:, ::2].sum() * x0.sum()
    np.testing.assert_allclose(out.data, want, rtol=1e-15)
    np.testing.assert_array_equal(A.grad, 2.0 * k0 + k0[:, ::2].sum())
    A.grad = 0
    with ad.Tape():
        inner = (ad.tanh(A) * B).sum() - (B - A).sum()
        inner.backward()
    np.testing.assert_allclose(A.grad, (1.0 - np.tanh(x0) ** 2) * k0 + 1.0, rtol=1e-14)
    with pytest.raises(ad.TapeError):
        B.backward()                 # still nothing to differentiate


def test_an_array_computed_under_no_grad_is_read_at_each_use():
    """A constant made from an Array computed under no_grad holds its
    values as they are when an operation uses it, as an ndarray operand
    does: assigning its data between two uses changes the second result
    and its gradient."""
    x0 = np.array([1.0, 2.0, 3.0])
    A = ad.Array(x0)
    with ad.no_grad():
        B = ad.Array(np.zeros(3)) + 1.0
    first = (A * B).sum()
    B.data = [5.0, -1.0, 0.5]
    second = (A * B).sum()
    assert first.data == x0.sum()
    assert second.data == 5.0 * 1.0 - 1.0 * 2.0 + 0.5 * 3.0
    second.backward()
    np.testing.assert_array_equal(A.grad, [5.0, -1.0, 0.5])


def test_values_computed_under_no_grad_are_constants_in_array_operations():
    """A scalar Value computed under no_grad is a constant operand of an
    Array operation on either side, of a custom op and of a comparison
    inside ad.record; the gradients go to the recorded operands only."""
    x0 = np.array([0.5, -1.5, 2.0])
    A = ad.Array(x0)
    w = ad.Value(0.25)
    with ad.no_grad():
        c = ad.Value(2.0) * 1.5                  # 3.0, no tape
    out = (A * c).sum() + (c - A).sum() + (ad.tanh(c * A) * w).sum()
    out.backward()
    np.testing.assert_allclose(
        out.data, 3.0 * x0.sum() + (3.0 - x0).sum()
        + 0.25 * np.tanh(3.0 * x0).sum(), rtol=1e-15)
    np.testing.assert_allclose(
        A.grad, 3.0 - 1.0 + 0.25 * 3.0 * (1.0 - np.tanh(3.0 * x0) ** 2), rtol=1e-14)
    assert w.grad == pytest.approx(np.tanh(3.0 * x0).sum(), rel=1e-14)
    assert c.grad == 0.0
    square = ad.custom_op(lambda a, b: a * b * b, lambda g, o, a, b: (g * b * b, 2 * g * a * b))
    y = square(c, w)                             # d/dw = 2 * c * w
    y.backward()
    assert y.data == 3.0 * 0.0625 and w.grad == pytest.approx(
        np.tanh(3.0 * x0).sum() + 2 * 3.0 * 0.25, rel=1e-14)

    def f(x):
        return x * 2.0 if x > c else x * 3.0
    F = ad.record(f, 4.0)
    assert F(5.0) == 10.0 and F.grad(5.0) == 2.0
    with pytest.raises(ad.BranchError):
        F(1.0)


def test_arrays_computed_under_no_grad_do_not_pile_up_on_the_tape():
    """A loop that computes a target under no_grad each step and uses it in
    the step's loss (on the thread's own tape) leaves nothing of the old
    steps behind: after a compaction only the parameter is left."""
    import threading
    box = {}

    def loop():
        W = ad.Array(np.array([1.0, -2.0, 4.0]))
        t = ad.current_tape()
        for step in range(200):
            with ad.no_grad():
                target = W * 0.5
            loss = ((W - target) ** 2).sum()
            W.grad = 0
            loss.backward()
            box.setdefault("grads", []).append((W.data.copy(), W.grad.copy()))
            W.data -= 0.01 * W.grad
        del target, loss
        t.compact()
        box["entries"] = len(t)

    th = threading.Thread(target=loop)
    th.start()
    th.join()
    for w, g in box["grads"]:
        np.testing.assert_allclose(g, 2.0 * (w - 0.5 * w), rtol=1e-15)
    assert box["entries"] == 1


def test_array_ops_are_every_op_of_the_enum_but_leaf():
    # the elementwise ops and SUM/RESHAPE all run on arrays
    used = set()
    with ad.Tape() as t:
        a = ad.Array([0.5, 1.5])
        b = ad.Array([1.0, 2.0])
        for fn in BINARY.values():
            fn(a, b)
        for fn, _, rule in UNARY.values():
            fn(into_domain(rule, a))
        for fn in (lambda x: x + 2.0, lambda x: 2.0 - x, lambda x: x * 2.0,
                   lambda x: x / 2.0, lambda x: 2.0 / x, lambda x: x ** 2,
                   lambda x: x ** 3, lambda x: 2.0 ** x, lambda x: x.sum(), lambda x: x.reshape(2, 1),
                   lambda x: x @ x, lambda x: x.max(), lambda x: x.min(),
                   lambda x: x[::-1], lambda x: ad.maximum(x, b),
                   lambda x: ad.minimum(x, b), lambda x: ad.where([True, False], x, b),
                   lambda x: ad.concatenate([x, b]), lambda x: x < b,
                   lambda x: x <= b, lambda x: np.equal(x, b),
                   lambda x: np.not_equal(x, b), lambda x: ad.logsumexp(x),
                   lambda x: np.arctan2(x, b), lambda x: np.hypot(x, b),
                   lambda x: np.logaddexp(x, b), lambda x: derivatives._times(x, b),
                   np.floor, np.ceil, np.trunc, np.rint, np.sign, ad.stop_gradient,
                   lambda x: x.prod()):
            fn(a)
        t.flush()
        used = {t._c.op[i] for i in range(t.nflushed)}
    assert used == set(_core.OPS.values())


MATMUL_SHAPES = [((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)),
                 ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((3,), (2, 3, 4))]


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES)
def test_matmul_follows_numpy(sa, sb):
    check(lambda a, b: a @ b, rng.normal(size=sa), rng.normal(size=sb))


def test_matmul_with_ndarrays_and_errors():
    W = ad.Array(rng.normal(size=(3, 4)))
    x = rng.normal(size=4)
    out = ad.matmul(W, x)
    np.testing.assert_allclose(out.data, W.data @ x)
    (out * np.array([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(W.grad, np.outer([1.0, 2.0, 3.0], x))
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(3,\)"):
        W @ ad.Array(np.ones(3))


def test_custom_op_on_values_arrays_and_plain_numbers():
    cube = ad.custom_op(lambda x: x ** 3, lambda g, out, x: (3 * x ** 2 * g,))
    assert cube(2.0) == 8.0
    v = ad.Value(2.0)
    (cube(v) + v).backward()
    assert v.grad == 13.0
    A = ad.Array([1.0, 2.0])
    cube(A).sum().backward()
    np.testing.assert_array_equal(A.grad, [3.0, 12.0])
    scale = ad.custom_op(lambda x, k: x * k, lambda g, out, x, k: (g * k, None))
    B = ad.Array([1.0, -1.0])
    (scale(B, 5.0) * B).sum().backward()
    np.testing.assert_array_equal(B.grad, [10.0, -10.0])


def test_custom_op_errors_come_back_as_themselves():
    def bad_vjp(g, out, x):
        raise KeyError("boom")
    op = ad.custom_op(lambda x: x * 2.0, bad_vjp)
    v = ad.Value(1.0)
    y = op(v) * 3.0
    with pytest.raises(KeyError, match="boom"):
        y.backward()
    wrong = ad.custom_op(lambda x: x, lambda g, out, x: (g, g))
    with pytest.raises(ValueError, match="cotangents"):
        wrong(ad.Value(1.0)).backward()
    # the tape is still usable
    w = ad.Value(2.0)
    (w * w).backward()
    assert w.grad == 4.0


def test_extern_entries_replay_through_their_python_rule():
    from pyautodiff._core import lib
    with ad.Tape() as t:
        W = ad.Array([[1.0, 2.0], [3.0, 4.0]])
        x = ad.Array([1.0, -1.0])
        y = (W @ x).tanh()
        before = y.data.copy()
        t.flush()
        W.data = [[2.0, 0.0], [0.0, 2.0]]      # new inputs, then replay in C
        _core.check(lib.ad_forward(t._c, 0, t.nflushed, 0), t._c, t)
        np.testing.assert_allclose(y.data, np.tanh([2.0, -2.0]))
        assert not np.allclose(before, y.data)


# -- shape ops, indexing, joins ----------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda a: a.T, lambda a: a.transpose(2, 0, 1), lambda a: ad.transpose(a, (1, 0, 2)),
    lambda a: a[1], lambda a: a[:, 1:3], lambda a: a[..., ::-2], lambda a: a[0, 2, 1],
    lambda a: a[[0, 1, 1, 0]], lambda a: a[:, [2, 2, 0]], lambda a: a[np.array([[1, 0]])],
    lambda a: a[a.data > 0] if isinstance(a, ad.Array) else a[a > 0],
    lambda a: a[None, :, np.newaxis], lambda a: ad.expand_dims(a, 1),
    lambda a: ad.squeeze(ad.expand_dims(a, 0), 0),
], ids=["T", "transpose", "ad.transpose", "int", "slice", "ellipsis-step",
        "scalar", "int-array-repeats", "int-array-axis1", "2d-int-array",
        "bool-mask", "newaxis", "expand_dims", "squeeze"])
def test_gathers(fn):
    x = rng.normal(size=(2, 3, 4))

    def plain(y):              # fn on an ndarray (ad.* functions give Arrays)
        out = fn(y)
        return out.data if isinstance(out, ad.Array) else np.asarray(out)

    check_against(fn, plain, x, rtol=0)


def test_repeated_indices_accumulate():
    a = ad.Array([1.0, 2.0, 3.0])
    a[[0, 0, 2, 0]].sum().backward()
    np.testing.assert_array_equal(a.grad, [3.0, 0.0, 1.0])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_and_stack(axis):
    x, y = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    check(lambda a, b: ad.concatenate([a, b], axis=axis)
          if isinstance(a, ad.Array) else np.concatenate([a, b], axis=axis), x, y)
    check(lambda a, b: ad.stack([a, b], axis=axis)
          if isinstance(a, ad.Array) else np.stack([a, b], axis=axis), x, y)


def test_max_and_min_split_ties_and_skip_the_losers():
    a = ad.Array([[1.0, 5.0, 5.0], [np.nan, 0.0, -1.0]])
    m = a.max(axis=1)
    np.testing.assert_array_equal(m.data, [5.0, np.nan])
    m.backward(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(a.grad, [[0.0, 0.5, 0.5], [0.0, 0.0, 0.0]])
    b = ad.Array(rng.normal(size=(3, 4)))
    check(lambda z: z.min(axis=0) if isinstance(z, ad.Array) else z.min(axis=0), b.data)
    check(lambda z: z.max() if isinstance(z, ad.Array) else z.max(), b.data)


def test_maximum_minimum_clip_where_are_nan_safe():
    x = ad.Array([-1.0, 0.5, 2.0, 0.0])
    y = ad.Array([0.0, 0.5, 1.0, np.inf])
    ad.maximum(x, y).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 0.5, 1.0, 0.0])
    np.testing.assert_array_equal(y.grad, [1.0, 0.5, 0.0, 1.0])
    z = ad.Array([0.0, 4.0, -4.0])
    with np.errstate(all="ignore"):
        safe = ad.where(z.data > 0, ad.sqrt(ad.maximum(z, 1e-300)), ad.log(ad.Array([1.0, 1.0, 1.0])))
    w = ad.Array([-1.0, 0.0, 4.0])
    with np.errstate(divide="ignore"):         # log(0) on the branch not taken
        picked = ad.where(w.data > 0, ad.log(ad.abs(w) + 0.0) * 1.0, w * 2.0)
    picked.sum().backward()
    assert np.all(np.isfinite(w.grad)) and np.all(np.isfinite(picked.data[[0, 2]]))
    np.testing.assert_allclose(w.grad, [2.0, 2.0, 0.25])
    c = ad.Array([-2.0, 0.5, 3.0])
    ad.clip(c, -1.0, 1.0).sum().backward()
    np.testing.assert_array_equal(c.grad, [0.0, 1.0, 0.0])
    assert safe.shape == (3,)


@pytest.mark.parametrize("fn, ref", [
    (lambda a: ad.logsumexp(a, axis=1), lambda a: np.log(np.exp(a).sum(axis=1))),
    (lambda a: ad.logsumexp(a), lambda a: np.log(np.exp(a).sum())),
    (lambda a: ad.softmax(a, axis=-1), lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True)),
    (lambda a: ad.log_softmax(a, axis=0), lambda a: a - np.log(np.exp(a).sum(0, keepdims=True))),
])
def test_logsumexp_and_softmax(fn, ref):
    x = rng.normal(size=(3, 4)) * 3
    check_against(fn, ref, x)
    big = ad.logsumexp(ad.Array([1000.0, 1000.0]))
    assert big.data == pytest.approx(1000.0 + np.log(2.0))


def test_logsumexp_replayed_far_from_where_it_was_recorded_does_not_overflow():
    from pyautodiff._core import lib
    with ad.Tape() as t:
        x = ad.Array([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]])
        lse = ad.logsumexp(x, axis=1)
        sm = ad.softmax(x, axis=None)
        t.flush()
        x.data = x.data + np.array([[1000.0], [-2000.0]])
        _core.check(lib.ad_forward(t._c, 0, t.nflushed, 0), t._c, t)
        y = x.data
        m = y.max(axis=1, keepdims=True)
        np.testing.assert_allclose(lse.data, (m + np.log(np.exp(y - m).sum(1, keepdims=True)))[:, 0],
                                   rtol=1e-14)
        e = np.exp(y - y.max())
        np.testing.assert_allclose(sm.data, e / e.sum(), rtol=1e-12, atol=1e-300)
        lse.backward(np.array([1.0, 2.0]))
        s = np.exp(y - lse.data[:, None])
        np.testing.assert_allclose(x.grad, s * np.array([[1.0], [2.0]]), rtol=1e-11, atol=1e-15)


def test_numpy_interop_records_and_refuses_what_it_cannot_differentiate():
    A = ad.Array(rng.normal(size=(2, 3)))
    B = rng.normal(size=(2, 3))
    for out in (np.exp(A), B * A, A * B, np.sum(A, axis=0), np.tanh(A), np.dot(A, B.T),
                np.maximum(A, 0.0), np.mean(A), np.reshape(A, (3, 2)), np.transpose(A)):
        assert isinstance(out, ad.Array)
    (np.sum(np.tanh(A) * B)).backward()
    np.testing.assert_allclose(A.grad, (1 - np.tanh(A.data) ** 2) * B)
    with pytest.raises(TypeError, match="nancumprod"):
        np.nancumprod(A)
    with pytest.raises(TypeError, match="nextafter"):
        np.nextafter(A, B)


# -- tape control with arrays -------------------------------------------------

def test_numpy_float_semantics_and_anomaly_mode():
    a = ad.Array([0.0, 1.0])
    with pytest.warns(RuntimeWarning, match="divide by zero encountered in log"):
        b = ad.log(a)
    np.testing.assert_array_equal(b.data, [-np.inf, 0.0])
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            ad.log(a)
    with np.errstate(all="ignore"):
        ad.log(a) / 0.0
    with ad.detect_anomaly():
        with pytest.raises(FloatingPointError, match=r"log at tape index \d+ produced inf"):
            ad.log(a)
        c = ad.Array([0.0])
        with pytest.raises(FloatingPointError, match="backward of sqrt"):
            ad.sqrt(c).sum().backward()


@pytest.mark.parametrize("n", [2, 100, 20000])   # pooled, fresh, cached values
def test_nonfinite_results_are_reported_on_every_recording_path(n):
    """A NaN or an infinity in a result warns as NumPy does (and raises in
    anomaly mode) whichever way the result's memory was found, from a
    unary op, an op with a number and an op of two Arrays."""
    a = ad.Array(np.linspace(0.0, 1.0, n))
    b = ad.Array(np.full(n, np.inf))
    with pytest.warns(RuntimeWarning, match="divide by zero encountered in log"):
        assert np.isneginf(ad.log(a).data[0])
    c = a + 1.0
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        assert np.isinf((c / 0.0).data).all()
    with pytest.warns(RuntimeWarning, match="invalid value"):
        assert np.isnan((a * b).data[0])          # 0 * inf
    with np.errstate(all="ignore"):
        ad.log(a) * b                             # quiet, as NumPy is
    with ad.detect_anomaly():
        with pytest.raises(FloatingPointError, match="produced nan"):
            a * b
        assert np.isfinite((a + 1.0).data).all()  # finite results pass


def test_arrays_from_an_enclosing_tape_get_their_gradients():
    W = ad.Array([[1.0, 2.0], [3.0, 4.0]])
    v = ad.Value(0.5)
    with ad.Tape():
        x = ad.Array([1.0, -1.0])
        loss = ((W @ x) * v).sum()
        loss.backward()
    np.testing.assert_array_equal(W.grad, [[0.5, -0.5], [0.5, -0.5]])
    assert v.grad == (1 - 2) + (3 - 4)
    with ad.Tape():
        (W * 2.0).sum().backward()
    np.testing.assert_array_equal(W.grad, [[2.5, 1.5], [2.5, 1.5]])


@pytest.mark.parametrize("n", [3, 2000])      # small, and cached blocks
def test_gradients_passed_outward_accumulate_and_stay_separate(n):
    """An inner tape hands an imported Array's gradient block itself to the
    Array's tape: what is there already is added to, a second backward in
    the same block passes on only its own part, and an interior node of the
    outer tape carries it on to the leaves below."""
    base = np.linspace(-1.0, 1.0, n)
    W = ad.Array(base)
    (W * 5.0).sum().backward()                   # W.grad = 5 already
    h = W * 3.0                                  # interior, outer tape
    with ad.Tape():
        loss = (W * W).sum() + (h * 2.0).sum()
        loss.backward()
        np.testing.assert_allclose(W.grad, 5.0 + 2.0 * base + 6.0)
        (W * 7.0).sum().backward()               # only its own 7 is added
    np.testing.assert_allclose(W.grad, 5.0 + 2.0 * base + 6.0 + 7.0)
    W.zero_grad()
    with ad.Tape():
        (W * W * W).sum().backward()             # the block moves whole
    np.testing.assert_allclose(W.grad, 3.0 * base ** 2)
    with ad.Tape():
        (W * 4.0).sum().backward()
    np.testing.assert_allclose(W.grad, 3.0 * base ** 2 + 4.0)


def test_a_batched_training_loop_runs_in_bounded_memory():
    import threading
    from pyautodiff import tape_buffer, tape_compaction
    box = {}

    def loop():
        W = ad.Array(rng.normal(size=(8, 4)) * 0.1)
        X = rng.normal(size=(32, 8))
        y = rng.normal(size=(32, 4))
        t = ad.current_tape()
        lengths = []
        for step in range(300):
            pred = ad.tanh(ad.Array(X) @ W)
            loss = ((pred - y) ** 2).mean()
            W.grad = 0
            loss.backward()
            W.data -= 0.1 * W.grad
            lengths.append(len(t))
        box["lengths"] = lengths
        box["loss"] = float(loss.data)

    th = threading.Thread(target=loop)
    th.start()
    th.join()
    assert max(box["lengths"]) < tape_compaction.COMPACT_MIN + tape_buffer.SPILL_EVERY
    assert np.isfinite(box["loss"])


def test_small_results_read_long_after_they_were_made():
    """A small result views its row of a pooled block only when it is
    first read.  Results kept while 40,000 others are dropped (and the
    tape is compacted and renumbered many times under them) read the
    values they were computed with, and their gradients flow; the tape
    stays bounded."""
    import threading
    from pyautodiff import tape_buffer, tape_compaction
    x0 = np.array([0.5, -1.0, 2.0])
    box = {}

    def loop():
        x = ad.Array(x0)
        t = ad.current_tape()
        kept, lengths = [], []
        for step in range(20000):
            y = ad.tanh(x * float(step % 7) + 0.1)
            if step % 4000 == 3:
                kept.append((step % 7, y))
            lengths.append(len(t))
        box["lengths"] = lengths
        box["kept"] = [(c, y.data.copy()) for c, y in kept]
        c, y = kept[2]
        y.sum().backward()
        box["grad"] = (c, y.data.copy(), x.grad.copy())

    th = threading.Thread(target=loop)
    th.start()
    th.join()
    assert max(box["lengths"]) < tape_compaction.COMPACT_MIN + tape_buffer.SPILL_EVERY
    assert len(box["kept"]) == 5
    for c, values in box["kept"]:
        # (the C core's tanh may differ from NumPy's in the last bit)
        np.testing.assert_allclose(values, np.tanh(x0 * float(c) + 0.1), rtol=1e-15)
    c, y, gx = box["grad"]
    np.testing.assert_allclose(gx, c * (1.0 - y ** 2), rtol=1e-14)


def test_non_contiguous_and_read_only_inputs():
    base = np.arange(12.0).reshape(3, 4)
    view = base[:, ::2]                      # not contiguous
    ro = np.arange(3.0)
    ro.flags.writeable = False
    a, b = ad.Array(view), ad.Array(ro)
    out = (a * b[:, None]).sum()
    out.backward()
    np.testing.assert_array_equal(a.grad, np.repeat(ro[:, None], 2, axis=1))
    np.testing.assert_array_equal(b.grad, view.sum(axis=1))
    np.testing.assert_array_equal(base, np.arange(12.0).reshape(3, 4))  # untouched
    ints = ad.Array(np.array([1, 2], dtype=np.int32))
    assert ints.dtype == np.float64


def test_scalar_records_after_many_array_entries():
    # array entries advance the entry count without a scalar record; the
    # record buffer must still have room for the next scalar operation
    with ad.Tape():
        a = ad.Array([1.0, 2.0])
        for _ in range(5000):
            a = a * 1.0
        v = ad.Value(2.0)
        w = v * 3.0 + a.sum()
        w.backward()
        assert v.grad == 3.0
        np.testing.assert_array_equal(a.grad, [1.0, 1.0])


def test_square_is_numpys_square_bit_for_bit():
    # a ** 2 on an Array is x * x, as NumPy's power computes it (a scalar
    # Value keeps Python's pow, which may differ in the last bit)
    x = rng.normal(size=1000) * 1e3
    a = ad.Array(x)
    sq = a ** 2
    assert _core.OP_NAMES[sq._t._c.op[sq._i]] == "square"
    assert np.array_equal(sq.data, x ** 2)
    assert np.array_equal(sq.data, x * x)
    sq.backward(np.ones_like(x))
    assert np.array_equal(a.grad, 2.0 * x)


def test_tapes_of_many_threads_reuse_block_tables_safely():
    # a freed tape's table of array blocks goes to the next tape that
    # records arrays, in whichever thread: steps of different lengths in
    # four threads at once must give each thread the gradients it gets alone
    import threading
    rng = np.random.default_rng(5)
    inputs = [rng.normal(size=(6, 5)) for _ in range(4)]

    def step(x0, length):
        x = ad.Array(x0)
        with ad.Tape():
            h = x
            for k in range(length):
                h = ad.tanh(h * 0.9 + 0.1) if k % 2 else h * h * 0.5
            h.sum().backward()
        return x.grad

    lengths = [3, 40, 150, 700]
    alone = [step(x0, n) for x0, n in zip(inputs, lengths)]
    got = [[] for _ in inputs]

    def worker(k):
        for _ in range(25):
            got[k].append(step(inputs[k], lengths[k]))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for k in range(4):
        assert len(got[k]) == 25
        for g in got[k]:
            np.testing.assert_array_equal(g, alone[k])
