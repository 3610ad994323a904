/* rules.h -- what every elementwise op computes and how it differentiates,
 * written once.  Each sweep expands this one table into its switch: the
 * forward sweep the value, the reverse sweep the first partials, the
 * tangent (forward-mode) sweep the first partials again, and the
 * second-order sweep the first and second partials.  For a scalar entry a
 * rule runs once, for an array entry once per element (operands broadcast
 * against each other, NumPy style).
 *
 *   X(OP, ARITY, VALUE, DA, DB, DAA, DAB, DBB)
 *
 * VALUE is the entry's value from x, y (the operands' values) and c (the
 * entry's constant); the derivatives may also use v, the value itself.
 * VALUE names exp and tanh as AD_EXP_OF and AD_TANH_OF, which the forward
 * sweep defines: libm's for scalar entries (what Python's math module
 * computes), vmath.h's vectorisable ones for array entries.
 * DA = dv/dx, DB = dv/dy, DAA = d2v/dx2, DAB = d2v/dxdy, DBB = d2v/dy2.
 * A derivative is only ever multiplied by a nonzero adjoint or tangent
 * (zero ones are skipped), so an infinite partial on a branch that does
 * not matter never becomes a NaN.  Where a partial is 0 * inf at a limit
 * (d/dx x**0, d/dy of x**y where it is 0), the rule says 0.
 *
 * The reductions (SUM, MAX, MIN, and LSE, whose rules share
 * internal.h's ad_lse_weight), RESHAPE, GATHER, SCATTER, EXTERN and
 * LEAF are not elementwise and are handled in each sweep.  SELECT's second
 * operand is a mask, and comparisons give 1.0 or 0.0: neither carries a
 * derivative.                                                              */
#ifndef PYAUTODIFF_RULES_H
#define PYAUTODIFF_RULES_H

#define AD_ELEMENTWISE_RULES(X)                                              \
    X(AD_ADD,     2, x + y,    1.0, 1.0,     0.0, 0.0, 0.0)                  \
    X(AD_SUB,     2, x - y,    1.0, -1.0,    0.0, 0.0, 0.0)                  \
    X(AD_MUL,     2, x * y,    y, x,         0.0, 1.0, 0.0)                  \
    X(AD_DIV,     2, x / y,    1.0 / y, -v / y,                              \
      0.0, -1.0 / (y * y), 2.0 * v / (y * y))                                \
    X(AD_POW,     2, pow(x, y),                                              \
      y == 0.0 ? 0.0 : y * pow(x, y - 1.0),                                  \
      v == 0.0 ? 0.0 : v * log(x),                                           \
      y == 0.0 || y == 1.0 ? 0.0 : y * (y - 1.0) * pow(x, y - 2.0),          \
      x == 0.0 ? 0.0 : pow(x, y - 1.0) * (1.0 + y * log(x)),                 \
      v == 0.0 ? 0.0 : v * log(x) * log(x))                                  \
    X(AD_ADDC,    1, x + c,    1.0, 0.0,     0.0, 0.0, 0.0)                  \
    X(AD_MULC,    1, x * c,    c, 0.0,       0.0, 0.0, 0.0)                  \
    X(AD_DIVC,    1, x / c,    1.0 / c, 0.0, 0.0, 0.0, 0.0)                  \
    X(AD_RSUBC,   1, c - x,    -1.0, 0.0,    0.0, 0.0, 0.0)                  \
    X(AD_RDIVC,   1, c / x,    -v / x, 0.0,  2.0 * v / (x * x), 0.0, 0.0)    \
    /* pow(x, c), not x*x for c == 2: Python's pow may differ in the last    \
     * bit, and replays must reproduce recorded values exactly */            \
    X(AD_POWC,    1, pow(x, c),                                              \
      c == 0.0 ? 0.0 : c == 2.0 ? 2.0 * x : c * pow(x, c - 1.0), 0.0,       \
      c == 0.0 || c == 1.0 ? 0.0 : c == 2.0 ? 2.0                            \
          : c * (c - 1.0) * pow(x, c - 2.0), 0.0, 0.0)                       \
    X(AD_RPOWC,   1, pow(c, x),                                              \
      v == 0.0 ? 0.0 : v * log(c), 0.0,                                      \
      v == 0.0 ? 0.0 : v * log(c) * log(c), 0.0, 0.0)                        \
    X(AD_NEG,     1, -x,       -1.0, 0.0,    0.0, 0.0, 0.0)                  \
    X(AD_ABS,     1, fabs(x),  x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0, 0.0,        \
      0.0, 0.0, 0.0)                                                         \
    X(AD_RELU,    1, x < 0 ? 0.0 : x, v > 0 ? 1.0 : 0.0, 0.0,                \
      0.0, 0.0, 0.0)                                                         \
    X(AD_TANH,    1, AD_TANH_OF(x), 1.0 - v * v, 0.0,                        \
      -2.0 * v * (1.0 - v * v), 0.0, 0.0)                                    \
    X(AD_EXP,     1, AD_EXP_OF(x), v, 0.0,  v, 0.0, 0.0)                     \
    X(AD_LOG,     1, log(x),   1.0 / x, 0.0, -1.0 / (x * x), 0.0, 0.0)       \
    X(AD_SIGMOID, 1, ad_sigmoid(x), v * (1.0 - v), 0.0,                      \
      v * (1.0 - v) * (1.0 - 2.0 * v), 0.0, 0.0)                             \
    X(AD_SIN,     1, sin(x),   cos(x), 0.0,  -v, 0.0, 0.0)                   \
    X(AD_COS,     1, cos(x),   -sin(x), 0.0, -v, 0.0, 0.0)                   \
    X(AD_SQRT,    1, sqrt(x),  0.5 / v, 0.0, -0.25 / (v * v * v), 0.0, 0.0)  \
    /* a NaN operand wins, as in NumPy; ties split the gradient */           \
    X(AD_MAXIMUM, 2, (x >= y || isnan(x)) ? x : y,                           \
      x > y ? 1.0 : x == y ? 0.5 : 0.0, y > x ? 1.0 : x == y ? 0.5 : 0.0,    \
      0.0, 0.0, 0.0)                                                         \
    X(AD_MINIMUM, 2, (x <= y || isnan(x)) ? x : y,                           \
      x < y ? 1.0 : x == y ? 0.5 : 0.0, y < x ? 1.0 : x == y ? 0.5 : 0.0,    \
      0.0, 0.0, 0.0)                                                         \
    X(AD_SELECT,  2, y != 0.0 ? x : 0.0, y != 0.0 ? 1.0 : 0.0, 0.0,          \
      0.0, 0.0, 0.0)                                                         \
    X(AD_LT,      2, x < y ? 1.0 : 0.0,  0.0, 0.0, 0.0, 0.0, 0.0)            \
    X(AD_LE,      2, x <= y ? 1.0 : 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)            \
    X(AD_EQ,      2, x == y ? 1.0 : 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)            \
    X(AD_NE,      2, x != y ? 1.0 : 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)             \
    /* arrays' x**2: NumPy squares (x * x); POWC keeps Python's pow for      \
     * scalars, and the vectorised x * x is many times cheaper than pow */   \
    X(AD_SQUARE,  1, x * x,    2.0 * x, 0.0, 2.0, 0.0, 0.0)

/* The comparisons: their entries never depend on a variable. */
#define AD_IS_COMPARISON(op)                                                 \
    ((op) == AD_LT || (op) == AD_LE || (op) == AD_EQ || (op) == AD_NE)

#endif
