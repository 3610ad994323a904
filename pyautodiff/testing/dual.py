"""Forward-mode dual numbers: an AD method that shares no code with the tape,
used as an oracle for its gradients (tests, ``python -m bench.fuzz``)."""
import math


class Dual:
    """A forward-mode dual number a + b*eps: an AD method independent of the
    tape, used as an oracle for reverse-mode gradients."""

    __slots__ = ("a", "b")

    def __init__(self, a, b=0.0):
        self.a = float(a)
        self.b = float(b)

    @staticmethod
    def lift(v):
        return v if isinstance(v, Dual) else Dual(v)

    def __add__(self, o):
        o = Dual.lift(o)
        return Dual(self.a + o.a, self.b + o.b)

    __radd__ = __add__

    def __sub__(self, o):
        o = Dual.lift(o)
        return Dual(self.a - o.a, self.b - o.b)

    def __rsub__(self, o):
        return Dual.lift(o) - self

    def __mul__(self, o):
        o = Dual.lift(o)
        return Dual(self.a * o.a, self.b * o.a + self.a * o.b)

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = Dual.lift(o)
        return Dual(self.a / o.a, (self.b * o.a - self.a * o.b) / (o.a * o.a))

    def __rtruediv__(self, o):
        return Dual.lift(o) / self

    def __pow__(self, o):
        if isinstance(o, Dual):
            v = self.a ** o.a
            return Dual(v, o.a * self.a ** (o.a - 1) * self.b
                        + (v * math.log(self.a) * o.b if o.b else 0.0))
        return Dual(self.a ** o, o * self.a ** (o - 1) * self.b if o else 0.0)

    def __rpow__(self, c):
        v = c ** self.a
        return Dual(v, v * math.log(c) * self.b)

    def __neg__(self):
        return Dual(-self.a, -self.b)

    def __abs__(self):
        return Dual(abs(self.a), math.copysign(1.0, self.a) * self.b if self.a else 0.0)

    def relu(self):
        return Dual(self.a if self.a > 0 else 0.0, self.b if self.a > 0 else 0.0)

    def tanh(self):
        t = math.tanh(self.a)
        return Dual(t, (1 - t * t) * self.b)

    def exp(self):
        e = math.exp(self.a)
        return Dual(e, e * self.b)

    def log(self):
        return Dual(math.log(self.a), self.b / self.a)

    def sigmoid(self):
        e = math.exp(-abs(self.a))          # never overflows
        s = 1.0 / (1.0 + e) if self.a >= 0 else e / (1.0 + e)
        return Dual(s, s * (1 - s) * self.b)

    def sin(self):
        return Dual(math.sin(self.a), math.cos(self.a) * self.b)

    def cos(self):
        return Dual(math.cos(self.a), -math.sin(self.a) * self.b)

    def sqrt(self):
        r = math.sqrt(self.a)
        return Dual(r, self.b / (2 * r))


def dual_grad(f, xs):
    """Value and gradient of f at xs by forward mode, one pass per input."""
    grads = []
    value = None
    for k in range(len(xs)):
        out = f(*[Dual(x, 1.0 if j == k else 0.0) for j, x in enumerate(xs)])
        value = out.a
        grads.append(out.b)
    return value, grads
