"""pyautodiff.autograd against HIPS autograd: each program is written once
as a function of a numpy-like module and of the differential operators,
then run under ``autograd`` / ``autograd.numpy`` and under
``pyautodiff.autograd`` / ``pyautodiff.autograd.numpy``; values, gradients
and return orders must agree."""
import types
import warnings

import numpy as onp
import pytest
from hypothesis import assume, given, settings, strategies as st

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")

import pyautodiff as ad                           # noqa: E402
import pyautodiff.autograd as pag                 # noqa: E402
import pyautodiff.autograd.numpy as pnp           # noqa: E402
from helpers import fuzz_size                     # noqa: E402

AUTOGRAD = (autograd, anp)
PYAUTODIFF = (pag, pnp)


def assert_same(ours, theirs, rtol=1e-12, atol=1e-13, where="result"):
    """Same containers (list vs tuple vs dict), same numbers."""
    if isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs), f"{where}: {type(ours)} vs {type(theirs)}"
        assert len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, rtol, atol, f"{where}[{k}]")
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and set(ours) == set(theirs), where
        for k in theirs:
            assert_same(ours[k], theirs[k], rtol, atol, f"{where}[{k!r}]")
    else:
        assert onp.shape(ours) == onp.shape(theirs), f"{where}: shapes differ"
        onp.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=where)


def under_both(program, *args, **kwargs):
    """program(lib, np, *args) under pyautodiff and under autograd."""
    return (program(*PYAUTODIFF, *args, **kwargs), program(*AUTOGRAD, *args, **kwargs))


# -- autograd's README examples, in our own words ------------------------------

def make_tanh(np):
    def tanh(x):
        e = np.exp(-2.0 * x)
        return (1.0 - e) / (1.0 + e)
    return tanh


def test_tanh_and_its_elementwise_derivatives():
    xs = onp.linspace(-6.0, 6.0, 41)

    def program(lib, np):
        tanh = make_tanh(np)
        d1 = lib.elementwise_grad(tanh)
        d2 = lib.elementwise_grad(d1)
        return lib.grad(tanh)(0.7), lib.deriv(tanh)(-0.3), d1(xs), d2(xs)
    ours, theirs = under_both(program)
    assert_same(ours, theirs)
    # and against the closed forms, independently of both packages
    t = onp.tanh(xs)
    onp.testing.assert_allclose(ours[2], 1 - t ** 2, rtol=1e-10, atol=1e-14)
    onp.testing.assert_allclose(ours[3], -2 * t * (1 - t ** 2), rtol=1e-9, atol=1e-14)


def test_third_elementwise_derivative_is_autograds():
    d3 = pag.elementwise_grad(pag.elementwise_grad(pag.elementwise_grad(
        make_tanh(pnp))))
    theirs = autograd.elementwise_grad(autograd.elementwise_grad(
        autograd.elementwise_grad(make_tanh(anp))))
    x = onp.linspace(-1.0, 1.0, 5)
    onp.testing.assert_allclose(d3(x), theirs(x), rtol=1e-12)
    t = onp.tanh(x)          # by hand: the third derivative of tanh
    onp.testing.assert_allclose(d3(x), -2 * (1 - t ** 2) * (1 - 3 * t ** 2),
                                rtol=1e-12)


def logistic_program(lib, np, steps=60):
    inputs = onp.array([[0.52, 1.12, 0.77],
                        [0.88, -1.08, 0.15],
                        [0.52, 0.06, -1.30],
                        [0.74, -2.49, 1.39]])
    targets = onp.array([True, True, False, True])

    def sigmoid(x):
        return 0.5 * (np.tanh(x / 2.0) + 1.0)

    def predictions(weights, inputs):
        return sigmoid(np.dot(inputs, weights))

    def loss(weights):
        p = predictions(weights, inputs)
        label_probabilities = p * targets + (1 - p) * (1 - targets)
        return -np.sum(np.log(label_probabilities))

    weights = onp.array([0.0, 0.0, 0.0])
    losses = []
    step = lib.grad(loss)
    for _ in range(steps):
        weights = weights - 0.01 * step(weights)
        losses.append(loss(weights))
    value, g = lib.value_and_grad(loss)(weights)
    return weights, onp.array(losses, dtype=float), value, g


def test_logistic_regression_training_loop():
    ours, theirs = under_both(logistic_program)
    assert_same(ours, theirs, rtol=1e-11)
    losses = ours[1]
    assert losses[-1] < losses[0]          # it trains


# -- a small neural net --------------------------------------------------------

def init_params(sizes, seed=0):
    rs = onp.random.RandomState(seed)
    return [(0.5 * rs.randn(m, n), 0.1 * rs.randn(n)) for m, n in zip(sizes[:-1], sizes[1:])]


def net_loss(np, params, X, Y):
    h = X
    for W, b in params[:-1]:
        h = np.tanh(np.dot(h, W) + b)
    W, b = params[-1]
    logits = np.dot(h, W) + b
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    nll = -np.mean(np.sum(log_probs * Y, axis=1))
    # an array built from traced scalars
    norms = np.array([np.sum(W ** 2) for W, _ in params])
    hinge = np.mean(np.maximum(0.0, 1.0 - 2.0 * logits[:, 0]))
    picked = np.concatenate([logits[:2, 0], logits[-2:, 1], h[1, ::2]])
    return nll + 0.01 * np.sum(norms) + 0.1 * hinge + 0.05 * np.sum(picked ** 2)


def net_program(lib, np, steps=5):
    rs = onp.random.RandomState(1)
    X = rs.randn(6, 3)
    Y = onp.eye(3)[rs.randint(0, 3, size=6)]
    params = init_params([3, 4, 3])
    loss = lambda p: net_loss(np, p, X, Y)          # noqa: E731
    value, g = lib.value_and_grad(loss)(params)
    trained = params
    for _ in range(steps):
        step = lib.grad(loss)(trained)
        trained = [(W - 0.1 * dW, b - 0.1 * db) for (W, b), (dW, db) in zip(trained, step)]
    return value, g, trained, loss(trained)


def test_neural_net_gradients_and_training():
    ours, theirs = under_both(net_program)
    # the gradient has the parameters' structure: a list of (W, b) tuples
    assert isinstance(ours[1], list) and all(isinstance(p, tuple) for p in ours[1])
    assert_same(ours, theirs, rtol=1e-11)
    assert ours[3] < ours[0]


def test_neural_net_gradient_against_central_differences():
    rs = onp.random.RandomState(1)
    X, Y = rs.randn(6, 3), onp.eye(3)[rs.randint(0, 3, size=6)]
    params = init_params([3, 4, 3])
    g = pag.grad(lambda p: net_loss(pnp, p, X, Y))(params)
    W = params[0][0]
    for pos in [(0, 0), (1, 2), (2, 3)]:
        up = [(Wk.copy(), bk) for Wk, bk in params]
        down = [(Wk.copy(), bk) for Wk, bk in params]
        up[0][0][pos] += 1e-6
        down[0][0][pos] -= 1e-6
        numeric = (net_loss(onp, up, X, Y) - net_loss(onp, down, X, Y)) / 2e-6
        assert g[0][0][pos] == pytest.approx(numeric, rel=1e-6, abs=1e-9)
    assert g[0][0].shape == W.shape and g[1][1].shape == (3,)


# -- call conventions and return orders -----------------------------------------

def f3(np):
    def f(a, b, c):
        return np.sum(np.sin(a) * b ** 2) + np.tanh(c) * np.sum(a)
    return f


ARGS = (onp.array([0.3, -1.2, 0.8]), onp.array([1.5, 0.5, -0.7]), 0.4)


def test_value_and_grad_returns_value_then_gradient():
    def program(lib, np):
        value, g = lib.value_and_grad(f3(np))(*ARGS)
        return value, g
    ours, theirs = under_both(program)
    assert_same(ours, theirs)
    assert float(ours[0]) == pytest.approx(f3(onp)(*ARGS), rel=1e-14)


def test_make_vjp_returns_vjp_then_value():
    def program(lib, np):
        fn = lambda x: np.sin(x) * x[0]             # noqa: E731
        vjp, value = lib.make_vjp(fn)(ARGS[0])
        assert callable(vjp)
        return value, vjp(onp.array([1.0, -2.0, 0.5])), vjp(onp.ones(3))
    ours, theirs = under_both(program)
    assert_same(ours, theirs)


def test_make_jvp_returns_value_then_jvp():
    def program(lib, np):
        fn = lambda x: np.sin(x) * x[0]             # noqa: E731
        value, tangent = lib.make_jvp(fn)(ARGS[0])(onp.array([1.0, -2.0, 0.5]))
        return value, tangent
    ours, theirs = under_both(program)
    assert_same(ours, theirs)
    assert_same(ours[0], onp.sin(ARGS[0]) * ARGS[0][0])


@pytest.mark.parametrize("argnum", [0, 1, 2, -1, (0, 2), (2, 1), (1,)])
def test_grad_argnum_int_and_tuple(argnum):
    def program(lib, np):
        return lib.grad(f3(np), argnum)(*ARGS)
    ours, theirs = under_both(program)
    if isinstance(argnum, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(argnum)
    assert_same(ours, theirs)


@pytest.mark.parametrize("argnum", [0, 1])
def test_other_operators_with_argnum(argnum):
    def program(lib, np):
        f = f3(np)
        x = ARGS[argnum]
        v = onp.array([0.2, -1.0, 0.6])
        return (lib.hessian(f, argnum)(*ARGS),
                lib.hessian_vector_product(f, argnum)(*ARGS, v),
                lib.jacobian(lambda a, b: np.tanh(a * b), argnum)(*ARGS[:2]),
                lib.elementwise_grad(lambda a, b: np.exp(a) * b, argnum)(*ARGS[:2]),
                lib.make_vjp(lambda a, b: a * b ** 2, argnum)(*ARGS[:2])[0](v),
                lib.make_jvp(lambda a, b: a * b ** 2, argnum)(*ARGS[:2])(x))
    ours, theirs = under_both(program)
    assert_same(ours, theirs)


def test_jacobian_of_tall_and_wide_functions():
    def program(lib, np):
        tall = lambda x: np.concatenate([np.sin(x), x ** 2, np.exp(x)])    # noqa: E731
        wide = lambda x: np.dot(np.array([[1.0, 2.0, 0.0, -1.0],          # noqa: E731
                                          [0.5, 0.0, 3.0, 1.0]]), np.tanh(x))
        matrix = lambda X: np.dot(X, X.T)                                  # noqa: E731
        return (lib.jacobian(tall)(onp.array([0.1, -0.4])),
                lib.jacobian(wide)(onp.array([0.1, -0.4, 0.9, 1.3])),
                lib.jacobian(matrix)(onp.arange(6.0).reshape(2, 3) / 5))
    ours, theirs = under_both(program)
    assert ours[0].shape == (6, 2) and ours[1].shape == (2, 4) and ours[2].shape == (2, 2, 2, 3)
    assert_same(ours, theirs)


def test_hessian_of_rosenbrock():
    def program(lib, np):
        def rosen(x):
            return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
        x = onp.linspace(-1.2, 1.3, 8)
        return lib.hessian(rosen)(x), lib.hessian_vector_product(rosen)(x, onp.ones(8))
    ours, theirs = under_both(program)
    assert_same(ours, theirs)


def test_grad_and_aux():
    def program(lib, np):
        def loss_and_predictions(w, x):
            pred = np.tanh(np.dot(x, w))
            return np.sum(pred ** 2), pred
        x = onp.arange(6.0).reshape(2, 3) / 4
        return lib.grad_and_aux(loss_and_predictions)(onp.array([0.1, -0.2, 0.3]), x)
    ours, theirs = under_both(program)
    assert_same(ours, theirs)


def test_array_of_traced_scalars():
    def program(lib, np):
        def f(a, b):
            v = np.array([a * b, a + b, np.sin(a), b ** 2])
            return np.sum(v ** 2) + np.dot(v, onp.array([1.0, -1.0, 2.0, 0.5]))
        def g(x):
            m = np.array([[x[0], x[1]], [x[2] * x[0], 1.0]])
            return np.sum(np.dot(m, m))
        return lib.grad(f, (0, 1))(0.7, -1.3), lib.grad(g)(onp.array([0.5, 1.5, -2.0]))
    ours, theirs = under_both(program)
    assert_same(ours, theirs)


def test_gradients_of_list_and_dict_arguments():
    def program(lib, np):
        def f(p):
            return np.sum(p["w"] ** 2) * p["s"] + np.sum(np.tanh(p["layers"][1]))
        p = {"w": onp.array([1.0, 2.0]), "s": 0.5,
             "layers": [onp.ones(2), onp.array([0.3, -0.3])]}
        return lib.grad(f)(p)
    ours, theirs = under_both(program)
    assert_same(ours, theirs)


# -- random programs ------------------------------------------------------------

# step -> a function of (np, a, b) on safe domains
STEPS = {
    "add": lambda np, a, b: a + b,
    "sub": lambda np, a, b: a - 0.5 * b,
    "mul": lambda np, a, b: a * b,
    "div": lambda np, a, b: a / (1.0 + b ** 2),
    "tanh": lambda np, a, b: np.tanh(a),
    "exp": lambda np, a, b: np.exp(np.tanh(a)),
    "log": lambda np, a, b: np.log(1.0 + a ** 2),
    "sin": lambda np, a, b: np.sin(a),
    "cos": lambda np, a, b: np.cos(b),
    "sqrt": lambda np, a, b: np.sqrt(1.0 + b ** 2),
    "pow": lambda np, a, b: (1.0 + a ** 2) ** np.tanh(b),
    "max": lambda np, a, b: np.maximum(a, 0.25 * b),
    "neg": lambda np, a, b: -a,
    "rev": lambda np, a, b: a[::-1],
    "mean": lambda np, a, b: a - np.mean(a),
    "dot": lambda np, a, b: np.dot(a, b) * a,
}

programs = st.lists(st.tuples(st.sampled_from(sorted(STEPS)), st.integers(0, 50),
                              st.integers(0, 50)), min_size=1, max_size=7)


def run_program(np, prog, x, gaps=None):
    """The program's scalar output; gaps, if given, collects how far each
    maximum is from a tie (where the two packages may split differently),
    and each power's exponent from 0 (where autograd's second derivative
    of a ** b is off: central differences side with pyautodiff's)."""
    nodes = [x, np.sin(x)]
    for name, i, j in prog:
        a, b = nodes[i % len(nodes)], nodes[j % len(nodes)]
        if gaps is not None and name == "max":
            gaps.append(onp.min(onp.abs(a - 0.25 * b)))
        if gaps is not None and name == "pow":
            gaps.append(onp.min(onp.abs(onp.tanh(b))))
        nodes.append(STEPS[name](np, a, b))
    return np.sum(nodes[-1] * onp.array([1.0, -0.5, 0.25])) + 0.1 * np.sum(nodes[-1] ** 2)


@settings(max_examples=fuzz_size(60), deadline=None)
@given(programs, st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3))
def test_random_programs_agree_with_autograd(prog, x):
    x = onp.array(x)
    gaps = []
    run_program(onp, prog, x, gaps)
    assume(min(gaps, default=1.0) > 1e-6)
    v = onp.array([0.3, -1.0, 0.5])

    def program(lib, np):
        f = lambda x: run_program(np, prog, x)          # noqa: E731
        value, g = lib.value_and_grad(f)(x)
        return value, g, lib.hessian_vector_product(f)(x, v)
    ours, theirs = under_both(program)
    if not onp.all(onp.isfinite(theirs[2])):
        # autograd's hvp overflows or divides 0 by 0 on some of these (an
        # exp of a large dot): central differences of our gradient referee
        def g(y):
            return ad.grad(lambda z: run_program(onp, prog, z))(y)
        h = 1e-6 * max(1.0, float(onp.max(onp.abs(x))))
        central = (g(x + h * v) - g(x - h * v)) / (2 * h)
        assert_same(ours[:2], theirs[:2], rtol=1e-10, atol=1e-11)
        onp.testing.assert_allclose(ours[2], central, rtol=1e-5,
                                    atol=1e-5 * max(1.0, float(onp.max(onp.abs(central)))))
        return
    assert_same(ours, theirs, rtol=1e-10, atol=1e-11)



def test_np_sum_of_a_traced_float():
    def program(lib, np):
        return lib.grad(lambda a: np.sum(a ** 2) + np.mean(a))(1.5)
    assert_same(*under_both(program))


def test_np_where_on_a_traced_float():
    def program(lib, np):
        return lib.grad(lambda a: np.where(a > 0, a ** 2, -a))(1.5)
    assert_same(*under_both(program))


# -- plain calls are NumPy's calls ----------------------------------------------

V = onp.array([0.25, 1.5, 2.0])
M = onp.array([[2.0, 0.5, 0.1], [0.5, 3.0, 0.2], [0.1, 0.2, 1.5]])
I = onp.array([3, 1, 2])
# Sample calls, tried in this order; a function is called with the first
# that NumPy itself accepts.  Fresh copies for every call, as some
# functions write into their arguments.
SAMPLES = [(V,), (M,), (V, V), (M, M), (M, V), ([V, V],), ((V, V, V),),
           (I,), (I, I), (3,), (V, 1), (M, 1), (V, 0.5, 1.5), (I, 2),
           ((2, 3),), ((2, 3), 1.5), (0.5,), (2.0, 3.0), ([0.5, 1.5],),
           (M, (9,)), (M, 0, 1), ("ij->j", M), (V, V, V), (M, "float32"),
           (0.5, 1.0, 2.0), ()]
# names whose calls have effects (files, printing, global state, running
# tests) or that call back into Python
NOT_CALLED = {"set_bit_generator", "set_state", "seed", "save", "savez",
              "savez_compressed", "load", "loadtxt", "savetxt", "genfromtxt",
              "fromfile", "fromregex", "memmap", "info", "show_config",
              "show_runtime", "test", "printoptions", "set_printoptions",
              "seterr", "seterrcall", "setbufsize", "set_string_function",
              "errstate", "vectorize", "frompyfunc", "piecewise",
              "apply_along_axis", "apply_over_axes", "fromfunction", "nditer",
              "nested_iters"}
# submodules of NumPy the drop-in re-exports (their functions walked too)
SUBMODULES = ("linalg", "fft", "random")
# results that are not values to compare (uninitialized memory, state)
NO_VALUE = {"empty", "empty_like", "get_state", "default_rng", "RandomState",
            "Generator", "SeedSequence", "bit_generator"}


def _copied(args):
    return [a.copy() if isinstance(a, onp.ndarray) else
            type(a)(x.copy() if isinstance(x, onp.ndarray) else x for x in a)
            if isinstance(a, (list, tuple)) else a for a in args]


def _numpy_call(fun, name, module):
    """(args, NumPy's result) for the first sample NumPy accepts, or None."""
    for args in SAMPLES:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if module == "random":
                    onp.random.seed(0)
                return args, fun(*_copied(args))
        except Exception:
            continue
    return None


def assert_numpy_result(ours, theirs, where, values=True):
    assert type(ours) is type(theirs), f"{where}: {type(ours)} vs {type(theirs)}"
    if isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs)):
            assert_numpy_result(a, b, f"{where}[{k}]", values)
    elif isinstance(theirs, (onp.ndarray, onp.generic)):
        assert ours.dtype == theirs.dtype, f"{where}: {ours.dtype} vs {theirs.dtype}"
        assert onp.shape(ours) == onp.shape(theirs), where
        if values and theirs.dtype != object:
            onp.testing.assert_array_equal(ours, theirs, err_msg=where)
    elif values and isinstance(theirs, (bool, int, float, complex, str)):
        assert ours == theirs or (ours != ours and theirs != theirs), where


# autograd's names that NumPy has not: make_diagonal (tested apart) and
# msort, which NumPy 2 removed (tests/test_numpy_reductions.py)
NOT_NUMPYS = {"make_diagonal", "msort"}


def public_functions():
    """(where, ours, NumPy's, module) for every public callable of
    pyautodiff.autograd.numpy and of its NumPy submodules (but NOT_NUMPYS)."""
    spaces = [(pnp, onp, "numpy")] + [
        (getattr(pnp, m), getattr(onp, m), m) for m in SUBMODULES]
    for ours_mod, numpy_mod, label in spaces:
        for name in sorted(n for n in dir(ours_mod) if not n.startswith("_")
                           and n not in NOT_NUMPYS):
            ours = getattr(ours_mod, name)
            if isinstance(ours, types.ModuleType) or not callable(ours):
                continue
            yield f"{label}.{name}", ours, getattr(numpy_mod, name, None), label


def _numpys(ours, theirs):
    """ours is NumPy's function theirs, or theirs taking lists of traced
    numbers (a wrapper, or a ufunc's stand-in, of it)."""
    return ours is theirs or getattr(ours, "__wrapped__", None) is theirs or \
        getattr(ours, "_ufunc", None) is theirs


def test_dropin_numpy_names_are_numpys():
    """Every public name is NumPy's own or NumPy's taking lists of traced
    numbers (the walk below calls them), and nothing but NumPy's names is
    public, but autograd's own additions NOT_NUMPYS."""
    extra = [n for n in dir(pnp) if not n.startswith("_") and not hasattr(onp, n)]
    assert extra == sorted(NOT_NUMPYS)
    for m in SUBMODULES:       # packages of NumPy's own functions
        ours, theirs = getattr(pnp, m), getattr(onp, m)
        names = [n for n in dir(ours) if not n.startswith("_")]
        assert names and all(_numpys(getattr(ours, n), getattr(theirs, n))
                             for n in names), m
    assert isinstance(pnp.mean(onp.ones(2)), onp.float64) and pnp.sin.nout == 1


@pytest.mark.parametrize("where,ours,theirs,module",
                         list(public_functions()),
                         ids=[p[0] for p in public_functions()])
def test_dropin_numpy_function_on_plain_inputs(where, ours, theirs, module):
    assert theirs is not None, f"{where} is not a NumPy name"
    name = where.rsplit(".", 1)[1]
    if isinstance(ours, type) or name in NOT_CALLED:
        assert _numpys(ours, theirs), f"{where} is not NumPy's"
        return
    call = _numpy_call(theirs, name, module)
    if call is None:              # no simple call: it must be NumPy's own
        assert _numpys(ours, theirs), f"{where} is not NumPy's and has no sample call"
        return
    args, expected = call
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if module == "random":
            onp.random.seed(0)
        got = ours(*_copied(args))
    assert_numpy_result(got, expected, where, values=name not in NO_VALUE)


def test_dropin_numpy_array_and_asarray_of_plain_lists():
    for fun in (pnp.array, pnp.asarray):
        for obj in ([1.0, 2.0], [[1, 2], [3, 4]], [True, False], (0.5, 2), 3.0, []):
            assert_numpy_result(fun(obj), getattr(onp, fun.__name__)(obj),
                                f"{fun.__name__}({obj!r})")
    assert pnp.array([1, 2], dtype=onp.float32).dtype == onp.float32


def test_dropin_numpy_on_traced_arguments_records():
    x = ad.Array(V)
    stacked = pnp.stack([x, V])
    assert isinstance(stacked, ad.Array)
    total = pnp.sum(stacked ** 2)
    assert isinstance(total, ad.Array)
    total.backward()
    onp.testing.assert_allclose(x.grad, 2 * V)        # d/dx sum(x**2 + V**2)


def autograd_style_loss(np, xs):
    return np.sum(np.stack([x * 2.0 for x in xs]) ** 2) + np.mean(np.concatenate(xs))


def test_autograd_style_loss_called_plainly_returns_numpys_float():
    xs = [V, V[::-1] - 1.0]
    theirs = autograd_style_loss(anp, xs)
    ours = autograd_style_loss(pnp, xs)
    assert type(theirs) is onp.float64
    assert type(ours) is type(theirs)
    assert ours == theirs
    assert type(pnp.allclose(V, V)) is bool
    # and traced, the same program has autograd's gradient
    assert_same(pag.grad(lambda a: autograd_style_loss(pnp, [a, V]))(V),
                autograd.grad(lambda a: autograd_style_loss(anp, [a, V]))(V))


@pytest.mark.parametrize("operator", ["grad", "elementwise_grad", "value_and_grad",
                                      "jacobian", "hessian", "make_vjp", "make_jvp",
                                      "make_hvp", "grad_and_aux",
                                      "hessian_vector_product"])
def test_operators_check_fun_and_argnum_at_once(operator):
    make = getattr(pag, operator)
    with pytest.raises(TypeError, match="needs a callable, got None"):
        make(None)
    for argnum in ("0", 1.0, True, (0, "1")):
        with pytest.raises(TypeError, match="argnum must be an int or a tuple of ints"):
            make(lambda x, y: x * y, argnum)


def test_second_derivative_of_a_power_at_a_zero_exponent():
    """d2/dx2 (1 + (x + cos x)^2) ** tanh(x) at 0, where autograd's is off:
    against central differences of the first derivative and the series."""
    def f(x):
        a = x + onp.cos(x)
        return (1.0 + a ** 2) ** onp.tanh(x)

    got = ad.grad(ad.grad(f))(0.0)
    h = 1e-4
    central = (ad.grad(f)(h) - ad.grad(f)(-h)) / (2 * h)
    assert abs(got - central) < 1e-7
    # by hand: f = exp(t ln b), t = tanh x, b = 1 + (x + cos x)^2; at 0,
    # t = 0, t' = 1, t'' = 0, b = 2, b' = 2, so f'' = (ln 2)^2 + 2 b'/b
    assert got == pytest.approx(onp.log(2.0) ** 2 + 2.0, rel=1e-12)
