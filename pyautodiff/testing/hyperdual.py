"""Hyper-dual numbers: exact second derivatives by forward mode, sharing no
code with the tape; the oracle for its tangent and second-order sweeps.

A hyper-dual number is a + b e1 + c e2 + d e1 e2 with e1² = e2² = 0.  Seed
x_i with b = 1 and x_j with c = 1: after the program runs, b and c hold
the first derivatives along i and j, and d the second derivative
∂²f/∂x_i∂x_j.  Every function goes through one chain rule,
f(x) -> (f, f' b, f' c, f' d + f'' b c), given f, f' and f''.
"""
import math


class HyperDual:
    __slots__ = ("a", "b", "c", "d")

    def __init__(self, a, b=0.0, c=0.0, d=0.0):
        self.a, self.b, self.c, self.d = float(a), float(b), float(c), float(d)

    @staticmethod
    def lift(v):
        return v if isinstance(v, HyperDual) else HyperDual(v)

    def _chain(self, f, f1, f2):
        return HyperDual(f, f1 * self.b, f1 * self.c,
                         f1 * self.d + f2 * self.b * self.c)

    def __add__(self, o):
        o = HyperDual.lift(o)
        return HyperDual(self.a + o.a, self.b + o.b, self.c + o.c, self.d + o.d)

    __radd__ = __add__

    def __neg__(self):
        return HyperDual(-self.a, -self.b, -self.c, -self.d)

    def __sub__(self, o):
        return self + (-HyperDual.lift(o))

    def __rsub__(self, o):
        return HyperDual.lift(o) - self

    def __mul__(self, o):
        o = HyperDual.lift(o)
        return HyperDual(self.a * o.a, self.a * o.b + self.b * o.a,
                         self.a * o.c + self.c * o.a,
                         self.a * o.d + self.b * o.c + self.c * o.b + self.d * o.a)

    __rmul__ = __mul__

    def reciprocal(self):
        a = self.a
        return self._chain(1.0 / a, -1.0 / (a * a), 2.0 / (a * a * a))

    def __truediv__(self, o):
        return self * HyperDual.lift(o).reciprocal()

    def __rtruediv__(self, o):
        return HyperDual.lift(o) * self.reciprocal()

    def __pow__(self, o):
        if isinstance(o, HyperDual):            # x ** y = exp(y log x), x > 0
            return (o * self.log()).exp()
        a = self.a
        if o == 0:
            return HyperDual(1.0)
        return self._chain(a ** o, o * a ** (o - 1),
                           o * (o - 1) * a ** (o - 2) if o != 1 else 0.0)

    def __rpow__(self, c):                      # c ** x = exp(x log c)
        return (self * math.log(c)).exp()

    def __abs__(self):
        s = math.copysign(1.0, self.a) if self.a else 0.0
        return self._chain(abs(self.a), s, 0.0)

    def relu(self):
        return self._chain(max(self.a, 0.0), 1.0 if self.a > 0 else 0.0, 0.0)

    def tanh(self):
        t = math.tanh(self.a)
        return self._chain(t, 1 - t * t, -2 * t * (1 - t * t))

    def exp(self):
        e = math.exp(self.a)
        return self._chain(e, e, e)

    def log(self):
        a = self.a
        return self._chain(math.log(a), 1.0 / a, -1.0 / (a * a))

    def sigmoid(self):
        e = math.exp(-abs(self.a))
        s = 1.0 / (1.0 + e) if self.a >= 0 else e / (1.0 + e)
        return self._chain(s, s * (1 - s), s * (1 - s) * (1 - 2 * s))

    def sin(self):
        s, c = math.sin(self.a), math.cos(self.a)
        return self._chain(s, c, -s)

    def cos(self):
        s, c = math.sin(self.a), math.cos(self.a)
        return self._chain(c, -s, -c)

    def sqrt(self):
        r = math.sqrt(self.a)
        return self._chain(r, 0.5 / r, -0.25 / (r * r * r))
