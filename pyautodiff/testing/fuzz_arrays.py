"""Differential fuzzing of array programs: ``ad.Array`` and mixed
Value/Array graphs against an independent NumPy reference.

A program is a list of steps ``(op, args, params)``: ``args`` are earlier
steps (nodes), ``params`` the op's constants, axes, indices and spelling.
Inputs are steps too ("array" and "value"), so a program can add an input
where an op needs an operand of a given shape.  The generator draws every
array op of the package -- elementwise arithmetic with NumPy broadcasting
(size-1 axes, 0-d operands, Values, numbers and ndarrays on either side),
the unary math, sum/mean/max/min/prod with axis and keepdims, reshape,
transpose, expand_dims, squeeze, concatenate, stack, indexing (ints,
slices, Ellipsis, None, integer arrays with repeats, boolean masks),
maximum/minimum/clip/where, logsumexp/softmax/log_softmax, matmul (1-D,
2-D, batched) and custom ops -- spelled as users write them (operators and
methods, ``ad.*`` functions, NumPy functions), with a hub node reused many
times and several results combined at the end.  Domains are valid by
construction (log of a positive node or of x*x + 0.5, ...).

Each program is checked four ways:

- every node's type, shape and value against ``pyautodiff.testing.arrays``, which
  computes values with NumPy and derivatives by forward mode from each op's
  math (no code shared with the tape);
- the gradients of every input after ``backward`` against the reference's
  Jacobian contracted with the same seed, and a second ``backward`` adding
  the same amounts again;
- a C replay of the tape at the recorded inputs (every entry bit for bit);
- a C replay at moved inputs, values and gradients against the reference
  evaluated there.

Programs whose reference passes near a kink (relu, abs, maximum, a max
reduction's winner ...) without sitting on it, or overflows, are skipped.
"""
import operator
import random
import time
import warnings

import numpy as np

import pyautodiff as ad
from pyautodiff import _core, ops
from pyautodiff._core import lib
from .arrays import COMPARISONS as NUMPY_COMPARISONS, Reference
from .fuzz_scalars import tally
from .rules import RULES, inside, into_domain

VALUE_RTOL = 1e-9       # rounding differs (libm vs NumPy, summation order)
GRAD_RTOL = 1e-7


def _unbroadcast(g, shape):
    """Sum g down to shape (the custom ops' vjps need it; written here)."""
    g = np.asarray(g, dtype=np.float64)
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for k, n in enumerate(shape):
        if n == 1 and g.shape[k] != 1:
            g = g.sum(axis=k, keepdims=True)
    return g


# custom ops as users define them: forward and vjp on plain floats/ndarrays
_cube = ad.custom_op(lambda x: x * x * x, lambda g, out, x: (3.0 * x * x * g,))
_mulsin = ad.custom_op(
    lambda x, y: x * np.sin(y),
    lambda g, out, x, y: (_unbroadcast(g * np.sin(y), np.shape(x)),
                          _unbroadcast(g * x * np.cos(y), np.shape(y))))
_sumsq_last = ad.custom_op(
    lambda x, c: c * np.sum(x * x, axis=-1),
    lambda g, out, x, c: (2.0 * c * x * np.expand_dims(g, -1), None))


class FuzzReference(Reference):
    """The reference with the custom ops of the programs, each a composite
    of the oracle table's rows (its math, not its vjp)."""

    def cube(self, a):
        return self.mul(self.square(a), a)             # (a * a) * a

    def mulsin(self, a, b):
        return self.mul(a, self.sin(b))

    def sumsq_last(self, a, c):
        return self.mul(self.sum(self.square(a), axis=-1), c)


class TapeOps:
    """The reference's ops on ad.Array / ad.Value, in the spelling `spell`
    of the step: "op" (operators and methods), "ad" (ad.* functions) or
    "np" (NumPy functions, recorded through __array_ufunc__ and
    __array_function__)."""

    spell = "op"

    def variable(self, data, offset, kind):
        return ad.Value(float(data)) if kind == "value" else ad.Array(data)

    def lift(self, x):
        return x

    def _arith(self, a, b, op, ufunc):
        return ufunc(a, b) if self.spell == "np" else op(a, b)

    def add(self, a, b):
        return self._arith(a, b, lambda x, y: x + y, np.add)

    def sub(self, a, b):
        return self._arith(a, b, lambda x, y: x - y, np.subtract)

    def mul(self, a, b):
        return self._arith(a, b, lambda x, y: x * y, np.multiply)

    def div(self, a, b):
        return self._arith(a, b, lambda x, y: x / y, np.divide)

    def pow(self, a, b):
        return self._arith(a, b, lambda x, y: x ** y, np.power)

    def maximum(self, a, b):
        return (np.maximum if self.spell == "np" else ad.maximum)(a, b)

    def minimum(self, a, b):
        return (np.minimum if self.spell == "np" else ad.minimum)(a, b)

    def arctan2(self, a, b):
        return (np.arctan2 if self.spell == "np" else ad.arctan2)(a, b)

    def hypot(self, a, b):
        return (np.hypot if self.spell == "np" else ad.hypot)(a, b)

    def logaddexp(self, a, b):
        return (np.logaddexp if self.spell == "np" else ad.logaddexp)(a, b)

    def clip(self, a, lo, hi):
        return (np.clip if self.spell == "np" else ad.clip)(a, lo, hi)

    def where(self, mask, a, b):
        return (np.where if self.spell == "np" else ad.where)(mask, a, b)

    def select(self, cmp, a, b):
        """where(a CMP b, a, b): the mask is recorded (a comparison op)."""
        if self.spell == "np" or cmp in ("==", "!="):
            mask = NUMPY_COMPARISONS[cmp](a, b)
        else:
            mask = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[cmp] \
                if isinstance(a, ad.Array) else NUMPY_COMPARISONS[cmp](a, b)
        return self.where(mask, a, b)

    def _reduce(self, a, name, axis, keepdims):
        if self.spell == "np":
            fn = {"max": np.amax, "min": np.amin}.get(name, getattr(np, name))
            return fn(a, axis=axis, keepdims=keepdims)
        if self.spell == "ad":
            return getattr(ad, name)(a, axis=axis, keepdims=keepdims)
        return getattr(a, name)(axis=axis, keepdims=keepdims)

    def sum(self, a, axis=None, keepdims=False):
        return self._reduce(a, "sum", axis, keepdims)

    def mean(self, a, axis=None, keepdims=False):
        return self._reduce(a, "mean", axis, keepdims)

    def max(self, a, axis=None, keepdims=False):
        return self._reduce(a, "max", axis, keepdims)

    def prod(self, a, axis=None, keepdims=False):
        return self._reduce(a, "prod", axis, keepdims)

    def min(self, a, axis=None, keepdims=False):
        return self._reduce(a, "min", axis, keepdims)

    def reshape(self, a, shape):
        if self.spell == "np":
            return np.reshape(a, shape)
        if self.spell == "ad":
            return ad.reshape(a, shape)
        return a.reshape(*shape) if self.spell == "op*" else a.reshape(shape)

    def transpose(self, a, axes=None):
        if self.spell == "np":
            return np.transpose(a, axes)
        if self.spell == "ad":
            return ad.transpose(a, axes)
        if axes is None:
            return a.T
        return a.transpose(*axes) if self.spell == "op*" else a.transpose(axes)

    def expand_dims(self, a, axis):
        return (np.expand_dims if self.spell == "np" else ad.expand_dims)(a, axis)

    def squeeze(self, a, axis=None):
        return (np.squeeze if self.spell == "np" else ad.squeeze)(a, axis)

    def index(self, a, index):
        return a[index]

    def concatenate(self, arrays, axis=0):
        return (np.concatenate if self.spell == "np" else ad.concatenate)(arrays, axis=axis)

    def stack(self, arrays, axis=0):
        return (np.stack if self.spell == "np" else ad.stack)(arrays, axis=axis)

    def matmul(self, a, b):
        if self.spell == "np":
            return np.matmul(a, b)
        if self.spell == "dot":
            return np.dot(a, b)
        if self.spell == "ad":
            return ad.matmul(a, b)
        return a @ b

    def logsumexp(self, a, axis=None, keepdims=False):
        return ad.logsumexp(a, axis=axis, keepdims=keepdims)

    def softmax(self, a, axis=-1):
        return ad.softmax(a, axis=axis)

    def log_softmax(self, a, axis=-1):
        return ad.log_softmax(a, axis=axis)

    def cube(self, a):
        return _cube(a)

    def mulsin(self, a, b):
        return _mulsin(a, b)

    def sumsq_last(self, a, c):
        return _sumsq_last(a, c)



def _tape_unary(op):
    """The unary op of the package's table (ops.py) in each spelling: its
    NumPy ufunc ("np"), ad.NAME ("ad"), its operator or method ("op");
    where it has no ufunc or no ad.NAME, the next of these."""
    if op.method.startswith("__"):                   # -x, abs(x)
        method = getattr(operator, op.method.strip("_"))
    else:
        method = operator.methodcaller(op.method)
    ufunc = op.numpy if isinstance(op.numpy, np.ufunc) else None
    function = getattr(ad, op.function) if op.function else None

    def unary(self, a):
        if self.spell == "np" and ufunc is not None:
            return ufunc(a)
        if self.spell in ("np", "ad") and function is not None:
            return function(a)
        return method(a)
    return unary


# the unary ops of the package's table, by their oracle rows' names
UNARY_OPS = {op.name.lower(): op for op in ops.ELEMENTWISE if op.method in ops.UNARY}
for _name, _op in UNARY_OPS.items():
    setattr(TapeOps, _name, _tape_unary(_op))
del _name, _op

# -- the ops of a program: fn(B, operands, params) on either backend B ----------

def _operands(xs, p):
    """The step's operands in order: nodes by position in args, or constants."""
    return [xs[v] if kind == "n" else v for kind, v in p["ops"]]


def _positive(B, x, p, shift=0.5):
    """x itself when it is positive by construction, else x*x + shift."""
    return x if p.get("pos") else B.add(B.mul(x, x), shift)


def _div(B, xs, p):
    x, y = _operands(xs, p)
    return B.div(x, _positive(B, y, p))


def _pow(B, xs, p):
    x, y = _operands(xs, p)
    base = _positive(B, x, p)
    return B.pow(base, y if p["ops"][1][0] == "c" else B.tanh(y))


def _unary(name):
    """A unary op, its operand mapped into the oracle row's domain unless
    the step found it there already ("direct")."""
    rule = RULES[name]

    def op(B, xs, p):
        x = xs[0] if p.get("direct") else into_domain(rule, xs[0], B.add, B.mul, B.tanh)
        return getattr(B, name)(x)
    return op


def _combine(B, xs, p):
    x, y = _operands(xs, p)
    return B.add(x, B.mul(y, 0.5))


OPS = {
    "add": lambda B, xs, p: B.add(*_operands(xs, p)),
    "sub": lambda B, xs, p: B.sub(*_operands(xs, p)),
    "mul": lambda B, xs, p: B.mul(*_operands(xs, p)),
    "div": _div,
    "pow": _pow,
    **{name: _unary(name) for name in UNARY_OPS},
    "maximum": lambda B, xs, p: B.maximum(*_operands(xs, p)),
    "minimum": lambda B, xs, p: B.minimum(*_operands(xs, p)),
    **{name: (lambda name: lambda B, xs, p: getattr(B, name)(*_operands(xs, p)))(name)
       for name in ("arctan2", "hypot", "logaddexp")},
    "clip": lambda B, xs, p: B.clip(xs[0], p["lo"], p["hi"]),
    "where": lambda B, xs, p: B.where(p["mask"], *_operands(xs, p)),
    "select": lambda B, xs, p: B.select(p["cmp"], *_operands(xs, p)),
    "sum": lambda B, xs, p: B.sum(xs[0], p["axis"], p["keepdims"]),
    "mean": lambda B, xs, p: B.mean(xs[0], p["axis"], p["keepdims"]),
    "max": lambda B, xs, p: B.max(xs[0], p["axis"], p["keepdims"]),
    "prod": lambda B, xs, p: B.prod(xs[0], p["axis"], p["keepdims"]),
    "min": lambda B, xs, p: B.min(xs[0], p["axis"], p["keepdims"]),
    "reshape": lambda B, xs, p: B.reshape(xs[0], p["shape"]),
    "transpose": lambda B, xs, p: B.transpose(xs[0], p["axes"]),
    "expand_dims": lambda B, xs, p: B.expand_dims(xs[0], p["axis"]),
    "squeeze": lambda B, xs, p: B.squeeze(xs[0], p["axis"]),
    "index": lambda B, xs, p: B.index(xs[0], p["index"]),
    "concatenate": lambda B, xs, p: B.concatenate(_operands(xs, p), p["axis"]),
    "stack": lambda B, xs, p: B.stack(_operands(xs, p), p["axis"]),
    "matmul": lambda B, xs, p: B.matmul(*_operands(xs, p)),
    "logsumexp": lambda B, xs, p: B.logsumexp(xs[0], p["axis"], p["keepdims"]),
    "softmax": lambda B, xs, p: B.softmax(xs[0], p["axis"]),
    "log_softmax": lambda B, xs, p: B.log_softmax(xs[0], p["axis"]),
    "cube": lambda B, xs, p: B.cube(xs[0]),
    "mulsin": lambda B, xs, p: B.mulsin(*_operands(xs, p)),
    "sumsq_last": lambda B, xs, p: B.sumsq_last(xs[0], p["c"]),
    "combine": _combine,
}


def run(steps, B, inputs=None):
    """The program's nodes on backend B, and its inputs (leaves);
    `inputs` replaces the recorded input data."""
    nodes, leaves = [], []
    offset = 0
    for op, args, p in steps:
        if op == "input":
            data = p["data"] if inputs is None else inputs[len(leaves)]
            node = B.variable(data, offset, p["kind"])
            offset += np.size(data)
            leaves.append(node)
        else:
            B.spell = p.get("spell", "op")
            node = OPS[op](B, [nodes[j] for j in args], p)
        nodes.append(node)
    return nodes, leaves


# -- random programs ------------------------------------------------------------

# ops whose result is a Value when every traced operand is a Value and every
# constant a Python number (elsewhere a Value is a 0-d array operand)
VALUE_KEEPING = {"add", "sub", "mul", "div", "pow", "combine", "arctan2", "hypot",
                 "logaddexp"} | set(UNARY_OPS)
CUSTOM = {"cube", "mulsin", "sumsq_last"}
# ops that keep a node positive (for log, sqrt, division and powers without
# the x*x + c detour)
POSITIVE_KEEPING = {"sum", "mean", "max", "min", "prod", "reshape", "transpose",
                    "expand_dims", "squeeze", "index", "concatenate", "stack"}


class _Generator:
    def __init__(self, rng):
        self.rng = rng
        self.np = np.random.default_rng(rng.getrandbits(64))
        self.steps = []
        self.nodes = []           # the reference's nodes, for shapes and values
        self.kinds = []           # "value" or "array"
        self.pos = []             # positive by construction
        self.ref = FuzzReference(None)
        self.hub = None
        nd = rng.choice([0, 1, 1, 2, 2, 2, 3, 3])
        self.universe = tuple(rng.choice([1, 2, 2, 3, 3, 4]) for _ in range(nd))
        if rng.random() < 0.03 and nd:
            self.universe = self.universe[:-1] + (0,)

    # shapes and data
    def derived_shape(self, shape=None):
        """A shape that broadcasts against `shape` (default: the universe)."""
        shape = self.universe if shape is None else shape
        drop = self.rng.randint(0, len(shape)) if self.rng.random() < 0.5 else 0
        return tuple(1 if self.rng.random() < 0.3 else n for n in shape[drop:])

    def data(self, shape, positive=False):
        if positive:
            return self.np.uniform(0.3, 2.0, size=shape)
        if self.rng.random() < 0.1:     # repeated values: ties
            return self.np.choice([-1.0, 0.5, 1.5], size=shape)
        return self.np.uniform(-2.0, 2.0, size=shape)

    def number(self, positive=False):
        if self.rng.random() < 0.15:
            return self.rng.choice([1, 2, 3])          # ints too
        c = self.rng.uniform(0.5, 2.0)
        return c if positive or self.rng.random() < 0.5 else -c

    # nodes
    def add_step(self, op, args, p, kind, pos=False):
        """Append the step if the reference accepts it; its node index."""
        B = self.ref
        try:
            with np.errstate(all="ignore"):
                if op == "input":
                    node = B.variable(p["data"], 0, kind)
                else:
                    node = OPS[op](B, [self.nodes[j] for j in args], p)
        except (ValueError, IndexError, TypeError):
            return None
        if node.v.ndim > 6 or node.v.size > 400:
            return None
        self.steps.append((op, tuple(args), p))
        self.nodes.append(node)
        self.kinds.append(kind)
        self.pos.append(pos)
        return len(self.nodes) - 1

    def new_input(self, shape, kind="array"):
        positive = self.rng.random() < 0.25
        if kind == "value":
            data = float(self.data((), positive))
        else:
            data = self.data(shape, positive)
        return self.add_step("input", (), {"data": data, "kind": kind}, kind, positive)

    def shape(self, j):
        return self.nodes[j].v.shape

    def pick(self):
        r = self.rng.random()
        n = len(self.nodes)
        if r < 0.3 and self.hub is not None:
            return self.hub
        if r < 0.65:
            return self.rng.randrange(max(0, n - 3), n)
        return self.rng.randrange(n)

    def partner(self, i, numbers=True, arrays=True):
        """A second elementwise operand for node i: ("n", node) or ("c", constant)."""
        shape = self.shape(i)
        r = self.rng.random()
        if r < 0.45:
            fits = [j for j in range(len(self.nodes)) if _broadcastable(shape, self.shape(j))]
            if self.hub in fits and self.rng.random() < 0.4:
                return ("n", self.hub)
            if fits:
                return ("n", self.rng.choice(fits))
        if r < 0.6 and numbers:
            return ("c", self.number())
        if r < 0.75 and arrays:
            return ("c", self.data(self.derived_shape(shape)))
        if r < 0.85:
            j = self.new_input((), "value")
        else:
            j = self.new_input(self.derived_shape(shape))
        return ("n", j) if j is not None else ("c", self.number())

    def step_from(self, op, operands, p, pos=False):
        """Add the step whose operands are ("n", node) or ("c", constant)
        specs, with the args/params layout the ops expect."""
        args = []
        spec = []
        for kind, v in operands:
            if kind == "n":
                spec.append(("n", len(args)))
                args.append(v)
            else:
                spec.append(("c", v))
        p = dict(p, ops=spec)
        return self.finish(op, args, p, pos=pos, consts=[v for k, v in operands if k == "c"])

    def finish(self, op, args, p, pos=False, consts=()):
        """Choose the spelling, predict Value or Array, add the step."""
        kinds = [self.kinds[j] for j in args]
        has_value = "value" in kinds
        spell = p.get("spell")
        if spell is None:
            spell = self.rng.choice(p.pop("spells", ("op", "ad", "np")))
            if spell == "np" and (has_value or "array" not in kinds):
                spell = "op" if op in VALUE_KEEPING else "ad"
            p["spell"] = spell
        values_only = kinds and "array" not in kinds and spell != "np"
        if op in CUSTOM:        # a Value when its traced inputs are Values and it is 0-d
            kind = "value" if values_only and self.output_ndim(op, args, p) == 0 else "array"
        else:
            plain_numbers = all(not isinstance(c, np.ndarray) for c in consts)
            kind = "value" if op in VALUE_KEEPING and values_only and plain_numbers else "array"
        p["kind"] = kind
        return self.add_step(op, args, p, kind, pos)

    def output_ndim(self, op, args, p):
        try:
            with np.errstate(all="ignore"):
                return OPS[op](self.ref, [self.nodes[j] for j in args], p).v.ndim
        except (ValueError, IndexError, TypeError):
            return -1

    def all_positive(self, operands):
        return all(self.pos[v] if k == "n" else np.all(np.asarray(v) > 0)
                   for k, v in operands)


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _ordered(g, first, second):
    return [first, second] if g.rng.random() < 0.6 else [second, first]


def _gen_arith(op):
    def gen(g, i):
        operands = _ordered(g, ("n", i), g.partner(i, arrays=g.kinds[i] == "array"))
        pos = op in ("add", "mul") and g.all_positive(operands)
        return g.step_from(op, operands, {"spells": ("op", "op", "np")}, pos=pos)
    return gen


def _gen_div(g, i):
    operands = _ordered(g, ("n", i), g.partner(i, arrays=g.kinds[i] == "array"))
    den = operands[1]
    p = {"spells": ("op", "np"), "pos": g.all_positive([den])}
    return g.step_from("div", operands, p, pos=p["pos"] and g.all_positive(operands[:1]))


def _gen_pow(g, i):
    r = g.rng.random()
    if r < 0.4:                          # node ** constant
        c = g.rng.choice([2, 3, 2.0, 0.5, -1.5, g.rng.uniform(-2.0, 2.0)])
        operands = [("n", i), ("c", c)]
        positive = g.pos[i] or (isinstance(c, int) and g.rng.random() < 0.7)
    elif r < 0.7:                        # constant ** node
        base = g.number(positive=True) if g.rng.random() < 0.5 or g.kinds[i] == "value" else \
            g.data(g.derived_shape(g.shape(i)), positive=True)
        operands = [("c", base), ("n", i)]
        positive = True
    else:                                # node ** node
        operands = _ordered(g, ("n", i), g.partner(i, numbers=False, arrays=False))
        positive = g.all_positive(operands[:1])
    return g.step_from("pow", operands, {"spells": ("op", "op", "np"), "pos": positive})


# unary ops whose result is positive, so a later log or sqrt takes it as it is
POSITIVE_RESULTS = {"exp", "sigmoid", "sqrt"}


def _direct(g, i, rule):
    """Whether node i is in rule's domain already: positive by construction
    for a domain of every positive number, or every value inside a bounded
    one (then the moved inputs of a replay keep it there too)."""
    lo, hi = rule.domain
    if lo is None and hi is None:
        return True
    if hi is None and lo <= 0 and g.pos[i]:
        return True
    return hi is not None and inside(rule, g.nodes[i].v)


def _gen_unary(op):
    def gen(g, i):
        p = {}
        if op == "cube":
            p["spells"] = ("op",)
            return g.finish(op, [i], p, pos=g.pos[i])
        if RULES[op].domain != (None, None):
            p["direct"] = _direct(g, i, RULES[op])
        if not isinstance(UNARY_OPS[op].numpy, np.ufunc):     # relu, sigmoid
            p["spells"] = ("op", "ad")
        return g.finish(op, [i], p, pos=op in POSITIVE_RESULTS)
    return gen


def _gen_choice(op):
    def gen(g, i):
        operands = _ordered(g, ("n", i), g.partner(i))
        pos = op == "maximum" and g.all_positive(operands[:1])
        return g.step_from(op, operands, {"spells": ("ad", "np")}, pos=pos)
    return gen


def _gen_clip(g, i):
    def bound():
        r = g.rng.random()
        if r < 0.3:
            return None
        if r < 0.75:
            return g.rng.uniform(-1.5, 1.5)
        return g.data(g.derived_shape(g.shape(i)))
    lo, hi = bound(), bound()
    if lo is None and hi is None:
        lo = -0.5
    return g.finish("clip", [i], {"lo": lo, "hi": hi, "spells": ("ad", "np")},
                    consts=[c for c in (lo, hi) if c is not None])


def _gen_select(g, i):
    operands = _ordered(g, ("n", i), g.partner(i))
    return g.step_from("select", operands,
                       {"cmp": g.rng.choice(sorted(NUMPY_COMPARISONS)),
                        "spells": ("op", "ad", "np")})


def _gen_where(g, i):
    operands = _ordered(g, ("n", i), g.partner(i))
    shapes = [g.shape(v) if k == "n" else np.shape(v) for k, v in operands]
    mask = g.np.random(g.derived_shape(np.broadcast_shapes(*shapes))) < 0.5
    return g.step_from("where", operands, {"mask": mask, "spells": ("ad", "np")})


def _axis(g, nd, tuples=True):
    r = g.rng.random()
    if nd == 0:
        return None
    if r < 0.25:
        return None
    if r < 0.7 or nd == 1 or not tuples:
        return g.rng.randrange(-nd, nd)
    picked = g.rng.sample(range(nd), g.rng.randint(1, nd))
    return tuple(a - nd if g.rng.random() < 0.4 else a for a in picked)


def _gen_reduce(op):
    def gen(g, i):
        if g.kinds[i] != "array":
            return None
        nd = len(g.shape(i))
        axis = _axis(g, nd)
        if nd == 0 and op != "mean" and g.rng.random() < 0.3:
            axis = g.rng.choice([0, -1])          # NumPy allows these on 0-d
        p = {"axis": axis, "keepdims": g.rng.random() < 0.4}
        if op == "prod":                # (no ad.prod: a method or NumPy's)
            p["spells"] = ("op", "np")
        return g.finish(op, [i], p, pos=g.pos[i])
    return gen


def _spells_for(g, i, *spells):
    """Values have no methods and no NumPy functions for these ops."""
    return ("ad",) if g.kinds[i] == "value" else spells


def _gen_reshape(g, i):
    size = g.nodes[i].v.size
    factors = []
    rest = size
    for _ in range(g.rng.randint(0, 3)):
        f = g.rng.choice([d for d in range(1, rest + 1) if rest % d == 0]) if rest else 0
        factors.append(f)
        rest = rest // f if f else 0
    shape = factors + [rest] if (factors or rest != 1 or g.rng.random() < 0.5) else []
    g.rng.shuffle(shape)
    if shape and size and g.rng.random() < 0.3:
        shape[g.rng.randrange(len(shape))] = -1
    shape = tuple(shape)
    spells = _spells_for(g, i, "op", "op*", "ad", "np") if shape else \
        _spells_for(g, i, "op", "ad", "np")
    return g.finish("reshape", [i], {"shape": shape, "spells": spells}, pos=g.pos[i])


def _gen_transpose(g, i):
    nd = len(g.shape(i))
    axes = None
    if g.rng.random() < 0.6:
        perm = list(range(nd))
        g.rng.shuffle(perm)
        axes = tuple(a - nd if g.rng.random() < 0.3 else a for a in perm)
    spells = _spells_for(g, i, "op", "op*", "ad", "np")
    return g.finish("transpose", [i], {"axes": axes, "spells": spells}, pos=g.pos[i])


def _gen_expand_dims(g, i):
    nd = len(g.shape(i))
    axis = g.rng.randrange(-nd - 1, nd + 1)
    if g.rng.random() < 0.25:
        axis = (axis, g.rng.randrange(-nd - 2, nd + 2))
    return g.finish("expand_dims", [i], {"axis": axis, "spells": _spells_for(g, i, "ad", "np")},
                    pos=g.pos[i])


def _gen_squeeze(g, i):
    shape = g.shape(i)
    ones = [k for k, n in enumerate(shape) if n == 1]
    axis = None
    if ones and g.rng.random() < 0.6:
        picked = g.rng.sample(ones, g.rng.randint(1, len(ones)))
        picked = [k - len(shape) if g.rng.random() < 0.4 else k for k in picked]
        axis = picked[0] if len(picked) == 1 and g.rng.random() < 0.5 else tuple(picked)
    return g.finish("squeeze", [i], {"axis": axis, "spells": _spells_for(g, i, "ad", "np")},
                    pos=g.pos[i])


def _int_array(g, n, shape):
    """Indices into an axis of length n, repeated and negative ones included."""
    few = g.np.integers(-n, n, size=2)
    return g.np.choice(few, size=shape) if g.rng.random() < 0.4 else \
        g.np.integers(-n, n, size=shape)


def _random_slice(g, n):
    step = g.rng.choice([None, 1, 2, -1, -2, 3])
    def end():
        return None if g.rng.random() < 0.4 else g.rng.randint(-n - 1, n + 1)
    return slice(end(), end(), step)


def _gen_index(g, i):
    if g.kinds[i] != "array":
        return None
    shape = g.shape(i)
    nd = len(shape)
    r = g.rng.random()
    if nd == 0:
        index = g.rng.choice([(), Ellipsis, None])
    elif r < 0.15 and shape[0]:
        index = g.rng.randrange(-shape[0], shape[0])
    elif r < 0.35:
        index = tuple(_random_slice(g, n) if g.rng.random() < 0.6 or not n
                      else g.rng.randrange(-n, n) for n in shape[:g.rng.randint(1, nd)])
        if g.rng.random() < 0.3:
            pos_ = g.rng.randint(0, len(index))
            index = index[:pos_] + (g.rng.choice([None, Ellipsis]),) + index[pos_:]
        if len(index) == 1:
            index = index[0]
    elif r < 0.7 and all(shape):
        size = g.rng.choice([(g.rng.randint(1, 5),), (2, g.rng.randint(1, 3)), ()])
        axis = g.rng.randrange(nd)
        arr = _int_array(g, shape[axis], size)
        if nd >= 2 and g.rng.random() < 0.35:      # a second int array, broadcast
            other = g.rng.choice([k for k in range(nd) if k != axis])
            parts = [slice(None)] * nd
            parts[axis] = arr
            parts[other] = _int_array(g, shape[other], np.shape(arr) or (1,))
            index = tuple(parts)
        elif axis == nd - 1 and g.rng.random() < 0.5:
            index = (Ellipsis, arr)
        else:
            index = (slice(None),) * axis + (arr,)
            if len(index) == 1 and g.rng.random() < 0.5:
                index = arr
    else:                                           # a boolean mask
        lead = g.rng.randint(1, nd)
        if g.rng.random() < 0.5:
            index = g.np.random(shape[:lead]) < 0.6
        else:
            mask = g.np.random(shape[nd - lead:]) < 0.6
            index = (Ellipsis, mask) if g.rng.random() < 0.5 else \
                (slice(None),) * (nd - lead) + (mask,)
    return g.finish("index", [i], {"index": index, "spell": "op"}, pos=g.pos[i])


def _same_shaped(g, shape, kind_ok, along=None):
    """An operand of `shape` (any length along axis `along`)."""
    r = g.rng.random()
    if r < 0.4:
        fits = [j for j in range(len(g.nodes)) if kind_ok(j) and (
            g.shape(j) == shape if along is None else
            len(g.shape(j)) == len(shape) and all(
                a == b for k, (a, b) in enumerate(zip(g.shape(j), shape)) if k != along))]
        if fits:
            return ("n", g.rng.choice(fits))
    if along is not None:
        shape = shape[:along] + (g.rng.randint(0, 3),) + shape[along + 1:]
    if r < 0.7:
        j = g.new_input(shape, "value" if shape == () and g.rng.random() < 0.5 else "array")
        if j is not None:
            return ("n", j)
    return ("c", g.data(shape))


def _gen_concatenate(g, i):
    shape = g.shape(i)
    nd = len(shape)
    if nd == 0 or g.kinds[i] != "array":
        return None
    axis = g.rng.randrange(-nd, nd)
    along = axis % nd
    pieces = [("n", i)] + [("n", i) if g.rng.random() < 0.3 else
                           _same_shaped(g, shape, lambda j: g.kinds[j] == "array", along)
                           for _ in range(g.rng.randint(0, 2))]
    g.rng.shuffle(pieces)
    return g.step_from("concatenate", pieces, {"axis": axis, "spells": ("ad", "np")},
                       pos=g.all_positive(pieces))


def _gen_stack(g, i):
    shape = g.shape(i)
    nd = len(shape)
    axis = g.rng.randrange(-nd - 1, nd + 1)
    pieces = [("n", i)] + [("n", i) if g.rng.random() < 0.4 else
                           _same_shaped(g, shape, lambda j: True)
                           for _ in range(g.rng.randint(0, 2))]
    g.rng.shuffle(pieces)
    return g.step_from("stack", pieces, {"axis": axis, "spells": ("ad", "np")},
                       pos=g.all_positive(pieces))


def _gen_matmul(g, i):
    shape = g.shape(i)
    nd = len(shape)
    if g.kinds[i] != "array" or not 1 <= nd <= 3:
        return None
    left = g.rng.random() < 0.6
    n = shape[-1] if left else shape[-2] if nd >= 2 else shape[0]
    r = g.rng.random()
    if r < 0.25:                          # with its own transpose: a shared node
        if nd == 1:
            other = ("n", i)
        else:
            axes = tuple(range(nd - 2)) + (nd - 1, nd - 2)
            j = g.finish("transpose", [i], {"axes": axes, "spells": ("ad", "np")})
            if j is None:
                return None
            other = ("n", j)
    else:
        m = g.rng.randint(1, 3)
        # batch dims of the other operand: none, the same, size 1, or
        # stretching a size-1 batch dim of node i (NumPy broadcasts them)
        if nd == 3:
            batch = g.rng.choice([(), shape[:1], (1,), (1, shape[0]),
                                  (g.rng.randint(2, 3),) if shape[0] == 1 else shape[:1]])
        else:
            batch = g.rng.choice([(), (), (1,), (g.rng.randint(2, 3),)])
        other_shape = g.rng.choice([(n,), batch + ((n, m) if left else (m, n))])
        fits = [j for j in range(len(g.nodes)) if g.kinds[j] == "array"
                and g.shape(j) == other_shape]
        if fits and r < 0.5:
            other = ("n", g.rng.choice(fits))
        elif r < 0.8:
            j = g.new_input(other_shape)
            other = ("n", j) if j is not None else ("c", g.data(other_shape))
        else:
            other = ("c", g.data(other_shape))
    operands = [("n", i), other] if left else [other, ("n", i)]
    shapes = [g.shape(v) if k == "n" else np.shape(v) for k, v in operands]
    spells = ("op", "ad", "np", "dot") if max(len(s) for s in shapes) <= 2 else ("op", "ad", "np")
    return g.step_from("matmul", operands, {"spells": spells})


def _gen_normalize(op):
    def gen(g, i):
        nd = len(g.shape(i))
        axis = _axis(g, nd, tuples=op == "logsumexp")
        p = {"axis": axis, "spell": "ad"}
        if op == "logsumexp":
            p["keepdims"] = g.rng.random() < 0.4
        return g.finish(op, [i], p, pos=op == "softmax")
    return gen


def _gen_mulsin(g, i):
    other = g.partner(i)
    return g.step_from("mulsin", _ordered(g, ("n", i), other), {"spell": "op"})


def _gen_sumsq_last(g, i):
    if g.kinds[i] != "array" or not g.shape(i):
        return None
    return g.finish("sumsq_last", [i], {"c": g.rng.uniform(0.5, 2.0), "spell": "op"})


GENERATORS = {
    "add": _gen_arith("add"), "sub": _gen_arith("sub"), "mul": _gen_arith("mul"),
    "div": _gen_div, "pow": _gen_pow,
    **{op: _gen_unary(op) for op in (*UNARY_OPS, "cube")},
    "maximum": _gen_choice("maximum"), "minimum": _gen_choice("minimum"),
    **{op: _gen_choice(op) for op in ("arctan2", "hypot", "logaddexp")},
    "clip": _gen_clip, "where": _gen_where, "select": _gen_select,
    **{op: _gen_reduce(op) for op in ("sum", "mean", "max", "min", "prod")},
    "reshape": _gen_reshape, "transpose": _gen_transpose,
    "expand_dims": _gen_expand_dims, "squeeze": _gen_squeeze, "index": _gen_index,
    "concatenate": _gen_concatenate, "stack": _gen_stack, "matmul": _gen_matmul,
    **{op: _gen_normalize(op) for op in ("logsumexp", "softmax", "log_softmax")},
    "mulsin": _gen_mulsin, "sumsq_last": _gen_sumsq_last,
}


# ops that apply to fewer nodes are drawn more often
WEIGHTS = {"matmul": 4, "concatenate": 2, "index": 2, "sumsq_last": 2}


class Program:
    """steps; seed: backward's seed (None for backward() on one element)."""

    __slots__ = ("steps", "seed")

    def __init__(self, steps, seed):
        self.steps = steps
        self.seed = seed

    def __repr__(self):
        lines = []
        for k, (op, args, p) in enumerate(self.steps):
            shown = {key: v for key, v in p.items() if key != "data"}
            if op == "input":
                shown["shape"] = np.shape(p["data"])
            lines.append(f"  {k}: {op}{list(args)} {shown}")
        return "Program(\n" + "\n".join(lines) + f"\n  seed={self.seed!r})"


def random_program(rng, max_steps=12):
    """A Program drawn from rng (a random.Random)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _random_program(rng, max_steps)


def _random_program(rng, max_steps):
    g = _Generator(rng)
    for _ in range(g.rng.randint(1, 3)):
        g.new_input(g.derived_shape())
    for _ in range(g.rng.randint(0, 2)):
        g.new_input((), "value" if g.rng.random() < 0.8 else "array")
    if not g.nodes:
        g.new_input(())
    names = sorted(GENERATORS)
    weights = [WEIGHTS.get(name, 1) for name in names]
    for _ in range(g.rng.randint(1, max_steps)):
        for _attempt in range(20):      # an op, then nodes it applies to
            gen = GENERATORS[g.rng.choices(names, weights)[0]]
            j = next((j for j in (gen(g, g.pick()) for _ in range(4)) if j is not None),
                     None)
            if j is not None:
                break
        if g.hub is None and j is not None and g.rng.random() < 0.5:
            g.hub = j
    # several results into one: out + 0.5 * sum(extra) for a few extras
    out = len(g.nodes) - 1
    extras = g.rng.sample(range(out), min(out, g.rng.randint(0, 3)))
    if g.hub is not None and g.hub != out and g.hub not in extras:
        extras.append(g.hub)
    for e in extras:
        if g.kinds[e] == "array":
            e = g.finish("sum", [e], {"axis": None, "keepdims": False, "spell": "op"})
        combined = g.step_from("combine", [("n", out), ("n", e)], {"spell": "op"}) \
            if e is not None else None
        out = out if combined is None else combined
    shape = g.shape(out)
    seed = None
    if g.kinds[out] == "array" and (np.prod(shape) != 1 or g.rng.random() < 0.5):
        seed = g.np.normal(size=shape)
    return Program(g.steps, seed)


# -- checking one program ---------------------------------------------------------

def _input_sizes(steps):
    return [np.size(p["data"]) for op, _, p in steps if op == "input"]


def reference(steps, seed, inputs=None):
    """The reference's nodes, the gradient of every input, and whether it
    came near a kink; None for the nodes where a value or tangent is not
    finite (an overflow)."""
    sizes = _input_sizes(steps)
    R = FuzzReference(sum(sizes))
    with np.errstate(all="ignore"):
        nodes, _ = run(steps, R, inputs)
    if not all(np.all(np.isfinite(n.v)) and (n.d is None or np.all(np.isfinite(n.d)))
               for n in nodes):
        return None, None, R.near_kink
    out = nodes[-1]
    w = np.ones(out.v.shape) if seed is None else seed
    flat = np.zeros(R.k) if out.d is None else \
        out.d.reshape(R.k, out.v.size) @ w.reshape(-1)
    grads, offset = [], 0
    for (op, _, p), size in zip([s for s in steps if s[0] == "input"], sizes):
        g = flat[offset:offset + size].reshape(np.shape(p["data"]))
        grads.append(float(g) if p["kind"] == "value" else g)
        offset += size
    return nodes, grads, R.near_kink


def _tape_value(tape, node, replayed):
    """node's value: as recorded, or as the C tape has it after a replay
    (which leaves a Value's own .data as recorded)."""
    if isinstance(node, ad.Value) and replayed:
        return tape._c.val[node._i]
    return node.data


def _close(got, want, rtol, scale):
    got = np.asarray(got, dtype=np.float64)
    return got.shape == want.shape and bool(np.all(
        np.abs(got - want) <= rtol * (np.abs(want) + scale)))


def _compare_nodes(tape, steps, nodes, ref_nodes, where, replayed=False):
    scale = max([1.0] + [float(np.max(np.abs(r.v), initial=0.0)) for r in ref_nodes])
    for k, ((op, _, p), node, r) in enumerate(zip(steps, nodes, ref_nodes)):
        kind = "value" if isinstance(node, ad.Value) else \
            "array" if isinstance(node, ad.Array) else type(node).__name__
        if kind != p["kind"]:
            return [f"{where}: step {k} ({op}) gave {kind}, expected {p['kind']}"]
        got = _tape_value(tape, node, replayed)
        if np.shape(got) != r.v.shape:
            return [f"{where}: step {k} ({op}) has shape {np.shape(got)}, "
                    f"NumPy's is {r.v.shape}"]
        if not _close(got, r.v, VALUE_RTOL, scale):
            return [f"{where}: step {k} ({op}) value {got!r} vs NumPy {r.v!r}"]
    return []


def _compare_grads(leaves, want, where):
    """(the inputs' grads, what disagrees with the reference's)."""
    # (an Array's grad is the gradient itself, which the next backward
    # adds into: a copy keeps it as it is now)
    got = [leaf.grad.copy() if isinstance(leaf, ad.Array) else leaf.grad
           for leaf in leaves]
    scale = max([1.0] + [float(np.max(np.abs(w), initial=0.0)) for w in want])
    for k, (g, w) in enumerate(zip(got, want)):
        if isinstance(leaves[k], ad.Value) and not isinstance(g, float):
            return got, [f"{where}: input {k} (a Value) has a {type(g).__name__} grad"]
        if not _close(g, np.asarray(w), GRAD_RTOL, scale * 1e-2):
            return got, [f"{where}: d/d input {k}: tape {g!r} vs reference {w!r}"]
    return got, []


def _backward(out, seed):
    if seed is None:
        out.backward()
    else:
        out.backward(seed)


def _entries(tape):
    """Every entry's value in the C tape now."""
    c = tape._c
    return [c.val[j] if c.aux[j] < 0 else tape.nodes[j]._d.copy()
            for j in range(tape.nflushed)]


def check(prog):
    """(reason, problems): reason "kink" or "overflow" for a program skipped,
    else None; problems lists what disagreed (empty when all agree)."""
    with warnings.catch_warnings():     # NumPy's, e.g. the mean of an empty axis
        warnings.simplefilter("ignore", RuntimeWarning)
        return _check(prog)


def _check(prog):
    steps = prog.steps
    ref_nodes, ref_grads, near = reference(steps, prog.seed)
    if ref_nodes is None:
        return "overflow", []
    if near:
        return "kink", []
    with ad.Tape() as tape, np.errstate(all="ignore"):
        try:
            nodes, leaves = run(steps, TapeOps())
        except Exception as exc:            # the reference ran it: so must we
            return None, [f"recording raised {type(exc).__name__}: {exc}"]
        problems = _compare_nodes(tape, steps, nodes, ref_nodes, "recorded")
        if problems:
            return None, problems
        _backward(nodes[-1], prog.seed)
        grads, problems = _compare_grads(leaves, ref_grads, "backward")
        if problems:
            return None, problems
        _backward(nodes[-1], prog.seed)
        if not all(np.array_equal(leaf.grad, 2 * g) for leaf, g in zip(leaves, grads)):
            return None, ["a second backward did not add the same gradients again"]
        return None, _replay_problems(tape, prog, nodes, leaves)


def _replay_problems(tape, prog, nodes, leaves):
    tape.flush()
    c = tape._c
    n = tape.nflushed
    recorded = _entries(tape)
    _core.check(lib.ad_forward(c, 0, n, 0), c, tape)
    for j, (a, b) in enumerate(zip(recorded, _entries(tape))):
        if not np.array_equal(a, b, equal_nan=True):
            return [f"replay at the recorded inputs changed entry {j}: {a!r} -> {b!r}"]
    moved = [np.asarray(p["data"]) * 0.9 + 0.05 for op, _, p in prog.steps if op == "input"]
    ref_nodes, ref_grads, near = reference(prog.steps, prog.seed, moved)
    if ref_nodes is None:
        return []
    for leaf, x in zip(leaves, moved):
        if isinstance(leaf, ad.Value):
            c.imm[leaf._i] = float(x)
        else:
            leaf.data = x
    _core.check(lib.ad_forward(c, 0, n, 0), c, tape)
    problems = _compare_nodes(tape, prog.steps, nodes, ref_nodes, "replay at new inputs",
                              replayed=True)
    if problems or near:
        return problems
    for leaf in leaves:
        leaf.grad = 0
    _backward(nodes[-1], prog.seed)
    return _compare_grads(leaves, ref_grads, "backward after the replay")[1]


def fuzz(examples, seed=0, max_steps=12, show=5, out=print):
    """Check `examples` random programs; returns (tried, skipped, disagreed)
    with skipped a dict of reasons."""
    master = random.Random(seed)

    def cases():
        for _ in range(examples):
            pseed = master.getrandbits(64)
            prog = random_program(random.Random(pseed), max_steps)
            try:
                reason, problems = check(prog)
            except Exception as exc:            # a replay or backward that raised
                reason, problems = None, [f"{type(exc).__name__}: {exc}"]
            yield reason, problems, lambda: f"(program seed {pseed})\n{prog!r}"
    t0 = time.perf_counter()
    tried, skipped, bad = tally(cases(), show, out)
    out(f"{tried} array programs tried ({skipped.get('kink', 0)} skipped near a "
        f"kink, {skipped.get('overflow', 0)} on an overflow), {bad} disagreed, "
        f"{time.perf_counter() - t0:.1f} s, seed {seed}")
    return tried, skipped, bad
