/* rules.h -- what every elementwise op computes and how it differentiates,
 * written once.  forward.c and reverse.c expand these tables into their
 * switches: for a scalar entry once, for an array entry once per element
 * (operands broadcast against each other, NumPy style).
 *
 * In the forward rules: x, y the operands' values, c the entry's constant.
 * In the reverse rules also v the entry's value and g its adjoint (never 0:
 * a zero adjoint propagates nothing), and GA, GB the operands' adjoints.
 * The reductions (SUM, MAX, MIN), RESHAPE, GATHER, SCATTER, EXTERN and
 * LEAF are not elementwise and are handled where they are used.  SELECT's
 * second operand is a mask: it gets no gradient.                          */
#ifndef PYAUTODIFF_RULES_H
#define PYAUTODIFF_RULES_H

#define AD_FORWARD_RULES(X)                                                  \
    X(AD_ADD,     x + y)                                                     \
    X(AD_SUB,     x - y)                                                     \
    X(AD_MUL,     x * y)                                                     \
    X(AD_DIV,     x / y)                                                     \
    X(AD_POW,     pow(x, y))                                                 \
    X(AD_ADDC,    x + c)                                                     \
    X(AD_MULC,    x * c)                                                     \
    X(AD_DIVC,    x / c)                                                     \
    X(AD_RSUBC,   c - x)                                                     \
    X(AD_RDIVC,   c / x)                                                     \
    X(AD_POWC,    pow(x, c))    /* not x*x for c == 2: Python's pow may differ \
                                   in the last bit, and replays must not */ \
    X(AD_RPOWC,   pow(c, x))                                                 \
    X(AD_NEG,     -x)                                                        \
    X(AD_ABS,     fabs(x))                                                   \
    X(AD_RELU,    x < 0 ? 0.0 : x)                                           \
    X(AD_TANH,    tanh(x))                                                   \
    X(AD_EXP,     exp(x))                                                    \
    X(AD_LOG,     log(x))                                                    \
    X(AD_SIGMOID, ad_sigmoid(x))                                             \
    X(AD_SIN,     sin(x))                                                    \
    X(AD_COS,     cos(x))                                                    \
    X(AD_SQRT,    sqrt(x))                                                   \
    X(AD_MAXIMUM, (x >= y || isnan(x)) ? x : y)                              \
    X(AD_MINIMUM, (x <= y || isnan(x)) ? x : y)                              \
    X(AD_SELECT,  y != 0.0 ? x : 0.0)

/* d/dx is 0 for exponent 0 and d/dy is 0 where x**y is 0 (the limits),
 * rather than 0*inf.                                                       */
#define AD_REVERSE_RULES(X)                                                  \
    X(AD_ADD,     GA += g; GB += g)                                          \
    X(AD_SUB,     GA += g; GB -= g)                                          \
    X(AD_MUL,     GA += y * g; GB += x * g)                                  \
    X(AD_DIV,     GA += g / y; GB -= g * v / y)                              \
    X(AD_POW,     GA += (y == 0.0 ? 0.0 : y * pow(x, y - 1.0)) * g;          \
                  GB += (v == 0.0 ? 0.0 : v * log(x)) * g)                   \
    X(AD_ADDC,    GA += g)                                                   \
    X(AD_MULC,    GA += c * g)                                               \
    X(AD_DIVC,    GA += g / c)                                               \
    X(AD_RSUBC,   GA -= g)                                                   \
    X(AD_RDIVC,   GA -= g * v / x)                                           \
    X(AD_POWC,    GA += (c == 0.0 ? 0.0 : c == 2.0 ? 2.0 * x  /* = pow(x,1) */\
                         : c * pow(x, c - 1.0)) * g)                         \
    X(AD_RPOWC,   GA += (v == 0.0 ? 0.0 : v * log(c)) * g)                   \
    X(AD_NEG,     GA -= g)                                                   \
    X(AD_ABS,     GA += x > 0 ? g : x < 0 ? -g : 0.0)                        \
    X(AD_RELU,    GA += (v > 0) * g)                                         \
    X(AD_TANH,    GA += (1.0 - v * v) * g)                                   \
    X(AD_EXP,     GA += v * g)                                               \
    X(AD_LOG,     GA += g / x)                                               \
    X(AD_SIGMOID, GA += v * (1.0 - v) * g)                                   \
    X(AD_SIN,     GA += cos(x) * g)                                          \
    X(AD_COS,     GA -= sin(x) * g)                                          \
    X(AD_SQRT,    GA += g / (2.0 * v))                                       \
    X(AD_MAXIMUM, GA += x > y ? g : x == y ? 0.5 * g : 0.0;                  \
                  GB += y > x ? g : x == y ? 0.5 * g : 0.0)                  \
    X(AD_MINIMUM, GA += x < y ? g : x == y ? 0.5 * g : 0.0;                  \
                  GB += y < x ? g : x == y ? 0.5 * g : 0.0)                  \
    X(AD_SELECT,  GA += y != 0.0 ? g : 0.0)

#endif
