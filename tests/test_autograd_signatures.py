"""pyautodiff.autograd's modules against HIPS autograd's, name by name: a
name that both a module of pyautodiff.autograd and autograd's module of
the same name define has autograd's signature (parameter names, kinds and
defaults), so that a program written for autograd calls it the same way --
and a module added under one of autograd's names cannot give one of its
names another meaning (make_vjp(fun, argnum=0) where autograd.core's is
make_vjp(fun, x)).

autograd's own wrappers hide what they wrap (a primitive's signature is
(*args, **kwargs)), so both sides are compared as a caller sees them: an
n-ary operator made by unary_to_nary as (fun, argnum=0, <the unary
operator's further parameters>), a primitive as the function it wraps.
The few deliberate differences are listed below, each with its reason.
"""
import importlib
import inspect
import pkgutil
import types

import numpy as onp
import pytest

autograd = pytest.importorskip("autograd")
import autograd.misc.optimizers as aopt          # noqa: E402
import autograd.tracer as atracer                # noqa: E402
import autograd.wrap_util as awrap               # noqa: E402

import pyautodiff.autograd as pag                # noqa: E402
from pyautodiff.autograd import wrap_util as pwrap   # noqa: E402

P = inspect.Parameter


# -- signatures as a caller sees them ----------------------------------------------------

def _closure(f, name):
    return inspect.getclosurevars(f).nonlocals[name]


def _nary(f):
    """An n-ary operator's signature: (fun, argnum=0, *the unary
    operator's parameters after (fun, x))."""
    unary = inspect.signature(_closure(f, "unary_operator"))
    return inspect.Signature([P("fun", P.POSITIONAL_OR_KEYWORD),
                              P("argnum", P.POSITIONAL_OR_KEYWORD, default=0),
                              *list(unary.parameters.values())[2:]])


# the wrappers (by their code) whose own signature is a catch-all, and what
# a caller's arguments reach
_UNWRAP = {
    awrap.unary_to_nary(lambda fun, x: None).__code__: _nary,
    pwrap.unary_to_nary(lambda fun, x: None).__code__: _nary,
    atracer.primitive(lambda: None).__code__: lambda f: signature(f.fun),
    atracer.notrace_primitive(lambda: None).__code__:
        lambda f: signature(_closure(f, "f_raw")),
    aopt.unflatten_optimizer(lambda grad, x, callback: None).__code__:
        lambda f: signature(_closure(f, "optimize")),
}


def signature(f):
    """f's signature as its callers see it; None where Python has none (a
    builtin type)."""
    unwrap = _UNWRAP.get(getattr(f, "__code__", None))
    if unwrap is not None:
        return unwrap(f)
    try:
        return inspect.signature(f)
    except (TypeError, ValueError):
        return None


def _parameters(sig):
    if sig is None:
        return None
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def same_signature(ours, theirs):
    try:
        return _parameters(signature(ours)) == _parameters(signature(theirs))
    except ValueError:          # (a default whose == is not a bool)
        return False


# -- the deliberate differences ------------------------------------------------------------

_CONTAINERS = ("Python's own container types: pyautodiff traces the numbers in "
               "plain containers, so autograd's boxing subclasses are not needed; "
               "tuple(xs), list(xs) and dict(...) build the same containers")

ALLOWED = {
    **{(module, name): _CONTAINERS for module in ("autograd", "autograd.builtins")
       for name in ("tuple", "list", "dict")},
    ("autograd", "make_ggnvp"):
        "g's default is a function in both, ½ Σ y² over the last axis: "
        "compared by value in test_make_ggnvp_default_g_is_autograds",
    ("autograd.test_util", "check_grads"):
        "modes' default is the tuple ('fwd', 'rev'), autograd's the list "
        "['fwd', 'rev'] (a mutable default)",
    ("autograd.scipy.signal", "convolve"):
        "also takes scipy.signal.convolve's method=; dot_axes' default is the "
        "same pair of empty axes, as a tuple",
    ("autograd.scipy.linalg", "sqrtm"):
        "hands scipy's keywords (disp=, blocksize=, deprecated there) to "
        "scipy.linalg.sqrtm",
    ("autograd.scipy.special", "polygamma"):
        "takes n and x by position only, as the other scipy.special functions",
}


def _numpys_own(module, name, ours):
    """In the numpy modules, ours is NumPy's own function (autograd's is a
    wrapper of its own, whose calls NumPy's takes: concatenate(arr_list,
    axis=0), the integer types' (*args, **kwargs) ...)."""
    if not module.startswith("autograd.numpy"):
        return False
    numpy_module = importlib.import_module("numpy" + module[len("autograd.numpy"):])
    own = getattr(numpy_module, name, None)
    return own is not None and inspect.unwrap(ours) is inspect.unwrap(own)


def _ufunc_inputs(module, name, ours, theirs):
    """scipy.special's ufuncs: ours take the ufunc's inputs by position (its
    out=, where=, dtype= ... have no derivatives)."""
    ufunc = getattr(theirs, "fun", None)
    if module != "autograd.scipy.special" or not isinstance(ufunc, onp.ufunc):
        return False
    kinds = [p.kind for p in signature(ours).parameters.values()]
    return kinds == [P.VAR_POSITIONAL] or kinds == [P.POSITIONAL_OR_KEYWORD] * ufunc.nin


def _scipy_stats_forward(module, name, ours):
    """scipy.stats' functions: ours take any arguments and hand plain ones
    to scipy.stats' own (imported at the first call, so its signature is
    not there at import), traced ones to a composite with scipy's
    parameters."""
    return (module.startswith("autograd.scipy.stats.")
            and _parameters(signature(ours)) == [("args", P.VAR_POSITIONAL, P.empty),
                                                 ("kwargs", P.VAR_KEYWORD, P.empty)])


def allowed(module, name, ours, theirs):
    return ((module, name) in ALLOWED or _numpys_own(module, name, ours)
            or _ufunc_inputs(module, name, ours, theirs)
            or _scipy_stats_forward(module, name, ours))


# -- the walk -------------------------------------------------------------------------------

def _public_modules(package):
    names = [package.__name__]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def _import(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def module_pairs():
    """(autograd's module name, autograd's module, ours) for every module
    that autograd and pyautodiff.autograd both have, found from both sides."""
    names = set(_public_modules(autograd))
    names |= {name[len("pyautodiff."):] for name in _public_modules(pag)}
    pairs = []
    for name in sorted(names):
        theirs, ours = _import(name), _import("pyautodiff." + name)
        if theirs is not None and ours is not None:
            pairs.append((name, theirs, ours))
    return pairs


def _public_names(module):
    return {n for n in dir(module) if not n.startswith("_")}


def mismatches(module_name, theirs, ours):
    """The names both modules define, callable on either side, whose
    signatures differ (and are not allowed to)."""
    found = []
    for name in sorted(_public_names(theirs) | _public_names(ours)):
        if not (hasattr(theirs, name) and hasattr(ours, name)):
            continue
        a, b = getattr(theirs, name), getattr(ours, name)
        if isinstance(a, types.ModuleType) or not (callable(a) or callable(b)):
            continue
        if not same_signature(b, a) and not allowed(module_name, name, b, a):
            found.append(f"{module_name}.{name}: autograd's {signature(a)}, "
                         f"ours {signature(b)}")
    return found


PAIRS = module_pairs()


def test_the_walk_covers_autograds_public_modules():
    compared = {name for name, _, _ in PAIRS}
    assert {"autograd", "autograd.core", "autograd.extend", "autograd.builtins",
            "autograd.tracer", "autograd.wrap_util", "autograd.test_util",
            "autograd.misc", "autograd.misc.optimizers", "autograd.misc.flatten",
            "autograd.misc.fixed_points", "autograd.misc.tracers",
            "autograd.numpy", "autograd.numpy.random", "autograd.numpy.linalg",
            "autograd.numpy.fft", "autograd.scipy", "autograd.scipy.special",
            "autograd.scipy.linalg", "autograd.scipy.signal",
            "autograd.scipy.integrate", "autograd.scipy.stats",
            "autograd.scipy.stats.norm", "autograd.scipy.stats.multivariate_normal",
            "autograd.scipy.stats.dirichlet"} <= compared


@pytest.mark.parametrize("module_name, theirs, ours", PAIRS, ids=[p[0] for p in PAIRS])
def test_every_shared_name_has_autograds_signature(module_name, theirs, ours):
    assert mismatches(module_name, theirs, ours) == []


def test_the_check_catches_another_meaning():
    # a core whose make_vjp is the argnum operator, and a wrap_util whose
    # unary_to_nary takes one more parameter
    core = types.ModuleType("core")
    core.make_vjp = pag.make_vjp
    wrap_util = types.ModuleType("wrap_util")
    wrap_util.unary_to_nary = lambda unary_operator, argnums: None
    assert mismatches("autograd.core", autograd.core, core) == [
        "autograd.core.make_vjp: autograd's (fun, x), ours (fun, argnum=0)"]
    assert len(mismatches("autograd.wrap_util", awrap, wrap_util)) == 1
    # and an n-ary operator is seen through to its unary operator
    assert str(signature(autograd.test_util.check_grads)) == \
        "(fun, argnum=0, modes=['fwd', 'rev'], order=2)"
    assert str(signature(autograd.make_vjp)) == "(fun, argnum=0)"


def test_the_allowed_differences_are_still_differences():
    # an entry that no longer differs is stale: remove it
    for (module_name, name) in ALLOWED:
        theirs = importlib.import_module(module_name)
        ours = importlib.import_module("pyautodiff." + module_name)
        assert not same_signature(getattr(ours, name), getattr(theirs, name)), name


def test_make_ggnvp_default_g_is_autograds():
    g_ours = inspect.signature(pag.make_ggnvp).parameters["g"].default
    g_theirs = inspect.signature(autograd.make_ggnvp).parameters["g"].default
    y = onp.random.default_rng(0).normal(size=(3, 4))
    onp.testing.assert_allclose(g_ours(y), g_theirs(y), rtol=1e-15)


def test_numpys_callables_are_there():
    # every NumPy function, ufunc and type that autograd's numpy modules
    # offer, and autograd's own make_diagonal
    for name, theirs, ours in PAIRS:
        if not name.startswith("autograd.numpy"):
            continue
        numpy_module = importlib.import_module("numpy" + name[len("autograd.numpy"):])
        offered = {n for n in _public_names(theirs) if callable(getattr(theirs, n))
                   and n in getattr(numpy_module, "__all__", ())}
        missing = sorted(n for n in offered if not hasattr(ours, n))
        assert missing == [], name
    assert callable(importlib.import_module("pyautodiff.autograd.numpy").make_diagonal)
