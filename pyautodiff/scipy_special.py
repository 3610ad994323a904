"""scipy.special's functions on Values and Arrays: ``scipy.special.gamma(a)``,
``scipy.special.jn(2, x)`` ... record a derivative, as NumPy's ufuncs do,
and so do this module's functions of the same names.

Most are one *elementwise extern* entry each (a row of _ROWS below): its
value is SciPy's ufunc on the operands' values, and its partial
derivatives are expressions in other such functions (gammaln' = digamma,
polygamma(n, .)' = polygamma(n + 1, .), jv(v, .)' = (jv(v-1, .) -
jv(v+1, .)) / 2 ...).  The one mechanism applies those expressions to
plain arrays in the C sweeps and to Values and Arrays in a derivative
that nests (derivatives.py), where they record entries of their own: so
every function is differentiable to any order.  The functions that are
exact composites of recorded ops (expit, logit, xlogy, xlog1py,
multigammaln, logsumexp) are composites.

An argument a row does not differentiate (an order n or v, betainc's a
and b, gammainc's a) is taken by its values when it is a constant; a
traced one that moves raises NotImplementedError naming the function and
the argument, never a silent zero.

SciPy is optional: nothing here imports it before a function is called,
and NumPy's dispatch finds the rows only once ``scipy.special`` has been
imported (by whoever calls its functions).
"""
import math
import sys

import numpy as np

from . import array as _array, scipy_own
from .array import Array
from .broadcasting import unbroadcast
from .derivatives import add, broadcast_to, sum_to, times
from .extern import ExternRule, record_extern
from .extern_patterns import elementwise
from .guards import decide
from .numpy_elementwise import _mask, _select
from .reductions import log_softmax as _log_softmax, logsumexp as _lse, softmax as _softmax
from .detach import moves as _moves
from .tape_state import NO_GRAD, recording_tape
from .trace import jvp_apart
from .value import Value, _detached as _detached_value

_SQRT_PI = math.sqrt(math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _special():
    """scipy.special, imported at the first call that needs it."""
    try:
        import scipy.special
    except ImportError:             # pragma: no cover (scipy is installed here)
        raise ImportError("pyautodiff's scipy.special functions need SciPy "
                          "(pip install scipy)") from None
    return scipy.special


def _is_traced(x):
    return isinstance(x, (Value, Array))


def _plain(x):
    return x._d if _is_traced(x) else x


def _sign(z):
    """sign(z) as masks (a replay recomputes them), np.sign of plain z."""
    if not _is_traced(z):
        return np.sign(z)
    return _mask("LT", 0.0, z) - _mask("LT", z, 0.0)


# -- the elementwise extern ----------------------------------------------------

class _Row:
    """scipy.special.NAME as one extern entry: partials maps the position
    of each argument it differentiates to fn(out, *args) -> d out / d arg
    (on plain values, or on Values and Arrays in a nested derivative);
    names are the arguments' names, for the errors."""

    __slots__ = ("name", "names", "partials", "scipy_name")

    def __init__(self, name, names, partials, scipy_name=None):
        self.name, self.names, self.partials = name, names, partials
        self.scipy_name = scipy_name or name

    def ufunc(self):
        return getattr(_special(), self.scipy_name)

    def __call__(self, *args):
        if len(args) != len(self.names):
            raise TypeError(f"scipy.special.{self.name} takes {len(self.names)} "
                            f"arguments ({', '.join(self.names)}), got {len(args)}")
        if not any(map(_is_traced, args)):
            return self.ufunc()(*args)
        args = list(args)
        operands = []
        for k, x in enumerate(args):
            if not _is_traced(x):
                continue
            if k in self.partials:
                operands.append(k)
            elif _moves(x):
                raise self.no_derivative(k)
            else:               # a constant: its values
                args[k] = x._d
        return _record(self, args, operands)

    def no_derivative(self, k):
        wrt = " and ".join(self.names[j] for j in sorted(self.partials))
        return NotImplementedError(
            f"scipy.special.{self.name}: no derivative with respect to its "
            f"argument {self.names[k]} (only {wrt}); pass {self.names[k]} as "
            "a constant")


def _record(row, args, operands):
    """row's function of args recorded with the traced args at positions
    operands (one or two) as the entry's operands."""
    ufunc = row.ufunc()
    value = ufunc(*[_plain(x) for x in args])
    if not operands:                # traced constants only: no derivative
        return _array._constant_result(np.asarray(value, dtype=np.float64))
    traced = [args[k] for k in operands]
    if recording_tape() is NO_GRAD:
        if any(isinstance(x, Array) for x in traced) or np.ndim(value):
            return _array._detached(value)
        return _detached_value(type(traced[0]), float(value))

    def at(ops):
        full = list(args)
        for k, x in zip(operands, ops):
            full[k] = x
        return full

    def forward(*ops):
        return ufunc(*at(ops))

    def partial(k, out, ops):
        return row.partials[k](out, *at(ops))

    def vjp(g, out, *ops, needs):
        g = np.asarray(g, dtype=np.float64)
        cts = []
        for k, x, need in zip(operands, ops, needs):
            if not need:
                cts.append(None)
                continue
            with np.errstate(all="ignore"):     # (0 * inf, kept out below)
                d = np.asarray(partial(k, out, ops), dtype=np.float64)
                ct = np.where(g == 0.0, 0.0, g * d)
            cts.append(unbroadcast(ct, np.shape(x)).reshape(np.shape(x)))
        return cts

    def jvp(tangents, out, *ops):
        total = np.zeros(np.shape(out))
        for k, tk in zip(operands, tangents):
            if tk is not None:
                with np.errstate(all="ignore"):
                    d = np.asarray(partial(k, out, ops), dtype=np.float64)
                    total = total + np.where(tk == 0.0, 0.0, tk * d)
        return total

    def nested_vjp(g, out, *ops, needs):
        return [sum_to(times(g, partial(k, out, ops)), np.shape(_plain(x)))
                if need else None for k, x, need in zip(operands, ops, needs)]

    def nested_jvp(tangents, out, *ops):
        total = None
        for k, tk in zip(operands, tangents):
            if tk is not None:
                total = add(total, times(tk, partial(k, out, ops)))
        return None if total is None else broadcast_to(total, np.shape(_plain(out)))

    def second(g, dg, out, ops, tangents, needs):
        """The tangents of the cotangents g * partial (the C second-order
        sweep's, a recording's Hessian): dg * partial + g * (the partial's
        tangent, by a forward sweep through the traced partial)."""
        g, dg = (np.asarray(z, dtype=np.float64) for z in (g, dg))
        out_cts = []
        for k, x, need in zip(operands, ops, needs):
            if not need:
                out_cts.append(None)
                continue
            total = np.where(dg == 0.0, 0.0, dg * np.asarray(partial(k, out, ops)))
            for j, tj in enumerate(tangents):
                if tj is None:
                    continue

                def moved(z, j=j, k=k):
                    shifted = list(ops)
                    shifted[j] = z
                    return partial(k, row(*at(shifted)), shifted)
                _, dd = jvp_apart(moved, (ops[j],), 0, tj, row.name)
                with np.errstate(all="ignore"):
                    total = total + np.where(g == 0.0, 0.0, g * np.asarray(dd))
            out_cts.append(unbroadcast(total, np.shape(x)).reshape(np.shape(x)))
        return out_cts

    rule = _ElementwiseRule(forward, vjp, f"scipy.special.{row.name}", takes_needs=True,
                            jvp=jvp, nested=(nested_vjp, nested_jvp),
                            sparsity=elementwise)
    rule.second = second
    return record_extern(rule, traced, value)


class _ElementwiseRule(ExternRule):
    """An elementwise extern's rule, with the tangents of its cotangents for
    the C second-order sweep (ad.hessian itself differentiates the nested
    vjp instead)."""

    __slots__ = ("second",)

    def cotangent_tangents(self, g, dg, out, inputs, tangents, needs):
        return self.second(g, dg, out, inputs, tangents, needs)


# The rows: name, argument names, {position: d/d argument (out, *args)}.
# The expressions call this module's functions (defined from the rows
# below), so each derivative is itself differentiable.
_ROWS = [
    ("gamma", "x", {0: lambda out, x: out * digamma(x)}),
    ("gammaln", "x", {0: lambda out, x: digamma(x)}),
    ("psi", "x", {0: lambda out, x: polygamma(1, x)}),
    ("rgamma", "x", {0: lambda out, x: -out * digamma(x)}),
    ("polygamma", "n x", {1: lambda out, n, x: polygamma(np.add(n, 1), x)}),
    ("beta", "a b", {0: lambda out, a, b: out * (digamma(a) - digamma(a + b)),
                     1: lambda out, a, b: out * (digamma(b) - digamma(a + b))}),
    ("betaln", "a b", {0: lambda out, a, b: digamma(a) - digamma(a + b),
                       1: lambda out, a, b: digamma(b) - digamma(a + b)}),
    # the densities of the incomplete functions, in x
    ("betainc", "a b x", {2: lambda out, a, b, x:
                          x ** np.subtract(a, 1.0) * (1.0 - x) ** np.subtract(b, 1.0)
                          / beta(a, b)}),
    ("gammainc", "a x", {1: lambda out, a, x: _gamma_density(a, x)}),
    ("gammaincc", "a x", {1: lambda out, a, x: -_gamma_density(a, x)}),
    ("erf", "x", {0: lambda out, x: (2.0 / _SQRT_PI) * np.exp(-x * x)}),
    ("erfc", "x", {0: lambda out, x: (-2.0 / _SQRT_PI) * np.exp(-x * x)}),
    ("erfinv", "x", {0: lambda out, x: (_SQRT_PI / 2.0) * np.exp(out * out)}),
    ("erfcinv", "x", {0: lambda out, x: (-_SQRT_PI / 2.0) * np.exp(out * out)}),
    # the standard normal's distribution function, its log and its inverse
    ("ndtr", "x", {0: lambda out, x: np.exp(-0.5 * x * x - _LOG_SQRT_2PI)}),
    ("log_ndtr", "x", {0: lambda out, x: np.exp(-0.5 * x * x - _LOG_SQRT_2PI - out)}),
    ("ndtri", "p", {0: lambda out, p: np.exp(0.5 * out * out + _LOG_SQRT_2PI)}),
    # Student's t distribution function, in t: the density
    ("stdtr", "df t", {1: lambda out, df, t: np.exp(_t_logdensity(df, t))}),
    # Bessel functions: their recurrences
    ("j0", "x", {0: lambda out, x: -j1(x)}),
    ("j1", "x", {0: lambda out, x: 0.5 * (j0(x) - jv(2, x))}),
    ("jv", "v x", {1: lambda out, v, x: 0.5 * (jv(np.subtract(v, 1), x)
                                               - jv(np.add(v, 1), x))}),
    ("y0", "x", {0: lambda out, x: -y1(x)}),
    ("y1", "x", {0: lambda out, x: 0.5 * (y0(x) - yn(2, x))}),
    ("yn", "n x", {1: lambda out, n, x: 0.5 * (yn(np.subtract(n, 1), x)
                                               - yn(np.add(n, 1), x))}),
    ("i0", "x", {0: lambda out, x: i1(x)}),
    ("i1", "x", {0: lambda out, x: 0.5 * (i0(x) + iv(2, x))}),
    ("iv", "v x", {1: lambda out, v, x: 0.5 * (iv(np.subtract(v, 1), x)
                                               + iv(np.add(v, 1), x))}),
    # ive = iv e^-|x|: (ive(v-1) + ive(v+1)) / 2 - sign(x) ive, no v/x at 0
    ("ive", "v x", {1: lambda out, v, x: 0.5 * (ive(np.subtract(v, 1), x)
                                                + ive(np.add(v, 1), x))
                    - _sign(x) * out}),
]


def _gamma_density(a, x):
    """x^(a-1) e^-x / Gamma(a): d gammainc(a, x) / dx."""
    return x ** np.subtract(a, 1.0) * np.exp(-x) * rgamma(a)


def _t_logdensity(df, t):
    """log of Student's t density with df degrees of freedom at t."""
    df = np.asarray(df, dtype=np.float64) if not _is_traced(df) else df
    return (gammaln(0.5 * (df + 1.0)) - gammaln(0.5 * df)
            - 0.5 * np.log(df * math.pi) - 0.5 * (df + 1.0) * np.log1p(t * t / df))


ROWS = {name: _Row(name, names.split(), partials) for name, names, partials in _ROWS}

gamma, gammaln, psi, rgamma, polygamma = (ROWS[n] for n in
                                          ("gamma", "gammaln", "psi", "rgamma", "polygamma"))
beta, betaln, betainc, gammainc, gammaincc = (ROWS[n] for n in
                                              ("beta", "betaln", "betainc", "gammainc",
                                               "gammaincc"))
erf, erfc, erfinv, erfcinv = (ROWS[n] for n in ("erf", "erfc", "erfinv", "erfcinv"))
ndtr, log_ndtr, ndtri, stdtr = (ROWS[n] for n in ("ndtr", "log_ndtr", "ndtri", "stdtr"))
j0, j1, jv, y0, y1, yn = (ROWS[n] for n in ("j0", "j1", "jv", "y0", "y1", "yn"))
i0, i1, iv, ive = (ROWS[n] for n in ("i0", "i1", "iv", "ive"))
digamma = psi
# SciPy's jn is jv (integer orders are real ones); under its own name here
jn = _Row("jn", ["n", "x"], ROWS["jv"].partials, scipy_name="jv")


# -- the composites ---------------------------------------------------------------

def gammasgn(x):
    """The sign of Gamma(x): piecewise constant, so a zero derivative; a
    decision on x's values (inside ad.record, a guard)."""
    values = _special().gammasgn(_plain(x))
    if not _is_traced(x):
        return values
    decide(x, values, "scipy.special.gammasgn")
    if isinstance(x, Array) or np.ndim(values):
        return _array._constant_result(values)
    return float(values)


def expit(x):
    """1 / (1 + e^-x): the recorded sigmoid op."""
    if not _is_traced(x):
        return _special().expit(x)
    return _as_traced(x).sigmoid()


def logit(x):
    """log(x / (1 - x)) = log(x) - log1p(-x)."""
    if not _is_traced(x):
        return _special().logit(x)
    return np.log(x) - np.log1p(-x)


def _as_traced(x):
    return _array._constant(x) if isinstance(x, (np.ndarray, list)) else x


def _times_log(name, x, y, log, edge):
    """x * log(y) (log1p for xlog1py, whose domain's edge is -1), as SciPy's:
    0 where x is 0 and y is not NaN; -inf * x at the edge and NaN beyond
    it where x is not 0.  The derivative in x is log(y), at x = 0 too,
    except where log(y) is -inf or NaN: there it is 0 at x = 0, as is the
    derivative in y.  Computed with masks, and log only inside its domain
    (no warnings, no NaN from the branches not taken)."""
    if not (_is_traced(x) or _is_traced(y)):
        return getattr(_special(), name)(x, y)
    x, y = _as_traced(x), _as_traced(y)
    at = _mask("EQ", y, edge)
    below = _mask("LT", y, edge)
    inside = 1.0 - at - below           # (1 where y is NaN: log gives NaN)
    safe = _select(y, inside) + (1.0 - inside) * (edge + 1.0)
    logs = _select(log(safe), inside) + _select(-math.inf, at) + _select(math.nan, below)
    # where x is 0 and log(y) is -inf or NaN: 0
    off = _mask("EQ", x, 0.0) * (1.0 - inside)
    return x * _select(logs, 1.0 - off)


def xlogy(x, y):
    return _times_log("xlogy", x, y, np.log, 0.0)


def xlog1py(x, y):
    return _times_log("xlog1py", x, y, np.log1p, -1.0)


def multigammaln(a, d):
    """log of the multivariate gamma function of dimension d (an integer):
    d(d-1)/4 log(pi) + sum_j gammaln(a - j/2)."""
    if not _is_traced(a):
        return _special().multigammaln(a, d)
    if _is_traced(d) or int(d) != d or d < 1:
        raise ValueError("scipy.special.multigammaln: d must be a positive "
                         "integer (a plain number)")
    d = int(d)
    if np.any(_plain(a) <= 0.5 * (d - 1)):
        raise ValueError(f"scipy.special.multigammaln: a must be greater than "
                         f"(d - 1) / 2 = {0.5 * (d - 1)}")
    out = d * (d - 1) * 0.25 * math.log(math.pi)
    for j in range(d):
        out = out + gammaln(a - 0.5 * j)
    return out


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) over axis, as scipy.special.logsumexp; with
    return_sign, (log|sum|, sign of the sum), the sign a plain ndarray (or
    float) with no derivative.  a and b are both differentiated."""
    if not (_is_traced(a) or _is_traced(b)):
        return _special().logsumexp(a, axis=axis, b=b, keepdims=keepdims,
                                    return_sign=return_sign)
    a = _array._asarray(a)
    if b is not None and not _is_traced(b):
        b = np.asarray(b, dtype=np.float64)
        if (b >= 0).all():      # weights: a shift of a by log(b), in the C op
            with np.errstate(divide="ignore"):
                a, b = a + np.log(b), None
    if b is None:
        out = _lse(a, axis=axis, keepdims=keepdims)
        if not return_sign:
            return out
        sign = np.where(np.isneginf(_plain(out)), 0.0, 1.0)
        return out, (float(sign) if np.ndim(sign) == 0 else sign)
    shape = np.broadcast_shapes(a.shape, np.shape(_plain(b)))
    a = broadcast_to(a, shape) if a.shape != shape else a
    # shifted by the log-sum-exp of a (recorded: a replay at other inputs
    # does not overflow), 0 where that is not finite
    shift = _lse(a, axis=axis, keepdims=True)
    shift = _select(shift, _mask("LT", abs(shift), math.inf))
    s = (b * np.exp(a - shift)).sum(axis=axis, keepdims=True)
    sign = np.sign(_plain(s))
    out = np.log(abs(s)) + shift
    if not keepdims:
        out = _squeeze(out, axis, len(shape))
        sign = _squeeze(sign, axis, len(shape))
    if return_sign:
        return out, (float(sign) if np.ndim(sign) == 0 else sign)
    if (sign < 0).any():        # the log of a negative sum: NaN, as SciPy's
        out = out + np.where(sign < 0, np.nan, 0.0)
    return out


def softmax(x, axis=None):
    """exp(x) / sum(exp(x)) over axis (all of x by default), as
    scipy.special.softmax: x shifted by its recorded log-sum-exp."""
    if not _is_traced(x):
        return _special().softmax(x, axis=axis)
    return _softmax(x, axis=axis)


def log_softmax(x, axis=None):
    """x - logsumexp(x) over axis (all of x by default), as
    scipy.special.log_softmax."""
    if not _is_traced(x):
        return _special().log_softmax(x, axis=axis)
    return _log_softmax(x, axis=axis)


def _squeeze(z, axis, ndim):
    axes = tuple(range(ndim)) if axis is None else \
        tuple(d % ndim for d in np.atleast_1d(axis))
    shape = tuple(n for d, n in enumerate(np.shape(_plain(z))) if d not in axes)
    return z.reshape(shape)


# -- NumPy's dispatch: scipy.special's ufuncs on Values and Arrays -------------

# this module's function of each scipy.special ufunc (by name)
_UFUNC_NAMES = dict({name: row for name, row in ROWS.items()},
                    gammasgn=gammasgn, expit=expit, logit=logit,
                    xlogy=xlogy, xlog1py=xlog1py)


class ScipyUfuncs(dict):
    """A ufunc table (numpy_interop's) that also holds scipy.special's
    ufuncs once scipy.special has been imported: looked up at the first
    ufunc not found, so that importing pyautodiff does not import SciPy."""

    _added = False

    def _add_scipy(self):
        special = sys.modules.get("scipy.special")
        if special is None or self._added:
            return False
        self._added = True
        for name, fn in _UFUNC_NAMES.items():
            self.setdefault(getattr(special, name), fn)
        return True

    def __contains__(self, ufunc):
        return dict.__contains__(self, ufunc) or \
            (self._add_scipy() and dict.__contains__(self, ufunc))

    def __missing__(self, ufunc):
        if self._add_scipy() and dict.__contains__(self, ufunc):
            return dict.__getitem__(self, ufunc)
        raise KeyError(ufunc)


def with_scipy_ufuncs(table):
    """table (a ufunc -> recording dict) with scipy.special's rows too."""
    return ScipyUfuncs(table)


__all__ = ["gamma", "gammaln", "gammasgn", "digamma", "psi", "polygamma",
           "rgamma", "multigammaln", "beta", "betaln", "betainc", "gammainc",
           "gammaincc", "erf", "erfc", "erfinv", "erfcinv", "expit", "logit",
           "logsumexp", "softmax", "log_softmax", "i0", "i1", "iv", "ive", "j0",
           "j1", "jn", "jv", "y0", "y1", "yn", "xlogy", "xlog1py", "ndtr",
           "log_ndtr", "ndtri", "stdtr"]


scipy_own.register("scipy.special", sys.modules[__name__])
