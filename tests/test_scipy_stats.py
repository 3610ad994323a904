"""scipy.stats' densities and distribution functions on traced values
(pyautodiff.scipy_stats and the autograd.scipy.stats drop-in): values
against scipy.stats; gradients in every differentiated argument against
central differences and HIPS autograd's autograd.scipy.stats; second order
against central differences of our gradient (and autograd's Hessian);
third order through nesting against central differences of ad.hvp; the
errors for the arguments not differentiated."""
import numpy as np
import pytest

st = pytest.importorskip("scipy.stats")
import pyautodiff as ad                               # noqa: E402
from pyautodiff import scipy_stats as S               # noqa: E402

H = 1e-5
X = np.array([0.3, 1.2, 2.5])
U = np.array([0.2, 0.55, 0.9])

# (distribution, method, arguments, the positions differentiated by HIPS
# autograd too, the positions differentiated by pyautodiff)
CASES = [
    ("norm", "logpdf", (X, 0.5, 1.5), (0, 1, 2), (0, 1, 2)),
    ("norm", "pdf", (X, 0.5, 1.5), (0, 1, 2), (0, 1, 2)),
    ("norm", "cdf", (X, 0.5, 1.5), (0, 1, 2), (0, 1, 2)),
    ("norm", "logcdf", (X, 0.5, 1.5), (0, 1, 2), (0, 1, 2)),
    ("norm", "sf", (X, 0.5, 1.5), (0, 1, 2), (0, 1, 2)),
    ("norm", "logsf", (X, 0.5, 1.5), (0, 1, 2), (0, 1, 2)),
    ("t", "logpdf", (X, 3.5, 0.5, 1.5), (0, 1, 2, 3), (0, 1, 2, 3)),
    ("t", "pdf", (X, 3.5, 0.5, 1.5), (0, 1, 2, 3), (0, 1, 2, 3)),
    ("t", "cdf", (X, 3.5, 0.5, 1.5), (0, 2), (0, 2, 3)),
    ("t", "logcdf", (X, 3.5, 0.5, 1.5), (0, 2), (0, 2, 3)),
    ("gamma", "logpdf", (X, 2.5), (0, 1), (0, 1)),
    ("gamma", "pdf", (X, 2.5), (0, 1), (0, 1)),
    ("gamma", "cdf", (X, 2.5), (0,), (0,)),
    ("chi2", "logpdf", (X, 3.0), (0,), (0, 1)),
    ("chi2", "pdf", (X, 3.0), (0,), (0, 1)),
    ("chi2", "cdf", (X, 3.0), (0,), (0,)),
    ("beta", "logpdf", (U, 2.0, 3.0), (0, 1, 2), (0, 1, 2)),
    ("beta", "pdf", (U, 2.0, 3.0), (0, 1, 2), (0, 1, 2)),
    ("beta", "cdf", (U, 2.0, 3.0), (0,), (0,)),
]
IDS = [f"{d}.{m}" for d, m, *_ in CASES]


def _fns(dist, method):
    return getattr(getattr(S, dist), method), getattr(getattr(st, dist), method)


def _with(args, k, value):
    out = list(args)
    out[k] = value
    return out


def _numeric(fn, args, k):
    """d sum(fn(*args)) / d args[k] by central differences."""
    x = np.asarray(args[k], dtype=np.float64)
    g = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += H
        down[idx] -= H
        g[idx] = (np.sum(fn(*_with(args, k, up))) - np.sum(fn(*_with(args, k, down)))) / (2 * H)
    return g if x.ndim else float(g)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_and_gradients(case):
    import autograd
    import autograd.scipy.stats as ast
    dist, method, args, in_autograd, ours_wrt = case
    ours, theirs = _fns(dist, method)
    np.testing.assert_allclose(ours(ad.Array(args[0]), *args[1:]).data, theirs(*args),
                               rtol=1e-12, atol=1e-300)
    assert np.array_equal(ours(*args), theirs(*args))     # plain: scipy's own
    v = ours(ad.Value(float(args[0][1])), *args[1:])
    assert isinstance(v, ad.Value)
    np.testing.assert_allclose(v.data, theirs(args[0][1], *args[1:]), rtol=1e-12)
    theirs_ag = getattr(getattr(ast, dist), method)
    for k in ours_wrt:
        g = ad.grad(lambda z: np.sum(ours(*_with(args, k, z))))(args[k])
        np.testing.assert_allclose(g, _numeric(theirs, args, k), rtol=1e-5, atol=1e-8)
        if k in in_autograd:
            expected = autograd.grad(lambda z: np.sum(theirs_ag(*_with(args, k, z))))(args[k])
            np.testing.assert_allclose(g, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_second_and_third_order(case):
    dist, method, args, _, ours_wrt = case
    ours, _ = _fns(dist, method)
    for k in ours_wrt:
        def f(z, k=k):
            return np.sum(ours(*_with(args, k, z)))
        x = np.asarray(args[k], dtype=np.float64)
        v = np.cos(np.arange(x.size) + 1.0).reshape(x.shape)
        hv = ad.hvp(f)(x, v)
        np.testing.assert_allclose(hv, (ad.grad(f)(x + H * v) - ad.grad(f)(x - H * v)) / (2 * H),
                                   rtol=1e-5, atol=1e-7)
        third = ad.grad(lambda y: np.sum(ad.hvp(f)(y, v) * v))(x)
        expected = _numeric(lambda y: np.sum(ad.hvp(f)(y, v) * v), [x], 0)
        np.testing.assert_allclose(third, expected, rtol=1e-4, atol=1e-6)


def test_hessians_against_autograd():
    import autograd
    import autograd.scipy.stats as ast
    for ours, theirs in ((S.norm.logcdf, ast.norm.logcdf), (S.t.logpdf, ast.t.logpdf)):
        def f(p, fn):
            return np.sum(fn(X, *p) if fn in (S.norm.logcdf, ast.norm.logcdf)
                          else fn(X, p[0] + 2.0, *p))
        p = np.array([0.5, 1.5])
        np.testing.assert_allclose(ad.hessian(lambda p: f(p, ours))(p),
                                   autograd.hessian(lambda p: f(p, theirs))(p), rtol=1e-8)


def test_outside_the_support():
    # log densities of -inf (no NaN) and distribution functions of 0 or 1,
    # with zero derivatives there
    x = np.array([-1.0, 0.5, 1.5])
    out = S.beta.logpdf(ad.Array(x), 2.0, 3.0)
    np.testing.assert_allclose(out.data, st.beta.logpdf(x, 2.0, 3.0))
    g = ad.grad(lambda x: np.sum(S.beta.pdf(x, 2.0, 3.0)))(x)
    assert g[0] == g[2] == 0.0 and np.isfinite(g[1])
    np.testing.assert_allclose(S.beta.cdf(ad.Array(x), 2.0, 3.0).data, st.beta.cdf(x, 2.0, 3.0))
    np.testing.assert_allclose(S.gamma.logpdf(ad.Array(x), 2.0).data, st.gamma.logpdf(x, 2.0))
    np.testing.assert_allclose(S.gamma.cdf(ad.Array(x), 2.0).data, st.gamma.cdf(x, 2.0))
    assert ad.grad(lambda x: np.sum(S.gamma.cdf(x, 2.0)))(x)[0] == 0.0


def test_recorded_and_replayed():
    # the support's masks and the special functions' entries replay at new
    # inputs, on either side of the support's edge
    x0, x1 = np.array([0.5, 1.5, 2.0]), np.array([-0.5, 0.7, 3.0])

    def f(x):
        return np.sum(S.gamma.cdf(x, 2.0) + S.beta.pdf(x / 4.0, 2.0, 3.0)
                      + S.norm.logsf(x, 0.5, 2.0))

    def f_scipy(x):
        return np.sum(st.gamma.cdf(x, 2.0) + st.beta.pdf(x / 4.0, 2.0, 3.0)
                      + st.norm.logsf(x, 0.5, 2.0))
    np.testing.assert_allclose(ad.record(f, x0)(x1), f_scipy(x1), rtol=1e-13)
    np.testing.assert_allclose(ad.record(ad.grad(f), x0)(x1), _numeric(f_scipy, [x1], 0),
                               rtol=1e-6)
    # a recording's Hessian, in the C second-order sweep
    np.testing.assert_allclose(ad.record(f, x0).hessian(x1), ad.hessian(f)(x1),
                               rtol=1e-12, atol=1e-14)


def test_poisson():
    import autograd
    import autograd.scipy.stats as ast
    k = np.array([0.0, 1.0, 3.0, 2.5, -1.0])
    mu = 2.2
    for method in ("logpmf", "pmf", "cdf"):
        ours, theirs = getattr(S.poisson, method), getattr(st.poisson, method)
        np.testing.assert_allclose(ours(k, ad.Value(mu)).data, theirs(k, mu), rtol=1e-12)
        g = ad.grad(lambda m: np.sum(ours(k, m)))(mu)
        # (central differences of -inf are NaN: the k off the integers have none)
        ks = k[np.isfinite(st.poisson.logpmf(k, mu))] if method == "logpmf" else k
        np.testing.assert_allclose(g, _numeric(theirs, [ks, mu], 1), rtol=1e-6)
        if method != "logpmf":      # (autograd's logpmf gives k = 2.5 a 0, not -inf's 0 too)
            np.testing.assert_allclose(
                g, autograd.grad(lambda m: np.sum(getattr(ast.poisson, method)(k, m)))(mu),
                rtol=1e-10)
        h = ad.grad(ad.grad(lambda m: np.sum(ours(k, m))))(mu)
        np.testing.assert_allclose(h, (ad.grad(lambda m: np.sum(ours(k, m)))(mu + H)
                                       - ad.grad(lambda m: np.sum(ours(k, m)))(mu - H)) / (2 * H),
                                   rtol=1e-5)
    mus = np.array([1.5, 2.0, 4.0])
    np.testing.assert_allclose(ad.grad(lambda m: np.sum(S.poisson.logpmf(3.0, m)))(mus),
                               3.0 / mus - 1.0, rtol=1e-14)
    with pytest.raises(NotImplementedError, match="poisson.logpmf.*argument k"):
        ad.grad(lambda k: S.poisson.logpmf(k, 2.0))(1.0)


def test_dirichlet():
    import autograd
    import autograd.scipy.stats as ast
    x, alpha = np.array([0.2, 0.3, 0.5]), np.array([1.5, 2.0, 3.0])
    for method in ("logpdf", "pdf"):
        ours = getattr(S.dirichlet, method)
        theirs, theirs_ag = getattr(st.dirichlet, method), getattr(ast.dirichlet, method)
        np.testing.assert_allclose(ours(ad.Array(x), alpha).data, theirs(x, alpha), rtol=1e-12)
        for k in (0, 1):
            g = ad.grad(lambda z: ours(*_with([x, alpha], k, z)))([x, alpha][k])
            np.testing.assert_allclose(
                g, autograd.grad(lambda z: theirs_ag(*_with([x, alpha], k, z)))([x, alpha][k]),
                rtol=1e-10)
        h = ad.hessian(lambda a: ours(x, a))(alpha)
        np.testing.assert_allclose(h, ad.jacobian(ad.grad(lambda a: ours(x, a)))(alpha),
                                   rtol=1e-10)
    # several points, the components along the first axis, as scipy.stats'
    xs = np.array([[0.2, 0.6], [0.3, 0.1], [0.5, 0.3]])
    np.testing.assert_allclose(S.dirichlet.logpdf(xs, ad.Array(alpha)).data,
                               st.dirichlet.logpdf(xs, alpha), rtol=1e-12)
    with pytest.raises(ValueError, match="simplex"):
        S.dirichlet.logpdf(ad.Array(np.array([0.2, 0.3, 0.6])), alpha)


COV = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, -0.2], [0.1, -0.2, 1.5]])
MEAN = np.array([0.1, -0.2, 0.3])
XS = np.array([[0.3, 0.4, -0.1], [1.0, -1.0, 0.2]])


@pytest.mark.parametrize("x", [XS, XS[0]], ids=["points", "point"])
@pytest.mark.parametrize("method", ["logpdf", "pdf"])
def test_multivariate_normal(x, method):
    import autograd
    import autograd.scipy.stats as ast
    ours, theirs = getattr(S.multivariate_normal, method), getattr(st.multivariate_normal, method)
    theirs_ag = getattr(ast.multivariate_normal, method)
    args = [x, MEAN, COV]
    out = ours(ad.Array(x), MEAN, COV)
    np.testing.assert_allclose(out.data, theirs(*args), rtol=1e-12)
    assert np.shape(out.data) == np.shape(theirs(*args))
    for k in range(3):
        g = ad.grad(lambda z: np.sum(ours(*_with(args, k, z))))(args[k])
        expected = autograd.grad(lambda z: np.sum(theirs_ag(*_with(args, k, z))))(args[k])
        np.testing.assert_allclose(g, expected, rtol=1e-9, atol=1e-12)
    # second order in the mean against autograd's Hessian, and in cov by
    # central differences of our gradient
    np.testing.assert_allclose(
        ad.hessian(lambda m: np.sum(ours(x, m, COV)))(MEAN),
        autograd.hessian(lambda m: np.sum(theirs_ag(x, m, COV)))(MEAN), rtol=1e-9, atol=1e-12)
    d = np.outer(np.cos(np.arange(3.0)), np.cos(np.arange(3.0)))

    def f(c):
        return np.sum(ours(x, MEAN, c))
    hv = ad.hvp(f)(COV, d)
    np.testing.assert_allclose(hv, (ad.grad(f)(COV + H * d) - ad.grad(f)(COV - H * d)) / (2 * H),
                               rtol=1e-5, atol=1e-8)


def test_multivariate_normal_scalars_and_singular():
    # a scalar or diagonal covariance, no mean
    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(S.multivariate_normal.logpdf(ad.Array(x), cov=2.0).data,
                               st.multivariate_normal.logpdf(x, cov=2.0), rtol=1e-12)
    np.testing.assert_allclose(
        S.multivariate_normal.logpdf(ad.Array(x), np.zeros(2), np.array([2.0, 0.5])).data,
        st.multivariate_normal.logpdf(x, np.zeros(2), np.array([2.0, 0.5])), rtol=1e-12)
    # one dimension: a 1-D x is several points
    np.testing.assert_allclose(S.multivariate_normal.logpdf(ad.Array(x), 0.5, 2.0).data,
                               st.multivariate_normal.logpdf(x, 0.5, 2.0), rtol=1e-12)
    # a singular covariance with allow_singular: x and mean differentiated
    cov = np.array([[1.0, 1.0], [1.0, 1.0]])
    pts = np.array([[0.5, 0.5], [-0.2, -0.2]])
    out = S.multivariate_normal.logpdf(ad.Array(pts), np.zeros(2), cov, allow_singular=True)
    np.testing.assert_allclose(out.data, st.multivariate_normal.logpdf(
        pts, np.zeros(2), cov, allow_singular=True), rtol=1e-10)
    g = ad.grad(lambda m: np.sum(S.multivariate_normal.logpdf(pts, m, cov,
                                                                allow_singular=True)))(np.zeros(2))
    np.testing.assert_allclose(g, np.sum(pts, axis=0) / 2.0, rtol=1e-10)
    with pytest.raises(NotImplementedError, match="cov"):
        ad.grad(lambda c: np.sum(S.multivariate_normal.logpdf(pts, np.zeros(2), c,
                                                              allow_singular=True)))(cov)
    with pytest.raises(np.linalg.LinAlgError):
        S.multivariate_normal.logpdf(ad.Array(pts), np.zeros(2), cov)


@pytest.mark.parametrize("call,name", [
    (lambda df: S.t.cdf(0.3, df), "t.cdf.*argument df"),
    (lambda a: S.gamma.cdf(0.3, a), "gamma.cdf.*argument a"),
    (lambda df: S.chi2.cdf(0.3, df), "chi2.cdf.*argument df"),
    (lambda a: S.beta.cdf(0.3, a, 2.0), "beta.cdf.*argument a"),
    (lambda b: S.beta.cdf(0.3, 2.0, b), "beta.cdf.*argument b")])
def test_arguments_not_differentiated_raise(call, name):
    with pytest.raises(NotImplementedError, match=name):
        ad.grad(call)(2.0)


def test_the_autograd_dropin():
    from pyautodiff.autograd import grad, hessian
    import pyautodiff.autograd.numpy as anp
    import pyautodiff.autograd.scipy.stats as stats
    from pyautodiff.autograd.scipy.stats import multivariate_normal, norm, t
    assert stats.norm is norm and stats.t is t
    for module, methods in (("norm", "pdf logpdf cdf logcdf sf logsf"),
                            ("t", "pdf logpdf cdf logcdf"), ("gamma", "pdf logpdf cdf"),
                            ("beta", "pdf logpdf cdf"), ("chi2", "pdf logpdf cdf"),
                            ("poisson", "pmf logpmf cdf"), ("dirichlet", "pdf logpdf"),
                            ("multivariate_normal", "pdf logpdf")):
        for method in methods.split():
            assert getattr(getattr(stats, module), method) is \
                getattr(getattr(S, module), method)

    def loss(mu):
        return -anp.sum(norm.logpdf(X, mu, 2.0))
    np.testing.assert_allclose(grad(loss)(0.5), -np.sum(X - 0.5) / 4.0, rtol=1e-14)
    np.testing.assert_allclose(hessian(loss)(0.5), X.size / 4.0, rtol=1e-14)
    np.testing.assert_allclose(
        grad(lambda m: multivariate_normal.logpdf(XS[0], m, COV))(MEAN),
        np.linalg.solve(COV, XS[0] - MEAN), rtol=1e-12)


def test_dirichlet_rvs_as_autograds():
    import pyautodiff.autograd.scipy.stats as pstats
    alpha = np.array([1.0, 2.0, 3.0])
    x = pstats.dirichlet.rvs(alpha, size=2, random_state=0)
    assert x.shape == (2, 3) and np.allclose(x.sum(axis=1), 1.0)
    assert np.array_equal(x, st.dirichlet.rvs(alpha, size=2, random_state=0))
    # one sample by default, in a batch of one, as scipy's (and autograd's)
    one = pstats.dirichlet.rvs(alpha, random_state=0)
    assert one.shape == (1, 3) and np.array_equal(one, st.dirichlet.rvs(alpha, random_state=0))
    with pytest.raises(NotImplementedError, match="dirichlet.rvs"):
        ad.grad(lambda a: pstats.dirichlet.rvs(a)[0, 0])(alpha)


def test_multivariate_normal_entropy():
    import pyautodiff.autograd.scipy.stats as pstats
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4))
    cov, mean = a @ a.T + np.eye(4), rng.normal(size=4)
    for c in (cov, np.diag(cov), 2.0):
        got = pstats.multivariate_normal.entropy(mean, ad.Array(np.asarray(c)))
        assert float(got) == pytest.approx(st.multivariate_normal.entropy(mean, c), rel=1e-13)
    # d/dcov (log det cov) / 2 = cov^-T / 2, as autograd's
    g = ad.grad(lambda c: pstats.multivariate_normal.entropy(mean, c))(cov)
    np.testing.assert_allclose(g, 0.5 * np.linalg.inv(cov).T, rtol=1e-12)
    ag = pytest.importorskip("autograd")
    import autograd.scipy.stats as astats
    np.testing.assert_allclose(
        g, ag.grad(lambda c: astats.multivariate_normal.entropy(mean, c))(cov), rtol=1e-12)
    h = ad.hessian(lambda c: pstats.multivariate_normal.entropy(mean, c))(np.diag(cov))
    np.testing.assert_allclose(h, np.diag(-0.5 / np.diag(cov) ** 2), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="allow_singular"):
        pstats.multivariate_normal.entropy(mean, ad.Array(cov), allow_singular=True)
