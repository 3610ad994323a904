"""check_grad: pyautodiff's derivatives of a function against central
differences and the exact forward-mode oracles (dual numbers for first
derivatives, hyper-dual numbers for second ones).

Every entry of every argument is one direction.  Along each, the
derivative pyautodiff computes (a gradient entry, a Jacobian-vector
product, a Hessian column) is compared with central differences of f (of
its gradient, for a Hessian) and with f run on dual or hyper-dual numbers
seeded along that direction.  The oracles share no code with the tape:
their rules are the table in rules.py, and where NumPy code meets them it
runs on object arrays of dual numbers, elementwise.

A complex argument's entries are its real and imaginary parts, each a
direction of its own: its gradient g is read as (Re g, -Im g), autograd's
convention, against the central differences along them.  (The dual
numbers are real: f's complex arguments take none.)
"""
import numpy as np

from ..array import Array
from ..functional import grad, hvp, jvp
from ..complex_array import ComplexArray
from ..pytree import flatten, holds_complex, unflatten
from ..value import Value
from .dual import Dual, Forward, is_real
from .hyperdual import HyperDual

MODES = ("rev", "fwd")


def check_grad(f, *args, modes=("rev",), order=1, eps=1e-6, rtol=1e-5, atol=1e-8,
               duals=None):
    """Check pyautodiff's derivatives of ``f`` at ``args`` with respect to
    every argument; AssertionError naming the worst entry if any differs
    from a reference by more than ``atol + rtol * |reference|``.

    ``args`` are floats, ndarrays, and lists, tuples and dicts of them; ``f``
    returns a float or an ndarray (a scalar for ``"rev"`` and ``order=2``).
    ``modes`` picks the first derivatives checked: ``"rev"`` the gradient
    (``ad.grad``), ``"fwd"`` the Jacobian-vector products (``ad.jvp``) along
    every entry.  ``order=2`` checks the exact Hessian too, column by column
    (``ad.hvp``).  The references, each along every entry:

    - central differences of f with step ``eps`` (of ``ad.grad`` for the
      Hessian);
    - dual numbers for first derivatives, hyper-dual numbers for second
      ones: f run on them, exactly (no step), where NumPy's functions take
      them (object arrays: ``np.sin``, ``@``, ``np.sum`` ... work; code that
      wants plain floats, such as ``float(x)`` or ``scipy.special``, does
      not).  ``duals=None`` uses them where f runs on them, ``True``
      insists (f's error is raised), ``False`` skips them.  A value on
      them that is not f's value is an error: f computes something else
      on them.

    >>> import numpy as np
    >>> from pyautodiff.testing import check_grad
    >>> check_grad(lambda x, y: np.sum(np.tanh(x) * y) + y ** 2,
    ...            np.array([0.5, -1.0, 2.0]), 0.7, modes=("rev", "fwd"), order=2)

    Compare with HIPS autograd's ``check_grads(f, modes, order)``: here
    every entry is a direction (not a random one), so a failure names the
    entry, and the exact references catch what central differences cannot
    see.  f is called many times: about (3 + passes) times the number of
    entries, and their square at order 2.
    """
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ValueError(f"check_grad: modes are 'rev' and 'fwd', not {unknown or modes}")
    if order not in (1, 2):
        raise ValueError(f"check_grad: order is 1 or 2, not {order!r}")
    if not args:
        raise TypeError("check_grad: f needs at least one argument to differentiate")
    entries = _Entries(args)
    worst = _Worst(rtol, atol)
    argnums = tuple(range(len(args)))
    value = _plain(f(*args))
    numeric = [entries.central_difference(f, e, eps) for e in entries]
    if entries.complex:
        if duals:
            raise ValueError("check_grad: dual numbers are real; f's complex "
                             "arguments take none (pass duals=None or False)")
        duals = False
    forward = entries.dual_passes(f, value, duals)
    if "rev" in modes:
        g = entries.vector(grad(f, argnums)(*args), conjugate=True)
        for n, e in enumerate(entries):
            where = entries.describe(e)
            # (f's value may be a one-element array)
            worst.compare(g[n], np.reshape(numeric[n], ()), where, "gradient",
                          "central difference")
            if forward is not None:
                worst.compare(g[n], np.reshape(forward[n], ()), where, "gradient",
                              "dual numbers")
    if "fwd" in modes:
        jvp_f = jvp(f, argnums)
        for n, e in enumerate(entries):
            where = entries.describe(e)
            tangent = _plain(jvp_f(*args, entries.direction(e))[1])
            worst.compare(tangent, numeric[n], where, "jvp", "central difference")
            if forward is not None:
                worst.compare(tangent, forward[n], where, "jvp", "dual numbers")
    if order == 2:
        _check_hessian(f, args, entries, argnums, eps, duals, value, worst)
    worst.raise_if_any()


def _check_hessian(f, args, entries, argnums, eps, duals, value, worst):
    """Column j of the Hessian (ad.hvp along entry j) against central
    differences of the gradient along j and against hyper-duals."""
    grad_f, hvp_f = grad(f, argnums), hvp(f, argnums)
    hessian = entries.hyperdual_hessian(f, value, duals)
    for j, ej in enumerate(entries):
        column = entries.vector(hvp_f(*args, entries.direction(ej)))
        up = entries.vector(grad_f(*entries.moved(ej, eps)))
        down = entries.vector(grad_f(*entries.moved(ej, -eps)))
        numeric = (up - down) / (2 * eps)
        for i, ei in enumerate(entries):
            where = f"{entries.describe(ei)} and {entries.describe(ej)}"
            worst.compare(column[i], numeric[i], where, "second derivative",
                          "central difference of the gradient")
            if hessian is not None:
                worst.compare(column[i], hessian[i][j], where, "second derivative",
                              "hyper-dual numbers")


def _plain(out):
    """f's result as a float (or complex) ndarray."""
    if isinstance(out, (Value, Array, ComplexArray)):
        out = out.data
    return np.asarray(out, dtype=np.complex128 if np.iscomplexobj(out) else np.float64)


def _forward_parts(out, names):
    """The components `names` ('a', 'b', ...) of f's result on dual or
    hyper-dual numbers, each a float ndarray of the result's shape (a plain
    number in it is a constant)."""
    out = np.asarray(out, dtype=object)
    parts = [np.empty(out.shape) for _ in names]
    for pos in np.ndindex(out.shape):
        e = out[pos]
        if isinstance(e, Forward):
            for part, name in zip(parts, names):
                part[pos] = getattr(e, name)
        elif is_real(e):
            for k, part in enumerate(parts):
                part[pos] = float(e) if k == 0 else 0.0
        else:
            raise TypeError(f"f returned a {type(e).__name__} on dual numbers")
    return parts


class _Entries:
    """Every entry of f's arguments, in order: (argument, leaf, index)."""

    def __init__(self, args):
        self.args = args
        self.flat = [flatten(a, f"check_grad: argument {k}") for k, a in enumerate(args)]
        self.entries = [(k, leaf, pos) for k, (leaves, _) in enumerate(self.flat)
                        for leaf, x in enumerate(leaves) for pos in np.ndindex(np.shape(x))]
        self.complex = any(holds_complex(st.node) for _, st in self.flat)

    def __iter__(self):
        return iter(self.entries)

    def describe(self, entry):
        k, leaf, pos = entry
        where = f"argument {k}"
        if len(self.flat[k][0]) > 1:
            where += f", leaf {leaf}"
        if pos:
            where += f", index {pos}"
        return where

    def _arguments(self, make_leaf):
        """The arguments with leaf l of argument k replaced by
        make_leaf(k, l, its float64 data)."""
        out = []
        for k, (leaves, st) in enumerate(self.flat):
            new = []
            for leaf, x in enumerate(leaves):
                new_leaf = make_leaf(k, leaf, np.array(x, dtype=np.float64))
                if st.kinds[leaf] == "float":           # a float, or a dual number
                    new_leaf = new_leaf[()]
                    new_leaf = float(new_leaf) if isinstance(new_leaf, np.floating) \
                        else new_leaf
                new.append(new_leaf)
            out.append(unflatten(st, new))
        return out

    def moved(self, entry, delta):
        """The arguments with `entry` moved by delta."""
        def leaf(k, n, data):
            if (k, n) == entry[:2]:
                data[entry[2]] += delta
            return data
        return self._arguments(leaf)

    def direction(self, entry):
        """The unit vector along `entry`, shaped as the arguments (a tuple)."""
        def leaf(k, n, data):
            data = np.zeros_like(data)
            if (k, n) == entry[:2]:
                data[entry[2]] = 1.0
            return data
        return tuple(self._arguments(leaf))

    def vector(self, per_argument, conjugate=False):
        """A derivative with one part per argument (each shaped as its
        argument) as one vector, in the entries' order (a gradient's
        complex parts conjugated: the derivatives along the entries)."""
        return np.concatenate([np.ravel(np.asarray(x, dtype=np.float64))
                               for part in per_argument
                               for x in flatten(part, conjugate=conjugate)[0]])

    def central_difference(self, f, entry, eps):
        return (_plain(f(*self.moved(entry, eps)))
                - _plain(f(*self.moved(entry, -eps)))) / (2 * eps)

    def _seeded(self, cls, seeds, ncomponents):
        """The arguments as numbers of cls, entry e with tangent components
        seeds.get(e) (zeros elsewhere)."""
        zeros = (0.0,) * ncomponents

        def leaf(k, n, data):
            out = np.empty(data.shape, dtype=object)
            for pos in np.ndindex(data.shape):
                out[pos] = cls(data[pos], *seeds.get((k, n, pos), zeros))
            return out
        return self._arguments(leaf)

    def _run(self, f, cls, seeds, ncomponents, names, value, duals):
        """f on the seeded numbers: its components, or None where f does
        not take them (and duals is None)."""
        try:
            parts = _forward_parts(f(*self._seeded(cls, seeds, ncomponents)), names)
        except Exception:
            if duals:
                raise
            return None
        # the same function on both, up to rounding (NumPy sums object arrays
        # in another order than float ones)
        scale = 1.0 + float(np.max(np.abs(value), initial=0.0))
        if parts[0].shape != value.shape or not np.allclose(
                parts[0], value, rtol=1e-7, atol=1e-7 * scale, equal_nan=True):
            raise AssertionError(
                f"check_grad: f gives {parts[0]!r} on {cls.__name__} numbers but "
                f"{value!r} on floats: it does not compute the same on both "
                "(pass duals=False)")
        return parts[1:]

    def dual_passes(self, f, value, duals):
        """The tangent of f along every entry by dual numbers (a list in
        the entries' order), or None."""
        if duals is False:
            return None
        tangents = []
        for e in self:
            parts = self._run(f, Dual, {e: (1.0,)}, 1, ("a", "b"), value, duals)
            if parts is None:
                return None
            tangents.append(parts[0])
        return tangents

    def hyperdual_hessian(self, f, value, duals):
        """H[i][j] by hyper-dual numbers seeded along entries i and j, or None."""
        if duals is False:
            return None
        hessian = []
        for ei in self:
            row = []
            for ej in self:
                seeds = {ei: (1.0, 0.0)}
                seeds[ej] = (seeds.get(ej, (0.0, 0.0))[0], 1.0)
                parts = self._run(f, HyperDual, seeds, 2, ("a", "d"), value, duals)
                if parts is None:
                    return None
                row.append(float(np.reshape(parts[0], ())))
            hessian.append(row)
        return hessian


class _Worst:
    """The comparison that misses its tolerance by the most."""

    def __init__(self, rtol, atol):
        self.rtol, self.atol = rtol, atol
        self.worst = None
        self.failed = 0

    def compare(self, got, reference, where, what, reference_name):
        if np.iscomplexobj(got) or np.iscomplexobj(reference):
            # a complex result's real and imaginary parts, one after the other
            got, reference = (np.stack([np.real(v), np.imag(v)], axis=-1)
                              for v in (got, reference))
        got = np.asarray(got, dtype=np.float64)
        reference = np.asarray(reference, dtype=np.float64)
        if got.shape != reference.shape:
            raise AssertionError(f"check_grad: {where}: the {what} has shape "
                                 f"{got.shape}, the {reference_name} {reference.shape}")
        for pos in np.ndindex(got.shape):
            a, r = float(got[pos]), float(reference[pos])
            if np.isnan(a) and np.isnan(r):
                continue
            excess = abs(a - r) - (self.atol + self.rtol * abs(r))
            if not excess <= 0:                 # NaN on one side too
                self.failed += 1
                excess = np.inf if np.isnan(excess) else excess
                if self.worst is None or excess > self.worst[0]:
                    at = f"{where}, output index {pos}" if pos else where
                    self.worst = (excess, at, what, a, reference_name, r)

    def raise_if_any(self):
        if self.worst is None:
            return
        _, where, what, a, reference_name, r = self.worst
        also = f"; {self.failed - 1} more comparisons fail" if self.failed > 1 else ""
        raise AssertionError(f"check_grad: {where}: {what} {a!r}, {reference_name} "
                             f"{r!r} (difference {abs(a - r):.3g}){also}")
