/* opinfo.c -- name and arity of every op, indexed by enum ad_op.
 * Designated initializers keep these tables in step with the enum. */
#include "ad.h"

static const char *const op_names[AD_NUM_OPS] = {
    [AD_LEAF] = "leaf",      [AD_ADD] = "add",        [AD_SUB] = "sub",
    [AD_MUL] = "mul",        [AD_DIV] = "div",        [AD_POW] = "pow",
    [AD_ADDC] = "addc",      [AD_MULC] = "mulc",      [AD_DIVC] = "divc",
    [AD_RSUBC] = "rsubc",    [AD_RDIVC] = "rdivc",    [AD_POWC] = "powc",
    [AD_RPOWC] = "rpowc",    [AD_NEG] = "neg",        [AD_ABS] = "abs",
    [AD_RELU] = "relu",      [AD_TANH] = "tanh",      [AD_EXP] = "exp",
    [AD_LOG] = "log",        [AD_SIGMOID] = "sigmoid", [AD_SIN] = "sin",
    [AD_COS] = "cos",        [AD_SQRT] = "sqrt",      [AD_SUM] = "sum",
    [AD_RESHAPE] = "reshape", [AD_EXTERN] = "extern",
    [AD_MAXIMUM] = "maximum", [AD_MINIMUM] = "minimum", [AD_SELECT] = "select",
    [AD_MAX] = "max",        [AD_MIN] = "min",        [AD_GATHER] = "gather",
    [AD_SCATTER] = "scatter", [AD_LT] = "lt",        [AD_LE] = "le",
    [AD_EQ] = "eq",          [AD_NE] = "ne",          [AD_SQUARE] = "square",
    [AD_LSE] = "lse",
};

static const signed char op_arity[AD_NUM_OPS] = {
    [AD_LEAF] = 0,
    [AD_ADD] = 2, [AD_SUB] = 2, [AD_MUL] = 2, [AD_DIV] = 2, [AD_POW] = 2,
    [AD_ADDC] = 1, [AD_MULC] = 1, [AD_DIVC] = 1, [AD_RSUBC] = 1,
    [AD_RDIVC] = 1, [AD_POWC] = 1, [AD_RPOWC] = 1, [AD_NEG] = 1,
    [AD_ABS] = 1, [AD_RELU] = 1, [AD_TANH] = 1, [AD_EXP] = 1, [AD_LOG] = 1,
    [AD_SIGMOID] = 1, [AD_SIN] = 1, [AD_COS] = 1, [AD_SQRT] = 1,
    [AD_SUM] = 1, [AD_RESHAPE] = 1, [AD_EXTERN] = 2,
    [AD_MAXIMUM] = 2, [AD_MINIMUM] = 2, [AD_SELECT] = 2, [AD_MAX] = 1,
    [AD_MIN] = 1, [AD_GATHER] = 1, [AD_SCATTER] = 1,
    [AD_LT] = 2, [AD_LE] = 2, [AD_EQ] = 2, [AD_NE] = 2, [AD_SQUARE] = 1,
    [AD_LSE] = 1,
};

const char *ad_op_name(int op)
{
    if (op < 0 || op >= AD_NUM_OPS || op_names[op] == 0)
        return "?";
    return op_names[op];
}

/* -1 for an unknown op, so callers can reject it. */
int ad_op_arity(int op)
{
    if (op < 0 || op >= AD_NUM_OPS || op_names[op] == 0)
        return -1;
    return op_arity[op];
}
