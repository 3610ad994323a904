"""NumPy functions that need no derivative, on Arrays and Values: queries
and integer- or bool-valued functions give exactly what NumPy gives on the
values; piecewise-constant ones (sign floor ceil round ...) a constant
Array, whose derivative is zero (as HIPS autograd has it).  Inside
ad.record each is a guard on what it read.  Functions with no rule still
raise TypeError naming them with their module."""
import autograd
import autograd.numpy as hips_np
import numpy as np
import pytest
import scipy.special

import pyautodiff as ad
from helpers import numeric_grad

X = np.array([[1.5, -2.0, np.nan], [0.0, 3.25, np.inf], [-0.5, 2.5, -np.inf]])

# name -> a call of the function on x (an Array or its values)
QUERIES_AND_DISCRETE = {
    "shape": np.shape, "ndim": np.ndim, "size": np.size,
    "result_type": np.result_type, "iscomplexobj": np.iscomplexobj,
    "isrealobj": np.isrealobj, "isreal": np.isreal, "iscomplex": np.iscomplex,
    "zeros_like": np.zeros_like, "ones_like": np.ones_like,
    "isnan": np.isnan, "isfinite": np.isfinite, "isinf": np.isinf,
    "isposinf": np.isposinf, "isneginf": np.isneginf, "signbit": np.signbit,
    "logical_not": np.logical_not,
    "logical_and": lambda x: np.logical_and(x, X > 0),
    "logical_or": lambda x: np.logical_or(x > 1, x),
    "logical_xor": lambda x: np.logical_xor(x, x > 1),
    "argmax": np.argmax, "argmin": lambda x: np.argmin(x, axis=1),
    "argsort": lambda x: np.argsort(x, axis=0),
    "argpartition": lambda x: np.argpartition(x, 1, axis=None),
    "argwhere": np.argwhere, "nonzero": np.nonzero,
    "flatnonzero": np.flatnonzero, "count_nonzero": np.count_nonzero,
    "count_nonzero axis": lambda x: np.count_nonzero(x, axis=0),
    "searchsorted": lambda x: np.searchsorted(np.sort(X[0]), x),
    "searchsorted into": lambda x: np.searchsorted(x[1, :2], [0.5, 4.0]),
    "digitize": lambda x: np.digitize(x, [-1.0, 0.0, 2.0]),
    "array_equal": lambda x: np.array_equal(x, X),
    "array_equal nan": lambda x: np.array_equal(x, X, equal_nan=True),
    "array_equiv": lambda x: np.array_equiv(x[0], X[0]),
    "allclose": lambda x: np.allclose(x, X + 1e-12, equal_nan=True),
    "isclose": lambda x: np.isclose(x, 2.5),
    "any axis": lambda x: np.any(x > 2, axis=0),
    "all axis": lambda x: np.all(x > -1, axis=1),
}
# name -> a call of the function on x with NumPy's namespace m (NumPy's,
# or HIPS autograd's for the oracle; it has no heaviside)
PIECEWISE_CONSTANT = {
    "sign": lambda m, x: m.sign(x), "floor": lambda m, x: m.floor(x),
    "ceil": lambda m, x: m.ceil(x), "rint": lambda m, x: m.rint(x),
    "round": lambda m, x: m.round(x),
    "round decimals": lambda m, x: m.round(x * 1.37, 1),
    "around": lambda m, x: m.around(x), "trunc": lambda m, x: m.trunc(x),
    "fix": lambda m, x: m.fix(x),
    "floor_divide": lambda m, x: m.floor_divide(x, 0.75),
    "floor_divide by": lambda m, x: m.floor_divide(7.0, x),
    "heaviside": lambda m, x: m.heaviside(x, 0.5),
}


def assert_same(got, want):
    """got is exactly what NumPy returned: same types, shapes and values."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    else:
        assert got == want or (got != got and want != want)


@pytest.mark.parametrize("name", QUERIES_AND_DISCRETE)
def test_queries_and_discrete_functions_give_numpys_result(name):
    fn = QUERIES_AND_DISCRETE[name]
    with np.errstate(invalid="ignore"):
        want = fn(X)
        assert_same(fn(ad.Array(X)), want)
        with ad.no_grad():
            assert_same(fn(ad.Array(X)), want)
        # and inside a derivative, where x is the traced argument
        seen = []
        g = ad.grad(lambda x: (seen.append(fn(x)), (x * 2.0).sum())[1])(
            np.nan_to_num(X, posinf=9.0, neginf=-9.0))
    assert_same(seen[0], fn(np.nan_to_num(X, posinf=9.0, neginf=-9.0)))
    np.testing.assert_array_equal(g, np.full(X.shape, 2.0))


@pytest.mark.parametrize("name", PIECEWISE_CONSTANT)
def test_piecewise_constant_functions_are_constant_arrays(name):
    fn = lambda x: PIECEWISE_CONSTANT[name](np, x)          # noqa: E731
    with np.errstate(invalid="ignore", divide="ignore"):
        out = fn(ad.Array(X))
        assert isinstance(out, ad.Array)
        np.testing.assert_array_equal(out.data, fn(X))
    # a zero derivative: the gradient of sum(fn(x) * x**2) is 2 fn(x) x,
    # central differences agree away from the jumps, and so does autograd
    x = np.array([[1.3, -2.2, 0.4], [2.6, -0.65, 3.1]])
    f = lambda x: (fn(x) * x ** 2).sum()        # noqa: E731
    g = ad.grad(f)(x)
    np.testing.assert_allclose(g, 2.0 * fn(x) * x, rtol=1e-12)
    np.testing.assert_allclose(g, numeric_grad(f, [x], 0), rtol=1e-6)
    np.testing.assert_array_equal(ad.grad(lambda x: fn(x).sum())(x), np.zeros(x.shape))
    np.testing.assert_allclose(ad.hessian(f)(x).reshape(6, 6),
                               np.diag(2.0 * fn(x).reshape(-1)), atol=1e-12)
    if name != "heaviside":
        hips = autograd.grad(lambda x: (PIECEWISE_CONSTANT[name](hips_np, x) * x ** 2).sum())
        np.testing.assert_allclose(hips(x), g, rtol=1e-12)


def test_values_get_numpys_plain_results():
    x = ad.Value(2.5)
    assert np.shape(x) == () and np.ndim(x) == 0 and np.size(x) == 1
    assert_same(np.isnan(x), np.isnan(2.5))
    assert_same(np.floor(x), np.floor(2.5))
    assert_same(np.sign(ad.Value(-3.0)), np.float64(-1.0))
    assert ad.grad(lambda x: np.floor(x) * x)(2.5) == 2.0
    assert ad.grad(lambda x: np.sign(x) * x ** 2)(-1.5) == 3.0


def test_array_abs_is_a_method():
    a = ad.Array([-1.5, 2.0, 0.0])
    out = a.abs()
    np.testing.assert_array_equal(out.data, [1.5, 2.0, 0.0])
    (out * np.array([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(a.grad, [-1.0, 2.0, 0.0])


# -- inside ad.record: guards on what they read -------------------------------

def test_results_read_from_a_mask_are_guards_that_hold_while_it_does():
    def f(x):
        picked = np.flatnonzero(x > 1.0)
        return (x[picked] ** 2).sum() + np.count_nonzero(x > 1.0)
    F = ad.record(f, np.array([0.5, 2.0, 3.0]))
    assert F(np.array([0.0, 4.0, 5.0])) == 43.0      # same mask: replays
    np.testing.assert_array_equal(F.grad(np.array([0.0, 4.0, 5.0])), [0.0, 8.0, 10.0])
    with pytest.raises(ad.BranchError, match="numpy.flatnonzero"):
        F(np.array([2.0, 4.0, 5.0]))


@pytest.mark.parametrize("fn, x0, same, moved", [
    (lambda x: np.where(np.isnan(x), 0.0, x).sum(),
     [np.nan, 1.0, 2.0], [np.nan, 5.0, 7.0], [1.0, np.nan, 2.0]),
    (lambda x: np.where(np.isfinite(x), x, 0.0).sum() + np.sum(np.isinf(x)),
     [np.nan, 1.0, np.inf], [np.nan, -1.0, np.inf], [np.nan, -1.0, -np.inf]),
    (lambda x: np.where(np.isposinf(x) | np.isneginf(x), 1.0, x).sum(),
     [-np.inf, 1.0, np.inf], [-np.inf, 3.0, np.inf], [np.inf, 3.0, np.inf]),
    (lambda x: (x[np.flatnonzero(x)] ** 2).sum() + np.count_nonzero(x),
     [0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [1.0, 0.0, 2.0]),
    (lambda x: (x[tuple(np.argwhere(x).T)] ** 2).sum(),
     [0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 0.0, 2.0]),
])
def test_nan_inf_and_nonzero_tests_are_guarded_by_recorded_masks(fn, x0, same, moved,
                                                                  tmp_path):
    F = ad.record(fn, np.array(x0))
    F.save(tmp_path / "f.adtape")
    for G in (F, ad.load(tmp_path / "f.adtape")):
        assert G(np.array(same)) == fn(np.array(same))    # same masks: replays
        with pytest.raises(ad.BranchError, match="numpy"):
            G(np.array(moved))


@pytest.mark.parametrize("fn, moved", [
    (lambda x: x[np.argmax(x)], [1.0, 0.5, 3.0]),
    (lambda x: x[np.argsort(x)] @ np.arange(3.0), [3.0, 2.0, 1.0]),
    (lambda x: (np.where(np.isnan(x), 0.0, x)).sum(), [np.nan, 1.0, 2.0]),
    (lambda x: (np.round(x, 1) * x).sum(), [1.5, 2.5, 3.5]),
])
def test_decisions_on_values_are_guards_in_a_recording(fn, moved):
    F = ad.record(fn, np.array([1.0, 2.0, 0.5]))
    assert F(np.array([1.0, 2.0, 0.5])) == fn(np.array([1.0, 2.0, 0.5]))
    with pytest.raises(ad.BranchError):
        F(np.array(moved))
    G = ad.function(fn)                 # records again where a guard flips
    with np.errstate(invalid="ignore"):
        assert np.array_equal(G(np.array(moved)), fn(np.array(moved)), equal_nan=True)


@pytest.mark.parametrize("fn", [np.floor, np.ceil, np.trunc, np.fix, np.rint, np.sign,
                                np.round, np.around])
def test_step_functions_of_arrays_replay_everywhere(fn):
    """np.floor & co. of a traced Array are recorded entries with no
    derivative: a replay recomputes them, at any point, with no guard."""
    f = lambda x: (fn(3.0 * x) * x ** 2).sum()      # noqa: E731
    x0 = np.array([1.0, 2.0, 0.5])
    F = ad.record(f, x0)
    assert not F.trace.tape.guards
    for x in (x0, np.array([-1.3, 0.25, 7.6]), np.array([0.0, -0.0, 2.5])):
        assert F(x) == f(x)
        np.testing.assert_array_equal(F.grad(x), 2.0 * fn(3.0 * x) * x)
        np.testing.assert_array_equal(ad.grad(f)(x), 2.0 * fn(3.0 * x) * x)
    value = fn(ad.Array([-0.0, 1.5, -2.5, np.nan]))
    np.testing.assert_array_equal(value.data, fn(np.array([-0.0, 1.5, -2.5, np.nan])))
    assert np.signbit(value.data).tolist() == np.signbit(
        fn(np.array([-0.0, 1.5, -2.5, np.nan]))).tolist()


# -- no rule: TypeError naming the function with its module -------------------

@pytest.mark.parametrize("call, name", [
    (lambda a: np.linalg.cond(a), "numpy.linalg.cond"),
    (lambda a: np.nancumprod(a), "numpy.nancumprod"),
    (lambda a: np.spacing(a), "numpy.spacing"),
    (lambda a: np.add.reduceat(a, [0, 1]), "numpy.add.reduceat"),
    (lambda a: scipy.special.dawsn(a), "scipy.special.dawsn"),
    (lambda a: np.sort_complex(a), "numpy.sort_complex"),
])
def test_functions_with_no_rule_are_named_with_their_module(call, name):
    with pytest.raises(TypeError, match=f"no derivative rule for {name}[;]"):
        call(ad.Array([1.0, 2.0]))
