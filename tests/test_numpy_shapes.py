"""NumPy's shape, stacking, splitting and indexing functions on Arrays
(pyautodiff/numpy_shapes.py): values against NumPy's, gradients against
central differences and HIPS autograd, Hessians against autograd's (or
central differences of the gradient), third order through a nested hvp
against central differences of the hvp."""
import numpy as np
import pytest

import pyautodiff as ad
import pyautodiff.autograd.numpy as adnp
from helpers import numeric_grad

ag = pytest.importorskip("autograd")
agnp = pytest.importorskip("autograd.numpy")

R = np.random.default_rng(0)
A23 = R.normal(size=(2, 3))
A34 = R.normal(size=(3, 4))
A234 = R.normal(size=(2, 3, 4))
V4 = R.normal(size=4)
MASK = np.array([[True, False, True], [False, False, True]])

# name -> (f(numpy namespace, x), input, HIPS autograd differentiates it)
CASES = {
    "ravel": (lambda n, x: n.ravel(x), A23, True),
    "reshape": (lambda n, x: n.reshape(x, (3, 2)), A23, True),
    "reshape_F": (lambda n, x: n.reshape(x, (3, 2), order="F"), A23, True),
    "squeeze": (lambda n, x: n.squeeze(n.reshape(x, (1, 2, 1, 3)), axis=2), A23, True),
    "expand_dims": (lambda n, x: n.expand_dims(x, -1), A23, True),
    "swapaxes": (lambda n, x: n.swapaxes(x, 0, 2), A234, True),
    "moveaxis": (lambda n, x: n.moveaxis(x, 0, -1), A234, True),
    "moveaxis_seq": (lambda n, x: n.moveaxis(x, [0, 1], [2, 0]), A234, True),
    "rollaxis": (lambda n, x: n.rollaxis(x, 2, 1), A234, True),
    "transpose": (lambda n, x: n.transpose(x, (1, 2, 0)), A234, True),
    "broadcast_to": (lambda n, x: n.broadcast_to(x, (3, 2, 3)), A23, False),
    "atleast_1d": (lambda n, x: n.atleast_1d(x[0, 0]), A23, True),
    "atleast_2d": (lambda n, x: n.atleast_2d(x[0]), A23, True),
    "atleast_3d": (lambda n, x: n.atleast_3d(x), A23, True),
    "atleast_3d_1d": (lambda n, x: n.atleast_3d(x[1]), A23, True),
    "repeat": (lambda n, x: n.repeat(x, 2, axis=1), A23, True),
    "repeat_list": (lambda n, x: n.repeat(x, [1, 3], axis=0), A23, False),
    "tile": (lambda n, x: n.tile(x, (2, 1, 2)), A23, True),
    "roll": (lambda n, x: n.roll(x, 2), A23, True),
    "roll_axes": (lambda n, x: n.roll(x, (1, -1), axis=(0, 2)), A234, False),
    "flip": (lambda n, x: n.flip(x, axis=1), A234, False),
    "flip_all": (lambda n, x: n.flip(x), A234, False),
    "fliplr": (lambda n, x: n.fliplr(x), A23, True),
    "flipud": (lambda n, x: n.flipud(x), A23, True),
    "rot90": (lambda n, x: n.rot90(x), A23, True),
    "rot90_k": (lambda n, x: n.rot90(x, 3, axes=(2, 1)), A234, False),
    "diag_vector": (lambda n, x: n.diag(x, 1), V4, True),
    "diag_matrix": (lambda n, x: n.diag(x, -1), A34, False),
    "diagonal": (lambda n, x: n.diagonal(x, 1), A34, False),
    "diagonal_axes": (lambda n, x: n.diagonal(x, -1, 2, 0), A234, False),
    "diagflat": (lambda n, x: n.diagflat(x, -1), A23, False),
    "trace": (lambda n, x: n.trace(x, 1), A34, True),
    "trace_axes": (lambda n, x: n.trace(x, 0, 1, 2), A234, False),
    "tril": (lambda n, x: n.tril(x, -1), A34, True),
    "triu": (lambda n, x: n.triu(x, 1), A234, True),
    "pad": (lambda n, x: n.pad(x, ((1, 0), (2, 1))), A23, False),
    "pad_fill": (lambda n, x: n.pad(x, 1, constant_values=(2.5, -1.0)), A23, False),
    "pad_edge": (lambda n, x: n.pad(x, ((1, 2), (0, 3)), mode="edge"), A23, False),
    "pad_reflect": (lambda n, x: n.pad(x, 2, mode="reflect"), A23, False),
    "pad_symmetric": (lambda n, x: n.pad(x, (1, 3), mode="symmetric"), A23, False),
    "pad_wrap": (lambda n, x: n.pad(x, 2, mode="wrap"), A23, False),
    "concatenate": (lambda n, x: n.concatenate([x, 2 * x[:1]], axis=0), A23, True),
    "concatenate_none": (lambda n, x: n.concatenate([x, x[0]], axis=None), A23, False),
    "stack": (lambda n, x: n.stack([x, -x], axis=1), A23, True),
    "vstack": (lambda n, x: n.vstack([x, x[0], np.ones(3)]), A23, True),
    "hstack": (lambda n, x: n.hstack([x, x[:, :1]]), A23, True),
    "hstack_1d": (lambda n, x: n.hstack([x[0], x[1], 3.0 * x[0, 0]]), A23, True),
    "dstack": (lambda n, x: n.dstack([x, x[::-1]]), A23, False),
    "column_stack": (lambda n, x: n.column_stack([x[0], x.T]), A23.T, True),
    "append": (lambda n, x: n.append(x, x[1:], axis=0), A23, True),
    "append_flat": (lambda n, x: n.append(x, np.ones(2)), A23, True),
    "insert": (lambda n, x: n.insert(x, [1, 1, 3], 2 * x[0, :1], axis=1), A23, False),
    "insert_flat": (lambda n, x: n.insert(x, 2, [7.0, 8.0]), A23, False),
    "delete": (lambda n, x: n.delete(x, [0, 2], axis=1), A23, False),
    "resize": (lambda n, x: n.resize(x, (4, 4)), A23, False),
    "block": (lambda n, x: n.block([[x, x[:, :1]], [np.ones((1, 3)), x[:1, :1]]]), A23, False),
    "permute_dims": (lambda n, x: n.permute_dims(x, (2, 0, 1)), A234, False),
    "matrix_transpose": (lambda n, x: n.matrix_transpose(x), A234, False),
    "unstack": (lambda n, x: n.unstack(x, axis=1), A234, False),
    "split": (lambda n, x: n.split(x, 2, axis=2), A234, True),
    "split_at": (lambda n, x: n.split(x, [1, 3], axis=1), A234, False),
    "array_split": (lambda n, x: n.array_split(x, 3, axis=2), A234, False),
    "hsplit": (lambda n, x: n.hsplit(x, [1]), A234, False),
    "vsplit": (lambda n, x: n.vsplit(x, 2), A234, True),
    "dsplit": (lambda n, x: n.dsplit(x, [1, 2]), A234, False),
    "take": (lambda n, x: n.take(x, [[0, 5], [5, 2]]), A23, False),
    "take_axis": (lambda n, x: n.take(x, [2, 0, 2], axis=1), A23, False),
    "take_wrap": (lambda n, x: n.take(x, [-4, 7], axis=1, mode="wrap"), A23, False),
    "take_along_axis": (lambda n, x: n.take_along_axis(x, np.array([[2, 0, 2], [1, 1, 0]]), 1),
                        A23, False),
    "select": (lambda n, x: n.select([MASK, ~MASK & (A23 > 0)], [x, 2 * x], -0.5), A23, True),
    "choose": (lambda n, x: n.choose([[0, 1, 2], [2, 1, 0]], [x, -x, x[0]]), A23, False),
    "choose_clip": (lambda n, x: n.choose([3, -1, 1], [x[0], x[1]], mode="clip"), A23, False),
}


def _pieces(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _weights(case):
    f, x, _ = CASES[case]
    return [np.linspace(-1.0, 2.0, np.size(p)).reshape(np.shape(p)) for p in _pieces(f(np, x))]


def _objective(case, n):
    """A nonlinear scalar of f(x): its second and third derivatives run
    through the layout's nested rules."""
    f, _, _ = CASES[case]
    weights = _weights(case)

    def objective(x):
        return sum(n.sum(n.sin(p) * w) for p, w in zip(_pieces(f(n, x)), weights))
    return objective


@pytest.mark.parametrize("case", CASES)
def test_values(case):
    f, x, _ = CASES[case]
    expected = _pieces(f(np, x))
    got = _pieces(f(np, ad.Array(x)))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert isinstance(g, ad.Array)
        assert g.shape == np.shape(e)
        np.testing.assert_array_equal(g.data, e)


@pytest.mark.parametrize("case", CASES)
def test_gradient(case):
    _, x, by_autograd = CASES[case]
    g = ad.grad(_objective(case, np))(x)
    np.testing.assert_allclose(g, numeric_grad(_objective(case, np), [x], 0),
                               rtol=1e-6, atol=1e-8)
    if by_autograd:
        np.testing.assert_allclose(g, ag.grad(_objective(case, agnp))(x),
                                   rtol=1e-12, atol=1e-13)


def _gradient_differences(grad, x, h=1e-6):
    """The Hessian by central differences of the gradient, one input
    element at a time: H[..., i] = (grad(x + h e_i) - grad(x - h e_i)) / 2h."""
    columns = []
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        columns.append((grad(x + step) - grad(x - step)) / (2 * h))
    return np.moveaxis(np.stack(columns, axis=-1).reshape(x.shape * 2),
                       list(range(x.ndim)), list(range(x.ndim, 2 * x.ndim)))


@pytest.mark.parametrize("case", CASES)
def test_hessian(case):
    _, x, by_autograd = CASES[case]
    h = ad.hessian(_objective(case, np))(x)
    if by_autograd:
        expected = ag.hessian(_objective(case, agnp))(x)
    else:
        expected = _gradient_differences(ad.grad(_objective(case, np)), x)
    np.testing.assert_allclose(h, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", ["flip", "pad_fill", "vstack", "split_at", "take",
                                  "choose", "select", "diag_vector", "tril", "roll_axes"])
def test_third_order(case):
    _, x, _ = CASES[case]
    objective = _objective(case, np)
    v = np.cos(np.arange(x.size)).reshape(x.shape)

    def curvature(y):
        return np.sum(ad.hvp(objective)(y, v) * v)
    g = ad.grad(curvature)(x)
    np.testing.assert_allclose(g, numeric_grad(lambda y: float(curvature(y)), [x], 0),
                               rtol=1e-5, atol=1e-7)


def test_values_and_scalars():
    """Traced floats where NumPy takes scalars."""
    def f(t):
        a, b = t[0] * 1.0, t[1] * 1.0          # traced scalars
        return np.sum(np.sin(np.atleast_1d(a)) + np.hstack([a, b, 2.0]) ** 2
                      + np.append(b, [a, a]) + np.repeat(a, 3) + np.tile(b, 3))
    t = np.array([0.3, -0.7])
    np.testing.assert_allclose(ad.grad(f)(t), numeric_grad(f, [t], 0), rtol=1e-6)


def test_several_atleast():
    x = ad.Array(A23)
    out = np.atleast_2d(x[0], x, 3.0)
    assert type(out) is type(np.atleast_2d(np.zeros(3), np.zeros(1)))
    assert [np.shape(o) for o in out] == [(1, 3), (2, 3), (1, 1)]
    assert isinstance(out[0], ad.Array) and isinstance(out[2], np.ndarray)


def test_methods():
    x = ad.Array(A34)
    np.testing.assert_array_equal(x.diagonal(1).data, A34.diagonal(1))
    np.testing.assert_array_equal(x.trace(-1).data, A34.trace(-1))
    np.testing.assert_array_equal(x.take([3, 0], axis=1).data, A34.take([3, 0], axis=1))


def test_tril_keeps_infinities_out():
    """The zeros that tril makes are zeros, not 0 * inf: no NaN, no gradient."""
    x = np.array([[1.0, np.inf], [2.0, 3.0]])
    out = np.tril(ad.Array(x))
    np.testing.assert_array_equal(out.data, np.tril(x))
    g = ad.grad(lambda y: np.sum(np.tril(y) * 2.0))(x)
    np.testing.assert_array_equal(g, [[2.0, 0.0], [2.0, 2.0]])


def test_full_zeros_ones_like():
    x = ad.Array(A23)
    for fn, args in ((np.zeros_like, ()), (np.ones_like, ()), (np.full_like, (4.5,))):
        out = fn(x, *args)
        assert type(out) is np.ndarray
        np.testing.assert_array_equal(out, fn(A23, *args))

    def f(t):                           # a traced fill is broadcast, traced
        return np.sum(np.full_like(t, t[0] * 1.0, shape=(2, 3)) * A23) + \
            np.sum(np.full_like(t, 2.0))
    t = np.array([0.5])
    np.testing.assert_allclose(ad.grad(f)(t), [A23.sum()])
    # NumPy's own full_like of an ndarray copies the fill into it
    with pytest.raises(TypeError, match="numpy.copyto"):
        np.full_like(A23, ad.Value(1.0))


def test_r_and_c():
    def f(t):
        row = adnp.r_[t, -1.0, t[::-1], 0:2]
        cols = adnp.c_[t, 2 * t]
        return np.sum(np.sin(row) * np.arange(7.0)) + np.sum(cols ** 2 * [[1.0, 3.0]])
    t = np.array([0.4, -1.1])
    np.testing.assert_array_equal(adnp.r_[ad.Array(t), -1.0, 0:2].data, np.r_[t, -1.0, 0:2])
    np.testing.assert_array_equal(adnp.r_["0,2", ad.Array(t), [1.0, 2.0]].data,
                                  np.r_["0,2", t, [1.0, 2.0]])
    np.testing.assert_allclose(ad.grad(f)(t), numeric_grad(f, [t], 0), rtol=1e-6)
    assert adnp.r_[1, 2:4].tolist() == [1, 2, 3]        # NumPy's, untraced
    with pytest.raises(NotImplementedError, match="matrix mode"):
        adnp.r_["r", ad.Array(t), ad.Array(t)]


def test_numpy_array_of_values():
    """np.array of traced scalars is an object array of them, which
    computes elementwise and keeps the derivative; ad.autograd.numpy.array
    makes one Array of them."""
    def f(t):
        return np.sum(np.array([t[0] * t[1], np.sin(t[0])]) * [1.0, 2.0])

    def g(t):
        return np.sum(adnp.array([[t[0], 1.0], [t[1], t[0]]]) ** 2)
    t = np.array([0.3, 2.0])
    np.testing.assert_allclose(ad.grad(f)(t), [2.0 + 2 * np.cos(0.3), 0.3])
    np.testing.assert_allclose(ad.grad(g)(t), [4 * 0.3, 4.0])
    assert isinstance(adnp.array([ad.Value(1.0), ad.Value(2.0)]), ad.Array)


def test_plain_ndarrays_are_numpys():
    """Called on ndarrays, NumPy's functions are NumPy's own."""
    out = np.pad(A23, 1, mode="reflect")
    assert type(out) is np.ndarray
    assert np.split(A23, 3, axis=1)[0].base is not None         # NumPy's views


@pytest.mark.parametrize("call, error, match", [
    (lambda x: np.pad(x, 1, mode="mean"), NotImplementedError, "numpy.pad"),
    (lambda x: np.pad(x, 1, mode="reflect", reflect_type="odd"), NotImplementedError,
     "reflect_type"),
    (lambda x: np.pad(x, 1, constant_values=x[0, 0]), TypeError, "numpy.pad"),
    (lambda x: np.take(x, [0], out=np.empty(1)), TypeError, "numpy.take"),
    (lambda x: np.trace(x, dtype=int), TypeError, "numpy.trace"),
    (lambda x: np.concatenate([x, x], dtype=np.int64), TypeError, "numpy.concatenate"),
    (lambda x: np.select([x], [x]), TypeError, "numpy.select"),
    (lambda x: np.choose([0, 5, 1], [x[0], x[1]]), ValueError, "invalid entry"),
])
def test_unsupported(call, error, match):
    with pytest.raises(error, match=match):
        call(ad.Array(A23))


def test_record_replays_a_layout():
    """Inside ad.record the layouts are tape entries: a replay at new
    inputs recomputes them."""
    f = ad.record(lambda x: np.sum(np.vstack([np.flip(x), np.tril(x)]) ** 2), A23)
    y = A23 + 1.0
    np.testing.assert_allclose(f(y), np.sum(np.vstack([np.flip(y), np.tril(y)]) ** 2))


def test_index_arrays_and_float_dtypes():
    x = ad.Array(A23)
    i = ad.Array(np.array([2.0, 0.0]))          # an Array of indices
    np.testing.assert_array_equal(np.take(x, i, axis=1).data, np.take(A23, [2, 0], axis=1))
    np.testing.assert_array_equal(np.concatenate([x, x], dtype=np.float32).data,
                                  np.concatenate([A23, A23]))
    np.testing.assert_array_equal(np.trace(x, dtype=float).data, np.trace(A23))

    def f(t):               # np.array of traced Arrays inside a derivative
        return np.sum(np.array([t, 2 * t]) ** 2)
    t = np.array([1.0, -2.0])
    np.testing.assert_allclose(ad.grad(f)(t), 10 * t)


# -- linspace of traced ends, and autograd's make_diagonal -------------------

@pytest.mark.parametrize("num", [0, 1, 2, 5])
@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("ends", [(1.2, 3.4), (1.2, -3.4), (1.2, 1.2),
                                  ([0.0, 1.0], [2.0, 5.0]), (0.5, [[1.0, 2.0], [3.0, 4.0]])])
def test_linspace_of_traced_ends(num, endpoint, ends):
    a, b = (np.array(e, dtype=float) for e in ends)
    for axis in range(-np.ndim(a + b) - 1, np.ndim(a + b) + 1):
        got = np.linspace(ad.Array(a), ad.Array(b), num, endpoint=endpoint, axis=axis)
        want = np.linspace(a, b, num, endpoint=endpoint, axis=axis)
        assert np.array_equal(got._d, want)          # NumPy's arithmetic, bit for bit

    def f(x, y):
        return np.sum(np.linspace(x, y, num, endpoint=endpoint) ** 2)

    for k in (0, 1):
        got = ad.grad(f, k)(a, b)
        np.testing.assert_allclose(got, numeric_grad(f, [a, b], k), rtol=1e-6, atol=1e-8)
        # autograd's linspace takes no endpoint=, and does not sum a
        # broadcast end's gradient back to its shape
        if endpoint and np.shape(a) == np.shape(b):
            want = ag.grad(lambda x, y: agnp.sum(agnp.linspace(x, y, num) ** 2), k)(a, b)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # second order: exactly 2 * (d sample / d end)^2 summed
    if num and np.ndim(a + b) == 0:
        div = num - 1 if endpoint else num
        t = np.arange(num) / div if div else np.zeros(num)
        if endpoint and num > 1:
            t[-1] = 1.0
        assert ad.hessian(lambda y: f(a, y))(b) == pytest.approx(2 * np.sum(t ** 2))


def test_linspace_retstep_and_errors():
    y, step = np.linspace(ad.Value(0.0), 2.0, 5, retstep=True)
    assert step.data == 0.5 and np.array_equal(y._d, np.linspace(0.0, 2.0, 5))
    assert ad.grad(lambda s: np.linspace(s, 2.0, 5, retstep=True)[1])(0.0) == -0.25
    with pytest.raises(TypeError, match="numpy.linspace"):
        np.linspace(ad.Value(0.0), 1.0, 3, dtype=int)
    with pytest.raises(ValueError, match="non-negative"):
        np.linspace(ad.Value(0.0), 1.0, -1)


@pytest.mark.parametrize("axes", [(-1, -2), (0, 1), (0, 2), (2, 0), (1, 2)])
def test_make_diagonal(axes):
    d = np.arange(1.0, 13.0).reshape(3, 4)
    a = adnp.make_diagonal(d, axis1=axes[0], axis2=axes[1])
    assert np.array_equal(np.diagonal(a, 0, *axes), d) and np.count_nonzero(a) == 12
    if axes == (-1, -2):                             # autograd's one case
        assert np.array_equal(a, agnp.make_diagonal(d, axis1=-1, axis2=-2))
    w = np.random.default_rng(0).normal(size=a.shape)
    g = ad.grad(lambda x: np.sum(adnp.make_diagonal(x, axis1=axes[0], axis2=axes[1]) * w))(d)
    assert np.array_equal(g, np.diagonal(w, 0, *axes))
    with pytest.raises(NotImplementedError, match="offset"):
        adnp.make_diagonal(d, offset=1)
    with pytest.raises(ValueError, match="same"):
        adnp.make_diagonal(d, axis1=1, axis2=-2)
