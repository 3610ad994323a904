"""scipy.stats' densities and distribution functions on Values and Arrays:
norm, t, gamma, beta, chi2, poisson, dirichlet and multivariate_normal,
each a namespace of functions with scipy.stats' signatures (``norm.logpdf(x,
loc=0, scale=1)`` ...).

On plain numbers each is scipy.stats' own function.  With a traced
argument each is a composite of recorded ops and of scipy_special's
functions (norm.cdf is ndtr of the standardized x, t.cdf Student's stdtr,
gamma.cdf gammainc ...), so it is differentiable to any order in every
argument those are: a distribution function's shape parameter (t.cdf's
df, gamma.cdf's a, beta.cdf's a and b) is not differentiated and raises
NotImplementedError where it moves, and so does poisson's k (an integer).
Outside a density's support (x < 0 for gamma, x outside [0, 1] for beta)
the log density is -inf with a zero derivative: the decisions are masks.
"""
import math
import sys
import types

import numpy as np

from . import array as _array, scipy_own
from .array import Array
from .guards import decide
from .numpy_elementwise import _mask, _select
from .scipy_special import (_is_traced, _moves, _plain, betainc, betaln, gammainc,
                            gammaincc, gammaln, log_ndtr, ndtr, stdtr, xlog1py, xlogy)
from .scipy_special import _t_logdensity

_LOG_2PI = math.log(2.0 * math.pi)


def _stats():
    """scipy.stats, imported at the first call on plain numbers."""
    try:
        import scipy.stats
    except ImportError:             # pragma: no cover (scipy is installed here)
        raise ImportError("pyautodiff's scipy.stats functions need SciPy "
                          "(pip install scipy)") from None
    return scipy.stats


def _distribution(name, **composites):
    """The namespace of distribution name: each function is scipy.stats'
    on plain arguments and the composite given for traced ones."""
    def wrap(method, composite):
        def fn(*args, **kwargs):
            if not any(map(_is_traced, list(args) + list(kwargs.values()))):
                return getattr(getattr(_stats(), name), method)(*args, **kwargs)
            return composite(*args, **kwargs)
        fn.__name__ = fn.__qualname__ = method
        fn.__doc__ = f"scipy.stats.{name}.{method}, recorded for Values and Arrays."
        return fn
    return types.SimpleNamespace(**{m: wrap(m, c) for m, c in composites.items()},
                                 __name__=name)


def _traced(*args):
    """args with ndarrays and lists as constant Arrays (so that they
    broadcast against Values as Arrays)."""
    return [_array._constant(x) if isinstance(x, (np.ndarray, list)) else x for x in args]


def _le(x, y):
    """The mask x <= y (0 where either is NaN)."""
    return _mask("LT", x, y) + _mask("EQ", x, y)


def _sel(z, m):
    """z where the 0/1 mask m is 1, else 0 (no derivative, nor NaN, from z
    there); either may be plain."""
    if not (_is_traced(z) or _is_traced(m)):
        return np.where(m != 0.0, z, 0.0)
    if isinstance(z, Array) or isinstance(m, Array) or np.ndim(_plain(z)) or \
            np.ndim(_plain(m)):
        return _array._select(*_traced(np.asarray(z) if not _is_traced(z) else z,
                                       np.asarray(m) if not _is_traced(m) else m))
    return _select(z, m)


def _where(m, a, b):
    """a where the 0/1 mask m is 1, else b (no derivative, nor NaN, from the
    other branch)."""
    return _sel(a, m) + _sel(b, 1.0 - m)


def _constant_arg(x, name, arg):
    """A non-differentiated argument's values: raises where it moves."""
    if _is_traced(x):
        if _moves(x):
            raise NotImplementedError(
                f"scipy.stats.{name}: no derivative with respect to its argument "
                f"{arg}; pass {arg} as a constant")
        return x._d
    return x


# -- norm ----------------------------------------------------------------------

def _standard(x, loc, scale):
    x, loc, scale = _traced(x, loc, scale)
    return (x - loc) / scale, scale


def _norm_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _standard(x, loc, scale)
    return -0.5 * z * z - np.log(scale) - 0.5 * _LOG_2PI


norm = _distribution(
    "norm",
    logpdf=_norm_logpdf,
    pdf=lambda x, loc=0.0, scale=1.0: np.exp(_norm_logpdf(x, loc, scale)),
    cdf=lambda x, loc=0.0, scale=1.0: ndtr(_standard(x, loc, scale)[0]),
    logcdf=lambda x, loc=0.0, scale=1.0: log_ndtr(_standard(x, loc, scale)[0]),
    sf=lambda x, loc=0.0, scale=1.0: ndtr(-_standard(x, loc, scale)[0]),
    logsf=lambda x, loc=0.0, scale=1.0: log_ndtr(-_standard(x, loc, scale)[0]))


# -- t -----------------------------------------------------------------------------

def _t_logpdf(x, df, loc=0.0, scale=1.0):
    z, scale = _standard(x, loc, scale)
    (df,) = _traced(df)
    return _t_logdensity(df, z) - np.log(scale)


def _t_cdf(x, df, loc=0.0, scale=1.0):
    df = _constant_arg(df, "t.cdf", "df")
    return stdtr(df, _standard(x, loc, scale)[0])


t = _distribution(
    "t", logpdf=_t_logpdf,
    pdf=lambda x, df, loc=0.0, scale=1.0: np.exp(_t_logpdf(x, df, loc, scale)),
    cdf=_t_cdf,
    logcdf=lambda x, df, loc=0.0, scale=1.0: np.log(_t_cdf(x, df, loc, scale)))


# -- gamma and chi2 -------------------------------------------------------------

def _gamma_logpdf(x, a, loc=0.0, scale=1.0):
    y, scale = _standard(x, loc, scale)
    (a,) = _traced(a)
    inside = _le(0.0, y)
    y = _where(inside, y, 1.0)          # (log of 1 outside: no warning)
    return _where(inside, xlogy(a - 1.0, y) - y - gammaln(a), -np.inf) - np.log(scale)


def _gamma_cdf(x, a, loc=0.0, scale=1.0, name="gamma.cdf", arg="a"):
    a = _constant_arg(a, name, arg)
    y, _ = _standard(x, loc, scale)
    return gammainc(a, _sel(y, _le(0.0, y)))        # 0 below 0


gamma = _distribution(
    "gamma", logpdf=_gamma_logpdf,
    pdf=lambda x, a, loc=0.0, scale=1.0: np.exp(_gamma_logpdf(x, a, loc, scale)),
    cdf=_gamma_cdf)


def _chi2_logpdf(x, df, loc=0.0, scale=1.0):
    return _gamma_logpdf(x, _half(df), loc, _twice(scale))


def _half(z):
    return 0.5 * (np.asarray(z, dtype=np.float64) if isinstance(z, list) else z)


def _twice(z):
    return 2.0 * (np.asarray(z, dtype=np.float64) if isinstance(z, list) else z)


chi2 = _distribution(
    "chi2", logpdf=_chi2_logpdf,
    pdf=lambda x, df, loc=0.0, scale=1.0: np.exp(_chi2_logpdf(x, df, loc, scale)),
    cdf=lambda x, df, loc=0.0, scale=1.0: _gamma_cdf(
        x, _half(_constant_arg(df, "chi2.cdf", "df")), loc, _twice(scale)))


# -- beta ---------------------------------------------------------------------------

def _beta_logpdf(x, a, b, loc=0.0, scale=1.0):
    y, scale = _standard(x, loc, scale)
    a, b = _traced(a, b)
    inside = _le(0.0, y) * _le(y, 1.0)
    y = _where(inside, y, 0.5)
    return _where(inside, xlogy(a - 1.0, y) + xlog1py(b - 1.0, -y) - betaln(a, b),
                  -np.inf) - np.log(scale)


def _beta_cdf(x, a, b, loc=0.0, scale=1.0):
    a = _constant_arg(a, "beta.cdf", "a")
    b = _constant_arg(b, "beta.cdf", "b")
    y, _ = _standard(x, loc, scale)
    above = _mask("LT", 1.0, y)
    # y clipped to [0, 1] by masks: 0 below, 1 above
    return betainc(a, b, _sel(y, _le(0.0, y) * _le(y, 1.0)) + above)


beta = _distribution(
    "beta", logpdf=_beta_logpdf,
    pdf=lambda x, a, b, loc=0.0, scale=1.0: np.exp(_beta_logpdf(x, a, b, loc, scale)),
    cdf=_beta_cdf)


# -- poisson -------------------------------------------------------------------------

def _poisson_k(k, loc, name):
    """k - loc (plain: k is an integer, not differentiated), the mask of
    the nonnegative integers among them and those as safe values."""
    k = np.asarray(_constant_arg(k, name, "k"), dtype=np.float64) - \
        np.asarray(_constant_arg(loc, name, "loc"), dtype=np.float64)
    valid = (k >= 0) & (k == np.floor(k))
    return k, valid.astype(np.float64), np.where(valid, k, 0.0)


def _poisson_logpmf(k, mu, loc=0):
    _, valid, k = _poisson_k(k, loc, "poisson.logpmf")
    (mu,) = _traced(mu)
    return _where(valid, xlogy(k, mu) - gammaln(k + 1.0) - mu, -np.inf)


def _poisson_cdf(k, mu, loc=0):
    k, _, _ = _poisson_k(k, loc, "poisson.cdf")
    (mu,) = _traced(mu)
    nonneg = (k >= 0).astype(np.float64)
    return _sel(gammaincc(np.floor(np.maximum(k, 0.0)) + 1.0, mu), nonneg)


poisson = _distribution(
    "poisson", logpmf=_poisson_logpmf,
    pmf=lambda k, mu, loc=0: np.exp(_poisson_logpmf(k, mu, loc)),
    cdf=_poisson_cdf)


# -- dirichlet ----------------------------------------------------------------------

def _dirichlet_logpdf(x, alpha):
    xv, av = np.asarray(_plain(x), dtype=np.float64), np.asarray(_plain(alpha),
                                                                  dtype=np.float64)
    if av.ndim != 1 or not (av > 0).all():
        raise ValueError("scipy.stats.dirichlet: alpha must be a 1-D array of "
                         "positive numbers")
    if xv.ndim not in (1, 2) or xv.shape[0] != av.shape[0]:
        raise ValueError(f"scipy.stats.dirichlet: x must have {av.shape[0]} "
                         f"components along its first axis (got shape {xv.shape}); "
                         "pyautodiff takes all of them (not one fewer)")
    if (xv < 0).any() or (xv > 1).any() or \
            (np.abs(xv.sum(axis=0) - 1.0) > 10e-10).any():
        raise ValueError("scipy.stats.dirichlet: x must lie in the simplex "
                         "(between 0 and 1, summing to 1 along the first axis)")
    x, alpha = _traced(x, alpha)
    a = alpha if xv.ndim == 1 else _array._asarray(alpha).reshape((-1, 1))
    log_norm = gammaln(_array._asarray(alpha).sum()) - gammaln(alpha).sum()
    return xlogy(a - 1.0, x).sum(axis=0) + log_norm


dirichlet = _distribution(
    "dirichlet", logpdf=_dirichlet_logpdf,
    pdf=lambda x, alpha: np.exp(_dirichlet_logpdf(x, alpha)))


# -- multivariate_normal ----------------------------------------------------------

def _mvn_logpdf(x, mean=None, cov=1, allow_singular=False):
    mv = None if mean is None else np.asarray(_plain(mean), dtype=np.float64)
    cv = np.asarray(_plain(cov), dtype=np.float64)
    # the dimension as scipy.stats takes it: the mean's, else the covariance's
    dim = mv.size if mv is not None else (cv.shape[0] if cv.ndim else 1)
    x, mean, cov = _traced(x, mean, cov)
    x = _array._asarray(x)
    if x.ndim == 0:
        x = x.reshape((1, 1))
    elif x.ndim == 1:
        x = x.reshape((-1, 1) if dim == 1 else (1, -1))
    if x.shape[-1] != dim:
        raise ValueError(f"scipy.stats.multivariate_normal: x has {x.shape[-1]} "
                         f"components, the mean and covariance {dim}")
    diff = x if mean is None else x - _array._asarray(mean).reshape(-1)
    cov = _array._asarray(cov)
    if cov.ndim == 0:
        cov = cov * np.eye(dim)
    elif cov.ndim == 1:
        cov = cov * np.eye(dim)           # the diagonal
    if allow_singular:
        if _is_traced(cov) and _moves(cov):
            raise NotImplementedError(
                "scipy.stats.multivariate_normal: with allow_singular=True the "
                "density is not differentiable with respect to cov (pass it "
                "as a constant)")
        out = _singular_logpdf(diff, cov._d, dim)
    else:
        np.linalg.cholesky(cov._d)      # a covariance that is not positive definite raises
        _, logdet = np.linalg.slogdet(cov)
        solved = np.linalg.solve(cov, diff.T).T
        out = -0.5 * (dim * _LOG_2PI + logdet + (diff * solved).sum(axis=-1))
    out = out.reshape(tuple(n for n in out.shape if n != 1)) if out.ndim else out
    return out.reshape(()) if out.size == 1 and out.ndim else out


def _singular_logpdf(diff, cov, dim):
    """The density on the support of a singular constant covariance, as
    scipy.stats' (its eigenvalues below a relative 1e6 eps count as 0):
    -inf off the support."""
    s, u = np.linalg.eigh(cov)
    eps = 1e6 * np.finfo(np.float64).eps * np.max(np.abs(s))
    if np.min(s) < -eps:
        raise ValueError("scipy.stats.multivariate_normal: the covariance "
                         "matrix must be positive semidefinite")
    kept = s > eps
    whiten = u[:, kept] / np.sqrt(s[kept])
    maha = ((diff @ whiten) ** 2).sum(axis=-1)
    out = -0.5 * (kept.sum() * _LOG_2PI + np.sum(np.log(s[kept])) + maha)
    null = u[:, ~kept]
    off = (np.abs(_plain(diff) @ null) > 1e-8 * max(1.0, np.max(np.abs(_plain(diff))))).any(
        axis=-1) if null.size else np.zeros(out.shape, dtype=bool)
    # which points are off the support: a decision on the values (inside
    # ad.record, a guard)
    decide(diff, off, "scipy.stats.multivariate_normal.logpdf(allow_singular=True)")
    return _array.where(~off, out, -np.inf) if off.any() else out


def _mvn_entropy(mean=None, cov=1, allow_singular=False):
    """(k (1 + log 2 pi) + log det cov) / 2: no derivative in mean."""
    if allow_singular:
        raise NotImplementedError("scipy.stats.multivariate_normal.entropy with "
                                  "allow_singular=True (a pseudo-determinant)")
    cov = _array._asarray(cov)
    if cov.ndim == 2:
        k, logdet = cov.shape[0], np.linalg.slogdet(cov)[1]
    elif cov.ndim == 1:                 # the diagonal
        k, logdet = cov.shape[0], np.sum(np.log(cov))
    else:                               # a multiple of the identity
        k = int(np.size(_array._plain(mean))) if mean is not None else 1
        logdet = k * np.log(cov)
    return 0.5 * (k * (1.0 + np.log(2.0 * np.pi)) + logdet)


multivariate_normal = _distribution(
    "multivariate_normal", logpdf=_mvn_logpdf, entropy=_mvn_entropy,
    pdf=lambda x, mean=None, cov=1, allow_singular=False:
        np.exp(_mvn_logpdf(x, mean, cov, allow_singular)))


__all__ = ["norm", "t", "gamma", "beta", "chi2", "poisson", "dirichlet",
           "multivariate_normal"]


scipy_own.register("scipy.stats", sys.modules[__name__])
