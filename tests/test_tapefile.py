"""Saved recordings under edits: a file either loads into a tape as
consistent as a recorded one (same values, gradients and Hessians as an
independent evaluation of that tape) or raises ValueError; never a crash,
never a hang on a file that never ends."""
import numpy as np
import autograd
import autograd.numpy as anp

import pyautodiff as ad


# -- a result that depends on no variable -------------------------------------
# (what an edited flag or op can make of a recording, and what a recording
# of a comparison is): its derivatives are zeros, as autograd's

def _on_a_comparison(np_):
    return lambda x: np_.sum((x < 0.0) * 1.0)


def test_derivatives_of_a_result_that_depends_on_no_variable_are_zeros():
    x = np.array([0.5, -1.0, 2.0])
    want = autograd.grad(_on_a_comparison(anp))(x)
    f = _on_a_comparison(np)
    F = ad.record(f, x)
    np.testing.assert_array_equal(F.grad(x), want)          # one C call
    np.testing.assert_array_equal(F.value_and_grad(x)[1], want)
    np.testing.assert_array_equal(F.hessian(x), np.zeros((3, 3)))
    np.testing.assert_array_equal(ad.grad(f)(x), want)
    a = ad.Array(x)
    out = f(a)
    out.backward()
    assert out.data == 1.0
    np.testing.assert_array_equal(a.grad, want)
