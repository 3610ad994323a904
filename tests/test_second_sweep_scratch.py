"""The second-order sweep leaves an array's adjoint blocks unset until
their first writer, which assigns instead of adding where it writes each
element once (csrc/second.c): what the last sweep left there must never
show.  A recording evaluated at one point and then at another gives, bit
for bit, what a recording made at the second point gives, over random
programs of every op kind and programs built to hit each case: an
operand broadcast, one used twice (x * x), slices that cover part of
their operand, a matrix product, entries the output does not depend on."""
import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff.testing import fuzz_sparse

pytest.importorskip("scipy")


def _same(a, b):
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.data, b.data)


def _again_equals_fresh(f, x1, x2):
    F = ad.record(f, x1)
    F.sparse_hessian(x1)
    _same(F.sparse_hessian(x2), ad.record(f, x2).sparse_hessian(x2))
    # and the dense Hessian and an hvp on the same recording
    np.testing.assert_array_equal(F.hessian(x2), ad.record(f, x2).hessian(x2))
    v = np.linspace(-1.0, 1.0, x2.size)
    F.hvp(x1, v)
    np.testing.assert_array_equal(F.hvp(x2, v), ad.record(f, x2).hvp(x2, v))


@pytest.mark.parametrize("k", range(30))
def test_random_programs_keep_nothing_from_the_last_sweep(k):
    rng, n, _ = fuzz_sparse.draw(29, k)
    f = fuzz_sparse.random_program(rng, n, True)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    try:
        _again_equals_fresh(f, x1, x2)
    except (ValueError, FloatingPointError, ZeroDivisionError):
        pytest.skip("not finite at a point")
    # the sweep's Hessian against the Jacobian of the gradient (reverse
    # over reverse, no second-order sweep)
    np.testing.assert_allclose(ad.record(f, x1).hessian(x2),
                               ad.jacobian(ad.grad(f))(x2), rtol=1e-9, atol=1e-9)


def _broadcast(x):
    s = np.sum(x * x)                       # one operand twice
    return np.sum(np.sin(x) * s) + np.sum(np.outer(x, x) ** 2)


def _slices(x):
    return np.sum(x[:-1] ** 3 * x[1:]) + np.sum(np.exp(x[::2]))


def _unreached(x):
    unused = np.cos(x) * 7.0                # recorded, not in the output
    return np.sum(x ** 4) + 0.0 * np.sum(unused[:0])


def _product(x):
    A = np.reshape(x[:6], (2, 3))
    return np.sum(np.tanh(A @ A.T)) + np.sum(x * x[::-1])


@pytest.mark.parametrize("f", [_broadcast, _slices, _unreached, _product])
def test_each_kind_of_writer_keeps_nothing_from_the_last_sweep(f):
    rng = np.random.default_rng(3)
    x1, x2 = rng.normal(size=8), rng.normal(size=8)
    _again_equals_fresh(f, x1, x2)
    # against the Jacobian of the gradient (no second-order sweep)
    H = ad.jacobian(ad.grad(f))(x2)
    np.testing.assert_allclose(ad.record(f, x1).hessian(x2), H, rtol=1e-12, atol=1e-12)
