"""autograd.builtins: containers and type checks for traced values.

autograd boxes a tuple, list or dict that a derivative traces, and so
needs container types whose instances it can box (``ag.tuple((a, b))``)
and checks that look through boxes.  pyautodiff traces the numbers inside
plain containers (pytrees), so ``tuple``, ``list`` and ``dict`` here are
Python's own, and ``isinstance`` and ``type`` look at a traced Value or
Array's plain number: ``isinstance(x, np.ndarray)`` holds for a traced
array and ``isinstance(x, float)`` for a traced float, as they do for the
numbers the function is called with outside a derivative.
"""
import builtins as _builtins

from .extend import notrace_primitive

__all__ = ["tuple", "list", "dict", "isinstance", "type"]

tuple = _builtins.tuple
list = _builtins.list
dict = _builtins.dict
isinstance = notrace_primitive(_builtins.isinstance)
type = notrace_primitive(_builtins.type)
