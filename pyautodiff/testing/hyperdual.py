"""Hyper-dual numbers: exact second derivatives by forward mode, sharing no
code with the tape; the oracle for its tangent and second-order sweeps.

A hyper-dual number is a + b e1 + c e2 + d e1 e2 with e1² = e2² = 0.  Seed
x_i with b = 1 and x_j with c = 1: after the program runs, b and c hold
the first derivatives along i and j, and d the second derivative
∂²f/∂x_i∂x_j.  Every op is the oracle table's row (rules.py), through one
chain rule: for f(x), (f, f' b, f' c, f' d + f'' b c) given f, f' and
f''; for f(x, y) the same with both operands' partials and the mixed one.
"""
from .dual import Forward, install_rules, is_real


class HyperDual(Forward):
    __slots__ = ("a", "b", "c", "d")

    def __init__(self, a, b=0.0, c=0.0, d=0.0):
        self.a, self.b, self.c, self.d = float(a), float(b), float(c), float(d)

    def __repr__(self):
        return f"HyperDual({self.a!r}, {self.b!r}, {self.c!r}, {self.d!r})"

    def _chain(self, f, f1, f2):
        return HyperDual(f, f1 * self.b, f1 * self.c,
                         f1 * self.d + f2 * self.b * self.c)


def _unary(rule):
    def method(self):
        x = self.a
        v = rule.value(x)
        if not (self.b or self.c or self.d):
            return HyperDual(v)
        bc = self.b * self.c
        return self._chain(v, rule.d[0](x, v), rule.dd[0](x, v) if bc else 0.0)
    method.__name__ = rule.method
    return method


def _binary(rule, reflected):
    def method(self, other):
        if isinstance(other, HyperDual):
            o = (other.a, other.b, other.c, other.d)
        elif is_real(other):
            o = (float(other), 0.0, 0.0, 0.0)       # a constant
        else:
            return NotImplemented
        s = (self.a, self.b, self.c, self.d)
        (xa, xb, xc, xd), (ya, yb, yc, yd) = (o, s) if reflected else (s, o)
        v = rule.value(xa, ya)
        b = c = d = 0.0         # a partial is taken only where it is needed
        if xb or xc or xd:
            dx = rule.d[0](xa, ya, v)
            b, c, d = dx * xb, dx * xc, dx * xd
            if xb * xc:
                d += rule.dd[0](xa, ya, v) * xb * xc
        if yb or yc or yd:
            dy = rule.d[1](xa, ya, v)
            b, c, d = b + dy * yb, c + dy * yc, d + dy * yd
            if yb * yc:
                d += rule.dd[2](xa, ya, v) * yb * yc
        mixed = xb * yc + xc * yb
        if mixed:
            d += rule.dd[1](xa, ya, v) * mixed
        return HyperDual(v, b, c, d)
    method.__name__ = rule.method
    return method


install_rules(HyperDual, _unary, _binary)


def hyperdual_derivatives(f, xs):
    """(value, gradient, Hessian) of f at the floats xs by hyper-duals, one
    pass per pair of inputs."""
    k = len(xs)
    value, grad = None, [0.0] * k
    hess = [[0.0] * k for _ in range(k)]
    for i in range(k):
        for j in range(k):
            out = f(*[HyperDual(x, float(n == i), float(n == j))
                      for n, x in enumerate(xs)])
            value, grad[i], hess[i][j] = out.a, out.b, out.d
    return value, grad, hess
