"""Complex arithmetic and NumPy's elementwise functions of complex numbers,
written as real operations on the pair (x, y) of a number's real and
imaginary parts, z = x + iy.

A part is a real traced value (an Array) or a plain number or ndarray,
and NumPy's functions dispatch each real operation to the tape, so a
complex result is a pair of ordinary recorded entries: every sweep,
replay and nested derivative works on it unchanged, to any order.  An
imaginary part None is a real number: its zeros take no operations.

The derivatives are those of the real operations, (df/dx, df/dy) for a
real f, which pytree.py and trace.py read as autograd's (and JAX's)
gradient df/dx - i df/dy.  The formulas are NumPy's own where its value
is a formula (exp, sin, ...); where NumPy's routine is more careful
(division, log near |z| = 1, huge arguments of tan) the values agree to
rounding for ordinary arguments.
"""
import numbers

import numpy as np

_LN2 = np.log(2.0)
_LN10 = np.log(10.0)


# -- parts that may be absent (a real number's imaginary part) ------------------

def _plus(y, b):
    return b if y is None else y if b is None else y + b


def _minus(y, b):
    return y if b is None else -b if y is None else y - b


# -- arithmetic ------------------------------------------------------------------

def add(z, w):
    (x, y), (a, b) = z, w
    return x + a, _plus(y, b)


def subtract(z, w):
    (x, y), (a, b) = z, w
    return x - a, _minus(y, b)


def negative(z):
    x, y = z
    return -x, None if y is None else -y


def conjugate(z):
    x, y = z
    return x, None if y is None else -y


def bilinear(product, z, w):
    """product(z, w) for a real bilinear product (x * a, x @ a, np.dot,
    np.tensordot ...) extended to complex operands: four real products,
    two for a real operand."""
    (x, y), (a, b) = z, w
    if b is None:
        return product(x, a), None if y is None else product(y, a)
    if y is None:
        return product(x, a), product(x, b)
    return product(x, a) - product(y, b), product(x, b) + product(y, a)


def multiply(z, w):
    return bilinear(_times, z, w)


def _times(u, v):
    return u * v


def divide(z, w):
    """z / w as z conj(w) / |w|^2 (NumPy scales by the larger part of w
    first, which only matters near overflow)."""
    (x, y), (a, b) = z, w
    if b is None:
        return x / a, None if y is None else y / a
    d = a * a + b * b
    u, v = multiply(z, (a, -b))
    return u / d, v / d


def reciprocal(z):
    return divide((1.0, None), z)


def square(z):
    return multiply(z, z)


# -- magnitude and phase ----------------------------------------------------------

def absolute(z):
    """|z| = hypot(x, y), whose derivative at 0 is 0 (autograd's: the
    conjugate over |z| with 0/0 taken as 0), not hypot's 0/0."""
    x, y = z
    if y is None:
        return np.abs(x)
    nonzero = (x != 0.0) | (y != 0.0)
    # at 0 the hypot of (1, 0), which the choice discards: no 0/0 recorded
    return np.where(nonzero, np.hypot(np.where(nonzero, x, 1.0), y), 0.0)


def angle(z):
    x, y = z
    return np.arctan2(0.0 if y is None else y, x)


# -- exponentials and logarithms ----------------------------------------------------

def exp(z):
    x, y = z
    e = np.exp(x)
    if y is None:
        return e, None
    return e * np.cos(y), e * np.sin(y)


def log(z):
    """The principal logarithm: log|z| + i angle(z)."""
    return np.log(absolute(z)), angle(z)


def exp2(z):
    return exp(multiply(z, (_LN2, None)))


def log2(z):
    return multiply(log(z), (1.0 / _LN2, None))


def log10(z):
    return multiply(log(z), (1.0 / _LN10, None))


def sqrt(z):
    """The principal square root, sqrt|z| (cos t/2 + i sin t/2) with t the
    angle: the sign of a zero imaginary part picks the side of the cut,
    as NumPy's does."""
    s, t = np.sqrt(absolute(z)), angle(z) * 0.5
    return s * np.cos(t), s * np.sin(t)


def power(z, w):
    """z ** w: an integer exponent (a plain number) by repeated
    multiplication, as NumPy's complex power does; another real one in
    polar form, |z|**w (cos wt + i sin wt); a complex one as exp(w log z)."""
    a, b = w
    if isinstance(b, (numbers.Number, np.ndarray)) and not np.any(b):
        b = None                            # a constant exponent such as 2+0j
    if b is None and _small_integer(a):
        return _integer_power(z, int(a))
    if b is None:
        r, t = absolute(z), angle(z)
        return r ** a * np.cos(t * a), r ** a * np.sin(t * a)
    return exp(multiply(w, log(z)))


def _small_integer(a):
    return isinstance(a, (int, float, np.integer, np.floating)) and \
        not isinstance(a, bool) and float(a).is_integer() and abs(a) <= 100


def _integer_power(z, n):
    """z ** n by squaring: exact derivatives wherever z is finite (z = 0
    too, for n >= 0)."""
    if n < 0:
        return reciprocal(_integer_power(z, -n))
    result, base = None, z
    while n:
        if n & 1:
            result = base if result is None else multiply(result, base)
        n >>= 1
        if n:
            base = square(base)
    if result is None:                      # z ** 0 == 1
        return np.ones(np.shape(z[0])), None
    return result


# -- trigonometric and hyperbolic functions --------------------------------------------

def sin(z):
    x, y = z
    return np.sin(x) * np.cosh(y), np.cos(x) * np.sinh(y)


def cos(z):
    x, y = z
    return np.cos(x) * np.cosh(y), -(np.sin(x) * np.sinh(y))


def tan(z):
    """(sin 2x + i sinh 2y) / (cos 2x + cosh 2y), the imaginary part as
    tanh 2y / (1 + cos 2x / cosh 2y): finite (+-1) where cosh 2y overflows."""
    x, y = z
    c = np.cosh(2.0 * y)
    return np.sin(2.0 * x) / (np.cos(2.0 * x) + c), \
        np.tanh(2.0 * y) / (1.0 + np.cos(2.0 * x) / c)


def sinh(z):
    x, y = z
    return np.sinh(x) * np.cos(y), np.cosh(x) * np.sin(y)


def cosh(z):
    x, y = z
    return np.cosh(x) * np.cos(y), np.sinh(x) * np.sin(y)


def tanh(z):
    """tan's formula with the parts' roles swapped: finite where cosh 2x
    overflows."""
    x, y = z
    c = np.cosh(2.0 * x)
    return np.tanh(2.0 * x) / (1.0 + np.cos(2.0 * y) / c), \
        np.sin(2.0 * y) / (c + np.cos(2.0 * y))
