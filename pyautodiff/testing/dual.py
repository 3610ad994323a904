"""Forward-mode dual numbers: an AD method that shares no code with the
tape, used as an oracle for its gradients (the tests, ``check_grad``, the
scalar fuzzer).

A dual number is a + b eps with eps**2 = 0: seed an input with b = 1 and
after the program b is the derivative along it.  Every op is the oracle
table's row (rules.py), through one chain rule: v = value(x, y),
b = dv/dx x.b + dv/dy y.b.  Python numbers mix in as constants; NumPy
object arrays of dual numbers run NumPy code (``np.sin(x)``, ``x @ A``,
``np.sum``) elementwise through the same methods.  There is no
``__float__``: code that takes a plain float out of a number fails on a
dual number instead of silently dropping its derivative.
"""
import numbers

from .rules import RULES


def is_real(v):
    """A plain real number: a constant to a dual number.  (Other operands,
    an ndarray above all, get NotImplemented: NumPy then applies the op
    elementwise.)"""
    return isinstance(v, (float, int)) or isinstance(v, numbers.Real)  # fast test first


class Forward:
    """What dual and hyper-dual numbers share: comparisons, which look at
    the value ``a`` alone (as a branch of the program does)."""

    __slots__ = ()

    def _other(self, o):
        return o.a if isinstance(o, Forward) else o

    def __lt__(self, o):
        return self.a < self._other(o)

    def __le__(self, o):
        return self.a <= self._other(o)

    def __gt__(self, o):
        return self.a > self._other(o)

    def __ge__(self, o):
        return self.a >= self._other(o)

    def __eq__(self, o):
        return self.a == self._other(o)

    def __ne__(self, o):
        return self.a != self._other(o)

    def __hash__(self):
        return hash(self.a)

    def __bool__(self):
        return bool(self.a)

    def conjugate(self):
        return self             # a real number (np.var and np.std ask)


def install_rules(cls, unary, binary):
    """Give cls a method for every rule that Python spells (rules.method):
    unary(rule) makes a one-operand method, binary(rule, reflected) a
    two-operand one (reflected: the number is the right operand, as in
    ``__radd__``)."""
    for rule in RULES.values():
        if rule.method is None or rule.constant:
            continue            # constant forms are the binary rows with a constant
        if rule.arity == 1:
            setattr(cls, rule.method, unary(rule))
        elif not rule.method.startswith("__"):       # x.arctan2(y): no reflection
            setattr(cls, rule.method, binary(rule, False))
        else:
            setattr(cls, rule.method, binary(rule, False))
            setattr(cls, "__r" + rule.method[2:], binary(rule, True))


class Dual(Forward):
    """A forward-mode dual number a + b*eps: an AD method independent of
    the tape, used as an oracle for reverse-mode gradients."""

    __slots__ = ("a", "b")

    def __init__(self, a, b=0.0):
        self.a = float(a)
        self.b = float(b)

    def __repr__(self):
        return f"Dual({self.a!r}, {self.b!r})"


def _dual_unary(rule):
    def method(self):
        x = self.a
        v = rule.value(x)
        return Dual(v, rule.d[0](x, v) * self.b if self.b else 0.0)
    method.__name__ = rule.method
    return method


def _dual_binary(rule, reflected):
    def method(self, other):
        if isinstance(other, Dual):
            oa, ob = other.a, other.b
        elif is_real(other):
            oa, ob = float(other), 0.0          # a constant
        else:
            return NotImplemented
        (xa, xb), (ya, yb) = ((oa, ob), (self.a, self.b)) if reflected else \
            ((self.a, self.b), (oa, ob))
        v = rule.value(xa, ya)
        b = 0.0                 # a partial is taken only where it is needed
        if xb:
            b += rule.d[0](xa, ya, v) * xb
        if yb:
            b += rule.d[1](xa, ya, v) * yb
        return Dual(v, b)
    method.__name__ = rule.method
    return method


install_rules(Dual, _dual_unary, _dual_binary)


def dual_grad(f, xs):
    """Value and gradient of f at xs by forward mode, one pass per input."""
    grads = []
    value = None
    for k in range(len(xs)):
        out = f(*[Dual(x, 1.0 if j == k else 0.0) for j, x in enumerate(xs)])
        value = out.a
        grads.append(out.b)
    return value, grads
