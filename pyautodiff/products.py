"""Products of Arrays with NumPy's signatures: dot, vdot, inner, outer,
tensordot, einsum, kron and cross.  Each is composed of recorded ops
(transposes, reshapes, diagonals by index maps, sums, broadcast products
and matrix products), so its derivatives are right at every order and its
contractions run at BLAS speed through matmul."""
import string

import numpy as np

from .array import Array, _asarray, _plain, normalize_axis_tuple
from .matmul import matmul
from .value import Value


def _traced(x):
    return isinstance(x, (Array, Value))


def _multiply(a, b):
    """a * b, whichever side is traced."""
    return a * b if _traced(a) else b * a


# -- einsum: subscripts parsed into letters, then pairwise contractions --------

_LETTERS = string.ascii_letters


def _sublist_letters(sublist):
    """einsum's interleaved form: [0, 1, Ellipsis] as 'ab...'."""
    out = []
    for s in sublist:
        if s is Ellipsis:
            out.append("...")
        else:
            out.append(_LETTERS[int(s)])
    return "".join(out)


def _parse(args):
    """(subscripts, operands) of einsum's two calling forms."""
    if isinstance(args[0], str):
        return args[0].replace(" ", ""), list(args[1:])
    operands, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(operands) > len(subs):          # a trailing output sublist
        out = operands.pop()
        operands, subs = operands, subs
    text = ",".join(_sublist_letters(s) for s in subs)
    if out is not None:
        text += "->" + _sublist_letters(out)
    return text, operands


def _letters(subscripts, shapes):
    """Each operand's letters and the output's, '...' expanded into letters
    of its own (aligned on the right, as NumPy broadcasts them)."""
    if "->" in subscripts:
        ins, out = subscripts.split("->")
    else:
        ins, out = subscripts, None
    ins = ins.split(",")
    if len(ins) != len(shapes):
        raise ValueError(f"numpy.einsum: {len(ins)} operands in the subscripts, "
                         f"{len(shapes)} given")
    used = set("".join(ins).replace(".", ""))
    spare = [c for c in _LETTERS if c not in used]
    n_ell = max([len(shape) - len(s.replace("...", "")) for s, shape in zip(ins, shapes)
                 if "..." in s] + [0])
    ell = spare[:n_ell]
    expanded = []
    for s, shape in zip(ins, shapes):
        if "..." in s:
            k = len(shape) - len(s.replace("...", ""))
            s = s.replace("...", "".join(ell[n_ell - k:]))
        if len(s) != len(shape):
            raise ValueError(f"numpy.einsum: subscripts {s!r} for an operand of "
                             f"shape {shape}")
        expanded.append(s)
    if out is None:         # implicit: '...' first, then the letters seen once
        every = "".join(expanded)
        out = "".join(ell) + "".join(sorted(c for c in set(every)
                                            if every.count(c) == 1 and c not in ell))
    else:
        out = out.replace("...", "".join(ell))
    return expanded, out


def _diagonal(x, s):
    """x (letters s) with repeated letters taken on their diagonal."""
    unique = "".join(dict.fromkeys(s))
    if unique == s:
        return x, s
    # the flat positions of the diagonal: einsum of the positions themselves
    positions = np.einsum(f"{s}->{unique}", np.arange(x.size).reshape(x.shape))
    return x.reshape(-1)[positions], unique


def _sum_out(x, s, keep):
    """x (letters s) summed over the letters not kept."""
    axes = tuple(k for k, c in enumerate(s) if c not in keep)
    if not axes:
        return x, s
    return x.sum(axis=axes), "".join(c for c in s if c in keep)


def _contract(a, sa, b, sb, keep, sizes):
    """a (letters sa) times b (letters sb), summed over the shared letters
    not kept: one batched matrix product."""
    a, sa = _sum_out(a, sa, set(sb) | keep)
    b, sb = _sum_out(b, sb, set(sa) | keep)
    batch = [c for c in sa if c in sb and c in keep]
    summed = [c for c in sa if c in sb and c not in keep]
    left = [c for c in sa if c not in sb]
    right = [c for c in sb if c not in sa]

    def size(cs):
        return int(np.prod([sizes[c] for c in cs], dtype=np.int64))

    at = a.transpose(tuple(sa.index(c) for c in batch + left + summed))
    bt = b.transpose(tuple(sb.index(c) for c in batch + summed + right))
    lead = tuple(sizes[c] for c in batch)
    out = matmul(at.reshape(lead + (size(left), size(summed))),
                 bt.reshape(lead + (size(summed), size(right))))
    return (out.reshape(lead + tuple(sizes[c] for c in left + right)),
            "".join(batch + left + right))


def einsum(*args, optimize=False, **kwargs):
    """NumPy's einsum of Arrays (and constants), any subscripts: both
    calling forms, '...', implicit outputs, repeated letters (diagonals),
    broadcasting; optimize= chooses the order of the pairwise products
    as NumPy's einsum_path does."""
    for k in ("out", "dtype"):
        if kwargs.get(k) is not None:
            raise TypeError(f"numpy.einsum: {k}= is not supported for Arrays "
                            "(the result is a new float64 Array)")
    subscripts, operands = _parse(args)
    arrays = [_asarray(x) for x in operands]
    specs, out = _letters(subscripts, [x.shape for x in arrays])
    sizes = {}
    for s, x in zip(specs, arrays):
        for c, n in zip(s, x.shape):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise ValueError(f"numpy.einsum: operands could not be broadcast "
                                 f"(subscript {c!r}: {sizes[c]} and {n})")
            sizes[c] = max(sizes.get(c, 1), n)
    if len(set(out)) != len(out):
        raise ValueError(f"numpy.einsum: output subscript repeated: {out!r}")
    if any(c not in sizes for c in out):
        raise ValueError(f"numpy.einsum: output subscript not in the inputs: {out!r}")
    terms = []
    for x, s in zip(arrays, specs):
        x, s = _diagonal(x, s)
        # a broadcast dimension of length 1: the operand does not depend on it
        ones = [k for k, c in enumerate(s) if x.shape[k] == 1 and sizes[c] != 1]
        if ones:
            x = x.reshape(tuple(n for k, n in enumerate(x.shape) if k not in ones))
            s = "".join(c for k, c in enumerate(s) if k not in ones)
        terms.append((x, s))
    if len(terms) > 1 and optimize is not False:
        path = np.einsum_path(subscripts, *[np.zeros(x.shape) for x in arrays],
                              optimize=optimize)[0][1:]
    else:
        path = [(0, 1)] * (len(terms) - 1)
    for step in path:
        picked = [terms[k] for k in step]
        terms = [t for k, t in enumerate(terms) if k not in step]
        x, s = picked[0]
        for k, (y, r) in enumerate(picked[1:]):
            keep = set(out).union(*[set(t[1]) for t in terms + picked[k + 2:]])
            x, s = _contract(x, s, y, r, keep, sizes)
        terms.append((x, s))
    (x, s), = terms
    x, s = _sum_out(x, s, set(out))
    missing = [c for c in out if c not in s]
    if missing:             # broadcast over what no operand depends on
        x = x.reshape(x.shape + (1,) * len(missing)) * \
            np.ones(tuple(sizes[c] for c in missing))
        s += "".join(missing)
    return x.transpose(tuple(s.index(c) for c in out)) if s != out else x


# -- the products einsum generalizes ----------------------------------------------

def tensordot(a, b, axes=2):
    a, b = _asarray(a), _asarray(b)
    if isinstance(axes, (int, np.integer)):
        axes_a = list(range(a.ndim - axes, a.ndim))
        axes_b = list(range(axes))
    else:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError("numpy.tensordot: shape-mismatch for sum")
    axes_a = normalize_axis_tuple(axes_a, a.ndim)
    axes_b = normalize_axis_tuple(axes_b, b.ndim)
    for i, j in zip(axes_a, axes_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError("numpy.tensordot: shape-mismatch for sum")
    sa = _LETTERS[:a.ndim]
    free = iter(_LETTERS[a.ndim:])
    sb = "".join(sa[axes_a[axes_b.index(k)]] if k in axes_b else next(free)
                 for k in range(b.ndim))
    out = "".join(c for k, c in enumerate(sa) if k not in axes_a) + \
        "".join(c for k, c in enumerate(sb) if k not in axes_b)
    return einsum(f"{sa},{sb}->{out}", a, b)


def dot(a, b, out=None):
    if out is not None:
        raise TypeError("numpy.dot: out= is not supported for Arrays")
    na, nb = np.ndim(a._d if _traced(a) else a), np.ndim(b._d if _traced(b) else b)
    if na == 0 or nb == 0:
        return _multiply(a, b)
    if na <= 2 and nb <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([-1], [-2 if nb >= 2 else -1]))


def vdot(a, b):
    return matmul(_asarray(a).reshape(-1), _asarray(b).reshape(-1))


def inner(a, b):
    a, b = _asarray(a), _asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([-1], [-1]))


def outer(a, b, out=None):
    if out is not None:
        raise TypeError("numpy.outer: out= is not supported for Arrays")
    return _asarray(a).reshape(-1, 1) * _asarray(b).reshape(1, -1)


def kron(a, b):
    """a's elements times b, in blocks: a broadcast product of a and b with
    their dimensions interleaved, then merged."""
    a, b = _asarray(a), _asarray(b)
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + a.shape
    sb = (1,) * (n - b.ndim) + b.shape
    prod = a.reshape(tuple(d for m in sa for d in (m, 1))) * \
        b.reshape(tuple(d for m in sb for d in (1, m)))
    return prod.reshape(tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors (a 2-vector's third component 0; two
    2-vectors give the scalar third component), broadcast as NumPy's."""
    a, b = _asarray(a), _asarray(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _moveaxis(a, axisa, -1) if a.ndim else a
    b = _moveaxis(b, axisb, -1) if b.ndim else b
    if a.ndim == 0 or b.ndim == 0 or a.shape[-1] not in (2, 3) or \
            b.shape[-1] not in (2, 3):
        raise ValueError("numpy.cross: incompatible dimensions for cross product "
                         "(dimension must be 2 or 3)")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]

    def part(x, k):
        return x[..., k] if k < x.shape[-1] else None

    def times(x, y):
        return None if x is None or y is None else x * y

    def minus(x, y):
        if x is None:
            return None if y is None else -y
        return x if y is None else x - y

    a0, a1, a2 = (part(a, k) for k in range(3))
    b0, b1, b2 = (part(b, k) for k in range(3))
    comps = [minus(times(a1, b2), times(a2, b1)), minus(times(a2, b0), times(a0, b2)),
             minus(times(a0, b1), times(a1, b0))]
    shape = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    comps = [np.zeros(shape) + (c if c is not None else 0.0) for c in comps]
    c = np.stack([_asarray(c) for c in comps], axis=-1)
    return _moveaxis(c, -1, axisc)


def _moveaxis(a, source, destination):
    a = _asarray(a)
    src = normalize_axis_tuple(source, a.ndim)
    dst = normalize_axis_tuple(destination, a.ndim)
    order = [k for k in range(a.ndim) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a.transpose(tuple(order))


# numpy.linalg's versions (NumPy 2, the array API's): narrower arguments
def _linalg_outer(a, b):
    if np.ndim(_plain(a)) != 1 or np.ndim(_plain(b)) != 1:
        raise ValueError("numpy.linalg.outer: input arrays must be one-dimensional")
    return outer(a, b)


def _linalg_cross(a, b, axis=-1):
    if np.shape(_plain(a))[axis] != 3 or np.shape(_plain(b))[axis] != 3:
        raise ValueError("numpy.linalg.cross: both input arrays must be (arrays of) "
                         "3-dimensional vectors")
    return cross(a, b, axis=axis)


def vecdot(x1, x2, axis=-1):
    """The vector products along axis (broadcast): a sum of products."""
    return (_asarray(x1) * x2).sum(axis=axis)


NUMPY_FUNCTIONS = {
    np.einsum: einsum, np.tensordot: tensordot, np.dot: dot, np.vdot: vdot,
    np.inner: inner, np.outer: outer, np.kron: kron, np.cross: cross,
    np.linalg.outer: _linalg_outer, np.linalg.cross: _linalg_cross,
    np.linalg.tensordot: tensordot, np.linalg.matmul: matmul,
    np.linalg.vecdot: vecdot,
}
