"""The rest of autograd's API in pyautodiff.autograd (extend, builtins, misc,
misc.optimizers, test_util and the further differential operators),
against HIPS autograd itself and central differences."""
import importlib
import warnings

import numpy as onp
import pytest

autograd = pytest.importorskip("autograd")
import autograd.extend as aext                    # noqa: E402
import autograd.misc as amisc                     # noqa: E402
import autograd.misc.optimizers as aopt           # noqa: E402
import autograd.numpy as anp                      # noqa: E402

import pyautodiff as ad                           # noqa: E402
import pyautodiff.autograd as pag                 # noqa: E402
import pyautodiff.autograd.numpy as pnp           # noqa: E402
from pyautodiff.autograd import builtins as pbuiltins   # noqa: E402
from pyautodiff.autograd import extend as pext    # noqa: E402
from pyautodiff.autograd import test_util as ptu  # noqa: E402
from pyautodiff.autograd.misc import const_graph, flatten   # noqa: E402
from pyautodiff.autograd.misc.flatten import flatten_func   # noqa: E402
from pyautodiff.autograd.misc.optimizers import adam, rmsprop, sgd   # noqa: E402


def close(ours, theirs, rtol=1e-12, atol=1e-13):
    """Same containers, same shapes, same numbers."""
    if isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            close(a, b, rtol, atol)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for k in theirs:
            close(ours[k], theirs[k], rtol, atol)
    else:
        assert onp.shape(ours) == onp.shape(theirs)
        onp.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


def central(f, x, eps=1e-6):
    """The gradient of scalar f at the array x by central differences."""
    x = onp.asarray(x, dtype=float)
    g = onp.zeros_like(x)
    for i in onp.ndindex(x.shape):
        e = onp.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


# -- one primitive, defined under both libraries ------------------------------------

def make_logsumexp(ext, np):
    @ext.primitive
    def logsumexp(x, scale=1.0):
        m = np.max(x)
        return scale * (m + np.log(np.sum(np.exp(x - m))))

    ext.defvjp(logsumexp,
               lambda ans, x, scale=1.0: lambda g: g * scale * np.exp(x - ans / scale))
    ext.defjvp(logsumexp,
               lambda g, ans, x, scale=1.0: scale * np.sum(g * np.exp(x - ans / scale)))
    return logsumexp


def make_product(ext, np):
    """f(a, b, c) = sum(a * b * c) with a, b scalars and c an array: three
    traced arguments (one op of the tape nonetheless)."""
    @ext.primitive
    def product(a, b, c):
        return np.sum(a * b * c)

    ext.defvjp(product,
               lambda ans, a, b, c: lambda g: g * b * np.sum(c),
               lambda ans, a, b, c: lambda g: g * a * np.sum(c),
               lambda ans, a, b, c: lambda g: g * a * b * np.ones(np.shape(c)))
    ext.defjvp(product,
               lambda g, ans, a, b, c: g * b * np.sum(c),
               lambda g, ans, a, b, c: g * a * np.sum(c),
               lambda g, ans, a, b, c: a * b * np.sum(g))
    return product


X = onp.array([0.3, -1.2, 2.0])


def test_primitive_on_plain_inputs_is_the_function():
    lse = make_logsumexp(pext, onp)
    assert lse(X) == lse.fun(X)
    assert lse.__name__ == "logsumexp"


def test_defvjp_gradient_with_kwargs_matches_autograd_and_differences():
    lse, alse = make_logsumexp(pext, onp), make_logsumexp(aext, anp)

    def ours(x):
        return lse(pnp.sin(x), scale=2.0) * x[0]

    def theirs(x):
        return alse(anp.sin(x), scale=2.0) * x[0]
    g = pag.grad(ours)(X)
    close(g, autograd.grad(theirs)(X))
    onp.testing.assert_allclose(g, central(ours, X), rtol=1e-7, atol=1e-8)


def test_defjvp_matches_autograd():
    lse, alse = make_logsumexp(pext, onp), make_logsumexp(aext, anp)
    v = onp.array([1.0, 0.5, -2.0])
    ours = pag.make_jvp(lambda x: lse(x * x, scale=0.5))(X)(v)
    theirs = autograd.make_jvp(lambda x: alse(x * x, scale=0.5))(X)(v)
    close(ours, theirs)


def test_three_traced_arguments():
    prod, aprod = make_product(pext, onp), make_product(aext, anp)
    c = onp.array([1.0, 2.0, 4.0])

    def ours(a, b, c):
        return prod(a * a, pnp.sin(b), c * a)

    def theirs(a, b, c):
        return aprod(a * a, anp.sin(b), c * a)
    argnums = (0, 1, 2)
    close(pag.grad(ours, argnums)(1.5, 0.4, c), autograd.grad(theirs, argnums)(1.5, 0.4, c))
    v = (0.5, -1.0, onp.array([1.0, 0.0, 2.0]))
    close(pag.make_jvp(ours, argnums)(1.5, 0.4, c)(v),
          autograd.make_jvp(theirs, argnums)(1.5, 0.4, c)(v))


def test_none_is_a_zero_derivative():
    def define(ext):
        @ext.primitive
        def scaled(x, k):
            return x * k
        ext.defvjp(scaled, lambda ans, x, k: lambda g: g * k, None)
        ext.defjvp(scaled, lambda g, ans, x, k: g * k, None)
        return scaled
    ours, theirs = define(pext), define(aext)
    for argnum in (0, 1, (0, 1)):
        close(pag.grad(ours, argnum)(2.0, 3.0), autograd.grad(theirs, argnum)(2.0, 3.0))
    close(pag.make_jvp(ours, (0, 1))(2.0, 3.0)((1.0, 1.0)),
          autograd.make_jvp(theirs, (0, 1))(2.0, 3.0)((1.0, 1.0)))


def test_an_unregistered_argument_raises_naming_the_primitive_and_argument():
    @pext.primitive
    def half(x, y):
        return x * y
    pext.defvjp(half, lambda ans, x, y: lambda g: g * y)
    with pytest.raises(NotImplementedError, match=r"VJP of half .* argument 1"):
        pag.grad(half, 1)(2.0, 3.0)
    with pytest.raises(NotImplementedError, match=r"JVP of half .* argument 0"):
        pag.make_jvp(half)(2.0, 3.0)(1.0)

    @pext.primitive
    def bare(x):
        return 2.0 * x
    with pytest.raises(NotImplementedError, match=r"VJP of bare .* argument 0"):
        pag.grad(bare)(1.0)


def test_argnums_keyword_and_the_argnum_forms():
    def define(ext, form):
        @ext.primitive
        def f(w, x):
            return w * x ** 3
        if form == "argnums":
            ext.defvjp(f, lambda ans, w, x: lambda g: g * 3 * w * x ** 2, argnums=(1,))
            ext.defjvp(f, lambda g, ans, w, x: g * 3 * w * x ** 2, argnums=(1,))
        elif form == "argnum":
            ext.defvjp_argnum(f, lambda k, ans, args, kwargs: lambda g: g * (
                args[1] ** 3 if k == 0 else 3 * args[0] * args[1] ** 2))
            ext.defjvp_argnum(f, lambda k, g, ans, args, kwargs: g * (
                args[1] ** 3 if k == 0 else 3 * args[0] * args[1] ** 2))
        else:
            ext.defvjp_argnums(f, lambda ks, ans, args, kwargs: lambda g: [
                g * (args[1] ** 3 if k == 0 else 3 * args[0] * args[1] ** 2) for k in ks])
            ext.defjvp_argnums(f, lambda ks, gs, ans, args, kwargs: sum(
                g * (args[1] ** 3 if k == 0 else 3 * args[0] * args[1] ** 2)
                for k, g in zip(ks, gs)))
        return f
    for form in ("argnums", "argnum", "argnums_joint"):
        ours, theirs = define(pext, form), define(aext, form)
        argnum = 1 if form == "argnums" else (0, 1)
        close(pag.grad(ours, argnum)(1.5, 2.0), autograd.grad(theirs, argnum)(1.5, 2.0))
        v = 0.5 if form == "argnums" else (0.5, -1.0)
        close(pag.make_jvp(ours, argnum)(1.5, 2.0)(v),
              autograd.make_jvp(theirs, argnum)(1.5, 2.0)(v))
    with pytest.raises(NotImplementedError, match="argument 0"):
        pag.grad(define(pext, "argnums"), 0)(1.5, 2.0)


def test_a_primitive_whose_vjp_calls_scipy_on_its_arguments_nests_or_raises():
    """A vjp that hands its raw argument to SciPy: first order as autograd's;
    at second order scipy.linalg.expm takes plain numbers out of the
    traced elements (which NumPy reported as 'setting an array element
    with a sequence') and scipy.special.polygamma fails on them inside
    SciPy: each raises the documented NotImplementedError naming the
    primitive.  SciPy's softmax, NumPy's functions only, nests: its Hessian
    is diag(s) - s s^T."""
    scipy_linalg = pytest.importorskip("scipy.linalg")
    import scipy.special as sp

    def define(ext):
        @ext.primitive
        def expm_sum(A):
            return onp.sum(scipy_linalg.expm(A))
        # d sum(expm(A)) / dA for a diagonal A: expm(A) itself
        ext.defvjp(expm_sum, lambda ans, A: lambda g: g * scipy_linalg.expm(A))

        @ext.primitive
        def digamma_sum(x):
            return onp.sum(sp.digamma(x))
        ext.defvjp(digamma_sum, lambda ans, x: lambda g: g * sp.polygamma(1, x))

        @ext.primitive
        def logsumexp(x):
            return sp.logsumexp(x)
        ext.defvjp(logsumexp, lambda ans, x: lambda g: g * sp.softmax(x))
        return expm_sum, digamma_sum, logsumexp

    ours, theirs = define(pext), define(aext)
    A, x = onp.diag([0.3, -0.2]), onp.array([0.5, 1.5])
    close(pag.grad(ours[0])(A), autograd.grad(theirs[0])(A))
    close(pag.grad(ours[1])(x), autograd.grad(theirs[1])(x))
    for f, at, name in [(ours[0], A, "expm_sum"), (ours[1], x, "digamma_sum"),
                        (ours[1], 0.5, "digamma_sum")]:
        with pytest.raises(NotImplementedError, match=f"^{name}: inside another derivative"):
            pag.hessian(f)(at)
        with pytest.raises(NotImplementedError, match=f"^{name}: inside another derivative"):
            pag.grad(lambda y: pnp.sum(pag.grad(f)(y)))(at)
    s = sp.softmax(x)
    close(pag.hessian(ours[2])(x), onp.diag(s) - onp.outer(s, s), rtol=1e-12, atol=1e-14)


def test_same_and_def_linear():
    def define(ext, linear):
        @ext.primitive
        def twice(x):
            return 2.0 * x
        ext.defvjp(twice, lambda ans, x: lambda g: 2.0 * g)
        if linear:
            ext.def_linear(twice)
        else:
            ext.defjvp(twice, "same")
        return twice
    for linear in (False, True):
        ours, theirs = define(pext, linear), define(aext, linear)
        close(pag.make_jvp(lambda x: ours(x) * x)(X)(X),
              autograd.make_jvp(lambda x: theirs(x) * x)(X)(X))


def test_wrong_rules_are_errors_not_numbers():
    @pext.primitive
    def broadcasting(a, x):
        return a * x
    # the cotangent of the scalar a must be summed, not broadcast
    pext.defvjp(broadcasting, lambda ans, a, x: lambda g: g * x,
                lambda ans, a, x: lambda g: g * a)
    with pytest.raises(ValueError, match=r"broadcasting for argument 0 has shape \(3,\)"):
        pag.grad(lambda a: pnp.sum(broadcasting(a, X)))(2.0)

    @pext.primitive
    def pair(x):
        return x, x
    pext.defvjp(pair, lambda ans, x: lambda g: g)
    with pytest.raises(TypeError, match="pair returned a tuple"):
        pag.grad(lambda x: pair(x)[0])(1.0)
    with pytest.raises(TypeError, match="primitive"):
        pext.defvjp(onp.sin, lambda ans, x: lambda g: g)


def test_a_recording_replays_a_primitive():
    lse, alse = make_logsumexp(pext, onp), make_logsumexp(aext, anp)
    recorded = ad.record(lambda x: lse(x * x, scale=2.0), X)
    for x in (X, 2.0 * X - 1.0):
        close(recorded.grad(x), autograd.grad(lambda x: alse(x * x, scale=2.0))(x))


def test_notrace_primitive_result_is_a_constant():
    shift = pext.notrace_primitive(lambda x: onp.sum(x) ** 2)
    # d/dx (x0 * c) with c held constant
    g = pag.grad(lambda x: x[0] * shift(x))(X)
    close(g, onp.array([onp.sum(X) ** 2, 0.0, 0.0]))
    assert type(shift(ad.Value(2.0))) in (float, onp.float64)


def test_builtins_see_through_traced_values():
    seen = []

    def f(x, s):
        seen.append((pbuiltins.isinstance(x, onp.ndarray), pbuiltins.type(x) is onp.ndarray,
                     pbuiltins.isinstance(s, float), pbuiltins.type(s) is float))
        return pnp.sum(x * s)
    pag.grad(f, (0, 1))(X, 2.0)
    assert seen == [(True, True, True, True)]
    assert pbuiltins.tuple is tuple and pbuiltins.list is list and pbuiltins.dict is dict
    assert pag.isinstance is pbuiltins.isinstance


def test_grad_through_a_primitive_of_a_primitive_result():
    # a primitive's output (an Array of the trace) feeding another one
    lse = make_logsumexp(pext, onp)
    alse = make_logsumexp(aext, anp)
    close(pag.grad(lambda x: lse(x * lse(x)))(X), autograd.grad(lambda x: alse(x * alse(x)))(X))


# -- misc: flatten and const_graph --------------------------------------------------

NEST = {"b": 1.5, "a": [onp.array([1.0, 2.0]), 3.0], "c": (onp.arange(4.0).reshape(2, 2),)}


def test_flatten_matches_autograd():
    ours, unflatten = flatten(NEST)
    theirs, aunflatten = amisc.flatten(NEST)
    close(ours, theirs)
    close(unflatten(2 * ours), aunflatten(2 * theirs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # autograd: "independent of input"
        close(flatten([])[0], amisc.flatten([])[0])
    with pytest.raises(ValueError, match=r"shape \(8,\)"):
        unflatten(onp.zeros(3))


def test_grad_through_flatten_and_unflatten():
    vector, unflatten = flatten(NEST)
    _, aunflatten = amisc.flatten(NEST)
    weights = onp.arange(1.0, 9.0)

    def through_flatten(flat, np, nest):
        return np.sum(weights * flat(nest)[0] ** 2)

    close(pag.grad(lambda p: through_flatten(flatten, pnp, p))(NEST),
          autograd.grad(lambda p: through_flatten(amisc.flatten, anp, p))(NEST))

    def through_unflatten(unflat, np, v):
        p = unflat(v)
        return p["b"] * np.sum(p["a"][0] ** 2) + np.sum(np.sin(p["c"][0])) * p["a"][1]
    v = vector + 0.5
    ours = pag.grad(lambda v: through_unflatten(unflatten, pnp, v))(v)
    close(ours, autograd.grad(lambda v: through_unflatten(aunflatten, anp, v))(v))
    onp.testing.assert_allclose(
        ours, central(lambda v: through_unflatten(unflatten, onp, v), v), rtol=1e-7, atol=1e-8)


def test_flatten_func():
    def f(p, k):
        return {"y": p["a"][0] * k, "z": (p["b"] ** 2,)}
    flat_f, unflatten, example = flatten_func(f, NEST)
    aflat_f, _, aexample = importlib.import_module(
        "autograd.misc.flatten").flatten_func(f, NEST)
    close(example, aexample)
    close(flat_f(example, 3.0), aflat_f(aexample, 3.0))


def test_const_graph_replays_and_stays_right_across_branches():
    calls = []

    def f(x, y, scale):
        calls.append(1)
        s = onp.sum(x)
        return scale * (onp.sum(onp.sin(x) * y) if s > 0 else onp.sum(x * x))
    cached = const_graph(f, scale=2.0)
    y = onp.array([1.0, -1.0, 0.5])
    for x in (X, X + 1.0, X * 2.0, -X - 3.0):
        onp.testing.assert_allclose(cached(x, y), f(x, y, 2.0), rtol=1e-14)
    # the direct calls above are one per x; the cached function ran f only
    # to record: at X, and again where the branch flipped
    assert len(calls) == 4 + 2
    close(pag.grad(cached)(X, y), pag.grad(lambda x: f(x, y, 2.0))(X))


# -- misc.optimizers ------------------------------------------------------------------

def objective(np):
    def loss(p, i):
        return (np.sum((p["w"] - 3.0) ** 2 * np.array([1.0, 4.0]))
                + (p["b"][0] + 1.0) ** 2 * (1.0 + 0.1 * i))
    return loss


START = {"w": onp.array([0.5, -1.0]), "b": [onp.array(0.2)]}


@pytest.mark.parametrize("name, kwargs", [
    ("sgd", {}), ("sgd", {"num_iters": 30, "step_size": 0.05, "mass": 0.5}),
    ("rmsprop", {}), ("rmsprop", {"num_iters": 40, "step_size": 0.01, "gamma": 0.5}),
    ("adam", {}), ("adam", {"num_iters": 60, "step_size": 0.1, "b1": 0.8, "b2": 0.9}),
])
def test_optimizers_take_autograd_steps(name, kwargs):
    ours_log, theirs_log = [], []
    ours = {"sgd": sgd, "rmsprop": rmsprop, "adam": adam}[name](
        pag.grad(objective(pnp)), START,
        callback=lambda x, i, g: ours_log.append((x, i, g)), **kwargs)
    theirs = getattr(aopt, name)(
        autograd.grad(objective(anp)), START,
        callback=lambda x, i, g: theirs_log.append((x, i, g)), **kwargs)
    close(ours, theirs, rtol=1e-12, atol=1e-12)
    assert len(ours_log) == len(theirs_log)
    for (x, i, g), (ax, ai, ag) in zip(ours_log, theirs_log):
        assert i == ai
        close(x, ax, rtol=1e-12, atol=1e-12)
        close(g, ag, rtol=1e-12, atol=1e-12)


def test_optimizer_signatures():
    import inspect
    expected = {
        sgd: "(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9)",
        rmsprop: "(grad, x, callback=None, num_iters=100, step_size=0.1, "
                 "gamma=0.9, eps=1e-08)",
        adam: "(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, "
              "b2=0.999, eps=1e-08)"}
    for opt, signature in expected.items():
        assert str(inspect.signature(opt.__wrapped__)) == signature


def test_primitive_on_an_ordinary_tape():
    lse, alse = make_logsumexp(pext, onp), make_logsumexp(aext, anp)
    x = ad.Array(X)
    y = lse(x, scale=3.0)
    y.backward()
    close(x.grad, autograd.grad(lambda x: alse(x, scale=3.0))(X))


def test_meta_gradient_through_adam():
    # d(final loss)/d(step size): the optimizer's loop traced, with the
    # objective's gradient inside (a gradient inside a gradient)
    def loss(x, i, np):
        return np.sum((x - 3.0) ** 2 * np.array([1.0, 4.0]))

    def final(step, lib, np, opt):
        x = opt.adam(lib.grad(lambda x, i: loss(x, i, np)), onp.array([0.5, -1.0]),
                     num_iters=5, step_size=step)
        return loss(x, 0, np)
    close(pag.grad(lambda s: final(s, pag, pnp, pag.misc.optimizers))(0.1),
          autograd.grad(lambda s: final(s, autograd, anp, aopt))(0.1), rtol=1e-10)


# -- test_util ------------------------------------------------------------------------

def test_check_grads_passes_first_order():
    onp.random.seed(0)
    f = lambda x, y: pnp.sum(pnp.sin(x) * y) + y ** 2   # noqa: E731
    ptu.check_grads(f, modes=["fwd", "rev"], order=1)(X, 2.0)
    ptu.check_grads(f, argnum=(0, 1), order=1)(X, 2.0)
    ptu.check_grads(lambda d: d["a"] * pnp.sum(d["b"] ** 2), order=1)(
        {"a": 1.5, "b": X})
    ptu.check_grads(make_logsumexp(pext, onp), order=1)(X)
    ptu.combo_check(f, [0, 1], order=1)([X, -X], [1.0, 3.0])


def test_check_grads_catches_wrong_rules():
    onp.random.seed(1)

    @pext.primitive
    def square_sum(x):
        return onp.sum(x ** 2)
    pext.defvjp(square_sum, lambda ans, x: lambda g: 3.0 * g * x)    # wrong: 2
    pext.defjvp(square_sum, lambda g, ans, x: 2.0 * onp.sum(g * x))  # right
    ptu.check_grads(square_sum, modes=["fwd"], order=1)(X)
    with pytest.raises(AssertionError, match=r"VJP\) check of square_sum"):
        ptu.check_grads(square_sum, modes=["rev"], order=1)(X)
    pext.defjvp(square_sum, lambda g, ans, x: onp.sum(g * x))        # wrong
    with pytest.raises(AssertionError, match=r"JVP\) check of square_sum"):
        ptu.check_grads(square_sum, modes=["fwd"], order=1)(X)
    with pytest.raises(ValueError, match="modes"):
        ptu.check_grads(square_sum, modes=["backward"])


def test_check_vjp_and_check_jvp_against_autograds():
    onp.random.seed(2)
    f = lambda x: pnp.tanh(x) * x[::-1]                              # noqa: E731
    ptu.check_vjp(f, X)
    ptu.check_jvp(f, X)
    ptu.check_equivalent(X, X + 1e-9)
    with pytest.raises(AssertionError, match="mismatch"):
        ptu.check_equivalent(X, 2 * X)


def test_check_grads_second_order():
    # nested make_vjp / make_jvp, as autograd's check_grads does
    onp.random.seed(3)
    ptu.check_grads(lambda x: pnp.sum(pnp.sin(x) * x ** 2))(X)


# -- the further differential operators -------------------------------------------

def test_deriv_of_a_vector_function():
    close(pag.deriv(lambda t: pnp.sin(t) * onp.array([1.0, 2.0]))(0.3),
          autograd.deriv(lambda t: anp.sin(t) * anp.array([1.0, 2.0]))(0.3))


def test_make_hvp_gives_the_gradient_as_autograd_does():
    def f(np):
        return lambda x: np.sum(np.sin(x) ** 3)
    v = onp.array([1.0, -2.0, 0.5])
    hvp, gradient = pag.make_hvp(f(pnp))(X)
    ahvp, agradient = autograd.make_hvp(f(anp))(X)
    close(gradient, agradient)
    close(hvp(v), ahvp(v))
    close(hvp(X), ahvp(X))


def test_hessian_tensor_product():
    def h(np):
        return lambda x, k: np.sum(np.sin(x) ** 2) * x[0] * k
    v = onp.array([1.0, -2.0, 0.5])
    close(pag.hessian_tensor_product(h(pnp))(X, 3.0, v),
          autograd.hessian_tensor_product(h(anp))(X, 3.0, v))
    close(pag.hessian_vector_product(h(pnp))(X, 3.0, v),
          autograd.hessian_vector_product(h(anp))(X, 3.0, v))


def test_tensor_jacobian_product():
    def F(np):
        return lambda x, w: np.sin(x)[:, None] * (w * x)[None, :]
    w = onp.array([1.0, 2.0, -1.0])
    for tensor in (onp.array([1.0, 3.0, -2.0]), onp.arange(9.0).reshape(3, 3)):
        close(pag.tensor_jacobian_product(F(pnp))(X, w, tensor),
              autograd.tensor_jacobian_product(F(anp))(X, w, tensor))
        close(pag.vector_jacobian_product(F(pnp), 1)(X, w, tensor),
              autograd.vector_jacobian_product(F(anp), 1)(X, w, tensor))
    with pytest.raises(ValueError, match="does not lead"):
        pag.tensor_jacobian_product(F(pnp))(X, w, onp.ones(2))


def test_make_ggnvp():
    W = onp.array([[1.0, 2.0, 0.0], [0.5, -1.0, 1.0]])
    v = onp.array([1.0, -2.0, 0.5])

    def f(np):
        return lambda w, x: np.tanh(np.dot(w, x))
    close(pag.make_ggnvp(f(pnp), f_argnum=1)(W, X)(v),
          autograd.make_ggnvp(f(anp), f_argnum=1)(W, X)(v))
    g = lambda np: lambda y: np.sum(np.exp(y))                        # noqa: E731
    close(pag.make_ggnvp(f(pnp), g(pnp), 1)(W, X)(v),
          autograd.make_ggnvp(f(anp), g(anp), 1)(W, X)(v))


def test_grad_named():
    def f(np):
        def loss(a, b, c=2.0):
            return a * np.sin(b) * c
        return loss
    for name in ("a", "b", "c"):
        close(pag.grad_named(f(pnp), name)(2.0, 1.0, 3.0),
              autograd.grad_named(f(anp), name)(2.0, 1.0, 3.0))
    with pytest.raises(ValueError, match="no argument named 'd'"):
        pag.grad_named(f(pnp), "d")


def test_checkpoint():
    def body(np):
        return lambda x, y: np.sum(np.tanh(x * y) ** 2)
    ours, theirs = pag.checkpoint(body(pnp)), autograd.checkpoint(body(anp))
    y = onp.array([2.0, 0.5, -1.0])
    close(pag.grad(lambda x: ours(x, y) * ours(y, x))(X),
          autograd.grad(lambda x: theirs(x, y) * theirs(y, x))(X))
    close(pag.grad(ours, (0, 1))(X, y), autograd.grad(theirs, (0, 1))(X, y))
    # (autograd's checkpoint has no forward mode; ours runs body's)
    close(pag.make_jvp(ours)(X, y)(y), autograd.make_jvp(body(anp))(X, y)(y))


def test_holomorphic_grad():
    # the complex derivative, as autograd's (tests/test_complex.py has more)
    z = 1.0 + 2.0j
    ours = pag.holomorphic_grad(lambda z: z * z * pnp.exp(z))(z)
    close(ours, autograd.holomorphic_grad(lambda z: z * z * anp.exp(z))(z))
    close(ours, (2 * z + z * z) * onp.exp(z))
    with pytest.warns(UserWarning, match="not complex"):
        ours = pag.holomorphic_grad(lambda z: z * z)(1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ours == autograd.holomorphic_grad(lambda z: z * z)(1.5) == 3.0


def test_grad_of_grad_through_a_primitive():
    # autograd differentiates a primitive's vjp itself (it is traced)
    lse, alse = make_logsumexp(pext, onp), make_logsumexp(aext, anp)
    close(pag.hessian(lambda x: lse(x))(X), autograd.hessian(lambda x: alse(x))(X))


def test_names_and_imports():
    for name in pag.__all__:
        assert hasattr(pag, name), name
        assert hasattr(autograd, name), name
    atu = importlib.import_module("autograd.test_util")
    for module, theirs in ((pext, aext), (pag.misc, amisc),
                           (pag.misc.optimizers, aopt), (ptu, atu)):
        for name in module.__all__:
            assert hasattr(module, name), name
            assert hasattr(theirs, name), (module.__name__, name)
    for name in ("hessian_tensor_product", "tensor_jacobian_product",
                 "vector_jacobian_product", "make_ggnvp", "grad_named",
                 "checkpoint", "holomorphic_grad", "deriv", "primitive"):
        assert name in pag.__all__


def test_multigrad_dict():
    def f(a, b, *rest, scale=2.0, **extra):
        return scale * (a * onp.sum(b ** 2) + sum(rest) * a + extra["c"] ** 3)
    g = pag.multigrad_dict(f)(1.5, onp.array([0.5, -1.0]), 0.25, 0.75, c=0.5)
    assert list(g) == ["a", "b", "rest", "scale", "extra"]
    assert g["a"] == pytest.approx(2.0 * (1.25 + 1.0))
    onp.testing.assert_allclose(g["b"], 2.0 * 1.5 * 2 * onp.array([0.5, -1.0]))
    assert g["rest"] == pytest.approx((2.0 * 1.5, 2.0 * 1.5))
    assert g["scale"] == pytest.approx(1.5 * 1.25 + 1.0 * 1.5 + 0.125)
    assert g["extra"]["c"] == pytest.approx(2.0 * 3 * 0.25)


def _square_primitive(ext):
    @ext.primitive
    def sq(x):
        return x * x
    ext.defvjp(sq, lambda ans, x: lambda g: g * 2 * x)
    ext.defjvp(sq, lambda g, ans, x: g * 2 * x)
    return sq


def test_nested_derivatives_through_a_scalar_primitive():
    # the cotangent of a scalar primitive inside another derivative is
    # traced: the rule runs on it, forward and reverse
    ours, theirs = _square_primitive(pext), _square_primitive(aext)
    for G, sq in ((pag, ours), (autograd, theirs)):
        assert G.grad(G.grad(lambda x: sq(x) ** 2))(1.5) == pytest.approx(27.0)
        assert G.deriv(G.deriv(sq))(1.5) == pytest.approx(2.0)
    ptu.check_grads(ours, modes=["rev", "fwd"], order=3)(1.5)
    lse, alse = make_logsumexp(pext, onp), make_logsumexp(aext, anp)
    close(pag.hessian(lambda x: lse(x) ** 2)(X), autograd.hessian(lambda x: alse(x) ** 2)(X))


def test_check_grads_of_mod_where_the_quotient_is_zero():
    import operator
    ptu.check_grads(operator.mod, (0, 1))(0.4, 1.49)
    ptu.check_grads(operator.mod, (0, 1))(1.3, 0.7)


def test_numpys_submodules_import_as_autograds_do():
    import pyautodiff.autograd.numpy.fft as pfft
    import pyautodiff.autograd.numpy.linalg as plinalg
    import pyautodiff.autograd.numpy.random as npr
    assert pnp.random is npr and pnp.linalg is plinalg and pnp.fft is pfft
    assert npr.RandomState(0).randn(3).tolist() == onp.random.RandomState(0).randn(3).tolist()
    x = onp.array([3.0, 4.0])
    assert plinalg.norm(x) == 5.0


# -- autograd.tracer, autograd.core, np.where by keyword -----------------------

def test_tracer_names():
    from pyautodiff.autograd import tracer
    seen = []

    def f(x):
        seen.append((tracer.isbox(x), tracer.getval(x)))
        return x * x

    assert pag.grad(f)(3.0) == 6.0
    assert seen == [(True, 3.0)]
    assert not tracer.isbox(3.0) and tracer.getval(onp.ones(2)).tolist() == [1.0, 1.0]
    assert tracer.primitive is pext.primitive


def test_core_is_autograd_cores_not_the_nary_operators():
    # core.make_vjp(fun, x) -> (vjp, ans), make_jvp(fun, x) -> jvp, as
    # autograd.core's (the n-ary ones are the package's)
    from pyautodiff.autograd import core
    import autograd.core as acore
    vjp, ans = core.make_vjp(lambda x: x ** 3, 2.0)
    avjp, aans = acore.make_vjp(lambda x: x ** 3, 2.0)
    assert ans == aans == 8.0 and vjp(1.0) == avjp(1.0) == 12.0
    assert core.make_jvp(lambda x: x ** 3, 2.0)(1.0) == acore.make_jvp(lambda x: x ** 3, 2.0)(1.0)
    assert core.defvjp is pext.defvjp


def test_where_takes_keywords_as_autograds():
    x = onp.array([1.0, 2.0, 3.0])
    y = onp.array([4.0, 5.0, 6.0])
    cond = [True, False, True]
    for got in (pnp.where(condition=cond, x=x, y=y), pnp.where(cond, x, y=y),
                pnp.where(cond, x=x, y=y)):
        assert got.tolist() == anp.where(condition=cond, x=x, y=y).tolist() == [1.0, 5.0, 3.0]
    assert [a.tolist() for a in pnp.where(cond)] == [[0, 2]]

    def f(v):
        return pnp.sum(pnp.where(condition=v > 0, x=v ** 2, y=-v))

    assert pag.grad(f)(onp.array([1.0, -2.0])).tolist() == [2.0, -1.0]
    with pytest.raises(TypeError, match="multiple values"):
        pnp.where(cond, x, x=x)
    with pytest.raises(TypeError, match="unexpected keyword"):
        pnp.where(cond, x, y, out=x)
    with pytest.raises(ValueError, match="both or neither"):
        pnp.where(cond, x)


# -- lists of traced numbers as NumPy arguments --------------------------------

def test_lists_of_traced_numbers_as_autograd_takes_them():
    cases = [
        (lambda x: pnp.mean([x, x + 2]), 0.0),
        (lambda x: pnp.std((x, x * 3)), 0.5),
        (lambda x: pnp.var([x, x + 2, x * x]), 0.7),
        (lambda x: pnp.sum(pnp.sin([x, 2 * x])), 1.0),
        (lambda x: pnp.linalg.norm([x, 2 * x, 1.0]), 3.0),
        (lambda x: pnp.sum(pnp.concatenate([[x, x], [x * x]]) ** 2), 1.5),
        (lambda x: pnp.prod(pnp.append([[1.0, x]], [[x * x, 2.0]], axis=0)), 1.3),
        (lambda x: pnp.dot([x, 1.0], [2.0, x]), 0.4),
    ]
    for f, x in cases:
        got = pag.grad(f)(x)
        eps = 1e-6
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            central = (float(f(x + eps)) - float(f(x - eps))) / (2 * eps)
        assert abs(got - central) < 1e-6 * max(1.0, abs(central)), (f, got, central)
    # second order through the lists, and plain lists stay NumPy's
    assert abs(pag.grad(pag.grad(lambda x: pnp.mean([x ** 3, x])))(2.0) - 6.0) < 1e-12
    assert pnp.mean([1.0, 2.0]) == 1.5 and isinstance(pnp.mean([1.0, 2.0]), onp.float64)


# -- misc.fixed_points ---------------------------------------------------------

def test_fixed_point_derivatives_are_the_implicit_functions():
    from pyautodiff.autograd.misc.fixed_points import fixed_point

    def newton(a):
        return lambda x: 0.5 * (x + a / x)

    def distance(x, y):
        return pnp.max(pnp.abs(x - y))

    def root(a):
        return fixed_point(newton, a, 3.0 * pnp.ones_like(a), distance, 1e-13)

    # sqrt and its derivative, to the iteration's tolerance
    assert root(2.0) == pytest.approx(2.0 ** 0.5, rel=1e-13)
    assert pag.grad(root)(2.0) == pytest.approx(0.5 * 2.0 ** -0.5, rel=1e-10)
    with pytest.raises(NotImplementedError, match="fixed_point: derivatives of second"):
        pag.grad(pag.grad(root))(2.0)
    # elementwise on an array, against autograd's own fixed_point
    from autograd.misc.fixed_points import fixed_point as ag_fixed_point
    a = onp.array([0.5, 2.0, 9.0])
    w = onp.array([1.0, -2.0, 0.5])
    ours = pag.grad(lambda b: pnp.sum(root(b) * w))(a)
    theirs = autograd.grad(lambda b: anp.sum(ag_fixed_point(
        newton, b, 3.0 + 0.0 * b, lambda x, y: anp.max(anp.abs(x - y)), 1e-13) * w))(a)
    onp.testing.assert_allclose(ours, theirs, rtol=1e-10)
    onp.testing.assert_allclose(ours, 0.5 * w / onp.sqrt(a), rtol=1e-10)
