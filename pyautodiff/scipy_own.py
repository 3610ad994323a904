"""SciPy's own functions written in Python, given a value that carries a
derivative.

scipy.special's ufuncs reach pyautodiff through NumPy's dispatch
(numpy_interop).  The functions SciPy writes in Python -- logsumexp,
softmax, log_softmax, polygamma, multigammaln, the methods of every
scipy.stats distribution -- cannot: NumPy never sees them called.  They
take their arguments in with np.asarray or float() and compute with what
they get: plain numbers, whose derivative is silently lost; or, inside a
derivative, an object array of traced numbers, on which most of SciPy's
code fails with NumPy's messages about ufunc loops, far from the cause
(softmax's, NumPy's functions only, computes right with it).

pyautodiff.scipy_special and pyautodiff.scipy_stats hold the differentiable
ones with SciPy's signatures.  SciPy's cannot be routed to them: replacing
SciPy's module attributes would reach only the programs that look them up
after pyautodiff did so (``from scipy.special import logsumexp`` binds
SciPy's own).  Instead a TypeError names the SciPy function the program
called and pyautodiff's to call (or says that pyautodiff has no rule):
refuse() where SciPy's code takes a value that carries a derivative in as
plain numbers (float(), np.asarray of an Array), failure() where it fails
on traced numbers inside a derivative (Trace asks it).
"""
import inspect
import sys

from .detach import DetachError, differentiated, moves
from .tape_state import NO_GRAD, recording_tape

# The SciPy packages whose functions are refused: every function of
# scipy.special (its Python ones: its ufuncs never run Python frames) and
# the methods of scipy.stats' distributions
PACKAGES = ("scipy.special", "scipy.stats")


class ScipyCodeError(TypeError):
    """SciPy's code written in Python, given a value that carries a
    derivative."""


def refuse(x, depth):
    """Raise TypeError where the code depth frames above refuse's caller
    is SciPy's (or NumPy's Python code that SciPy called) inside a
    function of scipy.special or a scipy.stats distribution's method, and
    takes in x as plain numbers while x carries a derivative."""
    if "scipy" not in sys.modules:          # the common cases first
        return
    frame = sys._getframe(depth + 1)
    if not _module(frame).startswith(("scipy.", "numpy")):
        return
    called = _called(frame)
    if called is None or recording_tape() is NO_GRAD or \
            not (differentiated(x) or moves(x)):
        return
    package, distribution, name, _ = called
    if package == "scipy.special" or distribution is not None:
        raise _error(package, distribution, name)


def reported(error, holds_traced):
    """What to raise instead of error (a TypeError or ValueError) that
    SciPy's code or NumPy's conversions raised on traced values
    (holds_traced tells which values are): pyautodiff's own error that
    NumPy reported as one of its own (raised_in_numpy), or SciPy's failure
    named (failure); None for any other error."""
    if isinstance(error, ScipyCodeError):
        return error
    ours = raised_in_numpy(error, (ScipyCodeError, DetachError, NotImplementedError))
    if ours is not None:
        return type(ours)(*ours.args)
    return failure(error, holds_traced) if isinstance(error, TypeError) else None


def raised_in_numpy(error, kinds):
    """The error of one of kinds (pyautodiff's) that NumPy reports as error:
    raised while NumPy filled an array from array-like elements (float()
    of the 0-d Arrays in an object array of traced numbers, which SciPy's
    code makes), it becomes NumPy's "ValueError: setting an array element
    with a sequence", ours its cause.  None where error is no such
    report."""
    cause = error.__cause__ if isinstance(error, ValueError) else None
    while cause is not None and not isinstance(cause, kinds):
        cause = cause.__cause__
    return cause


def failure(error, holds_traced):
    """The TypeError to raise instead of error, which SciPy's code (or
    NumPy's, called by it) raised inside a public function of
    scipy.special or scipy.stats given traced values (holds_traced tells):
    inside a derivative np.asarray makes a traced Array, a traced number
    or a list of them an object array, which SciPy's ufuncs refuse.  None
    for any other error."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    # (raised by NumPy's functions, or by pyautodiff's dispatch of them)
    called = _called(tb.tb_frame, _is_ours) if tb is not None else None
    if called is None or called[0] not in PACKAGES:
        return None
    package, distribution, name, frame = called
    if not any(map(holds_traced, frame.f_locals.values())):
        return None
    return _error(package, distribution, name)


def _module(frame):
    return frame.f_globals.get("__name__") or ""


def _is_numpy(module):
    return module == "numpy" or module.startswith("numpy.")


def _is_ours(module):
    return module.startswith(__name__.rpartition(".")[0] + ".")


def _called(frame, past=lambda module: False):
    """(package, distribution or None, name, its frame) of the public SciPy
    function running at frame: the outermost public one among the SciPy
    frames up the stack from it (past NumPy's own Python functions SciPy
    called, and the modules past tells); None where the code at frame is
    not SciPy's."""
    while frame is not None and (_is_numpy(_module(frame)) or past(_module(frame))):
        frame = frame.f_back
    found = None
    while frame is not None and _module(frame).startswith("scipy."):
        public = _public(frame)
        if public is not None:
            found = public + (frame,)
        frame = frame.f_back
    return found


def _public(frame):
    """frame's function as (package, distribution, name) where it is
    public: a function of scipy.special & co., or a method of a
    scipy.stats distribution (frozen ones too); else None."""
    name = frame.f_code.co_name
    if name.startswith(("_", "<")):
        return None
    parts = []
    for part in _module(frame).split("."):      # scipy.stats._continuous_distns
        if part.startswith("_"):
            break
        parts.append(part)
    package = ".".join(parts)
    owner = frame.f_locals.get("self")
    if owner is None:
        module = sys.modules.get(package)
        return (package, None, name) if hasattr(module, name) else None
    if package == "scipy.stats":
        distribution = _distribution(owner)
        if distribution is not None:
            return package, distribution, name
    return None


def _distribution(owner):
    """The name under which scipy.stats holds owner's distribution (owner
    the distribution or a frozen one), or None if it is no distribution."""
    dist = getattr(owner, "dist", None) or getattr(owner, "_dist", None) or owner
    name = getattr(dist, "name", None)
    if not isinstance(name, str):           # the multivariate ones have none
        name = type(dist).__name__.removesuffix("_gen")
    public = getattr(sys.modules.get("scipy.stats"), name, None)
    return name if public is not None and not isinstance(public, type) else None


def _not_differentiable(what):
    return (f"{what} is SciPy's code written in Python, which NumPy cannot hand "
            "a traced value to: it computes with plain numbers taken out of "
            "it (or fails on them), so no derivative can flow through it")


# pyautodiff's modules of SciPy's functions, by SciPy's package: they
# register themselves (they import the modules that import this one)
OURS = {}


def register(package, module):
    OURS[package] = module


def _error(package, distribution, name):
    """The TypeError for SciPy's function (package.name, or a method of a
    scipy.stats distribution) given a value that carries a derivative."""
    scipy_special, scipy_stats = OURS["scipy.special"], OURS["scipy.stats"]
    if distribution is not None:
        what = f"scipy.stats.{distribution}.{name}"
        ours = getattr(getattr(scipy_stats, distribution, None), name, None)
    else:
        what = f"{package}.{name}"
        ours = getattr(scipy_special, name, None) if package == "scipy.special" else None
    if package == "scipy.stats":
        held = "pyautodiff.scipy_stats holds " + "; ".join(
            f"{d} ({', '.join(_methods(getattr(scipy_stats, d)))})" for d in scipy_stats.__all__)
    else:
        held = "pyautodiff.scipy_special holds " + ", ".join(scipy_special.__all__)
    if ours is None:
        return ScipyCodeError(f"{_not_differentiable(what)}, and pyautodiff has no "
                              f"derivative rule for it ({held}); use ad.custom_op "
                              "to give it one")
    if distribution is not None:
        call = f"pyautodiff.scipy_stats.{distribution}.{name} (scipy.stats' " \
            "signature; a frozen distribution's parameters as arguments)"
    else:
        call = f"pyautodiff.scipy_special.{name}{_signature(ours)} (SciPy's signature)"
    return ScipyCodeError(f"{_not_differentiable(what)}. Call {call} instead, which "
                          "records the derivative; pass plain numbers (x.data) "
                          "where a constant is meant")


def _signature(fn):
    # (a row's arguments are its names: its __call__ takes *args)
    return f"({', '.join(fn.names)})" if hasattr(fn, "names") else inspect.signature(fn)


def _methods(namespace):
    return sorted(k for k in vars(namespace) if not k.startswith("_"))
