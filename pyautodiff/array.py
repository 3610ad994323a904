"""``ad.Array``: a NumPy float64 array whose operations are recorded on the
same tape as scalar Values.

Each operation is one tape entry: its values live in the result's ndarray
(C-contiguous float64, allocated here), and the C core computes them with
the same rules as scalars (csrc/rules.h), broadcasting operands as NumPy
does; the reverse sweep runs the same rules backwards.  A scalar Value in an
array operation is a 0-d operand, so one graph can mix both.
"""
import math
import numbers

import numpy as np

try:
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:          # NumPy < 2
    from numpy.core.numeric import normalize_axis_tuple

from . import _core, buffers, scipy_own
from ._core import TapeError, ffi, lib
from ._generated import array_operators, link
from .broadcasting import broadcast_shape as _broadcast_shape
from .guards import decide as _decide
# (the generated operators take rows of pools: _pool_of, _POOL_ROWS)
from .pools import POOL_ROWS as _POOL_ROWS, pool_of as _pool_of
from .ops import (BINARY, ELEMENTWISE, ROWS, STEPS, UNARY, complex_operator,
                  is_complex_constant)
from .detach import refuse_detached
from .tape_state import DETACHED, NO_GRAD, current_tape, recording_tape, state
from .value import COMPARISONS, Value, stepped as _stepped

OPS = _core.OPS


def _as_float_array(data):
    """data as a fresh C-contiguous float64 ndarray; TypeError for data that
    is not real numbers (object, str, complex, ...)."""
    arr = np.asarray(data)
    if arr.dtype.kind not in "biuf":
        raise TypeError("Array() takes real numbers (bool, int or float "
                        f"data), not {arr.dtype} data")
    if arr.size < buffers.BUFFER_MIN:
        return np.array(arr, dtype=np.float64, order="C", copy=True)
    return buffers.copy(arr)



class Array:
    """A float64 array recorded on the current tape (NumPy-compatible).

    Its operators are generated (codegen.py) and linked below; the modules
    of what they do give it the rest: reductions.py its reductions (sum,
    mean, max, min, prod, cumsum, var, std), matmul.py its @, and
    numpy_interop.py NumPy's protocols and the methods whose result is
    NumPy's (astype to an integer type, tolist)."""

    # _i: the entry on tape _t; _p: the pool (on _t) a small result's
    # values came from, else None; _b, _j: that pool's block and
    # the row holding them; _v: the values (an ndarray), not set for such a
    # result until they are first read (_d)
    __slots__ = ("_v", "_i", "_t", "_p", "_b", "_j")

    # == is elementwise (a mask), so an Array is unhashable, as an ndarray
    # is: the package keys Arrays by id() where it needs identity
    __hash__ = None

    @property
    def _d(self):
        """The values: a small result's (see _POOL_ROWS) are its row of the
        pool's block, viewed when first read.  (Code that runs for every
        operation reads _v where it knows it is set: a property costs a
        call.)"""
        try:
            return self._v
        except AttributeError:          # not read before
            d = self._v = self._b[self._j]
            return d

    @_d.setter
    def _d(self, d):
        self._v = d

    def __init__(self, data, _variable=True):
        arr = _as_float_array(data)
        t = recording_tape()
        if t is NO_GRAD:
            t = current_tape()    # inputs are recorded under no_grad too
        _append(t, self, OPS["LEAF"], -1, -1, 0.0, arr, _variable)

    # -- NumPy-like attributes -------------------------------------------

    @property
    def data(self):
        return self._d

    @data.setter
    def data(self, value):
        new = _as_float_array(value)
        if new.shape != self._d.shape:
            raise ValueError(f"cannot assign data of shape {new.shape} to an "
                             f"Array of shape {self._d.shape}")
        self._d[...] = new        # in place: the tape holds this buffer

    @property
    def grad(self):
        """The gradient itself (as torch's): an ndarray of the Array's shape
        that backward() adds into and an optimizer's step() reads, so that
        editing it in place (a.grad *= 0.1, np.clip(a.grad, -1, 1,
        out=a.grad)) takes effect; zeros before any backward."""
        t = self._t
        if t is NO_GRAD or self._i < 0:
            return np.zeros(self._d.shape)
        return t.array_grad(self)

    @grad.setter
    def grad(self, value):
        """a.grad = g copies g (an array of a's shape, or a number for every
        element) into the gradient; a.grad = None zeroes it and marks it
        absent, so that step() skips it until a backward reaches it."""
        t = self._t
        if t is NO_GRAD:
            raise TapeError("this Array was computed under no_grad and has no "
                            "gradient")
        t._check_open()
        if value is None:
            self.zero_grad()
            t.mark_grad(self, False)
            return
        g = t.array_grad(self)
        if value is not g:          # (a.grad *= 0.1 assigns g itself back)
            new = np.asarray(value)
            if new.dtype.kind not in "biuf":
                raise TypeError("an Array's grad takes real numbers, not "
                                f"{new.dtype} data")
            if new.shape != g.shape and new.shape != ():
                raise ValueError(f"cannot assign a gradient of shape "
                                 f"{new.shape} to an Array of shape {g.shape}")
            np.copyto(g, new, casting="unsafe")
        t.mark_grad(self)

    def zero_grad(self):
        t = self._t
        if t is NO_GRAD:              # computed under no_grad: no gradient
            return
        t.zero_grads([self])

    shape = property(lambda self: self._d.shape)
    ndim = property(lambda self: self._d.ndim)
    size = property(lambda self: self._d.size)
    dtype = property(lambda self: self._d.dtype)

    def __len__(self):
        return len(self._d)

    # A number taken out of the tape: inside ad.record a guard on the
    # values, so that a replay never reuses the recorded number
    # x % y, x // y and divmod as NumPy's remainder, floor_divide, divmod
    __mod__ = lambda self, other: np.remainder(self, other)            # noqa: E731
    __rmod__ = lambda self, other: np.remainder(other, self)           # noqa: E731
    __floordiv__ = lambda self, other: np.floor_divide(self, other)    # noqa: E731
    __rfloordiv__ = lambda self, other: np.floor_divide(other, self)   # noqa: E731
    __divmod__ = lambda self, other: np.divmod(self, other)            # noqa: E731
    __rdivmod__ = lambda self, other: np.divmod(other, self)           # noqa: E731

    # -- a 0-d Array stands for np.float64: int(), round(), math.floor ... --
    # (step functions of the value: their zero derivative is exact)

    def _scalar(self, what):
        if self._d.ndim:
            raise TypeError(f"{what} of an Array: only 0-dimensional Arrays "
                            f"(a[i] of a 1-d a) convert to Python scalars")
        return self._d.item()

    # Python's result (and errors: int(nan)) first, then, inside a
    # recording, the op's entry and its guard (value.stepped)
    def __int__(self):
        n = int(self._scalar("int()"))
        _stepped(self, "TRUNC", "int()")
        return n

    def __round__(self, ndigits=None):
        if ndigits is not None:         # decimal digits: the value itself
            return round(_decide(self, self._scalar("round()"), "round()"), ndigits)
        n = round(self._scalar("round()"))
        _stepped(self, "RINT", "round()")
        return n

    def __trunc__(self):
        n = math.trunc(self._scalar("math.trunc()"))
        _stepped(self, "TRUNC", "math.trunc()")
        return n

    def __floor__(self):
        n = math.floor(self._scalar("math.floor()"))
        _stepped(self, "FLOOR", "math.floor()")
        return n

    def __ceil__(self):
        n = math.ceil(self._scalar("math.ceil()"))
        _stepped(self, "CEIL", "math.ceil()")
        return n

    def _step(self, op):
        """The entry of the piecewise-constant op (or STOP) of this Array
        on the recording tape: no derivative, recomputed by a replay."""
        t = recording_tape()
        if t is NO_GRAD or self._t is NO_GRAD:
            return _detached(STEPS[op](self._d))
        return _new(t, OPS[op], _operand(self, t)[0], -1, 0.0, self._d.shape,
                    same_shape=True)

    def item(self):
        return _decide(self, self._d.item(), "item()")

    def __float__(self):
        scipy_own.refuse(self, 1)
        refuse_detached(self, "float()")
        return _decide(self, float(self._d), "float()")

    # -- decisions: Python bools (inside ad.record, guards) -------------------

    def __bool__(self):
        if self._d.size != 1:
            raise ValueError("the truth value of an Array with more than one "
                             "element is ambiguous; use a.any() or a.all()")
        return _decide(self, bool(self._d.reshape(-1)[0]), "the truth value")

    def any(self, axis=None, keepdims=False):
        if axis is not None or keepdims:        # a bool array, as NumPy's
            return np.any(self, axis=axis, keepdims=keepdims)
        return _decide(self, bool(np.any(self._d)), "any()")

    def all(self, axis=None, keepdims=False):
        if axis is not None or keepdims:
            return np.all(self, axis=axis, keepdims=keepdims)
        return _decide(self, bool(np.all(self._d)), "all()")

    def __repr__(self):
        body = np.array2string(self._d, separator=", ", prefix="Array(")
        return f"Array({body})"

    def _import_to(self, tape):
        """A leaf on tape standing for this Array (from an enclosing tape);
        it shares this Array's values."""
        return _append(tape, object.__new__(Array), OPS["LEAF"], -1, -1, 0.0,
                       self._d, owned=False)

    def _constant_on(self, tape):
        """A constant leaf on tape with a copy of this Array's values as
        they are now (one computed under no_grad, which no tape records)."""
        return _append(tape, object.__new__(Array), OPS["LEAF"], -1, -1, 0.0,
                       _as_float_array(self._d), False)

    # -- pickle and copies ------------------------------------------------------
    # A copy (pickled, copy.copy as NumPy's, deepcopy) is a new leaf on the
    # current thread's tape with this Array's values and gradient; sharing
    # the tape entry would make the two one Array, and the graph behind an
    # Array does not travel (an interior one's copy is a leaf).

    def __reduce__(self):
        t = self._t
        has_grad = t is not NO_GRAD and self._i >= 0 and t.has_grad(self)
        return _rebuilt, (type(self), self._d, self.grad if has_grad else None)

    # -- more of the ndarray's methods, recorded where NumPy's result is
    # differentiable; the rest are NumPy's result on the values ------------

    def ravel(self, order="C"):
        if order not in ("C", "F", "A", "K"):
            raise ValueError(f"ravel: order must be 'C', 'F', 'A' or 'K', not {order!r}")
        # (an Array's values are in C order, so 'A' and 'K' are 'C')
        return (self.T if order == "F" else self).reshape(-1)

    def flatten(self, order="C"):
        return self.ravel(order)        # a new Array either way

    def copy(self, order="K"):
        """A new Array with the same values; the derivative flows through
        it (the identity)."""
        if recording_tape() is NO_GRAD:
            return _detached(self._d.copy())
        return self.reshape(self._d.shape)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return np.argmax(self, axis, out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        return np.argmin(self, axis, out, keepdims=keepdims)

    def round(self, decimals=0, out=None):
        return np.round(self, decimals, out)        # a constant Array

    def clip(self, min=None, max=None):
        return clip(self, min, max)

    def dot(self, b):
        return np.dot(self, b)

    def squeeze(self, axis=None):
        return squeeze(self, axis)

    def swapaxes(self, axis1, axis2):
        axes = list(range(self._d.ndim))
        i, j = normalize_axis_tuple((axis1, axis2), self._d.ndim, allow_duplicate=True)
        axes[i], axes[j] = j, i
        return self.transpose(axes)

    def repeat(self, repeats, axis=None):
        return _gather(self, lambda idx: np.repeat(idx, repeats, axis))

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], numbers.Integral)):
            axes = axes[0]
        axes = None if axes is None or len(axes) == 0 else tuple(axes)
        return _strided_gather(self, lambda d: d.transpose(axes))

    T = property(lambda self: self.transpose())

    def __getitem__(self, index):
        if _is_basic(index):
            # a trailing Ellipsis makes NumPy return a 0-d view, never a
            # float, where ints pick one element
            parts = index if isinstance(index, tuple) else (index,)
            if not any(p is Ellipsis for p in parts):
                parts += (Ellipsis,)
            return _strided_gather(self, lambda d: d[parts])
        index = tuple(map(_index, index)) if isinstance(index, tuple) else _index(index)
        return _gather(self, lambda idx: idx[index])

    def reshape(self, *shape):
        """The same elements in another shape (NumPy's rules, -1 allowed)."""
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = tuple(shape[0])
        target = _shape_after(self._d.shape, lambda d: d.reshape(shape))
        t = recording_tape()
        if t is NO_GRAD:
            return _detached(self._d.reshape(target))
        return _new(t, OPS["RESHAPE"], _operand(self, t)[0], -1, 0.0, target)

    # -- backward ------------------------------------------------------------

    def backward(self, grad=None):
        """d(self)/d(node) into every node's grad: self must have one element,
        else pass `grad` (an array of self's shape) to backpropagate
        sum(self * grad)."""
        t = self._t
        if t is NO_GRAD:
            raise TapeError("this Array was computed under no_grad: nothing "
                            "was recorded to differentiate")
        if grad is None:
            if self._d.size != 1:
                raise ValueError("backward() without a grad needs an Array "
                                 f"with one element, not shape {self.shape}; "
                                 "pass backward(grad) with an array of this "
                                 "shape")
            t.backward_from(self, 1.0, _core.SWEEP_ACCUM)
            return
        try:
            seed = _as_float_array(grad)
        except (TypeError, ValueError):     # str, complex, ragged lists ...
            raise TypeError(f"backward(grad): grad must be an array of real "
                            f"numbers of this Array's shape {self.shape} (or "
                            "nothing, for an Array of one element), not "
                            f"{type(grad).__name__} {grad!r}") from None
        if seed.shape != self._d.shape:
            raise ValueError(f"backward(grad): grad has shape {seed.shape}, "
                             f"the Array has shape {self.shape}")
        t.backward_from(self, seed, _core.SWEEP_ACCUM)


def _rebuilt(cls, data, grad):
    """A copy of an Array (Array.__reduce__): a leaf of class cls with these
    values and, unless grad is None (it had none), this gradient."""
    out = cls(data)
    if grad is not None:
        out.grad = grad             # checked and marked present as any a.grad = g
    return out


_LEAF = OPS["LEAF"]
_SQUARE = OPS["SQUARE"]      # a ** 2, computed as NumPy does: a * a


# Looked up once: the recording path runs these for every operation.
_DOUBLES = ffi.typeof("double[]")
_from_buffer = ffi.from_buffer
_cast = ffi.cast
_DOUBLE_P = ffi.typeof("double *")
_object_new = object.__new__
_array_append = lib.ad_array_append
_array_op = lib.ad_array_op
_array_row = lib.ad_array_row
_NULL = ffi.NULL


def _values_pointer(t, arr):
    """arr's memory for the C tape (a valid pointer even when arr is empty).
    C writes only the values of results, which are fresh arrays; a leaf's
    values (an imported Array's may be read-only) are only read."""
    if arr.size:
        return _from_buffer(_DOUBLES, arr)
    val = ffi.new("double[1]")        # never read
    t.keep_alive(val)
    return val


def _append(t, obj, op, a, b, imm, arr, variable=True, same_shape=False,
            index_map=None, strided=None, owned=True):
    """Record entry (op, a, b, imm) on the open tape t with values in arr (C
    computes them) as obj, which becomes an Array on t.  A leaf is a
    variable (it gets gradients) or a constant.  same_shape: arr has operand
    a's shape, which C then takes from a (no shape to pass).  A gather or
    scatter passes its index_map (flat int64 indices), a strided gather
    strided = (offset, strides) instead.  A leaf whose values are another
    tape's (not owned) does not count towards compacting this one.
    Results of small shapes take the quicker _result."""
    if len(t.nodes) != t.nflushed:
        t.flush()                     # entries below must be in C first
    val = _from_buffer(_DOUBLES, arr) if arr.size else _values_pointer(t, arr)
    nodes = t.nodes
    i = len(nodes)
    try:                              # (see RESULT_STEPS in codegen.py)
        if same_shape:
            status = _array_op(t._c, op, a, b, imm, val)
        else:
            shape = ffi.new("int64_t[]", arr.shape or (0,))
            if strided is not None:
                offset, strides = strided
                status = lib.ad_array_append_strided(
                    t._c, a, val, arr.ndim, shape, offset,
                    ffi.new("int64_t[]", strides or (0,)))
            elif index_map is not None:
                cmap = _from_buffer("int64_t[]", index_map) if index_map.size else _NULL
                status = lib.ad_array_append_map(t._c, op, a, val, arr.ndim, shape,
                                                 cmap, index_map.size)
            elif op == _LEAF:
                status = lib.ad_array_leaf(t._c, val, arr.ndim, shape, variable)
            else:
                status = _array_append(t._c, op, a, b, imm, val, arr.ndim, shape)
        if status > 0:                # (ad_array_op: -1 for a NaN or inf)
            _core.check(status, t._c)
        if op != _LEAF:
            arr.setflags(write=False)     # the tape's record of a result
        _keep_entry(t, obj, arr, nodes, i)
    except BaseException:
        t.drop_unkept(i)
        raise
    return _settle_entry(t, obj, arr.size if owned else 0, i)


# The steps that keep a result as the Array of its entry, and _result,
# which records one: generated (codegen.py's KEEP_STEPS, SPILL_STEPS and
# RESULT_STEPS, which the operators inline), run here.
_keep_entry = link(array_operators._keep_entry, globals())
_settle_entry = link(array_operators._settle_entry, globals())
_result = link(array_operators._result, globals())


def _new(t, op, a, b, imm, shape, numpy_equivalent=None, same_shape=False):
    """A new result entry (see _checked)."""
    out = _result(t, op, a, b, imm, tuple(shape), same_shape)
    if t._c.last_nonfinite:
        _nonfinite(out, op, numpy_equivalent)
    return out


def _nonfinite(out, op, numpy_equivalent, *args):
    """A result just recorded holds a NaN or an infinity: anomaly mode names
    the op; otherwise numpy_equivalent(*args) runs the same operation in
    NumPy, for NumPy's own warnings under np.errstate (log(0), 1/0 ...).
    (The generated operators pass args rather than a closure: a lambda
    over their arguments would make each call allocate cells for them.)"""
    if state.anomaly:
        kind = "nan" if np.isnan(out._d).any() else "inf"
        raise FloatingPointError(f"{_core.OP_NAMES[op]} at tape index "
                                 f"{out._i} produced {kind}")
    if numpy_equivalent is not None:
        numpy_equivalent(*args)


def _node(x, t):
    """x as (its node, shape) on tape t, recording constants as leaves."""
    if isinstance(x, Array):
        if x._t is not t:
            x = t.adopt(x)          # from an enclosing tape, or TapeError
        return x, x._d.shape
    if isinstance(x, Value):
        x = t.adopt(x)
        t.flush()
        return x, ()
    if _holds_traced(x):          # a list of Values or Arrays: not a constant
        return _node(_asarray(x), t)
    return _constant(x), np.shape(x)


def _operand(x, t):
    """x as (entry index, shape) on tape t, recording constants as leaves."""
    node, shape = _node(x, t)
    return node._i, shape


def _operands(x, y, t):
    """(a, shape of x, b, shape of y): the entries of x and y on tape t.
    Both are recorded (constants, imports) before either index is read:
    recording one may compact the tape, which renumbers the other."""
    nx, sx = _node(x, t)
    ny, sy = _node(y, t)
    return nx._i, sx, ny._i, sy


def _constant(x):
    """x (an ndarray, list, number) as an Array that takes no gradient."""
    return Array(x, _variable=False)


def _binary(self, other, name):
    if is_complex_constant(other):          # x * 1j: a complex result
        return complex_operator(name, self, other)
    t = recording_tape()
    if t is NO_GRAD:
        return _detached_binary(self, other, name)
    vv_op, vc_op, cexpr = BINARY[name]
    reflected = vv_op is None
    if isinstance(other, (bool, np.bool_)):
        other = float(other)        # as NumPy computes with a bool: 0 or 1
    if isinstance(other, numbers.Real):
        c = -float(other) if cexpr == "-other" else float(other)
        op = _SQUARE if vc_op == "POWC" and c == 2.0 else OPS[vc_op]
        return _new(t, op, _operand(self, t)[0], -1, c, self._d.shape,
                    lambda: _detached_binary(self, other, name), same_shape=True)
    if not isinstance(other, (Array, Value, np.ndarray, list, tuple)):
        return NotImplemented
    a, sa, b, sb = _operands(self, other, t)
    if reflected:               # other <op> self, other not a number
        a, b, sa, sb = b, a, sb, sa
        vv_op = BINARY[REFLECTED_OF[name]][0]
    if sa == sb:
        return _new(t, OPS[vv_op], a, b, 0.0, sa,
                    lambda: _detached_binary(self, other, name), same_shape=True)
    return _new(t, OPS[vv_op], a, b, 0.0,
                _broadcast_shape(vv_op.lower(), sa, sb),
                lambda: _detached_binary(self, other, name))


# a reflected method: the operator it records with its operands swapped
REFLECTED_OF = {op.reflected: op.method for op in ELEMENTWISE if op.reflected}


def _unary(self, name):
    t = recording_tape()
    if t is NO_GRAD:
        return _detached(NUMPY_UNARY[name](self._d))
    return _new(t, OPS[UNARY[name]], _operand(self, t)[0], -1, 0.0,
                self._d.shape, lambda: NUMPY_UNARY[name](self._d), same_shape=True)


def _detached(values):
    out = object.__new__(Array)
    out._v = np.asarray(values, dtype=np.float64)
    out._t = NO_GRAD
    out._p = None
    out._i = -1
    return out


def _plain(x):
    return x._d if isinstance(x, (Array, Value)) else x


# NumPy's version of each method (the op table's), for plain numbers and
# ndarrays (ad.exp & co.), no_grad, and NumPy's warnings
_NUMPY_BINARY = {op.method: op.numpy for op in ELEMENTWISE if op.reflected}
NUMPY_UNARY = {name: ROWS[op].numpy for name, op in UNARY.items()}


def _detached_binary(self, other, name):
    if name in REFLECTED_OF:
        return _detached(_NUMPY_BINARY[REFLECTED_OF[name]](_plain(other), self._d))
    return _detached(_NUMPY_BINARY[name](self._d, _plain(other)))


def unary_function(fname, methods, otherwise):
    """The module function ad.<fname> (generated: codegen.py's
    _function_maker), or None where the generated code has none yet: an
    Array recording here is recorded by the unary method's own steps,
    inlined; an object of a class in methods by methods[its class](x);
    anything else by otherwise(x)."""
    make = array_operators.FUNCTIONS.get(fname)
    return None if make is None else link(make, globals())(methods, otherwise)


# the operators, generated from the op table (codegen.py), run here
for _name in array_operators.OPERATORS:
    setattr(Array, _name, link(getattr(array_operators, _name), globals()))
Array.abs = Array.__abs__         # a.abs(), as NumPy's abs(a)


# -- gathers: transpose, indexing and the rest --------------------------------

def _is_basic(index):
    """Does index pick a strided view (NumPy's basic indexing: ints,
    slices, Ellipsis, None)?  Anything else takes an index map."""
    parts = index if isinstance(index, tuple) else (index,)
    for p in parts:
        if p is None or p is Ellipsis or p.__class__ is slice:
            continue
        if p.__class__ is int or (isinstance(p, np.integer) and p.ndim == 0):
            continue
        return False
    return True


def _strided_gather(self, select):
    """The elements select picks from self's values as a NumPy view: a
    GATHER whose map is affine, so C keeps the view's offset and strides
    (in elements, as NumPy computed them) instead of an index map."""
    base = self._d
    t = recording_tape()
    if t is NO_GRAD:
        return _detached(select(base).copy())
    if not base.flags.c_contiguous:   # (a detached Array's): C's copy is
        base = np.ascontiguousarray(base)   # in C order, strides from it
    view = select(base)
    offset = 0
    if view.size:                     # an empty view's address means nothing
        if view.flags.c_contiguous:   # (cffi's addresses cost less)
            offset = (_cast(_DOUBLE_P, _from_buffer(_DOUBLES, view))
                      - _cast(_DOUBLE_P, _from_buffer(_DOUBLES, base)))
        else:
            offset = (view.__array_interface__["data"][0]
                      - base.__array_interface__["data"][0]) // 8
    t._check_open()
    return _append(t, object.__new__(Array), OPS["GATHER"], _operand(self, t)[0],
                   -1, 0.0, buffers.empty(view.shape),
                   strided=(offset, tuple(s // 8 for s in view.strides)))


def _gather(self, select):
    """The elements select picks from self: select maps an array of self's
    flat indices (in self's shape) to the picked ones, with NumPy's own
    indexing rules, so repeated picks accumulate their gradients."""
    picked = select(np.arange(self._d.size, dtype=np.int64).reshape(self._d.shape))
    t = recording_tape()
    if t is NO_GRAD:
        return _detached(self._d.reshape(-1)[picked])
    return _mapped(t, OPS["GATHER"], _operand(self, t)[0], np.shape(picked), picked)


def _mapped(t, op, a, shape, index_map):
    index_map = np.ascontiguousarray(index_map, dtype=np.int64).reshape(-1)
    t._check_open()
    return _append(t, object.__new__(Array), op, a, -1, 0.0, np.empty(shape),
                   index_map=index_map)


def _scatter(x, shape, positions):
    """x placed at flat positions of a zero array of shape."""
    t = recording_tape()
    x = _asarray(x)
    if t is NO_GRAD:
        out = np.zeros(shape)
        np.add.at(out.reshape(-1), positions, x._d.reshape(-1))
        return _detached(out)
    return _mapped(t, OPS["SCATTER"], _operand(x, t)[0], shape, positions)


def _asarray(x):
    """x as an Array: a Value becomes a 0-d Array (one entry reading it), a
    list holding Values or Arrays (or an object ndarray of them, which is
    what np.array([a, b]) of traced Arrays makes) the Array they stack
    into."""
    if isinstance(x, Array):
        return x
    if isinstance(x, (list, tuple, np.ndarray)) and _holds_traced(x):
        if isinstance(x, np.ndarray) and x.ndim == 0:
            return _asarray(x[()])
        return stack([_asarray(e) for e in x])
    if isinstance(x, Value):
        t = recording_tape()
        if t is NO_GRAD:
            return _detached(x.data)
        return _new(t, OPS["RESHAPE"], _operand(x, t)[0], -1, 0.0, ())
    return _constant(x)


def _holds_traced(x):
    if isinstance(x, (Array, Value)):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype == object and any(_holds_traced(e) for e in x.flat)
    return isinstance(x, (list, tuple)) and any(_holds_traced(e) for e in x)


def concatenate(arrays, axis=0):
    """NumPy's concatenate: each input scattered into place, then summed."""
    arrays = [_asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    layout = np.concatenate([np.full(a.shape, k, dtype=np.int64)
                             for k, a in enumerate(arrays)], axis=axis)
    flat = layout.reshape(-1)
    total = None
    for k, a in enumerate(arrays):
        # concatenation keeps each input's C order: its elements land at
        # the output's positions labelled k, in order
        part = _scatter(a, layout.shape, np.flatnonzero(flat == k))
        total = part if total is None else total + part
    return total


def stack(arrays, axis=0):
    arrays = [_asarray(a) for a in arrays]
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis)


def from_object_array(a):
    """NumPy's object array of Values, Arrays and numbers (what np.array
    makes of a list holding traced numbers) as one traced Array of its
    shape; None if it holds no traced value."""
    if not (isinstance(a, np.ndarray) and a.dtype == object):
        return None
    items = list(a.ravel())
    if not any(isinstance(e, (Array, Value)) for e in items):
        return None
    return stack(items).reshape(a.shape)


_BYTE = bytes(1)


def _shape_after(shape, fn):
    """The shape fn gives an array of `shape`, computed without memory (a
    view of one byte, all strides 0)."""
    shape = tuple(shape)
    return fn(np.ndarray(shape, np.uint8, _BYTE, 0, (0,) * len(shape))).shape


def expand_dims(a, axis):
    a = _asarray(a)
    return a.reshape(_shape_after(a.shape, lambda d: np.expand_dims(d, axis)))


def squeeze(a, axis=None):
    a = _asarray(a)
    return a.reshape(_shape_after(a.shape, lambda d: np.squeeze(d, axis)))


def transpose(a, axes=None):
    return _asarray(a).transpose(axes)


def reshape(a, shape):
    return _asarray(a).reshape(shape)


# -- elementwise choices: NaN-safe, the losing side gets no gradient ----------

_NUMPY_OF = {"MAXIMUM": np.maximum, "MINIMUM": np.minimum, "LT": np.less,
             "LE": np.less_equal, "EQ": np.equal, "NE": np.not_equal}


def _binary_op(name, x, y):
    t = recording_tape()
    if t is NO_GRAD:
        return _detached(_NUMPY_OF[name](_plain(x), _plain(y)))
    a, sa, b, sb = _operands(x, y, t)
    shape = sa if sa == sb else _broadcast_shape(name.lower(), sa, sb)
    return _new(t, OPS[name], a, b, 0.0, shape)


def maximum(x, y):
    return _binary_op("MAXIMUM", x, y)


def minimum(x, y):
    return _binary_op("MINIMUM", x, y)


def clip(a, a_min, a_max):
    out = a
    if a_min is not None:
        out = maximum(out, a_min)
    if a_max is not None:
        out = minimum(out, a_max)
    return out


def _select(x, mask):
    t = recording_tape()
    if t is NO_GRAD:
        return _detached(np.where(_plain(mask), _plain(x), 0.0))
    a, sa, m, sm = _operands(x, mask, t)
    shape = _broadcast_shape("where", sa, sm)
    return _new(t, OPS["SELECT"], a, m, 0.0, shape)


def where(condition, x=None, y=None):
    """x where condition holds, else y; no gradient (and no NaN) flows
    through the branch not taken.  A condition computed from Arrays
    (x > 0) is recorded, so a replay recomputes it.  where(condition)
    alone is np.nonzero(condition), as NumPy's."""
    if x is None and y is None:
        return np.nonzero(condition)
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y must be given")
    if isinstance(condition, Array) and condition._t is recording_tape():
        return _select(x, condition) + _select(y, _binary_op("EQ", condition, 0.0))
    cond = np.asarray(_plain(condition), dtype=bool)
    return _select(x, cond.astype(np.float64)) + \
        _select(y, (~cond).astype(np.float64))


# -- comparisons: 1.0/0.0 masks recorded on the tape (they take no gradient) --

# operator -> (op, operands swapped), a Value's and == and != elementwise
_COMPARISONS = dict(COMPARISONS, **{"==": ("EQ", False), "!=": ("NE", False)})


class Mask(Array):
    """A comparison's result, NumPy's bool array to its users: its 1.0/0.0
    values are a recorded entry (a replay recomputes them), so that
    where(mask, a, b), mask * x and x[mask] hold at new inputs.  Arithmetic
    on it gives float Arrays, as NumPy's bool * float does."""

    __slots__ = ()

    dtype = property(lambda self: np.dtype(bool))

    def __repr__(self):
        body = np.array2string(self._d.astype(bool), separator=", ", prefix="Array(")
        return f"Array({body})"

    def tolist(self):
        return _decide(self, self._d.astype(bool).tolist(), "tolist()")

    # logical operators, exact on 0/1 values with the existing ops
    def __invert__(self):
        return _as_mask(_binary_op("EQ", self, 0.0))

    def __and__(self, other):
        return _as_mask(self * _logical_operand(other, "&"))

    def __or__(self, other):
        return _as_mask(maximum(self, _logical_operand(other, "|")))

    def __xor__(self, other):
        return _as_mask(_binary_op("NE", self, _logical_operand(other, "^")))

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__


def is_mask(a):
    """Is a a mask: a comparison's result (also np.less(a, b), np.isnan's
    witnesses), or a logical combination of masks?"""
    return isinstance(a, Mask)


def _as_mask(out):
    out.__class__ = Mask            # (same slots: the entry stays as it is)
    return out


def _logical_operand(other, symbol):
    if is_mask(other):
        return other
    values = np.asarray(other)
    if values.dtype != bool:
        raise TypeError(f"mask {symbol} {values.dtype} operand: the logical "
                        f"operators of a mask take masks or bools only")
    return values.astype(np.float64)


def comparison(op, x, y):
    """x op y (LT, LE, EQ, NE) elementwise: a mask."""
    return _as_mask(_binary_op(op, x, y))


def _compare(self, other, symbol):
    if not isinstance(other, (Array, Value, np.ndarray, numbers.Real, list, tuple)):
        return NotImplemented
    op, swap = _COMPARISONS[symbol]
    return comparison(op, other, self) if swap else comparison(op, self, other)


# (a Value's == is identity, which defers to these for an Array: value ==
# array is the Array's reflected, elementwise comparison)
for _symbol, _name in (("<", "__lt__"), ("<=", "__le__"), (">", "__gt__"),
                       (">=", "__ge__"), ("==", "__eq__"), ("!=", "__ne__")):
    setattr(Array, _name, lambda self, other, _s=_symbol: _compare(self, other, _s))


def _constant_result(values):
    """values (computed from Arrays, with a zero derivative) as an Array
    that takes no gradient."""
    if recording_tape() is NO_GRAD:
        return _detached(values)
    return _constant(values)


def _index(index):
    """An index as NumPy takes it: a mask Array (a comparison's result) as a
    boolean array, other Arrays as integer arrays.  Inside ad.record either
    is a guard: the elements it picks depend on the values."""
    if not isinstance(index, Array):
        return index
    t = index._t
    guarded = t is not NO_GRAD and not t.closed and index._i >= 0 and \
        t.guards is not None
    if is_mask(index):
        mask = index._d.astype(bool)
        if guarded:
            t.guard(index, index._d.copy(), "a boolean mask used as an index")
        return mask
    if guarded:
        t.guard(index, index._d.copy(), "an Array used as an index")
    return index._d.astype(np.intp) if index._d.dtype.kind == "f" and \
        np.all(index._d == np.round(index._d)) else index._d
