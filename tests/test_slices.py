"""Strided gathers: basic indexing (ints, slices, Ellipsis, None) and
transposes keep NumPy's offset and strides instead of an index map.  Values
against NumPy, gradients against central differences, and every sweep,
replay, save and load that must read the strided form."""
import hashlib
import json
import struct

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import _core, tapefile
from pyautodiff._core import ffi, lib
from helpers import numeric_grad

rng = np.random.default_rng(7)

# (name, fn): fn runs on an ndarray and on an Array alike
BASIC = [
    ("start", lambda a: a[1:]), ("stop", lambda a: a[:-1]),
    ("reversed", lambda a: a[::-1]), ("step2", lambda a: a[::2]),
    ("start-step3", lambda a: a[1::3]), ("neg-step", lambda a: a[-1:0:-2]),
    ("step-past-end", lambda a: a[:, ::-7]), ("wide-bounds", lambda a: a[-100:100]),
    ("empty", lambda a: a[3:1]), ("empty-inner", lambda a: a[:, 2:2, 1:]),
    ("newaxis", lambda a: a[None]), ("newaxis-mid", lambda a: a[:, None, ::2]),
    ("newaxis-both", lambda a: a[np.newaxis, ..., np.newaxis]),
    ("ellipsis", lambda a: a[...]), ("ellipsis-int", lambda a: a[..., 1]),
    ("int-ellipsis-rev", lambda a: a[1, ..., ::-1]),
    ("scalar", lambda a: a[1, 2, 3]), ("scalar-neg", lambda a: a[-1, -2, -3]),
    ("two-ints", lambda a: a[1, 2]), ("np-int", lambda a: a[np.int64(2), ::-2]),
    ("mixed", lambda a: a[1:3, -1, ::-2]),
    ("T", lambda a: a.T), ("transpose", lambda a: a.transpose(1, 2, 0)),
    ("transpose-tuple", lambda a: a.transpose((2, 0, 1))),
    ("T-then-slice", lambda a: a.T[1:, ::-2]),
    ("slice-then-T", lambda a: a[::2][:, 1:].T),
    ("chain", lambda a: a.transpose(2, 0, 1)[::-1, 1][None, ::2]),
    ("chain-int", lambda a: a[:, ::-1][..., 1:4:2][1]),
]


def _plain(y):
    return y.data if isinstance(y, ad.Array) else np.asarray(y)


def _map_of(y):
    c = y._t._c
    return c.blk[c.aux[y._i]].map


@pytest.mark.parametrize("fn", [f for _, f in BASIC], ids=[n for n, _ in BASIC])
def test_basic_indices_against_numpy_and_central_differences(fn):
    x = rng.normal(size=(4, 5, 6))
    xa = ad.Array(x)
    out = fn(xa)
    expected = fn(x)
    assert out.shape == np.shape(expected)
    np.testing.assert_array_equal(out.data, expected)
    assert _map_of(out) == ffi.NULL        # strided: no index map was built
    w = rng.normal(size=out.shape)
    out.backward(w)
    num = numeric_grad(lambda y: float(np.sum(_plain(fn(y)) * w)), [x], 0)
    np.testing.assert_allclose(xa.grad, num, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape", [(1,), (7,), (5, 3), (0, 2), (3, 0), (2, 3, 4)])
def test_one_slice_of_arrays_of_each_rank(shape):
    """x[s] for one slice s, on arrays of each rank, empty ones too: values
    and shape as NumPy's, a strided gather (no index map), the gradient
    scattered back into place, and under no_grad a copy."""
    x = rng.normal(size=shape)
    slices = [slice(None), slice(1, None), slice(None, -1), slice(None, None, -1),
              slice(-1, 0, -2), slice(1, None, 3), slice(5, 1), slice(-100, 100),
              slice(2, 2)]
    for s in slices:
        xa = ad.Array(x)
        out = xa[s]
        assert out.shape == x[s].shape, s
        np.testing.assert_array_equal(out.data, x[s])
        assert _map_of(out) == ffi.NULL
        w = rng.normal(size=out.shape)
        (out * w).sum().backward()
        want = np.zeros(shape)
        want[s] += w
        np.testing.assert_array_equal(xa.grad, want)
        with ad.no_grad():
            np.testing.assert_array_equal(xa[s].data, x[s])


def test_ad_transpose_and_advanced_indices_keep_their_maps():
    x = rng.normal(size=(3, 4, 2))
    xa = ad.Array(x)
    t = ad.transpose(xa, (0, 2, 1))
    np.testing.assert_array_equal(t.data, np.transpose(x, (0, 2, 1)))
    assert _map_of(t) == ffi.NULL
    for picked in (xa[[0, 2, 2]], xa[xa.data > 0], xa[:, [1, 1]]):
        assert _map_of(picked) != ffi.NULL


def test_a_slice_of_a_0d_array_and_of_a_detached_one():
    s = ad.Array(2.5)
    y = s[None, ...]
    np.testing.assert_array_equal(y.data, [2.5])
    (3.0 * y).sum().backward()
    assert s.grad == 3.0
    with ad.no_grad():
        z = ad.Array(np.arange(6.0))[::-2]
        np.testing.assert_array_equal(z.data, [5.0, 3.0, 1.0])


def test_repeated_use_of_one_slice_accumulates():
    x = ad.Array(np.arange(1.0, 6.0))
    s = x[1:3]
    (s + s + 2.0 * s).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 4.0, 4.0, 0.0, 0.0])
    (x[1:] * x[:-1]).sum().backward()   # grads accumulate across sweeps
    np.testing.assert_array_equal(x.grad, [2.0, 4.0 + 4.0, 4.0 + 6.0, 8.0, 4.0])


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_grad(x):                       # by hand
    g = np.zeros_like(x)
    d = x[1:] - x[:-1] ** 2
    g[:-1] = -400.0 * x[:-1] * d - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * d
    return g


def cube_fn(x):                         # transposes and slices of a 3-D input
    y = x.transpose(2, 0, 1)[::-1, 1:] * np.tanh(x.T.transpose(0, 2, 1)[:, :-1, ::-1])
    return np.sum(y[..., 1] ** 2) + np.sum(np.sin(x[1, ::2]))


def test_replays_at_new_inputs():
    F = ad.record(rosen, np.linspace(-1.0, 1.5, 50))
    for _ in range(3):
        x = rng.normal(size=50)
        assert F(x) == pytest.approx(rosen(x), rel=1e-13)
        np.testing.assert_allclose(F.grad(x), rosen_grad(x), rtol=1e-12, atol=1e-12)
    x0 = rng.normal(size=(3, 4, 5))
    G = ad.record(cube_fn, x0)
    for _ in range(2):
        x = rng.normal(size=(3, 4, 5))
        assert G(x) == pytest.approx(cube_fn(x), rel=1e-13)
        np.testing.assert_allclose(G.grad(x), numeric_grad(cube_fn, [x], 0),
                                   rtol=1e-6, atol=1e-8)


def test_jvp_and_hvp_through_slices():
    x, v = rng.normal(size=30), rng.normal(size=30)
    h = 1e-6

    def f(x):
        return np.tanh(x[1:][::-1] * x[:-1]).reshape(29, 1).T[:, ::3]

    value, tangent = ad.jvp(f)(x, v)
    np.testing.assert_allclose(value, f(x), rtol=1e-14)
    np.testing.assert_allclose(tangent, (f(x + h * v) - f(x - h * v)) / (2 * h),
                               rtol=1e-6, atol=1e-9)
    want = (rosen_grad(x + h * v) - rosen_grad(x - h * v)) / (2 * h)
    np.testing.assert_allclose(ad.hvp(rosen)(x, v), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ad.record(rosen, x).hvp(x, v), want, rtol=1e-6, atol=1e-6)
    # the same on a 3-D input, against the reverse sweep's own gradient
    x3, v3 = rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 4, 5))
    grad = ad.grad(cube_fn)
    want3 = (grad(x3 + h * v3) - grad(x3 - h * v3)) / (2 * h)
    np.testing.assert_allclose(ad.hvp(cube_fn)(x3, v3), want3, rtol=1e-5, atol=1e-6)


def _rewrite(path, change, version=None):
    """Rewrite a saved file's header (and version) with a valid checksum."""
    data = path.read_bytes()[:-32]
    magic, old_version, head_len = tapefile._PREFIX.unpack_from(data)
    start = tapefile._PREFIX.size
    header = json.loads(data[start:start + head_len])
    change(header)
    head = json.dumps(header).encode()
    body = struct.pack("<8sIQ", magic, version or old_version, len(head)) + head \
        + data[start + head_len:]
    path.write_bytes(body + hashlib.sha256(body).digest())


def test_save_and_load_of_a_recording_with_slices(tmp_path):
    x0 = rng.normal(size=(3, 4, 5))
    F = ad.record(cube_fn, x0)
    path = tmp_path / "f.adtape"
    F.save(path)
    G = ad.load(path)
    assert len(G) == len(F)
    for _ in range(3):
        x = rng.normal(size=(3, 4, 5))
        assert G(x) == F(x) == pytest.approx(cube_fn(x), rel=1e-13)
        np.testing.assert_array_equal(G.grad(x), F.grad(x))
    head = json.loads(path.read_bytes()[20:20 + tapefile._PREFIX.unpack_from(
        path.read_bytes())[2]])
    strided = [e for e in head["arrays"] if "strided" in e]
    assert len(strided) >= 6 and not any("map" in e for e in head["arrays"])


def test_bad_strides_in_a_file_are_value_errors(tmp_path):
    path = tmp_path / "f.adtape"

    def first_strided(h):
        return next(e for e in h["arrays"] if "strided" in e)

    for change in (lambda e: e.update(strided=[10 ** 6] + e["strided"][1:]),
                   lambda e: e.update(strided=[-1] + e["strided"][1:]),
                   lambda e: e.update(strided=e["strided"][:1] + [10 ** 12]),
                   lambda e: e.update(strided=e["strided"][:1] + [2 ** 70]),
                   lambda e: e.update(strided=e["strided"] + [1]),
                   lambda e: e.update(strided="no")):
        ad.record(rosen, np.linspace(0.0, 1.0, 8)).save(path)
        _rewrite(path, lambda h: change(first_strided(h)))
        with pytest.raises(ValueError):
            ad.load(path)


def test_version_1_files_with_maps_still_load(tmp_path):
    def f(x):
        return np.sum(x[[0, 2, 2]] ** 2)
    path = tmp_path / "f.adtape"
    ad.record(f, np.arange(3.0)).save(path)
    _rewrite(path, lambda h: None, version=1)
    G = ad.load(path)
    x = np.array([1.0, -2.0, 3.0])
    assert G(x) == 1.0 + 9.0 + 9.0
    np.testing.assert_array_equal(G.grad(x), [2.0, 0.0, 12.0])


def test_c_refuses_offsets_and_strides_outside_the_operand():
    c = _core.new_tape()
    values = np.arange(12.0)
    shape = ffi.new("int64_t[]", [12])
    _core.check(lib.ad_array_leaf(c, ffi.from_buffer("double[]", values), 1, shape, 1), c)
    out = np.empty(12)
    pout = ffi.from_buffer("double[]", out)

    def append(op_a, offset, out_shape, strides):
        ndim = len(out_shape)
        return lib.ad_array_append_strided(
            c, op_a, pout, ndim, ffi.new("int64_t[]", list(out_shape) or [0]),
            offset, ffi.new("int64_t[]", list(strides) or [0]))

    bad = [
        (0, -1, (3,), (1,)),                 # offset below the operand
        (0, 12, (1,), (1,)),                 # offset past its end
        (0, 10, (3,), (1,)),                 # runs past the end
        (0, 2, (3,), (-2,)),                 # a negative step below 0
        (0, 0, (2, 3), (10, 1)),             # the dims together overshoot
        (0, 11, (2, 2), (-6, -6)),           # ... and undershoots
        (0, 0, (2,), (2 ** 62,)),            # a stride that would overflow
        (0, 0, (2,), (-2 ** 63,)),
        (1, 0, (1,), (1,)),                  # operand not an earlier entry
        (-1, 0, (1,), (1,)),
        (0, 0, (1,) * 17, (0,) * 17),        # too many dims
        (0, 0, (-1,), (1,)),                 # a negative dim
    ]
    for args in bad:
        with pytest.raises(ValueError, match="gather|rank|shape"):
            _core.check(append(*args), c)
        assert c.n == 1                      # nothing was recorded
    with pytest.raises(ValueError, match="rank"):
        _core.check(lib.ad_array_append_strided(c, 0, pout, -1, shape, 0, shape), c)
    # the edges themselves are fine, and an empty output reaches nothing
    _core.check(append(0, 11, (2, 2, 3), (-6, -3, -1)), c)
    np.testing.assert_array_equal(out[:12], np.arange(11.0, -1.0, -1.0))
    _core.check(append(0, 10 ** 9, (0, 4), (10 ** 9, -10 ** 9)), c)
    _core.check(append(0, 5, (1, 1), (10 ** 9, -10 ** 9)), c)   # size-1 dims
    assert out[0] == 5.0
    assert c.n == 4


def test_strided_gathers_survive_compaction():
    x0 = rng.normal(size=(4, 6))
    with ad.Tape() as t:
        x = ad.Array(x0)
        for _ in range(5):
            (x.T[::2] * 3.0).sum()          # dropped by the compaction
        y = x[1:, ::-2].T
        z = x[::-1][:, 1:4][None]
        t.compact()
        assert len(t) < 20
        (np.sum(y * y) + np.sum(np.sin(z))).backward()
    want = np.zeros_like(x0)
    want[1:, ::-2] += 2.0 * x0[1:, ::-2]
    want[::-1][:, 1:4] += np.cos(x0[::-1][:, 1:4])
    np.testing.assert_allclose(x.grad, want, rtol=1e-14)
    np.testing.assert_array_equal(y.data, x0[1:, ::-2].T)
