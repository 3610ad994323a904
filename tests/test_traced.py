"""Traced scalars: inside ad.grad & co., ad.record, @ad.function and
pyautodiff.autograd a float argument, and every scalar computed from one,
behaves like the Python float it stands for; inside a recording every
decision on it, and every number taken out of it, is a guard.  The oracle
is the same function run on plain floats (and HIPS autograd)."""
import copy
import math
import pickle

import numpy as np
import pytest

import pyautodiff as ad
import pyautodiff.autograd as pag
from pyautodiff.micrograd.engine import Value as MicroValue

autograd = pytest.importorskip("autograd")


# -- value semantics inside a derivative ------------------------------------

# name: (f, its derivative by hand, each deciding as Python floats do)
BRANCHY = {
    "truth value": (lambda x: x ** 2 if x else -x,
                    lambda x: 2 * x if x else -1.0),
    "==": (lambda x: 3 * x if x == 1.0 else x ** 2,
           lambda x: 3.0 if x == 1.0 else 2 * x),
    "!=": (lambda x: x ** 2 if x != 1.0 else 3 * x,
           lambda x: 2 * x if x != 1.0 else 3.0),
    "== on a result": (lambda x: 5 * x if x * 2.0 == 2.0 else x ** 3,
                       lambda x: 5.0 if x * 2.0 == 2.0 else 3 * x ** 2),
    "in a list": (lambda x: 7 * x if x in [0.5, 1.0] else x ** 2,
                  lambda x: 7.0 if x in [0.5, 1.0] else 2 * x),
    "a set": (lambda x: 7 * x if x in {1.0} else x ** 2,
              lambda x: 7.0 if x in {1.0} else 2 * x),
    "a dict key": (lambda x: {1.0: 2.0, 0.0: 4.0}.get(x, 6.0) * x,
                   lambda x: {1.0: 2.0, 0.0: 4.0}.get(x, 6.0)),
    "int()": (lambda x: x * int(x), lambda x: float(int(x))),
    "round()": (lambda x: x * round(x), lambda x: float(round(x))),
    "round(, 1)": (lambda x: x * round(x, 1), lambda x: round(x, 1)),
    "math.floor": (lambda x: x * math.floor(x), lambda x: float(math.floor(x))),
    "math.ceil": (lambda x: x * math.ceil(x), lambda x: float(math.ceil(x))),
    "math.trunc": (lambda x: x * math.trunc(x), lambda x: float(math.trunc(x))),
    "format": (lambda x: x * float(format(x, ".1f")),
               lambda x: float(format(x, ".1f"))),
    "an f-string": (lambda x: x * len(f"{x}"), lambda x: float(len(f"{x}"))),
    "== NumPy scalar": (lambda x: 3 * x if x == np.float64(1.0) else x ** 2,
                        lambda x: 3.0 if x == 1.0 else 2 * x),
    "NumPy scalar ==": (lambda x: 3 * x if np.float64(1.0) == x else x ** 2,
                        lambda x: 3.0 if x == 1.0 else 2 * x),
}
POINTS = [0.0, 1.0, -1.0, 2.5, -2.5, 1.26, 0.25, 0.5]


@pytest.mark.parametrize("name", BRANCHY)
def test_grad_of_a_branch_follows_the_float(name):
    """The value is f's on plain floats; the derivative is that of the
    branch the float takes (a number taken out of x by int(), float() ...
    is a constant to the derivative)."""
    f, df = BRANCHY[name]
    for x in POINTS:
        value, g = ad.value_and_grad(f)(x)
        assert value == f(x) and g == pytest.approx(df(x), rel=1e-15), (name, x)


def test_the_reported_cases():
    assert ad.grad(lambda x: x ** 2 if x else -x)(0.0) == -1.0
    assert ad.grad(lambda x: 3 * x if x == 1.0 else x ** 2)(1.0) == 3.0
    assert ad.value_and_grad(lambda x, y: (x == y) + 0.0)(2.0, 2.0) == (1.0, 0.0)
    assert ad.value_and_grad(lambda x, y: (x == y) + 0.0)(2.0, 3.0) == (0.0, 0.0)
    assert ad.value_and_grad(lambda x, y: (x != y) + 0.0)(2.0, 3.0) == (1.0, 0.0)


def test_conversions_give_the_floats_results():
    seen = []

    def f(x):
        seen.append((x == 2.5, x != 2.5, bool(x), hash(x), int(x), round(x),
                     round(x, 1), math.floor(x), math.ceil(x), math.trunc(x),
                     format(x, ".3f"), f"{x}", x.item(), x.data))
        return x * 1.0
    for x in (2.5, -2.5, 0.0, 3.75, -0.5):
        ad.grad(f)(x)
        assert seen.pop() == (x == 2.5, x != 2.5, bool(x), hash(x), int(x),
                              round(x), round(x, 1), math.floor(x),
                              math.ceil(x), math.trunc(x),
                              format(x, ".3f"), f"{x}", x, x)


def test_traced_results_of_mixed_operands():
    """A result computed from a traced scalar is traced, whichever side it
    is on and whatever the other operand (a number, a NumPy scalar, a Value
    of the user's); so are NumPy's ufuncs of it."""
    v = ad.Value(2.0)
    results = []

    def f(x):
        results.extend([x + 0.0, 0.0 + x, x + v, v + x, v * x, x * v,
                        v - x, v / x, v ** x, x ** v, np.float64(1.0) * x,
                        x * np.float64(1.0), np.sin(x) * 0.0 + x, -x * -1.0,
                        abs(x), x.tanh() * 0.0 + x])
        return x
    ad.grad(f)(2.0)
    for k, r in enumerate(results):
        assert (r == r._d) is True and hash(r) == hash(r._d), k
    assert results[2] == 4.0 and results[3] == 4.0


def test_numpy_comparisons_are_by_value():
    def f(x):
        assert bool(np.float64(2.0) == x) and not bool(np.float64(1.0) == x)
        # elementwise masks (of 1.0 and 0.0), as NumPy gives for a float
        np.testing.assert_array_equal((x == np.array([2.0, 1.0])).data, [1, 0])
        np.testing.assert_array_equal((np.array([2.0, 1.0]) == x).data, [1, 0])
        return x
    ad.grad(f)(2.0)


def test_a_users_own_values_keep_identity():
    a, b = ad.Value(2.0), ad.Value(2.0)
    assert a != b and not (a == b) and a == a
    assert hash(a) != hash(b) and len({a, b}) == 2
    m, n = MicroValue(2.0), MicroValue(2.0)
    assert m != n and len({m, n}) == 2
    # a user's Value made inside a derivative is still the user's
    seen = []
    ad.grad(lambda x: (seen.append(ad.Value(1.0) == ad.Value(1.0)), x)[1])(1.0)
    assert seen == [False]
    # float(), item() and format() read the data, for every Value
    assert float(a) == 2.0 and a.item() == 2.0 and format(a, ".2f") == "2.00"


def test_distinct_traced_values_stay_distinct_on_an_inner_tape():
    """Two traced scalars with the same value used in an explicit tape's
    block are two leaves there: each gets its own gradient back."""
    grads = []

    def f(x, y):
        with ad.Tape():
            z = x * y * y
            z.backward()
        grads.append((x.grad, y.grad))
        return x + y
    ad.grad(f, (0, 1))(2.0, 2.0)
    assert grads == [(4.0, 8.0)]


def test_copies_and_pickles_are_by_value():
    def f(x):
        for y in (copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
            assert y == x and hash(y) == hash(x)
        return x
    ad.grad(f)(1.5)


def test_autograd_drop_in_branches_as_autograd_does():
    for name in ("truth value", "==", "!=", "== on a result", "in a list"):
        f = BRANCHY[name][0]
        for x in POINTS:
            assert pag.grad(f)(x) == pytest.approx(autograd.grad(f)(x)), (name, x)
    f = lambda x, y: (x == y) + 0.0      # noqa: E731
    assert pag.value_and_grad(f)(2.0, 2.0) == autograd.value_and_grad(f)(2.0, 2.0)


# -- inside a recording: every decision and every number taken out is a guard -

def test_the_reported_recording():
    f = lambda x: x * 2 + 1 if x else x * 3      # noqa: E731
    F = ad.record(f, 1.0)
    assert F(2.0) == 5.0 and F(-1.0) == -1.0
    with pytest.raises(ad.BranchError, match="truth value"):
        F(0.0)
    lazy = ad.function(f)
    assert lazy(1.0) == 3.0 and lazy(0.0) == 0.0 and lazy(2.0) == 5.0
    assert lazy.grad(0.0) == 3.0 and lazy.grad(2.0) == 2.0


@pytest.mark.parametrize("name", ["==", "!=", "== on a result", "in a list",
                                  "a set", "a dict key", "== NumPy scalar"])
def test_equalities_are_guards(name):
    f = BRANCHY[name][0]
    for x0 in (1.0, 2.0):
        F = ad.record(f, x0)
        lazy = ad.function(f)
        for x in (1.0, 2.0, 0.5, 3.0):
            assert lazy(x) == f(x) and lazy.grad(x) == ad.grad(f)(x), (name, x)
            if name in ("a set", "a dict key"):       # hash() pins x
                holds = x == x0
            elif name == "in a list":     # x == 0.5, then (if not) x == 1.0
                holds = (x == 0.5) == (x0 == 0.5) and \
                    (x0 == 0.5 or (x == 1.0) == (x0 == 1.0))
            else:
                holds = (x == 1.0) == (x0 == 1.0)
            if holds:
                assert F(x) == f(x), (name, x0, x)
            else:
                with pytest.raises(ad.BranchError):
                    F(x)


PINNED = {k: BRANCHY[k][0] for k in ("round(, 1)", "format", "an f-string")}
PINNED.update({
    ".data": lambda x: x * (x.data if isinstance(x, ad.Value) else x),
    "item()": lambda x: x * (x.item() if isinstance(x, ad.Value) else x),
    "hash()": lambda x: x * (hash(x) % 7),
    "deepcopy": lambda x: x * copy.deepcopy(x),
})


@pytest.mark.parametrize("name", PINNED)
def test_numbers_taken_out_pin_the_value(name):
    """A number taken out of a traced scalar (other than a step function's:
    below) is a constant of the recording: a replay anywhere else raises,
    and @ad.function records again there."""
    f = PINNED[name]
    F = ad.record(f, 1.5)
    assert F(1.5) == f(1.5) and F.grad(1.5) == ad.grad(f)(1.5)
    with pytest.raises(ad.BranchError, match="holds only at that value"):
        F(1.75)
    lazy = ad.function(f)
    for x in (1.5, 1.75, -2.25):
        assert lazy(x) == f(x), (name, x)


# step functions of the value: their result is recorded and guarded, so a
# recording holds wherever the result is unchanged.  name: (f, the step)
STEPPED = {
    "int()": (BRANCHY["int()"][0], int),
    "round()": (BRANCHY["round()"][0], round),
    "math.floor": (BRANCHY["math.floor"][0], math.floor),
    "math.ceil": (BRANCHY["math.ceil"][0], math.ceil),
    "math.trunc": (BRANCHY["math.trunc"][0], math.trunc),
    "np.floor": (lambda x: x * np.floor(x), np.floor),
    "np.rint": (lambda x: x * np.rint(x), np.rint),
    "np.sign": (lambda x: x * np.sign(x), np.sign),
    "np.round": (lambda x: x * np.round(x), np.round),
    "0-d Array int()": (lambda x: np.sum(x * int(np.sum(x))), int),
    "0-d Array round()": (lambda x: np.sum(x * round(np.sum(x))), round),
    "0-d Array math.floor": (lambda x: np.sum(x * math.floor(np.sum(x))), math.floor),
    "0-d Array math.ceil": (lambda x: np.sum(x * math.ceil(np.sum(x))), math.ceil),
}
STEP_POINTS = [1.5, 1.4, 1.7, 1.2, 0.4, 2.6, 2.5, -1.5, -1.4, -2.6, 0.0, -0.3]


@pytest.mark.parametrize("name", STEPPED)
def test_step_functions_guard_their_result(name):
    """int(), round(), math.floor/ceil/trunc, np.floor & co.: a recording
    replays wherever the step function's result is the one recorded (not
    only at x0), with f's values and derivatives there, and raises
    BranchError where the result changes."""
    f, step = STEPPED[name]
    for x0 in (1.5, -1.5, 0.4):
        F = ad.record(f, x0)
        for x in STEP_POINTS:
            if step(x) == step(x0) and math.copysign(1, step(x)) == \
                    math.copysign(1, step(x0)):
                assert F(x) == f(x), (name, x0, x)
                assert F.grad(x) == pytest.approx(ad.grad(f)(x), rel=1e-15), (name, x)
            else:
                with pytest.raises(ad.BranchError):
                    F(x)


def test_a_pinned_recording_saved_and_loaded_keeps_its_guard(tmp_path):
    F = ad.record(lambda x: x * x.item(), 1.5)
    F.save(tmp_path / "f.adr")
    G = ad.load(tmp_path / "f.adr")
    assert G(1.5) == 2.25
    with pytest.raises(ad.BranchError):
        G(2.0)


def test_a_comparison_with_a_users_value_on_the_left_is_a_guard():
    v = ad.Value(1.0)
    f = lambda x: x * 2 if v < x else x * 3      # noqa: E731
    F = ad.record(f, 2.0)
    assert F(3.0) == 6.0
    with pytest.raises(ad.BranchError, match="comparison"):
        F(0.5)


def test_plain_arithmetic_is_not_guarded():
    F = ad.record(lambda x: np.sin(x) * x + x ** 2 / 3.0, 1.5)
    assert len(F.trace.tape.guards) == 0
    assert F(0.25) == pytest.approx(np.sin(0.25) * 0.25 + 0.25 ** 2 / 3.0)


def test_a_pinned_zero_keeps_its_sign():
    """-0.0 == 0.0, but a number taken out of x shows the sign (format,
    copysign): a pin holds only at the same zero."""
    f = lambda x: x * 0.0 + math.copysign(1.0, x.item())     # noqa: E731
    F = ad.record(f, 0.0)
    assert F(0.0) == 1.0
    with pytest.raises(ad.BranchError):
        F(-0.0)
    assert ad.function(f)(-0.0) == -1.0


def test_nested_gradients_and_custom_ops_of_traced_scalars_are_traced():
    cube = ad.custom_op(lambda t: t ** 3, lambda g, out, t: (3 * t ** 2 * g,))
    f = lambda t: t ** 3          # noqa: E731
    seen = []

    def h(x):
        inner = ad.grad(f)(x)                   # 3 x**2
        seen.append((inner == 12.0, cube(x) == 8.0, hash(inner) == hash(12.0)))
        return inner * x
    assert ad.grad(h)(2.0) == pytest.approx(36.0)     # d(3x**3) = 9x**2
    assert seen == [(True, True, True)]


def test_a_value_computed_under_no_grad_in_a_recording_pins_its_operands():
    """What no_grad computes from x is a constant of the recording: a
    replay at another x raises instead of reusing it."""
    def f(x):
        with ad.no_grad():
            s = x * 2.0
        return x + s
    F = ad.record(f, 1.0)
    assert F(1.0) == 3.0 and F.grad(1.0) == 1.0     # s is a constant to grad
    with pytest.raises(ad.BranchError, match="no_grad"):
        F(2.0)
    assert ad.function(f)(2.0) == 6.0
    assert ad.grad(f)(2.0) == 1.0


def test_an_explicit_tape_inside_a_recording_raises():
    """What an explicit tape's block computes is not on the recording, so
    a number or decision taken there would be baked into every replay."""
    def f(x):
        with ad.Tape():
            s = float(x * 2.0)
        return x * s
    with pytest.raises(NotImplementedError, match="with ad.Tape"):
        ad.record(f, 1.0)
    assert ad.grad(f)(2.0) == 4.0          # a derivative takes it (s a constant)
    # a recorded gradient records f's body too
    with pytest.raises(NotImplementedError, match="with ad.Tape"):
        ad.record(ad.grad(lambda x: f(x) * x), 1.0)


def test_str_of_a_traced_scalar_is_the_floats_and_pins_in_a_recording():
    assert ad.grad(lambda x: x * len(str(x)))(2.5) == len(str(2.5))
    F = ad.record(lambda x: x * len(str(x)), 2.5)
    assert F(2.5) == 2.5 * 3
    with pytest.raises(ad.BranchError):
        F(3.25)


def test_a_traced_scalar_has_numpys_scalar_attributes():
    seen = []

    def f(x):
        seen.append((x.shape, x.ndim, x.size, x.dtype))
        return x * x
    assert ad.grad(f)(3.0) == 6.0
    assert seen == [((), 0, 1, np.dtype(np.float64))]


def test_an_array_used_as_an_index_is_a_guard_in_a_recording():
    def f(x):
        idx = ad.relu(x - 1.0)            # integral at the points below
        return np.sum(x[idx] * x)
    F = ad.record(f, np.array([1.0, 2.0, 0.0]))
    # idx = [0, 1, 0]: x[idx] * x = [1, 4, 0]
    assert F(np.array([1.0, 2.0, 0.0])) == 5.0
    with pytest.raises(ad.BranchError, match="index"):
        F(np.array([2.0, 2.0, 0.0]))
