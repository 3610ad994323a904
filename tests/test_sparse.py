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
from pyautodiff.testing import fuzz_sparse

scipy_sparse = pytest.importorskip("scipy.sparse")


def _close(got, want):
    scale = max(1.0, np.abs(want).max(initial=0.0))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * scale)


# the colourings, checked independently of the C code (fuzz_sparse.py)

def check_column_colouring(P, color):
    assert fuzz_sparse.column_colouring_problems(P, color) == []


def check_star_colouring(P, color):
    assert fuzz_sparse.star_colouring_problems(P, color) == []


# -- random programs (the generator and checks of the sparse fuzzer) ----------------------

@pytest.mark.parametrize("seed", range(40))
def test_random_jacobians(seed):
    assert fuzz_sparse.check_program(np.random.default_rng(seed), 6, hessian=False) == []


@pytest.mark.parametrize("seed", range(40))
def test_random_hessians(seed):
    assert fuzz_sparse.check_program(np.random.default_rng(1000 + seed), 6,
                                     hessian=True) == []


def test_the_checks_reject_bad_colourings():
    # a path 0-1-2-3: columns 0, 1 share row 0; two colours alternating
    # are proper but not a star colouring, three are
    P = scipy_sparse.csr_array(np.array([[1, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 1],
                                         [0, 0, 1, 0]], bool))
    assert fuzz_sparse.column_colouring_problems(P, np.array([0, 0, 1, 2]))
    assert fuzz_sparse.star_colouring_problems(P, np.array([0, 1, 0, 1]))
    assert fuzz_sparse.star_colouring_problems(P, np.array([0, 0, 1, 2]))
    assert fuzz_sparse.star_colouring_problems(P, np.array([0, 1, 2, 0])) == []


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
    dense_op = fuzz_sparse.cumsum_op()
    assert ad.jacobian_sparsity(dense_op)(x).toarray().all()


def _product_op(sparsity):
    return ad.custom_op(lambda a, b: a * b, lambda g, out, a, b: (g * b, g * a),
                        sparsity=sparsity)


def _eye(n):
    return np.eye(n, dtype=bool)


@pytest.mark.parametrize("result,error,message", [
    # one pattern for two inputs (once an IndexError), or three
    (lambda o, a, b: [_eye(a[0])], ValueError, r"returned 1 patterns for 2 inputs; "
     r"it must return one boolean matrix per input \(2\)"),
    (lambda o, a, b: [_eye(a[0])] * 3, ValueError, r"returned 3 patterns for 2 inputs"),
    # a bare matrix for two inputs (once read row by row), None, a dict, a generator
    (lambda o, a, b: _eye(a[0]), TypeError, r"returned an ndarray of shape \(4, 4\); "
     r"it must return a list of one boolean matrix per input"),
    (lambda o, a, b: None, TypeError, r"returned None; it must return a list"),
    (lambda o, a, b: {0: _eye(a[0]), 1: _eye(a[0])}, TypeError, r"returned a dict"),
    (lambda o, a, b: (_eye(a[0]) for _ in "ab"), TypeError, r"returned a generator"),
    # a pattern of the wrong shape, of no numbers, missing for a constant input
    (lambda o, a, b: [np.ones((2, 4), bool), _eye(a[0])], ValueError,
     r"pattern for input 0 has shape \(2, 4\), but input 0 of shape \(4,\) and the "
     r"output of shape \(4,\) need \(4, 4\)"),
    (lambda o, a, b: [np.ones(4, bool), _eye(a[0])], ValueError, r"input 0 has shape \(4,\)"),
    (lambda o, a, b: ["ab", _eye(a[0])], TypeError, r"pattern for input 0 is a str, not a matrix"),
    (lambda o, a, b: [_eye(a[0]), None], TypeError, r"pattern for input 1 is None")])
def test_custom_op_sparsity_rule_returning_the_wrong_patterns(result, error, message):
    """Whatever the rule returns that is not one (output size x input
    size) matrix per input raises an error naming the op and what was
    expected, when one input is traced or both."""
    op = _product_op(result)
    x = np.arange(1.0, 5.0)
    for f in (lambda x: op(x, 2.0 * x), lambda x: op(x, np.ones(4))):
        with pytest.raises(error, match="^<lambda>: its sparsity rule.*" + message):
            ad.jacobian_sparsity(f)(x)
        with pytest.raises(error, match="^<lambda>: its sparsity rule.*" + message):
            ad.record(f, x).sparse_jacobian(x)


def test_custom_op_sparsity_rule_forms_accepted():
    """A list or tuple of bool or 0/1 ndarrays or scipy sparse arrays; a
    lone matrix for a one-input op (as a lone cotangent is)."""
    sparse = pytest.importorskip("scipy.sparse")
    x = np.arange(1.0, 5.0)
    for result in ([_eye(4), _eye(4)], (np.eye(4), _eye(4)),
                   [sparse.eye_array(4, dtype=bool)] * 2):
        op = _product_op(lambda o, a, b, result=result: result)
        np.testing.assert_array_equal(
            ad.jacobian_sparsity(lambda x: op(x, 2.0 * x))(x).toarray(), _eye(4))
    lone = ad.custom_op(lambda a: 2.0 * a, lambda g, out, a: (2.0 * g,),
                        sparsity=lambda out_shape, shape: _eye(shape[0]))
    np.testing.assert_array_equal(ad.jacobian_sparsity(lone)(x).toarray(), _eye(4))


def test_custom_op_whose_pattern_has_no_nonzeros():
    # a custom op that depends on nothing (its output a constant): an empty
    # pattern is a pattern, not a malformed one
    op = ad.custom_op(lambda a: np.ones_like(a), lambda g, out, a: (np.zeros_like(g),),
                      jvp=lambda ts, out, a: np.zeros_like(ts[0]),
                      sparsity=lambda out_shape, shape: [np.zeros((int(np.prod(out_shape)),
                                                                   int(np.prod(shape))), bool)])
    f = lambda x: op(x) * x[::-1]   # noqa: E731
    x = np.arange(1.0, 5.0)
    want = np.fliplr(np.eye(4, dtype=bool))
    np.testing.assert_array_equal(ad.jacobian_sparsity(f)(x).toarray(), want)
    _close(ad.sparse_jacobian(f)(x).toarray(), ad.jacobian(f)(x))
    assert ad.jacobian_sparsity(op)(x).nnz == 0


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


@pytest.mark.parametrize("name,dense", [("sparse_jacobian", "ad.jacobian"),
                                        ("sparse_hessian", "ad.hessian"),
                                        ("jacobian_sparsity", "structural"),
                                        ("hessian_sparsity", "structural")])
def test_inside_another_derivative_or_a_recording_says_what_to_use(name, dense):
    x = np.linspace(0.5, 1, 4)
    inner = rosenbrock if "hessian" in name else (lambda x: x[1:] * x[:-1])

    def g(x):
        return getattr(ad, name)(inner)(x).sum()
    with pytest.raises(NotImplementedError, match=f"{name} inside.*{dense}"):
        ad.grad(g)(x)
    with pytest.raises(NotImplementedError, match=f"{name} inside"):
        ad.record(g, x)


def test_custom_op_with_a_jvp_in_a_hessian():
    # a custom op with a jvp: the one-sweep products differentiate its vjp
    # (recorded on a tape of its own) along each colour, in a recording too;
    # the oracle differentiates the recorded gradient instead
    op = fuzz_sparse.cumsum_op()
    f = lambda x: ad.sum(op(x[:2]) ** 2) + ad.sum(ad.sin(x[2:]))   # noqa: E731
    x = np.array([0.5, -1.0, 2.0, 1.5])
    want = ad.jacobian(ad.grad(f))(x)
    H = ad.sparse_hessian(f)(x)
    _close(H.toarray(), want)
    np.testing.assert_array_equal(H.toarray() != 0, ad.hessian_sparsity(f)(x).toarray())
    _close(ad.record(f, x).sparse_hessian(x).toarray(), want)


def test_custom_op_without_a_jvp_in_a_recordings_hessian():
    # no jvp: ad.sparse_hessian takes each product from ad.hvp, which
    # differentiates the op's vjp; a recording's one-sweep products cannot,
    # and say so
    op = ad.custom_op(lambda a: np.cumsum(a),
                      lambda g, out, a: (np.cumsum(g[::-1])[::-1],))
    f = lambda x: ad.sum(op(x[:2]) ** 2) + ad.sum(ad.sin(x[2:]))   # noqa: E731
    x = np.array([0.5, -1.0, 2.0, 1.5])
    _close(ad.sparse_hessian(f)(x).toarray(), ad.jacobian(ad.grad(f))(x))
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
    with pytest.raises(ValueError, match="malformed"):       # p too short
        sparse.color_star(np.array([0, 1]), np.array([0]), 5)
    with pytest.raises(ValueError, match="malformed"):       # p past q's end
        sparse.color_columns(np.array([0, 9]), np.array([0]), 1, 1)


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


def test_library_externs_patterns():
    # cumsum is an extern entry with its own pattern, linear (no
    # interactions); prod a C reduction whose groups interact
    x = np.array([0.5, -1.0, 2.0, 1.5])
    assert ad.hessian_sparsity(lambda x: ad.sum(np.cumsum(x)))(x).nnz == 0
    f = lambda x: ad.sum(np.cumsum(x[:2]) ** 2) + np.prod(x[2:]) * 3.0   # noqa: E731
    P = ad.hessian_sparsity(f)(x).toarray()
    np.testing.assert_array_equal(P, [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]])
    _close(ad.sparse_hessian(f)(x).toarray(), ad.hessian(f)(x))
    g = lambda x: np.cumsum(x[1:]) * x[0]   # noqa: E731
    # cumsum's output k on x[1:k + 2] (lower triangular), all on x[0]
    np.testing.assert_array_equal(ad.jacobian_sparsity(g)(x).toarray(),
                                  [[1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
    _close(ad.sparse_jacobian(g)(x).toarray(), ad.jacobian(g)(x))


@pytest.mark.parametrize("by_rows", [True, False])
def test_rows_or_columns_whichever_fewer(by_rows):
    # a dense row makes every two columns clash (n colours) but rows 2;
    # a dense column the other way round
    if by_rows:
        f = lambda x: ad.concatenate([x ** 2, ad.reshape(ad.sum(ad.sin(x)), (1,))])  # noqa
    else:
        f = lambda x: x[0] * ad.exp(x)   # noqa: E731
    x = np.linspace(0.1, 1.0, 8)
    F = ad.record(f, x)
    J = F.sparse_jacobian(x)
    _close(J.toarray(), ad.jacobian(f)(x))
    plan = sparse.recorded_plan(F, "jacobian", "test")
    assert plan.by_rows == by_rows and plan.ncolors == 2
    P = F.jacobian_sparsity()
    check_column_colouring(P.T if by_rows else P, plan.color)
