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


# -- where eigenvalues or singular values coincide -------------------------------------
# Functions of the eigenvalues (singular values) alone are smooth there; the
# oracles are the same functions written with matrix products, whose
# derivatives do not go through any eigendecomposition.

def _lower(x):
    """The symmetric matrix eigh reads (its default lower triangle)."""
    return np.tril(x) + np.swapaxes(np.tril(x, -1), -1, -2)


def _rotation(n, seed):
    return la.qr(np.random.default_rng(seed).normal(size=(n, n)))[0]


def _similar(d, seed=0):
    """A symmetric matrix with eigenvalues d, in a random basis (equal ones
    coincide to rounding only)."""
    q = _rotation(len(d), seed)
    return q @ np.diag(d) @ q.T


def _trace(x):
    return np.sum(np.einsum("...ii->...", x))


# name: (function of the eigenvalues, the same by matrix products)
EIGENVALUE_FUNCTIONS = {
    "trace": (lambda x: np.sum(la.eigvalsh(x)), lambda x: _trace(_lower(x))),
    "squares": (lambda x: np.sum(la.eigvalsh(x) ** 2), lambda x: np.sum(_lower(x) ** 2)),
    "cubes": (lambda x: np.sum(la.eigh(x)[0] ** 3),
              lambda x: _trace(_lower(x) @ _lower(x) @ _lower(x))),
    # phi not a sum over the eigenvalues: phi_ij != 0 between them
    "not separable": (lambda x: np.sum(la.eigvalsh(x) ** 2) ** 2 + np.sum(la.eigvalsh(x)) ** 3,
                      lambda x: np.sum(_lower(x) ** 2) ** 2 + _trace(_lower(x)) ** 3),
}
COINCIDING = {
    "identity": np.eye(3),
    "exact ties": np.diag([2.0, 2.0, 2.0, 5.0]),
    "ties to rounding": _similar([1.0, 1.0, 2.0, 5.0]),
    "all equal to rounding": _similar([3.0, 3.0, 3.0]),
    "stack": np.stack([_similar([1.0, 1.0, 2.0]), _similar([1.0, 3.0, 2.0])]),
}


def _second_derivatives(f, x, v):
    """f's Hessian by each way pyautodiff takes it, and its product with v."""
    inside = []

    def outer(y):           # a Hessian taken inside another derivative
        inside.append(ad.hessian(f)(y).data)
        return np.sum(y)
    ad.grad(outer)(x)
    return {"hessian": ad.hessian(f)(x), "recorded": ad.record(f, x).hessian(x),
            "jacobian of grad": ad.jacobian(ad.grad(f))(x), "inside": inside[0],
            "hvp": ad.hvp(f)(x, v),
            "grad of grad": ad.grad(lambda y: np.sum(ad.grad(f)(y) * v))(x)}


@pytest.mark.parametrize("point", COINCIDING)
@pytest.mark.parametrize("fn", EIGENVALUE_FUNCTIONS)
def test_second_derivatives_of_eigenvalue_functions_where_eigenvalues_coincide(fn, point, rng):
    f, oracle = EIGENVALUE_FUNCTIONS[fn]
    x = COINCIDING[point]
    v = rng.normal(size=x.shape)
    expected = ad.hessian(oracle)(x)
    for how, h in _second_derivatives(f, x, v).items():
        want = np.tensordot(expected, v, axes=x.ndim) if how in ("hvp", "grad of grad") \
            else expected
        np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-12, err_msg=how)


def test_the_examples_second_derivatives_by_hand():
    # the trace is linear; the sum of squared singular values is ||A||_F^2
    np.testing.assert_array_equal(ad.hessian(lambda a: np.sum(la.eigvalsh(a)))(np.eye(3)),
                                  np.zeros((3, 3, 3, 3)))
    h = ad.hessian(lambda a: np.sum(la.svd(a, compute_uv=False) ** 2))(np.eye(2))
    np.testing.assert_allclose(h.reshape(4, 4), 2 * np.eye(4), atol=1e-15)


def test_a_non_polynomial_eigenvalue_function_is_the_limit_at_coinciding_eigenvalues():
    """sum exp(w) (tr expm): the Hessian where eigenvalues coincide against
    central differences of the gradient (whose points have them apart) and
    the Hessians at nearby distinct eigenvalues, which tend to it."""
    def f(x):
        return np.sum(np.exp(la.eigvalsh(x)))
    q = _rotation(3, 1)
    x = q @ np.diag([1.0, 1.0, 2.0]) @ q.T
    hess = ad.hessian(f)(x).reshape(9, 9)
    g, h = ad.grad(f), 1e-5
    central = np.stack([(g(x + h * e) - g(x - h * e)) / (2 * h)
                        for e in np.eye(9).reshape(9, 3, 3)]).reshape(9, 9)
    np.testing.assert_allclose(hess, central, rtol=1e-7, atol=1e-7)
    errors = [np.abs(ad.hessian(f)(q @ np.diag([1.0, 1.0 + eps, 2.0]) @ q.T).reshape(9, 9)
                     - hess).max() for eps in (1e-3, 1e-4, 1e-5)]
    assert errors[0] < 1e-2 and errors[2] < 1e-4
    assert errors[1] < errors[0] / 5 and errors[2] < errors[1] / 5     # O(eps)


SINGULAR_VALUE_FUNCTIONS = {
    "squares": (lambda x: np.sum(la.svd(x, compute_uv=False) ** 2), lambda x: np.sum(x ** 2)),
    "fourth powers": (lambda x: np.sum(la.svdvals(x) ** 4),
                      lambda x: np.sum((np.swapaxes(x, -1, -2) @ x) ** 2)),
    "not separable": (lambda x: np.sum(la.svdvals(x) ** 2) ** 2, lambda x: np.sum(x ** 2) ** 2),
}


def _with_singular_values(m, n, s, seed=0):
    d = np.zeros((m, n))
    d[range(len(s)), range(len(s))] = s
    return _rotation(m, seed) @ d @ _rotation(n, seed + 1).T


SINGULAR_COINCIDING = {
    "identity": np.eye(2),
    "tall identity": np.eye(3, 2),
    "ties to rounding": _with_singular_values(3, 3, [2.0, 2.0, 1.0]),
    "a zero singular value": _with_singular_values(3, 3, [2.0, 1.0, 0.0]),
    "tall, rank deficient": _with_singular_values(4, 2, [1.5, 0.0]),
    "wide, tied and rank deficient": _with_singular_values(2, 4, [1.0, 1.0]),
    "zero": np.zeros((2, 2)),
    "stack": np.stack([np.eye(3, 2), _with_singular_values(3, 2, [2.0, 1.0])]),
}


@pytest.mark.parametrize("point", SINGULAR_COINCIDING)
@pytest.mark.parametrize("fn", SINGULAR_VALUE_FUNCTIONS)
def test_second_derivatives_of_singular_value_functions_where_they_coincide(fn, point, rng):
    f, oracle = SINGULAR_VALUE_FUNCTIONS[fn]
    x = SINGULAR_COINCIDING[point]
    v = rng.normal(size=x.shape)
    expected = ad.hessian(oracle)(x)
    np.testing.assert_allclose(ad.grad(f)(x), ad.grad(oracle)(x), rtol=1e-12, atol=1e-12)
    for how, h in _second_derivatives(f, x, v).items():
        want = np.tensordot(expected, v, axes=x.ndim) if how in ("hvp", "grad of grad") \
            else expected
        np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-12, err_msg=how)


@pytest.mark.parametrize("point", ["ties to rounding", "tall, rank deficient"])
def test_a_non_polynomial_singular_value_function_against_central_differences(point):
    """sum log(1 + s^2): the Hessian where singular values coincide, or
    are zero, against central differences of the gradient."""
    def f(x):
        return np.sum(np.log1p(la.svdvals(x) ** 2))
    x = SINGULAR_COINCIDING[point]
    n = x.size
    g, h = ad.grad(f), 1e-5
    central = np.stack([(g(x + h * e) - g(x - h * e)) / (2 * h)
                        for e in np.eye(n).reshape((n,) + x.shape)]).reshape(n, n)
    for hess in (ad.hessian(f)(x), ad.jacobian(ad.grad(f))(x)):
        np.testing.assert_allclose(hess.reshape(n, n), central, rtol=1e-7, atol=1e-8)


def test_third_order_of_eigenvalue_functions(rng):
    """Exact at distinct eigenvalues; where they coincide the third order
    (and a second order taken as a derivative of a jvp) is NaN, as the
    docs say: never a finite wrong number."""
    def f(x):
        return np.sum(la.eigvalsh(x) ** 4)

    def oracle(x):
        return np.sum((_lower(x) @ _lower(x)) ** 2)
    u, v = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))

    def thirds(g, x):
        return {"grad of hvp": ad.grad(lambda y: np.sum(ad.hvp(g)(y, u) * v))(x),
                "hessian of grad": np.tensordot(
                    ad.hessian(lambda y: np.sum(ad.grad(g)(y) * v))(x), u, axes=2),
                "grad of jvp": ad.grad(lambda y: ad.jvp(g)(y, u)[1])(x),
                "jvp of jvp": ad.jvp(lambda y: ad.jvp(g)(y, u)[1])(x, v)[1]}
    apart = _similar([1.0, 1.5, 2.0])
    ours, expected = thirds(f, apart), thirds(oracle, apart)
    for how in ours:
        np.testing.assert_allclose(ours[how], expected[how], rtol=1e-9, atol=1e-9,
                                   err_msg=how)
    for how, ours in thirds(f, _similar([1.0, 1.0, 2.0])).items():
        assert np.isnan(ours).all(), how


def test_tied_eigenvalues_one_by_one():
    """A function that tells coinciding eigenvalues apart has no gradient
    there: reverse mode splits their share evenly (as np.max does);
    forward mode gives their one-sided derivatives along the tangent
    (those of the eigenvalues of x + e t for e -> 0+)."""
    x = np.diag([1.0, 1.0, 1.0, 4.0])
    np.testing.assert_allclose(ad.grad(lambda a: la.eigvalsh(a)[2])(x),
                               np.diag([1 / 3, 1 / 3, 1 / 3, 0.0]))
    t = np.zeros((4, 4))
    t[:3, :3] = [[0.0, 1.0, 2.0], [1.0, 0.5, 0.0], [2.0, 0.0, -1.0]]
    _, tangent = ad.jvp(la.eigvalsh)(x, t)
    e = 1e-7
    np.testing.assert_allclose(tangent, (la.eigvalsh(x + e * t) - la.eigvalsh(x)) / e,
                               atol=1e-6)
    np.testing.assert_allclose(tangent[:3], la.eigvalsh(t[:3, :3]), atol=1e-14)
    # the same inside another derivative
    seen = []

    def inner(a):
        seen.append(ad.jvp(la.eigvalsh)(a, t)[1].data)
        return np.sum(a)
    ad.grad(inner)(x)
    np.testing.assert_allclose(seen[0], tangent, atol=1e-14)


def test_eigenvector_derivatives_where_eigenvalues_coincide_to_rounding_are_nan():
    x = _similar([1.0, 1.0, 2.0])            # the computed eigenvalues differ by ~1e-16
    w = np.arange(9.0).reshape(3, 3)
    g = ad.grad(lambda a: np.sum(la.eigh(a)[1] ** 2 * w))(x)
    assert np.isnan(g).all()
    g = ad.grad(lambda a: np.sum(la.svd(a)[0] ** 2 * w))(_with_singular_values(3, 3, [2, 2, 1]))
    assert np.isnan(g).all()


def test_a_recording_of_a_gradient_holds_only_where_the_same_eigenvalues_coincide():
    def f(x):
        return np.sum(la.eigvalsh(x) ** 3)

    def oracle(x):
        return _trace(_lower(x) @ _lower(x) @ _lower(x))
    tied, apart = _similar([1.0, 1.0, 2.0]), _similar([1.0, 3.0, 2.0])
    for first, then in ((tied, apart), (apart, tied)):
        recorded = ad.record(ad.grad(f), first)
        np.testing.assert_allclose(recorded.jacobian(first), ad.hessian(oracle)(first),
                                   atol=1e-12)
        with pytest.raises(ad.BranchError, match="numpy.linalg.eigh"):
            recorded.jacobian(then)
    again = ad.function(ad.grad(f))
    for x in (apart, tied, apart):
        np.testing.assert_allclose(again.jacobian(x), ad.hessian(oracle)(x), atol=1e-12)


def test_eig_at_a_defective_matrix_is_nan():
    """tr(A^2) = sum of eig's eigenvalues squared has the gradient 2 A^T
    everywhere, but at a Jordan block the eigenvectors do not span, and
    eig's rules cannot give it: NaN, not a wrong number."""
    def f(x):
        return np.sum(la.eigvals(x) ** 2)
    jordan = np.array([[1.0, 1.0], [0.0, 1.0]])
    assert np.isnan(ad.grad(f)(jordan)).all()
    assert np.isnan(ad.jvp(f)(jordan, np.eye(2))[1])
    assert np.isnan(ad.grad(lambda x: np.sum(la.eig(x)[1] ** 2))(jordan)).all()
    batch = np.stack([jordan, np.array([[1.0, 1.0], [0.0, 2.0]])])
    g = ad.grad(lambda x: np.sum(la.eigvals(x) ** 2))(batch)
    assert np.isnan(g[0]).all()
    np.testing.assert_allclose(g[1], 2 * batch[1].T, atol=1e-12)
    # diagonalizable with a repeated eigenvalue: exact
    s = np.random.default_rng(0).normal(size=(3, 3))
    x = s @ np.diag([1.0, 1.0, 2.0]) @ la.inv(s)
    np.testing.assert_allclose(ad.grad(f)(x), 2 * x.T, rtol=1e-10, atol=1e-10)
    # ... but no second derivative: the eigenvalues of a perturbation may not be real
    assert np.isnan(ad.hessian(f)(np.eye(2))).all()


def test_determinants_and_norms_where_eigenvalues_coincide():
    # log det's Hessian: -tr(X^-1 E X^-1 E), at I -delta_il delta_jk
    expected = -np.einsum("il,jk->ijkl", np.eye(3), np.eye(3))
    np.testing.assert_allclose(ad.hessian(lambda x: la.slogdet(x)[1])(np.eye(3)), expected,
                               atol=1e-14)
    # the nuclear norm at a rank deficient matrix and the 2-norm at tied
    # singular values have no gradient: the ties' even split (the least
    # subgradient: sum u_i v_i^T over the nonzero singular values)
    x = _with_singular_values(3, 3, [2.0, 1.0, 0.0])
    u, s, vt = la.svd(x)
    np.testing.assert_allclose(ad.grad(lambda a: la.norm(a, "nuc"))(x),
                               u[:, :2] @ vt[:2], atol=1e-12)
    y = _with_singular_values(3, 3, [2.0, 2.0, 1.0])
    u, s, vt = la.svd(y)
    np.testing.assert_allclose(ad.grad(lambda a: la.norm(a, 2))(y),
                               u[:, :2] @ vt[:2] / 2, atol=1e-12)


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
