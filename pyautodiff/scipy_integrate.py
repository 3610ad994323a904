"""scipy.integrate.odeint with traced initial state, times and arguments
(scipy itself is optional: it is imported when odeint is called).

The solution is scipy's odeint of plain numbers, one extern entry of one
operand: the traced ones among y0, t and args packed into one vector
(an entry takes at most two operands).  Its rules integrate again with
odeint:

- the gradient by the adjoint method, backwards from each time to the
  one before: the state with its adjoint a (da/ds = -a df/dy) and the
  running integrals of -a df/ds and -a df/dargs;
- the tangent by forward sensitivities (ds/dt = df/dy s + df/dargs dargs).

func's own vector-Jacobian and Jacobian-vector products, inside those,
are pyautodiff's: func is traced on each call, so it must be written
with NumPy's functions (as for any traced function).

Both rules are written with NumPy's functions and odeint itself: in the
C sweeps they compute with plain numbers; inside a derivative (a
Hessian, a gradient of a gradient, ad.grad of ad.hvp ...) they record,
each integration an odeint entry of its own whose rules are these again,
so derivatives of every order exist, each exact to the integrator's
tolerance (and each order costs integrations of a larger system)."""
import contextlib

import numpy as np

from .array import Array, _asarray, _constant_result, _holds_traced
from .extern import record_extern
from .linalg import _Rule, _lifted
from .tape_state import NO_GRAD, recording_tape
from .trace import Trace
from .value import Value

NAME = "scipy.integrate.odeint"

def _odeint():
    import scipy.integrate
    return scipy.integrate.odeint


def _traced(x):
    return isinstance(x, (Array, Value)) or _holds_traced(x)


@contextlib.contextmanager
def _plain_trace(F, z):
    """F traced at the plain vector z on a tape of its own, even inside a
    derivative being recorded (the integrator's calls compute with plain
    numbers)."""
    tr = Trace(F, (z,), {}, 0, NAME)
    try:
        yield tr
    finally:
        tr.release()


def _vjp(F, z, w):
    """(F(z), w times F's Jacobian at z): recorded when z or w is traced
    (a derivative of a derivative), else with plain numbers."""
    if _traced(z) or _traced(w):
        from .functional import vjp
        value, back = vjp(F)(z)
        return value, back(w)
    with _plain_trace(F, z) as tr:
        return tr.output_value(), tr.vjp(w)


def _jvp(F, z, dz):
    """(F(z), F's Jacobian at z times dz), recorded as _vjp's."""
    if _traced(z) or _traced(dz):
        from .functional import jvp
        return jvp(F)(z, dz)
    with _plain_trace(F, z) as tr:
        return tr.jvp(dz)


def _flat(x):
    """x as a vector: an Array's reshape, or a plain ndarray."""
    if _traced(x):
        return _asarray(x).reshape(-1)
    return np.ravel(np.asarray(x, dtype=np.float64))


def _vector(f, n):
    """func's value as a vector of n numbers (func may return a list)."""
    if _traced(f):
        return _asarray(f).reshape(n)
    return np.reshape(np.asarray(f, dtype=np.float64), n)


class _Problem:
    """One odeint call: the plain parts and where each traced one lies in
    the packed vector."""

    def __init__(self, func, y0, t, args, tfirst, options, jacobian):
        self.func = func
        self.tfirst = tfirst
        self.options = options
        self.jacobian = jacobian    # Dfun and its options: the forward's only
        self.parts = {}         # name -> (start, stop, shape) in the packed vector
        self.plain = {}
        self.traced = []
        at = 0
        for name, x in [("y0", y0), ("t", t)] + [(k, a) for k, a in enumerate(args)]:
            if _traced(x):
                x = _asarray(x)
                self.parts[name] = (at, at + x.size, x.shape)
                self.traced.append(x)
                at += x.size
            else:
                self.plain[name] = x
        self.nargs = len(args)
        self.size = at

    def values(self, p):
        """y0 (flat), t, args at the packed vector p: plain numbers for an
        ndarray p, traced ones for an Array."""
        def get(name):
            if name in self.parts:
                lo, hi, shape = self.parts[name]
                return p[lo:hi].reshape(shape)
            return self.plain[name]
        t = get("t") if "t" in self.parts else np.asarray(self.plain["t"], dtype=np.float64)
        return _flat(get("y0")), t, tuple(get(k) for k in range(self.nargs))

    def call(self, y, s, args):
        """func at (y, s): on plain arrays, as scipy calls it; refused when
        it returns traced numbers (a traced value it closes over would be
        taken as a constant)."""
        out = self.func(s, y, *args) if self.tfirst else self.func(y, s, *args)
        if _traced(out) and not any(_traced(x) for x in (y, s) + tuple(args)):
            raise _closure_error()
        return out

    def solve(self, p, full_output=False):
        y0, t, args = self.values(p)
        if _traced(p):      # the second-order sweep recomputing it: recorded
            return odeint(self.func, y0, t, args, tfirst=self.tfirst, **self.jacobian,
                          **self.options)

        def rhs(y, s, *a):
            return self.call(y, s, a)
        jacobian = dict(self.jacobian)
        dfun = jacobian.pop("Dfun")
        if dfun is not None and self.tfirst:     # rhs takes (y, t): so must Dfun
            jacobian["Dfun"] = lambda y, s, *a: dfun(s, y, *a)
        else:
            jacobian["Dfun"] = dfun
        return _odeint()(rhs, y0, t, args=args, full_output=full_output, **jacobian,
                         **self.options)

    def moving(self):
        """The numeric args func is differentiated with respect to: the
        traced ones (plain args stay plain)."""
        return [k for k in range(self.nargs) if k in self.parts]

    def unflatten(self, flat):
        """args, the traced ones read from the vector flat."""
        args, at = [], 0
        for k in range(self.nargs):
            if k in self.parts:
                lo, hi, shape = self.parts[k]
                args.append(flat[at:at + hi - lo].reshape(shape))
                at += hi - lo
            else:
                args.append(self.plain[k])
        return tuple(args)

    def cotangent(self, g, out, p):
        """The adjoint method: the packed cotangent of p.  Written with
        NumPy's functions and odeint itself, it serves the C sweeps (plain
        numbers) and derivatives of derivatives (traced ones: each
        integration below is then an odeint entry of its own, and func's
        vector-Jacobian products are traced inside the derivative)."""
        y0, t, args = self.values(p)
        n = y0.shape[0]
        moving = self.moving()
        flat = self.flat_moving(args)
        g = np.reshape(g, out.shape)

        def augmented(state, s, flat_args):
            """d/ds of (y, a, a_t, a_args): f, -a f_y, -a f_s, -a f_args."""
            def F(z):
                return _vector(self.call(z[:n], z[n], self.unflatten(z[n + 1:])), n)
            z = np.concatenate([state[:n], np.reshape(s, (1,)), flat_args])
            return np.concatenate(_vjp(F, z, -state[n:2 * n]))

        adjoint = g[-1]
        a_t0, a_args = np.zeros(1), np.zeros(flat.shape[0])
        times = [None] * t.shape[0]
        for i in range(t.shape[0] - 1, 0, -1):
            # moving a time moves the solution there along f
            times[i] = np.sum(_vector(self.call(out[i], t[i], args), n) * g[i])
            a_t0 = a_t0 - times[i]
            state = np.concatenate([out[i], adjoint, a_t0, a_args])
            span = np.stack([t[i], t[i - 1]])
            back = odeint(augmented, state, span, (flat,), **self.options)[1]
            adjoint = back[n:2 * n] + g[i - 1]
            a_t0, a_args = back[2 * n:2 * n + 1], back[2 * n + 1:]
        times[0] = a_t0[0]
        grads = {"y0": adjoint, "t": np.stack(times) if t.shape[0] > 1 else a_t0}
        at = 0
        for k in moving:
            size = self.parts[k][1] - self.parts[k][0]
            grads[k] = a_args[at:at + size]
            at += size
        return self.pack(grads)

    def tangent(self, dp, out, p):
        """Forward sensitivities: the tangent of the solution.  Written,
        as cotangent, with NumPy's functions and odeint itself: plain for
        the C tangent sweep, recorded inside a derivative."""
        y0, t, args = self.values(p)
        d = self.unpack(dp)
        n, times = y0.shape[0], t.shape[0]
        moving = self.moving()
        flat = self.flat_moving(args)
        dflat = self.flat_moving({k: d.get(k, np.zeros(np.shape(args[k]))) for k in moving})
        dy0 = _flat(d["y0"]) if "y0" in d else np.zeros(n)
        dt = np.reshape(d["t"], (times, 1)) if "t" in d else np.zeros((times, 1))

        def sensitivity(state, s, flat_args, dflat_args):
            """d/ds of (y, its tangent): f, f_y tangent + f_args dargs."""
            def F(z):
                return _vector(self.call(z[:n], z[n], self.unflatten(z[n + 1:])), n)
            z = np.concatenate([state[:n], np.reshape(s, (1,)), flat_args])
            dz = np.concatenate([state[n:], np.zeros(1), dflat_args])
            return np.concatenate(_jvp(F, z, dz))

        f = np.stack([_vector(self.call(out[i], t[i], args), n) for i in range(times)])
        # moving t[0] shifts the start: y0 is reached dt0 later
        start = np.concatenate([y0, dy0 - f[0] * dt[0]])
        sens = odeint(sensitivity, start, t, (flat, dflat), **self.options)[:, n:]
        # moving a later time moves the solution there along f
        return sens + f * dt

    def flat_moving(self, args):
        """The traced args (or their tangents) as one vector."""
        parts = [_flat(args[k]) for k in self.moving()]
        return np.concatenate(parts) if parts else np.zeros(0)

    def pack(self, grads):
        return np.concatenate([_flat(grads[name]) for name in self.parts])

    def unpack(self, dp):
        return {name: dp[lo:hi].reshape(shape)
                for name, (lo, hi, shape) in self.parts.items()}


def _closure_error():
    return TypeError(
        f"{NAME}: func returned traced numbers from plain ones: it uses a "
        "traced value odeint does not see (one it closes over, or one held "
        "in args by an object other than a list, tuple, dict or ndarray), "
        "whose derivative would be lost; pass that value in args, by itself "
        "or in a list, tuple or dict")


def _untraced(func):
    """func, refusing to return traced numbers to the integrator (which
    would take them as constants)."""
    def checked(*args):
        out = func(*args)
        if _traced(out):
            raise _closure_error()
        return out
    return checked


def _is_leaf(x):
    """A traced number or array odeint differentiates with respect to
    (an object ndarray of traced numbers is stacked into one)."""
    return isinstance(x, (Array, Value)) or isinstance(x, np.ndarray) and _holds_traced(x)


def _is_nest(x):
    return isinstance(x, (list, tuple, dict))


def _holds_leaf(x):
    """x is, or is a nest of lists, tuples and dicts that holds, a traced
    leaf."""
    if isinstance(x, dict):
        return any(_holds_leaf(e) for e in x.values())
    if isinstance(x, (list, tuple)):
        return any(_holds_leaf(e) for e in x)
    return _is_leaf(x)


# The walks below are module functions, not closures that call themselves
# (such a closure is a reference cycle holding every traced leaf it saw).

def _hollow(x, leaves):
    """x with its traced leaves moved into leaves, None in their places;
    everything else in it (an index, a string, a plain array) is kept as it
    is, for func to get back unchanged."""
    if isinstance(x, dict):
        return {k: _hollow(e, leaves) for k, e in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x), [_hollow(e, leaves) for e in x]
    if _is_leaf(x):
        leaves.append(x)
        return None
    return x, None


def _fill(hollow, leaves):
    """_hollow's inverse: the nest with the next of leaves (an iterator) in
    each traced leaf's place."""
    if hollow is None:
        return next(leaves)
    if isinstance(hollow, dict):
        return {k: _fill(e, leaves) for k, e in hollow.items()}
    kind, items = hollow
    if items is None:               # a plain part, kept as it was
        return kind
    items = [_fill(e, leaves) for e in items]
    return kind(*items) if hasattr(kind, "_fields") else kind(items)   # a namedtuple: by field


def _with_flat_args(args):
    """(wrap, leaves) for args holding nests of traced values: leaves are
    the nests' traced leaves one by one (the plain parts of the nests stay
    in them), and wrap(func) takes them and calls func with the nests
    rebuilt."""
    hollows, counts, leaves = [], [], []
    for a in args:
        if _is_nest(a) and _holds_leaf(a):
            before = len(leaves)
            hollows.append(_hollow(a, leaves))
            counts.append(len(leaves) - before)
        else:
            hollows.append(None)
            counts.append(1)
            leaves.append(a)

    def rebuilt(flat):
        out, at = [], 0
        for hollow, count in zip(hollows, counts):
            out.append(_fill(hollow, iter(flat[at:at + count])))
            at += count
        return out

    def wrap(func):
        def flat_func(first, second, *flat):      # (y, t) or, tfirst, (t, y)
            return func(first, second, *rebuilt(flat))
        return flat_func
    return wrap, tuple(leaves)


def odeint(func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None,
           mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0,
           ixpr=0, mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0,
           tfirst=False):
    """scipy.integrate.odeint, differentiable at every order with respect
    to y0, t and the numbers in args that are traced.  func is called on
    plain arrays by the integrator, and traced by pyautodiff for its
    derivatives.  The options of the integration (rtol, atol, mxstep ...)
    serve the integrations of the derivatives too; Dfun (and col_deriv,
    ml, mu), which is func's Jacobian, only the solution's."""
    if not isinstance(args, tuple):
        args = (args,)
    if any(_is_nest(a) and _holds_leaf(a) for a in args):
        # nests of traced numbers (a network's list of (W, b) pairs): func
        # is given them rebuilt from their leaves, each leaf an arg
        wrap, args = _with_flat_args(args)
        func, Dfun = wrap(func), (wrap(Dfun) if Dfun is not None else None)
    # the options of the integration itself (the derivatives' too)
    options = dict(rtol=rtol, atol=atol, tcrit=tcrit, h0=h0, hmax=hmax, hmin=hmin,
                   ixpr=ixpr, mxstep=mxstep, mxhnil=mxhnil, mxordn=mxordn,
                   mxords=mxords, printmessg=printmessg)
    if not any(_traced(x) for x in (y0, t) + args):
        return _odeint()(_untraced(func), y0, t, args=args, Dfun=Dfun, col_deriv=col_deriv,
                         full_output=full_output, ml=ml, mu=mu, tfirst=tfirst,
                         **options)
    problem = _Problem(func, y0, t, args, tfirst, options,
                       dict(Dfun=Dfun, col_deriv=col_deriv, ml=ml, mu=mu))
    packed = np.concatenate([x.reshape(-1) for x in problem.traced])
    result = problem.solve(packed._d, full_output=bool(full_output))
    value, info = (result if full_output else (result, None))
    if recording_tape() is NO_GRAD:
        out = _constant_result(value)
    else:
        def vjp(g, out, p, needs):
            return (problem.cotangent(_lifted(g), out, p),)

        def jvp(ts, out, p):
            return problem.tangent(ts[0], out, p)
        # linalg's rule: its second-order sweep differentiates vjp forward
        rule = _Rule(problem.solve, vjp, NAME, takes_needs=True, jvp=jvp, nested=(vjp, jvp))
        out = record_extern(rule, [packed], value)
    return (out, info) if full_output else out
