"""The derivatives of eigh's eigenvalues and svd's singular values that
hold where some of them coincide.

A function of the eigenvalues w of a symmetric A, F(A) = phi(w) with phi
symmetric, has the gradient W diag(g) W^T (g = grad phi(w), W the
eigenvectors).  Where eigenvalues coincide W is not unique, but g is
equal on each group of coinciding ones (a cluster), so the gradient is
sum_c g_c P_c, P_c the cluster's spectral projector: it is smooth there.
(A function that tells coinciding eigenvalues apart has no gradient: the
rules split their share evenly, the mean of g over the cluster, as
np.max does with ties.)  Its derivative along E, with M = W^T E W, is
(Daleckii-Krein; Lewis and Sendov)

    W (diag(dg) + K o M) W^T,   K_ij = (g_i - g_j) / (w_i - w_j),

the divided difference K_ij taken to its limit phi_ii - phi_ij (f'' for
phi = sum f) where w_i = w_j.  Differentiating W diag(g) W^T through the
eigenvectors' rules gives 0/0 there instead.  The limit is a derivative
of g along the eigenvalues, which the rules here get in two ways:

- the C second-order sweep takes one direction E at a time: within each
  cluster it turns the eigenbasis to the eigenvectors of E compressed to
  the cluster (``adapted``), where M has no element between coinciding
  eigenvalues and K's limit is not needed.  The eigenvalues' tangents
  there are their one-sided derivatives (those of the eigenvalues of A +
  eE as e -> 0+), which dg then holds, limit and all;
- a derivative that is recorded (nested, derivatives.py) records the
  gradient as one op of A and (g, gamma), ``spectral_map``: the smooth
  sum_c mean_c(g) P_c + gamma_c (P_c A P_c - tr(P_c A) P_c / k_c), whose
  value is the gradient and whose derivative is the one above, gamma_c
  the limit, which a tangent sweep of the recording from the eigenvalues
  to g gives (``_limits``).

The rules' own derivatives (a third order) and the derivatives of the
eigenvalues' tangents go through the eigenvectors' rules, which are NaN
where eigenvalues coincide: not available there, rather than wrong.

The singular values of an m x n matrix are the nonnegative eigenvalues of
[[0, A], [A^T, 0]], which has +-s and |m-n| zeros (``Singular``): the same
rules give theirs, a zero singular value coinciding with its negative.
Eigenvalues coincide when they agree to rounding (``coinciding``).
"""
import numpy as np

from . import derivatives
from .array import Array, concatenate
from .guards import decide, takes_guards

la = np.linalg

# LAPACK's eigenvalues and singular values are within a small multiple of
# eps times the dimension times the largest of them of the exact ones:
# two that are closer than that are the same number.
_ROUNDING = 8 * np.finfo(np.float64).eps
# eigenvectors whose matrix has a singular value below this have lost
# half their digits to dependence (a Jordan block: see defective)
_DEPENDENT = np.sqrt(np.finfo(np.float64).eps)


def T(x):
    return x.swapaxes(-1, -2)


def _values(x):
    return x._d if isinstance(x, Array) else np.asarray(x, dtype=np.float64)


def _joined(parts, axis):
    """np.concatenate of ndarrays and Arrays."""
    if any(isinstance(p, Array) for p in parts):
        return concatenate([p if isinstance(p, Array) else Array(p, _variable=False)
                            for p in parts], axis=axis)
    return np.concatenate(parts, axis=axis)


def _diag(v):
    return v[..., :, None] * np.eye(v.shape[-1])


def _diagonal(m):
    return np.sum(m * np.eye(m.shape[-1]), axis=-1)


# -- clusters of coinciding eigenvalues -------------------------------------------

def coinciding(lam, size=None):
    """C[..., i, j]: whether lam_i and lam_j (values, in any order) agree to
    rounding, size being the dimension it scales with; chained, so that C
    is an equivalence (its classes: the clusters)."""
    lam = _values(lam)
    n = lam.shape[-1]
    if n == 0:
        return np.zeros(lam.shape + (0,), dtype=bool)
    order = np.argsort(lam, axis=-1)
    ascending = np.take_along_axis(lam, order, axis=-1)
    tol = _ROUNDING * (size or n) * np.max(np.abs(lam), axis=-1, keepdims=True)
    breaks = np.diff(ascending, axis=-1) > tol
    first = np.zeros(lam.shape[:-1] + (1,), dtype=np.int64)
    sorted_labels = np.concatenate([first, np.cumsum(breaks, axis=-1)], axis=-1)
    labels = np.empty_like(sorted_labels)
    np.put_along_axis(labels, order, sorted_labels, axis=-1)
    return labels[..., :, None] == labels[..., None, :]


def groups(C):
    """The clusters of two or more, [(index in the stack, members), ...]."""
    out = []
    n = C.shape[-1]
    tied = np.any(C & ~np.eye(n, dtype=bool), axis=(-2, -1))
    for index in zip(*np.nonzero(tied)) if tied.ndim else ([()] if tied else []):
        seen = np.zeros(n, dtype=bool)
        for i in range(n):
            if not seen[i]:
                members = np.flatnonzero(C[index][i])
                seen[members] = True
                if len(members) > 1:
                    out.append((index, members))
    return out


def cluster_mean(C, v):
    """v's mean over each cluster, at each of its members (values or an
    Array; C / k is symmetric, so this is its own adjoint)."""
    return (C / np.sum(C, axis=-1, keepdims=True) @ v[..., None])[..., 0]


def defective(u, C):
    """Per matrix of the stack: whether the unit eigenvectors u of a
    cluster are dependent (their least singular value below sqrt(eps)),
    as at a Jordan block: there the eigenvalues have no derivatives, and
    rules built on the eigenvectors give wrong numbers."""
    bad = np.zeros(C.shape[:-2], dtype=bool)
    for index, members in groups(C):
        bad[index] |= la.svd(u[index][:, members], compute_uv=False)[-1] < _DEPENDENT
    return bad


def divided(g, lam, C):
    """(g_i - g_j) / (lam_i - lam_j) between clusters, 0 within them (g
    and lam constant on each cluster: means)."""
    tied = C.astype(np.float64)
    return (g[..., :, None] - g[..., None, :]) / \
        (lam[..., :, None] - lam[..., None, :] + tied) * (1.0 - tied)


def adapted(M, C):
    """The rotation U, block diagonal on the clusters, that makes the
    symmetric M diagonal within each: the eigenvectors of its compressed
    blocks, ascending (the identity on a lone eigenvalue)."""
    U = np.broadcast_to(np.eye(M.shape[-1]), M.shape).copy()
    for index, members in groups(C):
        block = np.ix_(members, members)
        U[index][block] = la.eigh(M[index][block])[1]
    return U


# -- whose eigenvalues: the spectra the rules take ---------------------------------
# A spectrum E names the symmetric matrix whose eigenvalues lam (ascending)
# and eigenvectors W the rules use, as functions of the operand x:
# decompose(x) -> (lam, W, clusters), coincide(values) (whether any
# eigenvalues that matter coincide), lift(t) (x's tangent to that
# matrix's), project (lift's adjoint: to x's cotangent), embed (the
# output's cotangent to lam's; embed_adjoint its adjoint), extract (lam's
# tangent to the output's), slope_plan (how to take the limits) and
# pattern (coincide's comparisons, for a guard).

class Symmetric:
    """eigh's: the symmetric matrix whose UPLO triangle (of x) NumPy reads."""

    def __init__(self, name, n, UPLO, decompose):
        self.name, self.n, self.size = name, n, n
        self.strict = np.tril(np.ones((n, n)), -1) if UPLO == "L" else \
            np.triu(np.ones((n, n)), 1)
        self._decompose = decompose     # x -> (w, v), traced for an Array

    def coincide(self, x):
        """Whether any eigenvalues of x (values) coincide."""
        return self.n > 1 and not np.all(self.pattern(self._decompose(x)[0]))

    def decompose(self, x):
        w, v = self._decompose(x)
        return w, v, coinciding(_values(w), self.size)

    def lift(self, t):
        """The symmetric matrix that the triangle read of t stands for."""
        part = t * self.strict
        return t * np.eye(self.n) + part + T(part)

    def project(self, m):
        """The gradient on the triangle read."""
        return m * np.eye(self.n) + (m + T(m)) * self.strict

    def embed(self, g):
        return g

    embed_adjoint = extract = embed

    def slope_plan(self, C):
        """(d, R): along d, g's tangent dg gives the limits, R dg: along e_a
        - e_b for two members a, b of each cluster, (dg_a - dg_b) / 2 =
        phi_aa - phi_ab (phi symmetric: at coinciding w_a = w_b)."""
        d = np.zeros(C.shape[:-1])
        R = np.zeros(C.shape)
        for index, members in groups(C):
            a, b = members[:2]
            d[index + (a,)], d[index + (b,)] = 1.0, -1.0
            R[index + (members, a)], R[index + (members, b)] = 0.5, -0.5
        return d, R

    def pattern(self, w):
        """Which neighbours (of w, ascending) are apart: coinciding's test,
        on values or as recorded comparisons of an Array."""
        tol = _ROUNDING * self.size * np.max(np.abs(w), axis=-1, keepdims=True)
        return (w[..., 1:] - w[..., :-1]) > tol


class Singular:
    """svd's: the singular values s (descending) of the m x n x are the
    eigenvalues -s_1 ... -s_k, |m-n| zeros, s_k ... s_1 of [[0, x], [x^T,
    0]], whose eigenvectors are (u_i, -v_i)/sqrt(2), (u_perp, 0) or (0,
    v_perp), and (u_i, v_i)/sqrt(2).  A zero singular value coincides
    with its negative (and with the |m-n| zeros)."""

    def __init__(self, name, m, n, reduced, full):
        self.name, self.m, self.n = name, m, n
        self.k, self.e = min(m, n), abs(m - n)
        self.size = m + n
        # reduced(x): (u, s, vt) of k columns (rows), traced for an Array;
        # full(values): all m columns of u and n rows of vt
        self._reduced, self._full = reduced, full

    def _eigenvalues(self, s):
        batch = np.shape(_values(s))[:-1]
        return _joined([-s, np.zeros(batch + (self.e,)), s[..., ::-1]], -1)

    def coincide(self, x):
        """Whether singular values of x (values) coincide or are zero (the
        |m-n| zeros coinciding among themselves stand for none)."""
        apart, nonzero = self.pattern(self._reduced(x)[1])
        return self.k > 0 and not (np.all(apart) and np.all(nonzero))

    def decompose(self, x):
        u, s, vt = self._reduced(x)
        v, half = T(vt), np.sqrt(0.5)
        parts = [_joined([u * half, -v * half], -2)]
        if self.e:
            parts.append(self._complement(x, np.shape(_values(s))[:-1]))
        parts.append(_joined([u * half, v * half], -2)[..., ::-1])
        lam = self._eigenvalues(s)
        return lam, _joined(parts, -1), coinciding(_values(lam), self.size)

    def _complement(self, x, batch):
        """The eigenvectors of the |m-n| zeros: (u_perp, 0) or (0, v_perp),
        the full u's (vt's) columns (rows) beyond the reduced ones, as
        constants: they are not unique, and they stand for no singular
        value (their g is 0)."""
        m, n, k = self.m, self.n, self.k
        u, _, vt = self._full(_values(x))
        if m > n:
            return np.concatenate([u[..., k:], np.zeros(batch + (n, m - n))], axis=-2)
        return np.concatenate([np.zeros(batch + (m, n - m)), T(vt)[..., k:]], axis=-2)

    def lift(self, t):
        m, n = self.m, self.n
        batch = np.shape(_values(t))[:-2]
        return _joined([_joined([np.zeros(batch + (m, m)), t], -1),
                        _joined([T(t), np.zeros(batch + (n, n))], -1)], -2)

    def project(self, b):
        return 2.0 * b[..., :self.m, self.m:]

    def embed(self, g):
        """Half of g on +s, minus half on -s (s_i = (lam_+ - lam_-) / 2)."""
        zeros = np.zeros(np.shape(_values(g))[:-1] + (self.e,))
        return _joined([-0.5 * g, zeros, 0.5 * g[..., ::-1]], -1)

    def embed_adjoint(self, h):
        k, e = self.k, self.e
        return 0.5 * (h[..., k + e:][..., ::-1] - h[..., :k])

    def extract(self, t):
        """The tangents of +s."""
        return t[..., self.k + self.e:][..., ::-1]

    def _singular(self, p):
        """The singular value at eigenvalue position p and its sign (+1 or
        -1; None for one of the |m-n| zeros)."""
        if p < self.k:
            return p, -1
        if p >= self.k + self.e:
            return self.size - 1 - p, 1
        return None, 0

    def slope_plan(self, C):
        """(d, R) in singular value space: a cluster of equal nonzero s_a =
        s_b (or its mirror at -s) takes (dg_a - dg_b) / 4 along e_a - e_b
        (eigh's, of half of g); one at zero, where +s_j meets -s_j, dg_j / 2
        along e_j (g_j is odd in s_j: the limit is half its slope)."""
        d = np.zeros(C.shape[:-2] + (self.k,))
        R = np.zeros(C.shape[:-1] + (self.k,))
        for index, members in groups(C):
            signs = {}
            for p in members:
                i, sign = self._singular(p)
                if i is not None:
                    signs.setdefault(i, set()).add(sign)
            if not signs:
                continue                    # the |m-n| zeros alone
            first = min(signs)
            if len(signs[first]) == 2:      # at zero
                d[index + (first,)] = 1.0
                R[index + (members, first)] = 0.5
            else:
                a, b = sorted(signs)[:2]
                d[index + (a,)], d[index + (b,)] = 1.0, -1.0
                R[index + (members, a)], R[index + (members, b)] = 0.25, -0.25
        return d, R

    def pattern(self, s):
        """Which neighbours (of s, descending) are apart and which are not
        zero: coinciding's test on the eigenvalues (the smallest s meets -s
        across 2 s, or the |m-n| zeros across s), on values or as recorded
        comparisons of an Array."""
        tol = _ROUNDING * self.size * np.max(s, axis=-1, keepdims=True)
        return (s[..., :-1] - s[..., 1:]) > tol, (1.0 if self.e else 2.0) * s > tol


# -- the rules ---------------------------------------------------------------------

def cotangent(E, g, x, plain=None):
    """The gradient through the eigenvalues (vjp), on values or Arrays: W
    diag(g) W^T, g's mean on each cluster; plain(g, x) where none
    coincide."""
    if plain is not None and not E.coincide(_values(x)):
        return plain(g, x)
    lam, W, C = E.decompose(x)
    return E.project((W * cluster_mean(C, E.embed(g))[..., None, :]) @ T(W))


def tangent(E, t, x, plain):
    """The eigenvalues' tangents (jvp) along t, on values: in the basis
    adapted to t where they coincide (their one-sided derivatives, as the
    eigenvalues of x + e t for e -> 0+); plain(t, x) where none do."""
    if not E.coincide(x):
        return plain(t, x)
    lam, W, C = E.decompose(x)
    M = T(W) @ E.lift(t) @ W
    U = adapted(M, C)
    return E.extract(_diagonal(T(U) @ M @ U))


def nested_tangent(E, t, out, x, plain):
    """tangent recorded (on Arrays): the adapted basis is a constant
    rotation of the traced eigenvectors."""
    _guard(E, out)
    if not E.coincide(x._d):
        return plain(t, x)
    lam, W, C = E.decompose(x._d)
    U = adapted(T(W) @ E.lift(_values(t)) @ W, C)
    Wa = E.decompose(x)[1] @ U
    return E.extract(np.sum(Wa * (E.lift(t) @ Wa), axis=-2))


def second(E, g, dg, t, x):
    """The C second-order sweep's step, on values: the tangent of the
    cotangent when x moves along t (None: it does not) and g along dg.
    W (diag(dg) + K o M) W^T, K the divided differences of g, in the basis
    adapted to t, where M has no element between coinciding eigenvalues
    (K's limits are not needed: dg carries them, the eigenvalues' tangents
    being those in that basis)."""
    if t is None:
        return cotangent(E, dg, x)
    lam, W, C = E.decompose(x)
    M = T(W) @ E.lift(t) @ W
    U = adapted(M, C)
    Wa, M = W @ U, T(U) @ M @ U
    K = divided(cluster_mean(C, E.embed(g)), cluster_mean(C, lam), C)
    return E.project(Wa @ (K * M + _diag(E.embed(dg))) @ T(Wa))


def nested_cotangent(E, g, out, x, plain, record):
    """The cotangent recorded inside a derivative (g an Array or values,
    out the eigenvalues' node): plain(g, x) where none coincide; else the
    spectral map of x and (g, the limits), which record(name, forward,
    vjp, jvp, operands) records (linalg._record)."""
    _guard(E, out)
    if not E.coincide(x._d):
        return plain(g, x)
    C = E.decompose(x._d)[2]
    g = g if isinstance(g, Array) else np.broadcast_to(g, out.shape)
    return spectral_map(E, x, _joined([g, _limits(E, g, out, C)], -1), record)


def _limits(E, g, out, C):
    """The limits per eigenvalue (its cluster's; 0 on a lone one): g's
    derivative along the eigenvalues, a tangent sweep of what is recorded
    from out to g.  0 for a constant g; NaN where the sweep meets an op
    with no forward rule."""
    d, R = E.slope_plan(C)
    if not isinstance(g, Array):
        return np.zeros(C.shape[:-1])
    try:
        (dg,) = derivatives.tangent([out], [d], [g])
    except NotImplementedError:
        return np.full(C.shape[:-1], np.nan)
    if dg is None:
        return np.zeros(C.shape[:-1])
    return (R @ dg[..., None])[..., 0]


def _guard(E, out):
    """Inside ad.record, which eigenvalues coincide is a guard (the rules
    recorded and the limits' directions depend on it): a replay where
    that changes raises BranchError (ad.function records again)."""
    if isinstance(out, Array) and takes_guards(out):
        masks = E.pattern(out)
        for mask in masks if isinstance(masks, tuple) else (masks,):
            decide(mask, mask._d.astype(bool).tolist(),
                   f"which neighbouring values of {E.name} are apart (the "
                   "derivatives' rules differ where they coincide)")


def spectral_map(E, x, q, record):
    """The gradient sum_c mean_c(g) P_c + gamma_c (P_c x P_c - tr(P_c x)
    P_c / k_c) as one op of x and q = (g, gamma): its value is W diag(g)
    W^T (the second term is 0 at x), its derivative the Hessian, gamma
    being the divided differences' limits."""
    n_out = np.shape(_values(q))[-1] - E.size

    def split(q):
        return q[..., :n_out], q[..., n_out:]

    def limited(C, lam, g, gamma):
        """K: the divided differences of g between clusters, gamma within."""
        return divided(cluster_mean(C, E.embed(g)), cluster_mean(C, lam), C) + \
            C.astype(np.float64) * gamma[..., :, None]

    def forward(x, q):
        return cotangent(E, split(q)[0], x)

    def jvp(ts, out, x, q):
        tx, tq = ts
        lam, W, C = E.decompose(x)
        inner = 0.0
        if tq is not None:
            inner = _diag(cluster_mean(C, E.embed(split(tq)[0])))
        if tx is not None:
            g, gamma = split(q)
            M = T(W) @ E.lift(tx) @ W
            inner = inner + limited(C, lam, g, gamma) * M - \
                _diag(gamma * cluster_mean(C, _diagonal(M)))
        return E.project(W @ inner @ T(W))

    def vjp(h, out, x, q, needs):
        lam, W, C = E.decompose(x)
        g, gamma = split(q)
        kh = T(W) @ E.lift(h) @ W
        dh = _diagonal(kh)
        gx = gq = None
        if needs[0]:
            gx = E.project(W @ (limited(C, lam, g, gamma) * kh -
                                _diag(cluster_mean(C, gamma * dh))) @ T(W))
        if needs[1]:
            gq = _joined([E.embed_adjoint(cluster_mean(C, dh)),
                          np.zeros(np.shape(_values(gamma)))], -1)
        return gx, gq

    return record(E.name, forward, vjp, jvp, [x, q])
