"""Products (dot, vdot, inner, outer, tensordot, einsum, kron, cross) and
numpy.linalg on traced Arrays: values against NumPy; gradients against
central differences and HIPS autograd; tangents against central
differences; Hessians against autograd's (or central differences of our
gradient); third order through nesting against central differences of
ad.hvp; and the errors of what is not supported."""
import zlib

import numpy as np
import pytest

import pyautodiff as ad
from helpers import numeric_grad

la = np.linalg


@pytest.fixture
def rng(request):
    """Random numbers of the test's own seed: the same whichever tests run."""
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def _sym(xp, a):
    """A well-conditioned symmetric positive definite matrix (batched)."""
    n = a.shape[-1]
    return a @ xp.swapaxes(a, -1, -2) + n * xp.eye(n)


def _real_spectrum(xp, a):
    """A matrix whose eigenvalues are real: near 1, 3 and 6, in disjoint
    Gershgorin discs (each holds one eigenvalue, and a complex one would
    share its disc with its conjugate)."""
    return 0.2 * a + xp.diag(xp.array([1.0, 3.0, 6.0]))


# name: (function of (numpy-like module, *operands), operand shapes, does
# HIPS autograd differentiate it).  Eigenvectors and singular vectors are
# squared: their signs are arbitrary.
CASES = {
    "einsum matmul": (lambda xp, a, b: xp.einsum("ij,jk->ik", a, b), [(2, 3), (3, 2)], True),
    "einsum trace": (lambda xp, a: xp.einsum("ii", a), [(3, 3)], False),
    "einsum diagonal": (lambda xp, a: xp.einsum("ii->i", a), [(3, 3)], False),
    "einsum ellipsis": (lambda xp, a, b: xp.einsum("...ij,...jk", a, b), [(2, 2, 3), (3, 2)], True),
    "einsum implicit": (lambda xp, a, b: xp.einsum("bij,kjl", a, b), [(2, 2, 3), (2, 3, 2)], True),
    "einsum three": (lambda xp, a, b, c: xp.einsum("ij,jk,k->i", a, b, c, optimize=True),
                     [(2, 3), (3, 2), (2,)], True),
    "einsum broadcast": (lambda xp, a, b: xp.einsum("i...,...->i...", a, b), [(2, 1, 3), (2, 1)], True),
    "einsum outer sum": (lambda xp, a, b: xp.einsum("ij,k->jk", a, b), [(2, 3), (2,)], True),
    "einsum sublists": (lambda xp, a, b: xp.einsum(a, [0, 1], b, [1, 2], [0, 2]), [(2, 3), (3, 2)], False),
    "dot 1-1": (lambda xp, a, b: xp.dot(a, b), [(3,), (3,)], True),
    "dot 3-d": (lambda xp, a, b: xp.dot(a, b), [(2, 2, 3), (2, 3, 2)], True),
    "dot 2-1": (lambda xp, a, b: xp.dot(a, b), [(2, 3), (3,)], True),
    "vdot": (lambda xp, a, b: xp.vdot(a, b), [(2, 3), (3, 2)], False),
    "inner": (lambda xp, a, b: xp.inner(a, b), [(2, 3), (2, 2, 3)], True),
    "outer": (lambda xp, a, b: xp.outer(a, b), [(4,), (3,)], True),
    "outer raveled": (lambda xp, a, b: xp.outer(a, b), [(2, 2), (3,)], False),
    "tensordot 2": (lambda xp, a, b: xp.tensordot(a, b), [(2, 2, 3), (2, 3, 2)], True),
    "tensordot axes": (lambda xp, a, b: xp.tensordot(a, b, axes=([1, 0], [0, 2])),
                       [(2, 2, 3), (2, 3, 2)], True),
    "linalg outer": (lambda xp, a, b: xp.linalg.outer(a, b), [(2,), (3,)], False),
    "linalg cross": (lambda xp, a, b: xp.linalg.cross(a, b), [(2, 3), (3,)], False),
    "linalg tensordot": (lambda xp, a, b: xp.linalg.tensordot(a, b, axes=1), [(2, 3), (3, 2)], False),
    "linalg matmul": (lambda xp, a, b: xp.linalg.matmul(a, b), [(2, 3), (2, 3, 2)], False),
    "vecdot": (lambda xp, a, b: xp.linalg.vecdot(a, b, axis=0), [(3, 2), (3, 1)], False),
    "kron": (lambda xp, a, b: xp.kron(a, b), [(2, 2), (3, 2)], True),
    "kron 3-d": (lambda xp, a, b: xp.kron(a, b), [(2,), (2, 2, 2)], False),
    "cross": (lambda xp, a, b: xp.cross(a, b), [(2, 3), (2, 3)], True),
    "cross broadcast": (lambda xp, a, b: xp.cross(a, b), [(2, 3), (3,)], False),
    "cross axes": (lambda xp, a, b: xp.cross(a, b, axisa=0, axisc=0), [(3, 2), (2, 3)], True),
    "inv": (lambda xp, a: xp.linalg.inv(_sym(xp, a)), [(3, 3)], True),
    "inv batched": (lambda xp, a: xp.linalg.inv(a + 3 * xp.eye(2)), [(2, 2, 2)], True),
    "det": (lambda xp, a: xp.linalg.det(a), [(3, 3)], True),
    "det batched": (lambda xp, a: xp.linalg.det(a), [(2, 2, 2)], True),
    "slogdet": (lambda xp, a: xp.linalg.slogdet(a)[1], [(3, 3)], True),
    "solve vector": (lambda xp, a, b: xp.linalg.solve(_sym(xp, a), b), [(3, 3), (3,)], True),
    "solve matrix": (lambda xp, a, b: xp.linalg.solve(_sym(xp, a), b), [(2, 2), (2, 3)], True),
    "solve batched": (lambda xp, a, b: xp.linalg.solve(_sym(xp, a), b), [(2, 2, 2), (2, 2, 1)], True),
    "pinv tall": (lambda xp, a: xp.linalg.pinv(a), [(3, 2)], True),
    "pinv wide": (lambda xp, a: xp.linalg.pinv(a), [(2, 3)], True),
    "cholesky": (lambda xp, a: xp.linalg.cholesky(_sym(xp, a)), [(3, 3)], True),
    "cholesky batched": (lambda xp, a: xp.linalg.cholesky(_sym(xp, a)), [(2, 2, 2)], True),
    "eigh values": (lambda xp, a: xp.linalg.eigh(_sym(xp, a))[0], [(3, 3)], True),
    "eigh vectors": (lambda xp, a: xp.linalg.eigh(_sym(xp, a))[1] ** 2, [(3, 3)], True),
    "eigh upper": (lambda xp, a: xp.linalg.eigh(_sym(xp, a), UPLO="U")[1] ** 2, [(3, 3)], True),
    "eigh batched": (lambda xp, a: xp.linalg.eigh(_sym(xp, a))[1] ** 2, [(2, 2, 2)], True),
    "eig values": (lambda xp, a: xp.linalg.eig(_real_spectrum(xp, a))[0], [(3, 3)], False),
    "eig vectors": (lambda xp, a: xp.linalg.eig(_real_spectrum(xp, a))[1] ** 2, [(3, 3)], False),
    "svd values": (lambda xp, a: xp.linalg.svd(a, compute_uv=False), [(3, 2)], True),
    "svd u tall": (lambda xp, a: xp.linalg.svd(a, full_matrices=False)[0] ** 2, [(3, 2)], True),
    "svd vh tall": (lambda xp, a: xp.linalg.svd(a, full_matrices=False)[2] ** 2, [(3, 2)], True),
    "svd u wide": (lambda xp, a: xp.linalg.svd(a, full_matrices=False)[0] ** 2, [(2, 3)], True),
    "svd vh wide": (lambda xp, a: xp.linalg.svd(a, full_matrices=False)[2] ** 2, [(2, 3)], True),
    "svd square full": (lambda xp, a: xp.linalg.svd(a)[0] ** 2 + xp.linalg.svd(a)[2] ** 2,
                        [(2, 2, 2)], False),
    "svd hermitian": (lambda xp, a: xp.linalg.svd(a + xp.swapaxes(a, -1, -2), hermitian=True)[2] ** 2
                      + xp.linalg.svd(a + xp.swapaxes(a, -1, -2), hermitian=True)[1][..., None],
                      [(3, 3)], False),
    "pinv hermitian": (lambda xp, a: xp.linalg.pinv(_sym(xp, a), hermitian=True), [(2, 2)], False),
    "qr tall": (lambda xp, a: xp.linalg.qr(a)[0] ** 2 + xp.linalg.qr(a)[1][..., :1, :], [(3, 2)], False),
    "qr wide": (lambda xp, a: xp.linalg.qr(a)[1] ** 2, [(2, 3)], False),
    "qr square q": (lambda xp, a: xp.linalg.qr(a)[0] ** 2, [(2, 2, 2)], False),
    "qr r": (lambda xp, a: xp.linalg.qr(a, mode="r") ** 2, [(3, 2)], False),
    "matrix_power 3": (lambda xp, a: xp.linalg.matrix_power(a, 3), [(2, 2)], False),
    "matrix_power -2": (lambda xp, a: xp.linalg.matrix_power(a + 3 * xp.eye(2), -2), [(2, 2)], False),
    "norm": (lambda xp, a: xp.linalg.norm(a), [(2, 3)], True),
    "norm p": (lambda xp, a: xp.linalg.norm(a, ord=3, axis=1), [(2, 3)], True),
    "norm fro": (lambda xp, a: xp.linalg.norm(a, "fro", (0, 2), keepdims=True), [(2, 2, 2)], True),
    "norm nuc": (lambda xp, a: xp.linalg.norm(a, "nuc"), [(3, 2)], True),
    "multi_dot": (lambda xp, a, b, c: xp.linalg.multi_dot([a, b, c]), [(3,), (3, 2), (2, 2)], True),
    "svdvals": (lambda xp, a: xp.linalg.svdvals(a), [(2, 2, 3)], False),
    "vector_norm": (lambda xp, a: xp.linalg.vector_norm(a, axis=(0, 2), ord=3, keepdims=True),
                    [(2, 2, 3)], False),
    "vector_norm all": (lambda xp, a: xp.linalg.vector_norm(a, ord=np.inf), [(2, 3)], False),
    "matrix_norm": (lambda xp, a: xp.linalg.matrix_norm(a, ord=1), [(2, 2, 3)], False),
    "solve batched vector": (lambda xp, a, b: xp.linalg.solve(_sym(xp, a), b), [(2, 2, 2), (2,)], False),
}
# the norms HIPS autograd does not differentiate: against central differences
NORMS = [(None, None, (4,)), (2, 0, (4,)), (1, None, (4,)), (np.inf, None, (4,)),
         (-np.inf, -1, (2, 3)), (-1.5, 1, (2, 3)), (1, (0, 1), (2, 3)),
         (-1, None, (3, 2)), (2, None, (3, 2)), (-2, (1, 0), (3, 2)),
         (np.inf, (0, 2), (2, 2, 3)), (-np.inf, None, (2, 3)), ("nuc", (2, 1), (2, 3, 2))]
for _ord, _axis, _shape in NORMS:
    # (a fractional p away from 0, where |x|^p is smooth)
    CASES[f"norm ord={_ord} axis={_axis}"] = (
        lambda xp, a, o=_ord, ax=_axis: xp.linalg.norm(a + (2.0 if o == -1.5 else 0.0), o, ax),
        [_shape], False)


def packed(name):
    """The case as a function of one flat vector of all its operands, a
    point to take it at, and the weights of a scalar loss of it (drawn
    from the case's own seed: the same whichever tests run)."""
    fn, shapes, _ = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    sizes = [int(np.prod(s)) for s in shapes]

    def f(xp, p):
        parts, k = [], 0
        for s, n in zip(shapes, sizes):
            parts.append(p[k:k + n].reshape(s))
            k += n
        return fn(xp, *parts)
    p = rng.normal(size=sum(sizes)) * 0.5
    w = rng.normal(size=np.shape(f(np, p)))
    return f, p, w


def loss(f, w, xp=np):
    return lambda p: xp.sum(f(xp, p) * w)


@pytest.mark.parametrize("name", CASES)
def test_value_and_gradient(name):
    f, p, w = packed(name)
    with ad.Tape():
        out = f(np, ad.Array(p))
    assert isinstance(out, ad.Array)
    np.testing.assert_allclose(out.data, f(np, p), rtol=1e-10, atol=1e-12)
    grad = ad.grad(loss(f, w))(p)
    np.testing.assert_allclose(grad, numeric_grad(loss(f, w), [p], 0), rtol=1e-5, atol=1e-6)
    if CASES[name][2]:
        autograd = pytest.importorskip("autograd")
        anp = pytest.importorskip("autograd.numpy")
        theirs = autograd.grad(loss(f, w, anp))(p)
        np.testing.assert_allclose(grad, theirs, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", CASES)
def test_tangent(name):
    f, p, w = packed(name)
    t = np.cos(np.arange(p.size))
    value, tangent = ad.jvp(lambda p: f(np, p))(p, t)
    h = 1e-6
    expected = (f(np, p + h * t) - f(np, p - h * t)) / (2 * h)
    np.testing.assert_allclose(tangent, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", CASES)
def test_hessian(name):
    f, p, w = packed(name)
    hess = ad.hessian(loss(f, w))(p)
    if CASES[name][2]:
        autograd = pytest.importorskip("autograd")
        anp = pytest.importorskip("autograd.numpy")
        expected = autograd.hessian(loss(f, w, anp))(p)
        np.testing.assert_allclose(hess, expected, rtol=1e-7, atol=1e-9)
    else:
        g = ad.grad(loss(f, w))
        h = 1e-5
        expected = np.stack([(g(p + h * e) - g(p - h * e)) / (2 * h) for e in np.eye(p.size)])
        np.testing.assert_allclose(hess, expected, rtol=1e-5, atol=1e-5)


THIRD = ["einsum trace", "einsum three", "kron", "cross", "inv", "det batched", "slogdet",
         "solve matrix", "pinv wide", "cholesky", "eigh vectors", "eig vectors",
         "svd u tall", "svd vh wide", "qr tall", "qr wide", "matrix_power -2",
         "norm nuc", "norm ord=-2 axis=(1, 0)"]


@pytest.mark.parametrize("name", THIRD)
def test_third_order_through_nesting(name):
    f, p, w = packed(name)
    v = np.sin(np.arange(1, p.size + 1))
    hvp = ad.hvp(loss(f, w))

    def quadratic(q):
        return np.sum(hvp(q, v) * v)
    third = ad.grad(quadratic)(p)
    h = 1e-5
    expected = np.array([(quadratic(p + h * e) - quadratic(p - h * e)) / (2 * h)
                         for e in np.eye(p.size)])
    np.testing.assert_allclose(third, expected, rtol=1e-4, atol=1e-5)


# -- conventions -------------------------------------------------------------------

@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_gradient_lives_on_the_triangle_it_reads(uplo, rng):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    a = _sym(np, rng.normal(size=(2, 3, 3)))
    w = rng.normal(size=(2, 3, 3))

    def f(xp):
        return lambda x: xp.sum(xp.linalg.eigh(x, UPLO=uplo)[1] ** 2 * w) + \
            xp.sum(xp.linalg.eigh(x, UPLO=uplo)[0])
    ours = ad.grad(f(np))(a)
    np.testing.assert_allclose(ours, autograd.grad(f(anp))(a), rtol=1e-8, atol=1e-10)
    # NumPy reads one triangle: central differences see only it
    np.testing.assert_allclose(ours, numeric_grad(f(np), [a], 0), rtol=1e-5, atol=1e-6)
    other = np.triu(np.ones((3, 3)), 1) if uplo == "L" else np.tril(np.ones((3, 3)), -1)
    assert not (ours * other).any()


def test_cholesky_gradient_is_symmetric_as_autograds(rng):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    a = _sym(np, rng.normal(size=(3, 3)))
    w = rng.normal(size=(3, 3))
    ours = ad.grad(lambda x: np.sum(np.linalg.cholesky(x) * w))(a)
    np.testing.assert_allclose(ours, ours.T)
    theirs = autograd.grad(lambda x: anp.sum(anp.linalg.cholesky(x) * w))(a)
    np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)
    upper = ad.grad(lambda x: np.sum(np.linalg.cholesky(x, upper=True) * w.T))(a)
    np.testing.assert_allclose(upper, ours, rtol=1e-10, atol=1e-12)


def test_multi_output_results_are_numpys_named_tuples(rng):
    a = _sym(np, rng.normal(size=(3, 3)))
    with ad.Tape():
        x = ad.Array(a)
        for fn in (la.eigh, la.eig, la.svd, la.qr, la.slogdet):
            ours, theirs = fn(x), fn(a)
            assert type(ours) is type(theirs)
            for o, t in zip(ours, theirs):
                np.testing.assert_allclose(o.data, t, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(la.svd(x, compute_uv=False).data,
                                   la.svd(a, compute_uv=False))
        assert la.slogdet(-x).sign.data == la.slogdet(-a).sign
        np.testing.assert_array_equal(la.norm(x, 0, axis=1).data, [3.0, 3.0, 3.0])


def test_plain_ndarrays_are_numpys_own(rng):
    a = rng.normal(size=(3, 3))
    assert type(la.inv(a)) is np.ndarray and type(np.einsum("ii", a)) is np.float64


def test_through_the_autograd_dropin(rng):
    import pyautodiff.autograd as pag
    import pyautodiff.autograd.numpy as pnp
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    a = rng.normal(size=(3, 3))

    def f(xp):
        return lambda x: xp.linalg.slogdet(x @ x.T + xp.eye(3))[1] + \
            xp.einsum("ij,ji", x, xp.linalg.inv(x + 3 * xp.eye(3)))
    np.testing.assert_allclose(pag.grad(f(pnp))(a), autograd.grad(f(anp))(a), rtol=1e-10)


# -- what is not supported -----------------------------------------------------------

def test_complex_eigenvalues_raise():
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    with pytest.raises(TypeError, match="numpy.linalg.eig"):
        ad.grad(lambda x: np.sum(np.linalg.eig(x)[0]))(rotation)


def test_svd_full_matrices_of_a_rectangle_has_no_vector_derivative(rng):
    a = rng.normal(size=(3, 2))
    # the singular values are fine
    g = ad.grad(lambda x: np.sum(np.linalg.svd(x)[1]))(a)
    np.testing.assert_allclose(g, numeric_grad(lambda x: np.sum(np.linalg.svd(x)[1]), [a], 0),
                               rtol=1e-6)
    with pytest.raises(NotImplementedError, match="numpy.linalg.svd"):
        ad.grad(lambda x: np.sum(np.linalg.svd(x)[0] ** 2 * np.arange(9.0).reshape(3, 3)))(a)


@pytest.mark.parametrize("call, error, match", [
    (lambda x: np.linalg.qr(x, mode="raw"), NotImplementedError, "numpy.linalg.qr"),
    (lambda x: np.linalg.qr(x, mode="complete"), NotImplementedError, "numpy.linalg.qr"),
    (lambda x: np.linalg.norm(x, "fro", axis=0), ValueError, "numpy.linalg.norm"),
    (lambda x: np.linalg.norm(x, 3), ValueError, "numpy.linalg.norm"),
    (lambda x: np.linalg.norm(x[None], 2), ValueError, "numpy.linalg.norm"),
    (lambda x: np.linalg.matrix_power(x, 1.5), TypeError, "numpy.linalg.matrix_power"),
    (lambda x: np.linalg.eigh(x, UPLO="X"), ValueError, "numpy.linalg.eigh"),
    (lambda x: np.einsum("ij,jk", x, x, out=np.zeros((3, 3))), TypeError, "numpy.einsum"),
])
def test_unsupported_arguments_raise(call, error, match, rng):
    a = rng.normal(size=(3, 2))
    with pytest.raises(error, match=match):
        ad.grad(lambda x: np.sum(call(x)))(a)
    # and NumPy's own functions on ndarrays are untouched
    if error is NotImplementedError:
        call(a)


# -- recordings and scalar results -------------------------------------------------

def _recorded_program(x):
    s = x @ x.T + 3.0 * np.eye(3)
    w, v = np.linalg.eigh(s)
    u, sv, vh = np.linalg.svd(x)
    weights = np.arange(9.0).reshape(3, 3)
    return (np.sum(v ** 2 * weights) + np.sum(w) + np.linalg.slogdet(s)[1]
            + np.sum(u ** 2 * weights) + np.linalg.norm(x, 2)
            + np.einsum("ij,ji", x, np.linalg.solve(s, x)) + np.linalg.det(np.linalg.qr(x)[1]))


def test_a_recording_replays_at_other_inputs_and_its_hessian_runs_in_c(tmp_path, rng):
    x0, x1 = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    recorded = ad.record(_recorded_program, x0)
    assert np.isclose(recorded(x1), _recorded_program(x1))
    np.testing.assert_allclose(recorded.grad(x1), ad.grad(_recorded_program)(x1), rtol=1e-9)
    # the second-order sweep: each entry's vjp differentiated in forward mode
    np.testing.assert_allclose(recorded.hessian(x1), ad.hessian(_recorded_program)(x1),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(recorded.grad(x0), ad.grad(_recorded_program)(x0), rtol=1e-9)
    with pytest.raises(ValueError, match="numpy.linalg"):
        recorded.save(tmp_path / "f.adt")


@pytest.mark.parametrize("fn", [lambda x: np.linalg.det(x), lambda x: np.linalg.slogdet(x)[1],
                                lambda x: np.linalg.norm(x, "nuc"),
                                lambda x: np.linalg.eigh(x @ x.T)[0][-1]])
def test_scalar_results_differentiate_twice(fn, rng):
    x = rng.normal(size=(3, 3))
    g = ad.grad(fn)
    h = 1e-5
    expected = np.stack([(g(x + h * e) - g(x - h * e)) / (2 * h)
                         for e in np.eye(9).reshape(9, 3, 3)]).reshape(3, 3, 3, 3)
    np.testing.assert_allclose(ad.hessian(fn)(x).reshape(9, 9), expected.reshape(9, 9),
                               rtol=1e-5, atol=1e-6)


def test_the_products_are_pyautodiff_functions_too(rng):
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 2))
    with ad.Tape():
        x = ad.Array(a)
        for name in ("einsum", "tensordot", "dot", "vdot", "inner", "outer", "kron", "cross"):
            assert name in ad.__all__
        np.testing.assert_allclose(ad.einsum("ij,jk", x, b).data, a @ b)
        np.testing.assert_allclose(ad.kron(x, b).data, np.kron(a, b))
        np.testing.assert_allclose(x.dot(b).data, a @ b)
