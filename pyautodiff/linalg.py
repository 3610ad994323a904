"""numpy.linalg on Arrays: each function NumPy (LAPACK) computes is one
extern entry per output (extern.py), batched over leading dimensions as
NumPy is; norm and matrix_power are composed of recorded ops.

Each rule is written once, with NumPy functions and operators: on plain
ndarrays (the C sweeps) they are NumPy's; on Arrays (a derivative inside
a derivative) they dispatch back here and record, so the rules
differentiate again.  The derivative conventions are HIPS autograd's:
eigh's gradient lives on the triangle it reads (UPLO), cholesky's is
symmetric, svd's that of the reduced factors.  The rules of eigh's
eigenvalues and svd's singular values are spectral.py's, which hold where
they coincide."""
import numpy as np

from . import spectral
from .array import Array, _asarray, _constant_result, _detached, normalize_axis_tuple
from .broadcasting import unbroadcast
from .extern import ExternRule, record_extern
from .extern_patterns import blockwise, by_columns, on_elements
from .tape_state import NO_GRAD, recording_tape
from .value import Value

la = np.linalg


def T(x):
    """The batched transpose: the last two dimensions swapped."""
    return x.swapaxes(-1, -2)


def _lifted(g):
    """A nested rule's cotangent as an Array (a Value, a scalar's, as a 0-d
    one) or an ndarray (a plain seed such as 1.0), so that NumPy's
    indexing and methods apply."""
    if isinstance(g, Array):
        return g
    return _asarray(g) if isinstance(g, Value) else np.asarray(g, dtype=np.float64)


class _Rule(ExternRule):
    """An extern rule whose vjp is written with NumPy functions, which
    record when given Arrays: the C second-order sweep (a recording's
    hessian) takes the tangent of the cotangents by differentiating the
    vjp in forward mode.  The output is recomputed by forward, which on
    Arrays is the traced function (NumPy's dispatches here)."""

    __slots__ = ()

    def cotangents(self, g, out, inputs, needs, into=None):
        # a scalar output's adjoint may come as a float: indexed as an array
        return self.vjp(np.asarray(g, dtype=np.float64), out, *inputs, needs=needs)

    def cotangent_tangents(self, g, dg, out, inputs, tangents, needs):
        from .functional import jvp     # (functional imports the package)
        first = self.cotangents(dg, out, inputs, needs)
        moving = [k for k, t in enumerate(tangents) if t is not None]
        if not moving:
            return first
        sizes = [np.size(inputs[k]) for k in moving]
        ends = np.cumsum([0] + sizes)

        def cotangents(p):
            xs = list(inputs)
            for k, lo, hi in zip(moving, ends[:-1], ends[1:]):
                xs[k] = p[lo:hi].reshape(np.shape(inputs[k]))
            cts = self.vjp(g, self.forward(*xs), *xs, needs=needs)
            return np.concatenate([(c if c is not None else np.zeros(np.shape(x)))
                                   .reshape(-1) for c, x in zip(cts, inputs)])

        point = np.concatenate([np.ravel(inputs[k]) for k in moving])
        direction = np.concatenate([np.ravel(tangents[k]) for k in moving])
        _, tangent = jvp(cotangents)(point, direction)
        ends = np.cumsum([0] + [np.size(x) for x in inputs])
        return [None if not need else
                (0.0 if f is None else f) + tangent[lo:hi].reshape(np.shape(x))
                for f, x, need, lo, hi in zip(first, inputs, needs, ends[:-1], ends[1:])]


class _SecondRule(_Rule):
    """A _Rule whose second-order step is a function of its own:
    second(g, dg, out, inputs, tangents, needs) -> the tangents of the
    cotangents (spectral.py's, which differentiating the vjp would not
    give where eigenvalues coincide)."""

    __slots__ = ("second",)

    def cotangent_tangents(self, g, dg, out, inputs, tangents, needs):
        return self.second(np.asarray(g, dtype=np.float64),
                           np.asarray(dg, dtype=np.float64), out, inputs, tangents, needs)


def _record(name, forward, vjp, jvp, operands, sparsity=None, nested_vjp=None,
            nested_jvp=None, second=None):
    """forward(*values) recorded as one extern entry of the operands, with
    rules vjp(g, out, *inputs, needs) and jvp(tangents, out, *inputs)
    that serve both the C sweeps and nested derivatives.  forward is
    written with NumPy's functions, so that on Arrays it records.
    sparsity: its Jacobian's pattern (extern_patterns), None for every
    output element on every operand element.  nested_vjp, nested_jvp:
    other rules for nested derivatives (on Arrays); second: the
    second-order step of _SecondRule."""
    ops = [_asarray(x) for x in operands]
    value = forward(*[x._d for x in ops])
    if recording_tape() is NO_GRAD:
        return _detached(value)
    inner_vjp = nested_vjp or vjp

    def lifted_vjp(g, out, *inputs, needs):
        return inner_vjp(_lifted(g), out, *inputs, needs=needs)

    nested = (lifted_vjp, nested_jvp or jvp)
    if second is None:
        rule = _Rule(forward, vjp, name, takes_needs=True, jvp=jvp, nested=nested,
                     sparsity=sparsity)
    else:
        rule = _SecondRule(forward, vjp, name, takes_needs=True, jvp=jvp, nested=nested,
                           sparsity=sparsity)
        rule.second = second
    return record_extern(rule, ops, value)


def _unary(name, forward, vjp, jvp, a, sparsity=None):
    """A one-operand entry: vjp(g, out, a) -> its cotangent, jvp(t, out, a)."""
    return _record(name, forward,
                   lambda g, out, x, needs: (vjp(g, out, x),),
                   lambda ts, out, x: jvp(ts[0], out, x), [a], sparsity)


def _spectral(E, forward, a, sparsity, plain_vjp, plain_jvp):
    """The entry of the eigenvalues (singular values) of E (spectral.py):
    its rules hold where they coincide.  plain_vjp(g, out, x) and
    plain_jvp(t, out, x): the recorded rules where none coincide."""
    def nested_vjp(g, out, x, needs):
        return (spectral.nested_cotangent(
            E, g, out, x, lambda g, x: plain_vjp(g, out, x), _record),)

    def nested_jvp(ts, out, x):
        return spectral.nested_tangent(E, ts[0], out, x,
                                       lambda t, x: plain_jvp(t, out, x))

    def second(g, dg, out, inputs, tangents, needs):
        return [spectral.second(E, g, dg, tangents[0], inputs[0])]

    def vjp(g, out, x, needs):
        return (spectral.cotangent(E, g, x, lambda g, x: plain_vjp(g, out, x)),)

    def jvp(ts, out, x):
        return spectral.tangent(E, ts[0], x, lambda t, x: plain_jvp(t, out, x))

    return _record(E.name, forward, vjp, jvp, [a], sparsity, nested_vjp=nested_vjp,
                   nested_jvp=nested_jvp, second=second)


def _stacked(out_core):
    """The pattern of a function of each matrix of a stack (the last two
    axes), whose results have out_core axes of their own: each on its
    own matrix only."""
    return blockwise(out_core, [2])


_MATRICES, _VECTORS, _SCALARS = _stacked(2), _stacked(1), _stacked(0)


_LAST = {}


def _decomposed(fn, traced, x, **kwargs):
    """fn(x) (eigh, eig, svd, qr) for the rules of its several outputs: on
    an Array, traced(x) (the function here: it records); on values,
    NumPy's fn, computed once for the outputs' entries that share it."""
    if isinstance(x, Array):
        return traced(x, **kwargs)
    key = (fn, tuple(sorted(kwargs.items())))
    last = _LAST.get(key)
    if last is not None and last[0].shape == x.shape and np.array_equal(last[0], x):
        return last[1]
    result = fn(x, **kwargs)
    _LAST[key] = (np.array(x), result)
    return result


def _square(name, a):
    if np.ndim(a._d) < 2 or a.shape[-1] != a.shape[-2]:
        raise la.LinAlgError(f"{name}: last 2 dimensions of the array must be square")


# -- inverses, solves and determinants ---------------------------------------------

def inv(a):
    return _unary("numpy.linalg.inv", la.inv,
                  lambda g, out, x: -(T(out) @ g @ T(out)),
                  lambda t, out, x: -(out @ t @ out), a, _MATRICES)


def solve(a, b):
    """x = a^-1 b; b is one vector only when it is 1-D (NumPy 2's rule),
    else a stack of matrices; either side broadcast."""
    vector = np.ndim(b._d if isinstance(b, (Array, Value)) else b) == 1

    def col(x):
        return x[..., None] if vector else x

    def uncol(x):
        return x[..., 0] if vector else x

    def vjp(g, out, x, y, needs):
        gy = la.solve(T(x), col(g))
        ga = unbroadcast(-(gy @ T(col(out))), x.shape) if needs[0] else None
        return ga, (unbroadcast(uncol(gy), y.shape) if needs[1] else None)

    def jvp(ts, out, x, y):
        ta, tb = ts
        rhs = col(tb) if tb is not None else 0.0
        if ta is not None:
            rhs = rhs - ta @ col(out)
        return uncol(la.solve(x, rhs))

    pattern = blockwise(1, [2, 1]) if vector else \
        blockwise(2, [2, 2], [None, by_columns])
    return _record("numpy.linalg.solve", la.solve, vjp, jvp, [a, b], pattern)


def _trace_with_inverse(x, t):
    """trace(x^-1 t), batched."""
    return np.sum(T(la.inv(x)) * t, axis=(-1, -2))


def det(a):
    return _unary("numpy.linalg.det", la.det,
                  lambda g, out, x: (g * out)[..., None, None] * T(la.inv(x)),
                  lambda t, out, x: out * _trace_with_inverse(x, t), a, _SCALARS)


_SLOGDET = type(la.slogdet(np.eye(1)))


def _logabsdet(a):
    return _unary("numpy.linalg.slogdet", lambda x: la.slogdet(x)[1],
                  lambda g, out, x: g[..., None, None] * T(la.inv(x)),
                  lambda t, out, x: _trace_with_inverse(x, t), a, _SCALARS)


def slogdet(a):
    """(sign, log|det|): the sign is piecewise constant, no derivative."""
    a = _asarray(a)
    return _SLOGDET(_constant_result(la.slogdet(a._d)[0]), _logabsdet(a))


def pinv(a, rcond=None, hermitian=False, **kwargs):
    """The pseudo-inverse; its derivative is that of a matrix of constant
    rank (Golub and Pereyra's formula)."""
    options = dict(kwargs, hermitian=hermitian)
    if rcond is not None:
        options["rcond"] = rcond

    def forward(x):
        return la.pinv(x, **options)

    def vjp(g, p, x):
        m, n = x.shape[-2:]
        left = np.eye(m) - x @ p          # I - A A+
        right = np.eye(n) - p @ x         # I - A+ A
        return -(T(p) @ g @ T(p)) + left @ T(g) @ p @ T(p) + T(p) @ p @ T(g) @ right

    def jvp(t, p, x):
        m, n = x.shape[-2:]
        left = np.eye(m) - x @ p
        right = np.eye(n) - p @ x
        return -(p @ t @ p) + p @ T(p) @ T(t) @ left + right @ T(t) @ T(p) @ p

    return _unary("numpy.linalg.pinv", forward, vjp, jvp, a, _MATRICES)


# -- factorizations -------------------------------------------------------------

def _half_lower(x):
    """The lower triangle with its diagonal halved (Murray's Phi)."""
    n = x.shape[-1]
    return x * (np.tril(np.ones((n, n))) - 0.5 * np.eye(n))


def cholesky(a, upper=False):
    """a = L L^T.  The gradient is symmetric (autograd's): the derivative
    with respect to a symmetric a, of which cholesky reads one triangle."""
    def lower(out):
        return T(out) if upper else out

    def vjp(g, out, x):
        L = lower(out)
        # S = L^-T Phi(L^T gL) L^-1
        s = _half_lower(T(L) @ lower(g))
        s = la.solve(T(L), T(la.solve(T(L), T(s))))
        return 0.5 * (s + T(s))

    def jvp(t, out, x):
        L = lower(out)
        sym = 0.5 * (t + T(t))
        # L Phi(L^-1 sym L^-T)
        inner = T(la.solve(L, T(la.solve(L, sym))))
        dl = L @ _half_lower(inner)
        return T(dl) if upper else dl

    return _unary("numpy.linalg.cholesky", lambda x: la.cholesky(x, upper=upper),
                  vjp, jvp, a, _MATRICES)


def _gaps(w, squared=False):
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it (with
    squared, of w_j^2 - w_i^2); NaN where w_i and w_j coincide (to
    rounding, spectral.coinciding): the eigenvectors' derivatives do not
    exist there (1 / 0, or 1 / rounding errors)."""
    n = w.shape[-1]
    tied = (spectral.coinciding(w._d if isinstance(w, Array) else w) &
            ~np.eye(n, dtype=bool)).astype(np.float64)
    if squared:
        w = w * w
    off = 1.0 - np.eye(n) - tied
    return off / (w[..., None, :] - w[..., :, None] + np.eye(n) + tied) + \
        np.where(tied > 0, np.nan, 0.0)


_EIGH = type(la.eigh(np.eye(1)))


def eigh(a, UPLO="L"):
    """Eigenvalues and eigenvectors of a real symmetric matrix, of which
    NumPy reads the UPLO triangle: the gradient lives on that triangle."""
    if UPLO not in ("L", "U"):
        raise ValueError("numpy.linalg.eigh: UPLO argument must be 'L' or 'U'")
    a = _asarray(a)
    _square("numpy.linalg.eigh", a)
    n = a.shape[-1]

    def parts(x):
        return _decomposed(la.eigh, eigh, x, UPLO=UPLO)

    values = spectral.Symmetric("numpy.linalg.eigh", n, UPLO, parts)
    # the symmetric matrix the triangle read of t stands for, and the
    # gradient on that triangle (its adjoint)
    full, read = values.lift, values.project
    # its results on the triangle read only
    triangle = [on_elements(values.strict + np.eye(n))]

    def w_vjp(g, out, x):
        v = parts(x)[1]
        return read((v * g[..., None, :]) @ T(v))

    def w_jvp(t, out, x):
        v = parts(x)[1]
        return np.sum(v * (full(t) @ v), axis=-2)

    def v_vjp(g, out, x):
        w, v = parts(x)
        return read(v @ (_gaps(w) * (T(v) @ g)) @ T(v))

    def v_jvp(t, out, x):
        w, v = parts(x)
        return v @ (_gaps(w) * (T(v) @ full(t) @ v))

    return _EIGH(_spectral(values, lambda x: parts(x)[0], a, blockwise(1, [2], triangle),
                           w_vjp, w_jvp),
                 _unary("numpy.linalg.eigh", lambda x: parts(x)[1],
                        v_vjp, v_jvp, a, blockwise(2, [2], triangle)))


def eigvalsh(a, UPLO="L"):
    return eigh(a, UPLO)[0]


_EIG = type(la.eig(np.eye(1)))


def _real_eig(x):
    w, v = la.eig(x)
    if np.iscomplexobj(w) or np.iscomplexobj(v):
        raise TypeError("numpy.linalg.eig: the matrix has complex eigenvalues; "
                        "an Array holds real numbers (only matrices with real "
                        "eigenvalues are supported)")
    return w, v


def eig(a):
    """Eigenvalues and unit eigenvectors of a matrix whose eigenvalues are
    real (complex ones raise TypeError).  Where eigenvalues coincide, the
    gradient splits their share evenly (as eigh's); where the matrix is
    defective there (its eigenvectors do not span), no rule holds: NaN."""
    a = _asarray(a)
    _square("numpy.linalg.eig", a)
    n = a.shape[-1]

    def parts(x):
        return _decomposed(_real_eig, eig, x)

    def checked(x):
        """Where the eigenvalues of x coincide, and a NaN for each matrix of
        the stack that is defective (0.0 for the others), on values."""
        w, u = parts(x._d if isinstance(x, Array) else x)
        tied = spectral.coinciding(w, n)
        return tied, np.where(spectral.defective(u, tied), np.nan, 0.0)

    def w_vjp(g, out, x):
        u = parts(x)[1]
        tied, bad = checked(x)
        g = spectral.cluster_mean(tied, g)
        return la.solve(T(u), g[..., :, None] * T(u)) + bad[..., None, None]

    def w_jvp(t, out, x):
        u = parts(x)[1]
        tied, bad = checked(x)
        t = np.sum(T(la.solve(u, t @ u)) * np.eye(n), axis=-1)
        return spectral.cluster_mean(tied, t) + bad[..., None]

    def v_vjp(g, out, x):
        w, u = parts(x)
        f = _gaps(w)
        ut = T(u)
        c = ut @ g
        # the unit norm of each eigenvector: its component along itself
        r = f * c - f * ((ut @ u) @ (c * np.eye(n)))
        return la.solve(ut, r @ ut) + checked(x)[1][..., None, None]

    def v_jvp(t, out, x):
        w, u = parts(x)
        m = u @ (_gaps(w) * la.solve(u, t @ u))
        return m - u * np.sum(u * m, axis=-2)[..., None, :] + checked(x)[1][..., None, None]

    return _EIG(_unary("numpy.linalg.eig", lambda x: parts(x)[0], w_vjp, w_jvp, a,
                       _VECTORS),
                _unary("numpy.linalg.eig", lambda x: parts(x)[1], v_vjp, v_jvp, a,
                       _MATRICES))


def eigvals(a):
    return eig(a)[0]


_SVD = type(la.svd(np.eye(1)))


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """The singular value decomposition.  The derivatives of u and vh are
    those of the reduced factors: with full_matrices on a matrix that is
    not square, the extra columns are not unique, and a gradient through
    them raises."""
    a = _asarray(a)
    if np.ndim(a._d) < 2:
        raise la.LinAlgError(f"numpy.linalg.svd: {np.ndim(a._d)}-dimensional array "
                             "given. Array must be at least two-dimensional")
    m, n = a.shape[-2:]

    def parts(x):
        """The factors of the output's derivatives: those the forward
        computes (signs and all), reduced for the singular values'."""
        return _decomposed(la.svd, svd, x, full_matrices=full_matrices and m == n,
                           hermitian=hermitian)

    def s_vjp(g, out, x):
        u, _, vt = parts(x)
        return (u * g[..., None, :]) @ vt

    def s_jvp(t, out, x):
        u, _, vt = parts(x)
        return np.sum(u * (t @ T(vt)), axis=-2)

    def complete(x):
        """All of u's (vh's) columns, on values: those beyond the reduced
        factors stand for the |m-n| zero eigenvalues (spectral.Singular)."""
        return _decomposed(la.svd, svd, x, full_matrices=True, hermitian=hermitian)

    values = spectral.Singular("numpy.linalg.svd", m, n, parts, complete)
    s_entry = _spectral(values, lambda x: la.svd(x, compute_uv=False, hermitian=hermitian),
                        a, _VECTORS, s_vjp, s_jvp)
    if not compute_uv:
        return s_entry

    def reduced(what):
        if full_matrices and m != n:
            raise NotImplementedError(
                f"numpy.linalg.svd: the derivative of {what} with "
                "full_matrices=True of a matrix that is not square (its extra "
                "columns are not unique); use full_matrices=False")

    def u_vjp(g, out, x):
        reduced("u")
        u, s, vt = parts(x)
        c = T(u) @ g
        inner = (_gaps(s, True) * (c - T(c))) * s[..., None, :]
        gx = u @ inner @ vt
        if m > n:
            gx = gx + ((g - u @ c) / s[..., None, :]) @ vt
        return gx

    def u_jvp(t, out, x):
        reduced("u")
        u, s, vt = parts(x)
        p = T(u) @ t @ T(vt)
        du = u @ (_gaps(s, True) * (p * s[..., None, :] + s[..., :, None] * T(p)))
        if m > n:
            du = du + (t @ T(vt) - u @ p) / s[..., None, :]
        return du

    def vt_vjp(g, out, x):
        reduced("vh")
        u, s, vt = parts(x)
        c = vt @ T(g)             # v^T gv, with gv = g^T
        inner = s[..., :, None] * (_gaps(s, True) * (c - T(c)))
        gx = u @ inner @ vt
        if m < n:
            gx = gx + (u / s[..., None, :]) @ (g - (g @ T(vt)) @ vt)
        return gx

    def vt_jvp(t, out, x):
        reduced("vh")
        u, s, vt = parts(x)
        p = T(u) @ t @ T(vt)
        dv = T(vt) @ (_gaps(s, True) * (s[..., :, None] * p + T(p) * s[..., None, :]))
        if m < n:
            dv = dv + (T(t) @ u - T(vt) @ T(p)) / s[..., None, :]
        return T(dv)

    def factor(k):
        if full_matrices and m != n:
            return lambda x: la.svd(x, hermitian=hermitian)[k]
        return lambda x: parts(x)[k]

    return _SVD(_unary("numpy.linalg.svd", factor(0), u_vjp, u_jvp, a, _MATRICES),
                s_entry,
                _unary("numpy.linalg.svd", factor(2), vt_vjp, vt_jvp, a, _MATRICES))


def svdvals(a):
    return svd(a, compute_uv=False)


_QR = type(la.qr(np.eye(1)))


def _copyltu(m):
    """The lower triangle copied onto the upper one."""
    n = m.shape[-1]
    return m * np.tril(np.ones((n, n))) + T(m * np.tril(np.ones((n, n)), -1))


def _qr_tall_vjp(q, r, gq, gr):
    """The cotangent of a = q r for a with at least as many rows as
    columns (r square, invertible); gq or gr None for none."""
    if gr is None:
        m = -(T(gq) @ q)
    else:
        m = r @ T(gr) if gq is None else r @ T(gr) - T(gq) @ q
    top = q @ _copyltu(m) if gq is None else gq + q @ _copyltu(m)
    return T(la.solve(r, T(top)))          # top r^-T


def _qr_tall_jvp(q, r, t):
    """The tangents of q and r (a = q r, r square)."""
    n = r.shape[-1]
    tr = T(la.solve(T(r), T(t)))           # t r^-1
    c = T(q) @ tr
    low = c * np.tril(np.ones((n, n)), -1)
    omega = low - T(low)
    return q @ omega + (tr - q @ c), (c - omega) @ r


def qr(a, mode="reduced"):
    """a = q r, mode 'reduced', 'complete' (where q is square: no more rows
    than columns) or 'r'; the derivative needs the leading square block
    of a to have full rank."""
    a = _asarray(a)
    if mode not in ("reduced", "complete", "r"):
        raise NotImplementedError(f"numpy.linalg.qr: mode={mode!r} is not "
                                  "supported for Arrays ('reduced', 'complete', 'r')")
    if np.ndim(a._d) < 2:
        raise la.LinAlgError("numpy.linalg.qr: array must be at least two-dimensional")
    m, n = a.shape[-2:]
    if mode == "complete" and m > n:
        raise NotImplementedError(
            "numpy.linalg.qr: mode='complete' of a matrix with more rows than "
            "columns (the extra columns of q are not unique, so neither is "
            "their derivative); use mode='reduced'")

    def parts(x):
        return _decomposed(la.qr, qr, x)

    def cotangent(x, gq, gr):
        q, r = parts(x)
        if m >= n:
            return _qr_tall_vjp(q, r, gq, gr)
        # a = [x1 x2] with x1 square: x1 = q r1, x2 = q r2
        r1, x2 = r[..., :m], x[..., m:]
        if gr is None:
            return np.concatenate([_qr_tall_vjp(q, r1, gq, None),
                                   np.zeros(x2.shape)], axis=-1)
        gr1, gr2 = gr[..., :m], gr[..., m:]
        gq = x2 @ T(gr2) if gq is None else gq + x2 @ T(gr2)
        return np.concatenate([_qr_tall_vjp(q, r1, gq, gr1), q @ gr2], axis=-1)

    def tangents(x, t):
        q, r = parts(x)
        if m >= n:
            return _qr_tall_jvp(q, r, t)
        r1, r2 = r[..., :m], r[..., m:]
        dq, dr1 = _qr_tall_jvp(q, r1, t[..., :m])
        dr2 = T(q) @ (t[..., m:] - dq @ r2)
        return dq, np.concatenate([dr1, dr2], axis=-1)

    r_entry = _unary("numpy.linalg.qr", lambda x: parts(x)[1],
                     lambda g, out, x: cotangent(x, None, g),
                     lambda t, out, x: tangents(x, t)[1], a, _MATRICES)
    if mode == "r":
        return r_entry
    return _QR(_unary("numpy.linalg.qr", lambda x: parts(x)[0],
                      lambda g, out, x: cotangent(x, g, None),
                      lambda t, out, x: tangents(x, t)[0], a, _MATRICES), r_entry)


# -- composed: norms and powers -------------------------------------------------

_VECTOR_ORDS = (None, 2, 1, np.inf, -np.inf, 0)
_MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)


def _vector_norm(x, ord, axis, keepdims):
    if ord is None or ord == 2:
        return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"numpy.linalg.norm: invalid norm order {ord!r} for vectors")
    if ord == np.inf:
        return np.max(abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:            # a count of the nonzero elements: no derivative
        return _constant_result(np.sum(x._d != 0, axis=axis, keepdims=keepdims)
                                .astype(np.float64))
    if ord == 1:
        return np.sum(abs(x), axis=axis, keepdims=keepdims)
    return np.sum(abs(x) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _matrix_norm(x, ord, axes, keepdims):
    row, col = axes
    if ord in (None, "fro"):
        return np.sqrt(np.sum(x * x, axis=axes, keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        # max/min over one axis of the sums of |x| over the other
        inner, outer = (row, col) if ord in (1, -1) else (col, row)
        sums = np.sum(abs(x), axis=inner, keepdims=True)
        out = (np.max if ord > 0 else np.min)(sums, axis=outer, keepdims=True)
        return out if keepdims else np.squeeze(out, axis=axes)
    if ord in (2, -2, "nuc"):
        perm = [k for k in range(x.ndim) if k not in axes] + [row, col]
        s = svd(x.transpose(tuple(perm)), compute_uv=False)
        out = np.sum(s, axis=-1) if ord == "nuc" else \
            (np.max if ord == 2 else np.min)(s, axis=-1)
        if keepdims:
            out = out.reshape(tuple(1 if k in axes else d for k, d in enumerate(x.shape)))
        return out
    raise ValueError(f"numpy.linalg.norm: invalid norm order {ord!r} for matrices")


def norm(x, ord=None, axis=None, keepdims=False):
    """NumPy's vector and matrix norms of real Arrays, every ord and axis
    NumPy takes, composed of recorded ops (2-norms, max and min of sums,
    singular values)."""
    x = _asarray(x)
    if axis is None:
        if ord is None:
            out = np.sqrt(np.sum(x * x))
            return out.reshape((1,) * x.ndim) if keepdims else out
        if x.ndim == 1:
            axis = (0,)
        elif x.ndim == 2:
            axis = (0, 1)
        else:
            raise ValueError("numpy.linalg.norm: improper number of dimensions to norm")
    axes = normalize_axis_tuple(axis, x.ndim)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2:
        if axes[0] == axes[1]:
            raise ValueError("numpy.linalg.norm: duplicate axes given")
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError("numpy.linalg.norm: improper number of dimensions to norm")


def matrix_power(a, n):
    """a to the integer power n by repeated squaring (a^-1 for n < 0): a
    composition of matrix products, as NumPy computes it."""
    a = _asarray(a)
    if not isinstance(n, (int, np.integer)):
        raise TypeError("numpy.linalg.matrix_power: exponent must be an integer")
    _square("numpy.linalg.matrix_power", a)
    if n == 0:
        return _constant_result(np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy())
    if n < 0:
        a, n = inv(a), -n
    result = None
    while n:
        if n & 1:
            result = a if result is None else result @ a
        n >>= 1
        if n:
            a = a @ a
    return result


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """NumPy 2's vector_norm: over every element for axis=None."""
    x = _asarray(x)
    if axis is None:
        out = _vector_norm(x.reshape(-1), ord, 0, False)
        return out.reshape((1,) * x.ndim) if keepdims else out
    axes = normalize_axis_tuple(axis, x.ndim)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    # several axes: moved to the end and flattened into one
    rest = [k for k in range(x.ndim) if k not in axes]
    flat = x.transpose(tuple(rest + list(axes))).reshape(
        tuple(x.shape[k] for k in rest) + (-1,))
    out = _vector_norm(flat, ord, -1, False)
    if keepdims:
        out = out.reshape(tuple(1 if k in axes else n for k, n in enumerate(x.shape)))
    return out


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """NumPy 2's matrix_norm: over the last two dimensions."""
    return norm(x, ord, (-2, -1), keepdims)


def multi_dot(arrays, *, out=None):
    """The chained matrix product (a first 1-D array a row, a last one a
    column, as NumPy's)."""
    if out is not None:
        raise TypeError("numpy.linalg.multi_dot: out= is not supported for Arrays")
    if len(arrays) < 2:
        raise ValueError("numpy.linalg.multi_dot: expecting at least two arrays")
    result = arrays[0]
    for a in arrays[1:]:
        result = result @ _asarray(a) if isinstance(result, Array) else _asarray(result) @ a
    return result


NUMPY_FUNCTIONS = {
    la.inv: inv, la.solve: solve, la.det: det, la.slogdet: slogdet,
    la.pinv: pinv, la.cholesky: cholesky, la.eigh: eigh, la.eigvalsh: eigvalsh,
    la.eig: eig, la.eigvals: eigvals, la.svd: svd, la.qr: qr, la.norm: norm,
    la.matrix_power: matrix_power, la.svdvals: svdvals, la.vector_norm: vector_norm,
    la.matrix_norm: matrix_norm, la.multi_dot: multi_dot,
}
