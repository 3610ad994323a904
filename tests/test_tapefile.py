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


# -- ad_array_check: an entry's checks before its values exist ---------------

def test_array_check_takes_what_the_appends_take_and_nothing_else():
    from pyautodiff import _core
    ffi, lib, OPS = _core.ffi, _core.lib, _core.OPS
    t = _core.new_tape()
    x = np.arange(6.0)
    _core.check(lib.ad_array_leaf(t, ffi.from_buffer("double[]", x), 1,
                                  ffi.new("int64_t[]", [6]), 1), t)

    def check(op, a, b, shape, map_=None, stride=None, offset=0):
        cmap = ffi.new("int64_t[]", map_) if map_ else ffi.NULL
        cstride = ffi.new("int64_t[]", stride or [0]) if stride is not None else ffi.NULL
        return lib.ad_array_check(t, op, a, b, len(shape),
                                  ffi.new("int64_t[]", list(shape) or [0]),
                                  cmap, len(map_ or ()), cstride, offset)

    good = [(OPS["TANH"], 0, -1, (6,)), (OPS["ADD"], 0, 0, (6,)),
            (OPS["SUM"], 0, -1, ()), (OPS["RESHAPE"], 0, -1, (2, 3)),
            (OPS["GATHER"], 0, -1, (2,), [5, 0]),
            (OPS["SCATTER"], 0, -1, (7,), [6, 0, 1, 2, 3, 4]),
            (OPS["GATHER"], 0, -1, (3,), None, [-2], 5)]
    bad = [(OPS["TANH"], 0, -1, (7,)), (OPS["TANH"], 0, -1, (10 ** 12,)),
           (OPS["ADD"], 0, 1, (6,)), (OPS["TANH"], 0, 0, (6,)),
           (OPS["RESHAPE"], 0, -1, (4,)), (OPS["SUM"], 0, -1, (2,)),
           (OPS["TANH"], 0, -1, (1,) * 17), (OPS["TANH"], 0, -1, (-1,)),
           (OPS["GATHER"], 0, -1, (2,), [6, 0]), (OPS["GATHER"], 0, -1, (2,), [-1, 0]),
           (OPS["GATHER"], 0, -1, (3,), [0, 1]),
           (OPS["GATHER"], 0, -1, (2 ** 40, 2 ** 40), [0]),    # its size overflows
           (OPS["SCATTER"], 0, -1, (6,), [6, 0, 1, 2, 3, 4]),
           (OPS["GATHER"], 0, -1, (3,), None, [-2], 6),
           (OPS["GATHER"], 0, -1, (4,), None, [2], 0),
           (OPS["SCATTER"], 0, -1, (3,), None, [1], 0), (OPS["TANH"], 0, -1, (6,), [0]),
           (OPS["GATHER"], 0, -1, (2,)), (ad._core.NUM_OPS, 0, -1, (6,))]
    for args in good:
        assert check(*args) == lib.AD_OK, (args, ffi.string(t.errmsg))
    for args in bad:
        assert check(*args) == lib.AD_EINVAL, args
    assert t.n == 1                     # nothing was appended
