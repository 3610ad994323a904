"""Sparsity patterns of the library's own extern ops (extern_patterns.py):
scipy.special's elementwise functions, cumsum, scipy.signal's convolve
and correlate, numpy.linalg's stacked ops; and of prod, once an extern op
and now a C reduction (sparsity.c) with the same pattern.  Each pattern is
checked against one written out here by index (or, for the n-dimensional
convolutions and the factorizations, against the nonzeros of the dense
derivatives at several random points), against the dense derivatives'
nonzeros, with the sparse values equal to the dense ones and the colours
the structure allows."""
import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import scipy_special as ps, sparse
from pyautodiff.scipy_signal import convolve, correlate

special = pytest.importorskip("scipy.special")
pytest.importorskip("scipy.sparse")

RNG = np.random.default_rng(20261202)


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _dense_jacobian(f, x):
    J = np.asarray(ad.jacobian(f)(x), dtype=np.float64)
    return J.reshape(-1, np.size(x))


def _dense_hessian(f, x):
    return np.asarray(ad.hessian(f)(x), dtype=np.float64).reshape(np.size(x), -1)


def _nonzeros(dense_of, f, x, points=3, scale=0.1):
    """Where the dense derivative is nonzero at x or a few points near it."""
    out = dense_of(f, x) != 0
    for _ in range(points - 1):
        out |= dense_of(f, x + scale * RNG.normal(size=np.shape(x))) != 0
    return out


def _check(kind, f, x, want):
    """f's Jacobian or Hessian pattern holds every nonzero of the dense
    matrix and equals want (by default the nonzeros at random points); the
    sparse values are the dense ones.  -> the pattern (dense bools)."""
    pattern, dense, values = {
        "jacobian": (ad.jacobian_sparsity, _dense_jacobian, ad.sparse_jacobian),
        "hessian": (ad.hessian_sparsity, _dense_hessian, ad.sparse_hessian)}[kind]
    P = pattern(f)(x).toarray()
    D = dense(f, x)
    assert P.shape == D.shape
    assert not (D != 0)[~P].any(), "a nonzero outside the pattern"
    if want is None:
        want = _nonzeros(dense, f, x)
    np.testing.assert_array_equal(P, np.asarray(want, bool))
    _close(values(f)(x).toarray(), D)
    return P


def check_jacobian(f, x, want=None):
    return _check("jacobian", f, x, want)


def check_hessian(f, x, want=None):
    return _check("hessian", f, x, want)


def colours(f, x, kind):
    F = ad.record(f, x)
    return sparse.recorded_plan(F, kind, "test").ncolors


# -- scipy.special --------------------------------------------------------------------

UNARY = ["gammaln", "gamma", "psi", "erf", "erfc", "ndtr", "log_ndtr", "j0", "i1",
         "rgamma"]


@pytest.mark.parametrize("name", UNARY)
def test_special_unary_diagonal(name):
    fn = getattr(special, name)
    x = RNG.uniform(1.2, 2.5, size=7)
    check_jacobian(lambda x: fn(x), x, np.eye(7))
    f = lambda x: np.sum(fn(x))     # noqa: E731
    check_hessian(f, x, np.eye(7))
    assert colours(lambda x: fn(x), x, "jacobian") == 1
    assert colours(f, x, "hessian") == 1


def test_special_matrix_shaped_and_composed():
    # gammaln of a (3, 4) slice-and-reshape of x, then a sum along one
    # axis: each row of the result on its row of x
    x = RNG.uniform(0.5, 3.0, size=12)

    def f(x):
        return np.sum(special.gammaln(x.reshape(3, 4)), axis=1)
    want = np.kron(np.eye(3), np.ones((1, 4)))
    check_jacobian(f, x, want)
    g = lambda x: np.sum(special.erf(x.reshape(3, 4)) ** 2)    # noqa: E731
    check_hessian(g, x, np.eye(12))


def test_special_broadcast_column_row():
    # beta(a, b) of a (3, 1) and b (1, 4): element (i, j) on a_i and b_j
    x = RNG.uniform(0.8, 2.0, size=7)

    def f(x):
        return special.beta(x[:3].reshape(3, 1), x[3:].reshape(1, 4))
    want = np.zeros((12, 7), bool)
    for i in range(3):
        for j in range(4):
            want[4 * i + j, [i, 3 + j]] = True
    check_jacobian(f, x, want)
    h = np.zeros((7, 7), bool)
    h[:3, 3:] = h[3:, :3] = True
    h[np.arange(7), np.arange(7)] = True
    check_hessian(lambda x: np.sum(f(x)), x, h)


def test_special_broadcast_scalar():
    # betaln of a scalar and a vector: every element on the scalar
    x = RNG.uniform(0.8, 2.0, size=5)

    def f(x):
        return special.betaln(x[0], x[1:])
    want = np.zeros((4, 5), bool)
    want[:, 0] = True
    want[np.arange(4), 1 + np.arange(4)] = True
    check_jacobian(f, x, want)
    h = np.eye(5, dtype=bool)
    h[0, :] = h[:, 0] = True
    check_hessian(lambda x: np.sum(f(x)), x, h)


def test_special_constant_order_broadcast():
    # polygamma (scipy's is no ufunc: ours) of constant orders (3, 1) against x (4,): output (i, j) on x_j
    n = np.array([[0], [1], [2]])
    x = RNG.uniform(1.0, 2.0, size=4)
    want = np.tile(np.eye(4, dtype=bool), (3, 1))
    check_jacobian(lambda x: ps.polygamma(n, x), x, want)
    check_hessian(lambda x: np.sum(ps.polygamma(n, x)), x, np.eye(4))
    # gammainc in x with a constant a, and jv of a constant order
    check_jacobian(lambda x: special.gammainc(2.5, x), x, np.eye(4))
    check_jacobian(lambda x: special.jv(np.array([[0.5], [1.5]]), x), x,
                   np.tile(np.eye(4, dtype=bool), (2, 1)))


def test_special_large_diagonal_hessian():
    # the brief's example: n entries and one colour, not n * n
    n = 5000
    x = RNG.uniform(0.5, 3.0, size=n)
    f = lambda x: np.sum(special.gammaln(x))    # noqa: E731
    P = ad.hessian_sparsity(f)(x)
    assert P.nnz == n and (P.diagonal()).all()
    H = ad.sparse_hessian(f)(x)
    _close(H.diagonal(), special.polygamma(1, x))
    assert colours(f, x, "hessian") == 1


def test_special_through_record():
    x = RNG.uniform(1.0, 2.0, size=6)
    f = lambda x: np.sum(special.gammaln(x) * x[::-1])    # noqa: E731
    F = ad.record(f, x)
    want = np.eye(6, dtype=bool) | np.eye(6, dtype=bool)[::-1]
    np.testing.assert_array_equal(F.hessian_sparsity().toarray(), want)
    check_hessian(f, x, want)


# -- prod -----------------------------------------------------------------------------

def _group_pattern(shape, axes):
    """The reduction along axes, by index: output (of the kept indices) on
    every input element with those indices."""
    idx = list(np.ndindex(*shape))
    kept = [tuple(k for d, k in enumerate(i) if d not in axes) for i in idx]
    outs = sorted(set(kept))
    want = np.zeros((len(outs), len(idx)), bool)
    for c, k in enumerate(kept):
        want[outs.index(k), c] = True
    return want


PROD_CASES = [((3, 4), None), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1),
              ((2, 3, 2), (0, 2)), ((2, 3, 2), 1), ((2, 3, 2), (1, 2)), ((5,), 0)]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape, axis", PROD_CASES)
def test_prod_pattern(shape, axis, keepdims):
    size = int(np.prod(shape))
    x = RNG.uniform(0.5, 1.5, size=size)
    nd = len(shape)
    axes = tuple(range(nd)) if axis is None else \
        tuple(a % nd for a in np.atleast_1d(axis))
    want = _group_pattern(shape, axes)

    def f(x):
        return np.prod(x.reshape(shape), axis=axis, keepdims=keepdims)
    P = check_jacobian(f, x, want)
    # each element of x in one group: the rows need one colour
    assert colours(f, x, "jacobian") == 1
    # second order: the pairs of each group (each output's dependencies
    # all taken to interact; the diagonal is structurally zero for prod
    # itself, nonzero for its square)
    pairs = (want.T.astype(int) @ want.astype(int)) > 0
    g = lambda x: np.sum(f(x) ** 2)      # noqa: E731
    check_hessian(g, x, pairs)
    Hp = ad.hessian_sparsity(lambda x: np.sum(f(x)))(x).toarray()
    np.testing.assert_array_equal(Hp, pairs)
    assert not (_dense_hessian(lambda x: np.sum(f(x)), x) != 0)[~Hp].any()
    assert P.sum() == size


def test_prod_method_and_ufunc_reduce():
    x = RNG.uniform(0.5, 1.5, size=12)
    want = _group_pattern((3, 4), (0,))
    check_jacobian(lambda x: x.reshape(3, 4).prod(axis=0), x, want)
    check_jacobian(lambda x: np.multiply.reduce(x.reshape(3, 4), axis=0), x, want)
    check_jacobian(lambda x: np.prod(x.reshape(3, 4), axis=0, keepdims=True), x, want)


def test_prod_with_zero_element():
    # structural: a zero element keeps every entry (the value 0 there)
    x = np.array([1.0, 0.0, 2.0, 3.0, 0.5, 4.0])
    f = lambda x: np.prod(x.reshape(2, 3), axis=1)   # noqa: E731
    P = ad.jacobian_sparsity(f)(x).toarray()
    np.testing.assert_array_equal(P, _group_pattern((2, 3), (1,)))
    _close(ad.sparse_jacobian(f)(x).toarray(), _dense_jacobian(f, x))


def test_prod_through_record():
    x = RNG.uniform(0.5, 1.5, size=8)
    f = lambda x: np.sum(np.prod(x.reshape(4, 2), axis=1) ** 2)   # noqa: E731
    F = ad.record(f, x)
    want = np.kron(np.eye(4), np.ones((2, 2))).astype(bool)
    np.testing.assert_array_equal(F.hessian_sparsity().toarray(), want)
    assert sparse.recorded_plan(F, "hessian", "test").ncolors == 2
    J = lambda x: np.prod(x.reshape(4, 2), axis=1)    # noqa: E731
    G = ad.record(J, x)
    _close(G.sparse_jacobian(x).toarray(), _dense_jacobian(J, x))


# -- cumsum ---------------------------------------------------------------------------

def _cumsum_pattern(shape, axis):
    """Element i along axis on elements 0..i with the same other indices."""
    if axis is None:
        n = int(np.prod(shape))
        return np.tril(np.ones((n, n), bool))
    axis %= len(shape)
    idx = list(np.ndindex(*shape))
    want = np.zeros((len(idx), len(idx)), bool)
    for r, i in enumerate(idx):
        for c, j in enumerate(idx):
            same = all(a == b for d, (a, b) in enumerate(zip(i, j)) if d != axis)
            want[r, c] = same and j[axis] <= i[axis]
    return want


CUMSUM_CASES = [((6,), 0), ((6,), None), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1),
                ((3, 4), None), ((2, 3, 2), 1), ((2, 3, 2), 0), ((2, 3, 2), 2)]


@pytest.mark.parametrize("shape, axis", CUMSUM_CASES)
def test_cumsum_pattern(shape, axis):
    size = int(np.prod(shape))
    x = RNG.normal(size=size)
    want = _cumsum_pattern(shape, axis)

    def f(x):
        return np.cumsum(x.reshape(shape), axis=axis)
    check_jacobian(f, x, want)
    # linear: nothing interacts through it
    assert ad.hessian_sparsity(lambda x: np.sum(f(x)))(x).nnz == 0
    check_hessian(lambda x: np.sum(np.cumsum((x * x).reshape(shape), axis=axis)), x,
                  np.eye(size))
    # through a square: the pairs along each line of the axis
    pairs = (want.T.astype(int) @ want.astype(int)) > 0
    check_hessian(lambda x: np.sum(f(x) ** 2), x, pairs)


def test_cumsum_method_and_accumulate():
    x = RNG.normal(size=12)
    want = _cumsum_pattern((3, 4), 1)
    check_jacobian(lambda x: x.reshape(3, 4).cumsum(axis=1), x, want)
    check_jacobian(lambda x: np.add.accumulate(x.reshape(3, 4), axis=1), x, want)


def test_cumsum_colours_and_record():
    # cumsum along the rows of (8, 2): each column a lower triangle; the
    # Hessian of sum(x * x) through it diagonal (one colour)
    x = RNG.normal(size=16)
    f = lambda x: np.sum(np.cumsum((x * x).reshape(8, 2), axis=0) * 0.5)   # noqa: E731
    F = ad.record(f, x)
    np.testing.assert_array_equal(F.hessian_sparsity().toarray(), np.eye(16))
    _close(F.sparse_hessian(x).toarray(), _dense_hessian(f, x))
    assert sparse.recorded_plan(F, "hessian", "test").ncolors == 1
    # Jacobians: one colour per element of an axis line (its dense row)
    g = lambda x: np.cumsum(x.reshape(8, 2), axis=0)   # noqa: E731
    G = ad.record(g, x)
    _close(G.sparse_jacobian(x).toarray(), _dense_jacobian(g, x))
    assert sparse.recorded_plan(G, "jacobian", "test").ncolors == 8


# -- convolve and correlate -----------------------------------------------------------

def _conv_pattern(na, nb, mode, which):
    """1-D convolution of a (na) and b (nb) by index: out[n] on a[k] where
    0 <= n - k < nb ('full'), shifted for 'same' and 'valid'; which =
    'a' or 'b' (the operand whose pattern)."""
    nfull = na + nb - 1
    if mode == "full":
        lo, count = 0, nfull
    elif mode == "same":
        lo, count = (nb - 1) // 2, na
    else:
        lo, count = min(na, nb) - 1, max(na, nb) - min(na, nb) + 1
    width = na if which == "a" else nb
    other = nb if which == "a" else na
    want = np.zeros((count, width), bool)
    for r in range(count):
        n = lo + r
        for k in range(width):
            want[r, k] = 0 <= n - k < other
    return want


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("na, nb", [(7, 3), (3, 5), (6, 2), (4, 4)])
def test_convolve_1d_constant_kernel(na, nb, mode):
    k = RNG.normal(size=nb)
    x = RNG.normal(size=na)
    want = _conv_pattern(na, nb, mode, "a")
    f = lambda x: convolve(x, k, mode=mode)    # noqa: E731
    check_jacobian(f, x, want)
    # the kernel traced, the signal constant
    s = RNG.normal(size=na)
    check_jacobian(lambda y: convolve(s, y, mode=mode), k,
                   _conv_pattern(na, nb, mode, "b"))
    # linear in x: the Hessian of its sum of squares is want^T want
    pairs = (want.T.astype(int) @ want.astype(int)) > 0
    check_hessian(lambda x: np.sum(convolve(x, k, mode=mode) ** 2), x, pairs)
    # and of a sum of it: nothing; of x * x through it: the diagonal
    assert ad.hessian_sparsity(lambda x: np.sum(convolve(x, k, mode=mode)))(x).nnz == 0
    check_hessian(lambda x: np.sum(convolve(x * x, k, mode=mode)), x,
                  np.eye(na) * want.any(axis=0))


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_convolve_both_traced(mode):
    na, nb = 6, 3
    x = RNG.normal(size=na + nb)

    def f(x):
        return convolve(x[:na], x[na:], mode=mode)
    want = np.hstack([_conv_pattern(na, nb, mode, "a"), _conv_pattern(na, nb, mode, "b")])
    check_jacobian(f, x, want)
    # bilinear in (a, b): the dependencies of each output taken to
    # interact (conservative: the a-a and b-b pairs are structurally zero,
    # and a_k, b_m interact only where k + m is an output's index)
    w = RNG.normal(size=want.shape[0])
    g = lambda x: np.sum(w * f(x))     # noqa: E731
    H = ad.hessian_sparsity(g)(x).toarray()
    np.testing.assert_array_equal(H, (want.T.astype(int) @ want.astype(int)) > 0)
    true = _nonzeros(_dense_hessian, g, x)
    assert not (true & ~H).any()
    assert not true[:na, :na].any() and not true[na:, na:].any()
    _close(ad.sparse_hessian(g)(x).toarray(), _dense_hessian(g, x))


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_correlate(mode):
    na, nb = 7, 3
    k = RNG.normal(size=nb)
    x = RNG.normal(size=na)
    # correlation is convolution with the kernel reversed: the same band
    check_jacobian(lambda x: correlate(x, k, mode=mode), x,
                   _conv_pattern(na, nb, mode, "a"))
    y = RNG.normal(size=na + nb)
    check_jacobian(lambda y: correlate(y[:na], y[na:], mode=mode), y)


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("sa, sb", [((4, 5), (2, 3)), ((3, 3), (3, 2)), ((2, 3, 4), (2, 2, 2))])
def test_convolve_nd(sa, sb, mode):
    na = int(np.prod(sa))
    x = RNG.normal(size=na + int(np.prod(sb)))
    K = RNG.normal(size=sb)
    f = lambda x: convolve(x[:na].reshape(sa), K, mode=mode)   # noqa: E731
    P = check_jacobian(f, x[:na])
    # a product of bands along the axes: rows have at most prod(sb) entries
    assert P.sum(axis=1).max() <= int(np.prod(sb))
    g = lambda x: convolve(x[:na].reshape(sa), x[na:].reshape(sb), mode=mode)  # noqa
    check_jacobian(g, x)
    check_hessian(lambda x: np.sum(f(x) ** 2), x[:na])


def test_convolve_axes_and_dot_axes():
    # autograd's axes (the pairs convolved) and dot_axes (the pairs summed)
    a = RNG.normal(size=(3, 5, 2))
    b = RNG.normal(size=(2, 3, 2))
    na = a.size

    def f(x):
        return convolve(x[:na].reshape(a.shape), x[na:].reshape(b.shape), mode="full",
                        axes=([1], [1]), dot_axes=([2], [0]))
    x = np.concatenate([a.ravel(), b.ravel()])
    P = check_jacobian(f, x)
    assert P.mean() < 0.5
    check_jacobian(lambda y: convolve(y.reshape(a.shape), b, mode="valid",
                                      axes=([1], [1]), dot_axes=([2], [0])), a.ravel())


def test_convolve_colours():
    # a kernel of 2: each output on two neighbours; the Hessian of a sum of
    # squares tridiagonal: at most 3 colours; the Jacobian's 2
    x = RNG.normal(size=30)
    k = np.array([1.0, -2.0])
    f = lambda x: convolve(x, k)    # noqa: E731
    assert colours(f, x, "jacobian") == 2
    g = lambda x: np.sum(convolve(x, k) ** 2)    # noqa: E731
    P = check_hessian(g, x, np.abs(np.subtract.outer(np.arange(30), np.arange(30))) <= 1)
    assert P.sum() == 30 + 2 * 29
    assert colours(g, x, "hessian") <= 3
    # a kernel of 3: 3 Jacobian colours
    assert colours(lambda x: convolve(x, np.ones(3)), x, "jacobian") == 3


def test_convolve_through_record():
    x = RNG.normal(size=12)
    k = RNG.normal(size=3)
    f = lambda x: np.sum(np.sin(convolve(x, k, mode="same")))    # noqa: E731
    F = ad.record(f, x)
    want = np.abs(np.subtract.outer(np.arange(12), np.arange(12))) <= 2
    np.testing.assert_array_equal(F.hessian_sparsity().toarray(), want)
    _close(F.sparse_hessian(x).toarray(), _dense_hessian(f, x))
    x2 = x + 0.1 * RNG.normal(size=12)
    _close(F.sparse_hessian(x2).toarray(), _dense_hessian(f, x2))
    # both operands moving: bilinear, recorded too
    g = lambda y: np.sum(convolve(y[:8], y[8:]) ** 2)    # noqa: E731
    G = ad.record(g, x)
    _close(G.sparse_hessian(x).toarray(), _dense_hessian(g, x))


# -- numpy.linalg's stacked ops -------------------------------------------------------

def _blocks(batch, rows, cols):
    return np.kron(np.eye(batch), np.ones((rows, cols))).astype(bool)


def _stack(batch=3, n=3):
    return (RNG.normal(size=(batch, n, n)) + 3.0 * np.eye(n)).ravel()


LINALG = [
    ("inv", lambda a: np.linalg.inv(a), 9),
    ("det", lambda a: np.linalg.det(a), 1),
    ("slogdet", lambda a: np.linalg.slogdet(a)[1], 1),
    ("pinv", lambda a: np.linalg.pinv(a), 9),
    ("svdvals", lambda a: np.linalg.svd(a, compute_uv=False), 3),
]


@pytest.mark.parametrize("name, fn, per", LINALG, ids=[c[0] for c in LINALG])
def test_linalg_stacked_block_diagonal(name, fn, per):
    x = _stack()
    f = lambda x: fn(x.reshape(3, 3, 3))    # noqa: E731
    check_jacobian(f, x, _blocks(3, per, 9))
    # one colour per row or column of a block
    assert colours(f, x, "jacobian") == per
    # second order: within each matrix only
    H = ad.hessian_sparsity(lambda x: np.sum(f(x)))(x).toarray()
    np.testing.assert_array_equal(H, _blocks(3, 9, 9))
    true = _nonzeros(_dense_hessian, lambda x: np.sum(f(x)), x)
    assert not (true & ~H).any()


def test_linalg_factorizations_conservative():
    # cholesky, qr, eig: each factor's block on its own matrix (within a
    # block, every element: conservative)
    x = _stack()
    for fn in (lambda a: np.linalg.cholesky(a @ np.swapaxes(a, -1, -2)),
               lambda a: np.linalg.qr(a)[1], lambda a: np.linalg.qr(a)[0],
               lambda a: np.linalg.svd(a)[0]):
        f = lambda x: fn(x.reshape(3, 3, 3))    # noqa: E731
        P = ad.jacobian_sparsity(f)(x).toarray()
        np.testing.assert_array_equal(P, _blocks(3, 9, 9))
        assert not (_nonzeros(_dense_jacobian, f, x) & ~P).any()
        _close(ad.sparse_jacobian(f)(x).toarray(), _dense_jacobian(f, x))


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_linalg_eigh_reads_one_triangle(uplo):
    m = RNG.normal(size=(2, 3, 3))
    x = (m + np.swapaxes(m, -1, -2)).ravel()
    tri = (np.tril if uplo == "L" else np.triu)(np.ones((3, 3), bool)).ravel()
    for k, rows in ((0, 3), (1, 9)):
        f = lambda x: np.linalg.eigh(x.reshape(2, 3, 3), UPLO=uplo)[k]   # noqa: E731
        want = np.kron(np.eye(2), np.outer(np.ones(rows), tri)).astype(bool)
        check_jacobian(f, x, want)


def test_linalg_solve_columns_and_broadcast():
    A = (RNG.normal(size=(2, 3, 3)) + 3.0 * np.eye(3))
    b = RNG.normal(size=(2, 3, 4))
    # in b: column j of x on column j of b (of its own matrix)
    want = np.kron(np.eye(2), np.kron(np.ones((3, 3)), np.eye(4))).astype(bool)
    check_jacobian(lambda b: np.linalg.solve(A, b.reshape(2, 3, 4)), b.ravel(), want)
    # in A: each matrix's solutions on that matrix
    check_jacobian(lambda a: np.linalg.solve(a.reshape(2, 3, 3), b), A.ravel(),
                   _blocks(2, 12, 9))
    # one vector b against a stack of A: every solution on all of b
    v = RNG.normal(size=3)
    check_jacobian(lambda v: np.linalg.solve(A, v), v, np.ones((6, 3), bool))
    check_jacobian(lambda a: np.linalg.solve(a.reshape(2, 3, 3), v), A.ravel(),
                   _blocks(2, 3, 9))
    # one A against a stack of b (broadcast): each b's block on itself
    B = RNG.normal(size=(5, 3, 2))
    want = np.kron(np.eye(5), np.kron(np.ones((3, 3)), np.eye(2))).astype(bool)
    check_jacobian(lambda b: np.linalg.solve(A[0], b.reshape(5, 3, 2)), B.ravel(), want)
    check_jacobian(lambda a: np.linalg.solve(a.reshape(3, 3), B), A[0].ravel(),
                   np.ones((30, 9), bool))


# -- what stays dense ---------------------------------------------------------------------

def test_custom_op_without_pattern_is_dense():
    # a custom op that gives no pattern: every output on every input
    # element, and (not linear) all of them interacting
    op = ad.custom_op(lambda a: np.cumsum(a), lambda g, out, a: (np.cumsum(g[::-1])[::-1],),
                      jvp=lambda ts, out, a: np.cumsum(ts[0]))
    x = RNG.normal(size=5)
    assert ad.jacobian_sparsity(lambda x: op(x))(x).toarray().all()
    assert ad.hessian_sparsity(lambda x: ad.sum(op(x)))(x).toarray().all()
    # the library's cumsum: the triangle
    assert ad.jacobian_sparsity(lambda x: np.cumsum(x))(x).nnz == 15
