"""ad.Value semantics: accumulation, shared graphs, deep chains, errors."""
import math

import pytest

import pyautodiff as ad


def test_seed_example():
    x, y = ad.Value(2.0), ad.Value(3.0)
    f = x * y + y ** 2
    f.backward()
    assert (f.data, x.grad, y.grad) == (15.0, 3.0, 8.0)
    assert repr(f) == "Value(data=15.0, grad=1.0)"
    assert repr(ad.Value(2)) == "Value(data=2.0, grad=0.0)"


def test_tanh_neuron():
    # o = tanh(x1*w1 + x2*w2 + b), the classic single neuron
    x1, x2 = ad.Value(2.0), ad.Value(0.0)
    w1, w2 = ad.Value(-3.0), ad.Value(1.0)
    b = ad.Value(6.8813735870195432)
    n = x1 * w1 + x2 * w2 + b
    o = n.tanh()
    o.backward()
    assert o.data == pytest.approx(math.sqrt(0.5), abs=1e-12)
    local = 1 - o.data ** 2
    assert n.grad == pytest.approx(local)
    assert x1.grad == pytest.approx(local * -3.0)
    assert w1.grad == pytest.approx(local * 2.0)
    assert x2.grad == pytest.approx(local * 1.0)
    assert w2.grad == 0.0
    assert b.grad == pytest.approx(local)


def test_a_plus_a_and_a_times_a_accumulate():
    a = ad.Value(3.0)
    (a + a).backward()
    assert a.grad == 2.0
    a.grad = 0
    (a * a).backward()
    assert a.grad == 6.0


def test_shared_subgraph_accumulates_over_every_path():
    a, b = ad.Value(-2.0), ad.Value(3.0)
    d = a * b
    e = a + b
    f = d * e               # f = ab(a+b): df/da = 2ab + b^2, df/db = a^2 + 2ab
    f.backward()
    assert a.grad == 2 * -2 * 3 + 9
    assert b.grad == 4 + 2 * -2 * 3
    assert d.grad == e.data and e.grad == d.data


def test_second_backward_adds_again_like_pytorch():
    x, y = ad.Value(2.0), ad.Value(3.0)
    f = x * y + y ** 2
    f.backward()
    f.backward()
    assert (x.grad, y.grad) == (6.0, 16.0)


def test_two_roots_sharing_nodes_each_add_their_own_gradient():
    x = ad.Value(2.0)
    h = x * x               # shared interior node
    r1 = h * 3.0            # dr1/dx = 6x = 12
    r2 = h + 1.0            # dr2/dx = 2x = 4
    r1.backward()
    assert (x.grad, h.grad) == (12.0, 3.0)
    r2.backward()
    assert (x.grad, h.grad) == (16.0, 4.0)


def test_backward_touches_only_what_the_root_depends_on():
    x, y = ad.Value(2.0), ad.Value(5.0)
    unrelated = y * y
    unrelated.backward()
    assert y.grad == 10.0
    root = x * 3.0
    root.backward()
    assert x.grad == 3.0
    assert y.grad == 10.0 and unrelated.grad == 1.0


def test_grad_reset():
    x = ad.Value(1.5)
    (x * x).backward()
    x.grad = 0
    assert x.grad == 0.0
    (x * 4.0).backward()
    assert x.grad == 4.0
    x.zero_grad()
    assert x.grad == 0.0


def test_data_assignment_updates_what_later_operations_see():
    w = ad.Value(1.0)
    for _ in range(3):
        loss = (w - 3.0) ** 2
        w.grad = 0
        loss.backward()
        w.data -= 0.25 * w.grad
    # w_{k+1} = w_k - 0.5 (w_k - 3): 1 -> 2 -> 2.5 -> 2.75
    assert w.data == 2.75


def test_million_op_chain():
    x = ad.Value(1.0)
    y = x
    for _ in range(1_000_000):
        y = y * 1.0000001
    y.backward()
    assert x.grad == pytest.approx(1.0000001 ** 1_000_000, rel=1e-9)


def test_zero_adjoint_keeps_nan_derivatives_out():
    x = ad.Value(0.0)
    y = x.sqrt() * 0.0      # d sqrt/dx is inf at 0, but nothing flows through
    y.backward()
    assert x.grad == 0.0
    z = ad.Value(0.0)
    (z ** 0.5 * 0.0 + z).backward()
    assert z.grad == 1.0


@pytest.mark.parametrize("bad", [True, False, "1.0", None, 1j, [1.0]])
def test_constructor_rejects_non_real_numbers(bad):
    with pytest.raises(TypeError):
        ad.Value(bad)


# (operands built from x, the failing operation on them, the exception)
MATH_ERRORS = [
    (lambda x: x, lambda v: v / 0.0, ZeroDivisionError),
    (lambda x: (x, ad.Value(0.0)), lambda v, z: v / z, ZeroDivisionError),
    (lambda x: x - 2.0, lambda v: 1.0 / v, ZeroDivisionError),
    (lambda x: x - 2.0, lambda v: v ** -1, ZeroDivisionError),
    (lambda x: -x, lambda v: v.log(), ValueError),
    (lambda x: x - 2.0, lambda v: v.log(), ValueError),
    (lambda x: -x, lambda v: v.sqrt(), ValueError),
    (lambda x: -x, lambda v: v ** 0.5, ValueError),
    (lambda x: (-x, ad.Value(0.5)), lambda v, h: v ** h, ValueError),
    (lambda x: x * 0.25, lambda v: (-8.0) ** v, ValueError),
    (lambda x: x * 1000, lambda v: v.exp(), OverflowError),
    (lambda x: x * 10.0, lambda v: v ** 400, OverflowError),
    (lambda x: x, lambda v: v + "a", TypeError),
    (lambda x: x, lambda v: v * [1], TypeError),
    (lambda x: x, lambda v: v + 1j, TypeError),
]


@pytest.mark.parametrize("prepare, fail, exc", MATH_ERRORS)
def test_math_errors_raise_like_floats_and_record_nothing(prepare, fail, exc):
    operands = prepare(ad.Value(2.0))
    if not isinstance(operands, tuple):
        operands = (operands,)
    v = operands[0]
    tape = ad.current_tape()
    before = len(tape)
    with pytest.raises(exc):
        fail(*operands)
    assert len(tape) == before
    # the tape is still usable afterwards
    w = v * 2.0
    w.backward()
    assert v.grad == 2.0


def test_comparisons_compare_data_and_equality_is_identity():
    a, b = ad.Value(1.0), ad.Value(2.0)
    assert a < b and a <= b and b > a and b >= a
    assert a < 1.5 and 3 > a
    c = ad.Value(1.0)
    assert a != c and a == a
    assert len({a, b, c}) == 3


def test_label_and_graph_views():
    x = ad.Value(2.0, label="x")
    y = x * 3.0
    assert x.label == "x"
    assert y._prev == {x}
    assert y._op == "*"
    z = x * y
    assert z._prev == {x, y}
    assert (x ** 2)._op == "**2"
    assert x._op == "" and x._prev == set()


def test_numpy_scalars_do_not_hijack_values():
    np = pytest.importorskip("numpy")
    out = np.float64(2.0) * ad.Value(3.0)
    assert type(out) is ad.Value and out.data == 6.0
