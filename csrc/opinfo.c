/* opinfo.c -- name, arity and kind of every op, expanded from the op
 * table (rules.h) and indexed by enum ad_op. */
#include "internal.h"
#include "rules.h"

#define INFO_OP(CODE, NAME, ARITY, KIND, INT)                                \
    [CODE] = {NAME, ARITY, AD_KIND_##KIND},
#define INFO_EW(CODE, NAME, ARITY, KIND, INT, VALUE, DA, DB, DAA, DAB, DBB)  \
    INFO_OP(CODE, NAME, ARITY, KIND, INT)
const ad_op_info ad_ops[AD_NUM_OPS] = {AD_OPS(INFO_OP, INFO_EW)};

/* The enum (opcodes.h, written out from the table by gen_opcodes.py)
 * lists the table's ops in the table's order, so a row added, moved or
 * removed without rerunning the script fails the build here.            */
#define ROW(CODE, ...) AD_ROW_##CODE,
enum { AD_OPS(ROW, ROW) AD_NUM_ROWS };
#define SAME(CODE, ...)                                                      \
    _Static_assert((int)AD_ROW_##CODE == (int)CODE, #CODE                    \
                   ": opcodes.h is out of date; run csrc/gen_opcodes.py");
AD_OPS(SAME, SAME)
_Static_assert((int)AD_NUM_ROWS == (int)AD_NUM_OPS,
               "opcodes.h is out of date; run csrc/gen_opcodes.py");

const char *ad_op_name(int op)
{
    return op < 0 || op >= AD_NUM_OPS ? "?" : ad_ops[op].name;
}

/* -1 for an unknown op, so callers can reject it. */
int ad_op_arity(int op)
{
    return op < 0 || op >= AD_NUM_OPS ? -1 : ad_ops[op].arity;
}

int ad_op_kind(int op)
{
    return op < 0 || op >= AD_NUM_OPS ? -1 : ad_ops[op].kind;
}
