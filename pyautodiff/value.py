"""``ad.Value``: a scalar whose operations are recorded on the tape.

The operators are generated from the op table (ops.py: one row per op,
with its value on plain numbers) into pyautodiff/_generated/
value_operators.py, so every operator records the same way and the
arithmetic of an op is written once.  Each generated operator has a fast
path for the common case -- both operands Values on the tape being
recorded, or a Value and a plain int/float -- that computes the result in
Python and inlines the recording steps (codegen.py's RECORD_STEPS);
everything else (NumPy scalars, Values from an enclosing tape,
``no_grad``, errors) goes through ``_slow_binary`` and ``_slow_unary``.

Math errors are raised by the Python arithmetic itself (``1.0 / 0.0``,
``math.log(-1)``, ``math.exp(1000)``) before anything is recorded.
"""
import math
import numbers
import operator
import struct

import numpy as np

from . import _core, scipy_own
from ._core import TapeError
from ._generated import link, value_operators
from .ops import (BINARY, ELEMENTWISE, REFLECTED, SCALAR_NAMES, STEPS, UNARY,
                  complex_operator, is_complex_constant)
from .detach import refuse_detached
from .tape_buffer import _pack_into, record_into
from .tape_state import DETACHED, NO_GRAD, current_tape, recording_tape, state

OPS = _core.OPS

# micrograd's _op labels, then ours for the superset
_LABEL_BY_CODE = {OPS["LEAF"]: ""}
_LABEL_BY_CODE.update({OPS[op.name]: op.label for op in ELEMENTWISE
                       if op.label is not None})


def install_operators(cls, generated, slow_binary=None, slow_unary=None):
    """Give cls the operators generated for it (the module `generated` of
    pyautodiff/_generated, written from the op table and cls's settings:
    see codegen.py), in a scope where _cls is cls; operators that cls
    defines itself are kept.  What their fast path does not take goes to
    slow_binary/slow_unary (by default _slow_binary/_slow_unary).  The
    slow paths find each op's value in cls._fn."""
    scope = {
        "__name__": cls.__module__,
        "_cls": cls, "_new": object.__new__, "_pack_into": _pack_into,
        "_state": state, "_slow_binary": slow_binary or _slow_binary,
        "_slow_unary": slow_unary or _slow_unary, "_PackError": struct.error,
        **SCALAR_NAMES,
    }
    for name in generated.OPERATORS:
        if name not in cls.__dict__:
            setattr(cls, name, link(getattr(generated, name), scope))
    cls._fn = {op: link(fn, scope) for op, fn in generated.VALUES.items()}


def _number(v):
    """v as a plain Python number, or None if it is not a real number."""
    if v.__class__ is float or v.__class__ is int:
        return v
    if isinstance(v, numbers.Real) and not isinstance(v, np.bool_):
        return v.item() if isinstance(v, np.generic) else float(v)
    return None


def _operand(v, t):
    """v as an operand on tape t: a Value recorded there, or a plain number
    (a Value computed under no_grad, or anything while t is NO_GRAD)."""
    if isinstance(v, Value):
        if v._t is DETACHED:
            return v._d
        if t is NO_GRAD:
            v._t._check_open()      # released or foreign tapes still raise
            # what no_grad computes is a constant, in a recording too
            return _pin(v, "an operation under no_grad")
        return t.adopt(v)
    return _number(v)


def _detached(cls, d):
    """A Value that no tape records (the result of an op under no_grad)."""
    out = object.__new__(cls)
    out._d = d
    out._t = DETACHED
    out._i = -1
    return out


def _slow_binary(self, other, name, cls=None):
    """The operator `name` where the fast path does not apply; the result
    is of class cls (by default self's)."""
    vv_op, vc_op, cexpr = BINARY[name]
    # a result computed from a traced scalar is traced too (Traced below)
    cls = cls or (other.__class__ if isinstance(other, Traced) else self.__class__)
    t = recording_tape()
    x = _operand(self, t)
    y = _operand(other, t)
    if y is None:
        if is_complex_constant(other) and isinstance(self, Traced):
            # x * 1j of a traced float: a complex result (a Value of the
            # user's own keeps micrograd's real numbers)
            return complex_operator(name, self, other)
        return NotImplemented
    if isinstance(y, Value) and not isinstance(x, Value):
        # a constant on the left of a recorded Value: the reflected op of y
        return _slow_binary(other, x, REFLECTED[name], cls)
    if isinstance(y, Value):
        if vv_op is None:       # reflected method with a Value: y op x
            return _slow_binary(other, self, REFLECTED[name], cls)
        d = cls._fn[vv_op](x._d, y._d)
        return t.record(cls, OPS[vv_op], x._i, y._i, 0.0, d,
                        cls._int_flags(d, None))
    if isinstance(x, Value):
        if name not in cls._fuse_constants:  # micrograd: constants are leaves
            return getattr(x, name)(cls(y))
        c = -y if cexpr == "-other" else y
        d = cls._fn[vc_op](x._d, c=c)
        return t.record(cls, OPS[vc_op], x._i, -1, c, d, cls._int_flags(d, c))
    # nothing recorded: no_grad, or Values computed under it
    if vv_op:
        return _detached(cls, cls._fn[vv_op](x, y))
    return _detached(cls, cls._fn[vc_op](x, c=y))


def _slow_unary(self, name, cls=None):
    op = UNARY[name]
    cls = cls or self.__class__
    t = recording_tape()
    x = _operand(self, t)
    d = cls._fn[op](x._d if isinstance(x, Value) else x)
    if isinstance(x, Value):
        return t.record(cls, OPS[op], x._i, -1, 0.0, d, cls._int_flags(d, None))
    return _detached(cls, d)


def _compared(other):
    if isinstance(other, Value):
        return other._d
    return _number(other)


def _guarding_tape(*values):
    """The recording (ad.record) that one of these Values belongs to, or
    None: a decision taken on them there must be a guard."""
    for v in values:
        t = getattr(v, "_t", DETACHED)
        if getattr(t, "guards", None) is not None and not t.closed:
            return t
    return None


def _pin(v, what):
    """v's value leaves the tape as a plain number (float(v), format(v),
    ...): inside a recording, a guard that holds only where v is exactly
    what it is now, so that the number is never silently baked in."""
    t = _guarding_tape(v)
    if t is not None:
        t.guard(v, v._d, f"{what} on the traced value {v._d!r} (a number "
                "taken out of it: the recording holds only at that value)")
    return v._d


def stepped(x, op, what, integral=True):
    """Guard the piecewise-constant op (FLOOR, CEIL, TRUNC, RINT, SIGN:
    ops.STEPS) of x (a Value or a 0-d Array) whose result leaves the tape
    (int(x), round(x), math.floor(x), np.sign of a Value).  Its derivative
    is 0, which is exact; inside a recording op's entry is recorded (a
    replay recomputes it) and guarded, so that the recording holds wherever
    that result is the same, not only at x's value.  An integral result (a
    Python int) has no -0.0: the guard holds the result plus 0.0, which is
    0.0 for either zero (a guard compares bit for bit)."""
    t = _guarding_tape(x)
    if t is not None:
        node = x._step(op)
        if integral:
            node = node + 0.0
        t.guard(node, node._d if isinstance(x, Value) else node._d.copy(),
                f"{what} of the traced value {x._d!r} (recorded as "
                f"{float(STEPS[op](x._d))!r})")


def _divmod_values(x, y, what):
    """Python's divmod of the values of x and y (Values or real numbers),
    or None where one is neither.  The quotient is a step function of
    them, so inside a recording the traced ones are pinned."""
    values = []
    for v in (x, y):
        if isinstance(v, Value):
            values.append(_pin(v, what))
        else:
            v = _number(v)
            if v is None:
                return None
            values.append(v)
    return divmod(*values)


def _modulo(x, y):
    """x % y with Python's value, as x - q*y for the floor quotient q, a
    constant: the derivative is 1 in x and -q in y (HIPS autograd's), 0 in
    y where q is 0."""
    qr = _divmod_values(x, y, "the % operator")
    if qr is None:
        return NotImplemented
    q, r = qr
    out = x if q == 0 else x - q * y
    if not isinstance(out, Value):      # a number % y with q == 0: just r
        return _detached(y.__class__, r)
    # the recorded x - q*y may differ from r in its last bits: a constant
    # makes the value Python's
    return out if out._d == r else out + (r - out._d)


def _floor_quotient(x, y):
    """x // y: a step function of x and y, a constant (no gradient)."""
    qr = _divmod_values(x, y, "the // operator")
    if qr is None:
        return NotImplemented
    cls = x.__class__ if isinstance(x, Value) else y.__class__
    return _detached(cls, qr[0])


class Value:
    """A scalar recorded on the current tape (micrograd-compatible).

    ``Value(data)``: data is an int or float (stored as float).  The
    micrograd signature ``Value(data, _children=(), _op='')`` is accepted;
    the Value is a leaf either way: its derivative rules live in C.
    """

    __slots__ = ("_d", "_i", "_t", "_lb")

    # (NumPy's protocols, np.exp(v) ...: given by numpy_interop.py)

    # What the operators are generated from, with the op table (codegen.py
    # reads these; regenerate after changing one): the operators that
    # record a number operand as a fused op (x*c), not as a leaf Value
    _fuse_constants = frozenset(BINARY)
    _typed_ints = False             # gradients are floats, whatever the data
    _keeps_data = False             # data is stored as the float recorded
    _value_exprs = {}               # op: its value, where not the op table's
    _sweep_mode = _core.SWEEP_ACCUM

    def __init__(self, data, _children=(), _op="", label=""):
        d = self._coerce(data)
        t = state.rec
        if t is None or t is NO_GRAD:
            t = current_tape()    # leaves are inputs: recorded under no_grad too
        record_into(t, self, OPS["LEAF"], -1, -1, d, d,
                    self._int_flags(d, None) | _core.FLAG_VARIABLE)
        if label:
            self._lb = label

    @classmethod
    def _int_flags(cls, d, c):
        """The record's flags: which of value and constant were ints."""
        if not cls._typed_ints:
            return 0
        return ((_core.FLAG_VALUE_INT if d.__class__ is int else 0)
                | (_core.FLAG_IMM_INT if c.__class__ is int else 0))

    @staticmethod
    def _coerce(data):
        if data.__class__ is float:
            return data
        if isinstance(data, (bool, np.bool_)) or not isinstance(data, numbers.Real):
            raise TypeError("Value() takes an int or float, not "
                            f"{type(data).__name__}")
        return float(data)

    # -- data and grad -------------------------------------------------------

    @property
    def data(self):
        return self._d

    @data.setter
    def data(self, value):
        d = self._coerce(value)
        self._d = d
        if self._t is not DETACHED and not self._t.closed:
            self._t.set_value(self, d, self._typed_ints and d.__class__ is int)

    @property
    def grad(self):
        if self._t is DETACHED:
            return 0.0
        return self._t.grad_of(self)

    @grad.setter
    def grad(self, value):
        if self._t is DETACHED:
            raise TapeError("this Value is a constant (computed under no_grad, "
                            "or by a step function such as //) and has no "
                            "gradient")
        self._t.set_grad(self, float(value))

    def zero_grad(self):
        self.grad = 0.0

    # -- %, //, divmod: Python's values; % differentiates as x - q*y -------------

    def __mod__(self, other):
        return _modulo(self, other)

    def __rmod__(self, other):
        return _modulo(other, self)

    def __floordiv__(self, other):
        return _floor_quotient(self, other)

    def __rfloordiv__(self, other):
        return _floor_quotient(other, self)

    def __divmod__(self, other):
        q = _floor_quotient(self, other)
        return q if q is NotImplemented else (q, _modulo(self, other))

    def __rdivmod__(self, other):
        q = _floor_quotient(other, self)
        return q if q is NotImplemented else (q, _modulo(other, self))

    # -- the data as a plain number: a constant to every derivative ------------

    def _read(self, what):
        """The data, leaving the tape (Traced pins it in a recording)."""
        return self._d

    def __float__(self):
        scipy_own.refuse(self, 1)
        return float(self._read("float()"))

    def item(self):
        return self._read("item()")

    def __format__(self, spec):
        return format(self._read("format()"), spec) if spec else str(self)

    @property
    def label(self):
        return getattr(self, "_lb", "")

    @label.setter
    def label(self, value):
        self._lb = value

    def _leaf_on(self, tape, flags):
        return tape.record(type(self), OPS["LEAF"], -1, -1, self._d, self._d,
                           self._int_flags(self._d, None) | flags)

    def _step(self, op):
        """The entry of the piecewise-constant op (or STOP) of this Value on
        the recording tape: no derivative, recomputed by a replay."""
        t = recording_tape()
        value = float(STEPS[op](self._d))
        cls = Traced if isinstance(self, Traced) else Value
        if t is NO_GRAD or self._t is DETACHED:
            return _detached(cls, value)
        return t.record(cls, OPS[op], t.adopt(self)._i, -1, 0.0, value, 0)

    def _import_to(self, tape):
        """A leaf on tape standing for this Value (from an enclosing tape)."""
        return self._leaf_on(tape, _core.FLAG_VARIABLE)

    def _constant_on(self, tape):
        """A constant leaf on tape with this Value's data (one computed
        under no_grad, which no tape records)."""
        return self._leaf_on(tape, 0)

    # -- the graph, as micrograd exposes it ------------------------------------

    def _entry(self):
        if self._t is DETACHED:
            return OPS["LEAF"], -1, -1, 0.0, self._d
        return self._t.entry(self)

    @property
    def _op(self):
        op, _, _, imm, _ = self._entry()
        if op == OPS["POWC"]:
            return "**" + _format_number(imm)
        return _LABEL_BY_CODE[op]

    @property
    def _prev(self):
        _, a, b, _, _ = self._entry()
        nodes = self._t.nodes if a >= 0 else ()
        return {nodes[k] for k in (a, b) if k >= 0}

    @property
    def _backward(self):
        raise AttributeError("pyautodiff Values keep their derivative rules "
                             "in C; there is no _backward closure")

    @_backward.setter
    def _backward(self, fn):
        raise TypeError("pyautodiff Values keep their derivative rules in C; "
                        "a _backward closure cannot be attached")

    # -- backward ------------------------------------------------------------

    def backward(self):
        """Add d(self)/d(node) into the .grad of every Value self depends on."""
        if self._t is DETACHED:
            raise TapeError("this Value is a constant (computed under no_grad, "
                            "or by a step function such as //): nothing was "
                            "recorded to differentiate")
        self._t.backward_from(self, 1.0, self._sweep_mode)

    # -- comparisons compare data; == and hash stay identity (micrograd) ------
    # Inside ad.record each one is also a guard: its entry on the tape must
    # give the same answer when the recorded function is replayed.

    def __lt__(self, other):
        return _compare(self, other, "<")

    def __le__(self, other):
        return _compare(self, other, "<=")

    def __gt__(self, other):
        return _compare(self, other, ">")

    def __ge__(self, other):
        return _compare(self, other, ">=")

    __hash__ = object.__hash__

    # A copy (pickled, copy.copy, deepcopy) is a new leaf on the current
    # thread's tape with this Value's data, gradient and label: sharing the
    # tape entry would make the two one Value, and the graph behind a Value
    # does not travel.
    def _copy_args(self, what):
        t = self._t
        has_grad = t is not DETACHED and t.has_grad(self)
        return (type(self), self._read(what), self.grad if has_grad else None,
                self.label)

    def __copy__(self):
        return _rebuilt(*self._copy_args("a copy"))

    def __deepcopy__(self, memo):
        new = memo[id(self)] = _rebuilt(*self._copy_args("a deep copy"))
        return new

    def __reduce__(self):
        return _rebuilt, self._copy_args("pickling")

    def __repr__(self):
        return f"Value(data={self._d}, grad={self.grad})"


def _rebuilt(cls, data, grad, label):
    """A copy of a Value (Value.__reduce__): a leaf of class cls with this
    data and label and, unless grad is None (it had none), this gradient."""
    out = cls(data)
    if grad is not None:
        out.grad = grad
    if label:
        out.label = label
    return out


# operator -> (op, operands swapped): a > b is b < a
COMPARISONS = {"<": ("LT", False), "<=": ("LE", False), ">": ("LT", True),
               ">=": ("LE", True), "==": ("EQ", False), "!=": ("NE", False)}
_DECIDE = {"<": operator.lt, "<=": operator.le, ">": operator.gt,
           ">=": operator.ge, "==": operator.eq, "!=": operator.ne}


def _compare(self, other, symbol, what=None):
    """self symbol other on the data, a bool; inside a recording (of either
    side) also a guard, recorded as a comparison entry that a replay
    recomputes.  `what` names a decision that is not written as a
    comparison (the truth value: x != 0)."""
    o = _compared(other)
    if o is None:
        return NotImplemented
    result = _DECIDE[symbol](self._d, o)
    t = _guarding_tape(self, other)
    if t is not None:
        # a leaf for a constant side; it takes no gradient (flags 0)
        y = t.adopt(other) if isinstance(other, Value) else \
            t.record(Value, OPS["LEAF"], -1, -1, o, o, 0)
        x = t.adopt(self)
        op, swap = COMPARISONS[symbol]
        a, b = (y, x) if swap else (x, y)
        node = t.record(Value, OPS[op], a._i, b._i, 0.0, float(result), 0)
        what = what or f"the comparison {self._d!r} {symbol} {o!r}"
        t.guard(node, float(result), f"{what} (recorded as {result})")
    return result


class Traced(Value):
    """A traced scalar: a float argument of a derivative (ad.grad & co.,
    pyautodiff.autograd) or of a recording (ad.record, @ad.function), and
    every scalar computed from one.  It stands for a Python float, so it
    behaves like one: ==, != and hash by value, bool(), int(), round(),
    math.floor/ceil/trunc, float() and format() of its value.  Inside a
    recording each of these is a guard: a decision (a comparison, the
    truth value) is recorded as a comparison entry, and a number taken out
    (float(x), int(x), format(x), .data) pins x's value.  A Value the
    user makes keeps micrograd's identity == and hash."""

    __slots__ = ()

    def _read(self, what):
        return _pin(self, what)

    data = property(lambda self: self._read(".data"), Value.data.fset)

    # what NumPy's float64 (and an autograd box of a float) answers
    shape = ()
    ndim = 0
    size = 1
    dtype = np.dtype(np.float64)

    def __eq__(self, other):
        return _compare(self, other, "==")

    def __ne__(self, other):
        return _compare(self, other, "!=")

    def __hash__(self):
        return hash(self._read("hash()"))       # equal to its float's, as == is

    def __bool__(self):
        return _compare(self, 0.0, "!=", f"the truth value of {self._d!r}")

    def __float__(self):
        # float() is identity in value, so a derivative through it would be
        # 1, not the 0 a plain number gives (int() and round() are
        # piecewise constant: their 0 is exact)
        scipy_own.refuse(self, 1)
        refuse_detached(self, "float()")
        return float(self._read("float()"))

    # Python's result (and errors: int(nan)) first, then its entry and
    # guard: a step function of the value, its zero derivative is exact
    def __int__(self):
        n = int(self._d)
        stepped(self, "TRUNC", "int()")
        return n

    def __trunc__(self):
        n = math.trunc(self._d)
        stepped(self, "TRUNC", "math.trunc()")
        return n

    def __floor__(self):
        n = math.floor(self._d)
        stepped(self, "FLOOR", "math.floor()")
        return n

    def __ceil__(self):
        n = math.ceil(self._d)
        stepped(self, "CEIL", "math.ceil()")
        return n

    def __round__(self, ndigits=None):
        if ndigits is not None:         # decimal digits: the value itself
            return round(self._read("round()"), ndigits)
        n = round(self._d)              # (to even, as rint)
        stepped(self, "RINT", "round()")
        return n

    def __format__(self, spec):
        return format(self._read("format()"), spec)

    def __str__(self):              # str(x), '%s' % x, print(x): the float's
        return str(self._read("str()"))


def _format_number(c):
    """An exponent as micrograd prints it: 2 for an integral one, else 0.5."""
    if math.isfinite(c) and c == int(c) and abs(c) < 2 ** 53:
        return str(int(c))
    return repr(c)


install_operators(Value, value_operators)
install_operators(Traced, value_operators)
