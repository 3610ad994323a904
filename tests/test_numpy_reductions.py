"""NumPy's reductions, scans, sorts and ufunc methods on traced values
(pyautodiff/numpy_reductions.py): values against NumPy's; gradients
against central differences and HIPS autograd (its own function where it
differentiates it, else a reference written with what it does
differentiate); Hessians against autograd's hessian of the same; third
order through a nested hvp against central differences of ad.hvp;
ad.record replays and guards; the errors of what is not supported."""
import warnings

import numpy as np
import pytest

import pyautodiff as ad
import pyautodiff.autograd.numpy as adnp
from helpers import numeric_grad

ag = pytest.importorskip("autograd")
agnp = pytest.importorskip("autograd.numpy")

R = np.random.default_rng(7)
A34 = R.normal(size=(3, 4))
A234 = R.normal(size=(2, 3, 4))
V5 = R.normal(size=5)
V14 = R.normal(size=14)
M34 = R.normal(size=(3, 4)) > -0.4          # a where= mask: some False in each row
M34[:, 0] = True
W4 = np.array([0.5, 2.0, 1.0, 3.0])
W3 = np.array([1.0, 0.25, 2.0])
W24 = np.abs(R.normal(size=(2, 4))) + 0.5
NAN34 = A34.copy()
NAN34[0, 1] = NAN34[2, 3] = NAN34[1, 0] = np.nan
ZEROS = np.array([[2.0, 0.0, 3.0, -1.5], [0.5, 1.5, 0.0, 0.0]])   # cumprod's zeros
COORDS = np.array([0.0, 0.5, 1.75, 2.0])


def _rows(n, f, x, axis):
    """f applied to each 1-d slice of a 2-d x along axis (autograd sorts
    and partitions 1-d arrays only), stacked back."""
    if axis == 0:
        return n.stack([f(x[:, j]) for j in range(x.shape[1])], axis=1)
    return n.stack([f(x[i]) for i in range(x.shape[0])], axis=0)


def _median_1d(n, v):
    s = n.sort(v)
    k = v.shape[0]
    return (s[(k - 1) // 2] + s[k // 2]) / 2.0


def _cumprod_ref(n, x, axis):
    """cumprod by products of leading slices (autograd's prod)."""
    m = x.shape[axis]
    if axis == 0:
        return n.stack([n.prod(x[:k + 1], axis=0) for k in range(m)], axis=0)
    return n.stack([n.prod(x[:, :k + 1], axis=1) for k in range(m)], axis=1)


def _gradient_matrix(m, *spacing, edge_order=1):
    """NumPy's np.gradient of a length-m signal as the matrix it is (its
    columns: np.gradient of the unit vectors): a linear map any autograd
    differentiates."""
    return np.gradient(np.eye(m), *spacing, axis=0, edge_order=edge_order)


G4 = _gradient_matrix(4)
G4_COORDS_2 = _gradient_matrix(4, COORDS, edge_order=2)
G3_2 = _gradient_matrix(3, 2.0, edge_order=2)
G2 = _gradient_matrix(2)


def _masked_squares(n, x, mask):
    """Each row's sum of squared deviations from its mean, over the mask."""
    mean = n.sum(n.where(mask, x, 0.0), 1, keepdims=True) / mask.sum(1, keepdims=True)
    return n.sum(n.where(mask, (x - mean) ** 2, 0.0), 1)


def _logsumexp(n, x, axis):
    m = n.max(x, axis=axis, keepdims=True)
    return n.log(n.sum(n.exp(x - m), axis=axis)) + n.squeeze(m, axis=axis)


# name -> (ours(x): NumPy's own function on x, reference(n, x): the same
# in autograd's terms, x)
CASES = {
    # where=, initial=, axis tuples, keepdims of NumPy's reductions
    "sum_where": (lambda x: np.sum(x, axis=1, where=M34),
                  lambda n, x: n.sum(n.where(M34, x, 0.0), axis=1), A34),
    "sum_where_traced_mask": (lambda x: np.sum(x ** 2, where=x > 0.2),
                              lambda n, x: n.sum(n.where(x > 0.2, x ** 2, 0.0)), A34),
    "sum_initial_keepdims": (lambda x: np.sum(x, axis=0, keepdims=True, initial=2.0),
                             lambda n, x: n.sum(x, axis=0, keepdims=True) + 2.0, A34),
    "mean_where": (lambda x: np.mean(x, axis=0, where=M34),
                   lambda n, x: n.sum(n.where(M34, x, 0.0), axis=0) / M34.sum(0), A34),
    "var_where": (lambda x: np.var(x, axis=1, where=M34),
                  lambda n, x: _masked_squares(n, x, M34) / M34.sum(1), A34),
    "std_where_ddof": (lambda x: np.std(x, axis=1, ddof=1, keepdims=True, where=M34),
                       lambda n, x: n.sqrt(_masked_squares(n, x, M34)[:, None]
                                           / (M34.sum(1, keepdims=True) - 1)), A34),
    "var_correction": (lambda x: np.var(x, axis=(0, 2), correction=1),
                       lambda n, x: n.var(x, axis=(0, 2), ddof=1), A234),
    "prod_where_initial": (lambda x: np.prod(x, axis=1, where=M34, initial=2.0),
                           lambda n, x: n.prod(n.where(M34, x, 1.0), axis=1) * 2.0, A34),
    "max_where_initial": (lambda x: np.max(x, axis=1, where=M34, initial=-5.0),
                          lambda n, x: n.max(n.where(M34, x, -5.0), axis=1), A34),
    "min_initial": (lambda x: np.min(x, axis=0, initial=0.1),
                    lambda n, x: n.minimum(n.min(x, axis=0), 0.1), A34),
    "amax_axes_keepdims": (lambda x: np.amax(x, axis=(0, 2), keepdims=True),
                           lambda n, x: n.max(x, axis=(0, 2), keepdims=True), A234),
    "amin_all": (lambda x: np.amin(x), lambda n, x: n.min(x), A234),
    # ptp, average
    "ptp": (lambda x: np.ptp(x, axis=1),
            lambda n, x: n.max(x, axis=1) - n.min(x, axis=1), A34),
    "ptp_all_keepdims": (lambda x: np.ptp(x, keepdims=True),
                         lambda n, x: n.max(x, keepdims=True) - n.min(x, keepdims=True), A234),
    "average": (lambda x: np.average(x), lambda n, x: n.mean(x), A34),
    "average_weights": (lambda x: np.average(x, axis=1, weights=W4),
                        lambda n, x: n.sum(x * W4, axis=1) / W4.sum(), A34),
    "average_full_weights": (lambda x: np.average(x, weights=A34 ** 2 + 0.5),
                             lambda n, x: n.sum(x * (A34 ** 2 + 0.5)) / np.sum(A34 ** 2 + 0.5),
                             A34),
    "average_axes": (lambda x: np.average(x, axis=(0, 2), weights=W24, keepdims=True),
                     lambda n, x: n.sum(x * W24[:, None, :], axis=(0, 2), keepdims=True)
                     / W24.sum(), A234),
    "average_traced_weights": (lambda w: np.average(A34, axis=1, weights=w),
                               lambda n, w: n.sum(A34 * w, axis=1) / n.sum(w), W4),
    "average_returned": (lambda w: np.average(A34, axis=0, weights=w * w, returned=True),
                         lambda n, w: (n.sum(A34 * (w * w)[:, None], axis=0) / n.sum(w * w),
                                       n.sum(w * w) * n.ones(4)), W3),
    # median
    "median_even": (lambda x: np.median(x, axis=1),
                    lambda n, x: _rows(n, lambda v: _median_1d(n, v), x, 1), A34),
    "median_odd_keepdims": (lambda x: np.median(x, axis=0, keepdims=True),
                            lambda n, x: n.stack([_median_1d(n, x[:, j])
                                                  for j in range(4)])[None], A34),
    "median_all": (lambda x: np.median(x), lambda n, x: _median_1d(n, n.ravel(x)), A34),
    "median_axes": (lambda x: np.median(x, axis=(0, 2)),
                    lambda n, x: n.stack([_median_1d(n, n.ravel(x[:, j, :]))
                                          for j in range(3)]), A234),
    # scans
    "cumprod": (lambda x: np.cumprod(x, axis=1), lambda n, x: _cumprod_ref(n, x, 1), A34),
    "cumprod_axis0": (lambda x: np.cumprod(x, axis=0), lambda n, x: _cumprod_ref(n, x, 0), A34),
    "cumprod_flat": (lambda x: np.cumprod(x),
                     lambda n, x: _cumprod_ref(n, n.ravel(x)[None], 1)[0], A34),
    "cumsum": (lambda x: np.cumsum(x, axis=0), lambda n, x: n.cumsum(x, axis=0), A34),
    "diff": (lambda x: np.diff(x), lambda n, x: n.diff(x), A34),
    "diff_n_axis": (lambda x: np.diff(x, 2, axis=0), lambda n, x: n.diff(x, 2, axis=0), A34),
    "diff_prepend_append": (lambda x: np.diff(x, 2, axis=1, prepend=0.5, append=x[:, :1]),
                            lambda n, x: n.diff(n.concatenate([0.5 * n.ones((3, 1)), x, x[:, :1]],
                                                              axis=1), 2, axis=1), A34),
    "gradient_axis": (lambda x: np.gradient(x, axis=1), lambda n, x: n.dot(x, G4.T), A34),
    "gradient_all": (lambda x: np.gradient(x[:3, :3] * x[:3, 1:], 2.0, edge_order=2),
                     lambda n, x: (n.dot(G3_2, x[:3, :3] * x[:3, 1:]),
                                   n.dot(x[:3, :3] * x[:3, 1:], G3_2.T)), A34),
    "gradient_two": (lambda x: np.gradient(x[:, 1:3], axis=-1),
                     lambda n, x: n.dot(x[:, 1:3], G2.T), A34),
    "gradient_coordinates": (lambda x: np.gradient(x, 1.0, COORDS, edge_order=2)[1],
                             lambda n, x: n.dot(x, G4_COORDS_2.T), A34),
    # sorts
    "sort_1d": (lambda x: np.sort(x), lambda n, x: n.sort(x), V5),
    "sort_one": (lambda x: np.sort(x), lambda n, x: n.sort(x), V5[:1]),
    "sort_axis0": (lambda x: np.sort(x, axis=0, kind="stable"),
                   lambda n, x: _rows(n, n.sort, x, 0), A34),
    "sort_last": (lambda x: np.sort(x), lambda n, x: _rows(n, n.sort, x, 1), A34),
    "sort_none": (lambda x: np.sort(x, axis=None), lambda n, x: n.sort(n.ravel(x)), A34),
    "msort": (lambda x: adnp.msort(x), lambda n, x: _rows(n, n.sort, x, 0), A34),
    "partition_1d": (lambda x: np.partition(x, 1), lambda n, x: n.partition(x, 1), V5),
    "partition_many": (lambda x: np.partition(x, [0, 3, 6]),
                       lambda n, x: n.partition(x, [0, 3, 6]), V14),
    "partition_kths": (lambda x: np.partition(x, [0, -1], axis=0),
                       lambda n, x: _rows(n, lambda v: n.partition(v, [0, 2]), x, 0), A34),
    # NaN-ignoring
    "nansum": (lambda x: np.nansum(x, axis=0),
               lambda n, x: n.sum(n.where(np.isnan(NAN34), 0.0, x), axis=0), NAN34),
    "nansum_all_initial": (lambda x: np.nansum(3.0 * x, initial=1.0), lambda n, x: n.sum(
        n.where(np.isnan(NAN34), 0.0, 3.0 * x)) + 1.0, NAN34),
    "nanmean": (lambda x: np.nanmean(x, axis=1, keepdims=True),
                lambda n, x: n.sum(n.where(np.isnan(NAN34), 0.0, x), axis=1, keepdims=True)
                / (~np.isnan(NAN34)).sum(1, keepdims=True), NAN34),
    "nanmean_where": (lambda x: np.nanmean(x, where=M34),
                      lambda n, x: n.sum(n.where(M34 & ~np.isnan(NAN34), x, 0.0))
                      / (M34 & ~np.isnan(NAN34)).sum(), NAN34),
    # ufunc methods
    "add_reduce": (lambda x: np.add.reduce(x), lambda n, x: n.sum(x, axis=0), A34),
    "add_reduce_none": (lambda x: np.add.reduce(x, axis=None, where=M34),
                        lambda n, x: n.sum(n.where(M34, x, 0.0)), A34),
    "multiply_reduce": (lambda x: np.multiply.reduce(x, axis=1, keepdims=True),
                        lambda n, x: n.prod(x, axis=1, keepdims=True), A34),
    "maximum_reduce": (lambda x: np.maximum.reduce(x, axis=(0, 1)),
                       lambda n, x: n.max(x, axis=(0, 1)), A234),
    "minimum_reduce": (lambda x: np.minimum.reduce(x, axis=-1),
                       lambda n, x: n.min(x, axis=-1), A234),
    "logaddexp_reduce": (lambda x: np.logaddexp.reduce(x, axis=1),
                         lambda n, x: _logsumexp(n, x, 1), A34),
    "add_accumulate": (lambda x: np.add.accumulate(x, axis=1),
                       lambda n, x: n.cumsum(x, axis=1), A34),
    "multiply_accumulate": (lambda x: np.multiply.accumulate(x),
                            lambda n, x: _cumprod_ref(n, x, 0), A34),
    # lists and tuples of traced values (pyautodiff.autograd.numpy)
    "std_list": (lambda x: adnp.std([x[0, 0], x[1, 1] + 2.0]),
                 lambda n, x: n.std(n.stack([x[0, 0], x[1, 1] + 2.0])), A34),
    "sum_list": (lambda x: adnp.sum([x[0], 2.0 * x[1]]),
                 lambda n, x: n.sum(x[0]) + 2.0 * n.sum(x[1]), A34),
    "mean_tuple_axis": (lambda x: adnp.mean((x[0], x[1] * x[2]), axis=0),
                        lambda n, x: (x[0] + x[1] * x[2]) / 2.0, A34),
    "median_list": (lambda x: adnp.median([x[0, 0], x[0, 1], 2.0 * x[0, 2]]),
                    lambda n, x: _median_1d(n, n.stack([x[0, 0], x[0, 1], 2.0 * x[0, 2]])), A34),
}


def _pieces(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _weights(case):
    ours, _, x = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return [np.linspace(-1.0, 2.0, np.size(p)).reshape(np.shape(p)) for p in _pieces(ours(x))]


def _objective(case, autograd=False):
    """A nonlinear scalar of the case's result: its second and third
    derivatives run through the nested rules."""
    ours, reference, _ = CASES[case]
    weights = _weights(case)
    n = agnp if autograd else np
    f = (lambda x: reference(agnp, x)) if autograd else ours

    def objective(x):
        return sum(n.sum(n.sin(p) * w) for p, w in zip(_pieces(f(x)), weights))
    return objective


@pytest.mark.parametrize("case", CASES)
def test_values(case):
    ours, _, x = CASES[case]
    expected = _pieces(ours(x))           # NumPy's own, on the ndarray
    got = _pieces(ours(ad.Array(x)))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert isinstance(g, ad.Array)
        assert g.shape == np.shape(e)
        np.testing.assert_allclose(g.data, e, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("case", CASES)
def test_gradient(case):
    x = CASES[case][2]
    g = ad.grad(_objective(case))(x)
    np.testing.assert_allclose(g, numeric_grad(_objective(case), [x], 0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g, ag.grad(_objective(case, autograd=True))(x),
                               rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("case", CASES)
def test_hessian(case):
    x = CASES[case][2]
    h = ad.hessian(_objective(case))(x)
    expected = ag.hessian(_objective(case, autograd=True))(x)
    np.testing.assert_allclose(h, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", ["std_where_ddof", "average_traced_weights", "median_even",
                                  "cumprod", "diff_prepend_append", "gradient_coordinates",
                                  "sort_axis0", "partition_kths", "nanmean",
                                  "logaddexp_reduce", "multiply_accumulate", "std_list"])
def test_third_order(case):
    x = CASES[case][2]
    objective = _objective(case)
    v = np.cos(np.arange(x.size)).reshape(x.shape)

    def curvature(y):
        return np.sum(ad.hvp(objective)(y, v) * v)
    g = ad.grad(curvature)(x)
    np.testing.assert_allclose(g, numeric_grad(lambda y: float(curvature(y)), [x], 0),
                               rtol=1e-5, atol=1e-7)


# -- exact values where elements are zero, NaN, tied ---------------------------

def test_cumprod_with_zeros_at_every_order():
    """f = x0 + 2 x0 x1 + 3 x0 x1 x2 + 4 x0 x1 x2 x3 at x = (2, 0, 3, 0):
    each derivative by hand (a quotient by the product would be 0/0)."""
    def f(x):
        return np.sum(np.cumprod(x) * np.array([1.0, 2.0, 3.0, 4.0]))
    z = np.array([2.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(ad.grad(f)(z), [1.0, 22.0, 0.0, 0.0])
    np.testing.assert_array_equal(ad.hessian(f)(z), [[0.0, 11.0, 0.0, 0.0],
                                                    [11.0, 0.0, 6.0, 24.0],
                                                    [0.0, 6.0, 0.0, 0.0],
                                                    [0.0, 24.0, 0.0, 0.0]])
    # third derivatives: d3/dx0 dx1 dx2 = 3 + 4 x3 = 3, d3/dx0 dx1 dx3 = 4 x2 = 12,
    # d3/dx1 dx2 dx3 = 4 x0 = 8, d3/dx0 dx2 dx3 = 4 x1 = 0
    third = ad.jacobian(ad.hessian(f))(z)
    assert third[0, 1, 2] == third[2, 0, 1] == 3.0
    assert third[0, 1, 3] == 12.0 and third[1, 2, 3] == 8.0 and third[0, 2, 3] == 0.0
    x = ZEROS
    g = ad.grad(lambda y: np.sum(np.sin(np.cumprod(y, axis=1))))(x)
    np.testing.assert_allclose(g, numeric_grad(lambda y: np.sum(np.sin(np.cumprod(y, axis=1))),
                                               [x], 0), rtol=1e-7, atol=1e-9)


def test_nan_entries_have_zero_gradient_and_all_nan_slices_are_numpys():
    x = np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, 3.0]])
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        expected = np.nanmean(x, axis=1)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        got = np.nanmean(ad.Array(x), axis=1)
    np.testing.assert_array_equal(got.data, expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = ad.grad(lambda y: np.nansum(np.nanmean(y, axis=1) * 3.0))(x)
    np.testing.assert_array_equal(g, [[0.0, 0.0, 0.0], [1.5, 0.0, 1.5]])
    np.testing.assert_array_equal(ad.grad(lambda y: np.nansum(y * y))(x),
                                  [[0.0, 0.0, 0.0], [2.0, 0.0, 6.0]])


def test_median_even_count_shares_the_gradient_and_nan_is_numpys():
    x = np.array([4.0, 1.0, 3.0, 2.0])
    np.testing.assert_array_equal(ad.grad(np.median)(x), [0.0, 0.0, 0.5, 0.5])
    np.testing.assert_array_equal(ad.grad(np.median)(x[:3]), [0.0, 0.0, 1.0])
    y = np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 2.0]])
    out = np.median(ad.Array(y), axis=1)
    np.testing.assert_array_equal(out.data, np.median(y, axis=1))
    np.testing.assert_array_equal(ad.grad(lambda t: np.nansum(np.median(t, axis=1)))(y),
                                  [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def test_sum_where_gradient_is_zero_off_the_mask():
    """(HIPS autograd's sum ignores where= in its gradient: ours does not)"""
    g = ad.grad(lambda x: np.sum(x * x, where=x > 0))(np.array([-1.0, 2.0, -3.0, 0.5]))
    np.testing.assert_array_equal(g, [0.0, 4.0, 0.0, 1.0])


def test_sort_gradient_follows_the_permutation():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, -1.0]])
    weights = np.arange(1.0, 4.0)
    g = ad.grad(lambda y: np.sum(np.sort(y) * weights))(x)
    np.testing.assert_array_equal(g, [[3.0, 1.0, 2.0], [2.0, 3.0, 1.0]])
    g = ad.grad(lambda y: np.partition(y[0], 0)[0])(x)
    np.testing.assert_array_equal(g, [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])


def test_methods():
    x = ad.Array(A34)
    np.testing.assert_allclose(x.cumprod(axis=1).data, A34.cumprod(axis=1), rtol=1e-14)
    np.testing.assert_array_equal(x.ptp(axis=0, keepdims=True).data,
                                  np.ptp(A34, axis=0, keepdims=True))
    g = ad.grad(lambda y: y.cumprod().sum() + y.ptp())(A34)
    np.testing.assert_allclose(g, ag.grad(lambda y: agnp.sum(_cumprod_ref(agnp, agnp.ravel(
        y)[None], 1)) + agnp.max(y) - agnp.min(y))(A34).reshape(3, 4), rtol=1e-12)


def test_ad_names_and_plain_ndarrays_are_numpys():
    for name in ("sort", "median", "cumprod", "diff", "ptp", "average", "partition",
                 "nansum", "nanmean"):
        assert name in ad.__all__
    assert isinstance(ad.sort(A34), np.ndarray)
    np.testing.assert_array_equal(ad.sort(A34), np.sort(A34))
    assert isinstance(ad.median(ad.Array(A34)), ad.Array)
    assert type(np.cumprod(A34)) is np.ndarray
    np.testing.assert_array_equal(adnp.msort(A34), np.sort(A34, axis=0))
    assert type(adnp.std([1.0, 2.0])) is np.float64         # NumPy's, on plain lists
    assert type(np.gradient(ad.Array(A34))) is type(np.gradient(A34))


# -- ad.record: the sort's permutation is guarded -----------------------------

def test_record_replays_a_sort_in_the_same_order_and_refuses_another():
    weights = np.arange(4.0)
    f = ad.record(lambda x: np.sum(np.sort(x) * weights), np.array([3.0, 1.0, 2.0, 0.5]))
    y = np.array([5.0, 0.0, 2.5, -1.0])               # the same order
    assert f(y) == np.sum(np.sort(y) * weights)
    np.testing.assert_array_equal(f.grad(y), [3.0, 1.0, 2.0, 0.0])
    with pytest.raises(ad.BranchError, match="numpy.sort"):
        f(np.array([1.0, 2.0, 3.0, 4.0]))


def test_record_guards_partition_median_and_nan_places():
    x = np.array([3.0, 1.0, 2.0, 0.5])
    p = ad.record(lambda t: np.sum(np.partition(t, 1) * np.arange(4.0)), x)
    y = np.array([3.5, 2.0, 5.0, -1.0])               # still partitions the same way
    # (the recorded permutation, NumPy's at x, moves y's elements)
    np.testing.assert_allclose(p(y), np.sum(y[np.argpartition(x, 1)] * np.arange(4.0)))
    with pytest.raises(ad.BranchError, match="numpy.partition"):
        p(np.array([0.0, 1.0, 2.0, 3.0]))
    m = ad.record(lambda x: np.median(x, axis=1), A34)
    np.testing.assert_allclose(m(A34 * 2.0), np.median(A34 * 2.0, axis=1))
    with pytest.raises(ad.BranchError, match="numpy.sort"):
        m(-A34)
    s = ad.record(lambda x: np.sort(x), np.array([1.0, np.nan, 0.0]))
    np.testing.assert_array_equal(s(np.array([2.0, np.nan, -1.0])), [-1.0, 2.0, np.nan])
    with pytest.raises(ad.BranchError, match="NaN"):
        s(np.array([np.nan, 2.0, 0.0]))


def test_record_replays_where_masks_and_nan_counts():
    f = ad.record(lambda x: np.nanmean(x, where=x > 0.0) + np.sum(np.cumprod(x)), V5)
    for y in (V5 * 3.0, -V5, np.where(V5 > 0, np.nan, V5)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.nanmean(y, where=y > 0.0) + np.sum(np.cumprod(y))
        np.testing.assert_allclose(f(y), expected, rtol=1e-13)


# -- what is not supported: an error naming it ---------------------------------

@pytest.mark.parametrize("call, error, match", [
    (lambda x: np.sort(x, order="f"), TypeError, r"numpy.sort\(order"),
    (lambda x: np.partition(x, 1, order="f"), TypeError, r"numpy.partition\(order"),
    (lambda x: np.gradient(x, ad.Value(1.0)), TypeError, "numpy.gradient: traced spacing"),
    (lambda x: np.var(x, mean=np.zeros((3, 1))), TypeError, r"numpy.var\(mean"),
    (lambda x: np.sum(x, out=np.zeros(())), TypeError, "numpy.sum writes into"),
    (lambda x: np.cumprod(x, dtype=int), TypeError, r"numpy.cumprod\(dtype=int64\)"),
    (lambda x: np.nanmean(x, out=np.zeros(())), TypeError, "numpy.nanmean writes into"),
    (lambda x: np.sum(x, where=x * 1.0), TypeError, "where= of an Array that is not a mask"),
    (lambda x: np.add.reduce(x, out=(np.zeros(4),)), TypeError, "numpy.add.reduce writes into"),
    (lambda x: np.add.reduceat(x, [0, 2]), TypeError, "numpy.add.reduceat"),
    (lambda x: np.maximum.accumulate(x), TypeError, "numpy.maximum.accumulate"),
    (lambda x: np.multiply.outer(x, x), TypeError, "numpy.multiply.outer"),
    (lambda x: np.subtract.reduce(x), TypeError, "numpy.subtract.reduce"),
    # NumPy's own checks, raised as NumPy raises them
    (lambda x: np.average(x, axis=1, weights=np.zeros(4)), ZeroDivisionError, "Weights sum"),
    (lambda x: np.average(x, weights=np.ones(4)), TypeError, "Axis must be specified"),
    (lambda x: np.gradient(x, edge_order=3), ValueError, "edge_order"),
    (lambda x: np.gradient(x[:2], edge_order=2), ValueError, "too small"),
    (lambda x: np.diff(x, -1), ValueError, "order must be non-negative"),
    (lambda x: np.max(x, where=x > 0), ValueError, "initial"),
    (lambda x: np.partition(x, 9), ValueError, "out of bounds"),
])
def test_unsupported(call, error, match):
    with pytest.raises(error, match=match):
        call(ad.Array(A34))


def test_lists_of_traced_values_through_numpy_itself():
    """NumPy's own reductions of a list (no dispatch): an object array
    reduced element by element, traced where the result is an array; a
    whole reduction NumPy makes a float, and that raises DetachError
    (pyautodiff.autograd.numpy stacks the list first: CASES' *_list)."""
    g = ad.grad(lambda x: np.sum(np.std([x, 2.0 * x], axis=0)))(V5)
    np.testing.assert_allclose(g, 0.5 * np.sign(V5), rtol=1e-14)
    with pytest.raises(ad.DetachError):
        ad.grad(lambda x: np.std([x[0], x[1]]))(V5)


@pytest.mark.parametrize("case", ["cumprod", "median_even", "sort_axis0", "nanmean",
                                  "average_axes", "gradient_coordinates", "logaddexp_reduce",
                                  "std_where_ddof", "partition_kths"])
def test_jvp(case):
    """Forward mode (one tangent sweep) against central differences."""
    x = CASES[case][2]
    objective = _objective(case)
    v = np.sin(np.arange(x.size) + 1.0).reshape(x.shape)
    value, tangent = ad.jvp(objective)(x, v)
    h = 1e-6
    expected = (objective(x + h * v) - objective(x - h * v)) / (2 * h)
    np.testing.assert_allclose(float(value), objective(x), rtol=1e-14)
    np.testing.assert_allclose(float(tangent), expected, rtol=1e-6, atol=1e-8)


def test_record_replays_second_order():
    """A recording's Hessian (the C sweeps on the replayed tape) at a new
    input in the same order equals the Hessian computed afresh there."""
    def f(x):
        return np.sum(np.sin(np.sort(x, axis=1)) * np.cumprod(x, axis=0)) + \
            np.median(x) ** 2 + np.logaddexp.reduce(x, axis=None)
    F = ad.record(f, A34)
    y = A34 * 1.01
    np.testing.assert_allclose(F(y), f(y), rtol=1e-13)
    np.testing.assert_allclose(F.grad(y), ad.grad(f)(y), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(F.hessian(y), ad.hessian(f)(y), rtol=1e-11, atol=1e-13)
