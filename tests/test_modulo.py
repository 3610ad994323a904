"""x % y, x // y, divmod and np.fmod of traced values: Python's and NumPy's
values exactly, and the derivatives HIPS autograd gives (1 in x, -q in y
for the integer quotient q), checked against autograd and central
differences."""
import math

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff.micrograd.engine import Value as MicrogradValue

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")

PAIRS = [(3.5, 2.0), (-3.5, 2.0), (7.25, -1.5), (-7.25, -1.5), (0.1, 0.03),
         (1e10 + 0.5, 3.0), (2.0, 7.0), (-2.0, 7.0), (5, 3)]


def central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("x, y", PAIRS)
def test_scalar_remainder_values_and_derivatives(x, y):
    dx, dy = ad.grad(lambda a, b: a % b, argnum=(0, 1))(float(x), float(y))
    ax, ay = autograd.grad(lambda a, b: a % b, argnum=(0, 1))(float(x), float(y))
    assert (dx, dy) == (ax, ay)
    assert dx == 1.0 and dy == -(float(x) // float(y))
    # the value is Python's, bit for bit
    assert ad.value_and_grad(lambda a: a % y)(float(x))[0] == float(x) % y
    v = ad.Value(x) % y
    assert v.data == x % y
    v = x % ad.Value(y)
    assert v.data == x % y


@pytest.mark.parametrize("x, y", PAIRS[:8])
def test_scalar_floor_division_and_divmod(x, y):
    # x // y is a step function: derivative 0, so d/dx (x // y) * x = x // y
    g = ad.grad(lambda a: (a // y) * a)(x)
    assert g == x // y
    assert ad.grad(lambda a: y // a + a)(y * 0 + 3.0) == 1.0
    q, r = divmod(ad.Value(x), y)
    assert (q.data, r.data) == divmod(x, y)
    q, r = divmod(x, ad.Value(y))
    assert (q.data, r.data) == divmod(x, y)
    assert ad.grad(lambda a: divmod(a, y)[1] * 3.0)(x) == 3.0


def test_scalar_remainder_by_zero_raises_as_python():
    with pytest.raises(ZeroDivisionError):
        ad.grad(lambda a: a % 0.0)(1.0)
    with pytest.raises(ZeroDivisionError):
        ad.Value(1.0) // 0.0


def test_value_remainder_backward_and_second_order():
    a, b = ad.Value(7.25), ad.Value(-1.5)
    c = (a % b) * a
    c.backward()
    r, q = 7.25 % -1.5, 7.25 // -1.5
    assert a.grad == pytest.approx(r + 7.25) and b.grad == pytest.approx(-q * 7.25)
    # second order: d2/dx2 (x % c)**2 = 2 (the quotient is constant)
    assert ad.grad(ad.grad(lambda x: (x % 2.0) ** 2))(3.5) == pytest.approx(2.0)
    with pytest.raises(ad.TapeError, match="constant"):
        (a // b).backward()


def test_unsupported_operand_names_the_public_types():
    with pytest.raises(TypeError, match="'Value' and 'str'"):
        ad.Value(1.0) % "x"


X = np.array([3.5, -3.5, 7.25, 10.0, 0.1, -0.2])
Y = np.array([2.0, 2.0, -1.5, 3.0, 0.03, 0.07])


def test_array_remainder_matches_numpy_and_autograd():
    out = ad.Array(X) % Y
    assert np.array_equal(out.data, np.remainder(X, Y))
    assert np.array_equal((X % ad.Array(Y)).data, X % Y)
    f = lambda a, b: np.sum((a % b) ** 2 * a)            # noqa: E731
    fa = lambda a, b: anp.sum((a % b) ** 2 * a)          # noqa: E731
    ours = ad.grad(f, argnum=(0, 1))(X, Y)
    theirs = autograd.grad(fa, argnum=(0, 1))(X, Y)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-12)
    np.testing.assert_allclose(
        ad.grad(lambda b: np.sum(7.0 % b))(Y), autograd.grad(lambda b: anp.sum(7.0 % b))(Y))
    # a traced scalar with an ndarray, and np.mod (the same ufunc)
    g = ad.grad(lambda s: np.sum(np.mod(X, s) * s))(2.7)
    assert g == pytest.approx(np.sum(np.mod(X, 2.7) - 2.7 * (X // 2.7)), rel=1e-12)
    assert g == pytest.approx(central(lambda s: np.sum(np.mod(X, s) * s), 2.7))


def test_array_fmod_differentiates_with_the_truncated_quotient():
    f = lambda a, b: np.sum(np.fmod(a, b) ** 2)          # noqa: E731
    da, db = ad.grad(f, argnum=(0, 1))(X, Y)
    r = np.fmod(X, Y)
    q = np.trunc(X / Y)
    np.testing.assert_allclose(da, 2 * r)
    np.testing.assert_allclose(db, -2 * r * q)
    assert np.array_equal(np.fmod(ad.Array(X), Y).data, r)


def test_array_floor_division_and_divmod():
    q = ad.Array(X) // Y
    assert np.array_equal(q.data, X // Y)
    g = ad.grad(lambda a: np.sum((a // 2.0) * a))(X)
    assert np.array_equal(g, X // 2.0)
    q, r = divmod(ad.Array(X), Y)
    assert np.array_equal(q.data, X // Y) and np.array_equal(r.data, X % Y)


def test_array_remainder_where_numpy_gives_no_finite_value():
    y = np.array([np.inf, 2.0, 5.0])
    with np.errstate(invalid="ignore"):
        want = np.remainder(np.array([-1.0, np.inf, 1.0]), y)
        value, grad = ad.value_and_grad(lambda a: np.sum(a % y))(np.array([-1.0, np.inf, 1.0]))
        out = ad.Array([-1.0, np.inf, 1.0]) % y
    assert np.array_equal(out.data, want, equal_nan=True)
    assert grad[2] == 1.0


def test_remainder_in_a_recording_is_guarded():
    f = ad.record(lambda a: np.sum((a % 2.0) ** 2), np.array([3.5, 1.0]))
    assert f(np.array([3.5, 1.0])) == 1.5 ** 2 + 1.0
    np.testing.assert_allclose(f.grad(np.array([3.5, 1.0])), [3.0, 2.0])
    with pytest.raises(ad.BranchError, match="numpy.remainder"):
        f(np.array([3.6, 1.0]))
    g = ad.record(lambda a: a % 2.0, 3.5)
    assert g(3.5) == 1.5
    with pytest.raises(ad.BranchError):
        g(3.25)


def test_zero_d_array_converts_as_numpy_float64():
    assert ad.grad(lambda x: x[0] * round(x[0]))(np.array([2.6]))[0] == 3.0
    assert ad.grad(lambda x: x[0] * int(x[0]))(np.array([2.6]))[0] == 2.0
    assert ad.grad(lambda x: x[0] * round(x[0], 1))(np.array([2.66]))[0] == \
        round(np.float64(2.66), 1)
    assert ad.grad(lambda x: x[0] * math.floor(x[0]) + math.ceil(x[0]) * x[0] +
                   math.trunc(x[0]))(np.array([2.5]))[0] == 5.0
    with pytest.raises(TypeError, match="only 0-dimensional"):
        int(ad.Array([2.6]))
    with pytest.raises(TypeError, match="only 0-dimensional"):
        round(ad.Array([2.6, 1.0]))
    f = ad.record(lambda x: x[0] * int(x[0]), np.array([2.6]))
    with pytest.raises(ad.BranchError):
        f(np.array([3.6]))


def test_micrograd_drop_in_takes_remainder_too():
    a, b = MicrogradValue(7.0), MicrogradValue(2.0)
    c = a % b + a // b
    assert c.data == 7.0 % 2.0 + 7.0 // 2.0
    c.backward()
    assert (a.grad, b.grad) == (1.0, -3.0)
