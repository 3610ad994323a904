"""Fuzzing of the sparse derivatives (pyautodiff/sparse.py,
csrc/sparsity.c) against the dense ones.

Random programs over every op kind (elementwise with broadcasting,
reductions, gathers, scatters, reshapes, where/maximum, matmul, products
with constants that have zeros, a custom op, the library's extern ops
with patterns of their own: scipy.special's erf and gammaln, cumsum,
convolutions; and prod), a vector result for a Jacobian or a scalar one
for a Hessian.  For
each: every nonzero of the dense ``ad.jacobian`` / ``ad.hessian`` lies in
``ad.jacobian_sparsity`` / ``ad.hessian_sparsity``; ``ad.sparse_jacobian``
/ ``ad.sparse_hessian`` equal the dense ones to 1e-12 relative; so do a
recording's, at the recorded and at a moved point; a dense Hessian
equals the Jacobian of the recorded gradient (``ad.jacobian(ad.grad(f))``,
no second-order rule in common) to 1e-9; and the recording's colouring is
valid, checked here independently of the C code that makes it (columns
sharing a colour share no row; a Hessian's a star colouring).

``python -m pyautodiff.testing.fuzz --kind sparse --count N`` runs it.
"""
import time

import numpy as np

import pyautodiff as ad
from pyautodiff import sparse
from pyautodiff import scipy_special as _special
from pyautodiff.scipy_signal import convolve as _convolve


# -- the random programs ---------------------------------------------------------------

def cumsum_op():
    """A custom op (dense default pattern; linear, with a jvp)."""
    return ad.custom_op(lambda a: np.cumsum(a),
                        lambda g, out, a: (np.cumsum(g[::-1])[::-1],),
                        jvp=lambda ts, out, a: np.cumsum(ts[0]))


def _every_third(a):
    """A constant of a's shape: 0.0 at every third element, else 1.0."""
    return (np.arange(np.size(a)).reshape(np.shape(a)) % 3 != 0).astype(np.float64)


UNARY = [ad.sin, ad.exp, ad.tanh, lambda a: a ** 2, lambda a: ad.log(a * a + 0.5),
         lambda a: ad.sqrt(a * a + 1.0), lambda a: 1.0 / (a * a + 1.0),
         lambda a: a * 3.0 - 1.0, lambda a: -a, ad.arctan, ad.abs,
         # a constant's zeros: no dependence there
         lambda a: a * _every_third(a), lambda a: ad.where(_every_third(a) > 0, a, ad.sin(a))]
BINARY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
          lambda a, b: a / (b * b + 1.0), ad.maximum,
          lambda a, b: ad.where(a > b, a * a, b), ad.hypot, ad.arctan2]


def _shape_ops(rng, a):
    """Gathers, scatters and reshapes of a that fit its shape."""
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


def _library_extern(r, a):
    """One of the library's extern ops with a pattern of its own (an
    elementwise scipy.special function, cumsum, a convolution) or prod,
    which was one."""
    choices = [lambda: _special.erf(a), lambda: _special.gammaln(a * a + 0.5),
               lambda: np.cumsum(a, axis=int(r.integers(a.ndim)) if a.ndim else None)]
    if a.ndim >= 1:
        axis = int(r.integers(a.ndim))
        choices.append(lambda: np.prod(a, axis=axis, keepdims=bool(r.integers(2))))
    if a.ndim == 1:
        mode = ("full", "valid", "same")[r.integers(3)]
        size = int(r.integers(1, 4))
        k = r.normal(size=size) * (r.random(size) < 0.7)     # a filter with zeros
        choices.append(lambda: _convolve(a, k, mode=mode) if a.shape[0] >= k.shape[0]
                       else _convolve(k, a, mode=mode))
        if a.shape[0] >= 2:
            choices.append(lambda: _convolve(a, a[:2], mode=mode))
    return choices[r.integers(len(choices))]()


def random_program(rng, n, hessian):
    """f(x) for x of even size n: a pool of nodes grown by random ops of
    every kind, the result a vector (Jacobian) or a scalar (Hessian)."""
    steps = []
    for _ in range(rng.integers(3, 9)):
        steps.append((rng.integers(0, 8), rng.integers(0, 1 << 30)))
    pick_out = rng.integers(0, 1 << 30)
    const = rng.normal(size=(3, n)) * (rng.random((3, n)) < 0.7)   # zeros too

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
                       lambda: ad.logsumexp(a, axis=axis),
                       lambda: a.mean(axis=axis, keepdims=True)]
                pool.append(red[r.integers(len(red))]())
            elif kind == 3:
                moves = _shape_ops(r, a)
                if moves:
                    pool.append(moves[r.integers(len(moves))]())
            elif kind == 4 and a.ndim == 1 and a.shape[0] == n:
                pool.append((const @ a, ad.tanh(const @ a), a @ const.T)[r.integers(3)])
            elif kind == 5 and a.ndim == 2 and a.shape[1] == n // 2:
                pool.append(a @ ad.reshape(x, (n // 2, 2)))
            elif kind == 6 and a.ndim == 1:
                pool.append(cumsum_op()(a))
            elif kind == 7:
                pool.append(_library_extern(r, a))
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


# -- independent checks of colourings ---------------------------------------------------

def _rows(P):
    import scipy.sparse
    P = scipy.sparse.csr_array(P)
    return [P.indices[P.indptr[r]:P.indptr[r + 1]] for r in range(P.shape[0])]


def column_colouring_problems(P, color):
    """Why color is not a colouring of P's columns in which columns of
    one colour share no row (structurally orthogonal): [] if it is."""
    color = np.asarray(color)
    if color.shape != (P.shape[1],):
        return [f"{color.shape[0]} colours for {P.shape[1]} columns"]
    for r, cols in enumerate(_rows(P)):
        if len(set(color[cols])) != len(cols):
            return [f"row {r}: columns {list(cols)} have colours {list(color[cols])}"]
    return []


def star_colouring_problems(P, color):
    """Why color is not a star colouring of the graph of symmetric P (no
    diagonal): a proper colouring in which every path on four vertices
    has at least three colours.  [] if it is."""
    color = np.asarray(color)
    if color.shape != (P.shape[0],):
        return [f"{color.shape[0]} colours for {P.shape[0]} vertices"]
    adj = [set(cols) - {i} for i, cols in enumerate(_rows(P))]
    for b in range(len(adj)):
        for c in adj[b]:
            if color[b] == color[c]:
                return [f"neighbours {b}, {c} share colour {color[b]}"]
            for a in adj[b] - {c}:
                for d in adj[c] - {b, a}:
                    if color[a] == color[c] and color[b] == color[d]:
                        return [f"path {a}-{b}-{c}-{d} has two colours only"]
    return []


# -- one program ---------------------------------------------------------------------------

def _mismatch(got, want, what, tol=1e-12):
    """[] if got equals want to tol of want's largest entry (at least 1)."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return [f"{what}: shape {got.shape}, dense {want.shape}"]
    scale = max(1.0, np.abs(want).max(initial=0.0))
    err = np.abs(got - want)
    if not np.all(err <= tol * scale):         # also catches a nan
        k = np.unravel_index(np.nanargmax(np.where(np.isnan(err), np.inf, err)), err.shape)
        return [f"{what}: entry {tuple(int(i) for i in k)} is {got[k]!r}, "
                f"dense {want[k]!r}"]
    return []


def _pattern_problems(P, dense, what):
    import scipy.sparse
    if not (isinstance(P, scipy.sparse.csr_array) and P.dtype == bool):
        return [f"{what}: a {type(P).__name__} of {P.dtype}, not a csr_array of bools"]
    if P.shape != dense.shape:
        return [f"{what}: shape {P.shape}, dense {dense.shape}"]
    outside = np.argwhere((dense != 0) & ~P.toarray())
    if len(outside):
        i, j = outside[0]
        return [f"{what}: the dense nonzero ({i}, {j}) = {dense[i, j]!r} is not "
                f"in the pattern ({len(outside)} such)"]
    return []


def _values_problems(S, dense, what):
    import scipy.sparse
    if not (isinstance(S, scipy.sparse.csr_array) and S.dtype == np.float64):
        return [f"{what}: a {type(S).__name__} of {S.dtype}, not a csr_array of float64"]
    return _mismatch(S.toarray(), dense, what)


def check_program(rng, n, hessian):
    """What the sparse derivatives of one random program (drawn from rng,
    x of size n) get wrong against the dense ones: a list of problems,
    or None where the dense derivative itself is not available."""
    kind = "hessian" if hessian else "jacobian"
    f = random_program(rng, n, hessian)
    x = rng.normal(size=n)
    x2 = x + 0.01 * rng.normal(size=n)
    dense_of = ad.hessian if hessian else ad.jacobian
    pattern_of = ad.hessian_sparsity if hessian else ad.jacobian_sparsity
    sparse_of = ad.sparse_hessian if hessian else ad.sparse_jacobian
    try:
        dense = np.asarray(dense_of(f)(x))
    except (ValueError, FloatingPointError, ZeroDivisionError):
        return None
    dense = dense.reshape(-1, n)
    if not np.all(np.isfinite(dense)):
        return None
    P = pattern_of(f)(x)
    problems = _pattern_problems(P, dense, f"{kind}_sparsity")
    if hessian:
        # the dense Hessian's one-sweep products (the extern ops' second
        # order from their differentiated vjps) against the Jacobian of
        # the recorded gradient, which shares no second-order rule: other
        # expressions, rounded otherwise (hypot's and arctan2's second
        # partials against the derivatives of their first), so to 1e-9
        problems += _mismatch(dense, np.asarray(ad.jacobian(ad.grad(f))(x)),
                              "hessian against jacobian(grad)", tol=1e-9)
    if hessian and not problems and (P != P.T).nnz:
        problems.append("hessian_sparsity: not symmetric")
    problems += _values_problems(sparse_of(f)(x), dense, f"sparse_{kind}")
    F = ad.record(f, x)
    recorded = F.hessian_sparsity() if hessian else F.jacobian_sparsity()
    if recorded.shape != P.shape or (recorded != P).nnz:
        problems.append(f"recording's {kind}_sparsity differs from the functional one")
    evaluate = F.sparse_hessian if hessian else F.sparse_jacobian
    problems += _values_problems(evaluate(x), dense, f"recording's sparse_{kind}")
    problems += _moved(f, evaluate, dense_of, x2, n, kind)
    plan = sparse.recorded_plan(F, kind, "fuzz")
    if np.any(plan.color < 0) or np.any(plan.color >= plan.ncolors):
        problems.append(f"colours outside 0..{plan.ncolors - 1}")
    elif hessian:
        problems += star_colouring_problems(P, plan.color)
    else:
        problems += column_colouring_problems(P.T if plan.by_rows else P, plan.color)
    return problems


def _moved(f, evaluate, dense_of, x2, n, kind):
    """The recording replayed at a moved point, unless a guard flips."""
    try:
        want = np.asarray(dense_of(f)(x2)).reshape(-1, n)
    except (ValueError, FloatingPointError, ZeroDivisionError):
        return []
    if not np.all(np.isfinite(want)):
        return []
    try:
        got = evaluate(x2)
    except ad.BranchError:
        return []
    return _values_problems(got, want, f"recording's sparse_{kind} at a moved point")


SIZES = (2, 4, 6, 8)


def draw(seed, k):
    """Program k of a run with this seed: (rng, n, hessian)."""
    rng = np.random.default_rng([seed, k])
    return rng, int(rng.choice(SIZES)), bool(k % 2)


def fuzz_sparse(count, seed=0, show=5, out=print):
    """Check `count` random programs, Jacobians and Hessians in turn;
    returns {"tried", "agreed", "disagreed", "skipped", "seconds"}."""
    counts = dict(tried=0, agreed=0, disagreed=0, skipped=0)
    t0 = time.perf_counter()
    for k in range(count):
        rng, n, hessian = draw(seed, k)
        problems = check_program(rng, n, hessian)
        if problems is None:
            counts["skipped"] += 1
            continue
        counts["tried"] += 1
        if problems:
            counts["disagreed"] += 1
            if counts["disagreed"] <= show:
                out(f"disagreement: {problems[0]}\n  program {k} of seed {seed} "
                    f"({'Hessian' if hessian else 'Jacobian'}, n = {n}): "
                    f"fuzz_sparse.check_program(*fuzz_sparse.draw({seed}, {k}))")
        else:
            counts["agreed"] += 1
    counts["seconds"] = time.perf_counter() - t0
    out(f"{counts['tried']} sparse programs tried ({counts['skipped']} skipped: dense "
        f"derivative not finite), {counts['agreed']} agreed, {counts['disagreed']} "
        f"disagreed, {counts['seconds']:.1f} s, seed {seed}")
    return counts
