"""Differential fuzzing of derivatives of derivatives, to any order.

A program is Python source: a random function of a float or a small array
(shapes (), (2,), (3,), (2, 2)) built from the op set -- + - * /, powers
with constant and variable exponents, neg abs relu tanh exp log sigmoid
sin cos sqrt log1p expm1 arctan square, maximum/minimum, sum mean max min
logsumexp (whole or along an axis), indexing, reshape, transpose, matmul --
spelled with operators and NumPy functions (``ad.sigmoid``, ``ad.relu``
and ``ad.logsumexp``, which NumPy lacks), differentiated by a random
nesting of the functional API's transforms, outermost first, e.g.::

    x0 = np.array([0.31, -1.2])
    def F1(x1):
        def F2(x2):                     # closes over x1
            t2_1 = np.sin(x2) * x1
            return np.sum(t2_1)
        p2 = np.tanh(x1)
        r2 = ad.grad(F2)(p2)            # a derivative inside a derivative
        return np.sum(r2 * x1)
    result = ad.hessian(F1)(x0)

Every level is one of grad, value_and_grad, jvp, vjp, jacobian (order 1),
hvp, hessian (order 2), the total order at most ``max_order``; an inner
function may close over the enclosing variable (and the one enclosing
that), a jvp's or hvp's vector or a vjp's cotangent may be computed from
it, and the point an inner derivative is taken at may be a constant.  Domains hold by
construction: each unary op's operand goes through rules.py's
``into_domain`` (log of x*x + 0.5, exp of 2 tanh(x) ...), divisions are by
b*b + 1, variable powers of a*a + 0.5.

The same source runs with ``ad`` bound to pyautodiff and to taylor_api.py
(jets, no code shared with the tape), and the results are compared.  Each
program is one outcome: it agrees, disagrees (a different number, or an
error other than NotImplementedError: the program is printed), is
unsupported (pyautodiff raised NotImplementedError; counted per nesting
shape, a failure only with ``strict``), or is skipped because the
reference passes near a kink or out of range.

``python -m pyautodiff.testing.fuzz --kind nested --count N [--seed S]
[--strict]`` runs it.
"""
import random
import re
import time
import warnings

import numpy as np

import pyautodiff as ad
from . import taylor, taylor_api
from .rules import RULES, UNARY, into_domain

SHAPES = [(), (2,), (3,), (2, 2)]
# transform -> its order
ORDERS = {"grad": 1, "value_and_grad": 1, "jvp": 1, "vjp": 1, "jacobian": 1,
          "hvp": 2, "hessian": 2}
# the transforms of a scalar function
SCALAR = {"grad", "value_and_grad", "hvp", "hessian"}

RTOL = 1e-6
LARGEST = 1e8           # reference results beyond this are not compared
# nor programs whose intermediates at any level pass this: their digits are
# lost to cancellation in the reference's series
INTERMEDIATE = 1e20


# -- the source of a program --------------------------------------------------------

def _num(v):
    return repr(round(float(v), 2))


def _operand(e):
    return e if isinstance(e, str) else _num(e)


def _in_domain(rule, e):
    """The source of e mapped into the rule's domain, by into_domain itself."""
    return into_domain(rule, e,
                       add=lambda a, b: f"({_operand(a)} + {_operand(b)})",
                       mul=lambda a, b: f"({_operand(a)} * {_operand(b)})",
                       tanh=lambda a: f"np.tanh({a})")


_UNARY_SPELLING = {"neg": "(-{})", "relu": "ad.relu({})", "sigmoid": "ad.sigmoid({})",
                   "square": "({} ** 2)", "abs": "np.abs({})"}


def _unary_source(name, a):
    spelled = _UNARY_SPELLING.get(name, f"np.{name}({{}})")
    return spelled.format(_in_domain(RULES[name], a))


_BINARY = {
    "add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})",
    "div": "({a} / ({b} * {b} + 1.0))",
    "pow": "(({a} * {a} + 0.5) ** np.tanh({b}))",
    "maximum": "np.maximum({a}, {b})", "minimum": "np.minimum({a}, {b})",
}

_WITH_CONSTANT = {
    "addc": "({a} + {c})", "subc": "({a} - {c})", "rsubc": "({c} - {a})",
    "mulc": "({a} * {c})", "divc": "({a} / {c})",
    "rdivc": "({c} / ({a} * {a} + 1.0))", "powc": "(({a} * {a} + 0.5) ** {c})",
    "cube": "({a} ** 3)", "rpowc": "({c} ** np.tanh({a}))",
}


def _broadcast(s, t):
    return s == t or s == () or t == ()


class Writer:
    """Writes one random program's source (see the module docstring)."""

    def __init__(self, rng, max_steps):
        self.rng = rng
        self.max_steps = max_steps
        self.lines = []
        self.counter = 0

    def literal(self, shape):
        """A constant of this shape, entries distinct (no ties of max)."""
        if shape == ():
            return _num(self.rng.choice([-1, 1]) * self.rng.uniform(0.3, 1.5))
        n = int(np.prod(shape))
        vals = self.rng.sample(range(-150, 151), n)
        a = np.array([v / 100.0 for v in vals]).reshape(shape)
        return f"np.array({a.tolist()!r})"

    def emit(self, indent, text):
        self.lines.append("    " * indent + text)

    # -- expressions --
    def step(self, a, sa, pool):
        """One random op with a (of shape sa) as its first operand, a
        partner from pool where it takes one: (source, shape)."""
        rng = self.rng
        kinds = ["unary"] * 4 + ["binary"] * 3 + ["constant"] * 3
        if sa:
            kinds += ["reduce"] * 2 + ["layout", "matmul"]
        kind = rng.choice(kinds)
        if kind == "unary":
            return _unary_source(rng.choice(sorted(UNARY)), a), sa
        if kind == "binary":
            # itself rarely (a - a, maximum(a, a): exact ties), else another
            # node or a constant
            partners = [(e, s) for e, s in pool if _broadcast(s, sa) and e != a]
            if rng.random() < 0.05:
                b, sb = a, sa
            elif partners and rng.random() < 0.75:
                b, sb = rng.choice(partners)
            else:
                b, sb = self.literal(sa), sa
            if rng.random() < 0.5:
                a, sa, b, sb = b, sb, a, sa
            shape = sa if sa else sb
            return _BINARY[rng.choice(sorted(_BINARY))].format(a=a, b=b), shape
        if kind == "constant":
            name = rng.choice(sorted(_WITH_CONSTANT))
            c = _num(rng.uniform(0.5, 2.0))
            return _WITH_CONSTANT[name].format(a=a, c=c), sa
        if kind == "reduce":
            return self.reduce(a, sa)
        if kind == "layout":
            return self.layout(a, sa)
        return self.matmul(a, sa, pool)

    def reduce(self, a, sa):
        rng = self.rng
        fn = rng.choice(["np.sum", "np.mean", "np.max", "np.min", "ad.logsumexp"])
        if len(sa) == 2 and rng.random() < 0.5:
            axis = rng.choice([0, 1, -1])
            return f"{fn}({a}, axis={axis})", (sa[1] if axis == 0 else sa[0],)
        return f"{fn}({a})", ()

    def layout(self, a, sa):
        rng = self.rng
        options = [(f"{a}[{rng.randrange(sa[0])}]", sa[1:]), (f"{a}[::-1]", sa)]
        if sa[0] >= 3:
            options.append((f"{a}[1:]", (sa[0] - 1,) + sa[1:]))
        if sa == (2, 2):
            options += [(f"np.reshape({a}, (4,))", (4,)), (f"np.transpose({a})", sa)]
        if sa == (4,):
            options.append((f"np.reshape({a}, (2, 2))", (2, 2)))
        return rng.choice(options)

    def matmul(self, a, sa, pool):
        """a @ b, b from the pool or a constant; or a constant @ a."""
        rng = self.rng
        if len(sa) == 2 and rng.random() < 0.3:
            return f"({self.literal((2, sa[0]))} @ {a})", (2,) + sa[1:]
        n = sa[-1]
        others = [(e, s) for e, s in pool if s and s[0] == n and len(s) <= 2]
        if others and rng.random() < 0.7:
            b, sb = rng.choice(others)
        else:
            sb = rng.choice([(n,), (n, 2)])
            b = self.literal(sb)
        return f"({a} @ {b})", sa[:-1] + sb[1:]

    def to_shape(self, e, s, target):
        """The source of e (of shape s) made of shape target."""
        if s == target:
            return e
        if target == ():
            return f"np.sum({e})"
        if s == ():
            return f"({e} * {self.literal(target)})"
        return f"(np.sum({e}) * {self.literal(target)})"

    def body(self, indent, level, pool, must, target, steps):
        """Lines computing a value of shape target from the pool (name,
        shape) that use every name in must; returns its source."""
        pool = list(pool)
        used = []
        for name, shape in must:
            e, s = self.step(name, shape, pool)
            used.append(self.assign(indent, level, e, s, pool))
        for _ in range(steps):
            a, sa = pool[-1] if self.rng.random() < 0.5 else self.rng.choice(pool)
            e, s = self.step(a, sa, pool)
            self.assign(indent, level, e, s, pool)
        # the last node, plus the must-use ones and the two before it, so
        # that few lines are dead
        out = self.to_shape(*pool[-1], target)
        extra = used + [t for t in pool[-3:-1] if t not in used and t[0].startswith("t")]
        for e, s in extra:
            if e != pool[-1][0]:
                out = f"{out} + 0.5 * {self.to_shape(e, s, target)}"
        return out

    def assign(self, indent, level, e, s, pool):
        self.counter += 1
        name = f"t{level}_{self.counter}"
        self.emit(indent, f"{name} = {e}")
        pool.append((name, s))
        return name, s


# -- the nesting -----------------------------------------------------------------------

class Level:
    """One transform of the nesting: applied to F{i}(x{i}), x{i} of shape
    `shape`, F{i}'s result of shape `out`; `closure`: the enclosing
    variables F{i} also uses (their level numbers, () for none);
    `outer_vector`: the vector or cotangent is computed from x{i-1};
    `constant_point`: the point is a constant, not computed from x{i-1}."""

    def __init__(self, transform, shape, out, closure=(), outer_vector=False,
                 constant_point=False):
        self.transform = transform
        self.shape = shape
        self.out = out
        self.closure = closure
        self.outer_vector = outer_vector
        self.constant_point = constant_point

    def results(self):
        """(shape of the main result, [shapes of the others]) of the call:
        the derivative, and the value for value_and_grad, jvp and vjp."""
        t, s, o = self.transform, self.shape, self.out
        main = {"jvp": o, "jacobian": o + s, "hessian": s + s}.get(t, s)
        extra = {"value_and_grad": [()], "jvp": [o], "vjp": [o]}.get(t, [])
        return main, extra


def shape_label(levels):
    """The nesting shape, e.g. 'grad(jvp(f))', with its variants."""
    label = "f"
    for lv in reversed(levels):
        label = f"{lv.transform}({label})"
    flags = [name for name, on in
             [("closure", any(lv.closure for lv in levels)),
              ("outer vector", any(lv.outer_vector for lv in levels)),
              ("constant point", any(lv.constant_point for lv in levels))] if on]
    return label + (f" [{', '.join(flags)}]" if flags else "")


def parse_nesting(text):
    """'grad(jvp(f))' or 'grad,jvp' -> ("grad", "jvp"), outermost first."""
    names = tuple(n for n in re.findall(r"[a-z_]+", text) if n != "f")
    unknown = [n for n in names if n not in ORDERS]
    if not names or unknown:
        raise ValueError(f"not a nesting of {', '.join(sorted(ORDERS))}: {text!r}")
    return names


def random_levels(rng, max_order=4, max_depth=3, nestings=None):
    """The levels of a random nesting: of total order at most max_order and
    depth at most max_depth, or one of `nestings` (tuples of names)."""
    if nestings:
        names = rng.choice(list(nestings))
    else:
        while True:
            names = [rng.choice(sorted(ORDERS)) for _ in range(rng.randint(1, max_depth))]
            if sum(ORDERS[n] for n in names) <= max_order:
                break
    levels = []
    for i, name in enumerate(names):
        shape = rng.choice(SHAPES)
        out = () if name in SCALAR or rng.random() < 0.4 else \
            rng.choice([shape, rng.choice(SHAPES)])
        # level i + 1 may close over x{i}, and over x{i-1} too
        closure = ()
        if i > 0 and rng.random() < 0.4:
            closure = (i,) if i == 1 or rng.random() < 0.7 else (i, i - 1)
        vector = i > 0 and name in ("jvp", "hvp", "vjp") and rng.random() < 0.3
        levels.append(Level(name, shape, out, closure, vector,
                            constant_point=i > 0 and rng.random() < 0.1))
    return levels


class Program:
    """The source of a random program and its nesting; ``run(api)``
    executes it with ``ad`` bound to api and gives the result, flat."""

    def __init__(self, source, levels, seed):
        self.source = source
        self.levels = levels
        self.seed = seed
        self.label = shape_label(levels)

    def __repr__(self):
        """The program as a script that runs on its own."""
        return (f"# seed {self.seed!r}: {self.label}\n"
                f"import numpy as np\nimport pyautodiff as ad\n{self.source}")

    def run(self, api):
        namespace = {"np": np, "ad": api}
        exec(compile(self.source, f"<nested program {self.seed}>", "exec"), namespace)
        return flat(namespace["result"])


def flat(r):
    if isinstance(r, (tuple, list)):
        return np.concatenate([flat(e) for e in r])
    if isinstance(r, taylor.Jet):
        raise TypeError("a jet left the reference's outermost derivative")
    return np.ravel(np.asarray(r, dtype=np.float64))


def _call(w, indent, lv, fname, p, v):
    """Lines calling lv's transform of fname at p (and v): the names of the
    results, main first."""
    i = fname[1:]
    t = lv.transform
    if t in ("jvp", "value_and_grad"):
        args = f"{p}, {v}" if t == "jvp" else p
        w.emit(indent, f"r0_{i}, r{i} = ad.{t}({fname})({args})")
        return f"r{i}", [f"r0_{i}"]
    if t == "vjp":
        w.emit(indent, f"r0_{i}, back{i} = ad.vjp({fname})({p})")
        w.emit(indent, f"r{i} = back{i}({v})")
        return f"r{i}", [f"r0_{i}"]
    args = f"{p}, {v}" if t == "hvp" else p
    w.emit(indent, f"r{i} = ad.{t}({fname})({args})")
    return f"r{i}", []


def _vector_shape(lv):
    return lv.out if lv.transform == "vjp" else lv.shape


def _write_function(w, levels, i, indent):
    """def F{i}(x{i}) and everything inside it (levels i+1 ...)."""
    lv = levels[i]
    n = i + 1
    x = f"x{n}"
    w.emit(indent, f"def F{n}({x}):")
    pool = [(x, lv.shape)]
    pool += [(f"x{j}", levels[j - 1].shape) for j in lv.closure]
    steps = w.rng.randint(0 if n < len(levels) else 1, w.max_steps)
    if n == len(levels):                     # the innermost function
        out = w.body(indent + 1, n, pool, pool, lv.out, steps)
        w.emit(indent + 1, f"return {out}")
        return
    inner = levels[i + 1]
    _write_function(w, levels, i + 1, indent + 1)
    if inner.constant_point:            # x{n} reaches it by a closure or the vector only
        p = w.literal(inner.shape)
    else:
        p = w.body(indent + 1, n, [(x, lv.shape)], [], inner.shape, w.rng.randint(0, 2))
    w.emit(indent + 1, f"p{n + 1} = {p}")
    v = None
    if inner.transform in ("jvp", "hvp", "vjp"):
        vs = _vector_shape(inner)
        v = w.body(indent + 1, n, [(x, lv.shape)], [], vs, 1) \
            if inner.outer_vector else w.literal(vs)
    main, extra = _call(w, indent + 1, inner, f"F{n + 1}", f"p{n + 1}", v)
    main_shape, extra_shapes = inner.results()
    results = [(main, main_shape)] + list(zip(extra, extra_shapes))
    out = w.body(indent + 1, n, pool + results, results + pool[1:], lv.out, steps)
    w.emit(indent + 1, f"return {out}")


def random_program(rng, max_steps=5, max_order=4, seed=None, nestings=None):
    levels = random_levels(rng, max_order, nestings=nestings)
    w = Writer(rng, max_steps)
    w.emit(0, f"x0 = {w.literal(levels[0].shape)}")
    _write_function(w, levels, 0, 0)
    top = levels[0]
    v = w.literal(_vector_shape(top)) if top.transform in ("jvp", "hvp", "vjp") else None
    main, extra = _call(w, 0, top, "F1", "x0", v)
    w.emit(0, f"result = ({', '.join(extra + [main])},)")
    return Program("\n".join(w.lines) + "\n", levels, seed)


# -- checking -----------------------------------------------------------------------

def reference(program):
    """The program's result by jets, or why there is none: "kink" where it
    passes (near) a kink, "range" where it leaves the ops' domains or is
    too large to compare, "error: ..." where the reference fails."""
    try:
        with np.errstate(all="raise"), taylor.bounded(INTERMEDIATE):
            want = program.run(taylor_api)
    except taylor.NearKink:
        return "kink"
    except (FloatingPointError, OverflowError, ZeroDivisionError):
        return "range"
    except Exception as exc:                   # noqa: BLE001 -- a finding too
        return f"error: the reference raised {type(exc).__name__}: {exc}"
    if not np.all(np.isfinite(want)) or np.max(np.abs(want), initial=0.0) > LARGEST:
        return "range"
    return want


def check(program, api=ad):
    """(outcome, detail) of the program on api (pyautodiff; the tests pass
    others) against the reference: outcome "agree", "disagree",
    "unsupported", "kink" or "range"."""
    want = reference(program)
    if isinstance(want, str):
        if want.startswith("error"):
            return "disagree", want
        return want, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = program.run(api)
    except NotImplementedError as exc:
        return "unsupported", str(exc)
    except Exception as exc:                   # noqa: BLE001 -- any error is a finding
        return "disagree", f"pyautodiff raised {type(exc).__name__}: {exc}"
    if got.shape != want.shape:
        return "disagree", f"result of {got.size} numbers, the reference's {want.size}"
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    bad = ~np.isclose(got, want, rtol=RTOL, atol=RTOL * scale)
    if np.any(bad):
        k = int(np.argmax(bad))
        return "disagree", (f"{int(bad.sum())} of {want.size} numbers differ, "
                            f"first [{k}]: {got[k]!r} vs reference {want[k]!r}")
    return "agree", None


class Tally:
    """Outcomes of a run: counts, unsupported per nesting shape (with a
    message), and the disagreements."""

    def __init__(self):
        self.counts = {k: 0 for k in ("agree", "disagree", "unsupported", "kink", "range")}
        self.unsupported = {}
        self.agreed = {}
        self.disagreements = []

    def add(self, program, outcome, detail):
        self.counts[outcome] += 1
        if outcome == "agree":
            self.agreed[program.label] = self.agreed.get(program.label, 0) + 1
        elif outcome == "unsupported":
            n, msg = self.unsupported.get(program.label, (0, detail))
            self.unsupported[program.label] = (n + 1, msg)
        elif outcome == "disagree":
            self.disagreements.append((program, detail))

    def failures(self, strict):
        return self.counts["disagree"] + (self.counts["unsupported"] if strict else 0)


def _by_count(counts, most):
    """The most common labels first, `most` of them."""
    rows = sorted(counts.items(), key=lambda e: (-(e[1][0] if isinstance(e[1], tuple)
                                                   else e[1]), e[0]))
    return rows[:most], len(rows) - min(most, len(rows))


def fuzz_nested(count, seed=0, max_steps=5, max_order=4, strict=False, show=5,
                out=print, shapes=20, nestings=None):
    """Check `count` random programs (program k drawn from the seed
    f"{seed}/{k}"); prints the first `show` disagreements and the `shapes`
    most common nesting shapes of each outcome; returns the Tally."""
    tally = Tally()
    t0 = time.perf_counter()
    for k in range(count):
        program = random_program(random.Random(f"{seed}/{k}"), max_steps, max_order,
                                 seed=f"{seed}/{k}", nestings=nestings)
        tally.add(program, *check(program))
    for program, detail in tally.disagreements[:show]:
        out(f"disagreement: {detail}\n{program}")
    c = tally.counts
    out(f"{count} nested-derivative programs: {c['agree']} agreed, "
        f"{c['disagree']} disagreed, {c['unsupported']} unsupported, "
        f"{c['kink'] + c['range']} skipped ({c['kink']} near a kink, "
        f"{c['range']} out of range), {time.perf_counter() - t0:.1f} s, seed {seed}")
    rows, more = _by_count(tally.agreed, shapes)
    out(f"agreed, by nesting shape ({len(tally.agreed)}): "
        + ", ".join(f"{label} {n}" for label, n in rows) + (f" ... {more} more" if more else ""))
    if tally.unsupported:
        rows, more = _by_count(tally.unsupported, shapes)
        out(f"unsupported (NotImplementedError), by nesting shape ({len(tally.unsupported)}):")
        for label, (n, msg) in rows:
            out(f"  {n:5d}  {label}: {msg.split(';')[0][:90]}")
        if more:
            out(f"  ... and {more} more shapes")
    if strict and c["unsupported"]:
        out("--strict: unsupported nestings count as failures")
    return tally
