"""A value that a derivative is tracing and that becomes a plain float
(float(x), math.sin(x), np.float64(x), np.asarray(x, dtype=float)) warns:
no derivative flows through that number, so the result would otherwise be
a silent zero.  Where no plain number is made, nothing warns."""
import math
import warnings

import numpy as np
import pytest

import pyautodiff as ad


def _warns_and_cuts(f, x, want_cut):
    with pytest.warns(ad.DetachWarning, match="no derivative flows"):
        got = ad.grad(f)(x)
    np.testing.assert_allclose(got, want_cut)


def test_float_conversions_of_traced_scalars_warn():
    # each gives the derivative with the converted factor held constant,
    # as the warning says
    _warns_and_cuts(lambda x: math.sin(x) * x, 1.0, math.sin(1.0))
    _warns_and_cuts(lambda x: np.float64(x) * x, 3.0, 3.0)
    _warns_and_cuts(lambda s: np.sum(np.array([s, s * s], dtype=float)) + s,
                    3.0, 1.0)
    _warns_and_cuts(lambda x: float(x) * x, 2.0, 2.0)


def test_float_conversions_of_traced_arrays_warn():
    x = np.array([1.0, 2.0])
    _warns_and_cuts(lambda x: np.sum(np.asarray(x, dtype=float) ** 2) + x[0],
                    x, [1.0, 0.0])
    _warns_and_cuts(lambda x: float(x[0]) * x[1], x, [0.0, 1.0])


def test_a_recording_warns_too():
    # the pin makes replays elsewhere raise; at the recorded point itself the
    # gradient still misses the path through the number
    with pytest.warns(ad.DetachWarning):
        F = ad.record(lambda x: math.sin(x) * x, 1.0)
    assert F.grad(1.0) == pytest.approx(math.sin(1.0))
    with pytest.raises(ad.BranchError):
        F.grad(2.0)


def test_what_stays_exact_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ad.grad(lambda x: np.sin(x) * x)(1.0) == pytest.approx(
            math.sin(1.0) + math.cos(1.0))
        assert ad.grad(lambda x: x.item() * x)(3.0) == 3.0          # a constant asked for
        assert ad.grad(lambda x: x * 2 if int(x) == 1 else x)(1.5) == 2.0
        assert ad.grad(lambda x: round(x) * x)(2.2) == 2.0            # piecewise constant
        assert f"{ad.grad(lambda x: x ** 2)(3.0):.1f}" == "6.0"
        np.testing.assert_allclose(
            ad.grad(lambda x: np.sum(np.array([x[0] * x[1], x[1]])))(np.array([2.0, 3.0])),
            [3.0, 3.0])
        # outside any derivative, Values and Arrays convert quietly
        assert float(ad.Value(2.5)) == 2.5
        assert float(ad.Array(2.5)) == 2.5
        np.testing.assert_array_equal(np.asarray(ad.Array([1.0, 2.0]), dtype=float),
                                      [1.0, 2.0])


@pytest.mark.filterwarnings("ignore::pyautodiff.DetachWarning")
def test_numbers_taken_out_of_an_array_are_guards_in_a_recording():
    # item() and float() of a traced Array: a replay at other values must
    # not reuse the recorded number
    for f in (lambda x: x.sum() * x.sum().item(),
              lambda x: x.sum() * float(x.sum()),
              lambda x: x.sum() * x[0].item()):
        F = ad.record(f, np.array([1.0, 2.0]))
        assert F(np.array([1.0, 2.0])) == f(np.array([1.0, 2.0]))
        with pytest.raises(ad.BranchError):
            F(np.array([3.0, 4.0]))
