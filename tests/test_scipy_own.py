"""SciPy's own functions written in Python (scipy.special.logsumexp,
softmax, log_softmax, polygamma, multigammaln; scipy.stats' distributions)
given values that carry a derivative: a TypeError that names the SciPy
function called and pyautodiff's of the same signature, whose derivative
is then checked against central differences of SciPy's; or that says
pyautodiff has no rule.  SciPy's own on plain numbers, under no_grad and
where its NumPy code computes right with traced elements (softmax) are
unchanged."""
import warnings

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")
st = pytest.importorskip("scipy.stats")
import scipy.linalg                                       # noqa: E402

import pyautodiff as ad                                   # noqa: E402
from pyautodiff import scipy_special as S, scipy_stats as SS   # noqa: E402

X = np.array([[0.1, -0.4, 1.2], [2.0, 0.3, -1.0]])
LSE = (r"scipy\.special\.logsumexp is SciPy's code.*Call pyautodiff\.scipy_special\."
       r"logsumexp\(a, axis=None, b=None, keepdims=False, return_sign=False\)")


def _central(f, x, h=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up.flat[i] += h
        down.flat[i] -= h
        out.flat[i] = (f(up) - f(down)) / (2 * h)
    return out


@pytest.mark.parametrize("kwargs", [{}, {"axis": 1}, {"axis": 0, "keepdims": True},
                                    {"axis": 1, "b": np.array([1.0, 2.0, 0.5])},
                                    {"axis": 1, "b": np.array([1.0, -2.0, 0.5]),
                                     "return_sign": True}])
def test_scipys_logsumexp_on_traced_values_names_ours_with_scipys_signature(kwargs):
    """Inside ad.grad and on a user's Array: the error names
    scipy.special.logsumexp and the call to make; that call, with the same
    arguments, differentiates as central differences of SciPy's."""
    def f(lse):
        def at(x):
            out = lse(x, **kwargs)
            out = out[0] if kwargs.get("return_sign") else out
            return np.sum(out * np.cos(np.arange(np.size(out)) + 1.0).reshape(np.shape(out)))
        return at
    for call in (lambda: ad.grad(f(sp.logsumexp))(X),
                 lambda: sp.logsumexp(ad.Array(X), **kwargs)):
        with pytest.raises(TypeError, match=LSE):
            call()
    np.testing.assert_allclose(ad.grad(f(S.logsumexp))(X), _central(f(sp.logsumexp), X),
                               rtol=1e-6, atol=1e-8)


def test_scipys_logsumexp_on_traced_numbers_and_lists_of_them():
    for call in (lambda: ad.grad(lambda x: sp.logsumexp(x[0, 0]))(X),
                 lambda: ad.grad(lambda x: sp.logsumexp([x[0, 0], x[1, 1]]))(X),
                 lambda: ad.grad(lambda y: sp.logsumexp(y))(0.5),
                 lambda: sp.logsumexp(ad.Value(0.5))):
        with pytest.raises(TypeError, match=LSE):
            call()


@pytest.mark.parametrize("name,call,ours", [
    ("log_softmax", lambda x: sp.log_softmax(x, axis=1)[0, 1],
     lambda x: S.log_softmax(x, axis=1)[0, 1]),
    ("polygamma", lambda x: np.sum(sp.polygamma(1, x + 3.0)),
     lambda x: np.sum(S.polygamma(1, x + 3.0))),
    ("multigammaln", lambda x: sp.multigammaln(x[1, 0] + 2.0, 3),
     lambda x: S.multigammaln(x[1, 0] + 2.0, 3))])
def test_the_other_python_functions_of_scipy_special(name, call, ours):
    """SciPy's log_softmax, polygamma, multigammaln inside a derivative
    (their NumPy code fails on traced elements deep inside SciPy) and on
    plain numbers taken from a user's Array: the error names them and
    pyautodiff's, whose gradient is central differences of SciPy's."""
    signature = {"log_softmax": r"\(x, axis=None\)", "polygamma": r"\(n, x\)",
                 "multigammaln": r"\(a, d\)"}[name]
    message = rf"scipy\.special\.{name} is SciPy's.*pyautodiff\.scipy_special\.{name}{signature}"
    with pytest.raises(TypeError, match=message):
        ad.grad(call)(X)
    with pytest.raises(TypeError, match=message):
        call(ad.Array(X))
    np.testing.assert_allclose(ad.grad(ours)(X), _central(call, X), rtol=1e-6, atol=1e-8)


def test_softmax_and_log_softmax_with_scipys_signature():
    """pyautodiff.scipy_special's softmax and log_softmax: SciPy's values
    and signature (all of x by default), gradients as central differences;
    SciPy's own softmax still computes right with traced elements inside a
    derivative (NumPy's functions only), and is refused only where it
    would take a user's Array as plain numbers."""
    w = np.cos(np.arange(X.size) + 1.0).reshape(X.shape)
    for axis in (None, 0, 1):
        for ours, theirs in ((S.softmax, sp.softmax), (S.log_softmax, sp.log_softmax)):
            np.testing.assert_allclose(ours(ad.Array(X), axis=axis).data,
                                       theirs(X, axis=axis), rtol=1e-14, atol=1e-15)
            assert ours(X, axis=axis).dtype == theirs(X, axis=axis).dtype
            np.testing.assert_allclose(
                ad.grad(lambda x: np.sum(ours(x, axis=axis) * w))(X),
                _central(lambda x: np.sum(theirs(x, axis=axis) * w), X), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(
            ad.grad(lambda x: np.sum(sp.softmax(x, axis=axis) * w))(X),
            ad.grad(lambda x: np.sum(S.softmax(x, axis=axis) * w))(X), rtol=1e-12)
    with pytest.raises(TypeError, match=r"scipy\.special\.softmax.*scipy_special\.softmax"):
        sp.softmax(ad.Array(X))


@pytest.mark.parametrize("call,name", [
    (lambda x: np.sum(st.norm.logpdf(x)), "norm.logpdf"),
    (lambda x: np.sum(st.norm.logpdf(X, loc=x[0, 1])), "norm.logpdf"),   # a 0-d Array
    (lambda x: np.sum(st.norm.cdf(X, scale=x[1, 0] + 2.0)), "norm.cdf"),
    (lambda x: np.sum(st.norm(0.5, 2.0).logpdf(x)), "norm.logpdf"),      # frozen
    (lambda x: np.sum(st.t.logpdf(X, x[0, 2] + 3.0)), "t.logpdf"),
    (lambda x: st.multivariate_normal.logpdf(x[0], np.zeros(3), np.eye(3)),
     "multivariate_normal.logpdf"),
    (lambda x: st.multivariate_normal(np.zeros(3), np.eye(3)).logpdf(x[1]),
     "multivariate_normal.logpdf")])
def test_scipy_stats_distributions_name_ours(call, name):
    message = rf"scipy\.stats\.{name} is SciPy's.*Call pyautodiff\.scipy_stats\.{name} "
    with pytest.raises(TypeError, match=message):
        ad.grad(call)(X)
    with pytest.raises(TypeError, match=message):
        call(ad.Array(X))


def test_what_pyautodiff_has_no_rule_for_is_named_so():
    """A distribution pyautodiff does not hold, a method it does not, a
    scipy.stats function and a scipy.special Python function failing on
    traced numbers: named, with 'no derivative rule'."""
    for call, what in [(lambda x: np.sum(st.logistic.logpdf(x)), r"scipy\.stats\.logistic\.logpdf"),
                       (lambda x: st.norm.ppf(0.3, loc=x[0, 0]), r"scipy\.stats\.norm\.ppf"),
                       (lambda x: st.entropy(np.exp(x[0])), r"scipy\.stats\.entropy"),
                       (lambda x: np.sum(sp.spherical_jn(1, x)), r"scipy\.special\.spherical_jn")]:
        with pytest.raises(TypeError, match=what + r" is SciPy's.*no derivative rule"):
            ad.grad(call)(X)
    with pytest.raises(TypeError, match=r"logistic\.logpdf.*scipy_stats holds norm \("):
        st.logistic.logpdf(ad.Array(X))


def test_scipy_on_plain_numbers_and_under_no_grad_is_unchanged():
    a = ad.Array(X)
    assert sp.logsumexp(X) == sp.logsumexp(X.tolist())
    with ad.no_grad():
        assert sp.logsumexp(a) == sp.logsumexp(X)
        np.testing.assert_array_equal(st.norm.logpdf(a), st.norm.logpdf(X))
    # a scipy.stats function of plain numbers taken from a user's Array
    # (no distribution: not refused), and a misuse SciPy reports itself
    assert st.entropy(ad.Array([1.0, 3.0])) == st.entropy([1.0, 3.0])
    with pytest.raises(TypeError, match="unexpected keyword"):
        ad.grad(lambda x: sp.logsumexp(x, bogus=1))(X)


def test_a_detach_error_is_not_numpys_sequence_error():
    """SciPy's expm takes plain numbers out of the 0-d Arrays of an object
    array: NumPy reports the DetachError raised there as its own 'setting
    an array element with a sequence'; the derivative raises the
    DetachError."""
    with pytest.raises(ad.DetachError, match="float"):
        ad.grad(lambda x: np.sum(scipy.linalg.expm(x[:, :2])))(X)
