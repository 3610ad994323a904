"""Products of small matrices, computed by the C sweeps (csrc/matmul.c)
rather than by calling back into Python: values and derivatives of every
order against the callback path (NumPy's products, the rule's Python
code), central differences and autograd; recordings, replays and saved
files that hold them."""
import hashlib
import importlib
import io
import json
import struct

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import _core, tapefile
from helpers import numeric_grad

NATIVE = float(_core.lib.AD_EXTERN_MATMUL)
# (the package's name matmul is the function)
matmul_module = importlib.import_module("pyautodiff.matmul")


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture(autouse=True)
def no_call_back_for_products_in_c(monkeypatch):
    """Every sweep's Python step fails for an entry that C computes."""
    from pyautodiff import extern
    for sweep, step in list(extern._STEPS.items()):
        def checked(t, i, step=step, sweep=sweep):
            assert t._c.imm[i] != NATIVE, f"the {sweep} sweep called back for entry {i}"
            return step(t, i)
        for steps in (extern._STEPS, _core._STEPS):
            monkeypatch.setitem(steps, sweep, checked)


@pytest.fixture
def callbacks(monkeypatch):
    """Inside it, every product is recorded for the callback path."""
    def use():
        monkeypatch.setattr(matmul_module, "_NATIVE_MAX", 0)
    return use


def imm_of(x):
    return x._t._c.imm[x._i]


# functions of one flat parameter vector p, written once for NumPy (and
# autograd's NumPy): products of every kind the C kernel takes
def _chain(xp, p):
    a, b = p[:6].reshape(2, 3), p[6:12].reshape(3, 2)
    c = a @ b                       # (2, 3) (3, 2)
    d = c @ c                       # one operand twice
    e = xp.tanh(d) @ a              # a variable twice, at distance
    return xp.sum(e * e) + xp.sum(b.T @ a.T)


_CONST = np.array([[0.5, -1.0], [2.0, 0.25], [1.5, -0.75]])


def _constants(xp, p):
    a = p[:6].reshape(2, 3)
    left = _CONST @ a               # a constant on either side
    right = a @ _CONST
    return xp.sum(xp.sin(left) * 1.5) + xp.sum(right @ right)


def _vector_times(xp, p):
    m = p[:4].reshape(2, 2)
    col = p[4:6].reshape(2, 1)
    row = p[6:8].reshape(1, 2)
    return xp.sum((row @ m @ col) ** 2) + xp.sum(xp.exp(m @ m @ m))


FUNCTIONS = {"chain": (_chain, 12), "constants": (_constants, 6),
             "vector": (_vector_times, 8)}


def _params(name):
    f, n = FUNCTIONS[name]
    p = np.random.default_rng(len(name)).normal(size=n) * 0.6
    return (lambda q: f(np, q)), (lambda q: f(anp, q)), p


def test_a_small_product_is_computed_in_c_and_a_large_one_is_not(rng):
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    big = rng.normal(size=(20, 20))
    with ad.Tape():
        x, y, z = ad.Array(a), ad.Array(b), ad.Array(big)
        small = x @ y
        large = z @ z               # 8,000 multiply-adds
        mixed = a @ y               # an ndarray operand
        assert imm_of(small) == NATIVE and imm_of(mixed) == NATIVE
        assert imm_of(large) == 0.0
    np.testing.assert_allclose(small.data, a @ b, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(mixed.data, a @ b, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(large.data, big @ big, rtol=1e-13)


def test_the_size_limit_is_the_one_c_states():
    lim = _core.lib.AD_MATMUL_NATIVE_MAX
    n = round(lim ** (1 / 3))
    with ad.Tape():
        at = ad.Array(np.ones((n, n))) @ ad.Array(np.ones((n, lim // n ** 2)))
        above = ad.Array(np.ones((n, n))) @ ad.Array(np.ones((n, lim // n ** 2 + 1)))
        assert imm_of(at) == NATIVE and imm_of(above) == 0.0


@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradients_against_the_callback_path_and_oracles(name, callbacks):
    f, af, p = _params(name)
    value, grad = ad.value_and_grad(f)(p)
    np.testing.assert_allclose(value, f(p), rtol=1e-13)
    np.testing.assert_allclose(grad, autograd.grad(af)(p), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad, numeric_grad(f, [p], 0), rtol=1e-6, atol=1e-7)
    callbacks()
    np.testing.assert_allclose(grad, ad.grad(f)(p), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_tangents_and_hessians_in_the_c_sweeps(name, callbacks):
    f, af, p = _params(name)
    v = np.cos(np.arange(p.size))
    value, tangent = ad.jvp(f)(p, v)            # the C tangent sweep
    h = 1e-6
    np.testing.assert_allclose(tangent, (f(p + h * v) - f(p - h * v)) / (2 * h),
                               rtol=1e-6, atol=1e-7)
    hvp = ad.hvp(f)(p, v)                       # tangent, then second order
    hessian = ad.hessian(f)(p)
    expected = autograd.hessian(af)(p)
    np.testing.assert_allclose(hessian, expected, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(hvp, expected @ v, rtol=1e-9, atol=1e-10)
    callbacks()
    np.testing.assert_allclose(ad.hvp(f)(p, v), hvp, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ad.hessian(f)(p), hessian, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_third_order_through_nesting(name, callbacks):
    f, af, p = _params(name)
    v = np.sin(np.arange(1, p.size + 1))
    hvp = ad.hvp(f)

    def quadratic(q):
        return np.sum(hvp(q, v) * v)
    third = ad.grad(quadratic)(p)
    expected = autograd.grad(lambda q: anp.sum(autograd.hessian_vector_product(af)(q, v) * v))(p)
    np.testing.assert_allclose(third, expected, rtol=1e-8, atol=1e-9)
    callbacks()
    np.testing.assert_allclose(ad.grad(quadratic)(p), third, rtol=1e-11, atol=1e-11)


def test_an_operand_of_an_enclosing_tape(rng):
    a0, b0 = rng.normal(size=(2, 2)), rng.normal(size=(2, 2))
    a, b = ad.Array(a0), ad.Array(b0)           # the thread's own tape
    with ad.Tape():
        out = (a @ b @ a).sum()
        assert imm_of(a @ b) == NATIVE
        out.backward()
    g = np.ones((2, 2))
    np.testing.assert_allclose(a.grad, g @ (b0 @ a0).T + (a0 @ b0).T @ g, rtol=1e-14)
    np.testing.assert_allclose(b.grad, a0.T @ g @ a0.T, rtol=1e-14)


def test_a_zero_adjoint_contributes_nothing_where_the_other_factor_is_infinite():
    """As every C rule: the adjoint of column 1 is 0, and B's column 1 is
    infinite; NumPy's product would make the gradient 0 * inf = NaN."""
    b0 = np.array([[1.0, np.inf], [2.0, np.inf]])
    a = ad.Array(np.array([[1.0, 2.0], [3.0, 4.0]]))
    with ad.Tape():
        c = a @ b0
        c[:, 0].sum().backward()
    np.testing.assert_array_equal(a.grad, [[1.0, 2.0], [1.0, 2.0]])


def _program(x):
    m = x.reshape(2, 2)
    s = m @ m.T + np.eye(2)
    return np.sum(np.tanh(s @ m) ** 2) + np.sum(s)


def test_recordings_replay_and_save_the_products_computed_in_c(tmp_path, rng):
    x0, x1 = rng.normal(size=4), rng.normal(size=4)
    F = ad.record(_program, x0)
    kinds = {float(F.trace.tape._c.imm[i]) for i in F.trace.tape.externs}
    assert kinds == {NATIVE}
    want = autograd.value_and_grad(lambda x: _program_anp(x))(x1)
    for G in (F, _saved_and_loaded(F, tmp_path)):
        value, grad = G.value_and_grad(x1)
        np.testing.assert_allclose(value, want[0], rtol=1e-13)
        np.testing.assert_allclose(grad, want[1], rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(G.hessian(x1), autograd.hessian(_program_anp)(x1),
                                   rtol=1e-9, atol=1e-10)
        t = G.trace.tape
        assert {float(t._c.imm[i]) for i in t.externs} == {NATIVE}


def _program_anp(x):
    m = anp.reshape(x, (2, 2))
    s = m @ m.T + anp.eye(2)
    return anp.sum(anp.tanh(s @ m) ** 2) + anp.sum(s)


def _saved_and_loaded(F, tmp_path):
    path = tmp_path / "products.adtape"
    F.save(path)
    return ad.load(path)


def test_a_saved_products_constant_is_checked(tmp_path, rng):
    """A product's entry says by its constant whether C computes it: an
    edited one does not load (the rebuilt tape is the recording's)."""
    F = ad.record(_program, rng.normal(size=4))
    path = tmp_path / "f.adtape"
    F.save(path)
    data = path.read_bytes()
    _, _, head_len = tapefile._PREFIX.unpack_from(data)
    start = tapefile._PREFIX.size
    header = json.loads(data[start:start + head_len])
    payload = bytearray(data[start + head_len:-32])
    i = int(next(iter(header["externs"])))
    at = header["columns"]["imm"][0] + 8 * i
    for imm in (0.0, 2.0, -1.0):
        edited = bytearray(payload)
        edited[at:at + 8] = struct.pack("<d", imm)
        head = json.dumps(header).encode()
        body = tapefile._PREFIX.pack(tapefile.MAGIC, tapefile.VERSION, len(head)) \
            + head + bytes(edited)
        with pytest.raises(ValueError, match="imm"):
            ad.load(io.BytesIO(body + hashlib.sha256(body).digest()))


def test_c_refuses_a_product_entry_of_the_wrong_shapes():
    from pyautodiff.array import Array, _append
    with ad.Tape() as t:
        x, y = ad.Array(np.ones((2, 3))), ad.Array(np.ones((2, 3)))
        v = ad.Array(np.ones(3))
        for a, b, shape in ((x, y, (2, 3)), (x, v, (2,)), (x, x.T, (2, 3))):
            with pytest.raises(ValueError, match="matmul in C"):
                _append(t, object.__new__(Array), _core.OPS["EXTERN"], a._i, b._i,
                        NATIVE, np.zeros(shape))


def test_plain_operands_keep_numpys_product():
    """An int or bool ndarray with an Array is a float product, computed in
    C; two plain bool arrays keep NumPy's own (logical) product."""
    ints = np.array([[1, 2], [3, 4]])
    flags = np.array([[True, True], [False, True]])
    with ad.Tape():
        y = ad.Array(np.array([[0.5, 1.0], [2.0, -1.0]]))
        mixed = ints @ y
        assert imm_of(mixed) == NATIVE
        np.testing.assert_array_equal(mixed.data, ints @ y.data)
        both = ad.matmul(flags, flags)
        assert imm_of(both) == 0.0
        np.testing.assert_array_equal(both.data, (flags @ flags).astype(float))
