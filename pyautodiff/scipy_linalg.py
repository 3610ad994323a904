"""scipy.linalg on Arrays (scipy itself is optional: imported only to
compute on plain arrays).

Called with no Array or Value among its operands, each function is
scipy's own.  With traced operands, solve_triangular, sqrtm and
solve_sylvester are extern entries (linalg.py's layout: one rule
written with these same functions and matrix products, which record
when given Arrays, so the derivatives nest); cho_factor, cho_solve,
solve_banded and the names numpy.linalg also has (inv, solve, det,
cholesky, eigh, svd ...) are composed of them and of linalg.py's
entries.  Derivatives are those of what scipy computes from all the
entries of its operands: a function that reads one triangle (lower=)
has its gradient on that triangle.

scipy's own functions do not dispatch to Arrays (they are not ufuncs
and know no __array_function__): call these."""
import numpy as np

from . import linalg as _la
from .array import Array, _asarray, _holds_traced
from .broadcasting import unbroadcast
from .linalg import T, _record, _unary

_GENERAL = (None, "gen", "general", "unknown")
_SYMMETRIC = ("sym", "symmetric", "her", "hermitian", "pos", "positive definite")


def _scipy():
    import scipy.linalg
    return scipy.linalg


def _traced(*xs):
    return any(_holds_traced(x) for x in xs)


def _triangle(n, lower, strict=False):
    ones = np.ones((n, n))
    k = 1 if strict else 0
    return np.tril(ones, -k) if lower else np.triu(ones, k)


def _from_triangle(a, lower):
    """The symmetric matrix that a's lower (upper) triangle stands for: what
    a function reading only that triangle sees."""
    part = a * _triangle(a.shape[-1], lower, strict=True)
    return a * np.eye(a.shape[-1]) + part + T(part)


def _square(name, a):
    if np.ndim(a) < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"scipy.linalg.{name}: expected a square matrix")


def _unsupported(name, what):
    raise NotImplementedError(f"scipy.linalg.{name}: {what} is not supported for "
                              "Arrays")


# -- triangular solves ---------------------------------------------------------------

def _transposed(trans):
    if trans in (0, "N"):
        return False
    if trans in (1, "T", 2, "C"):       # real matrices: C is T
        return True
    raise ValueError(f"scipy.linalg.solve_triangular: invalid trans {trans!r}")


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False,
                     overwrite_b=False, check_finite=True):
    """x with op(A) x = b, A the lower (upper) triangle of a, with ones on
    its diagonal for unit_diagonal; op(A) = A, or A^T for trans 1, 'T', 2
    or 'C'.  The gradient lives on the entries of a that are read."""
    if not _traced(a, b):
        return _scipy().solve_triangular(a, b, trans=trans, lower=lower,
                                         unit_diagonal=unit_diagonal,
                                         overwrite_b=overwrite_b,
                                         check_finite=check_finite)
    transposed = _transposed(trans)
    a, b = _asarray(a), _asarray(b)
    _square("solve_triangular", a)
    read = _triangle(a.shape[-1], lower, strict=unit_diagonal)
    vector = b.ndim == 1

    def col(x):
        return x[..., None] if vector else x

    def uncol(x):
        return x[..., 0] if vector else x

    def solved(x, y, flipped=False):
        return solve_triangular(x, y, trans=int(transposed != flipped), lower=lower,
                                unit_diagonal=unit_diagonal)

    def vjp(g, out, x, y, needs):
        gy = solved(x, g, flipped=True)
        ga = None
        if needs[0]:
            gm = -(col(gy) @ T(col(out)))       # with respect to op(A)
            ga = unbroadcast((T(gm) if transposed else gm) * read, x.shape)
        return ga, (unbroadcast(gy, y.shape) if needs[1] else None)

    def jvp(ts, out, x, y):
        ta, tb = ts
        rhs = col(tb) if tb is not None else 0.0
        if ta is not None:
            tm = ta * read
            rhs = rhs - (T(tm) if transposed else tm) @ col(out)
        return uncol(solved(x, rhs))

    return _record("scipy.linalg.solve_triangular", solved, vjp, jvp, [a, b])


# -- Cholesky ------------------------------------------------------------------------

def _cholesky_factor(a, lower):
    """The factor (L, or U = L^T) of the matrix a's triangle stands for."""
    factor = _la.cholesky(_from_triangle(a, lower))
    return factor if lower else T(factor)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """a = U^T U (L L^T for lower), of the triangle of a scipy reads."""
    if not _traced(a):
        return _scipy().cholesky(a, lower=lower, overwrite_a=overwrite_a,
                                 check_finite=check_finite)
    a = _asarray(a)
    _square("cholesky", a)
    return _cholesky_factor(a, lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(c, lower) as scipy's: the factor in c's lower (upper) triangle, the
    other strict triangle a's own entries, as LAPACK leaves them."""
    if not _traced(a):
        return _scipy().cho_factor(a, lower=lower, overwrite_a=overwrite_a,
                                   check_finite=check_finite)
    a = _asarray(a)
    _square("cho_factor", a)
    other = 1.0 - _triangle(a.shape[-1], lower)
    return _cholesky_factor(a, lower) + a * other, lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """x with A x = b, from cho_factor's (c, lower): two triangular solves."""
    c, lower = c_and_lower
    if not _traced(c, b):
        return _scipy().cho_solve((c, lower), b, overwrite_b=overwrite_b,
                                  check_finite=check_finite)
    # A = L L^T, or U^T U
    first, second = (0, 1) if lower else (1, 0)
    y = solve_triangular(c, b, trans=first, lower=lower)
    return solve_triangular(c, y, trans=second, lower=lower)


# -- banded systems --------------------------------------------------------------------

def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False,
                 check_finite=True):
    """x with A x = b, A given by its diagonals ab (A[i, j] = ab[u + i - j,
    j]).  On Arrays the matrix is gathered from ab and solved densely
    (numpy.linalg.solve's entry): ab's entries outside the matrix, which
    scipy does not read, have a zero gradient."""
    if not _traced(ab, b):
        return _scipy().solve_banded(l_and_u, ab, b, overwrite_ab=overwrite_ab,
                                     overwrite_b=overwrite_b, check_finite=check_finite)
    nl, nu = (int(k) for k in l_and_u)
    ab = _asarray(ab)
    if ab.ndim != 2 or ab.shape[0] != nl + nu + 1:
        raise ValueError(f"scipy.linalg.solve_banded: invalid values for the number "
                         f"of lower and upper diagonals: l+u+1 ({nl + nu + 1}) does "
                         f"not equal ab.shape[0] ({ab.shape[0]})")
    m = ab.shape[1]
    i, j = np.indices((m, m))
    row = nu + i - j
    inside = (row >= 0) & (row <= nl + nu)
    # a row of zeros under ab for the entries outside the band
    padded = np.concatenate([ab, np.zeros((1, m))], axis=0)
    dense = padded[np.where(inside, row, nl + nu + 1), j]
    return _la.solve(dense, b)


# -- Sylvester equations and square roots ---------------------------------------------------

def solve_sylvester(a, b, q):
    """x with a x + x b = q.  The three operands are packed into one
    vector (an extern entry takes at most two), their cotangents
    unpacked from its."""
    if not _traced(a, b, q):
        return _scipy().solve_sylvester(a, b, q)
    a, b, q = (_asarray(x) for x in (a, b, q))
    if a.ndim != 2 or b.ndim != 2 or q.shape != (a.shape[0], b.shape[0]):
        raise ValueError("scipy.linalg.solve_sylvester: a (m, m), b (n, n) and "
                         "q (m, n) matrices are supported for Arrays")
    m, n = q.shape

    def unpack(p):
        return (p[:m * m].reshape(m, m), p[m * m:m * m + n * n].reshape(n, n),
                p[m * m + n * n:].reshape(m, n))

    def forward(p):
        return solve_sylvester(*unpack(p))

    def vjp(g, x, p):
        pa, pb, _ = unpack(p)
        gq = solve_sylvester(T(pa), T(pb), g)
        return np.concatenate([(-(gq @ T(x))).reshape(-1), (-(T(x) @ gq)).reshape(-1),
                               gq.reshape(-1)])

    def jvp(t, x, p):
        pa, pb, _ = unpack(p)
        ta, tb, tq = unpack(t)
        return solve_sylvester(pa, pb, tq - ta @ x - x @ tb)

    packed = np.concatenate([a.reshape(-1), b.reshape(-1), q.reshape(-1)])
    return _unary("scipy.linalg.solve_sylvester", forward, vjp, jvp, packed)


def _real_sqrtm(x, kwargs):
    root = _scipy().sqrtm(x, **kwargs)
    if np.iscomplexobj(root):
        if np.any(np.imag(root) != 0):
            raise TypeError("scipy.linalg.sqrtm: the square root is complex; an "
                            "Array holds real numbers (matrices with a real square "
                            "root only)")
        root = np.real(root)
    return root


def sqrtm(A, **kwargs):
    """The principal square root X (X X = A) of a matrix whose root is real;
    its derivatives solve Sylvester equations X dX + dX X = dA."""
    if not _traced(A):
        return _scipy().sqrtm(A, **kwargs)
    a = _asarray(A)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError("scipy.linalg.sqrtm: a square matrix is supported for Arrays")

    def forward(x):
        return sqrtm(x, **kwargs) if isinstance(x, Array) else _real_sqrtm(x, kwargs)

    return _unary("scipy.linalg.sqrtm", forward,
                  lambda g, x, _: solve_sylvester(T(x), T(x), g),
                  lambda t, x, _: solve_sylvester(x, x, t), a)


# -- numpy.linalg's names, with scipy's signatures ----------------------------------------

def _assumed(name, a, assume_a, lower):
    """The matrix scipy solves with under assume_a: the entries it reads."""
    n = a.shape[-1]
    if assume_a in _GENERAL:
        return a
    if assume_a in _SYMMETRIC:
        return _from_triangle(a, lower)
    if assume_a == "diagonal":
        return a * np.eye(n)
    if assume_a == "tridiagonal":
        return a * (np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1)
    if assume_a in ("lower triangular", "upper triangular"):
        return a * _triangle(n, assume_a.startswith("lower"))
    _unsupported(name, f"assume_a={assume_a!r}")


def inv(a, overwrite_a=False, check_finite=True, *, assume_a=None, lower=False):
    if not _traced(a):
        kwargs = {} if assume_a is None else {"assume_a": assume_a, "lower": lower}
        return _scipy().inv(a, overwrite_a=overwrite_a, check_finite=check_finite,
                            **kwargs)
    a = _asarray(a)
    _square("inv", a)
    return _la.inv(_assumed("inv", a, assume_a, lower))


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    """x with a x = b (a^T x = b for transposed), a read as assume_a says."""
    if not _traced(a, b):
        return _scipy().solve(a, b, lower=lower, overwrite_a=overwrite_a,
                              overwrite_b=overwrite_b, check_finite=check_finite,
                              assume_a=assume_a, transposed=transposed)
    a = _asarray(a)
    _square("solve", a)
    m = _assumed("solve", a, assume_a, lower)
    return _la.solve(T(m) if transposed else m, b)


def det(a, overwrite_a=False, check_finite=True):
    if not _traced(a):
        return _scipy().det(a, overwrite_a=overwrite_a, check_finite=check_finite)
    return _la.det(a)


def _plain_options(name, **options):
    """Refuse the options that change what is computed beyond numpy's."""
    for key, (value, default) in options.items():
        if (value is not None) if default is None else (value != default):
            _unsupported(name, f"{key}={value!r}")


def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False,
         overwrite_b=False, type=1, check_finite=True, subset_by_index=None,
         subset_by_value=None, driver=None):
    """The standard symmetric eigenproblem (b=None) of the triangle read."""
    if not _traced(a, b):
        return _scipy().eigh(a, b, lower=lower, eigvals_only=eigvals_only,
                             overwrite_a=overwrite_a, overwrite_b=overwrite_b, type=type,
                             check_finite=check_finite, subset_by_index=subset_by_index,
                             subset_by_value=subset_by_value, driver=driver)
    _plain_options("eigh", b=(b, None), type=(type, 1),
                   subset_by_index=(subset_by_index, None),
                   subset_by_value=(subset_by_value, None))
    w, v = _la.eigh(a, "L" if lower else "U")
    return w if eigvals_only else (w, v)


def eigvalsh(a, b=None, *, lower=True, overwrite_a=False, overwrite_b=False, type=1,
             check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    if not _traced(a, b):
        return _scipy().eigvalsh(a, b, lower=lower, overwrite_a=overwrite_a,
                                 overwrite_b=overwrite_b, type=type,
                                 check_finite=check_finite,
                                 subset_by_index=subset_by_index,
                                 subset_by_value=subset_by_value, driver=driver)
    return eigh(a, b, lower=lower, eigvals_only=True, type=type,
                subset_by_index=subset_by_index, subset_by_value=subset_by_value)


def eig(a, b=None, left=False, right=True, overwrite_a=False, overwrite_b=False,
        check_finite=True, homogeneous_eigvals=False):
    """Eigenvalues (real Arrays, where scipy's are complex numbers with zero
    imaginary parts) and unit right eigenvectors of a matrix whose
    eigenvalues are real."""
    if not _traced(a, b):
        return _scipy().eig(a, b, left=left, right=right, overwrite_a=overwrite_a,
                            overwrite_b=overwrite_b, check_finite=check_finite,
                            homogeneous_eigvals=homogeneous_eigvals)
    _plain_options("eig", b=(b, None), left=(left, False),
                   homogeneous_eigvals=(homogeneous_eigvals, False))
    try:
        w, v = _la.eig(a)
    except TypeError as exc:
        raise TypeError(str(exc).replace("numpy.linalg.eig", "scipy.linalg.eig")) from None
    return (w, v) if right else w


def eigvals(a, b=None, overwrite_a=False, check_finite=True, homogeneous_eigvals=False):
    if not _traced(a, b):
        return _scipy().eigvals(a, b, overwrite_a=overwrite_a, check_finite=check_finite,
                                homogeneous_eigvals=homogeneous_eigvals)
    return eig(a, b, right=False, homogeneous_eigvals=homogeneous_eigvals)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    if not _traced(a):
        return _scipy().svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                            overwrite_a=overwrite_a, check_finite=check_finite,
                            lapack_driver=lapack_driver)
    out = _la.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


def svdvals(a, overwrite_a=False, check_finite=True):
    if not _traced(a):
        return _scipy().svdvals(a, overwrite_a=overwrite_a, check_finite=check_finite)
    return _la.svd(a, compute_uv=False)


_QR_MODES = {"full": "complete", "economic": "reduced", "r": "r"}


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """q, r (mode 'full' where q is square, 'economic'), or (r,) for mode 'r'."""
    if not _traced(a):
        return _scipy().qr(a, overwrite_a=overwrite_a, lwork=lwork, mode=mode,
                           pivoting=pivoting, check_finite=check_finite)
    _plain_options("qr", pivoting=(pivoting, False))
    if mode not in _QR_MODES:
        _unsupported("qr", f"mode={mode!r}")
    a = _asarray(a)
    if mode == "full" and a.ndim >= 2 and a.shape[-2] > a.shape[-1]:
        _unsupported("qr", "mode='full' of a matrix with more rows than columns (the "
                     "extra columns of q are not unique, nor their derivative); "
                     "mode='economic'")
    out = _la.qr(a, _QR_MODES[mode])
    return (out,) if mode == "r" else tuple(out)


def pinv(a, *, atol=None, rtol=None, return_rank=False, check_finite=True):
    """The pseudo-inverse with scipy's default cutoff (rtol = max(M, N) eps)."""
    if not _traced(a):
        return _scipy().pinv(a, atol=atol, rtol=rtol, return_rank=return_rank,
                             check_finite=check_finite)
    _plain_options("pinv", atol=(atol, None), return_rank=(return_rank, False))
    a = _asarray(a)
    if rtol is None:
        rtol = max(a.shape[-2:]) * np.finfo(np.float64).eps
    return _la.pinv(a, rtol=rtol)


def norm(a, ord=None, axis=None, keepdims=False, check_finite=True):
    if not _traced(a):
        return _scipy().norm(a, ord=ord, axis=axis, keepdims=keepdims,
                             check_finite=check_finite)
    return _la.norm(a, ord, axis, keepdims)


__all__ = ["solve_triangular", "cholesky", "cho_factor", "cho_solve", "solve_banded",
           "solve_sylvester", "sqrtm", "inv", "solve", "det", "eigh", "eigvalsh", "eig",
           "eigvals", "svd", "svdvals", "qr", "pinv", "norm"]
