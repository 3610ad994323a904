"""scipy.special on traced Values and Arrays (pyautodiff.scipy_special, and
SciPy's own ufuncs through NumPy's dispatch): values against SciPy;
gradients against central differences of SciPy's functions and against
HIPS autograd's autograd.scipy.special; second derivatives against central
differences of our gradient; third order through nesting against central
differences of ad.hvp; the conventions of xlogy at 0; logsumexp's
arguments; the errors for the arguments not differentiated."""
import subprocess
import sys

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")
import pyautodiff as ad                                   # noqa: E402
from pyautodiff import scipy_special as S                 # noqa: E402
from pyautodiff.autograd.scipy import special as dropin   # noqa: E402

H = 1e-5

# name: (constant arguments before x, the x values (inside the domain),
# does HIPS autograd have it)
CASES = {
    "gamma": ((), [0.6, 1.7, 3.2], True),
    "gammaln": ((), [0.6, 1.7, 3.2], True),
    "digamma": ((), [0.6, 1.7, 3.2], True),
    "psi": ((), [0.6, 1.7, 3.2], True),
    "rgamma": ((), [0.6, 1.7, 3.2], True),
    "polygamma": ((2,), [0.6, 1.7, 3.2], True),
    "gammainc": ((2.5,), [0.4, 1.7, 3.2], True),
    "gammaincc": ((2.5,), [0.4, 1.7, 3.2], True),
    "betainc": ((2.0, 3.0), [0.2, 0.5, 0.8], True),
    "erf": ((), [-1.2, 0.3, 0.9], True),
    "erfc": ((), [-1.2, 0.3, 0.9], True),
    "erfinv": ((), [-0.6, 0.1, 0.8], True),
    "erfcinv": ((), [0.3, 1.0, 1.6], True),
    "expit": ((), [-2.0, 0.3, 1.5], True),
    "logit": ((), [0.2, 0.5, 0.7], True),
    "i0": ((), [-1.3, 0.5, 2.0], True),
    "i1": ((), [-1.3, 0.5, 2.0], True),
    "iv": ((1.5,), [0.4, 1.1, 2.0], True),
    "ive": ((2.0,), [-1.3, 0.5, 2.0], True),
    "j0": ((), [0.5, 1.5, 3.0], True),
    "j1": ((), [0.5, 1.5, 3.0], True),
    "jn": ((2,), [0.5, 1.5, 3.0], True),
    "y0": ((), [0.5, 1.5, 3.0], True),
    "y1": ((), [0.5, 1.5, 3.0], True),
    "yn": ((2,), [0.5, 1.5, 3.0], True),
    "ndtr": ((), [-1.2, 0.3, 0.9], False),
    "log_ndtr": ((), [-4.0, 0.3, 0.9], False),
    "ndtri": ((), [0.1, 0.5, 0.8], False),
    "stdtr": ((3.0,), [-1.2, 0.3, 0.9], False),
}


def _elementwise(name, pre):
    """x -> S.name(*pre, x), and SciPy's on plain values."""
    ours, theirs = getattr(S, name), getattr(sp, name)
    return (lambda x: ours(*pre, x)), (lambda x: theirs(*pre, x))


def _derivative(fn, x, h=H):
    """The elementwise derivative of fn by central differences."""
    return (fn(x + h) - fn(x - h)) / (2 * h)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients(name):
    pre, xs, in_autograd = CASES[name]
    x = np.array(xs)
    ours, theirs = _elementwise(name, pre)
    np.testing.assert_allclose(ours(ad.Array(x)).data, theirs(x), rtol=1e-14, atol=1e-15)
    value = ours(ad.Value(xs[1]))
    assert isinstance(value, ad.Value)
    np.testing.assert_allclose(value.data, theirs(xs[1]), rtol=1e-14)
    # of plain numbers: SciPy's own result
    assert np.array_equal(ours(x), theirs(x))
    g = ad.grad(lambda x: ours(x).sum())(x)
    np.testing.assert_allclose(g, _derivative(theirs, x), rtol=1e-6, atol=1e-9)
    v = ad.Value(xs[2])
    ours(v).backward()
    np.testing.assert_allclose(v.grad, g[2], rtol=1e-12)
    if in_autograd:
        import autograd
        import autograd.scipy.special as asp
        theirs_ag = getattr(asp, name)
        expected = autograd.elementwise_grad(lambda x: theirs_ag(*pre, x))(x)
        np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_and_third_order(name):
    pre, xs, _ = CASES[name]
    x = np.array(xs)
    ours, _ = _elementwise(name, pre)

    def f(x):
        return ours(x).sum()
    gradient = ad.grad(f)
    # elementwise: the Hessian is diagonal
    hess = ad.hessian(f)(x)
    np.testing.assert_allclose(hess, np.diag(np.diag(hess)), atol=1e-12)
    np.testing.assert_allclose(np.diag(hess), _derivative(gradient, x), rtol=1e-5, atol=1e-7)
    # grad of grad (nested) agrees with the Hessian
    nested = ad.grad(lambda y: gradient(y).sum())(x)
    np.testing.assert_allclose(nested, np.diag(hess), rtol=1e-10, atol=1e-12)
    ones = np.ones_like(x)
    third = ad.grad(lambda y: np.sum(ad.hvp(f)(y, ones) * ones))(x)
    np.testing.assert_allclose(third, _derivative(lambda y: ad.hvp(f)(y, ones), x),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["gammaln", "erf", "jn", "iv", "gammainc", "expit",
                                  "logit", "ndtr"])
def test_scipy_functions_dispatch(name):
    pre, xs, _ = CASES[name]
    x = np.array(xs)
    theirs = getattr(sp, name)
    ours, _ = _elementwise(name, pre)
    out = theirs(*pre, ad.Array(x))
    assert isinstance(out, ad.Array)
    np.testing.assert_allclose(out.data, theirs(*pre, x), rtol=1e-14)
    np.testing.assert_allclose(ad.grad(lambda x: theirs(*pre, x).sum())(x),
                               ad.grad(lambda x: ours(x).sum())(x), rtol=1e-14)
    v = ad.Value(xs[0])
    out = theirs(*pre, v)
    out.backward()
    assert isinstance(out, ad.Value)
    np.testing.assert_allclose(v.grad, _derivative(lambda z: theirs(*pre, z), xs[0]),
                               rtol=1e-6)


def test_dispatch_broadcasts_a_value_against_an_ndarray():
    v = ad.Value(1.5)
    out = sp.gammainc(np.array([1.0, 2.0, 3.0]), v)
    assert isinstance(out, ad.Array)
    out.sum().backward()
    a = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(v.grad, np.sum(_derivative(lambda z: sp.gammainc(a, z), 1.5)),
                               rtol=1e-6)


@pytest.mark.parametrize("name", ["beta", "betaln"])
def test_two_differentiated_arguments(name):
    import autograd
    import autograd.scipy.special as asp
    a, b = np.array([0.7, 1.5, 3.0]), np.array([2.0, 0.9, 1.4])
    ours, theirs = getattr(S, name), getattr(sp, name)
    np.testing.assert_allclose(ours(ad.Array(a), b).data, theirs(a, b), rtol=1e-14)

    def f(a, b):
        return np.sum(ours(a, b))
    ga, gb = ad.grad(f, (0, 1))(a, b)
    np.testing.assert_allclose(ga, _derivative(lambda z: theirs(z, b), a), rtol=1e-6)
    np.testing.assert_allclose(gb, _derivative(lambda z: theirs(a, z), b), rtol=1e-6)
    np.testing.assert_allclose(ga, autograd.grad(lambda a: np.sum(getattr(asp, name)(a, b)))(a),
                               rtol=1e-12)
    # the mixed second derivative (a_i, b_i) and a third order
    mixed = ad.grad(lambda b: np.sum(ad.grad(f, 0)(a, b)))(b)
    np.testing.assert_allclose(mixed, _derivative(lambda z: ad.grad(f, 0)(a, z), b),
                               rtol=1e-5)
    third = ad.grad(lambda a: np.sum(ad.hvp(lambda a: f(a, b))(a, np.ones(3))))(a)
    np.testing.assert_allclose(
        third, _derivative(lambda z: ad.hvp(lambda a: f(a, b))(z, np.ones(3)), a), rtol=1e-5)
    # broadcast: a Value against an Array
    v = ad.Value(1.2)
    ours(v, ad.Array(b)).sum().backward()
    np.testing.assert_allclose(v.grad, np.sum(_derivative(lambda z: theirs(z, b), 1.2)),
                               rtol=1e-6)


@pytest.mark.parametrize("name,log", [("xlogy", np.log), ("xlog1py", np.log1p)])
def test_xlogy(name, log):
    ours, theirs = getattr(S, name), getattr(sp, name)
    x, y = np.array([0.5, 2.0, 0.0, 0.0, 1.5]), np.array([1.5, 0.3, 0.7, 2.0, 0.4])
    np.testing.assert_allclose(ours(ad.Array(x), ad.Array(y)).data, theirs(x, y), rtol=1e-14)
    gx, gy = ad.grad(lambda x, y: np.sum(ours(x, y)), (0, 1))(x, y)
    # d/dx = log(y) (at x = 0 too), d/dy = x / y' (0 at x = 0)
    np.testing.assert_allclose(gx, log(y), rtol=1e-14)
    dlog = 1.0 / y if name == "xlogy" else 1.0 / (1.0 + y)
    np.testing.assert_allclose(gy, x * dlog, rtol=1e-14)
    # x = 0 at the edge of log's domain (y = 0 for xlogy, -1 for xlog1py) and
    # beyond: the value is 0 and so are both derivatives, no NaN
    edge = 0.0 if name == "xlogy" else -1.0
    x0, y0 = np.zeros(2), np.array([edge, edge - 1.0])
    assert np.array_equal(ours(ad.Array(x0), ad.Array(y0)).data, theirs(x0, y0))
    for g in ad.grad(lambda x, y: np.sum(ours(x, y)), (0, 1))(x0, y0):
        assert np.array_equal(g, np.zeros(2))
    # SciPy's values everywhere: -inf * x at the edge, NaN beyond it and
    # for a NaN y, 0 at x = 0 (no warning: the suite's warnings are errors)
    xs = np.array([2.0, -2.0, 0.0, 0.0, 0.0, 1.5, 0.0])
    ys = np.array([0.0, 0.0, 0.0, -1.0, 2.0, -1.0, np.nan]) + edge
    np.testing.assert_array_equal(ours(ad.Array(xs), ad.Array(ys)).data, theirs(xs, ys))
    assert np.isnan(ours(ad.Value(0.0), ad.Value(np.nan)).data)
    # entropy, -sum p log p, its gradient -(log p + 1), and its Hessian
    p = np.array([0.2, 0.3, 0.5])
    ent = lambda p: -np.sum(ours(p, p if name == "xlogy" else p - 1.0))  # noqa: E731
    np.testing.assert_allclose(ad.grad(ent)(p), -(np.log(p) + 1.0), rtol=1e-14)
    np.testing.assert_allclose(ad.hessian(ent)(p), np.diag(-1.0 / p), rtol=1e-12)
    # through NumPy's dispatch
    out = theirs(ad.Array(x), y)
    assert isinstance(out, ad.Array)


def test_multigammaln():
    import autograd
    import autograd.scipy.special as asp
    a = np.array([2.5, 3.1, 4.0])
    out = S.multigammaln(ad.Array(a), 3)
    np.testing.assert_allclose(out.data, sp.multigammaln(a, 3), rtol=1e-14)
    g = ad.grad(lambda a: np.sum(S.multigammaln(a, 3)))(a)
    np.testing.assert_allclose(g, autograd.elementwise_grad(lambda a: asp.multigammaln(a, 3))(a),
                               rtol=1e-12)
    h = ad.hessian(lambda a: np.sum(S.multigammaln(a, 3)))(a)
    np.testing.assert_allclose(np.diag(h), sum(sp.polygamma(1, a - j / 2) for j in range(3)),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="greater than"):
        S.multigammaln(ad.Array(np.array([0.7])), 3)


def test_gammasgn_has_zero_derivative():
    x = np.array([-1.5, -0.5, 2.0])
    out = S.gammasgn(ad.Array(x))
    assert np.array_equal(out.data, sp.gammasgn(x))
    assert np.array_equal(ad.grad(lambda x: np.sum(S.gammasgn(x) * x))(x), sp.gammasgn(x))


@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"axis": 1, "keepdims": True},
                                    {"b": np.array([1.0, 2.0, 0.5])},
                                    {"axis": 0, "b": np.array([[2.0], [0.0]])},
                                    {"axis": (0, 1), "keepdims": True}])
def test_logsumexp(kwargs):
    import autograd
    import autograd.scipy.special as asp
    x = np.array([[0.1, -0.4, 1.2], [2.0, 0.3, -1.0]])
    out = dropin.logsumexp(ad.Array(x), **kwargs)
    np.testing.assert_allclose(out.data, sp.logsumexp(x, **kwargs), rtol=1e-14)
    w = np.cos(np.arange(np.size(out.data)) + 1.0).reshape(np.shape(out.data))

    def f(x, lse):
        return np.sum(lse(x, **kwargs) * w)
    g = ad.grad(lambda x: f(x, dropin.logsumexp))(x)
    np.testing.assert_allclose(g, autograd.grad(lambda x: f(x, asp.logsumexp))(x),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ad.hessian(lambda x: f(x, dropin.logsumexp))(x),
                               autograd.hessian(lambda x: f(x, asp.logsumexp))(x),
                               rtol=1e-10, atol=1e-12)


def test_logsumexp_return_sign_and_traced_b():
    x, b = np.array([1.0, 2.0]), np.array([1.0, -2.0])
    out, sign = S.logsumexp(ad.Array(x), b=b, return_sign=True)
    expected, expected_sign = sp.logsumexp(x, b=b, return_sign=True)
    np.testing.assert_allclose(out.data, expected, rtol=1e-14)
    assert sign == expected_sign == -1.0
    s = np.sum(b * np.exp(x))
    np.testing.assert_allclose(
        ad.grad(lambda x: S.logsumexp(x, b=b, return_sign=True)[0])(x), b * np.exp(x) / s,
        rtol=1e-14)
    # b differentiated too: d/db log(sum b e^x) = e^x / sum
    bp = np.array([1.0, 3.0])
    np.testing.assert_allclose(ad.grad(lambda b: S.logsumexp(x, b=b))(bp),
                               np.exp(x) / np.sum(bp * np.exp(x)), rtol=1e-14)
    # scipy.misc's old name
    from pyautodiff.autograd.scipy.misc import logsumexp
    assert logsumexp is dropin.logsumexp


@pytest.mark.parametrize("call,argument", [
    (lambda n: S.polygamma(n, 2.0), "n"), (lambda n: S.jn(n, 2.0), "n"),
    (lambda n: S.yn(n, 2.0), "n"), (lambda v: S.iv(v, 2.0), "v"),
    (lambda v: S.ive(v, 2.0), "v"), (lambda a: S.gammainc(a, 2.0), "a"),
    (lambda a: S.gammaincc(a, 2.0), "a"), (lambda a: S.betainc(a, 2.0, 0.3), "a"),
    (lambda b: S.betainc(2.0, b, 0.3), "b"), (lambda df: S.stdtr(df, 0.3), "df"),
    (lambda n: sp.jn(n, 2.0), "v"), (lambda a: sp.gammainc(a, 2.0), "a")])
def test_arguments_not_differentiated_raise(call, argument):
    with pytest.raises(NotImplementedError, match=f"argument {argument} "):
        ad.grad(call)(2.0)
    with pytest.raises(NotImplementedError, match=f"argument {argument} "):
        ad.grad(lambda a: np.sum(call(a)))(np.array([2.0, 3.0]))


def test_arguments_not_differentiated_as_constants():
    # a traced constant (an ndarray turned into a constant Array) is its values
    x = ad.Value(1.5)
    out = sp.jn(np.array([1, 2]), x)
    out.sum().backward()
    expected = np.sum((sp.jn([0, 1], 1.5) - sp.jn([2, 3], 1.5)) / 2)
    np.testing.assert_allclose(x.grad, expected, rtol=1e-12)


def test_under_no_grad_and_in_a_recording():
    with ad.no_grad():
        out = S.gamma(ad.Array(np.array([1.5, 2.5])))
    np.testing.assert_allclose(out.data, sp.gamma([1.5, 2.5]))
    def f(x):
        return np.sum(S.gammaln(x) * S.erf(x))
    x0, x2 = np.array([0.5, 1.5]), np.array([1.1, 2.2])
    recorded = ad.record(f, x0)
    np.testing.assert_allclose(recorded(x2), np.sum(sp.gammaln(x2) * sp.erf(x2)), rtol=1e-14)
    # a recorded gradient replays its derivative entries (digamma ...) too
    np.testing.assert_allclose(
        ad.record(ad.grad(f), x0)(x2), sp.digamma(x2) * sp.erf(x2)
        + sp.gammaln(x2) * 2 / np.sqrt(np.pi) * np.exp(-x2 ** 2), rtol=1e-12)


def test_importing_pyautodiff_does_not_need_scipy():
    code = ("import sys; sys.modules['scipy'] = None\n"
            "import pyautodiff, pyautodiff.scipy_special, pyautodiff.autograd.scipy.stats\n"
            "import numpy as np\n"
            "assert float(np.exp(pyautodiff.Value(0.0)).data) == 1.0\n"
            "try:\n    pyautodiff.scipy_special.gamma(1.5)\n"
            "except ImportError as e:\n    assert 'SciPy' in str(e)\n"
            "else:\n    raise AssertionError('no ImportError')\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_forward_mode_and_a_recordings_hessian():
    # the C sweeps' own rules: the tangent sweep (ad.jvp) and the
    # second-order sweep of a recording (its Hessian and hvp)
    def f(p):
        return np.sum(sp.beta(p[:2], p[2:]) * sp.jn(2, p[:2])) + \
            np.sum(sp.gammainc(2.0, p) + S.erfinv(p / 4.0))
    p = np.array([0.5, 1.5, 2.0, 0.7])
    v = np.array([1.0, -0.5, 0.25, 2.0])
    _, tangent = ad.jvp(f)(p, v)
    np.testing.assert_allclose(tangent, ad.grad(f)(p) @ v, rtol=1e-13)
    recorded = ad.record(f, p)
    q = p + 0.1
    np.testing.assert_allclose(recorded.hessian(q), ad.hessian(f)(q), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(recorded.hvp(q, v), ad.hvp(f)(q, v), rtol=1e-12, atol=1e-14)
    scalar = ad.record(lambda x: sp.gamma(x) * sp.erf(x), 1.3)
    np.testing.assert_allclose(scalar.hessian(1.7),
                               ad.hessian(lambda x: sp.gamma(x) * sp.erf(x))(1.7), rtol=1e-12)
