"""Sparsity patterns through products with a constant that has zeros
(csrc/sparsity.c): matmul (@, np.dot, np.matmul, vdot, 1-D, 2-D and
stacked, the constant on either side), the products composed of it
(einsum, tensordot, inner, dot of 3-D arrays) and the elementwise ones
(outer, kron, vecdot, x * c, where on a constant condition), and
scipy.signal's convolutions with a constant filter (an extern op's own
pattern).  A zero of a constant is no dependence, so the pattern is the
exact structure: each is checked against one built by NumPy or scipy
alone (the linear map applied to unit vectors with the constant's
magnitudes, where nothing cancels),
against the nonzeros of the dense derivatives at random points, with the
sparse values (eager and recorded, at another point) equal to the dense
ones.  The zeros of a variable's current values never drop an entry."""
import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import constrained, sparse
from pyautodiff.array import _constant

pytest.importorskip("scipy.sparse")
pytest.importorskip("scipy.signal")

RNG = np.random.default_rng(20261207)


def sparse_constant(*shape, density=0.4):
    """Random normal numbers, most of them exact zeros (and a zero row)."""
    c = RNG.normal(size=shape) * (RNG.random(shape) < density)
    if c.ndim >= 2:
        c[..., 0, :] = 0.0
    return c


def _close(got, want):
    scale = max(1.0, np.abs(want).max(initial=0.0))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * scale)


def structure_of_linear(f, constants, n):
    """The exact Jacobian structure of f(x, *constants), linear in x, from
    NumPy alone: column j is f at the j-th unit vector with the constants'
    magnitudes (all terms nonnegative: no sum cancels)."""
    mags = [np.abs(c) for c in constants]
    cols = [np.reshape(f(np.eye(n)[j], *mags), -1) != 0 for j in range(n)]
    return np.stack(cols, axis=1)


def dense_jacobian(f, x):
    return np.asarray(ad.jacobian(f)(x), dtype=np.float64).reshape(-1, np.size(x))


def dense_hessian(f, x):
    return np.asarray(ad.hessian(f)(x), dtype=np.float64).reshape(np.size(x), -1)


def check(kind, f, x, want):
    """f's pattern (eager and recorded) is want, holds the dense nonzeros
    at x and equals their union over random points; the sparse values,
    eager at x and recorded at another point, are the dense ones."""
    pattern, dense, values = {
        "jacobian": (ad.jacobian_sparsity, dense_jacobian, ad.sparse_jacobian),
        "hessian": (ad.hessian_sparsity, dense_hessian, ad.sparse_hessian)}[kind]
    want = np.asarray(want, bool)
    P = pattern(f)(x).toarray()
    np.testing.assert_array_equal(P, want)
    seen = np.zeros_like(want)
    for y in [x] + [RNG.normal(size=np.shape(x)) for _ in range(3)]:
        D = dense(f, y)
        assert not (D != 0)[~P].any(), "a dense nonzero outside the pattern"
        seen |= D != 0
    np.testing.assert_array_equal(seen, want)
    _close(values(f)(x).toarray(), dense(f, x))
    F = ad.record(f, x)
    np.testing.assert_array_equal(getattr(F, kind + "_sparsity")().toarray(), want)
    y = RNG.normal(size=np.shape(x))
    _close(getattr(F, "sparse_" + kind)(y).toarray(), dense(f, y))
    return F


def colours(F, kind):
    return sparse.recorded_plan(F, kind, "test").ncolors


# -- the issue's own example ------------------------------------------------------------

def test_x_at_a_diagonal_is_diagonal_and_one_colour():
    D = np.diag([1.0, 2.0, 3.0])
    P = ad.jacobian_sparsity(lambda x: x @ D)(np.ones(3)).toarray()
    np.testing.assert_array_equal(P, np.eye(3, dtype=bool))
    for f in (lambda x: x @ D, lambda x: D @ x, lambda x: np.dot(x, D),
              lambda x: np.einsum("i,ij->j", x, D)):
        F = check("jacobian", f, np.arange(1.0, 4.0), np.eye(3, dtype=bool))
        assert colours(F, "jacobian") == 1
    # a large one: the pattern comes through the constant's nonzeros only
    n = 3000
    D = np.diag(np.arange(1.0, n + 1))
    F = ad.record(lambda x: x @ D, np.ones(n))
    P = F.jacobian_sparsity()
    assert P.nnz == n and colours(F, "jacobian") == 1
    np.testing.assert_array_equal(P.indices, np.arange(n))
    _close(F.sparse_jacobian(np.ones(n)).diagonal(), np.diag(D))


# -- every product form, the constant on either side ---------------------------------------

def _cases():
    """(name, f(x, *constants) in NumPy's calls, x's size, constants): f
    linear in x, reshaping x as it needs."""
    c = sparse_constant
    v = lambda n: c(n, density=0.5)     # noqa: E731  a vector with zeros
    return [
        ("vector @ matrix", lambda x, C: x @ C, 4, [c(4, 5)]),
        ("matrix @ vector", lambda x, C: C @ x, 4, [c(5, 4)]),
        ("vector @ vector", lambda x, c_: x @ c_, 6, [v(6)]),
        ("vector @ vector, constant first", lambda x, c_: c_ @ x, 6, [v(6)]),
        ("matrix @ constant", lambda x, C: x.reshape(3, 4) @ C, 12, [c(4, 5)]),
        ("constant @ matrix", lambda x, C: C @ x.reshape(4, 3), 12, [c(5, 4)]),
        ("stacked @ constant", lambda x, C: x.reshape(2, 3, 4) @ C, 24, [c(4, 2)]),
        ("constant @ stacked", lambda x, C: C @ x.reshape(2, 4, 3), 24, [c(3, 4)]),
        ("stacked constant @ matrix", lambda x, C: C @ x.reshape(4, 3), 12,
         [c(2, 3, 4)]),
        ("matrix @ stacked constant", lambda x, C: x.reshape(3, 4) @ C, 12,
         [c(2, 4, 3)]),
        ("both stacked, broadcast", lambda x, C: x.reshape(2, 1, 3, 4) @ C, 24,
         [c(3, 4, 2)]),
        ("stacked constant @ vector", lambda x, C: C @ x, 4, [c(2, 3, 4)]),
        ("vector @ stacked constant", lambda x, C: x @ C, 4, [c(2, 4, 3)]),
        ("np.matmul", lambda x, C: np.matmul(C, x.reshape(4, 2)), 8, [c(3, 4)]),
        ("np.dot matrix", lambda x, C: np.dot(x.reshape(3, 4), C), 12, [c(4, 3)]),
        ("np.dot constant first", lambda x, C: np.dot(C, x), 4, [c(3, 4)]),
        ("np.dot 3-D", lambda x, C: np.dot(x.reshape(2, 3, 4), C), 24, [c(4, 3)]),
        ("np.dot 3-D constant", lambda x, C: np.dot(C, x.reshape(4, 2)), 8,
         [c(2, 3, 4)]),
        ("np.vdot", lambda x, C: np.vdot(C, x.reshape(2, 3)), 6, [c(2, 3)]),
        ("einsum ij,jk", lambda x, C: np.einsum("ij,jk->ik", x.reshape(3, 4), C), 12,
         [c(4, 5)]),
        ("einsum constant first, transposed",
         lambda x, C: np.einsum("ij,kj->ik", C, x.reshape(3, 4)), 12, [c(5, 4)]),
        ("einsum batched", lambda x, C: np.einsum("bij,bjk->bik", x.reshape(2, 3, 4), C),
         24, [c(2, 4, 3)]),
        ("einsum diagonal of the constant",
         lambda x, C: np.einsum("ij,jj->ij", x.reshape(3, 4), C), 12, [c(4, 4)]),
        ("einsum three operands",
         lambda x, C, E: np.einsum("ij,jk,kl->il", C, x.reshape(4, 3), E), 12,
         [c(3, 4), c(3, 2)]),
        ("tensordot", lambda x, C: np.tensordot(x.reshape(2, 3, 4), C,
                                                axes=([1, 2], [0, 1])), 24, [c(3, 4, 2)]),
        ("tensordot constant first", lambda x, C: np.tensordot(C, x.reshape(4, 3), 1),
         12, [c(2, 4)]),
        ("inner", lambda x, C: np.inner(x.reshape(3, 4), C), 12, [c(5, 4)]),
        ("inner constant first", lambda x, C: np.inner(C, x), 4, [c(3, 4)]),
        ("outer", lambda x, c_: np.outer(x, c_), 4, [v(5)]),
        ("outer constant first", lambda x, c_: np.outer(c_, x), 4, [v(5)]),
        ("kron", lambda x, C: np.kron(x.reshape(2, 2), C), 4, [c(3, 3)]),
        ("kron constant first", lambda x, C: np.kron(C, x.reshape(2, 2)), 4, [c(3, 2)]),
        ("vecdot", lambda x, C: np.linalg.vecdot(x.reshape(3, 4), C), 12, [c(3, 4)]),
        ("times a broadcast constant", lambda x, c_: x.reshape(3, 4) * c_, 12, [v(4)]),
        ("a constant times", lambda x, C: C * x, 4, [c(3, 4)]),
    ]


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_product_with_a_constant_has_the_exact_jacobian_structure(case):
    _, f, n, constants = case
    want = structure_of_linear(f, constants, n)
    assert want.any() and not want.all(), "the constant has no zeros to show"

    def g(x):
        return f(x, *constants)
    F = check("jacobian", g, RNG.normal(size=n), want)
    # no more colours than the densest row or column needs, in the one
    # sweep direction the plan took
    plan = sparse.recorded_plan(F, "jacobian", "test")
    assert plan.ncolors <= max(want.sum(axis=1).max(), 1) \
        if not plan.by_rows else plan.ncolors <= max(want.sum(axis=0).max(), 1)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_product_with_a_constant_in_a_hessian(case):
    # sum(sin(L x)) for the linear map L: H = L^T diag(-sin) L, whose
    # structure is that of |L|^T |L| (nothing cancels at random points)
    _, f, n, constants = case
    L = structure_of_linear(f, constants, n).astype(np.int64)
    want = (L.T @ L) != 0

    def g(x):
        return np.sum(np.sin(f(x, *constants)))
    check("hessian", g, RNG.normal(size=n), want)


def test_sum_of_squares_through_a_sparse_matrix_gives_ata():
    n = 12
    A = sparse_constant(9, n, density=0.25)
    A[:, 0] = 0.0                           # x0 in nothing
    b = RNG.normal(size=9)
    f = lambda x: np.sum((A @ x - b) ** 2)  # noqa: E731
    absA = (A != 0).astype(np.int64)
    want = (absA.T @ absA) != 0
    assert not want.all()
    F = check("hessian", f, RNG.normal(size=n), want)
    _close(F.sparse_hessian(np.zeros(n)).toarray(), 2 * A.T @ A)
    # a quadratic form x M x by a constant M: M + M^T
    M = sparse_constant(n, n, density=0.2)
    check("hessian", lambda x: x @ M @ x, RNG.normal(size=n), (M + M.T) != 0)
    check("hessian", lambda x: np.einsum("i,ij,j->", x, M, x), RNG.normal(size=n),
          (M + M.T) != 0)


def test_a_diagonal_hessian_through_a_diagonal_matrix_is_one_colour():
    D = np.diag(np.arange(1.0, 9.0))
    F = check("hessian", lambda x: np.sum(np.exp(D @ x)), np.zeros(8) + 0.1,
              np.eye(8, dtype=bool))
    assert colours(F, "hessian") == 1


def test_elementwise_constants_zeros():
    x = RNG.normal(size=5)
    c = np.array([1.0, 0.0, -2.0, 0.0, 3.0])
    check("jacobian", lambda x: x * c, x, np.diag(c != 0))
    check("jacobian", lambda x: x * 0.0, x, np.zeros((5, 5), bool))
    check("jacobian", lambda x: x ** 0.0, x, np.zeros((5, 5), bool))
    check("jacobian", lambda x: np.abs(x) ** np.array([2.0, 0.0, 1.0, 0.0, 3.0]),
          x, np.diag([1, 0, 1, 0, 1]))
    # where on a constant condition: the side taken only
    cond = np.array([True, False, True, True, False])
    want = np.diag(cond) | np.fliplr(np.diag(~cond))
    check("jacobian", lambda x: np.where(cond, x, 2.0 * x[::-1]), x, want)
    # a constant built from constants: its zeros count too
    check("jacobian", lambda x: x * (np.ones(5) @ np.diag(c)), x, np.diag(c != 0))


# -- convolutions with a constant filter (an extern op's own pattern) -------------------------

def _conv_cases():
    import scipy.signal as ss
    from pyautodiff.scipy_signal import convolve, correlate
    k = np.array([1.0, 0.0, 0.0, -2.0, 0.0])        # a gap and a zero end
    K = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    out = []
    for mode in ("full", "valid", "same"):
        out += [
            (f"convolve {mode}", lambda x, m=mode: convolve(x, k, mode=m),
             lambda x, m=mode: ss.convolve(x, np.abs(k), mode=m), 9),
            (f"convolve constant first {mode}", lambda x, m=mode: convolve(k, x[:4], mode=m),
             lambda x, m=mode: ss.convolve(np.abs(k), x[:4], mode=m), 9),
            (f"correlate {mode}", lambda x, m=mode: correlate(x, k, mode=m),
             lambda x, m=mode: ss.correlate(x, np.abs(k), mode=m), 9),
            (f"convolve 2-D {mode}",
             lambda x, m=mode: convolve(x.reshape(3, 4), K, mode=m),
             lambda x, m=mode: ss.convolve(x.reshape(3, 4), np.abs(K), mode=m), 12),
        ]
    return out


CONV_CASES = _conv_cases()


@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_convolution_with_a_constant_filter(case):
    # scipy.signal's own convolution (|filter|, unit vectors) the oracle
    _, ours, theirs, n = case
    want = np.stack([np.reshape(theirs(np.eye(n)[j]), -1) != 0 for j in range(n)], axis=1)
    assert want.any() and not want.all()
    x = RNG.normal(size=n)
    check("jacobian", ours, x, want)
    L = want.astype(np.int64)
    check("hessian", lambda x: np.sum(np.sin(ours(x))), x, (L.T @ L) != 0)


def test_convolution_filter_of_ones_and_zeros_one_colour():
    from pyautodiff.scipy_signal import convolve
    k = np.array([0.0, 0.0, 3.0, 0.0])      # a shift: one colour, not four
    F = check("jacobian", lambda x: convolve(x, k, mode="same"), RNG.normal(size=12),
              np.eye(12, k=-1, dtype=bool))
    assert colours(F, "jacobian") == 1


# -- a variable's zeros never drop an entry --------------------------------------------------

def test_zeros_of_a_variable_stay_in_the_pattern():
    C = RNG.normal(size=(4, 3))             # dense
    x = np.array([0.0, 1.0, 0.0, 0.0])
    want = np.ones((3, 4), bool)
    np.testing.assert_array_equal(ad.jacobian_sparsity(lambda x: x @ C)(x).toarray(),
                                  want)
    # a product of two variables, one all zeros where the pattern is asked
    f = lambda x: x[:2] @ x[2:].reshape(2, 2)   # noqa: E731
    P = ad.jacobian_sparsity(f)(np.zeros(6)).toarray()
    np.testing.assert_array_equal(P, [[1, 1, 1, 0, 1, 0], [1, 1, 0, 1, 0, 1]])
    H = ad.hessian_sparsity(lambda x: np.sum(f(x)))(np.zeros(6)).toarray()
    np.testing.assert_array_equal(H, [[0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1],
                                      [1, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0],
                                      [0, 1, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0]])


def test_a_mask_a_replay_recomputes_is_no_constant():
    # x > 0 takes no derivative, but its zeros move with x: both the mask's
    # product and the where keep every element, recorded at a point where
    # the mask is all zeros and replayed where it is not
    x0 = -np.ones(4)
    x1 = np.array([1.0, -1.0, 2.0, 3.0])
    for f in (lambda x: x * (x > 0), lambda x: np.where(x > 0, x, 0.0),
              lambda x: (x > 0) @ np.diag(x)):
        F = ad.record(f, x0)
        np.testing.assert_array_equal(F.jacobian_sparsity().toarray(), np.eye(4, dtype=bool))
        _close(F.sparse_jacobian(x1).toarray(), dense_jacobian(f, x1))
    # a mask computed from a constant (on the tape) is one
    cmask = np.array([1.0, -1.0, 1.0, -1.0])
    F = ad.record(lambda x: x * (_constant(cmask) > 0), x0)
    np.testing.assert_array_equal(F.jacobian_sparsity().toarray(),
                                  np.diag(cmask > 0))


def test_a_recordings_other_argument_is_no_constant():
    # A is an argument of the recording: a replay may give it other values,
    # so its zeros at the recording do not drop entries
    A0 = np.diag([1.0, 2.0, 3.0])
    A1 = RNG.normal(size=(3, 3))
    F = ad.record(lambda x, A: A @ x, np.ones(3), A0)
    np.testing.assert_array_equal(F.jacobian_sparsity().toarray(), np.ones((3, 3), bool))
    _close(F.sparse_jacobian(np.ones(3), A1).toarray(), A1)
    # the functional form's other argument is a constant there
    P = ad.jacobian_sparsity(lambda x, A: A @ x)(np.ones(3), A0).toarray()
    np.testing.assert_array_equal(P, np.eye(3, dtype=bool))


# -- IPOPT gets the exact structures -------------------------------------------------------------

def test_ipopt_gets_the_constants_structure(monkeypatch):
    from pyautodiff import ipopt_library
    try:
        ipopt_library.load()
    except (ImportError, OSError):
        pytest.skip("no IPOPT library is installed")
    problems = []
    init = constrained.Problem.__init__

    def keep(self, *args, **kwargs):
        init(self, *args, **kwargs)
        problems.append(self)
    monkeypatch.setattr(constrained.Problem, "__init__", keep)
    n = 10
    A = np.eye(n) + sparse_constant(n, n, density=0.15)
    b = RNG.normal(size=n)
    C = sparse_constant(3, n, density=0.3)
    # each row a nonzero of its own, so the constraints have full rank
    # whatever the draws before (the tests share RNG: an order of their
    # own, as under pytest-xdist, left a row of zeros, infeasible)
    C[np.arange(3), np.arange(3)] = 1.0
    d = RNG.normal(size=3)
    res = ad.minimize(lambda x: np.sum((A @ x - b) ** 2), np.zeros(n), method="ipopt",
                      constraints={"type": "eq", "fun": lambda x: C @ x - d})
    assert res.success, res.message
    pb, = problems
    rows, cols = np.nonzero(C)
    np.testing.assert_array_equal(pb.jac_pattern.rows, rows)
    np.testing.assert_array_equal(pb.jac_pattern.cols, cols)
    absA = (A != 0).astype(np.int64)
    rows, cols = np.nonzero(np.tril((absA.T @ absA) != 0))
    np.testing.assert_array_equal(pb.hess_pattern.rows, rows)
    np.testing.assert_array_equal(pb.hess_pattern.cols, cols)
    # the KKT system solved by NumPy
    K = np.block([[2 * A.T @ A, C.T], [C, np.zeros((3, 3))]])
    want = np.linalg.solve(K, np.concatenate([2 * A.T @ b, d]))[:n]
    np.testing.assert_allclose(res.x, want, atol=1e-7)
