"""Code generated from the op table (pyautodiff/ops.py) by
``python -m pyautodiff.codegen``: every module here but this one.

They hold the hottest code of the package, the operators of Value and
Array with the recording steps written out in each, as files that one can
read, step through and find in tracebacks, and that import without
compiling anything.

A generated function is a piece of the module that owns it (tape.py,
value.py, array.py), as a generated C file is #included into another: it
refers to that module's names (the class, the recording state, the slow
paths) and the owner makes it its own with link(), which gives the
function's code the owner's globals.  So the generated modules import
nothing, and add no import cycle.

Each generated module lists what it holds (OPERATORS, VALUES, ...), and
its owner links what is listed: with files older than ops.py (a row just
added) the package still imports, and the generator, which imports the
package, still runs; tests/test_codegen.py fails until the files are
regenerated.  Files made for another C enum (INLINED, the op codes they
write out as numbers, differ from pyautodiff._core.OPS) would record wrong
ops, so link() refuses them with an ImportError, unless PYAUTODIFF_CODEGEN
is set, as it is for the generator after a change of the enum.
"""
import os
import sys
import types

from .. import _core

_checked = set()


def _check(module_name):
    """A generated module whose inlined op codes (INLINED) are not the C
    enum's would record wrong ops: refuse it.  The generator itself runs
    with PYAUTODIFF_CODEGEN=1, as it imports the package to regenerate."""
    if module_name in _checked or os.environ.get("PYAUTODIFF_CODEGEN"):
        return
    inlined = getattr(sys.modules[module_name], "INLINED", {})
    stale = sorted(name for name, code in inlined.items()
                   if _core.OPS.get(name) != code)
    if stale:
        raise ImportError(
            f"{module_name} was generated for another C op enum (the codes "
            f"of {', '.join(stale)} differ): regenerate it with "
            "PYAUTODIFF_CODEGEN=1 python -m pyautodiff.codegen")
    _checked.add(module_name)


def link(fn, scope):
    """fn's code as a function with scope (a dict) as its globals."""
    _check(fn.__module__)
    out = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__,
                             fn.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__doc__ = fn.__doc__
    return out
