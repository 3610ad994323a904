"""The op table (pyautodiff/ops.py): every C op has a row or a reason for
having none, and each row's value on numbers, NumPy function, methods,
label and public function agree at sample points.  NumPy is the oracle
for the C forward sweep (Array methods) and for the Python values."""
import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import _core, functions, ops
from pyautodiff._generated import micrograd_operators
from pyautodiff.micrograd.engine import Value as MValue
from pyautodiff.testing.rules import RULES, inside

# operands: x, and y or c; zeros and negatives reach the domain errors
XS = [-2.5, -0.7, 0.0, 0.3, 1.0, 2.2]
YS = [-1.5, 0.5, 2.0, 3.0]
MATH_ERRORS = (ValueError, ZeroDivisionError, OverflowError)


def operands(op):
    """The names op's value reads, in order: ('x',), ('x', 'y'), ('x', 'c')."""
    names = compile(op.value, op.name, "eval").co_names
    second = [n for n in ("y", "c") if n in names]
    assert "x" in names and len(second) <= 1, op
    return ("x",) + tuple(second)


def points(op):
    if len(operands(op)) == 1:
        return [(x,) for x in XS]
    return [(x, y) for x in XS for y in YS]


def python_value(op, *args):
    return eval(op.value, dict(ops.SCALAR_NAMES), dict(zip(operands(op), args)))


def numpy_value(op, *args):
    with np.errstate(all="ignore"):
        return op.numpy(*(np.asarray(a, dtype=np.float64) for a in args))


def entry_op(x):
    """The C op recorded for a Value or an Array."""
    if isinstance(x, ad.Array):
        x._t.flush()
        return x._t._c.op[x._i]
    return x._entry()[0]


def test_every_c_op_has_a_row_or_a_reason():
    rows, other = set(ops.ROWS), set(ops.OTHER_OPS)
    assert len(ops.ROWS) == len(ops.ELEMENTWISE), "two rows for one op"
    assert not rows & other
    for code, name in enumerate(_core.OP_NAMES):
        assert name.upper() in rows | other, f"C op {name} ({code}) has no row"
    assert rows | other == set(_core.OPS), "a row for an op C does not have"
    assert all(ops.OTHER_OPS.values())


def test_every_method_and_function_has_one_row():
    methods = [op.method for op in ops.ELEMENTWISE if op.method]
    methods += [op.reflected for op in ops.ELEMENTWISE if op.reflected]
    assert len(methods) == len(set(methods))
    names = [op.function for op in ops.ELEMENTWISE if op.function]
    assert len(names) == len(set(names))
    for op in ops.ELEMENTWISE:
        binary = op.reflected is not None
        assert (op.constant is not None) == binary == (op.reflected_constant is not None)
        assert (operands(op) == ("x", "y")) == binary, op.name
        if binary:
            for fused, cexpr in (op.constant, op.reflected_constant):
                assert operands(ops.ROWS[fused]) == ("x", "c")
                assert cexpr in ("other", "-other")
        if op.function:
            assert op.method and not binary


def test_the_ops_a_value_records_have_labels():
    recorded = {o for v in ops.BINARY.values() for o in v[:2] if o}
    recorded |= set(ops.UNARY.values())
    labelled = {op.name for op in ops.ELEMENTWISE if op.label is not None}
    assert recorded == labelled


@pytest.mark.parametrize("op", [op for op in ops.ELEMENTWISE if op.label],
                         ids=lambda op: op.name)
def test_a_label_names_the_value(op):
    """A unary op's label is its method's name (micrograd's 'ReLU'); a
    binary op's is the Python operator that computes its value, with the
    operands in the order its value takes them (c - x: '-')."""
    names = operands(op)
    if len(names) == 1:
        assert op.label.lower() == op.method.strip("_")
        return
    order = sorted(names, key=op.value.index)
    for args in points(op):
        want = _with_value(python_value, op, *args)
        if want is not None:
            env = dict(zip(names, args))
            assert eval(f"{order[0]} {op.label} {order[1]}", {}, env) == want


@pytest.mark.parametrize("op", ops.ELEMENTWISE, ids=lambda op: op.name)
def test_the_value_on_numbers_is_numpys(op):
    """Python's value where it is defined, else NumPy's is no number (a
    Python math error where NumPy gives nan or inf)."""
    for args in points(op):
        want = numpy_value(op, *args)
        try:
            got = python_value(op, *args)
        except MATH_ERRORS:
            assert not np.isfinite(want), (op.name, args, want)
            continue
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0,
                                   err_msg=f"{op.name}{args}")


def _with_value(fn, *args):
    """fn(*args), or None where Python raises a math error."""
    try:
        return fn(*args)
    except MATH_ERRORS:
        return None


UNARY_ROWS = [op for op in ops.ELEMENTWISE if op.method and not op.reflected]
BINARY_ROWS = [op for op in ops.ELEMENTWISE if op.reflected]


@pytest.mark.parametrize("op", UNARY_ROWS, ids=lambda op: op.name)
def test_a_unary_method_records_its_row(op):
    with ad.Tape():
        for x in XS:
            want = _with_value(python_value, op, x)
            # (micrograd's Value decomposes -x into x * -1)
            for cls in (ad.Value, MValue)[:1 + (op.method in micrograd_operators.OPERATORS)]:
                out = _with_value(lambda: getattr(cls(x), op.method)())
                if want is None:
                    assert out is None        # the same math error
                    continue
                assert out.data == want and entry_op(out) == _core.OPS[op.name]
                assert out._op == op.label
        a = ad.Array(XS)
        with np.errstate(all="ignore"):
            out = getattr(a, op.method)()
        assert entry_op(out) == _core.OPS[op.name]
        np.testing.assert_allclose(out.data, numpy_value(op, np.array(XS)), rtol=1e-14)
        with ad.no_grad(), np.errstate(all="ignore"):
            plain = getattr(ad.Array(XS), op.method)()
        np.testing.assert_array_equal(plain.data, numpy_value(op, np.array(XS)))


@pytest.mark.parametrize("op", BINARY_ROWS, ids=lambda op: op.name)
def test_a_binary_operator_records_its_row_and_fused_ops(op):
    fused, cexpr = op.constant
    rfused, rcexpr = op.reflected_constant
    sign = -1.0 if cexpr == "-other" else 1.0
    with ad.Tape():
        for x, y in points(op):
            want = _with_value(python_value, op, x, y)
            cases = [
                # (result, its op, its constant)
                (lambda: getattr(ad.Value(x), op.method)(ad.Value(y)), op.name, 0.0),
                (lambda: getattr(ad.Value(x), op.method)(y), fused, sign * y),
                (lambda: getattr(ad.Value(y), op.reflected)(x), rfused, x),
            ]
            for i, (make, name, imm) in enumerate(cases):
                out = _with_value(make)
                if want is None:
                    assert out is None        # the same math error
                    continue
                code, _, _, c, value = out._entry()
                assert value == out.data == want, (op.name, x, y, i)
                assert code == _core.OPS[name] and c == imm
                assert out._op.startswith(ops.ROWS[name].label)
                if name != op.name:     # the fused op's own value
                    assert python_value(ops.ROWS[name], (x, y)[i == 2], imm) == want
        xs, ys = np.meshgrid(XS, YS)          # every pair, same shape
        with np.errstate(all="ignore"):
            want = numpy_value(op, xs, ys)
            out = getattr(ad.Array(xs), op.method)(ad.Array(ys))
            np.testing.assert_allclose(out.data, want, rtol=1e-14)
            assert entry_op(out) == _core.OPS[op.name]
            via_numpy = op.numpy(ad.Array(xs), ys)          # __array_ufunc__
            np.testing.assert_allclose(via_numpy.data, want, rtol=1e-14)
            assert entry_op(via_numpy) == _core.OPS[op.name]
            with ad.no_grad():
                plain = getattr(ad.Array(xs), op.method)(ys)
            np.testing.assert_array_equal(plain.data, want)


def test_an_arrays_square_records_square():
    with ad.Tape():
        out = ad.Array(XS) ** 2
        assert entry_op(out) == _core.OPS["SQUARE"]
        np.testing.assert_array_equal(out.data, ops.ROWS["SQUARE"].numpy(np.array(XS)))


@pytest.mark.parametrize("op", [op for op in ops.ELEMENTWISE if op.function],
                         ids=lambda op: op.function)
def test_a_public_function_is_its_rows(op):
    fn = getattr(ad, op.function)
    assert fn is getattr(functions, op.function) and op.function in ad.__all__
    xs = np.array(XS)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(fn(xs), op.numpy(xs))       # NumPy's own
        assert np.array_equal(fn(1.0), op.numpy(1.0))
        with ad.Tape():
            out = fn(ad.Array(xs))
            assert entry_op(out) == _core.OPS[op.name]
            np.testing.assert_allclose(out.data, op.numpy(xs), rtol=1e-14)
            # a point of the op's domain (arctanh(1.0) is a domain error)
            x1 = next(x for x in (1.0, 0.5, 2.0) if inside(RULES[op.name.lower()], x))
            v = fn(ad.Value(x1))
            assert isinstance(v, ad.Value) and v.data == python_value(op, x1)
            if isinstance(op.numpy, np.ufunc):                      # np.exp(a)
                assert entry_op(op.numpy(ad.Array(xs))) == _core.OPS[op.name]


def test_all_lists_the_elementwise_functions():
    names = {op.function for op in ops.ELEMENTWISE if op.function}
    assert names <= set(ad.__all__) and set(functions.ELEMENTWISE) == names
