"""The engines under comparison, each loaded only if it imports.

A backend is a namespace with the scalar ``Value`` class, micrograd-style
``MLP`` (or None) and ``unary``, the nonlinearity the scalar chain uses:
tanh where the engine has it, micrograd's API has only relu.  Engines that
only run the array problems (NumPy by hand, autograd, torch) have
``scalar=False``; bench/arrays.py holds their code by name.
"""
import importlib.metadata
import math
import operator
import sys
from dataclasses import dataclass
from typing import Callable, Optional


@dataclass
class Backend:
    name: str
    Value: Optional[type]     # None for the no-AD float baseline
    MLP: Optional[type]
    unary: Callable           # x -> tanh(x) or relu(x) on this engine's scalars
    unary_name: str           # "tanh" or "relu"
    version: str = ""
    moons_note: str = ""      # which MLP the moons step uses, or why there is none
    scalar: bool = True       # runs the scalar problems (else only array ones)


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


def _floats():
    # The no-AD baseline: the same chain on plain floats, what the Python
    # loop and arithmetic cost before any recording.
    return Backend("floats (no AD)", None, None, math.tanh, "tanh",
                   moons_note="no gradients to train with")


def _pure():
    from pyautodiff.testing.pure import MLP, Value
    return Backend("pure", Value, MLP, operator.methodcaller("tanh"), "tanh")


def _micrograd():
    from micrograd.engine import Value
    from micrograd.nn import MLP
    # micrograd's backward() sorts the graph recursively, one Python frame per
    # node along the deepest path; a 100k-op chain needs a deeper limit.
    # (CPython >= 3.11 does not use the C stack for these frames.)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1_000_000))
    return Backend("micrograd", Value, MLP, operator.methodcaller("relu"), "relu",
                   _version("micrograd"))


def _pyautodiff():
    import pyautodiff as ad
    ad.Value(1.0)  # a stale or half-built core fails here, not mid-benchmark
    try:
        # The scalar MLP is the micrograd drop-in's (ad.nn is array-based).
        from pyautodiff.micrograd.nn import MLP
    except ImportError:
        MLP = None
    return Backend("pyautodiff", ad.Value, MLP, operator.methodcaller("tanh"), "tanh",
                   getattr(ad, "__version__", "") or _version("pyautodiff"),
                   moons_note="pyautodiff.micrograd.nn.MLP")


def _pyautodiff_micrograd():
    from pyautodiff.micrograd.engine import Value
    Value(1.0)
    # Its MLP is what the pyautodiff row's moons step already measures.
    return Backend("pyautodiff.micrograd", Value, None, operator.methodcaller("relu"),
                   "relu", moons_note="its MLP is measured in the pyautodiff row")


def _array_engine(name, module=None):
    # Engines for the array problems only (bench/arrays.py has their code).
    def load():
        if module:
            __import__(module)
        return Backend(name, None, None, None, "", _version(module or "numpy"),
                       scalar=False)
    return load


LOADERS = {
    "floats (no AD)": _floats,
    "pure": _pure,
    "micrograd": _micrograd,
    "pyautodiff": _pyautodiff,
    "pyautodiff.micrograd": _pyautodiff_micrograd,
    # the same array code recorded once (before the timer) and replayed in
    # C: what jax.jit is to jax
    "pyautodiff (recorded)": _array_engine("pyautodiff (recorded)", "pyautodiff"),
    "numpy (by hand)": _array_engine("numpy (by hand)"),
    "autograd": _array_engine("autograd", "autograd"),
    "torch": _array_engine("torch", "torch"),
    # symbolic AD with a C virtual machine: the replay-chain's reference
    "casadi": _array_engine("casadi", "casadi"),
}


def load_backends(names=None):
    """Returns (loaded backends, {name: why it was skipped})."""
    loaded, skipped = [], {}
    for name, load in LOADERS.items():
        if names and name not in names:
            continue
        try:
            loaded.append(load())
        except Exception as e:  # any failure to import or build means "skip"
            skipped[name] = f"{type(e).__name__}: {e}".splitlines()[0]
    return loaded, skipped
