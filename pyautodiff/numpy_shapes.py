"""NumPy's shape, stacking, splitting and indexing functions on Arrays
(``np.flip(a)``, ``np.pad(a, 1)``, ``np.vstack([a, b])``, ``np.split(a, 3)``
...), recorded as the layout operations every order of derivative already
knows: a GATHER (strided where NumPy's result is a view, else by an index
map), a SCATTER, a RESHAPE.

The index map is NumPy's own answer: the function is applied to an array
of element codes (1, 2, ... in the input's shape: code k is flat element
k-1) and its result says where each output element comes from, so the
layout is exactly NumPy's for every argument NumPy takes.  Code 0 marks an
element the function made up (a zero of np.tril or np.diag, np.pad's
fill): the output is 0 there (plus pad's fill, a constant), no gradient.
Several inputs (np.vstack, np.choose ...) number their elements one after
another and are read from their concatenation.
"""

import numpy as np

from . import array as _array
from .array import Array, _asarray, _detached, _mapped, _operand, _scatter
from .tape_state import NO_GRAD, recording_tape
from .value import Value

_GATHER = _array.OPS["GATHER"]


def _is_traced(x):
    return isinstance(x, (Array, Value))


def _codes(shape, start=1):
    return np.arange(start, start + int(np.prod(shape, dtype=np.int64)),
                     dtype=np.int64).reshape(shape)


def _pick(src, index_map):
    """The elements of src at flat positions index_map (an int array of
    the result's shape)."""
    t = recording_tape()
    if t is NO_GRAD:
        return _detached(src._d.reshape(-1)[index_map])
    return _mapped(t, _GATHER, _operand(src, t)[0], index_map.shape, index_map)


def _placed(src, codes):
    """The Array codes describes: src's flat element k-1 where the code is
    k, 0 where it is 0."""
    codes = np.asarray(codes)
    if codes.dtype.kind not in "iu":
        raise TypeError(f"internal: a layout map of {codes.dtype}")
    flat = codes.reshape(-1)
    if flat.size == 0 or flat.min() > 0:        # every element picked
        return _pick(src, codes.astype(np.int64) - 1)
    positions = np.flatnonzero(flat)
    if positions.size == 0:                     # nothing of src in it
        return _array._constant_result(np.zeros(codes.shape))
    return _scatter(_pick(src, flat[positions].astype(np.int64) - 1),
                    codes.shape, positions)


def _result(src, out, codes, fn):
    """The Array (or the list or tuple of Arrays) that NumPy's result on
    the codes describes.  A view of the codes is a strided gather of src,
    fn applied to its values, without a map."""
    if isinstance(out, (list, tuple)):
        return type(out)(_result(src, o, codes, lambda d, i=i: fn(d)[i])
                         for i, o in enumerate(out))
    if codes is not None and isinstance(out, np.ndarray) and out.size \
            and np.may_share_memory(out, codes):
        return _array._strided_gather(src, fn)
    return _placed(src, out)


def layout(a, fn):
    """fn, a NumPy function that only moves, repeats or drops elements (or
    makes zeros), applied to the Array a (or a Value, or constants)."""
    a = _asarray(a)
    codes = _codes(a.shape)
    return _result(a, fn(codes), codes, fn)


def combined(pieces, fn):
    """fn(*pieces) for a NumPy function fn that only moves the elements of
    its array arguments: the pieces' elements are numbered one after
    another and read from their concatenation."""
    pieces = [_asarray(p) for p in pieces]
    codes, start = [], 1
    for p in pieces:
        codes.append(_codes(p.shape, start))
        start += p.size
    src = pieces[0] if len(pieces) == 1 else \
        _array.concatenate([p.reshape(-1) for p in pieces])
    return _result(src, fn(*codes), None, None)


def _plain_index(x):
    """An index argument (indices, a choice array, shifts) as NumPy takes
    it: an Array's values (a mask's as bools, guarded inside ad.record)."""
    if isinstance(x, (list, tuple)):
        return type(x)(_plain_index(e) for e in x)
    if isinstance(x, Value):
        return _array._decide(x, x._d, "an index")
    return _array._index(x)


def _no_out(name, out):
    if out is not None:
        raise TypeError(f"numpy.{name}(out=...) writes into an ndarray: in-place "
                        "NumPy operations cannot record a derivative")


def _float_dtype(name, dtype):
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise TypeError(f"numpy.{name}(dtype={np.dtype(dtype).name}): an Array "
                        "holds float64; only a float dtype keeps a derivative")


# -- reshapes ------------------------------------------------------------------

def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        shape = newshape
    if order == "F":        # (the values are in C order: F is a permutation)
        return layout(a, lambda d: np.reshape(d, shape, order="F"))
    if order not in ("C", "A"):
        raise ValueError(f"numpy.reshape: order must be 'C', 'F' or 'A', not {order!r}")
    return _asarray(a).reshape(shape)


def ravel(a, order="C"):
    return _asarray(a).ravel(order)


def _at_least(np_fn):
    def at_least(*arys):
        out = [_asarray(x).reshape(_array._shape_after(np.shape(_array._plain(x)), np_fn))
               if _is_traced(x) else np_fn(x) for x in arys]
        if len(out) == 1:
            return out[0]
        # NumPy's container (a tuple in NumPy 2, a list before)
        return type(np_fn(*[np.zeros(()) for _ in arys]))(out)
    return at_least


# -- moves, flips, repeats -----------------------------------------------------

def _one(np_fn, *index_args):
    """np_fn(a, *args, **kwargs) as a layout of a; the arguments at the
    positions index_args (and every keyword) may be index Arrays."""
    def apply(a, *args, **kwargs):
        args = tuple(_plain_index(x) if i + 1 in index_args else x
                     for i, x in enumerate(args))
        kwargs = {k: _plain_index(v) for k, v in kwargs.items()}
        return layout(a, lambda d: np_fn(d, *args, **kwargs))
    return apply


def take(a, indices, axis=None, out=None, mode="raise"):
    _no_out("take", out)
    indices = _plain_index(indices)
    return layout(a, lambda d: np.take(d, indices, axis=axis, mode=mode))


def take_along_axis(arr, indices, axis=-1):
    indices = _plain_index(indices)
    return layout(arr, lambda d: np.take_along_axis(d, indices, axis))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _no_out("trace", out)
    _float_dtype("trace", dtype)
    return np.sum(layout(a, lambda d: np.diagonal(d, offset, axis1, axis2)), axis=-1)


_LAYOUT_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def pad(array, pad_width, mode="constant", **kwargs):
    """np.pad in the modes that only copy elements; constant_values plain
    numbers (NumPy's fill, a constant)."""
    if callable(mode) or mode not in _LAYOUT_PAD_MODES:
        raise NotImplementedError(
            f"numpy.pad(mode={mode!r}) of an Array: pyautodiff differentiates "
            f"the modes {', '.join(_LAYOUT_PAD_MODES)}")
    if kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError("numpy.pad(reflect_type='odd') of an Array: "
                                  "only reflect_type='even' is differentiated")
    pad_width = _plain_index(pad_width)
    fill = kwargs.pop("constant_values", 0)
    if _array._holds_traced(fill) or isinstance(fill, np.ndarray) and fill.dtype == object:
        raise TypeError("numpy.pad: traced constant_values are not differentiated; "
                        "pass plain numbers")
    extra = {k: v for k, v in kwargs.items() if k != "reflect_type"}
    if extra:
        raise TypeError(f"numpy.pad(mode={mode!r}) got unexpected keyword "
                        f"arguments {sorted(extra)}")
    a = _asarray(array)
    out = layout(a, lambda d: np.pad(d, pad_width, mode=mode, **kwargs))
    if mode == "constant" and np.any(np.asarray(fill) != 0):
        out = out + np.pad(np.zeros(a.shape), pad_width, constant_values=fill)
    return out


# -- several inputs ------------------------------------------------------------

def _sequence_of(name, tup):
    if not isinstance(tup, (list, tuple)):
        if isinstance(tup, Array):      # NumPy iterates over the first axis
            return [tup[i] for i in range(len(tup))]
        raise TypeError(f"numpy.{name} takes a sequence of arrays")
    return list(tup)


def _stacking(np_fn):
    name = np_fn.__name__

    def stacked(tup, *args, dtype=None, casting="same_kind", **kwargs):
        _float_dtype(name, dtype)
        pieces = _sequence_of(name, tup)
        return combined(pieces, lambda *codes: np_fn(list(codes), *args, **kwargs))
    return stacked


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _no_out("concatenate", out)
    _float_dtype("concatenate", dtype)
    return _array.concatenate(_sequence_of("concatenate", arrays), axis)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _no_out("stack", out)
    _float_dtype("stack", dtype)
    return _array.stack(_sequence_of("stack", arrays), axis)


def insert(arr, obj, values, axis=None):
    obj = _plain_index(obj)
    return combined([arr, values], lambda a, v: np.insert(a, obj, v, axis))


def block(arrays):
    """np.block of nested lists of pieces: the pieces numbered in order."""
    pieces = []

    def numbered(x):
        if isinstance(x, list):
            return [numbered(e) for e in x]
        pieces.append(x)
        return len(pieces) - 1

    structure = numbered(arrays)

    def rebuilt(x, codes):
        return [rebuilt(e, codes) for e in x] if isinstance(x, list) else codes[x]
    return combined(pieces, lambda *codes: np.block(rebuilt(structure, codes)))


def append(arr, values, axis=None):
    return combined([arr, values], lambda a, v: np.append(a, v, axis))


def choose(a, choices, out=None, mode="raise"):
    _no_out("choose", out)
    a = _plain_index(a)
    return combined(_sequence_of("choose", choices),
                    lambda *codes: np.choose(a, codes, mode=mode))


def select(condlist, choicelist, default=0):
    conditions = [np.asarray(_plain_index(c)) for c in condlist]
    for c in conditions:
        if c.dtype != bool:
            raise TypeError("numpy.select: the conditions must be bool arrays "
                            "(comparisons of Arrays are)")
    choices = _sequence_of("select", choicelist)
    return combined(choices + [default],
                    lambda *codes: np.select(conditions, list(codes[:-1]), codes[-1]))


# -- constants -----------------------------------------------------------------

def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    """NumPy's array of a's shape (or shape=) filled with fill_value: a
    constant, unless fill_value is traced (then that broadcast, traced)."""
    if _is_traced(fill_value) or _array._holds_traced(fill_value):
        _float_dtype("full_like", dtype)
        target = np.shape(_array._plain(a)) if shape is None else shape
        return layout(fill_value, lambda d: np.broadcast_to(d, target))
    return np.full_like(_array._plain(a), fill_value, dtype, order, subok, shape)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None,
             axis=0, *, device=None):
    """NumPy's evenly spaced samples, of traced ends: start + k * step, in
    NumPy's arithmetic (the last sample is stop itself where endpoint)."""
    _float_dtype("linspace", dtype)
    num = int(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = _asarray(start), _asarray(stop)
    div = num - 1 if endpoint else num
    delta = stop - start
    k = np.arange(num, dtype=np.float64).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = delta / float(div)
        # NumPy's order of operations: where a step is 0, k / div * delta
        y = (k / float(div)) * delta if np.any(step._d == 0) else k * step
    else:
        step = np.nan * delta
        y = k * delta
    y = y + start
    if endpoint and num > 1:
        last = np.broadcast_to(stop, delta.shape)       # both ends may broadcast
        y = _array.concatenate([y[:-1], _array.expand_dims(last, 0)], axis=0)
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    return (y, step) if retstep else y


def copyto(dst, src, casting="same_kind", where=True):
    raise TypeError("numpy.copyto writes into an ndarray: in-place NumPy "
                    "operations cannot record a derivative (np.full_like(ndarray, "
                    "traced) calls it: pass an Array, or use np.broadcast_to)")


NUMPY_FUNCTIONS = {
    np.reshape: reshape, np.ravel: ravel,
    np.atleast_1d: _at_least(np.atleast_1d),
    np.atleast_2d: _at_least(np.atleast_2d),
    np.atleast_3d: _at_least(np.atleast_3d),
    np.moveaxis: _one(np.moveaxis), np.rollaxis: _one(np.rollaxis),
    np.broadcast_to: _one(np.broadcast_to),
    np.tile: _one(np.tile), np.roll: _one(np.roll, 1),
    np.flip: _one(np.flip), np.fliplr: _one(np.fliplr),
    np.flipud: _one(np.flipud), np.rot90: _one(np.rot90),
    np.diag: _one(np.diag), np.diagonal: _one(np.diagonal),
    np.diagflat: _one(np.diagflat), np.tril: _one(np.tril),
    np.triu: _one(np.triu), np.trace: trace, np.pad: pad,
    np.split: _one(np.split, 1), np.array_split: _one(np.array_split, 1),
    np.hsplit: _one(np.hsplit, 1), np.vsplit: _one(np.vsplit, 1),
    np.dsplit: _one(np.dsplit, 1),
    np.take: take, np.take_along_axis: take_along_axis,
    np.concatenate: concatenate, np.stack: stack,
    np.vstack: _stacking(np.vstack), np.hstack: _stacking(np.hstack),
    np.dstack: _stacking(np.dstack), np.column_stack: _stacking(np.column_stack),
    np.append: append, np.insert: insert, np.block: block,
    np.delete: _one(np.delete, 1), np.resize: _one(np.resize),
    np.permute_dims: _one(np.permute_dims),
    np.matrix_transpose: _one(np.matrix_transpose), np.unstack: _one(np.unstack), np.choose: choose, np.select: select,
    np.full_like: full_like, np.copyto: copyto, np.linspace: linspace,
}


# the ndarray methods of these (a.diagonal(), a.trace(), a.take(i))
Array.diagonal = lambda self, offset=0, axis1=0, axis2=1: \
    layout(self, lambda d: np.diagonal(d, offset, axis1, axis2))
Array.trace = trace
Array.take = take


class AxisConcatenator:
    """np.r_ and np.c_ (objects NumPy indexes, which no dispatch reaches)
    for traced pieces: NumPy's own r_ run twice, the traced pieces once as
    zeros (giving the constant part, exactly) and once as their element
    codes (where the two differ, which element lands there)."""

    def __init__(self, numpy_concatenator):
        self._numpy = numpy_concatenator

    def __len__(self):
        return 0

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        traced = [i for i, x in enumerate(items) if _array._holds_traced(x)]
        if not traced:
            return self._numpy[key]
        if isinstance(items[0], str) and items[0] in ("r", "c"):
            raise NotImplementedError("numpy.r_ / numpy.c_ in matrix mode "
                                      "('r' or 'c') of traced pieces")
        pieces = [_asarray(items[i]) for i in traced]

        def run(replace):
            out = self._numpy[tuple(replace.get(i, x) for i, x in enumerate(items))]
            return np.asarray(out, dtype=np.float64)
        constant = run({i: np.zeros(p.shape) for i, p in zip(traced, pieces)})
        codes, start = {}, 1
        for i, p in zip(traced, pieces):
            codes[i] = _codes(p.shape, start).astype(np.float64)
            start += p.size
        coded = run(codes)
        moved = (coded != constant) & ~(np.isnan(coded) & np.isnan(constant))
        src = pieces[0] if len(pieces) == 1 else \
            _array.concatenate([p.reshape(-1) for p in pieces])
        out = _placed(src, np.where(moved, coded, 0.0).astype(np.int64))
        return out + constant if np.any(constant != 0.0) else out


r_ = AxisConcatenator(np.r_)
c_ = AxisConcatenator(np.c_)
