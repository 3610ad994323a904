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
regenerated.
"""
import types


def link(fn, scope):
    """fn's code as a function with scope (a dict) as its globals."""
    out = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__,
                             fn.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__doc__ = fn.__doc__
    return out
