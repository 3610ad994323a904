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

Both rules compute with plain numbers: a derivative of a derivative
through odeint (second order, or one inside another derivative) raises
NotImplementedError naming scipy.integrate.odeint."""
import numpy as np

from .array import Array, _asarray, _constant_result, _holds_traced
from .extern import ExternRule, record_extern
from .tape import NO_GRAD, recording_tape
from .value import Value

NAME = "scipy.integrate.odeint"

# odeint's options that describe the integration, passed on to the
# integrations of the adjoint and sensitivity systems (not those about
# func's Jacobian, Dfun, nor what is returned)
_ACCURACY = ("rtol", "atol", "tcrit", "h0", "hmax", "hmin", "ixpr", "mxstep",
             "mxhnil", "mxordn", "mxords", "printmessg")


def _odeint():
    import scipy.integrate
    return scipy.integrate.odeint


def _traced(x):
    return isinstance(x, (Array, Value)) or _holds_traced(x)


class _Unsupported(NotImplementedError):
    pass


def _second_order(*_args, **_kwargs):
    raise _Unsupported(
        f"{NAME}: a derivative of a derivative through odeint (second and "
        "higher orders, Hessians, or a derivative inside another derivative) "
        "is not supported: its adjoint and sensitivity rules integrate "
        "plain numbers.  First derivatives (ad.grad, ad.jacobian, ad.jvp, "
        "ad.vjp) are.")


class _OdeintRule(ExternRule):
    """The rule of one odeint call: first order only."""

    __slots__ = ()
    nested_cotangents = nested_tangent = cotangent_tangents = \
        staticmethod(_second_order)


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
        """y0 (flat), t, args at the packed vector p (plain numbers)."""
        def get(name):
            if name in self.parts:
                lo, hi, shape = self.parts[name]
                return np.asarray(p[lo:hi], dtype=np.float64).reshape(shape)
            return self.plain[name]
        y0 = np.ravel(np.asarray(get("y0"), dtype=np.float64))
        return y0, np.asarray(get("t"), dtype=np.float64), \
            tuple(get(k) for k in range(self.nargs))

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

    def linearized(self, y, s, args):
        """F(z) = func at z = (y, s, the traced args, flattened), for its
        products with func's Jacobian."""
        moving = self.moving()
        n = y.size
        shapes = [np.shape(args[k]) for k in moving]
        sizes = [int(np.prod(sh)) for sh in shapes]

        def F(z):
            a = list(args)
            at = n + 1
            for k, shape, size in zip(moving, shapes, sizes):
                a[k] = z[at:at + size].reshape(shape)
                at += size
            return np.reshape(self.call(z[:n], z[n], a), (n,))
        z = np.concatenate([y, [s]] + [np.ravel(args[k]) for k in moving])
        return F, z

    def cotangent(self, g, out, p):
        """The adjoint method: the packed cotangent of p."""
        from .functional import vjp
        y0, t, args = self.values(p)
        moving = self.moving()
        n = y0.size
        m = sum(int(np.size(args[k])) for k in moving)
        g = np.asarray(g, dtype=np.float64).reshape(out.shape)

        def augmented(state, s):
            y, a = state[:n], state[n:2 * n]
            F, z = self.linearized(y, s, args)
            value, back = vjp(F)(z)
            ct = np.asarray(back(-a), dtype=np.float64)
            # d/ds of (y, a, a_t, a_args): f, -a f_y, -a f_s, -a f_args
            return np.concatenate([value, ct])

        adjoint = g[-1].copy()
        a_t0, a_args = 0.0, np.zeros(m)
        times = np.zeros(t.size)
        for i in range(t.size - 1, 0, -1):
            times[i] = np.dot(np.ravel(self.call(out[i], t[i], args)), g[i])
            a_t0 -= times[i]
            state = np.concatenate([out[i], adjoint, [a_t0], a_args])
            back = _odeint()(augmented, state, np.array([t[i], t[i - 1]]),
                             **self.options)[1]
            adjoint = back[n:2 * n] + g[i - 1]
            a_t0, a_args = back[2 * n], back[2 * n + 1:]
        times[0] = a_t0
        grads = {"y0": adjoint, "t": times}
        at = 0
        for k in moving:
            size = int(np.size(args[k]))
            grads[k] = a_args[at:at + size]
            at += size
        return self.pack(grads)

    def tangent(self, dp, out, p):
        """Forward sensitivities: the tangent of the solution."""
        from .functional import jvp
        y0, t, args = self.values(p)
        d = self.unpack(dp)
        n = y0.size
        dy0 = np.ravel(d.get("y0", np.zeros(n)))
        dt = np.ravel(d.get("t", np.zeros(t.size))) * np.ones(t.size)
        dargs = [np.ravel(d[k]) if k in d else np.zeros(np.size(args[k]))
                 for k in self.moving()]

        def sensitivity(state, s):
            y, sens = state[:n], state[n:]
            F, z = self.linearized(y, s, args)
            value, tangent = jvp(F)(z, np.concatenate([sens, [0.0]] + dargs))
            return np.concatenate([value, tangent])

        def f(i):
            return np.ravel(self.call(out[i], t[i], args))
        # moving t[0] shifts the start: y0 is reached dt0 later
        state = np.concatenate([y0, dy0 - f(0) * dt[0]])
        sens = _odeint()(sensitivity, state, t, **self.options)[:, n:]
        return sens + np.stack([f(i) for i in range(t.size)]) * dt[:, None]

    def pack(self, grads):
        out = np.zeros(self.size)
        for name, (lo, hi, _) in self.parts.items():
            out[lo:hi] = np.ravel(grads[name])
        return out

    def unpack(self, dp):
        dp = np.asarray(dp, dtype=np.float64)
        return {name: dp[lo:hi].reshape(shape)
                for name, (lo, hi, shape) in self.parts.items()}


def _closure_error():
    return TypeError(
        f"{NAME}: func returned traced numbers from plain ones: it uses a "
        "traced value it closes over, whose derivative would be lost; pass "
        "that value in args instead")


def _untraced(func):
    """func, refusing to return traced numbers to the integrator (which
    would take them as constants)."""
    def checked(*args):
        out = func(*args)
        if _traced(out):
            raise _closure_error()
        return out
    return checked


def odeint(func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None,
           mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0,
           ixpr=0, mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0,
           tfirst=False):
    """scipy.integrate.odeint, differentiable (to first order) with respect
    to y0, t and the numbers in args that are traced.  func is called on
    plain arrays by the integrator, and traced by pyautodiff for its
    derivatives."""
    if not isinstance(args, tuple):
        args = (args,)
    options = dict(rtol=rtol, atol=atol, tcrit=tcrit, h0=h0, hmax=hmax, hmin=hmin,
                   ixpr=ixpr, mxstep=mxstep, mxhnil=mxhnil, mxordn=mxordn,
                   mxords=mxords, printmessg=printmessg)
    if not any(_traced(x) for x in (y0, t) + args):
        return _odeint()(_untraced(func), y0, t, args=args, Dfun=Dfun, col_deriv=col_deriv,
                         full_output=full_output, ml=ml, mu=mu, tfirst=tfirst,
                         **options)
    options = {k: v for k, v in options.items() if k in _ACCURACY}
    problem = _Problem(func, y0, t, args, tfirst, options,
                       dict(Dfun=Dfun, col_deriv=col_deriv, ml=ml, mu=mu))
    packed = np.concatenate([x.reshape(-1) for x in problem.traced])
    result = problem.solve(packed._d, full_output=bool(full_output))
    value, info = (result if full_output else (result, None))
    if recording_tape() is NO_GRAD:
        out = _constant_result(value)
    else:
        rule = _OdeintRule(problem.solve, lambda g, out, p: (problem.cotangent(g, out, p),),
                           NAME,
                           jvp=lambda ts, out, p: problem.tangent(ts[0], out, p))
        out = record_extern(rule, [packed], value)
    return (out, info) if full_output else out
