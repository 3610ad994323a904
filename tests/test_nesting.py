"""Derivatives of derivatives: every pair (outer transform, inner
transform), on a float and on an array argument, with the inner function
taking the outer variable as its argument or closing over it, is exactly
what HIPS autograd gives -- never a silent wrong number (a zero where the
inner result was cut off from the outer variable)."""
import itertools

import numpy as onp
import pytest

import pyautodiff as ad
import pyautodiff.autograd as pag

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")

pytestmark = pytest.mark.filterwarnings("ignore:Output seems independent")

# a direction per argument shape, and a point the inner derivative is taken
# at when the outer variable is its cotangent or vector
V = {(): 0.7, (2,): onp.array([0.7, -0.4])}
X0 = {(): 0.3, (2,): onp.array([0.3, 0.9])}


def _shape(x):
    return onp.shape(getattr(x, "_value", getattr(x, "_d", x)))


def scalar_f(np):
    return lambda t: np.sum(np.sin(t) * t + t ** 3)


def vector_f(np):
    return lambda t: np.sin(t) * t


def inner_transforms(G, ours):
    """name -> (uses a vector function, inner(f, x, np)): a derivative of f
    taken inside the outer function, at (or along) its variable x."""
    out = {
        "grad": (False, lambda f, x, np: G.grad(f)(x)),
        "value_and_grad": (False, lambda f, x, np: sum(G.value_and_grad(f)(x))),
        "elementwise_grad": (True, lambda f, x, np: G.elementwise_grad(f)(x)),
        "jacobian": (True, lambda f, x, np: G.jacobian(f)(x)),
        "hessian": (False, lambda f, x, np: G.hessian(f)(x)),
        "hessian_vector_product": (False, lambda f, x, np:
                                   G.hessian_vector_product(f)(x, V[_shape(x)])),
        "make_vjp": (False, lambda f, x, np: G.make_vjp(f)(x)[0](1.0)),
        "make_jvp": (True, lambda f, x, np: G.make_jvp(f)(x)(V[_shape(x)])[1]),
        # the outer variable as the cotangent, the tangent, the vector
        "vjp_fn(x)": (False, lambda f, x, np:
                      G.make_vjp(f)(X0[_shape(x)])[0](np.sum(x))),
        "jvp_fn(x)": (True, lambda f, x, np: G.make_jvp(f)(X0[_shape(x)])(x)[1]),
        "hvp at x0 along x": (False, lambda f, x, np:
                              G.hessian_vector_product(f)(X0[_shape(x)], x)),
    }
    # pyautodiff's own API: the same derivatives, autograd's as the oracle
    own = {
        "ad.grad": ("grad", lambda f, x, np: ad.grad(f)(x)),
        "ad.value_and_grad": ("value_and_grad",
                              lambda f, x, np: sum(ad.value_and_grad(f)(x))),
        "ad.jacobian": ("jacobian", lambda f, x, np: ad.jacobian(f)(x)),
        "ad.hessian": ("hessian", lambda f, x, np: ad.hessian(f)(x)),
        "ad.hvp": ("hessian_vector_product",
                   lambda f, x, np: ad.hvp(f)(x, V[_shape(x)])),
        "ad.vjp": ("make_vjp", lambda f, x, np: ad.vjp(f)(x)[1](1.0)),
        "ad.jvp": ("make_jvp", lambda f, x, np: ad.jvp(f)(x, V[_shape(x)])[1]),
        "ad.vjp_fn(x)": ("vjp_fn(x)", lambda f, x, np:
                         ad.vjp(f)(X0[_shape(x)])[1](np.sum(x))),
        "ad.jvp(x0, x)": ("jvp_fn(x)",
                          lambda f, x, np: ad.jvp(f)(X0[_shape(x)], x)[1]),
    }
    for name, (same, fn) in own.items():
        out[name] = (out[same][0], fn if ours else out[same][1])
    return out


def outer_transforms(G, ours):
    out = {
        "grad": lambda h, x: G.grad(h)(x),
        "value_and_grad": lambda h, x: G.value_and_grad(h)(x),
        "elementwise_grad": lambda h, x: G.elementwise_grad(h)(x),
        "jacobian": lambda h, x: G.jacobian(h)(x),
        "hessian": lambda h, x: G.hessian(h)(x),
        "hessian_vector_product": lambda h, x:
            G.hessian_vector_product(h)(x, V[onp.shape(x)]),
        "make_vjp": lambda h, x: G.make_vjp(h)(x)[0](1.0),
        "make_jvp": lambda h, x: G.make_jvp(h)(x)(V[onp.shape(x)]),
    }
    own = {
        "ad.grad": ("grad", lambda h, x: ad.grad(h)(x)),
        "ad.hessian": ("hessian", lambda h, x: ad.hessian(h)(x)),
        "ad.hvp": ("hessian_vector_product", lambda h, x: ad.hvp(h)(x, V[onp.shape(x)])),
        "ad.vjp": ("make_vjp", lambda h, x: ad.vjp(h)(x)[1](1.0)),
        "ad.jvp": ("make_jvp", lambda h, x: ad.jvp(h)(x, V[onp.shape(x)])),
    }
    for name, (same, fn) in own.items():
        out[name] = fn if ours else out[same]
    return out


def outer_function(G, np, inner, closure, ours):
    """h(x): a weighted sum of the inner derivative at x; with closure,
    the inner function also closes over x."""
    vector, fn = inner_transforms(G, ours)[inner]
    f = (vector_f if vector else scalar_f)(np)
    if closure:
        return lambda x: np.sum(1.3 * fn(lambda y: f(y) * np.sum(x), x, np))
    return lambda x: np.sum(1.3 * fn(f, x, np))


INNER = list(inner_transforms(pag, True))
OUTER = list(outer_transforms(pag, True))


def flat(r):
    if isinstance(r, (tuple, list)):
        return onp.concatenate([flat(e) for e in r])
    return onp.ravel(onp.asarray(r, dtype=float))


@pytest.mark.parametrize("closure", [False, True], ids=["argument", "closure"])
@pytest.mark.parametrize("x", [0.6, onp.array([0.6, -1.1])], ids=["float", "array"])
@pytest.mark.parametrize("inner", INNER)
def test_every_nesting_is_exact(inner, x, closure):
    for outer in OUTER:
        theirs = outer_transforms(autograd, False)[outer](
            outer_function(autograd, anp, inner, closure, False), x)
        h = outer_function(pag, onp, inner, closure, True)
        ours = outer_transforms(pag, True)[outer](h, x)
        onp.testing.assert_allclose(flat(ours), flat(theirs), rtol=1e-10,
                                    atol=1e-12, err_msg=f"{outer} of {inner}")


def test_make_vjp_of_make_vjp_with_a_traced_cotangent():
    f = lambda t: onp.sin(t) * t        # noqa: E731
    x, v = onp.array([0.3, 0.7]), onp.array([1.0, 2.0])
    nested = lambda xv: pag.make_vjp(f)(xv[0])[0](xv[1])     # noqa: E731
    ours = pag.make_vjp(nested)((x, v))[0](onp.ones(2))
    theirs = lambda xv: autograd.make_vjp(lambda t: anp.sin(t) * t)(xv[0])[0](xv[1])  # noqa: E731
    g = autograd.make_vjp(theirs)((x, v))[0](onp.ones(2))
    assert onp.all(g[0] != 0) and onp.all(g[1] != 0)
    onp.testing.assert_allclose(ours[0], g[0], rtol=1e-13)
    onp.testing.assert_allclose(ours[1], g[1], rtol=1e-13)


def test_third_and_fourth_order_nesting():
    f = lambda x: x ** 4 * onp.sin(x)       # noqa: E731
    fa = lambda x: x ** 4 * anp.sin(x)      # noqa: E731
    d = f
    da = fa
    for order in range(1, 5):
        d, da = ad.grad(d), autograd.grad(da)
        assert d(1.5) == pytest.approx(da(1.5), rel=1e-12), order
    F = ad.record(ad.grad(f), 1.0)          # a recorded gradient nests
    assert F(2.0) == pytest.approx(ad.grad(f)(2.0), rel=1e-12)
    assert F.grad(2.0) == pytest.approx(ad.grad(ad.grad(f))(2.0), rel=1e-12)


@pytest.mark.parametrize("call", [
    lambda x: ad.record(lambda t: t ** 3, x)(x),
    lambda x: ad.record(lambda t: t ** 3, 1.0)(x),
    lambda x: ad.record(lambda t: t ** 3, 1.0).grad(x),
    lambda x: ad.function(lambda t: t ** 3)(x),
], ids=["recorded at x", "replayed at x", "its grad at x", "ad.function"])
def test_a_recording_inside_a_derivative_raises(call):
    for x in (1.5, onp.array([1.5, 0.5])):
        with pytest.raises(NotImplementedError, match="recording"):
            ad.grad(lambda t: onp.sum(call(t)))(x)


def test_mixed_partial_through_an_argument_outside_argnum():
    # y reaches the inner grad as an argument it does not differentiate
    f = lambda x, y: onp.sin(x) * y ** 2    # noqa: E731
    ours = ad.grad(lambda y: ad.grad(f)(0.5, y))(0.3)
    assert ours == pytest.approx(onp.cos(0.5) * 2 * 0.3, rel=1e-14)
