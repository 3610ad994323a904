"""Array exp and tanh (csrc/vmath.h): within 2 ulp of the correctly rounded
result over every range, the special values exactly, gradients against
central differences, and replays equal to eager recording bit for bit."""
import math

import numpy as np
import pytest

import pyautodiff as ad

rng = np.random.default_rng(7)
FUNCS = {"exp": (ad.exp, np.exp, math.exp), "tanh": (ad.tanh, np.tanh, math.tanh)}
# x87 extended precision: 11 bits beyond a double, a reference good to
# 1/1000 ulp; elsewhere NumPy's double result (itself within an ulp)
EXTENDED = np.finfo(np.longdouble).nmant >= 63


def ulp_errors(got, x, numpy_fn):
    """|got - f(x)| in ulps of f(x), with the smaller ulp at a power of 2."""
    if EXTENDED:
        ref = numpy_fn(x.astype(np.longdouble))
    else:
        ref = numpy_fn(x).astype(np.longdouble)
    with np.errstate(over="ignore"):
        rounded = ref.astype(np.float64)
    ulp = np.spacing(np.nextafter(np.abs(rounded), 0.0)).astype(np.longdouble)
    ulp = np.maximum(ulp, np.longdouble(5e-324))
    finite = np.isfinite(rounded)
    assert np.array_equal(got[~finite], rounded[~finite])   # overflow: inf
    return (np.abs(got[finite].astype(np.longdouble) - ref[finite])
            / ulp[finite]).astype(np.float64)


def spread(lo, hi, n):
    return rng.uniform(lo, hi, n)


def log_spread(lo, hi, n):
    """Magnitudes log-uniform in [lo, hi], both signs."""
    return np.exp(rng.uniform(np.log(lo), np.log(hi), n)) * rng.choice([-1, 1], n)


RANGES = {
    "exp": [spread(-745.2, 709.78, 200_000),        # everything, subnormals too
            spread(-1.0, 1.0, 100_000),
            spread(-745.2, -708.0, 100_000),        # subnormal results
            spread(700.0, 709.78, 50_000),          # near overflow
            log_spread(1e-300, 1.0, 50_000)],
    "tanh": [spread(-25.0, 25.0, 200_000),
             spread(-1.5, 1.5, 200_000),            # where the formulas switch
             log_spread(1e-310, 30.0, 100_000)],    # tiny to saturated
}
TOLERANCE = 2.0 if EXTENDED else 3.0                # ours + NumPy's own error


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_within_two_ulp_of_the_correctly_rounded_result(name):
    ours, numpy_fn, _ = FUNCS[name]
    x = np.concatenate(RANGES[name])
    with np.errstate(all="ignore"):
        got = ours(ad.Array(x)).data
    err = ulp_errors(got, x, numpy_fn)
    worst = int(np.argmax(err))
    assert err[worst] <= TOLERANCE, (x[worst], got[worst])
    assert np.mean(err) < 0.5                       # mostly correctly rounded


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_against_mpmath_at_the_worst_points(name):
    mpmath = pytest.importorskip("mpmath")
    ours, numpy_fn, _ = FUNCS[name]
    mpmath.mp.prec = 200
    x = np.concatenate(RANGES[name])
    with np.errstate(all="ignore"):
        got = ours(ad.Array(x)).data
    finite = np.isfinite(got)
    x, got = x[finite], got[finite]
    # the points farthest from NumPy's result, checked with 200 bits
    far = np.argsort(np.abs(got - numpy_fn(x)) / np.spacing(np.abs(got)))[-50:]
    mp_fn = getattr(mpmath, name)
    for k in far:
        exact = mp_fn(mpmath.mpf(float(x[k])))
        ulp = np.spacing(np.nextafter(abs(float(exact)), 0.0))
        assert abs(float((mpmath.mpf(float(got[k])) - exact) / ulp)) <= 2.0, x[k]


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324,
                    1e-310, -1e-310, 2.0 ** -29, -(2.0 ** -29), 1e-8, -1e-8,
                    0.5, -0.5, 1.0, -1.0, np.nextafter(1.0, 0.0), 19.0,
                    -19.0, 20.0, 25.0, -25.0, 700.0, -700.0, 1e300, -1e300,
                    709.78, 709.79, 710.0, -708.4, -720.0, -745.0, -745.2,
                    -746.0])


def same(got, want):
    """Equal, with the sign of a zero, and NaN where NaN."""
    return ((got == want) & (np.signbit(got) == np.signbit(want))
            | np.isnan(got) & np.isnan(want))


def test_exp_special_values():
    with np.errstate(all="ignore"):
        got = ad.exp(ad.Array(SPECIAL)).data
    named = dict(zip(SPECIAL.tolist(), got.tolist()))
    assert named[np.inf] == np.inf and named[-np.inf] == 0.0
    assert np.isnan(got[np.isnan(SPECIAL)]).all()
    assert named[0.0] == 1.0 and named[-0.0] == 1.0
    assert named[709.79] == np.inf and named[710.0] == np.inf
    assert named[1e300] == np.inf and named[-1e300] == 0.0
    assert named[-746.0] == 0.0 and named[-745.2] == 0.0
    assert named[-745.0] == 5e-324                  # the smallest subnormal
    assert 0.0 < named[-720.0] < 2.2250738585072014e-308
    assert named[1e-8] == math.exp(1e-8) and named[1.0] == math.e
    finite = np.isfinite(got) & (got > 0)
    err = ulp_errors(got[finite], SPECIAL[finite], np.exp)
    assert err.max() <= TOLERANCE


def test_tanh_special_values():
    got = ad.tanh(ad.Array(SPECIAL)).data
    tiny = np.abs(SPECIAL) < 2.0 ** -28
    assert same(got[tiny], SPECIAL[tiny]).all()     # tanh(x) = x, -0 kept
    assert same(got[np.isinf(SPECIAL)], np.sign(SPECIAL[np.isinf(SPECIAL)])).all()
    assert np.isnan(got[np.isnan(SPECIAL)]).all()
    assert (got[np.abs(SPECIAL) >= 20.0] == np.sign(SPECIAL[np.abs(SPECIAL) >= 20.0])).all()
    assert same(got, -ad.tanh(ad.Array(-SPECIAL)).data).all()       # odd
    finite = np.isfinite(SPECIAL)
    assert ulp_errors(got[finite], SPECIAL[finite], np.tanh).max() <= TOLERANCE


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_scalar_values_keep_libm(name):
    ours, _, libm = FUNCS[name]
    for x in rng.uniform(-20, 20, 200).tolist():
        assert ours(ad.Value(x)).data == libm(x)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_gradients_against_central_differences(name):
    ours, numpy_fn, _ = FUNCS[name]
    x = rng.uniform(-3.0, 3.0, size=(4, 5))
    w = rng.normal(size=(4, 5))
    a = ad.Array(x)
    (ours(a) * w).sum().backward()
    h = 1e-6
    numeric = (numpy_fn(x + h) - numpy_fn(x - h)) / (2 * h) * w
    np.testing.assert_allclose(a.grad, numeric, rtol=1e-6, atol=1e-8)


def test_second_derivatives_against_central_differences():
    x0 = rng.uniform(-2.0, 2.0, size=6)
    F = ad.record(lambda x: (ad.tanh(x) + ad.exp(x * 0.5)).sum(), x0)
    h = 1e-5
    first = lambda x: (1.0 - np.tanh(x) ** 2) + 0.5 * np.exp(0.5 * x)
    numeric = (first(x0 + h) - first(x0 - h)) / (2 * h)
    np.testing.assert_allclose(np.diag(F.hessian(x0)), numeric, rtol=1e-6)


def test_replay_equals_eager_recording_bit_for_bit():
    def f(x):
        return ad.tanh(x * 3.0) * ad.exp(x) + ad.exp(-x * x)
    x0 = rng.uniform(-2.0, 2.0, size=(128, 256))
    F = ad.record(f, x0)
    for x in (x0, rng.uniform(-40.0, 40.0, size=x0.shape)):
        eager = f(ad.Array(x)).data
        assert np.array_equal(F(x), eager)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_every_element_gets_the_same_bits_alone_or_in_a_block(name):
    # the loop runs two elements at a time and a leftover one alone: both
    # paths must round alike (replays of different shapes agree)
    ours = FUNCS[name][0]
    x = np.concatenate([rng.uniform(-30.0, 30.0, 150), log_spread(1e-12, 1.0, 51)])
    whole = ours(ad.Array(x)).data
    alone = np.array([ours(ad.Array(x[k:k + 1])).data[0] for k in range(len(x))])
    assert np.array_equal(whole, alone)
