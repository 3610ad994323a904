"""The one module that talks to the compiled C core.

It imports ``pyautodiff._ad_core``, checks that the build matches this
package, reads the op table from the C enum, owns every C allocation
(``ffi.gc``) and turns C status codes into Python exceptions.
"""
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
SWEEP_ACCUM = lib.AD_SWEEP_ACCUM
SWEEP_INPLACE = lib.AD_SWEEP_INPLACE

# The Python side packs one record per operation in this layout; it must be
# the C struct ad_record byte for byte.
RECORD_FORMAT = "@iiiidd"
RECORD_SIZE = ffi.sizeof("ad_record")


class TapeError(RuntimeError):
    """A Value or Array was used with a tape it cannot be used with: one that
    was released, or one that belongs to another thread."""


_EXCEPTIONS = {
    lib.AD_ENOMEM: MemoryError,
    lib.AD_EINVAL: ValueError,
    lib.AD_ERANGE: IndexError,
    lib.AD_ENONFINITE: FloatingPointError,
}


def check(status, ctape):
    """Raise the Python exception for a C status code (no-op for AD_OK)."""
    if status != lib.AD_OK:
        message = ffi.string(ctape.errmsg).decode(errors="replace")
        raise _EXCEPTIONS.get(status, RuntimeError)(message)


def new_tape():
    """A fresh C tape, freed when the returned cdata is collected."""
    ctape = lib.ad_tape_new()
    if ctape == ffi.NULL:
        raise MemoryError("out of memory allocating a tape")
    return ffi.gc(ctape, lib.ad_tape_free)
