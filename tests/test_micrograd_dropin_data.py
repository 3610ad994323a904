"""The micrograd drop-in as micrograd programs use it, checked against the
real micrograd package: data of any type micrograd keeps, attributes of
the user's own, subclasses, copies and pickles."""
import copy
import math
import pickle

import numpy as np
import pytest

mg_engine = pytest.importorskip("micrograd.engine")

from pyautodiff.micrograd import engine as pa_engine  # noqa: E402

MG, PA = mg_engine.Value, pa_engine.Value

DATA = {
    "int": lambda: 2,
    "float": lambda: 2.5,
    "bool": lambda: True,
    "float64": lambda: np.float64(2.5),
    "float32": lambda: np.float32(2.5),
    "int64": lambda: np.int64(2),
    "ndarray (1,)": lambda: np.array([2.5]),
    "ndarray (1, 1)": lambda: np.array([[2.5]]),
    "ndarray 0-d": lambda: np.array(2.5),
    "int ndarray (1,)": lambda: np.array([3]),
}


def same(a, b):
    """a and b are the same object kind with the same value."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
    return a == b


def near(a, b):
    """Same kind, value equal up to the order of summation."""
    if type(a) is not type(b):
        return False
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.allclose(
        a, b, rtol=1e-12, atol=1e-12)


def program(V, d):
    """micrograd's own ops: +, *, **, relu, -, / and a number on each side."""
    a, b = V(d), V(1.5)
    c = a * 3 + b * a
    e = c.relu() ** 2 - a / 2 + 2 * (1 - b)
    return a, b, c, e


@pytest.mark.parametrize("kind", list(DATA))
def test_data_as_micrograd_keeps_it(kind):
    out = {}
    for V in (MG, PA):
        given = DATA[kind]()
        a, b, c, e = program(V, given)
        assert a.data is given              # the very object
        out[V] = (a, b, c, e)
    for r, p in zip(out[MG], out[PA]):
        assert same(p.data, r.data), (kind, r.data, p.data)
        assert repr(p) == repr(r)


@pytest.mark.parametrize("kind", list(DATA))
def test_grads_typed_as_micrograd_types_them(kind):
    out = {}
    for V in (MG, PA):
        nodes = program(V, DATA[kind]())
        e = nodes[-1]
        grads = [repr(e.grad)]
        e.backward()
        grads.append([n.grad for n in nodes])
        e.backward()                    # micrograd's second backward adds on
        grads.append([n.grad for n in nodes])
        for n in nodes:
            n.grad = 0
        grads.append([n.grad for n in nodes])
        out[V] = grads, [repr(n) for n in nodes]
    (rgrads, rreprs), (pgrads, preprs) = out[MG], out[PA]
    assert pgrads[0] == rgrads[0]
    for rg, pg in zip(rgrads[1:], pgrads[1:]):
        assert all(near(p, r) for p, r in zip(pg, rg)), (kind, rg, pg)
    assert preprs == rreprs


def test_grad_assigned_an_array_keeps_its_type():
    for V in (MG, PA):
        x = V(np.array([1.0]))
        x.grad = np.zeros(1)
        y = x * 2.0
        y.backward()
        assert near(x.grad, np.array([2.0]))


def test_ndarray_data_written_in_place():
    # micrograd's backward reads .data as it is now
    out = {}
    for V in (MG, PA):
        x = V(np.array([2.0]))
        y = x * x + x
        x.data[0] = 3.0
        y.backward()
        out[V] = y.data, x.grad
    assert same(out[PA][0], out[MG][0])     # [6.], computed before the write
    assert near(out[PA][1], out[MG][1])     # [7.]


def test_numpy_scalar_results_as_micrograd():
    r = PA(np.float64(2)) * 3
    assert same(r.data, np.float64(6.0))
    r = PA(np.array([2.0])) * 1.5
    assert same(r.data, np.array([3.0]))
    r = 2.0 * PA(np.array([[2.0]])) + PA(1.0)
    assert same(r.data, np.array([[5.0]]))


def test_tape_records_the_number():
    # the gradient is the float derivative whatever the data's type
    for given in (np.array([[3.0]]), np.float32(3.0), np.int64(3), True):
        x = PA(given)
        y = x * x * x
        y.backward()
        v = float(np.asarray(given).item())
        assert float(np.asarray(x.grad).item()) == 3 * v * v


def test_data_assignment_keeps_the_object():
    for V in (MG, PA):
        x = V(1.0)
        x.data = np.array([4.0])
        y = x * x
        y.backward()
        assert same(y.data, np.array([16.0]))
        assert float(np.asarray(x.grad).item()) == 8.0


def test_data_micrograd_cannot_mean_raises():
    for bad in (np.array([1.0, 2.0]), np.array(["a"]), "2", None, 1j):
        with pytest.raises(TypeError):
            PA(bad)


def test_power_labels_as_micrograd_prints_them():
    exponents = (2.0, 2, -1, 0.5, np.float64(2), 100.0, -1.0)
    labels = {V: [(V(2.0) ** e)._op for e in exponents] for V in (MG, PA)}
    assert labels[PA] == labels[MG]      # '**2.0' for a float 2.0


def test_arbitrary_attributes():
    # an optimizer's state on the parameter, as micrograd programs keep it
    for V in (MG, PA):
        w = V(0.5)
        w.velocity = 0.0
        w.name = "w"
        for _ in range(3):
            loss = (w * w - 1) ** 2
            w.grad = 0
            loss.backward()
            w.velocity = 0.9 * w.velocity - 0.1 * w.grad
            w.data += w.velocity
        assert w.name == "w"
    assert PA.__slots__ and "__dict__" not in pa_engine._Value.__slots__


def test_results_on_a_subclass_are_plain_values():
    made = []

    def subclass(V):
        class Tagged(V):
            def __init__(self, data, tag):
                super().__init__(data)
                self.tag = tag
                made.append(tag)
        return Tagged

    for V in (MG, PA):
        T = subclass(V)
        a, b = T(2.0, "a"), T(3.0, "b")
        results = [a * b, a + b, a - b, a / b, a ** 2, -a, a.relu(), 2 * a,
                   a + 1, 1 - a, b / 2]
        assert all(type(r) is V for r in results), [type(r) for r in results]
        assert made == ["a", "b"]           # no __init__ of the subclass
        del made[:]
        r = a * b + a
        r.backward()
        assert (a.grad, b.grad) == (4.0, 2.0)


def graph(V):
    a, b = V(2.0), V(-3.0)
    a.name = "a"
    c = (a * b + a ** 2).relu() + (b * 0.5 - a) * a
    c.backward()
    return a, b, c


def described(v):
    """v's graph as values: (data, grad, _op, sorted operand descriptions)."""
    return (repr(v.data), repr(v.grad), v._op,
            sorted(described(p) for p in v._prev))


def test_copy_is_an_independent_node_over_the_same_children():
    out = {}
    for V in (MG, PA):
        a, b, c = graph(V)
        c2, a2 = copy.copy(c), copy.copy(a)
        assert c2._prev == c._prev          # the very children
        assert a2.name == "a" and a2.grad == a.grad
        c2.data = 100.0
        a2.data = -1.0
        out[V] = described(c), described(c2), a.data, a2.data
    assert out[PA] == out[MG]


def test_deepcopy_copies_the_graph_below():
    out = {}
    for V in (MG, PA):
        a, b, c = graph(V)
        d = copy.deepcopy(c)
        below = []
        stack = [d]
        while stack:                        # every node below is a copy
            v = stack.pop()
            below.append(v)
            stack.extend(v._prev)
        assert not any(v is w for v in below for w in (a, b, c))
        d.data = 7.0
        out[V] = described(d), described(c), c.data
    assert out[PA] == out[MG]


def test_deepcopy_backward_acts_on_the_copies():
    # micrograd's copies keep the originals' closures (their backward writes
    # the originals' grads); the drop-in's copies are nodes of their own
    a, b, c = graph(PA)
    d = copy.deepcopy(c)
    for v in _nodes(d):
        v.grad = 0
    d.backward()
    da = next(v for v in _leaves(d) if getattr(v, "name", None) == "a")
    db = next(v for v in _leaves(d) if not hasattr(v, "name") and v.data == -3.0)
    # c = relu(ab + a^2) + (b/2 - a) a at (2, -3): relu(-2) = 0, so
    # dc/da = b/2 - 2a = -5.5 and dc/db = a/2 = 1; a's grad was 0 before
    assert (da.grad, db.grad) == (-5.5, 1.0)
    assert (a.grad, b.grad) == (-5.5, 1.0)      # the originals' own backward


def _nodes(v):
    out, stack, seen = [], [v], set()
    while stack:
        n = stack.pop()
        if id(n) not in seen:
            seen.add(id(n))
            out.append(n)
            stack.extend(n._prev)
    return out


def _leaves(v):
    return [n for n in _nodes(v) if not n._prev]


def test_deepcopy_of_a_user_op_rebinds_its_rule():
    def user_tanh(V, x):
        t = math.tanh(x.data)
        out = V(t, (x,), "tanh")

        def _backward():
            x.grad += (1 - t ** 2) * out.grad
        out._backward = _backward
        return out

    x = PA(0.5)
    y = user_tanh(PA, x) * 2
    y2 = copy.deepcopy(y)
    y2.backward()
    (x2,) = [v for v in _leaves(y2) if v.data == 0.5]
    assert x2 is not x and x.grad == 0
    assert x2.grad == 2 * (1 - math.tanh(0.5) ** 2)
    with pytest.raises(pickle.PicklingError, match="_backward|derivative rule"):
        pickle.dumps(y)


def test_pickle_keeps_data_grad_and_graph():
    a, b, c = graph(MG)
    with pytest.raises(Exception):
        pickle.dumps(c)                  # micrograd's closures do not pickle
    a, b, c = graph(PA)
    loaded = pickle.loads(pickle.dumps(c))
    assert described(loaded) == described(c)
    assert {v.data: getattr(v, "name", None) for v in _leaves(loaded)} == \
        {2.0: "a", -3.0: None, 0.5: None, -1: None}
    # the loaded graph differentiates as the original does (micrograd's
    # second backward on the same graph is the oracle)
    ma, mb, mc = graph(MG)
    mc.backward()
    loaded.backward()
    la = next(v for v in _leaves(loaded) if getattr(v, "name", None) == "a")
    assert la.grad == ma.grad
    for given in (np.array([[2.0]]), np.float32(1.5)):
        x = PA(given)
        y = x * x
        y.backward()
        z = pickle.loads(pickle.dumps(y))
        assert same(z.data, y.data) and near(z.grad, y.grad)
        (zx,) = z._prev
        assert same(zx.data, given) and near(zx.grad, x.grad)


def _momentum_fit(V, steps=4):
    """A least-squares fit as public micrograd programs write one: weights
    drawn with np.random.randn(1), inputs NumPy floats, the optimizer's
    velocity kept on each parameter."""
    rng = np.random.RandomState(0)
    w, b = V(rng.randn(1)), V(rng.randn(1))
    xs, ys = rng.randn(8), rng.randn(8)
    for p in (w, b):
        p.velocity = 0.0
    history = []
    for _ in range(steps):
        loss = sum(((w * x + b) - y) ** 2 for x, y in zip(xs, ys)) / len(xs)
        for p in (w, b):
            p.grad = 0
        loss.backward()
        for p in (w, b):
            p.velocity = 0.9 * p.velocity - 0.1 * p.grad
            p.data = p.data + p.velocity
        history.append((loss.data, w.grad, b.grad, w.data, b.data))
    return history


def test_momentum_fit_with_ndarray_weights():
    ref, got = _momentum_fit(MG), _momentum_fit(PA)
    for r, g in zip(ref, got):
        for rv, gv in zip(r, g):
            assert near(gv, rv), (rv, gv)      # ndarray (1,) all through


def test_micrograd_engine_checks():
    # the kind of program micrograd's own engine test runs: in-place +=,
    # numbers on both sides, relu, division by a Value, powers
    def run(V):
        p, q = V(-3.0), V(1.5)
        r = p * q + q ** 3
        s = p - q
        s += s * 2 + 1
        s += 1 - (q / p) + (-p)
        r += (r * 3).relu() + (q - p).relu() + 4 / r
        u = (s - r) ** 2 / 3.0
        u += 2.0 / u
        u.backward()
        return [(repr(v.data), v.grad) for v in (p, q, r, s, u)]
    # micrograd adds gradients in set order (by address): the last bit
    # of a gradient may differ, forward values may not
    for (pd, pg), (md, mgrad) in zip(run(PA), run(MG)):
        assert pd == md and near(pg, mgrad)
