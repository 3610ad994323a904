"""Sparse Jacobians and Hessians (pyautodiff/sparse.py, csrc/sparsity.c):
patterns and values against the dense ad.jacobian / ad.hessian on random
programs over every op kind, the colourings checked here independently
of the C code that makes them, and the errors."""
import itertools
import subprocess
import sys

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import sparse

scipy_sparse = pytest.importorskip("scipy.sparse")


# -- a small random-program generator --------------------------------------------------

def _cumsum_op():
    """A custom op (dense default rule; linear, with a jvp)."""
    return ad.custom_op(lambda a: np.cumsum(a),
                        lambda g, out, a: (np.cumsum(g[::-1])[::-1],),
                        jvp=lambda ts, out, a: np.cumsum(ts[0]))


UNARY = [ad.sin, ad.exp, ad.tanh, lambda a: a ** 2, lambda a: ad.log(a * a + 0.5),
         lambda a: ad.sqrt(a * a + 1.0), lambda a: 1.0 / (a * a + 1.0),
         lambda a: a * 3.0 - 1.0, lambda a: -a, ad.arctan, ad.abs]
BINARY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
          lambda a, b: a / (b * b + 1.0), ad.maximum,
          lambda a, b: ad.where(a > b, a * a, b), ad.hypot, ad.arctan2]


def _shape_ops(rng, a):
    """Gathers, scatters and reshapes of a: (name, function) that fit."""
    out = []
    if a.ndim >= 1 and a.shape[-1] > 1:
        out += [lambda: a[..., 1:], lambda: a[..., ::-1],
                lambda: a[..., rng.integers(0, a.shape[-1], 4)]]
    if a.ndim == 2:
        out += [lambda: a.T, lambda: ad.reshape(a, (-1,)),
                lambda: ad.concatenate([a, a[:1] * 2.0], axis=0)]
    if a.ndim == 1:
        out += [lambda: ad.concatenate([a[1:], a[:2]]),
                lambda: ad.stack([a, ad.sin(a)])]
    return out


def random_program(rng, n, hessian):
    """f(x) for x of size n: a pool of nodes grown by random ops over
    every kind (elementwise with broadcasting, reductions, gathers,
    scatters, reshapes, where/maximum, matmul, a custom op), the result a
    vector (Jacobian) or a scalar (Hessian)."""
    steps = []
    for _ in range(rng.integers(3, 9)):
        steps.append((rng.integers(0, 7), rng.integers(0, 1 << 30)))
    pick_out = rng.integers(0, 1 << 30)
    const = rng.normal(size=(3, n))

    def f(x):
        pool = [x, ad.reshape(x, (2, n // 2))]
        for kind, s in steps:
            r = np.random.default_rng(s)
            a = pool[r.integers(len(pool))]
            if kind == 0:
                pool.append(UNARY[r.integers(len(UNARY))](a))
            elif kind == 1:
                same = [b for b in pool if b.shape == a.shape or b.ndim == 0
                        or (a.ndim == 2 and b.shape == (a.shape[1],))]
                b = same[r.integers(len(same))]
                pool.append(BINARY[r.integers(len(BINARY))](a, b))
            elif kind == 2 and a.ndim >= 1:
                axis = int(r.integers(a.ndim))
                red = [lambda: ad.sum(a, axis=axis), lambda: ad.max(a, axis=axis),
                       lambda: ad.logsumexp(a, axis=axis), lambda: a.mean(axis=axis,
                                                                          keepdims=True)]
                pool.append(red[r.integers(len(red))]())
            elif kind == 3:
                moves = _shape_ops(r, a)
                if moves:
                    pool.append(moves[r.integers(len(moves))]())
            elif kind == 4 and a.ndim == 1 and a.shape[0] == n:
                pool.append(const @ a if r.integers(2) else ad.tanh(const @ a))
            elif kind == 5 and a.ndim == 2 and a.shape[1] == n // 2:
                b = ad.reshape(x, (n // 2, 2))
                pool.append(a @ b)
            elif kind == 6 and a.ndim == 1 and not hessian:
                pool.append(_cumsum_op()(a))
        r = np.random.default_rng(pick_out)
        chosen = [pool[k] for k in r.choice(len(pool), size=min(3, len(pool)),
                                            replace=False)]
        if hessian:
            total = ad.sum(ad.sin(chosen[0]))
            for c in chosen[1:]:
                total = total + ad.sum(c * c) * 0.5
            return total + ad.sum(pool[-1] ** 2)
        return ad.concatenate([ad.reshape(c, (-1,)) for c in chosen + [pool[-1]]])
    return f


def _dense(M, rows, cols):
    return np.reshape(M, (rows, cols))


def _close(got, want):
    scale = max(1.0, np.abs(want).max(initial=0.0))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * scale)


# -- independent checks of colourings ---------------------------------------------------

def check_column_colouring(P, color):
    """Columns of one colour share no row (structurally orthogonal)."""
    P = scipy_sparse.csr_array(P)
    for r in range(P.shape[0]):
        cols = P.indices[P.indptr[r]:P.indptr[r + 1]]
        assert len(set(color[cols])) == len(cols), f"row {r}"


def check_star_colouring(P, color):
    """A proper colouring of the graph of P (no diagonal) in which every
    path on four vertices has at least three colours."""
    P = scipy_sparse.csr_array(P)
    adj = [set(P.indices[P.indptr[i]:P.indptr[i + 1]]) - {i} for i in range(P.shape[0])]
    for b in range(len(adj)):
        for c in adj[b]:
            assert color[b] != color[c], (b, c)
            for a in adj[b] - {c}:
                for d in adj[c] - {b, a}:
                    assert not (color[a] == color[c] and color[b] == color[d]), \
                        (a, b, c, d)


# -- random programs ------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(40))
def test_random_jacobians(seed):
    rng = np.random.default_rng(seed)
    n = 6
    f = random_program(rng, n, hessian=False)
    x = rng.normal(size=n)
    dense = ad.jacobian(f)(x)
    dense = _dense(dense, dense.size // n, n)
    P = ad.jacobian_sparsity(f)(x)
    assert P.dtype == bool and P.shape == dense.shape
    assert not (np.abs(dense) > 0)[~P.toarray()].any(), "a nonzero outside the pattern"
    J = ad.sparse_jacobian(f)(x)
    assert isinstance(J, scipy_sparse.csr_array) and J.dtype == np.float64
    _close(J.toarray(), dense)
    F = ad.record(f, x)
    assert (F.jacobian_sparsity() != P).nnz == 0
    x2 = x + 0.01 * rng.normal(size=n)
    try:
        want = ad.jacobian(f)(x2)
    except Exception:
        return
    try:
        got = F.sparse_jacobian(x2)
    except ad.BranchError:
        return
    _close(got.toarray(), _dense(want, want.size // n, n))
    plan = sparse.recorded_plan(F, "jacobian", "test")
    if plan.by_rows:
        check_column_colouring(P.T, plan.color)
    else:
        check_column_colouring(P, plan.color)


@pytest.mark.parametrize("seed", range(40))
def test_random_hessians(seed):
    rng = np.random.default_rng(1000 + seed)
    n = 6
    f = random_program(rng, n, hessian=True)
    x = rng.normal(size=n)
    dense = _dense(ad.hessian(f)(x), n, n)
    P = ad.hessian_sparsity(f)(x)
    A = P.toarray()
    assert (A == A.T).all()
    assert not (np.abs(dense) > 0)[~A].any(), "a nonzero outside the pattern"
    H = ad.sparse_hessian(f)(x)
    _close(H.toarray(), dense)
    F = ad.record(f, x)
    got = F.sparse_hessian(x)
    _close(got.toarray(), dense)
    check_star_colouring(P, sparse.recorded_plan(F, "hessian", "test").color)


# -- known patterns -------------------------------------------------------------------------

def rosenbrock(x):
    return ad.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_rosenbrock_tridiagonal_three_colours():
    n = 50
    x = np.linspace(-1, 2, n)
    F = ad.record(rosenbrock, x)
    P = F.hessian_sparsity().toarray()
    i, j = np.indices((n, n))
    np.testing.assert_array_equal(P, np.abs(i - j) <= 1)
    H = F.sparse_hessian(x)
    _close(H.toarray(), ad.hessian(rosenbrock)(x))
    plan = sparse.recorded_plan(F, "hessian", "test")
    assert plan.ncolors == 3
    check_star_colouring(F.hessian_sparsity(), plan.color)
    y = x[::-1].copy()
    _close(F.sparse_hessian(y).toarray(), ad.hessian(rosenbrock)(y))


def test_diagonal_jacobian_one_colour():
    f = lambda x: ad.exp(x) * 2.0 + x ** 3   # noqa: E731
    x = np.linspace(0, 1, 20)
    F = ad.record(f, x)
    np.testing.assert_array_equal(F.jacobian_sparsity().toarray(), np.eye(20, dtype=bool))
    _close(F.sparse_jacobian(x).toarray(), ad.jacobian(f)(x))
    assert sparse.recorded_plan(F, "jacobian", "test").ncolors == 1


def test_hand_derived_values():
    # f(x) = x0**2 x1 + sin(x2): H = [[2 x1, 2 x0, 0], [2 x0, 0, 0], [0, 0, -sin x2]]
    f = lambda x: x[0] ** 2 * x[1] + ad.sin(x[2])   # noqa: E731
    x = np.array([1.5, -2.0, 0.3])
    H = ad.sparse_hessian(f)(x).toarray()
    want = np.array([[2 * x[1], 2 * x[0], 0], [2 * x[0], 0, 0], [0, 0, -np.sin(x[2])]])
    np.testing.assert_allclose(H, want, rtol=1e-15)
    P = ad.hessian_sparsity(f)(x).toarray()
    np.testing.assert_array_equal(P, [[1, 1, 0], [1, 0, 0], [0, 0, 1]])


def test_linear_ops_add_no_hessian_entries():
    f = lambda x: ad.sum(ad.maximum(x, 0.5) * 3.0 - x[::-1]) + ad.sum(x[:2] ** 2)  # noqa
    x = np.linspace(0, 1, 6)
    P = ad.hessian_sparsity(f)(x).toarray()
    np.testing.assert_array_equal(P, np.diag([1, 1, 0, 0, 0, 0]).astype(bool))


def test_matmul_exact_block_pattern():
    A = np.arange(12.0).reshape(3, 4) + 1.0
    f = lambda x: A @ ad.reshape(x, (4, 2))   # noqa: E731   (3, 2) from (8,)
    x = np.linspace(-1, 1, 8)
    P = ad.jacobian_sparsity(f)(x).toarray()
    want = np.zeros((6, 8), bool)
    for i, j, k in itertools.product(range(3), range(2), range(4)):
        want[2 * i + j, 2 * k + j] = True
    np.testing.assert_array_equal(P, want)
    # x0 x1 through a product of variables: bilinear, no diagonal
    g = lambda x: ad.reshape(x[:2], (1, 2)) @ ad.reshape(x[2:], (2, 1))  # noqa: E731
    y = np.array([1.0, 2.0, 3.0, 4.0])
    Q = ad.hessian_sparsity(lambda x: ad.sum(g(x)))(y).toarray()
    np.testing.assert_array_equal(Q, [[0, 0, 1, 0], [0, 0, 0, 1],
                                      [1, 0, 0, 0], [0, 1, 0, 0]])
    _close(ad.sparse_hessian(lambda x: ad.sum(g(x)))(y).toarray(),
           ad.hessian(lambda x: ad.sum(g(x)))(y))


def test_custom_op_with_sparsity_rule():
    # an elementwise custom op that says so: a diagonal pattern, not dense
    op = ad.custom_op(lambda a: 2.0 * a, lambda g, out, a: (2.0 * g,),
                      jvp=lambda ts, out, a: 2.0 * ts[0],
                      sparsity=lambda out_shape, shape: [np.eye(int(np.prod(shape)),
                                                                 dtype=bool)])
    x = np.arange(5.0)
    np.testing.assert_array_equal(ad.jacobian_sparsity(op)(x).toarray(), np.eye(5, dtype=bool))
    _close(ad.sparse_jacobian(op)(x).toarray(), 2.0 * np.eye(5))
    dense_op = _cumsum_op()
    assert ad.jacobian_sparsity(dense_op)(x).toarray().all()


def test_scalar_and_tuple_arguments():
    f = lambda a, b: a * ad.sum(b ** 2)   # noqa: E731
    b = np.array([1.0, 2.0])
    H = ad.sparse_hessian(f, argnum=(0, 1))(3.0, b).toarray()
    want = np.array([[0, 2, 4], [2, 6, 0], [4, 0, 6]], float)
    np.testing.assert_allclose(H, want, rtol=1e-15)
    J = ad.sparse_jacobian(lambda a: a * b)(2.0)
    np.testing.assert_allclose(J.toarray(), [[1.0], [2.0]])


def test_constant_output_and_rows():
    x = np.ones(3)
    assert ad.hessian_sparsity(lambda x: 1.0)(x).nnz == 0
    assert ad.sparse_hessian(lambda x: 1.0)(x).shape == (3, 3)
    J = ad.sparse_jacobian(lambda x: [x * 2.0, np.ones(2)])(x)
    np.testing.assert_allclose(J.toarray(), np.vstack([2 * np.eye(3), np.zeros((2, 3))]))


# -- errors ---------------------------------------------------------------------------------

def test_nan_and_shape_errors():
    x = np.linspace(0, 1, 5)
    with pytest.raises(ValueError, match="nan"):
        ad.sparse_hessian(rosenbrock)(np.array([0.0, np.nan, 1.0]))
    F = ad.record(rosenbrock, x)
    with pytest.raises(ValueError, match="nan"):
        F.sparse_hessian(np.array([0.0, 1.0, np.nan, 1.0, 2.0]))
    with pytest.raises(ValueError, match="shape"):
        F.sparse_hessian(np.ones(6))
    with pytest.raises(TypeError, match="scalar"):
        ad.sparse_hessian(lambda x: x * 2.0)(x)


def test_first_order_custom_op_in_a_hessian():
    # ad.sparse_hessian takes each product from ad.hvp, which differentiates
    # the op's vjp; a recording's one-sweep products cannot, and say so
    op = _cumsum_op()
    f = lambda x: ad.sum(op(x[:2]) ** 2) + ad.sum(ad.sin(x[2:]))   # noqa: E731
    x = np.array([0.5, -1.0, 2.0, 1.5])
    H = ad.sparse_hessian(f)(x)
    _close(H.toarray(), ad.hessian(f)(x))
    np.testing.assert_array_equal(H.toarray() != 0, ad.hessian_sparsity(f)(x).toarray())
    with pytest.raises(NotImplementedError, match="second-order"):
        ad.record(f, x).sparse_hessian(x)


def test_branch_error_on_flipped_guard():
    def f(x):
        return ad.sum(x ** 2) if ad.sum(x) > 0 else ad.sum(x)
    F = ad.record(f, np.ones(3))
    with pytest.raises(ad.BranchError):
        F.sparse_hessian(-np.ones(3))


def test_colouring_rejects_malformed_patterns():
    with pytest.raises(ValueError, match="malformed"):
        sparse.color_star(np.array([0, 1, 2]), np.array([0, 5]), 2)
    with pytest.raises(ValueError, match="malformed"):
        sparse.color_columns(np.array([0, 2, 1]), np.array([0, 1]), 2, 2)


def test_import_without_scipy():
    code = ("import sys; sys.modules['scipy'] = None; sys.modules['scipy.sparse'] = None\n"
            "import numpy as np, pyautodiff as ad\n"
            "try:\n"
            "    ad.sparse_hessian(lambda x: ad.sum(x ** 2))(np.ones(2))\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "pip install pyautodiff[scipy]" in out


def _symmetric(n, edges, diagonal=()):
    A = np.zeros((n, n), bool)
    for a, b in edges:
        A[a, b] = A[b, a] = True
    for a in diagonal:
        A[a, a] = True
    P = scipy_sparse.csr_array(A)
    return P.indptr.astype(np.int64), P.indices.astype(np.int64)


@pytest.mark.parametrize("edges, bound", [
    ([], 1), ([(0, 1)], 2), ([(0, 1), (0, 2), (0, 3)], 2),   # a star: 2 colours
    ([(0, 1), (1, 2), (2, 3)], 3), ([(0, 1), (1, 2), (0, 2)], 3)])
def test_star_colouring_lower_bound(edges, bound):
    p, q = _symmetric(4, edges, diagonal=(0, 3))
    assert sparse._star_bound(p, q, 4) == bound
    color, k = sparse.color_star(p, q, 4)
    assert k == bound          # greedy reaches it on these small graphs
    check_star_colouring(scipy_sparse.csr_array((np.ones(len(q)), q, p), shape=(4, 4)),
                         color)


def test_library_externs_dense_default():
    # cumsum and prod are extern entries without a pattern: each output on
    # every operand element; cumsum is linear (no interactions), prod not
    x = np.array([0.5, -1.0, 2.0, 1.5])
    assert ad.hessian_sparsity(lambda x: ad.sum(np.cumsum(x)))(x).nnz == 0
    f = lambda x: ad.sum(np.cumsum(x[:2]) ** 2) + np.prod(x[2:]) * 3.0   # noqa: E731
    P = ad.hessian_sparsity(f)(x).toarray()
    np.testing.assert_array_equal(P, [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]])
    _close(ad.sparse_hessian(f)(x).toarray(), ad.hessian(f)(x))
    g = lambda x: np.cumsum(x[1:]) * x[0]   # noqa: E731
    # conservative: every cumsum output on every element of x[1:]
    assert ad.jacobian_sparsity(g)(x).toarray().all()
    _close(ad.sparse_jacobian(g)(x).toarray(), ad.jacobian(g)(x))
