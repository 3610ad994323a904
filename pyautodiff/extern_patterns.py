"""Jacobian patterns of the library's own extern ops, for
``ExternRule.sparsity`` (sparse.py reads them): which output elements
depend on which operand elements, one scipy sparse boolean matrix per
operand, (output size, operand size), built in time proportional to its
nonzeros.  Flat indices are C order, as the tape's.

    elementwise(out_shape, *shapes)          broadcast operands (scipy.special)
    blockwise(out_core, cores, blocks)       a stack of independent blocks
                                             (numpy.linalg's batched ops;
                                             by_columns: a solve's columns,
                                             on_elements: a triangle read)
    cumulative(axis)                         a cumulative sum along axis
    convolution(mode)                        scipy.signal's canonical convolution
                                             (through a constant operand's
                                             nonzeros only)

Each is written once, with NumPy's broadcasting of index arrays; SciPy is
imported only when a pattern is asked for (sparse results need it).
"""
import numpy as np


def _sparse():
    import scipy.sparse
    return scipy.sparse


def _size(shape):
    return int(np.prod(shape, dtype=np.int64))


def _from_rows(rows, cols, shape):
    """The boolean matrix with ones at (rows, cols) (no duplicates)."""
    sp = _sparse()
    rows = np.asarray(rows, np.int64).ravel()
    cols = np.asarray(cols, np.int64).ravel()
    return sp.csr_array((np.ones(len(rows), bool), (rows, cols)), shape=shape)


def _batch_index(batch_out, batch):
    """For each element of the broadcast batch shape batch_out, the flat
    index of the element of batch (broadcast against it) it reads."""
    if _size(batch_out) == 0:
        return np.zeros(0, np.int64)
    own = np.arange(_size(batch), dtype=np.int64).reshape(batch)
    return np.broadcast_to(own, batch_out).reshape(-1)


def blockwise(out_core, cores, blocks=None):
    """sparsity(out_shape, *shapes) of an op on stacks: the last out_core
    axes of the output and the last cores[k] of operand k are each
    element's block, the leading ones a batch broadcast as NumPy does;
    an output block depends on its batch's block of each operand only,
    on the elements that blocks[k](out_block_shape, block_shape) marks
    (a boolean matrix, block sizes; None: all of them)."""
    blocks = blocks or [None] * len(cores)

    def sparsity(out_shape, *shapes):
        out_shape = tuple(out_shape)
        nb = len(out_shape) - out_core
        batch_out, ob = out_shape[:nb], out_shape[nb:]
        so = _size(ob)
        parts = []
        for shape, core, block in zip(shapes, cores, blocks):
            shape = tuple(shape)
            batch, kb = shape[:len(shape) - core], shape[len(shape) - core:]
            sk = _size(kb)
            if block is None:
                br, bc = np.divmod(np.arange(so * sk, dtype=np.int64), max(sk, 1))
            else:
                br, bc = (np.asarray(z, np.int64) for z in
                          _sparse().coo_array(block(ob, kb)).coords)
            which = _batch_index(batch_out, batch)
            rows = (np.arange(len(which), dtype=np.int64)[:, None] * so + br)
            cols = which[:, None] * sk + bc
            parts.append(_from_rows(rows, cols, (_size(out_shape), _size(shape))))
        return parts
    return sparsity


def by_columns(out_block, block):
    """A block for blockwise: a (n, k) result whose column j depends on
    column j of a (n, k) operand only (a solve's right-hand sides)."""
    sp = _sparse()
    n, k = block
    return sp.kron(np.ones((n, n), bool), sp.eye_array(k, dtype=bool), format="csr")


def on_elements(mask):
    """A block for blockwise: every element of the result's block on the
    operand's elements where mask (of the operand's block shape) holds
    (eigh's, which reads one triangle)."""
    cols = np.flatnonzero(np.asarray(mask, bool))

    def block(out_block, block_shape):
        so = _size(out_block)
        return _from_rows(np.repeat(np.arange(so, dtype=np.int64), len(cols)),
                          np.tile(cols, so), (so, _size(block_shape)))
    return block


def elementwise(out_shape, *shapes):
    """An elementwise op of broadcast operands: output element i on the
    element of each operand broadcast to i."""
    return blockwise(0, [0] * len(shapes))(out_shape, *shapes)


def cumulative(axis):
    """sparsity(out_shape, shape) of a cumulative sum along axis: element
    i along the axis on elements 0..i (the other axes the same)."""
    def sparsity(out_shape, shape):
        pre, n = _size(shape[:axis]), shape[axis]
        post = _size(shape[axis + 1:])
        ii, jj = np.tril_indices(n)
        base = (np.arange(pre, dtype=np.int64)[:, None, None] * n)
        q = np.arange(post, dtype=np.int64)[None, None, :]
        rows = (base + ii[None, :, None]) * post + q
        cols = (base + jj[None, :, None]) * post + q
        return [_from_rows(rows, cols, (_size(shape), _size(shape)))]
    return sparsity


def _band(nrows, ncols, lo, hi):
    """The (nrows, ncols) boolean matrix of the (i, j) with lo <= i - j <= hi."""
    i = np.arange(nrows, dtype=np.int64)
    start = np.clip(i - hi, 0, ncols)
    stop = np.clip(i - lo + 1, 0, ncols)
    counts = np.maximum(stop - start, 0)
    rows = np.repeat(i, counts)
    # each row's columns start..stop-1
    offsets = np.arange(counts.sum(), dtype=np.int64) - np.repeat(
        np.cumsum(counts) - counts, counts)
    return _from_rows(rows, np.repeat(start, counts) + offsets, (nrows, ncols))


def _kron(*factors):
    sp = _sparse()
    out = factors[0]
    for f in factors[1:]:
        out = sp.kron(out, f, format="csr")
    return sp.csr_array(out, dtype=bool)


def _ones(m, n):
    return _band(m, n, -n, m) if m and n else _sparse().csr_array((m, n), dtype=bool)


def _grid(shape):
    """Every index of shape, one row each, in C order."""
    return np.indices(shape, dtype=np.int64).reshape(len(shape), _size(shape)).T


def _through_constant(side, const, var_shape, out_shape, shift):
    """The canonical convolution's pattern on its operand side (0: a, 1:
    b) when the other operand is the constant const: out[i, j, n] on
    v[r, e, t] where the constant's element c[s, e, u] with n = t + u -
    shift is not 0 (r, s: i, j for side 0, j, i for side 1) -- each
    product of the sum once, the constant's zeros none."""
    nz = np.argwhere(np.asarray(const) != 0)
    s, e, u = nz[:, 0], nz[:, 1], nz[:, 2:]
    nv, d, cv = var_shape[0], var_shape[1], tuple(var_shape[2:])
    q, co = out_shape[1], tuple(out_shape[2:])
    n = u[:, None, :] + _grid(cv)[None, :, :] - shift        # (nonzero, t, axis)
    k, t = np.nonzero(np.all((n >= 0) & (n < np.array(co, np.int64)), axis=-1))
    nflat = np.ravel_multi_index(tuple(n[k, t].T), co) if co else np.zeros(len(k), np.int64)
    r = np.arange(nv, dtype=np.int64)[:, None]
    pair = (r * q + s[k]) if side == 0 else (s[k] * q + r)
    rows = pair * _size(co) + nflat
    cols = (r * d + e[k]) * _size(cv) + t
    return _from_rows(rows, cols, (_size(out_shape), _size(var_shape)))


def convolution(mode):
    """sparsity(out_shape, a_shape, b_shape, constants=(None, None)) of
    scipy_signal's canonical convolution: a (p, d, *ca), b (q, d, *cb),
    out (p, q, *co), out[i, j, n] = sum over d and k of a[i, d, k] b[j, d,
    n - k] ('full'), or the part where b lies inside a ('valid'): on row i
    of a and j of b, every d, and along each convolved axis a band.  With
    one operand a constant (its values in constants), the other's pattern
    goes through the constant's nonzeros only (the constant's own is
    empty: it moves nothing)."""
    def sparsity(out_shape, sa, sb, constants=(None, None)):
        if (constants[0] is None) != (constants[1] is None):
            # n = k + m ('full'), or k + m - (nb - 1) ('valid': the windows
            # of a against b reversed), along each convolved axis
            shift = 0 if mode == "full" else np.array(sb[2:], np.int64) - 1
            side = 0 if constants[0] is None else 1
            const, var = (constants[1], sa) if side == 0 else (constants[0], sb)
            moving = _through_constant(side, const, tuple(var), tuple(out_shape), shift)
            fixed = _sparse().csr_array((_size(out_shape), _size(sb if side == 0 else sa)),
                                        dtype=bool)
            return [moving, fixed] if side == 0 else [fixed, moving]
        p, d, ca = sa[0], sa[1], tuple(sa[2:])
        q, cb = sb[0], tuple(sb[2:])
        co = tuple(out_shape[2:])
        sp = _sparse()
        band_a, band_b = [], []
        for no, na, nb in zip(co, ca, cb):
            if mode == "full":      # n - k in [0, nb), n - m in [0, na)
                band_a.append(_band(no, na, 0, nb - 1))
                band_b.append(_band(no, nb, 0, na - 1))
            else:                   # k in [n, n + nb), every m of b
                band_a.append(_band(no, na, 1 - nb, 0))
                band_b.append(_ones(no, nb))
        one = sp.csr_array(np.ones((1, 1), bool))
        ma = _kron(one, *band_a)
        mb = _kron(one, *band_b)
        pa = _kron(sp.eye_array(p, dtype=bool, format="csr"), _ones(q, d), ma)
        pb = _kron(_ones(p, 1), sp.eye_array(q, dtype=bool, format="csr"),
                   _ones(1, d), mb)
        return [pa, pb]
    return sparsity
