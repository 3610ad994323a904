"""scipy.linalg on traced Arrays (pyautodiff.scipy_linalg and the drop-in
pyautodiff.autograd.scipy.linalg): values against scipy; gradients
against central differences of scipy's own functions (which see every
entry of the operands, read or not) and HIPS autograd's where it has
them; tangents; Hessians against autograd's or central differences of
our gradient; third order through nesting; and the errors."""
import zlib

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import scipy_linalg as ours

sl = pytest.importorskip("scipy.linalg")

N = 3


def _spd(a):
    return a @ a.T + N * np.eye(N)


def _banded_matrix(ab, shift):
    """ab with its main diagonal (row `shift`) kept away from zero."""
    ab = ab.copy()
    ab[shift] += 4.0
    return ab


# name: (f(module, *operands), operands' shapes, how each operand is
# conditioned, whether HIPS autograd differentiates it)
CASES = {
    "solve_triangular upper": (lambda m, a, b: m.solve_triangular(a, b), [(N, N), (N,)],
                               "tri", True),
    "solve_triangular lower T": (lambda m, a, b: m.solve_triangular(a, b, trans="T", lower=True),
                                 [(N, N), (N, 2)], "tri", True),
    "solve_triangular trans=1": (lambda m, a, b: m.solve_triangular(a, b, trans=1), [(N, N), (N, 2)],
                                 "tri", True),
    "solve_triangular unit": (lambda m, a, b: m.solve_triangular(a, b, lower=True,
                                                                 unit_diagonal=True),
                              [(N, N), (N, 2)], "tri", False),
    "solve_triangular batched": (lambda m, a, b: m.solve_triangular(a, b, lower=True),
                                 [(2, N, N), (N, 2)], "tri", False),
    "solve_triangular unit C": (lambda m, a, b: m.solve_triangular(a, b, trans="C",
                                                                   unit_diagonal=True),
                                [(N, N), (N,)], "tri", False),
    "cho_factor": (lambda m, a: m.cho_factor(a)[0], [(N, N)], "spd", False),
    "cho_factor lower": (lambda m, a: m.cho_factor(a, lower=True)[0], [(N, N)], "spd", False),
    "cho_solve": (lambda m, a, b: m.cho_solve(m.cho_factor(a), b), [(N, N), (N, 2)], "spd", False),
    "cho_solve lower": (lambda m, a, b: m.cho_solve(m.cho_factor(a, lower=True), b),
                        [(N, N), (N,)], "spd", False),
    "cholesky": (lambda m, a: m.cholesky(a), [(N, N)], "spd", False),
    "cholesky lower": (lambda m, a: m.cholesky(a, lower=True), [(N, N)], "spd", False),
    "sqrtm": (lambda m, a: m.sqrtm(a), [(N, N)], "spd", True),
    "solve_sylvester": (lambda m, a, b, q: m.solve_sylvester(a, b, q), [(N, N), (2, 2), (N, 2)],
                        "tri", True),
    "solve_banded (1, 1)": (lambda m, ab, b: m.solve_banded((1, 1), ab, b), [(3, 4), (4,)],
                            "band1", True),
    "solve_banded (2, 0)": (lambda m, ab, b: m.solve_banded((2, 0), ab, b), [(3, 4), (4, 2)],
                            "band0", False),
    "inv": (lambda m, a: m.inv(a), [(N, N)], "tri", False),
    "solve": (lambda m, a, b: m.solve(a, b), [(N, N), (N,)], "tri", False),
    "solve pos lower": (lambda m, a, b: m.solve(a, b, assume_a="pos", lower=True),
                        [(N, N), (N, 2)], "spd", False),
    "solve sym transposed": (lambda m, a, b: m.solve(a, b, assume_a="sym", transposed=True),
                             [(N, N), (N, 2)], "spd", False),
    "solve upper triangular": (lambda m, a, b: m.solve(a, b, assume_a="upper triangular"),
                               [(N, N), (N,)], "tri", False),
    "det": (lambda m, a: m.det(a), [(N, N)], "tri", False),
    "eigh upper": (lambda m, a: m.eigh(a, lower=False)[0] + m.eigh(a, lower=False)[1] ** 2,
                   [(N, N)], "spd", False),
    "eigvalsh": (lambda m, a: m.eigvalsh(a), [(N, N)], "spd", False),
    "svd": (lambda m, a: m.svd(a, full_matrices=False)[0] ** 2, [(N, 2)], "plain", False),
    "svdvals": (lambda m, a: m.svdvals(a), [(2, N)], "plain", False),
    "qr economic": (lambda m, a: m.qr(a, mode="economic")[1], [(N, 2)], "plain", False),
    "pinv": (lambda m, a: m.pinv(a), [(N, 2)], "plain", False),
    "norm nuc": (lambda m, a: m.norm(a, "nuc"), [(N, 2)], "plain", False),
}


def _operand(kind, a):
    square = a.ndim >= 2 and a.shape[-1] == a.shape[-2]
    if kind == "tri":
        return a + N * np.eye(a.shape[-1]) if square else a
    if kind == "spd":
        return _spd(a) + 0.1 * a if square else a
    if kind.startswith("band") and a.shape[0] == 3:
        return _banded_matrix(a, 1 if kind == "band1" else 0)
    return a


def problem(name):
    """f(p, module): the case's function of the packed operands; the point
    p; the weights of a loss."""
    fn, shapes, kind, _ = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    sizes = [int(np.prod(s)) for s in shapes]
    start = [_operand(kind, rng.normal(size=s) * 0.5) for s in shapes]
    kind = "plain"          # the conditioning is in p itself

    def f(p, m=ours):
        parts, k = [], 0
        for s, n in zip(shapes, sizes):
            parts.append(p[k:k + n].reshape(s))
            k += n
        return fn(m, *parts)
    p = np.concatenate([x.ravel() for x in start])
    w = rng.normal(size=np.shape(f(p, sl)))
    return f, p, w


def _loss(f, w, m=ours, xp=np):
    return lambda p: xp.sum(xp.sin(f(p, m)) * w)


def _central(f, p, h=1e-6):
    return np.array([(f(p + h * e) - f(p - h * e)) / (2 * h) for e in np.eye(p.size)])


@pytest.mark.parametrize("name", CASES)
def test_value_and_gradient(name):
    f, p, w = problem(name)
    with ad.Tape():
        out = f(ad.Array(p))
    assert isinstance(out, ad.Array)
    np.testing.assert_allclose(out.data, f(p, sl), rtol=1e-10, atol=1e-12)
    grad = ad.grad(_loss(f, w))(p)
    # scipy's own function, of every entry: the gradient of what it reads
    np.testing.assert_allclose(grad, _central(_loss(f, w, sl), p), rtol=1e-5, atol=1e-7)
    if CASES[name][3]:
        autograd = pytest.importorskip("autograd")
        anp = pytest.importorskip("autograd.numpy")
        aspla = pytest.importorskip("autograd.scipy.linalg")
        theirs = autograd.grad(_loss(f, w, aspla, anp))(p)
        np.testing.assert_allclose(grad, theirs, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", CASES)
def test_tangent(name):
    f, p, _ = problem(name)
    t = np.cos(np.arange(p.size))
    _, tangent = ad.jvp(f)(p, t)
    h = 1e-6
    np.testing.assert_allclose(tangent, (f(p + h * t, sl) - f(p - h * t, sl)) / (2 * h),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", CASES)
def test_hessian(name):
    f, p, w = problem(name)
    hess = ad.hessian(_loss(f, w))(p)
    if CASES[name][3]:
        autograd = pytest.importorskip("autograd")
        anp = pytest.importorskip("autograd.numpy")
        aspla = pytest.importorskip("autograd.scipy.linalg")
        try:
            theirs = autograd.hessian(_loss(f, w, aspla, anp))(p)
        except (NotImplementedError, TypeError, ValueError, AssertionError):
            theirs = None       # autograd's rule is of first order only
        if theirs is not None:
            np.testing.assert_allclose(hess, theirs, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hess, _central(ad.grad(_loss(f, w)), p, 1e-5),
                               rtol=1e-5, atol=1e-6)


THIRD = ["solve_triangular lower T", "solve_triangular unit", "cho_solve", "cho_factor lower",
         "sqrtm", "solve_sylvester", "solve_banded (1, 1)", "solve sym transposed", "eigh upper"]


@pytest.mark.parametrize("name", THIRD)
def test_third_order_through_nesting(name):
    f, p, w = problem(name)
    v = np.sin(np.arange(1, p.size + 1))
    hvp = ad.hvp(_loss(f, w))

    def quadratic(q):
        return np.sum(hvp(q, v) * v)
    third = ad.grad(quadratic)(p)
    np.testing.assert_allclose(third, _central(quadratic, p, 1e-5), rtol=1e-4, atol=1e-5)


def test_recorded_hessian():
    f, p, w = problem("cho_solve")
    rec = ad.record(_loss(f, w), p)
    np.testing.assert_allclose(rec.hessian(p), ad.hessian(_loss(f, w))(p),
                               rtol=1e-9, atol=1e-11)


# -- conventions -----------------------------------------------------------------------

@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_gradient_lives_on_the_entries_read(lower, unit):
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(N, N)) + N * np.eye(N), rng.normal(size=(N, 2))
    g = ad.grad(lambda x: np.sum(ours.solve_triangular(x, b, lower=lower,
                                                       unit_diagonal=unit) ** 2))(a)
    unread = 1 - (np.tril if lower else np.triu)(np.ones((N, N)), (-1 if lower else 1) * unit)
    assert not (g * unread).any()
    assert g[unread == 0].all()


def test_cho_factor_returns_scipys_pair():
    rng = np.random.default_rng(8)
    a = _spd(rng.normal(size=(N, N)))
    with ad.Tape():
        for lower in (False, True):
            c, low = ours.cho_factor(ad.Array(a), lower=lower)
            expected, their_low = sl.cho_factor(a, lower=lower)
            assert low is their_low is lower
            np.testing.assert_allclose(c.data, expected, rtol=1e-12, atol=1e-12)


def test_result_types_follow_scipy():
    rng = np.random.default_rng(9)
    a = _spd(rng.normal(size=(N, N)))
    with ad.Tape():
        x = ad.Array(a)
        assert isinstance(ours.qr(x, mode="r"), tuple) and len(ours.qr(x, mode="r")) == 1
        assert len(ours.svd(x)) == 3 and len(ours.eigh(x)) == 2
        assert isinstance(ours.eigh(x, eigvals_only=True), ad.Array)
        # real eigenvalues, where scipy's are complex with zero imaginary parts
        np.testing.assert_allclose(np.sort(ours.eig(x)[0].data), np.sort(sl.eig(a)[0].real),
                                   rtol=1e-10)


def test_plain_arrays_are_scipys():
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    assert ours.eig(a)[0].dtype == sl.eig(a)[0].dtype        # complex, as scipy's
    np.testing.assert_array_equal(ours.sqrtm(a), sl.sqrtm(a))
    np.testing.assert_array_equal(ours.solve_triangular(a, [1.0, 2.0]),
                                  sl.solve_triangular(a, [1.0, 2.0]))


def test_dropin_module():
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    aspla = pytest.importorskip("autograd.scipy.linalg")
    from pyautodiff.autograd import grad
    import pyautodiff.autograd.scipy.linalg as spla
    rng = np.random.default_rng(10)
    a, b = rng.normal(size=(N, N)) + N * np.eye(N), rng.normal(size=(N, N))

    def loss(m, xp):
        return lambda x: xp.sum(m.sqrtm(x @ x.T + m.solve_triangular(x, b)) ** 2)
    np.testing.assert_allclose(grad(loss(spla, np))(a), autograd.grad(loss(aspla, anp))(a),
                               rtol=1e-8, atol=1e-10)
    # the rest of scipy.linalg: scipy's own on plain arrays, refused on traced ones
    np.testing.assert_array_equal(spla.lu(a)[2], sl.lu(a)[2])
    with pytest.raises(NotImplementedError, match="scipy.linalg.lu"):
        grad(lambda x: np.sum(spla.lu(x)[2]))(a)
    with pytest.raises(AttributeError):
        spla.no_such_function


# -- errors ----------------------------------------------------------------------------

@pytest.mark.parametrize("call,error,match", [
    (lambda x: ours.solve_triangular(x, np.ones(N), trans="X"), ValueError, "trans"),
    (lambda x: ours.solve_triangular(x[:2], np.ones(2)), ValueError, "square"),
    (lambda x: ours.sqrtm(-x @ x.T - np.eye(N)), TypeError, "complex"),
    (lambda x: ours.eigh(x, np.eye(N)), NotImplementedError, "b="),
    (lambda x: ours.eigh(x, subset_by_index=[0, 1]), NotImplementedError, "subset_by_index"),
    (lambda x: ours.qr(x, pivoting=True), NotImplementedError, "pivoting"),
    (lambda x: ours.qr(x, mode="raw"), NotImplementedError, "mode"),
    (lambda x: ours.solve(x, np.ones(N), assume_a="banded"), NotImplementedError, "assume_a"),
    (lambda x: ours.pinv(x, return_rank=True), NotImplementedError, "return_rank"),
    (lambda x: ours.solve_banded((1, 0), x, np.ones(N)), ValueError, "l\\+u\\+1"),
    (lambda x: ours.solve_sylvester(x, x, np.ones((2, 2))), ValueError, "solve_sylvester"),
])
def test_errors_name_the_function(call, error, match):
    rng = np.random.default_rng(11)
    with ad.Tape():
        with pytest.raises(error, match=match) as info:
            call(ad.Array(rng.normal(size=(N, N)) + N * np.eye(N)))
    assert "scipy.linalg." in str(info.value)


def test_scipys_own_functions_refuse_arrays():
    """scipy's functions do not dispatch to Arrays: they fail on them,
    never a silent number."""
    a = np.eye(N) * 2.0
    for fn in (lambda x: sl.solve_triangular(x, np.ones(N)), sl.sqrtm, sl.cho_factor):
        with pytest.raises((ValueError, TypeError)):
            ad.grad(lambda x: np.sum(fn(x)))(a)


def test_dropin_hands_on_scipys_classes_and_signatures():
    """The drop-in's other names of scipy.linalg: its exception classes are
    scipy's own (an except clause catches scipy's errors), its functions
    take scipy's arguments."""
    import inspect

    import pyautodiff.autograd.scipy.linalg as spla
    assert spla.LinAlgError is sl.LinAlgError and spla.LinAlgWarning is sl.LinAlgWarning
    with pytest.raises(spla.LinAlgError):
        sl.cholesky(-np.eye(2))
    assert inspect.signature(spla.expm) == inspect.signature(sl.expm)
    np.testing.assert_allclose(spla.expm(np.eye(2)), sl.expm(np.eye(2)))


def test_eigenvalue_and_singular_value_functions_where_they_coincide():
    """scipy's eigvalsh, eigh, svdvals and eigvals share numpy.linalg's
    rules: exact second derivatives where eigenvalues (singular values)
    coincide, NaN at a defective matrix."""
    x = np.diag([2.0, 2.0, 5.0])

    def upper(a):
        return np.triu(a) + np.triu(a, 1).T
    for f, oracle in (
            (lambda a: np.sum(ours.eigvalsh(a, lower=False) ** 3),
             lambda a: np.trace(upper(a) @ upper(a) @ upper(a))),
            (lambda a: np.sum(ours.eigh(a, eigvals_only=True) ** 2),
             lambda a: np.sum((np.tril(a) + np.tril(a, -1).T) ** 2)),
            (lambda a: np.sum(ours.svdvals(a) ** 4), lambda a: np.sum((a.T @ a) ** 2)),
            (lambda a: np.sum(ours.svd(a, compute_uv=False) ** 2), lambda a: np.sum(a ** 2))):
        expected = ad.hessian(oracle)(x)
        np.testing.assert_allclose(ad.hessian(f)(x), expected, atol=1e-12)
        np.testing.assert_allclose(ad.jacobian(ad.grad(f))(x), expected, atol=1e-12)
    jordan = np.array([[1.0, 1.0], [0.0, 1.0]])
    assert np.isnan(ad.grad(lambda a: np.sum(ours.eigvals(a) ** 2))(jordan)).all()
