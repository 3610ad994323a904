"""The one module that talks to the compiled C core.

It imports ``pyautodiff._ad_core``, checks that the build matches this
package, reads the op table from the C enum, owns every C allocation
(``ffi.gc``) and turns C status codes into Python exceptions.
"""
import itertools
import weakref

from ._version import __version__

try:
    from ._ad_core import ffi, lib
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "pyautodiff's C core (pyautodiff._ad_core) is not built. Install the "
        "package with 'pip install .' (or 'pip install -e .' for development) "
        "from a checkout, with a C compiler available."
    ) from exc

_built = ffi.string(lib.ad_version()).decode()
if _built != __version__:
    raise ImportError(
        f"pyautodiff's C core was built for version {_built} but the Python "
        f"package is {__version__}: the build is stale. Reinstall with "
        "'pip install .' (or 'pip install -e .')."
    )

# Op codes by name, from the C enum itself ('AD_MUL' -> OPS['MUL']).
OPS = {name[3:]: code for code, name in ffi.typeof("enum ad_op").elements.items()
       if name != "AD_NUM_OPS"}
NUM_OPS = lib.AD_NUM_OPS
OP_NAMES = [ffi.string(lib.ad_op_name(code)).decode() for code in range(NUM_OPS)]
OP_ARITY = [lib.ad_op_arity(code) for code in range(NUM_OPS)]
MAX_ENTRIES = lib.AD_MAX_ENTRIES
FLAG_GRAD_FLOAT = lib.AD_FLAG_GRAD_FLOAT
FLAG_VALUE_INT = lib.AD_FLAG_VALUE_INT
FLAG_IMM_INT = lib.AD_FLAG_IMM_INT
FLAG_VARIABLE = lib.AD_FLAG_VARIABLE
FLAG_HAS_GRAD = lib.AD_FLAG_HAS_GRAD
SWEEP_ACCUM = lib.AD_SWEEP_ACCUM
SWEEP_INPLACE = lib.AD_SWEEP_INPLACE
SWEEP_LEAVES = lib.AD_SWEEP_LEAVES

# The Python side packs one record per operation in this layout; it must be
# the C struct ad_record byte for byte.
RECORD_FORMAT = "@iiiidd"
RECORD_SIZE = ffi.sizeof("ad_record")


class TapeError(RuntimeError):
    """A Value or Array was used with a tape it cannot be used with: one that
    was released, or another tape of this thread's that does not enclose
    the one recording."""


_EXCEPTIONS = {
    lib.AD_ENOMEM: MemoryError,
    lib.AD_EINVAL: ValueError,
    lib.AD_ERANGE: IndexError,
    lib.AD_ENONFINITE: FloatingPointError,
    lib.AD_ECALLBACK: RuntimeError,
}


# AD_EXTERN entries: the C sweeps call these with the tape's extern_ctx (a
# key into _CALLBACK_OWNERS) and the entry's index, and they call the step
# of that sweep (extern.py's) with the owner and the index.  An exception
# cannot cross C: it is kept on the owner (_keep_error) and re-raised after
# the sweep returns.
_CALLBACK_OWNERS = weakref.WeakValueDictionary()
_STEPS = {}
_next_key = itertools.count(1)


def register_callbacks(ctape, owner, steps):
    """Route ctape's extern callbacks to steps["forward"|"reverse"|
    "tangent"|"second"](owner, i)."""
    key = next(_next_key)
    _CALLBACK_OWNERS[key] = owner
    _STEPS.update(steps)          # (the same steps for every tape)
    ctape.extern_ctx = ffi.cast("void *", key)
    ctape.extern_forward = lib.pyautodiff_extern_forward
    ctape.extern_reverse = lib.pyautodiff_extern_reverse
    ctape.extern_tangent = lib.pyautodiff_extern_tangent
    ctape.extern_second = lib.pyautodiff_extern_second


def _owner(ctx):
    return _CALLBACK_OWNERS.get(int(ffi.cast("intptr_t", ctx)))


def _dispatch(ctx, entry, sweep):
    owner = _owner(ctx)
    if owner is None:
        return 1
    _STEPS[sweep](owner, entry)
    return 0


def _keep_error(exc_type, exc, tb):
    """cffi's onerror for the callbacks below: an exception out of one is
    kept on its owner, to be re-raised by check, and the sweep stops (1).
    This is the one place that can take a KeyboardInterrupt: a Ctrl-C that
    lands while the sweep runs in C is raised by Python at the callback's
    first instruction, before any try inside it.  The owner is found from
    the callback's own argument ctx."""
    ctx = tb.tb_frame.f_locals.get("ctx") if tb is not None else None
    owner = _owner(ctx) if ctx is not None else None
    if owner is None:
        return None     # (cffi reports it; error=1 still stops the sweep)
    if owner.callback_error is None:
        # (with where it was raised: an exception raised by a signal
        # handler comes without it)
        owner.callback_error = exc.with_traceback(tb)
    return 1


@ffi.def_extern(error=1, onerror=_keep_error)
def pyautodiff_extern_forward(ctx, entry):
    return _dispatch(ctx, entry, "forward")


@ffi.def_extern(error=1, onerror=_keep_error)
def pyautodiff_extern_reverse(ctx, entry):
    return _dispatch(ctx, entry, "reverse")


@ffi.def_extern(error=1, onerror=_keep_error)
def pyautodiff_extern_tangent(ctx, entry):
    return _dispatch(ctx, entry, "tangent")


@ffi.def_extern(error=1, onerror=_keep_error)
def pyautodiff_extern_second(ctx, entry):
    return _dispatch(ctx, entry, "second")


def check(status, ctape, owner=None):
    """Raise the Python exception for a C status code (no-op for AD_OK); an
    extern rule's own exception comes back as itself."""
    if status == lib.AD_ECALLBACK and owner is not None and owner.callback_error:
        exc, owner.callback_error = owner.callback_error, None
        try:
            raise exc
        finally:
            del exc     # this frame, in exc's traceback, would keep exc: a cycle
    if status != lib.AD_OK:
        message = ffi.string(ctape.errmsg).decode(errors="replace")
        raise _EXCEPTIONS.get(status, RuntimeError)(message)


def new_tape():
    """A fresh C tape, freed when the returned cdata is collected."""
    ctape = lib.ad_tape_new()
    if ctape == ffi.NULL:
        raise MemoryError("out of memory allocating a tape")
    return ffi.gc(ctape, lib.ad_tape_free)


def new_lbfgs(n, m, max_bytes=-1):
    """The C minimizer's state for n variables keeping m pairs
    (csrc/lbfgs.h), freed when collected.  max_bytes >= 0 caps its
    allocation (fault injection)."""
    o = lib.ad_lbfgs_new(n, m, max_bytes)
    if o == ffi.NULL:
        mib = 8.0 * n * (2 * m + 5) / 2 ** 20
        raise MemoryError(f"out of memory for L-BFGS with {n} variables and "
                          f"m = {m} pairs ({mib:.3g} MiB)")
    return ffi.gc(o, lib.ad_lbfgs_free)
