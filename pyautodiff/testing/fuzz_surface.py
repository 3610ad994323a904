"""Differential fuzzing of NumPy's differentiable surface: random programs
of NumPy calls, run on ``pyautodiff.autograd`` and on HIPS autograd.

A program is plain NumPy source, ``def f(x): ...``, a chain of steps drawn
from CATALOGUE -- reductions and scans with axes, shape, stacking and
indexing functions, products (einsum, tensordot, kron ...), np.linalg on
well-conditioned matrices, elementwise functions -- each applied to the
input or to earlier steps, ending in a weighted sum.  The steps are chosen
by running them on NumPy first, so every program is valid NumPy with
moderate values.  The same source runs with ``np`` bound to
``pyautodiff.autograd.numpy`` and to ``autograd.numpy``; checked:

- the value, against NumPy itself;
- the gradient (``grad``), the Hessian-vector product
  (``hessian_vector_product``) and a third derivative (the gradient of
  ``v . hvp(f)(x, v)``), against autograd's;
- a replay of ``ad.record(f, x0)`` at a moved point, against autograd's
  gradient there (skipped where a guard -- a sort's order, a max's winner
  -- flips).

Where pyautodiff and autograd differ, central differences (of the order
below) referee; a program autograd cannot run at all is checked against
central differences alone.  Both are counted apart.
"""
import importlib
import random
import time
import types
import warnings

import numpy as np

RTOL = 1e-7
LARGEST = 1e4           # steps whose values pass this are not drawn
MAX_SIZE = 48           # nor steps with more elements


class Entry:
    """One function of the surface: template is its source with {a} (and
    {b}) for operands and {ax}/{n} for parameters drawn by params(rng, a,
    b); fits(a, b) says whether operand shapes suit it.  guard, if given,
    is source like the template's whose value must be positive where the
    step is drawn: away from the kinks and singular points of the
    function, where derivatives (of some order) do not exist."""

    def __init__(self, name, template, fits=None, params=None, binary=False,
                 guard=None):
        self.guard = guard
        self.name = name
        self.template = template
        self.fits = fits or (lambda a, b=None: True)
        self.params = params or (lambda rng, a, b=None: {})
        self.binary = binary


def _axis(rng, a, b=None):
    return {"ax": rng.randrange(-a.ndim, a.ndim) if a.ndim else None}


def _nd(k):
    return lambda a, b=None: a.ndim >= k


def _square(a, b=None):
    return a.ndim == 2 and a.shape[0] == a.shape[1]


# the elements apart: where two are equal, an order statistic (sort,
# median, ptp) has no derivative, and conventions differ
_DISTINCT = "np.min(np.diff(np.sort(np.ravel({a}))), initial=1.0) - 1e-3"


def _spd(name, a):
    """A well-conditioned symmetric positive definite matrix made of the
    matrix a, called name in the source."""
    return f"({name} @ {name}.T + {a.shape[0]} * np.eye({a.shape[0]}))"


def _spd_entry(name, call, guard=None):
    # the square's size is the operand's first axis
    return Entry(name, call, fits=lambda a, b=None: a.ndim == 2 and a.shape[0] <= 5,
                 guard=guard)


CATALOGUE = [
    # elementwise, as user code spells it
    Entry("tanh", "np.tanh({a})"),
    Entry("sin", "np.sin({a})"),
    Entry("exp", "np.exp(-{a} ** 2)"),
    Entry("log1p", "np.log1p({a} ** 2)"),
    Entry("sqrt", "np.sqrt({a} ** 2 + 1.0)"),
    Entry("arctan", "np.arctan({a})"),
    Entry("cosh", "np.cosh({a} / 3)"),
    Entry("square", "np.square({a})"),
    Entry("hypot", "np.hypot({a}, 1.5)"),
    Entry("logaddexp", "np.logaddexp({a}, -{a})"),
    Entry("multiply", "{a} * {b}", binary=True, fits=lambda a, b: _broadcasts(a, b)),
    Entry("divide", "{a} / (1.0 + {b} ** 2)", binary=True, fits=lambda a, b: _broadcasts(a, b)),
    # reductions and scans
    Entry("sum", "np.sum({a}, axis={ax}, keepdims=True)", params=_axis),
    Entry("mean", "np.mean({a}, axis={ax})", params=_axis),
    Entry("var", "np.var({a}, axis={ax})", fits=lambda a, b=None: a.size > 1, params=_axis),
    Entry("std", "np.std({a}, axis={ax})", fits=lambda a, b=None: a.size > 1, params=_axis,
          guard="np.min(np.std({a}, axis={ax})) - 1e-2"),
    Entry("prod", "np.prod({a}, axis={ax})", params=_axis),
    Entry("cumsum", "np.cumsum({a}, axis={ax})", params=_axis),
    Entry("max", "np.max({a}, axis={ax})", fits=lambda a, b=None: a.size > 0, params=_axis),
    Entry("norm", "np.linalg.norm({a})", guard="np.linalg.norm({a}) - 1e-2"),
    Entry("ptp", "np.ptp({a}, axis={ax})", params=_axis, guard=_DISTINCT),
    Entry("average", "np.average({a}, axis=0, weights=np.arange(1.0, {a}.shape[0] + 1))",
          fits=_nd(1)),
    Entry("median", "np.median({a}, axis={ax})", params=_axis, guard=_DISTINCT),
    Entry("cumprod", "np.cumprod({a}, axis={ax})", params=_axis),
    Entry("diff", "np.diff({a}, axis={ax})", fits=lambda a, b=None: a.ndim and min(a.shape) > 1,
          params=_axis),
    Entry("gradient", "np.gradient({a}, axis={ax})",
          fits=lambda a, b=None: a.ndim and min(a.shape) > 1, params=_axis),
    Entry("sort", "np.sort({a}, axis={ax})", params=_axis, guard=_DISTINCT),
    Entry("nansum", "np.nansum({a}, axis={ax})", params=_axis),
    Entry("logaddexp.reduce", "np.logaddexp.reduce({a}, axis={ax})", fits=_nd(1), params=_axis),
    # shapes, stacking, indexing
    Entry("transpose", "np.transpose({a})"),
    Entry("ravel", "np.ravel({a})"),
    Entry("reshape", "np.reshape({a}, (-1, 2))", fits=lambda a, b=None: a.size % 2 == 0),
    Entry("flip", "np.flip({a}, axis={ax})", fits=_nd(1), params=_axis),
    Entry("roll", "np.roll({a}, 1, axis={ax})", fits=_nd(1), params=_axis),
    Entry("tril", "np.tril({a})", fits=_nd(2)),
    Entry("triu", "np.triu({a}, 1)", fits=_nd(2)),
    Entry("diagonal", "np.diagonal({a})", fits=_nd(2)),
    Entry("trace", "np.trace({a})", fits=_nd(2)),
    Entry("repeat", "np.repeat({a}, 2, axis={ax})", fits=_nd(1), params=_axis),
    Entry("tile", "np.tile({a}, 2)"),
    Entry("expand_dims", "np.expand_dims({a}, 0)"),
    Entry("swapaxes", "np.swapaxes({a}, 0, -1)", fits=_nd(1)),
    Entry("rot90", "np.rot90({a})", fits=_nd(2)),
    Entry("pad", "np.pad({a}, 1, mode='constant')"),
    Entry("slice", "{a}[::-1]", fits=_nd(1)),
    Entry("index", "{a}[[0, 0, -1]]", fits=_nd(1)),
    Entry("concatenate", "np.concatenate([{a}, {b}])", binary=True,
          fits=lambda a, b: a.ndim >= 1 and a.shape[1:] == b.shape[1:]),
    Entry("stack", "np.stack([{a}, {b}])", binary=True, fits=lambda a, b: a.shape == b.shape),
    Entry("where", "np.where({a} > 0, {a}, 0.5 * {b})", binary=True,
          fits=lambda a, b: a.shape == b.shape),
    # products
    Entry("matmul", "{a} @ {b}", binary=True,
          fits=lambda a, b: a.ndim >= 1 and b.ndim >= 1 and a.shape[-1] == b.shape[-2 if b.ndim > 1 else 0]),
    Entry("dot", "np.dot({a}, {b})", binary=True,
          fits=lambda a, b: a.ndim == 1 and b.ndim == 1 and a.shape == b.shape),
    Entry("outer", "np.outer({a}, {b})", binary=True),
    Entry("kron", "np.kron({a}, {b})", binary=True, fits=lambda a, b: a.size * b.size <= MAX_SIZE),
    Entry("einsum", "np.einsum('ij,kj->ik', {a}, {b})", binary=True,
          fits=lambda a, b: a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[1]),
    Entry("tensordot", "np.tensordot({a}, {b}, axes=1)", binary=True,
          fits=lambda a, b: a.ndim >= 1 and b.ndim >= 1 and a.shape[-1] == b.shape[0]),
    # np.linalg on matrices kept well-conditioned
    _spd_entry("inv", "np.linalg.inv(SPD)"),
    _spd_entry("det", "np.linalg.det(SPD)"),
    _spd_entry("slogdet", "np.linalg.slogdet(SPD)[1]"),
    _spd_entry("solve", "np.linalg.solve(SPD, {a}[:, 0])"),
    _spd_entry("cholesky", "np.linalg.cholesky(SPD)"),
    # distinct eigenvalues: at a repeated one the second derivative is not
    # defined
    _spd_entry("eigh", "np.linalg.eigh(SPD)[0]",
               guard="np.min(np.diff(np.linalg.eigvalsh(SPD)), initial=1.0) - 1e-2"),
]
# scipy's, as `sp` (scipy itself, autograd.scipy, pyautodiff.autograd.scipy)
SCIPY_CATALOGUE = [
    Entry("gammaln", "sp.special.gammaln({a} ** 2 + 0.5)"),
    Entry("digamma", "sp.special.digamma({a} ** 2 + 0.5)"),
    Entry("erf", "sp.special.erf({a})"),
    Entry("expit", "sp.special.expit({a})"),
    Entry("logsumexp", "sp.special.logsumexp({a}, axis={ax})", params=_axis),
    Entry("norm.logpdf", "sp.stats.norm.logpdf({a}, 0.5, 1.5)"),
    Entry("norm.cdf", "sp.stats.norm.cdf({a})"),
    Entry("t.logpdf", "sp.stats.t.logpdf({a}, 3.0)"),
    Entry("convolve", "sp.signal.convolve({a}, {b}, mode='full')", binary=True,
          fits=lambda a, b: a.ndim == b.ndim == 1),
    _spd_entry("solve_triangular",
               "sp.linalg.solve_triangular(np.tril(SPD), {a}[:, 0], lower=True)"),
    _spd_entry("sqrtm", "sp.linalg.sqrtm(SPD)"),
]
_SCIPY_ROOTS = {"numpy": "scipy", "autograd.numpy": "autograd.scipy",
                "pyautodiff.autograd.numpy": "pyautodiff.autograd.scipy"}


def _scipy_for(np_module):
    """The scipy namespace that goes with np_module: its special, stats,
    signal and linalg."""
    root = _SCIPY_ROOTS[np_module.__name__]
    return types.SimpleNamespace(**{part: importlib.import_module(f"{root}.{part}")
                                    for part in ("special", "stats", "signal", "linalg")})


try:
    _scipy_for(np)
    CATALOGUE += SCIPY_CATALOGUE
except ImportError:         # scipy is an optional dependency
    pass


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        return False
    return True


def _literal(arr):
    return f"np.array({np.round(arr, 3).tolist()!r})"


class Program:
    """The source of f, its point x0, a direction v and a moved point x1."""

    def __init__(self, source, x0, v, x1, seed, names):
        self.source, self.x0, self.v, self.x1 = source, x0, v, x1
        self.seed, self.names = seed, names

    def function(self, np_module):
        scope = {"np": np_module}
        if "sp." in self.source:
            scope["sp"] = _scipy_for(np_module)
        exec(self.source, scope)            # noqa: S102 -- our own generated source
        return scope["f"]

    def __str__(self):
        return (f"# seed {self.seed}\n{self.source}x0 = {_literal(self.x0)}\n"
                f"v = {_literal(self.v)}\n")


SHAPES = [(3,), (4,), (2, 3), (3, 3), (3, 2), (2, 2, 3)]


def random_program(rng, max_steps=4, seed=None):
    """A valid NumPy program of up to max_steps steps (see the module's
    docstring), built by trying candidate steps on NumPy."""
    shape = rng.choice(SHAPES)
    x0 = np.round(np.array([rng.uniform(-1.5, 1.5) for _ in range(int(np.prod(shape)))])
                  .reshape(shape), 3)
    nodes = [("x", x0)]
    lines, names = [], []
    for _ in range(100):
        if len(lines) >= max_steps:
            break
        entry = rng.choice(CATALOGUE)
        # mostly the latest step, so that steps chain
        name_a, a = nodes[-1] if rng.random() < 0.6 else rng.choice(nodes)
        name_b, b = rng.choice(nodes)
        if not (entry.fits(a, b) if entry.binary else entry.fits(a)):
            continue
        params = entry.params(rng, a, b) if entry.binary else entry.params(rng, a)
        spd = _spd(name_a, a) if "SPD" in entry.template else None
        expr, guard = (t.replace("SPD", spd or "SPD").format(a=name_a, b=name_b, **params)
                       if t is not None else None for t in (entry.template, entry.guard))
        try:
            with np.errstate(all="raise"), warnings.catch_warnings():
                warnings.simplefilter("error")
                scope = {"np": np, "sp": _scipy_for(np)} if "sp." in expr else {"np": np}
                value = eval(expr, scope, dict(nodes))  # noqa: S307 -- our own source
                if guard is not None and not eval(guard, scope, dict(nodes)) > 0:  # noqa: S307
                    continue
        except Exception:                   # noqa: BLE001 -- the step does not apply here
            continue
        value = np.asarray(value)
        if (value.dtype != np.float64 or value.size == 0 or value.size > MAX_SIZE
                or not np.all(np.isfinite(value)) or np.max(np.abs(value)) > LARGEST):
            continue
        name = f"t{len(lines)}"
        lines.append(f"    {name} = {expr}")
        names.append(entry.name)
        nodes.append((name, value))
    # the result: a weighted sum of the last step and, maybe, another one
    picks = [nodes[-1]] + ([rng.choice(nodes[1:])] if len(nodes) > 2 and rng.random() < 0.5 else [])
    terms = []
    for name, value in picks:
        w = np.round(np.array([rng.uniform(-1, 1) for _ in range(value.size)]), 3)
        terms.append(f"np.sum({name} * {_literal(w.reshape(value.shape))})")
    source = "def f(x):\n" + "\n".join(lines) + ("\n" if lines else "") + \
        f"    return {' + '.join(terms)}\n"
    v = np.round(np.array([rng.uniform(-1, 1) for _ in range(x0.size)]).reshape(shape), 3)
    x1 = x0 + np.round(np.array([rng.uniform(-1e-2, 1e-2) for _ in range(x0.size)])
                       .reshape(shape), 4)
    return Program(source, x0, v, x1, seed, names)


def _derivatives(api, np_module, program, x):
    """Value, gradient, hvp and third derivative of the program by api (a
    module with autograd's grad and hessian_vector_product)."""
    f = program.function(np_module)
    v = program.v
    hvp = api.hessian_vector_product(f)

    def directional(y):
        return np_module.sum(hvp(y, v) * v)

    return (np.asarray(f(x)), np.asarray(api.grad(f)(x)), np.asarray(hvp(x, v)),
            np.asarray(api.grad(directional)(x)))


def _close(got, want, rtol=RTOL):
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    return got.shape == want.shape and bool(np.all(np.isclose(
        got, want, rtol=rtol, atol=rtol * scale, equal_nan=True)))


def _central(fn, x, h=1e-5):
    """Central differences of fn (to arrays) at x, one per element of x,
    stacked on the last axis."""
    cols = []
    for i in range(x.size):
        d = np.zeros(x.size)
        d[i] = h
        d = d.reshape(x.shape)
        cols.append((np.asarray(fn(x + d)) - np.asarray(fn(x - d))) / (2 * h))
    return np.stack(cols, axis=-1)


def _referee(what, program, got, pad, pnp):
    """Central differences of the order below (the lower orders already
    agreed with autograd or were refereed): True if got matches them."""
    x, v = program.x0, program.v
    f = program.function(np)
    if what == "gradient":
        want = _central(f, x).reshape(x.shape)
    elif what == "hvp":
        g = pad.grad(program.function(pnp))
        want = _central(lambda y: g(y), x) @ v.reshape(-1)
    else:
        h = pad.hessian_vector_product(program.function(pnp))
        want = _central(lambda y: np.sum(h(y, v) * v), x).reshape(x.shape)
    return _close(got, np.asarray(want).reshape(got.shape), rtol=1e-5)


def check(program):
    """(outcome, detail): "agree", "disagree", "unsupported" (pyautodiff
    raised NotImplementedError), "central" (autograd cannot run the
    program: checked against central differences alone) or "autograd"
    (autograd's derivative differs, and central differences side with
    pyautodiff's)."""
    import autograd
    import autograd.numpy as anp

    import pyautodiff as ad
    import pyautodiff.autograd as pad
    import pyautodiff.autograd.numpy as pnp

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = _derivatives(autograd, anp, program, program.x0)
            want_moved = np.asarray(autograd.grad(program.function(anp))(program.x1))
    except Exception:                       # noqa: BLE001 -- the oracle's limit
        want = want_moved = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = _derivatives(pad, pnp, program, program.x0)
    except NotImplementedError as exc:
        return "unsupported", str(exc)
    except Exception as exc:                # noqa: BLE001 -- any error is a finding
        return "disagree", f"pyautodiff raised {type(exc).__name__}: {exc}"
    plain = np.asarray(program.function(np)(program.x0))
    if not _close(got[0], plain):
        return "disagree", f"value {got[0]!r} vs NumPy's {plain!r}"
    outcome = ("agree", None) if want is not None else ("central", None)
    for what, g, w in zip(("gradient", "hvp", "third derivative"), got[1:],
                          want[1:] if want is not None else (None,) * 3):
        if w is None:
            if not _referee(what, program, g, pad, pnp):
                return "disagree", f"{what}: {g!r} differs from central differences"
            continue
        if _close(g, w):
            continue
        if not _referee(what, program, g, pad, pnp):
            return "disagree", f"{what}: {g!r} vs autograd's {w!r}"
        outcome = "autograd", f"{what}: autograd's {w!r}, central differences and ours {g!r}"
    try:
        recording = ad.record(program.function(pnp), program.x0)
        moved = np.asarray(recording.grad(program.x1))
    except ad.BranchError:
        return outcome
    except Exception as exc:                # noqa: BLE001
        return "disagree", f"replay raised {type(exc).__name__}: {exc}"
    if (want_moved is None or not _close(moved, want_moved)) and not _close(
            moved, _central(program.function(np), program.x1).reshape(moved.shape), 1e-5):
        return "disagree", f"replayed gradient {moved!r} vs central differences"
    return outcome


def fuzz_surface(count, seed=0, max_steps=4, show=5, out=print):
    """Check count programs (program k drawn from f"{seed}/{k}"); prints
    the first `show` disagreements and the counts; returns the counts and
    the disagreements."""
    counts = {k: 0 for k in ("agree", "disagree", "unsupported", "central", "autograd")}
    found, used = [], {}
    t0 = time.perf_counter()
    for k in range(count):
        program = random_program(random.Random(f"{seed}/{k}"), max_steps, seed=f"{seed}/{k}")
        outcome, detail = check(program)
        counts[outcome] += 1
        if outcome in ("agree", "central", "autograd"):
            for name in program.names:
                used[name] = used.get(name, 0) + 1
        if outcome in ("disagree", "unsupported", "autograd"):
            found.append((outcome, program, detail))
    for outcome, program, detail in [f for f in found if f[0] != "autograd"][:show]:
        out(f"{outcome}: {detail}\n{program}")
    wrong = {}
    for outcome, program, _ in found:
        if outcome == "autograd":
            for name in set(program.names):
                wrong[name] = wrong.get(name, 0) + 1
    out(f"{count} NumPy-surface programs: {counts['agree']} agreed, "
        f"{counts['disagree']} disagreed, {counts['unsupported']} unsupported, "
        f"{counts['central']} agreed with central differences where autograd "
        f"cannot run them, {counts['autograd']} where "
        f"autograd is wrong (central differences side with pyautodiff), "
        f"{time.perf_counter() - t0:.1f} s, seed {seed}")
    never = sorted(e.name for e in CATALOGUE if e.name not in used)
    out("functions in agreeing programs: " +
        ", ".join(f"{n} {c}" for n, c in sorted(used.items(), key=lambda t: -t[1])) +
        (f"; never: {', '.join(never)}" if never else ""))
    if wrong:
        out("functions in programs autograd gets wrong: " +
            ", ".join(f"{n} {c}" for n, c in sorted(wrong.items(), key=lambda t: -t[1])))
    return counts, found
