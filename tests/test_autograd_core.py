"""pyautodiff.autograd.core and wrap_util against HIPS autograd's: the unary
make_vjp(fun, x) and make_jvp(fun, x), the vector spaces, the rule
registries, the deprecated primitive methods and unary_to_nary."""
import warnings

import numpy as onp
import pytest

autograd = pytest.importorskip("autograd")
import autograd.core as acore                     # noqa: E402
import autograd.extend as aext                    # noqa: E402
import autograd.numpy as anp                      # noqa: E402
import autograd.wrap_util as awrap                # noqa: E402

import pyautodiff.autograd as pag                 # noqa: E402
import pyautodiff.autograd.numpy as pnp           # noqa: E402
from pyautodiff.autograd import core as pcore     # noqa: E402
from pyautodiff.autograd import extend as pext    # noqa: E402
from pyautodiff.autograd import wrap_util as pwrap   # noqa: E402

X = onp.array([0.3, -1.2, 2.0])


def same(ours, theirs):
    """Same containers, same shapes, the same numbers."""
    if isinstance(theirs, (list, tuple, dict)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        keys = list(theirs) if isinstance(theirs, dict) else range(len(theirs))
        for k in keys:
            same(ours[k], theirs[k])
    else:
        assert onp.shape(ours) == onp.shape(theirs)
        onp.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-14)


def body(np):
    def f(p):
        return np.sin(p[0]) * np.sum(p[1]["w"] ** 2) + np.array([p[0], 1.0]) * p[0]
    return f


POINT = [0.7, {"w": X}]


# -- make_vjp(fun, x) and make_jvp(fun, x) ---------------------------------------------

def test_make_vjp_is_unary_and_returns_the_vjp_then_the_value():
    vjp, ans = pcore.make_vjp(lambda x: pnp.tanh(x) * x[::-1], X)
    avjp, aans = acore.make_vjp(lambda x: anp.tanh(x) * x[::-1], X)
    same(ans, aans)
    g = onp.array([1.0, -2.0, 0.5])
    same(vjp(g), avjp(g))
    # x a nest: the cotangent has its structure
    vjp, ans = pcore.make_vjp(body(pnp), POINT)
    avjp, aans = acore.make_vjp(body(anp), POINT)
    same(ans, aans)
    same(vjp(onp.array([1.0, 3.0])), avjp(onp.array([1.0, 3.0])))


def test_make_jvp_is_unary_and_its_jvp_returns_the_value_then_the_tangent():
    jvp = pcore.make_jvp(body(pnp), POINT)
    ajvp = acore.make_jvp(body(anp), POINT)
    v = [-0.4, {"w": onp.array([1.0, 0.5, 2.0])}]
    value, tangent = jvp(v)
    same(value, ajvp(v)[0])
    same(tangent, ajvp(v)[1])
    # against central differences, by hand for the first output
    eps = 1e-6
    plus = body(onp)([0.7 - 0.4 * eps, {"w": X + eps * v[1]["w"]}])
    minus = body(onp)([0.7 + 0.4 * eps, {"w": X - eps * v[1]["w"]}])
    onp.testing.assert_allclose(tangent, (plus - minus) / (2 * eps), rtol=1e-7)


def test_the_nary_operators_are_the_unary_ones_at_an_argnum():
    f = lambda a, b: pnp.sum(pnp.sin(a) * b)          # noqa: E731
    vjp, ans = pag.make_vjp(f, 1)(X, 2.0)
    uvjp, uans = pcore.make_vjp(lambda b: f(X, b), 2.0)
    assert ans == uans and vjp(1.0) == uvjp(1.0)
    assert pag.make_jvp(f, 1)(X, 2.0)(1.0) == pcore.make_jvp(lambda b: f(X, b), 2.0)(1.0)


def test_unary_to_nary_builds_autograds_operators():
    def grad_of(make_vjp):
        def grad(fun, x):
            vjp, _ = make_vjp(fun, x)
            return vjp(1.0)
        return grad

    ours = pwrap.unary_to_nary(grad_of(pcore.make_vjp))
    theirs = awrap.unary_to_nary(grad_of(acore.make_vjp))

    def f(x, y):
        return x ** 3 * y + y / x
    for argnum in (0, 1, (0, 1), [1, 0]):
        same(ours(f, argnum)(0.7, 1.8), theirs(f, argnum)(0.7, 1.8))
    assert ours(f, 1).__name__ == theirs(f, 1).__name__ == "grad_of_f_wrt_argnum_1"
    assert ours.__name__ == "grad"
    # the unary operator's own parameters follow fun and argnum
    scaled = pwrap.unary_to_nary(lambda fun, x, c, power=1: c * fun(x) ** power)
    assert scaled(f, 1, 2.0, power=2)(1.0, 3.0) == 2.0 * f(1.0, 3.0) ** 2
    with pytest.raises(TypeError, match="argnum must be an int or a tuple"):
        ours(f, "0")


# -- vector spaces -----------------------------------------------------------------------

VALUES = [2.0, X, onp.zeros((3, 2)), onp.array(1.5), 1.0j * onp.ones((2, 1)),
          [1.0, onp.zeros((2, 1))], (1.0, onp.zeros((2, 1))),
          {"a": 1.0, "b": onp.zeros((2, 1))},
          {"x": [0.0, onp.zeros((3, 1))], "y": ({"a": 0.0}, [0.0])}]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_vspace_is_autograds(value):
    vs, avs = pcore.vspace(value), acore.vspace(value)
    assert vs.size == avs.size and vs.iscomplex == avs.iscomplex
    same(vs.zeros(), avs.zeros())
    same(vs.ones(), avs.ones())
    basis, abasis = list(vs.standard_basis()), list(avs.standard_basis())
    assert len(basis) == vs.size
    for e, ae in zip(basis, abasis):
        same(e, ae)
    onp.random.seed(0)
    x, y = vs.randn(), vs.randn()
    onp.random.seed(0)
    same(x, avs.randn())
    same(y, avs.randn())
    same(vs.add(x, y), avs.add(x, y))
    same(vs.mut_add(None, y), avs.mut_add(None, y))
    same(vs.scalar_mul(x, -2.5), avs.scalar_mul(x, -2.5))
    same(vs.covector(x), avs.covector(x))
    same(vs.inner_prod(x, y), avs.inner_prod(x, y))
    assert vs == pcore.vspace(x) == pcore.vspace(vs.zeros())
    if not isinstance(value, (list, tuple, dict)):
        assert vs.shape == avs.shape and vs.dtype == avs.dtype and vs.ndim == avs.ndim
    assert repr(vs) == repr(avs)


def test_vspaces_differ_as_autograds_do():
    pairs = [(X, X[:2]), (X, X.astype(onp.float32)), (X, 1.0j * X), ([1.0], (1.0,)),
             ({"a": 1.0}, {"b": 1.0}), (2.0, onp.array(2.0)), (2.0, onp.float64(3.0))]
    for a, b in pairs:
        assert (pcore.vspace(a) == pcore.vspace(b)) == (acore.vspace(a) == acore.vspace(b))


def test_vspace_of_a_traced_value_and_of_a_named_tuple():
    seen = []
    pag.grad(lambda x: seen.append(pcore.vspace(x)) or pnp.sum(x ** 2))(X)
    assert seen == [pcore.vspace(X)]
    result = onp.linalg.eigh(onp.eye(2))
    vs = pcore.vspace(result)
    assert vs.size == acore.vspace(result).size == 6
    assert type(vs.zeros()) is type(result)
    with pytest.raises(TypeError, match="Can't find vector space"):
        pcore.vspace("a string")


def test_vspace_arithmetic_is_differentiable():
    vs = pcore.vspace(X)
    y = onp.array([1.0, 2.0, -1.0])
    same(pag.grad(lambda x: vs.inner_prod(x, y))(X), y)
    same(pag.grad(lambda x: vs.inner_prod(vs.scalar_mul(vs.add(x, y), 3.0), x))(X),
         3.0 * (2 * X + y))


def test_sum_outgrads_adds_as_autograds():
    gs = [[1.0, X], [2.0, 2 * X], [-0.5, X ** 2]]
    same(pcore.sum_outgrads(gs), acore.sum_outgrads(gs))


# -- the rule registries --------------------------------------------------------------------

def _cube(ext):
    @ext.primitive
    def cube(x):
        return x ** 3
    return cube


def test_primitive_vjps_and_jvps_hold_the_rules():
    cube = _cube(pext)
    assert cube not in pcore.primitive_vjps
    pext.defvjp(cube, lambda ans, x: lambda g: 3 * g * x ** 2)
    pext.defjvp(cube, lambda g, ans, x: 3 * g * x ** 2)
    assert pcore.primitive_vjps[cube] is pext.primitive_vjps[cube]
    assert pag.grad(cube)(2.0) == 12.0 and pag.deriv(cube)(2.0) == 12.0
    # a rule removed from the registry is gone (an error, not a zero) ...
    vjp_rule = pcore.primitive_vjps.pop(cube)
    with pytest.raises(NotImplementedError, match="VJP of cube"):
        pag.grad(cube)(2.0)
    assert pag.deriv(cube)(2.0) == 12.0
    # ... and one set there, in autograd's joint form, is the rule
    pcore.primitive_vjps[cube] = vjp_rule
    assert pag.grad(cube)(2.0) == 12.0
    theirs = _cube(aext)
    joint = lambda argnums, ans, args, kwargs: lambda g: [2 * g * args[0]]   # noqa: E731
    pcore.primitive_vjps[cube] = joint
    acore.primitive_vjps[theirs] = joint
    assert pag.grad(cube)(2.0) == autograd.grad(theirs)(2.0) == 4.0


def test_defvjp_takes_argnums_and_no_other_keyword():
    cube = _cube(pext)
    pext.defvjp(cube, lambda ans, x: lambda g: 3 * g * x ** 2, argnums=[0])
    assert pag.grad(cube)(2.0) == 12.0
    with pytest.raises(TypeError, match="unexpected keyword argument 'argnum'"):
        pext.defvjp(cube, lambda ans, x: lambda g: g, argnum=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'argnum'"):
        pext.defjvp(cube, lambda g, ans, x: g, argnum=0)


def test_getval_and_isbox_are_tracers():
    seen = []
    pag.grad(lambda x: seen.append((pcore.isbox(x), pcore.getval(x))) or x * x)(3.0)
    assert seen == [(True, 3.0)] and not pcore.isbox(3.0)


# -- autograd.core.primitive's deprecated rule methods -----------------------------------------

def _old_style_mul(core):
    @core.primitive
    def mul(x, y):
        return x * y
    return mul


def test_deprecated_defgrad_and_defvjp_give_the_rules():
    x, y = onp.array([[1.0, 2.0], [3.0, -1.0]]), onp.array([[0.5, 1.5], [-2.0, 1.0]])
    for how in ("defgrad", "defvjp"):
        ours, theirs = _old_style_mul(pcore), _old_style_mul(acore)
        for f in (ours, theirs):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if how == "defgrad":
                    f.defgrad(lambda ans, x, y: lambda g: y * g)
                    f.defgrad(lambda ans, x, y: lambda g: x * g, argnum=1)
                else:
                    f.defvjp(lambda g, ans, vs, gvs, x, y: y * g)
                    f.defvjp(lambda g, ans, vs, gvs, x, y: x * g, argnum=1)
            assert len(caught) == 2
        for argnum in (0, 1):
            same(pag.grad(lambda a, b: pnp.sum(ours(a, b) ** 2), argnum)(x, y),
                 autograd.grad(lambda a, b: anp.sum(theirs(a, b) ** 2), argnum)(x, y))


def test_deprecated_methods_warn_and_old_defvjp_gets_the_vspaces():
    mul = _old_style_mul(pcore)
    spaces = []

    def rule(g, ans, vs, gvs, x, y):
        spaces.append((vs, gvs))
        return y * g
    with pytest.warns(DeprecationWarning, match=r"f.defvjp\(vjp, argnum\) is deprecated"):
        mul.defvjp(rule)
    assert pag.grad(lambda a: pnp.sum(mul(a, 2.0 * X)))(X).tolist() == (2.0 * X).tolist()
    assert spaces == [(pcore.vspace(X), pcore.vspace(X))]
    with pytest.warns(DeprecationWarning, match="defvjp_is_zero"):
        mul.defvjp_is_zero([1])
    # argument 0's rule is kept, argument 1 has none
    assert pag.grad(lambda b: pnp.sum(mul(X, b)))(X).tolist() == [0.0, 0.0, 0.0]
    assert pag.grad(lambda a: pnp.sum(mul(a, X)))(X).tolist() == X.tolist()


def test_core_has_only_autograd_cores_names():
    assert set(pcore.__all__) <= set(dir(acore))
    for name in ("make_vjp", "make_jvp", "vspace", "VSpace", "primitive_vjps",
                 "primitive_jvps", "defvjp", "defjvp", "primitive"):
        assert name in pcore.__all__


def test_a_primitive_goes_with_its_rules():
    # the registries hold their primitives weakly, and no rule holds its
    # own primitive: primitives made on the fly (checkpoint's) do not pile up
    import gc
    gc.collect()
    before = (len(pcore.primitive_vjps), len(pcore.primitive_jvps))
    for _ in range(3):
        cube = _cube(pext)
        pext.defvjp(cube, lambda ans, x: lambda g: 3 * g * x ** 2)
        pext.defjvp(cube, "same")
        old = _old_style_mul(pcore)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            old.defgrad(lambda ans, x, y: lambda g: y * g)
        lin = _cube(pext)
        pext.def_linear(lin)
        checked = pag.checkpoint(lambda x: pnp.sin(x) * x)
        assert pag.grad(checked)(0.5) == pytest.approx(onp.cos(0.5) * 0.5 + onp.sin(0.5))
    del cube, old, lin, checked
    gc.collect()
    assert (len(pcore.primitive_vjps), len(pcore.primitive_jvps)) == before
