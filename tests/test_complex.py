"""Complex numbers in traced computations (pyautodiff/complex_array.py,
complex_math.py): values against NumPy; gradients against HIPS autograd
itself (its convention: df/dx - i df/dy for a real f of z = x + iy) and
against central differences along the real and imaginary parts
separately (ad.check_grad); second derivatives (grad of a real function
of grad, holomorphic_grad of holomorphic_grad, Hessians of real functions
with complex numbers inside) against autograd; recordings; and the
errors where there is no derivative to give."""
import numpy as np
import pytest

import pyautodiff as ad
import pyautodiff.autograd as pag
import pyautodiff.autograd.numpy as pnp
from pyautodiff.complex_array import ComplexArray

autograd = pytest.importorskip("autograd")
import autograd.numpy as anp                      # noqa: E402

RNG = np.random.default_rng(20240611)
Z = RNG.normal(size=4) + 1j * RNG.normal(size=4)       # a complex argument
W = RNG.normal(size=4) + 1j * RNG.normal(size=4)       # another one
X = RNG.normal(size=4)                                  # a real argument
C = RNG.normal(size=4) - 1j * RNG.normal(size=4)       # a complex constant
M = RNG.normal(size=(3, 4)) + 1j * RNG.normal(size=(3, 4))
Z0 = 0.7 - 0.4j                                         # a complex scalar


def close(ours, theirs, rtol=1e-10, atol=1e-12):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert np.iscomplexobj(ours) == np.iscomplexobj(theirs), (ours, theirs)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


def loss(np_, fn):
    """A real function of the complex (or real) result of fn: its real and
    imaginary parts weighted apart, and its magnitude."""
    def f(*args):
        out = fn(np_, *args)
        return np_.sum(np_.real(out * C[:1]) + np_.abs(out) ** 2 * 0.3)
    return f


# -- elementwise functions: values, gradients, central differences ------------------

# name: fn(np, z); every one NumPy defines on complex numbers that this
# increment supports, and the complex parts
ELEMENTWISE = {
    "exp": lambda np_, z: np_.exp(z), "log": lambda np_, z: np_.log(z),
    "sqrt": lambda np_, z: np_.sqrt(z), "sin": lambda np_, z: np_.sin(z),
    "cos": lambda np_, z: np_.cos(z), "tan": lambda np_, z: np_.tan(z),
    "sinh": lambda np_, z: np_.sinh(z), "cosh": lambda np_, z: np_.cosh(z),
    "tanh": lambda np_, z: np_.tanh(z), "square": lambda np_, z: np_.square(z),
    "reciprocal": lambda np_, z: np_.reciprocal(z),
    "exp2": lambda np_, z: np_.exp2(z), "log2": lambda np_, z: np_.log2(z),
    "log10": lambda np_, z: np_.log10(z), "negative": lambda np_, z: -z,
    "real": lambda np_, z: np_.real(z), "imag": lambda np_, z: np_.imag(z),
    "conj": lambda np_, z: np_.conj(z), "conjugate": lambda np_, z: np_.conjugate(z),
    # (autograd's boxes have none of these attributes: its functions instead)
    "method conj": lambda np_, z: z.conj() if np_ is np else np_.conj(z),
    "attribute real": lambda np_, z: (z.real if np_ is np else np_.real(z)) * 2,
    "attribute imag": lambda np_, z: (z.imag if np_ is np else np_.imag(z)) * 2,
    "angle": lambda np_, z: np_.angle(z), "angle deg": lambda np_, z: np_.angle(z, deg=True) if np_ is np
    else np_.angle(z) * (180 / np.pi),      # (autograd's angle has no deg)
    "abs": lambda np_, z: np_.abs(z), "absolute": lambda np_, z: np_.absolute(z),
    "builtin abs": lambda np_, z: abs(z),
}


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_values_are_numpys(name):
    fn = ELEMENTWISE[name]
    value, _ = ad.vjp(lambda z: fn(np, z))(Z)
    close(value, fn(np, Z), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_gradients_are_autograds(name):
    fn = ELEMENTWISE[name]
    close(ad.grad(loss(np, fn))(Z), autograd.grad(loss(anp, fn))(Z))


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_gradients_against_central_differences(name):
    # the real and imaginary parts are entries of their own
    ad.check_grad(loss(np, ELEMENTWISE[name]), Z, modes=("rev", "fwd"))
    ad.check_grad(lambda z: ELEMENTWISE[name](np, z), Z, modes=("fwd",))


def test_tan_and_tanh_where_cosh_overflows():
    z = np.array([1 + 400j, 1 - 400j, 400 + 1j, -400 - 2j])
    for fn in (np.tan, np.tanh):
        with np.errstate(over="ignore"):
            close(ad.vjp(fn)(z)[0], fn(z), rtol=1e-14)
            g = ad.grad(lambda z: np.sum(np.real(fn(z)) + np.imag(fn(z))))(z)
        assert np.all(np.isfinite(g))


def test_convention_is_autograds_by_hand():
    # f = |z|^2 + x y: df/dx = 2x + y, df/dy = 2y + x, the gradient 2x + y - i(2y + x)
    def f(np_):
        return lambda z: np_.abs(z) ** 2 + np_.real(z) * np_.imag(z)
    x, y = Z0.real, Z0.imag
    g = ad.grad(f(np))(Z0)
    assert type(g) is complex
    close(g, complex(2 * x + y, -(2 * y + x)))
    close(g, autograd.grad(f(anp))(Z0))
    # an ndarray's gradient is a complex ndarray of its shape
    g = ad.grad(lambda z: np.sum(np.abs(z) ** 2))(Z)
    close(g, 2 * np.conj(Z))


def test_abs_at_zero_has_autograds_zero_gradient():
    z = np.array([0j, 1 + 1j, 0j])
    f = loss(np, lambda np_, z: np_.abs(z))
    close(ad.grad(f)(z), autograd.grad(loss(anp, lambda np_, z: np_.abs(z)))(z))
    assert np.all(np.isfinite(ad.grad(f)(z)))


# -- operators with complex constants and literals on either side -------------------

BINARY = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "**": lambda a, b: a ** b,
}
# (left, right) operands: z and w complex arguments, x a real one; the
# constants are a complex literal, a complex ndarray, a real number
OPERANDS = {
    "z op w": (lambda z, w, x: z, lambda z, w, x: w),
    "z op 2-1j": (lambda z, w, x: z, lambda z, w, x: 2 - 1j),
    "(1+2j) op z": (lambda z, w, x: 1 + 2j, lambda z, w, x: z),
    "z op C": (lambda z, w, x: z, lambda z, w, x: C),
    "C op z": (lambda z, w, x: C, lambda z, w, x: z),
    "z op 3": (lambda z, w, x: z, lambda z, w, x: 3),
    "2.5 op z": (lambda z, w, x: 2.5, lambda z, w, x: z),
    "z op x": (lambda z, w, x: z, lambda z, w, x: x),
    "x op z": (lambda z, w, x: x, lambda z, w, x: z),
    "x op 1j": (lambda z, w, x: x, lambda z, w, x: 1j),
    "1j op x": (lambda z, w, x: 1j, lambda z, w, x: x),
    "x op C": (lambda z, w, x: x, lambda z, w, x: C),
    "C op x": (lambda z, w, x: C, lambda z, w, x: x),
    "x[0] op w": (lambda z, w, x: x[0], lambda z, w, x: w),
    "z op np.complex128": (lambda z, w, x: z, lambda z, w, x: np.complex128(0.5 + 2j)),
}


def _operator_problem(symbol, operands):
    left, right = OPERANDS[operands]
    op = BINARY[symbol]
    x = np.abs(X) + 0.5                # (a positive base for x ** z)

    def fn(np_, z, w, x):
        return op(left(z, w, x), right(z, w, x))
    return fn, (Z, W, x)


@pytest.mark.parametrize("operands", OPERANDS)
@pytest.mark.parametrize("symbol", BINARY)
def test_operators_values_and_gradients(symbol, operands):
    fn, args = _operator_problem(symbol, operands)
    value, _ = ad.vjp(lambda *a: fn(np, *a))(*args)
    close(value, fn(np, *args), rtol=1e-12)
    theirs = autograd.grad(loss(anp, fn), (0, 1, 2))(*args)
    ours = ad.grad(loss(np, fn), (0, 1, 2))(*args)
    for o, t in zip(ours, theirs):
        close(o, t)
    ad.check_grad(loss(np, fn), *args, atol=1e-6)     # (z ** w is large here)


@pytest.mark.parametrize("exponent", [2, 3, -2, 0, 0.5, 2.5, -1.5, 1 + 1j, 2 + 0j, 7])
def test_powers(exponent):
    fn = lambda np_, z: z ** exponent      # noqa: E731
    value, _ = ad.vjp(lambda z: fn(np, z))(Z)
    close(value, Z ** exponent, rtol=1e-12)
    close(ad.grad(loss(np, fn))(Z), autograd.grad(loss(anp, fn))(Z))
    ad.check_grad(loss(np, fn), Z, atol=1e-6)


def test_power_with_a_traced_real_exponent():
    fn = lambda np_, z, t: z ** t          # noqa: E731
    for args in ((Z, 1.7), (Z, X)):
        ours = ad.grad(loss(np, fn), (0, 1))(*args)
        theirs = autograd.grad(loss(anp, fn), (0, 1))(*args)
        for o, t in zip(ours, theirs):
            close(o, t)


def test_unary_minus_and_plus():
    fn = lambda np_, z: -z * 2 - np_.negative(z)          # noqa: E731
    close(ad.grad(loss(np, fn))(Z), autograd.grad(loss(anp, fn))(Z))
    # (autograd's boxes have no unary +)
    close(ad.grad(loss(np, lambda np_, z: +z))(Z), ad.grad(loss(np, lambda np_, z: z))(Z))


def test_a_traced_float_times_1j():
    # a float argument (a traced Value) meets complex literals
    def f(np_):
        return lambda t: np_.abs(np_.exp(1j * t) * t + 2j) ** 2 + np_.real(t * 1j ** 2)
    close(ad.grad(f(np))(1.3), autograd.grad(f(anp))(1.3))
    close(ad.grad(ad.grad(f(np)))(1.3), autograd.grad(autograd.grad(f(anp)))(1.3))


# -- reductions, products and layout ------------------------------------------------------

STRUCTURAL = {
    "sum": lambda np_, m: np_.sum(m), "sum axis": lambda np_, m: np_.sum(m, axis=0),
    "sum keepdims": lambda np_, m: np_.sum(m, axis=1, keepdims=True),
    "method sum": lambda np_, m: m.sum(axis=1),
    "mean": lambda np_, m: np_.mean(m), "mean axis": lambda np_, m: np_.mean(m, axis=1),
    "method mean": lambda np_, m: m.mean(axis=0, keepdims=True),
    "dot": lambda np_, m: np_.dot(m, Z), "dot real": lambda np_, m: np_.dot(m, X),
    "dot left": lambda np_, m: np_.dot(C[:3], m),
    "method dot": lambda np_, m: m.dot(Z) if np_ is np else np_.dot(m, Z),
    "matmul": lambda np_, m: m @ m.T, "rmatmul": lambda np_, m: M.T @ m,
    "np.matmul": lambda np_, m: np_.matmul(m, Z),
    "matmul real": lambda np_, m: np_.eye(3) @ m,
    "vdot": lambda np_, m: np_.vdot(m, M), "inner": lambda np_, m: np_.inner(m, C),
    "outer": lambda np_, m: np_.outer(m[0], C),
    "tensordot": lambda np_, m: np_.tensordot(m, M, axes=([0, 1], [0, 1])),
    "index": lambda np_, m: m[1], "slice": lambda np_, m: m[:, 1:3],
    "fancy index": lambda np_, m: m[[0, 2, 2], [1, 0, 3]],
    "mask index": lambda np_, m: m[np_.abs(M) > 1.0],
    "reshape": lambda np_, m: np_.reshape(m, (4, 3)),
    "method reshape": lambda np_, m: m.reshape(2, 6),
    "transpose": lambda np_, m: np_.transpose(m), "T": lambda np_, m: m.T,
    "ravel": lambda np_, m: np_.ravel(m), "flatten": lambda np_, m: m.flatten(),
    "concatenate": lambda np_, m: np_.concatenate([m, M, np_.ones((1, 4))]),
    "stack": lambda np_, m: np_.stack([m, m * 1j]),
    "flip": lambda np_, m: np_.flip(m, 1), "roll": lambda np_, m: np_.roll(m, 2),
    "expand_dims": lambda np_, m: np_.expand_dims(m, 0),
    "swapaxes": lambda np_, m: np_.swapaxes(m, 0, 1),
    "triu": lambda np_, m: np_.triu(m), "cumsum": lambda np_, m: np_.cumsum(m, axis=1),
    "trace": lambda np_, m: np_.trace(m), "where": lambda np_, m: np_.where(np_.abs(M) > 1, m, 2j),
    "moveaxis": lambda np_, m: np_.moveaxis(m, 0, 1), "rot90": lambda np_, m: np_.rot90(m),
    "broadcast_to": lambda np_, m: np_.broadcast_to(m, (2, 3, 4)),
    "tile": lambda np_, m: np_.tile(m, (2, 1)), "repeat": lambda np_, m: np_.repeat(m, 2, axis=0),
    "diagonal": lambda np_, m: np_.diagonal(m), "diag": lambda np_, m: np_.diag(m[0]),
    "take": lambda np_, m: np_.take(m, [3, 0, 5]),
    "pad": lambda np_, m: np_.pad(m, 1), "pad value": lambda np_, m: np_.pad(m, 1, constant_values=2 - 1j),
    "vstack": lambda np_, m: np_.vstack([m, M]), "hstack": lambda np_, m: np_.hstack([m, m]),
    "dstack": lambda np_, m: np_.dstack([m, M]),
    "column_stack": lambda np_, m: np_.column_stack([m[0], m[1]]),
    "squeeze": lambda np_, m: np_.squeeze(m[:1]), "kron": lambda np_, m: np_.kron(m[:2, :2], C[:2]),
    "split": lambda np_, m: np_.concatenate(np_.split(m, 2, axis=1)[::-1]),
}


# autograd has no derivative of these: central differences only
NOT_IN_AUTOGRAD = {"vdot", "flip", "rot90", "diagonal", "broadcast_to", "take", "pad", "pad value",
                   "tile", "kron", "moveaxis", "column_stack", "dstack", "split"}


@pytest.mark.parametrize("name", STRUCTURAL)
def test_reductions_products_and_layout(name):
    fn = STRUCTURAL[name]
    value, _ = ad.vjp(lambda m: fn(np, m))(M)
    close(value, fn(np, M), rtol=1e-13)
    if name not in NOT_IN_AUTOGRAD:
        close(ad.grad(loss(np, fn))(M), autograd.grad(loss(anp, fn))(M))
    ad.check_grad(loss(np, fn), M)


def test_real_if_close():
    fn = lambda np_, z: np_.real_if_close(z * np_.conj(z))       # noqa: E731
    value, _ = ad.vjp(lambda z: fn(np, z))(Z)
    assert not np.iscomplexobj(value)
    close(value, np.real_if_close(Z * np.conj(Z)))
    close(ad.grad(loss(np, fn))(Z), autograd.grad(loss(anp, fn))(Z))
    far = lambda np_, z: np_.real_if_close(z * z)                # noqa: E731
    assert np.iscomplexobj(ad.vjp(lambda z: far(np, z))(Z)[0])
    close(ad.grad(loss(np, far))(Z), autograd.grad(loss(anp, far))(Z))


def test_equality_masks():
    def f(np_):
        return lambda z: np_.sum(np_.abs(np_.where(z == Z[::-1] * 0 + Z, z * 2, z) ** 2) +
                                  np_.where(z != 1j, np_.real(z), 0.0))
    z = Z.copy()
    z[1] = 1j
    close(ad.grad(f(np))(z), autograd.grad(f(anp))(z))


def test_complex_array_attributes():
    def f(z):
        assert isinstance(z, ComplexArray)
        assert z.shape == (3, 4) and z.ndim == 2 and z.size == 12 and len(z) == 3
        assert z.dtype == np.complex128 and np.iscomplexobj(z) and not np.isrealobj(z)
        assert np.shape(z) == (3, 4) and z.T.shape == (4, 3)
        assert np.zeros_like(z).dtype == np.complex128
        assert "ComplexArray(" in repr(z)
        return np.sum(np.abs(z))
    ad.grad(f)(M)


# -- the differential operators ---------------------------------------------------------

def test_value_and_grad_and_argnums():
    f = loss(np, lambda np_, z, x: np_.sin(z) * x)
    value, (gz, gx) = ad.value_and_grad(f, (0, 1))(Z, X)
    close(value, f(Z, X))
    theirs = autograd.grad(loss(anp, lambda np_, z, x: np_.sin(z) * x), (0, 1))(Z, X)
    close(gz, theirs[0])
    close(gx, theirs[1])
    assert not np.iscomplexobj(gx)


def test_complex_numbers_in_nested_arguments():
    ours = ad.grad(lambda d: np.sum(np.abs(d["z"] * d["w"][0]) ** 2) * d["x"])(
        {"z": Z, "w": [W[0]], "x": 2.0})
    theirs = autograd.grad(lambda d: anp.sum(anp.abs(d["z"] * d["w"][0]) ** 2) * d["x"])(
        {"z": Z, "w": [W[0]], "x": 2.0})
    for key in ("z", "x"):
        close(ours[key], theirs[key])
    assert type(ours["w"][0]) is complex
    close(ours["w"][0], theirs["w"][0])


def test_sparse_derivatives_of_a_complex_argument_raise():
    for name in ("sparse_jacobian", "jacobian_sparsity", "sparse_hessian"):
        with pytest.raises(TypeError, match="complex"):
            getattr(ad, name)(lambda z: np.sum(np.abs(z) ** 2))(Z)


def test_jacobian_of_a_real_function_of_complex_numbers():
    fn = lambda np_, z: np_.abs(np_.exp(z) * C) ** 2 + np_.imag(z)    # noqa: E731
    close(ad.jacobian(lambda z: fn(np, z))(Z), autograd.jacobian(lambda z: fn(anp, z))(Z))
    close(pag.jacobian(lambda z: fn(pnp, z))(Z), autograd.jacobian(lambda z: fn(anp, z))(Z))


def test_vjp_and_jvp():
    fn = lambda np_, z: np_.conj(z) ** 2 * np_.exp(z)       # noqa: E731
    value, vjp_fn = ad.vjp(lambda z: fn(np, z))(Z)
    vjp_theirs, value_theirs = autograd.make_vjp(lambda z: fn(anp, z))(Z)
    close(value, value_theirs)
    close(vjp_fn(W), vjp_theirs(W))
    close(vjp_fn(X), vjp_theirs(X + 0j))             # a real cotangent of a complex result
    value, tangent = ad.jvp(lambda z: fn(np, z))(Z, W)
    theirs = autograd.make_jvp(lambda z: fn(anp, z))(Z)(W)
    close(value, theirs[0])
    close(tangent, theirs[1])
    # of a real argument
    g = lambda np_, x: np_.exp(1j * x) * x               # noqa: E731
    vjp_ours = ad.vjp(lambda x: g(np, x))(X)[1]
    close(vjp_ours(W), autograd.make_vjp(lambda x: g(anp, x))(X)[0](W))
    close(ad.jvp(lambda x: g(np, x))(X, X)[1],
          autograd.make_jvp(lambda x: g(anp, x))(X)(X)[1])


def test_drop_in_operators():
    holo = lambda np_, z: np_.sin(z) ** 3 / (z + 2) * np_.exp(1j * z)    # noqa: E731
    close(pag.holomorphic_grad(lambda z: holo(pnp, z))(Z0),
          autograd.holomorphic_grad(lambda z: holo(anp, z))(Z0))
    close(pag.holomorphic_grad(lambda z: pnp.sum(holo(pnp, z)))(Z),
          autograd.holomorphic_grad(lambda z: anp.sum(holo(anp, z)))(Z))
    close(pag.elementwise_grad(lambda z: pnp.abs(holo(pnp, z)))(Z),
          autograd.elementwise_grad(lambda z: anp.abs(holo(anp, z)))(Z))
    close(pag.grad(loss(pnp, holo))(Z), autograd.grad(loss(anp, holo))(Z))
    close(pag.deriv(lambda z: holo(pnp, z))(Z0), autograd.deriv(lambda z: holo(anp, z))(Z0))
    # the drop-in's np.array and list arguments stack traced complex numbers
    listed = lambda np_, z: np_.array([z[0] * 2, z[1] ** 2, 3j, 1.0]) + np_.mean([z[2], 1j])  # noqa
    close(pag.grad(loss(pnp, listed))(Z), autograd.grad(loss(anp, listed))(Z))
    with pytest.raises(TypeError, match="Elementwise_grad only applies to real-output"):
        pag.elementwise_grad(lambda z: holo(pnp, z))(Z)
    with pytest.warns(UserWarning, match="not complex"):
        assert pag.holomorphic_grad(lambda x: x ** 3)(2.0) == 12.0


# -- second order ---------------------------------------------------------------------------

SECOND = {
    "abs**4 + real(z**3)": lambda np_, z: np_.abs(z) ** 4 + np_.real(z ** 3),
    "exp and angle": lambda np_, z: np_.real(np_.exp(z) * C[0]) * np_.angle(z),
    "log and sqrt": lambda np_, z: np_.imag(np_.log(z) * np_.sqrt(z)),
}


@pytest.mark.parametrize("name", SECOND)
def test_grad_of_a_real_function_of_grad(name):
    fn = SECOND[name]
    for part in ("real", "imag"):
        def outer(np_, grad):
            return lambda z: getattr(np_, part)(grad(lambda u: fn(np_, u))(z) * (1 + 2j))
        close(ad.grad(outer(np, ad.grad))(Z0), autograd.grad(outer(anp, autograd.grad))(Z0))
        close(pag.grad(outer(pnp, pag.grad))(Z0), autograd.grad(outer(anp, autograd.grad))(Z0))


def test_holomorphic_grad_of_holomorphic_grad():
    f = lambda np_: lambda z: np_.exp(z) * np_.sin(z) / (z ** 2 + 1)     # noqa: E731
    ours = pag.holomorphic_grad(pag.holomorphic_grad(f(pnp)))(Z0)
    close(ours, autograd.holomorphic_grad(autograd.holomorphic_grad(f(anp)))(Z0))
    third = pag.holomorphic_grad(pag.holomorphic_grad(pag.holomorphic_grad(f(pnp))))(Z0)
    close(third, autograd.holomorphic_grad(autograd.holomorphic_grad(
        autograd.holomorphic_grad(f(anp))))(Z0))


def test_hessian_of_a_real_function_with_complex_numbers_inside():
    def f(np_):
        return lambda x: np_.sum(np_.abs(np_.exp(1j * x) * (x + 2j)) ** 3 +
                                 np_.real(np_.sqrt(x + 1j) * C))
    close(ad.hessian(f(np))(X), autograd.hessian(f(anp))(X))
    close(pag.hessian(f(pnp))(X), autograd.hessian(f(anp))(X))
    v = RNG.normal(size=X.shape)
    close(ad.hvp(f(np))(X, v), autograd.hessian_vector_product(f(anp))(X, v))
    ad.check_grad(f(np), X, order=2)


# -- recordings --------------------------------------------------------------------------

def test_recording_of_a_function_of_complex_numbers():
    f = loss(np, lambda np_, z: np_.exp(z) * np_.conj(z) / (z + 3))
    F = ad.record(f, Z)
    for z in (Z, W, Z * 0.5 + 1j):
        close(F(z), f(z), rtol=1e-13)
        close(F.grad(z), autograd.grad(loss(anp, lambda np_, z: np_.exp(z) * np_.conj(z)
                                            / (z + 3)))(z))
        close(F.jacobian(z), ad.grad(f)(z))


def test_recording_of_a_gradient_replays_and_differentiates_again():
    fn = lambda np_, z: np_.abs(z) ** 4 + np_.real(z ** 3 * C[0])    # noqa: E731
    G = ad.record(ad.grad(lambda z: fn(np, z)), Z0)
    for z in (Z0, 1.5 + 0.2j, -0.3 - 2j):
        close(G(z), autograd.grad(lambda u: fn(anp, u))(z))
    R = ad.record(lambda z: np.real(ad.grad(lambda u: fn(np, u))(z)), Z0)
    close(R.grad(2 - 1j), autograd.grad(lambda z: anp.real(
        autograd.grad(lambda u: fn(anp, u))(z)))(2 - 1j))


def test_recording_with_a_complex_constant_and_a_map():
    f = lambda x: np.sum(np.abs(x * C + 1j) ** 2)       # noqa: E731
    F = ad.record(f, X)
    xs = RNG.normal(size=(5, 4))
    close(F.map(xs, method="grad"), np.stack([ad.grad(f)(x) for x in xs]))
    Fz = ad.record(lambda z: np.sum(np.abs(z * C) ** 2), Z)
    zs = RNG.normal(size=(3, 4)) + 1j * RNG.normal(size=(3, 4))
    close(Fz.map(zs, method="grad"), np.stack([2 * np.abs(C) ** 2 * np.conj(z) for z in zs]))


def test_no_grad_computes_complex_values():
    a = ad.Array(X)
    with ad.no_grad():
        out = np.exp(a * 1j)
    close(out.data, np.exp(X * 1j))
    loss_value = np.sum(np.abs(np.fft.fft(a * (1 + 1j))) ** 2)
    loss_value.backward()
    close(a.grad, 2 * 2 * len(X) * X)        # Parseval: |F x|^2 = n |x|^2 times |1+i|^2


# -- what raises instead of giving a wrong number ---------------------------------------------

def test_grad_of_a_complex_result_raises_as_autograds():
    with pytest.raises(TypeError, match="real scalar-output"):
        ad.grad(lambda z: z ** 2)(Z0)
    with pytest.raises(TypeError, match="real scalar-output"):
        pag.grad(lambda z: z ** 2)(Z0)
    with pytest.raises(TypeError, match="real scalar-output"):
        ad.grad(ad.grad(lambda z: np.abs(z) ** 2))(Z0)      # a complex gradient
    with pytest.raises(TypeError, match="real scalar-output"):
        ad.value_and_grad(lambda x: np.sum(np.fft.fft(x)))(X)


@pytest.mark.parametrize("call", [
    lambda: ad.hessian(lambda z: np.abs(z) ** 2)(Z0),
    lambda: ad.hvp(lambda z: np.sum(np.abs(z) ** 2))(Z, Z),
    lambda: pag.hessian(lambda z: pnp.sum(pnp.abs(z) ** 2))(Z),
    lambda: ad.jacobian(lambda z: z * 2)(Z),
    lambda: ad.jacobian(lambda x: x * 1j)(X),
], ids=["hessian", "hvp", "autograd hessian", "jacobian of complex", "jacobian to complex"])
def test_second_derivatives_and_complex_jacobians_have_no_convention(call):
    with pytest.raises(TypeError, match="complex"):
        call()


@pytest.mark.parametrize("call, name", [
    (lambda z: np.linalg.inv(z.reshape(2, 2)), "numpy.linalg.inv"),
    (lambda z: np.linalg.solve(np.eye(4), z), "numpy.linalg.solve"),
    (lambda z: np.arcsin(z), "numpy.arcsin"),
    (lambda z: np.prod(z), "numpy.prod"),
    (lambda z: np.maximum(z, 0), "numpy.maximum"),
    (lambda z: np.cumprod(z), "numpy.cumprod"),
    (lambda x: np.linalg.solve(np.eye(4) * x, C), "numpy.linalg.solve"),
])
def test_unsupported_complex_functions_raise_naming_them(call, name):
    arg = X if "x" in call.__code__.co_varnames else Z
    with pytest.raises(TypeError, match=f"no derivative rule for {name} of complex"):
        ad.grad(lambda a: np.sum(np.abs(call(a))))(arg)


def test_conversions_that_would_drop_a_derivative_raise():
    def check(fn):
        return lambda z: fn(z) and np.sum(np.abs(z))
    with pytest.raises(ad.DetachError):
        ad.grad(check(lambda z: complex(z[0])))(Z)
    with pytest.raises(ad.DetachError):
        ad.grad(check(lambda z: np.asarray(z)))(Z)
    with pytest.raises(TypeError, match="float"):
        ad.grad(check(lambda z: float(z[0])))(Z)
    with pytest.raises(TypeError, match="imaginary part"):
        ad.grad(check(lambda z: z.astype(float)))(Z)
    with pytest.raises(TypeError, match="imaginary part"):
        ad.grad(check(lambda z: z.astype(float)))(Z)
    with pytest.raises(TypeError):
        ad.grad(check(lambda z: z < 1))(Z)


def test_a_users_value_keeps_real_numbers():
    # ad.Value is micrograd's real scalar: a complex operand is a TypeError
    with pytest.raises(TypeError):
        ad.Value(2.0) + 1j


def test_a_custom_ops_complex_output_still_raises():
    op = ad.custom_op(lambda x: x * 1j, lambda g, out, x: (g,))
    with pytest.raises(TypeError, match="complex"):
        ad.grad(lambda x: np.sum(np.abs(op(x))))(X)


def test_check_grad_catches_a_wrong_complex_gradient():
    # |z|^2 through a custom op whose vjp has the wrong sign in the
    # imaginary part: check_grad compares along each part, and fails there
    wrong = ad.custom_op(lambda x, y: x ** 2 + y ** 2,
                         lambda g, out, x, y: (2 * g * x, -2 * g * y))
    with pytest.raises(AssertionError, match="leaf 1.*gradient"):
        ad.check_grad(lambda z: np.sum(wrong(np.real(z), np.imag(z))), Z)
    right = ad.custom_op(lambda x, y: x ** 2 + y ** 2,
                         lambda g, out, x, y: (2 * g * x, 2 * g * y))
    ad.check_grad(lambda z: np.sum(right(np.real(z), np.imag(z))), Z)
