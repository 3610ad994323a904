"""Constraints and bounds for ``ad.minimize``, with exact sparse derivatives.

The user's constraints (scipy's dicts, ``NonlinearConstraint``,
``LinearConstraint``) become one vector function

    G(x) = [c_1(x).ravel(), c_2(x).ravel(), ...]     with  lb <= G(x) <= ub

and the Lagrangian, the one function whose Hessian the solvers need,

    L(x, sigma, lam) = sigma f(x) + lam . G(x)

(IPOPT's form: its Hessian in x is sigma Hess f + sum_i lam_i Hess G_i).
G and L are recorded once each (``ad.record``, L with argnum=0) and every
evaluation is a C replay.  The Jacobian of G and the Hessian of L come
from the recordings' sparse derivatives, on structures fixed once, at the
start (``Pattern``).

The multipliers handed back to the user follow one convention, whatever
the solver's own:

    grad f(x) = sum_k J_k(x)^T lambda_k + z

(L = f - lambda . c, Nocedal and Wright's): lambda_k >= 0 where an 'ineq'
constraint c_k >= 0 (or a lower bound lb <= c_k) is active, <= 0 where an
upper bound c_k <= ub is; z, the bounds' multiplier, is >= 0 at an active
lower bound of x and <= 0 at an active upper one.
"""
import numbers

import numpy as np

from .record import BranchError, Recorded
from .sparse import recorded_plan


# -- the user's constraints and bounds -----------------------------------------

class Constraint:
    """One of the user's constraints: lb <= fun(x) <= ub, elementwise."""

    def __init__(self, index, fun, lb, ub, kind):
        self.index, self.fun, self.kind = index, fun, kind
        self.lb, self.ub = lb, ub        # scalars or arrays, broadcast later
        self.size = None                 # set when G is first recorded

    def __repr__(self):
        return f"constraint {self.index} ({self.kind})"


def parse_constraints(constraints):
    """The user's constraints (a dict, a scipy constraint object, or a
    sequence of them) as a list of Constraint."""
    if constraints is None:
        return []
    if isinstance(constraints, dict) or _is_scipy_constraint(constraints):
        constraints = [constraints]
    try:
        items = list(constraints)
    except TypeError:
        raise TypeError(f"minimize: constraints must be a dict, a "
                        f"NonlinearConstraint or a sequence of them, not "
                        f"{type(constraints).__name__}") from None
    return [_one_constraint(k, c) for k, c in enumerate(items)]


def _is_scipy_constraint(c):
    return type(c).__name__ in ("NonlinearConstraint", "LinearConstraint")


def _one_constraint(k, c):
    if isinstance(c, dict):
        unknown = sorted(set(c) - {"type", "fun", "args", "jac"})
        if unknown:
            raise ValueError(f"minimize: constraint {k} has the unknown key "
                             f"{unknown[0]!r}; a constraint dict has 'type', "
                             "'fun' and optionally 'args' (and 'jac', unused: "
                             "the Jacobian comes from the recording)")
        kind = c.get("type")
        if not isinstance(kind, str) or kind.lower() not in ("eq", "ineq"):
            raise ValueError(f"minimize: constraint {k} has type {kind!r}; "
                             "the types are 'eq' (fun(x) == 0) and 'ineq' "
                             "(fun(x) >= 0)")
        fun = c.get("fun")
        if not callable(fun):
            raise TypeError(f"minimize: constraint {k} needs a callable "
                            f"'fun', not {type(fun).__name__}")
        args = c.get("args", ())
        if not isinstance(args, tuple):
            args = (args,)
        if args:
            fun = with_args(fun, args)
        kind = kind.lower()
        return Constraint(k, fun, 0.0, 0.0 if kind == "eq" else np.inf, kind)
    name = type(c).__name__
    if name == "NonlinearConstraint":
        if not callable(c.fun):
            raise TypeError(f"minimize: constraint {k} (NonlinearConstraint) "
                            f"needs a callable fun, not {type(c.fun).__name__}")
        return Constraint(k, c.fun, c.lb, c.ub, "NonlinearConstraint")
    if name == "LinearConstraint":
        A = c.A.toarray() if hasattr(c.A, "toarray") else np.asarray(c.A, float)
        A = np.atleast_2d(np.asarray(A, np.float64))
        return Constraint(k, lambda x: A @ x, c.lb, c.ub, "LinearConstraint")
    raise TypeError(f"minimize: constraint {k} is a {name}; a constraint is a "
                    "dict {'type': 'eq' or 'ineq', 'fun': c, 'args': ...}, a "
                    "scipy.optimize.NonlinearConstraint or a LinearConstraint")


def with_args(f, args):
    """x -> f(x, *args), named as f (recordings and errors say its name)."""
    def bound(x):
        return f(x, *args)
    bound.__name__ = getattr(f, "__name__", "f")
    return bound


def parse_bounds(bounds, n):
    """(lb, ub), two float arrays of n, from scipy's bounds: a sequence of n
    (lo, hi) pairs with None for none, or an object with lb and ub (as
    scipy.optimize.Bounds); (None, None) for no bounds."""
    if bounds is None:
        return None, None
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        lb = _broadcast(bounds.lb, n, -np.inf, "the lower bounds")
        ub = _broadcast(bounds.ub, n, np.inf, "the upper bounds")
    else:
        try:
            pairs = list(bounds)
        except TypeError:
            raise TypeError(f"minimize: bounds must be a sequence of (lo, hi) "
                            f"pairs or a scipy.optimize.Bounds, not "
                            f"{type(bounds).__name__}") from None
        if len(pairs) != n:
            raise ValueError(f"minimize: bounds has {len(pairs)} (lo, hi) "
                             f"pairs and x has {n} elements: one pair per "
                             "element of x")
        lb, ub = np.empty(n), np.empty(n)
        for i, pair in enumerate(pairs):
            try:
                lo, hi = pair
            except (TypeError, ValueError):
                raise ValueError(f"minimize: bounds[{i}] is {pair!r}, not a "
                                 "(lo, hi) pair") from None
            lb[i] = -np.inf if lo is None else _number(lo, f"bounds[{i}][0]")
            ub[i] = np.inf if hi is None else _number(hi, f"bounds[{i}][1]")
    bad = np.flatnonzero(~(lb <= ub))
    if bad.size:
        i = bad[0]
        raise ValueError(f"minimize: bound {i} has lower {lb[i]} > upper "
                         f"{ub[i]} (or a nan)")
    return lb, ub


def _number(v, what):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"minimize: {what} must be a number or None, not "
                        f"{type(v).__name__}")
    return float(v)


def _broadcast(v, n, none, what):
    """v (a number, one or n of them, as scipy broadcasts them; None for
    `none`) as n floats."""
    if v is None:
        return np.full(n, none)
    arr = np.asarray(v, dtype=np.float64)
    if arr.size == 1:           # (scipy's Bounds(0, 1) holds array([0.]))
        return np.full(n, float(arr.reshape(-1)[0]))
    arr = arr.reshape(-1)
    if arr.size != n:
        raise ValueError(f"minimize: {what} have {arr.size} elements where "
                         f"{n} are needed")
    return arr.copy()


def check_start(objective, problem, flat, where="x0", jacobian=True,
                hessian=None):
    """Everything a solver gets where it starts (flat; where, in words)
    finite, or a ValueError naming the first that is not, and where: f and
    its gradient (objective: f's minimize._Recording), the constraints'
    values, their Jacobian (jacobian: the method takes it) and the
    Lagrangian's Hessian (where the method takes it; hessian: its values
    that the solver got, of its own sigma and lam).  A solver handed a nan
    there fails later, less clearly, and IPOPT's linear solver may crash
    on it."""
    check_objective(*objective.value_and_grad(flat), problem.space, where)
    if problem.m:
        problem.check_constraints(problem.constraint_values(flat), where)
        if jacobian:
            problem.check_jacobian(problem.jacobian_values(flat), where)
    if problem.L is not None:
        problem.check_hessian(flat, where, hessian)


def check_objective(f, grad, space, where="x0"):
    """f's value and gradient at `where` (in words) finite, or a ValueError
    naming the first component that is not."""
    if not np.isfinite(f):
        raise ValueError(f"minimize: f is {f} at {where}, not a finite number")
    bad = _first_nonfinite(grad)
    if bad is not None:
        raise ValueError(f"minimize: the gradient of f is not finite at "
                         f"{where}: its component in {space.element(bad)} "
                         f"is {grad[bad]}{DIFFERENTIABLE}")


# what a derivative that is not finite at the start asks of the user
DIFFERENTIABLE = ("; start from a point where f and the constraints are "
                  "differentiable (sqrt or norm at 0 is not)")


def _first_nonfinite(values):
    """The index of the first nan or inf in values, or None."""
    bad = np.flatnonzero(~np.isfinite(values))
    return int(bad[0]) if bad.size else None


# -- G and L, recorded ---------------------------------------------------------

def as_vector(out, constraint):
    """A constraint's value as a flat vector on the tape (a list or tuple of
    numbers is stacked, as scipy takes it)."""
    from .array import Array, from_object_array, reshape, stack
    from .value import Value
    if isinstance(out, (list, tuple)):
        out = stack(list(out)) if out else np.zeros(0)
    lifted = from_object_array(out)     # np.array([...]) of traced numbers
    if lifted is not None:
        out = lifted
    if isinstance(out, (Array, Value)):
        return reshape(out, (-1,))
    try:
        arr = np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"minimize: {constraint} returned "
                        f"{type(out).__name__}, not numbers") from None
    return arr.reshape(-1)


class Problem:
    """f, the constraints G and the Lagrangian L recorded at x0, with the
    sparse derivatives' structures (found once, here) and the evaluations
    the solvers call, on flat float64 vectors."""

    def __init__(self, f, space, constraints, hessian=True):
        self.f, self.space, self.constraints = f, space, constraints
        self.n = space.x0.size
        x0 = space.arg(space.x0)
        self.G = None
        if constraints:
            self.G = Derivatives(self._g, (x0,))
            self.G(x0)      # (the constraints' sizes)
            self.sizes = [c.size for c in constraints]
            self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
            self.m = int(self.offsets[-1])
            self.lb, self.ub = self._constraint_bounds()
        else:
            self.sizes, self.offsets, self.m = [], np.zeros(1, int), 0
            self.lb = self.ub = np.zeros(0)
        self.jac_pattern = self.G.jacobian_pattern() if self.G else None
        # the Lagrangian, for the solvers that take its Hessian
        self.L = self.hess_pattern = None
        if hessian:
            self.L = Derivatives(self._lagrangian, (x0, 1.0, np.ones(self.m))
                                 if self.m else (x0, 1.0))
            self.hess_pattern = self.L.hessian_pattern(lower=True)

    # the functions recorded

    def _g(self, x):
        from .array import concatenate
        parts = []
        for c in self.constraints:
            v = as_vector(c.fun(x), c)
            size = int(np.prod(v.shape))
            if c.size is None:
                c.size = size
            elif size != c.size:
                raise ValueError(f"minimize: {c} returned {size} values where "
                                 f"it returned {c.size} before: a constraint's "
                                 "output must keep its shape")
            parts.append(v)
        # (one constraint: no copy of its values onto the tape)
        return parts[0] if len(parts) == 1 else concatenate(parts)

    def _lagrangian(self, x, sigma, lam=None):
        from .functions import sum as sum_
        value = sigma * self.f(x)
        if lam is not None:
            value = value + sum_(lam * self._g(x))
        return value

    def _constraint_bounds(self):
        lbs, ubs = [], []
        for c in self.constraints:
            what = f"{c}'s bounds"
            lbs.append(_broadcast(c.lb, c.size, -np.inf, what + " (lb)"))
            ubs.append(_broadcast(c.ub, c.size, np.inf, what + " (ub)"))
            bad = np.flatnonzero(~(lbs[-1] <= ubs[-1]))
            if bad.size:
                raise ValueError(f"minimize: {c} has lb > ub (or a nan) at "
                                 f"element {bad[0]}")
        return np.concatenate(lbs), np.concatenate(ubs)

    # finite, or a ValueError naming what is not and where (in words)

    def check_constraints(self, values, where="x0"):
        """G's values"""
        bad = _first_nonfinite(values)
        if bad is not None:
            k, element = self._row(bad)
            raise ValueError(f"minimize: {self.constraints[k]} is not finite "
                             f"at {where}: its element {element} is "
                             f"{values[bad]}")

    def check_jacobian(self, values, where="x0"):
        """G's Jacobian, its values on jac_pattern"""
        bad = _first_nonfinite(values)
        if bad is not None:
            k, element = self._row(self.jac_pattern.rows[bad])
            x = self.space.element(self.jac_pattern.cols[bad])
            raise ValueError(
                f"minimize: the Jacobian of {self.constraints[k]} is not "
                f"finite at {where}: the derivative of its element {element} "
                f"in {x} is {values[bad]}{DIFFERENTIABLE}")

    def check_hessian(self, flat, where="x0", values=None):
        """The Lagrangian's Hessian at flat: values, a solver's (of its own
        sigma and lam), or each term's weight 1 (a nan in any term shows in
        the sum); where it is not finite, the term that is not is found."""
        if values is None:
            values = self.hessian_values(flat, 1.0, np.ones(self.m))
        if _first_nonfinite(values) is not None:
            self._nonfinite_hessian_term(flat, where)

    def _row(self, row):
        """(constraint index, element of that constraint) of G's row."""
        k = int(np.searchsorted(self.offsets, row, side="right")) - 1
        return k, int(row - self.offsets[k])

    def _nonfinite_hessian_term(self, flat, where):
        """The ValueError naming the term of the Lagrangian (f or a
        constraint) whose Hessian is not finite at flat, and where: each
        term alone, until one is not."""
        terms = [("f", 1.0, np.zeros(self.m))]
        for k, (lo, hi) in enumerate(zip(self.offsets, self.offsets[1:])):
            lam = np.zeros(self.m)
            lam[lo:hi] = 1.0
            terms.append((str(self.constraints[k]), 0.0, lam))
        for name, sigma, lam in terms:
            values = self.hessian_values(flat, sigma, lam)
            bad = _first_nonfinite(values)
            if bad is not None:
                i, j = self.hess_pattern.rows[bad], self.hess_pattern.cols[bad]
                raise ValueError(
                    f"minimize: the Hessian of {name} is not finite at "
                    f"{where}: its entry ({self.space.element(i)}, "
                    f"{self.space.element(j)}) is {values[bad]}{DIFFERENTIABLE}")
        raise ValueError(f"minimize: the Hessian of the Lagrangian (f and the "
                         f"constraints) is not finite at {where}: each term's "
                         "is, and their sum overflows")

    # what the solvers call, on flat vectors

    def constraint_values(self, flat):
        x = self.space.arg(flat)
        return np.array(self.G(x), dtype=np.float64).reshape(-1)

    def jacobian_values(self, flat, replay=True):
        """The Jacobian of G at flat, on jac_pattern's entries (replay
        False: constraint_values was the last call of G, at flat)."""
        return self.G.jacobian_values(self.jac_pattern, self.space.arg(flat),
                                      replay=replay)

    def hessian_values(self, flat, sigma, lam):
        """The Hessian of L(x, sigma, lam) in x, on hess_pattern's entries
        (its lower triangle)."""
        args = (self.space.arg(flat), float(sigma))
        if self.m:
            args += (np.ascontiguousarray(lam, dtype=np.float64),)
        return self.L.hessian_values(self.hess_pattern, *args)

    def hessian_matrix(self, flat, sigma, lam):
        """The same as a scipy csr_array, both triangles."""
        return self.hess_pattern.matrix(self.hessian_values(flat, sigma, lam))

    def split(self, v):
        """A vector of m as a list with one flat array per constraint."""
        return [np.array(v[lo:hi]) for lo, hi in
                zip(self.offsets, self.offsets[1:])]


class Derivatives:
    """A function recorded at args (argnum=0), its sparse derivatives
    (sparse.py: the patterns and colourings computed once per recording)
    on patterns fixed at the start.  A replay where a guard flips records
    it again there; the new recording's derivatives must fit the patterns
    (Pattern.values checks)."""

    def __init__(self, fn, args):
        self.fn = fn
        self.rec = Recorded(fn, args, 0)

    def _call(self, method, args, first=()):
        """rec's method at args (after the arguments first)."""
        try:
            return getattr(self.rec, method)(*first, *args)
        except BranchError:
            self.rec = Recorded(self.fn, args, 0)
            return getattr(self.rec, method)(*first, *args)

    def __call__(self, *args):
        return self._call("__call__", args)

    def jacobian_pattern(self):
        return self._pattern("jacobian", self.rec.jacobian_sparsity())

    def hessian_pattern(self, lower=False):
        return self._pattern("hessian", self.rec.hessian_sparsity(), lower)

    def _pattern(self, kind, pattern, lower=False):
        return Pattern(pattern, lower, recorded_plan(self.rec, kind, "sparse_" + kind))

    def jacobian_values(self, pattern, *args, replay=True):
        """(replay False: the last call was at args; its replay serves)"""
        return pattern.values_of(*self._call(
            "_sparse_values", args, ("jacobian", replay)))

    def hessian_values(self, pattern, *args):
        return pattern.values_of(*self._call("_sparse_values", args, ("hessian", True)))


class Pattern:
    """Where a derivative matrix may be nonzero, fixed once: its entries'
    rows and cols (row-major order; only the lower triangle with lower),
    the order in which a solver gets the values.  A recording's sparse
    plan whose pattern it is in the same order (plan) hands its values
    over as they are."""

    def __init__(self, pattern, lower=False, plan=None):
        pattern = pattern.tocsr()
        pattern.sum_duplicates()        # (sorts the indices too)
        self.indptr, self.indices = pattern.indptr, pattern.indices
        self.plan = plan if plan is not None and np.array_equal(
            plan.ptr, self.indptr) and np.array_equal(plan.idx, self.indices) else None
        coo = pattern.tocoo()
        rows, cols = coo.row, coo.col
        self.shape = tuple(pattern.shape)
        rows = np.asarray(rows, np.int64)
        cols = np.asarray(cols, np.int64)
        # the entries' keys, ascending: where a general matrix's entries land
        self._keys = rows * self.shape[1] + cols
        self.select = np.flatnonzero(rows >= cols) if lower else None
        if lower:
            rows, cols = rows[self.select], cols[self.select]
        self.rows, self.cols = rows, cols
        self.nnz = rows.size

    def values_of(self, plan, data):
        """The nonzeros data of plan's pattern on this pattern's entries:
        as they are where the plan is this pattern's own (no csr_array
        made, no indices compared), else through values."""
        if plan is self.plan:
            return data if self.select is None else data[self.select]
        return self.values(plan.matrix(data))

    def values(self, M):
        """M's values (a scipy sparse matrix) on the pattern's entries."""
        if not (M.format == "csr" and np.array_equal(M.indptr, self.indptr)
                and np.array_equal(M.indices, self.indices)):
            return self._general(M)
        data = np.asarray(M.data, np.float64)
        return data if self.select is None else data[self.select]

    def _general(self, M):
        """M whose entries are not laid out as the pattern's (a recording
        made again where a guard flipped): each value put where it belongs;
        a nonzero outside the pattern is an error, not a value dropped."""
        coo = M.tocoo()
        keys = np.asarray(coo.row, np.int64) * self.shape[1] + coo.col
        data = np.asarray(coo.data, np.float64)
        pos = np.searchsorted(self._keys, keys)
        inside = pos < self._keys.size
        inside[inside] = self._keys[pos[inside]] == keys[inside]
        if np.any(data[~inside] != 0):
            i = np.flatnonzero(~inside & (data != 0))[0]
            raise RuntimeError(
                f"minimize: the derivative has a nonzero at ({coo.row[i]}, "
                f"{coo.col[i]}), outside the sparsity structure found at x0: "
                "the function was recorded again where a guard flipped and "
                "depends on other variables there; the solver's structure "
                "is fixed at the start")
        out = np.zeros(self._keys.size)
        np.add.at(out, pos[inside], data[inside])
        return out if self.select is None else out[self.select]

    def matrix(self, values):
        """The values on the pattern as a scipy csr_array (the full matrix:
        a lower pattern is mirrored)."""
        from scipy.sparse import coo_array
        rows, cols, data = self.rows, self.cols, values
        if self.select is not None:
            off = rows != cols
            rows = np.concatenate([rows, cols[off]])
            cols, data = np.concatenate([cols, self.rows[off]]), \
                np.concatenate([values, values[off]])
        return coo_array((data, (rows, cols)), shape=self.shape).tocsr()
