"""scipy.integrate.odeint with traced y0, t and args
(pyautodiff.scipy_integrate and the drop-in
pyautodiff.autograd.scipy.integrate): values against scipy; gradients
(adjoint method) against HIPS autograd's and central differences of
scipy's odeint, to the integrator's tolerance; tangents (forward
sensitivities); second and third orders through nesting against the
solution by hand; and the errors."""
import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff.scipy_integrate import odeint

si = pytest.importorskip("scipy.integrate")

TOL = dict(rtol=1e-10, atol=1e-10)
T = np.linspace(0.1, 0.2, 4)


def func(y, t, arg1, arg2, xp=np):
    """HIPS autograd's test system."""
    return -xp.sqrt(t) - y + arg1 - xp.mean((y + arg2) ** 2)


def _point():
    rng = np.random.default_rng(3)
    return (rng.normal(size=3), T.copy(), rng.normal(size=3), rng.normal(size=3),
            rng.normal(size=(4, 3)))


def _loss(w, solver=odeint, f=func, args=lambda a1, a2: (a1, a2)):
    return lambda y0, t, a1, a2: np.sum(solver(f, y0, t, args(a1, a2), **TOL) * w)


def _central(loss, xs, k, h=1e-6):
    out = np.zeros_like(xs[k])
    for i in range(xs[k].size):
        up, down = [x.copy() for x in xs], [x.copy() for x in xs]
        up[k].flat[i] += h
        down[k].flat[i] -= h
        out.flat[i] = (loss(*up) - loss(*down)) / (2 * h)
    return out


def test_values_are_scipys():
    y0, t, a1, a2, _ = _point()
    with ad.Tape():
        out = odeint(func, ad.Array(y0), t, (a1, ad.Array(a2)), **TOL)
        assert isinstance(out, ad.Array)
        np.testing.assert_allclose(out.data, si.odeint(func, y0, t, (a1, a2), **TOL),
                                   rtol=1e-12, atol=1e-12)
    # nothing traced: scipy's own (and its full_output)
    plain, info = odeint(func, y0, t, (a1, a2), full_output=True)
    assert isinstance(plain, np.ndarray) and info["message"] == "Integration successful."


def test_gradients_as_autograds_and_central_differences():
    y0, t, a1, a2, w = _point()
    xs = [y0, t, a1, a2]
    ours = ad.grad(_loss(w), (0, 1, 2, 3))(*xs)
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    aint = pytest.importorskip("autograd.scipy.integrate")
    from autograd.builtins import tuple as atuple

    def afunc(y, t, a1, a2):
        return func(y, t, a1, a2, anp)
    theirs = autograd.grad(
        lambda y0, t, a1, a2: anp.sum(aint.odeint(afunc, y0, t, atuple((a1, a2)), **TOL) * w),
        (0, 1, 2, 3))(*xs)
    plain = _loss(w, si.odeint)
    h = 1e-6
    for k in range(4):
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-8, atol=1e-10)
        # the integrator's tolerance, seen through a central difference in
        # one direction per argument
        v = np.sin(np.arange(1.0, xs[k].size + 1))
        up, down = list(xs), list(xs)
        up[k], down[k] = xs[k] + h * v, xs[k] - h * v
        np.testing.assert_allclose(np.dot(ours[k], v), (plain(*up) - plain(*down)) / (2 * h),
                                   rtol=1e-6, atol=1e-7)


def test_exponential_decay_by_hand():
    """y' = -k y: y(t) = y0 exp(-k t); d/dk sum(y) = -sum(t y0 exp(-k t))."""
    t = np.linspace(0.0, 2.0, 5)

    def total(k, y0):
        return np.sum(odeint(lambda y, s, k: -k * y, y0, t, (k,), **TOL))
    gk, gy = ad.grad(total, (0, 1))(0.7, np.array([1.0, 2.0]))
    np.testing.assert_allclose(gk, -np.sum(t * np.exp(-0.7 * t)) * 3.0, rtol=1e-7)
    np.testing.assert_allclose(gy, [np.sum(np.exp(-0.7 * t))] * 2, rtol=1e-7)


def test_tfirst_and_a_float_argument():
    t = np.linspace(0.0, 1.0, 3)

    def total(k):
        return np.sum(odeint(lambda s, y, k: -k * y * s, np.ones(2), t, (k,), tfirst=True,
                             **TOL))
    # y = exp(-k s^2 / 2): d/dk = -s^2 / 2 y
    expected = 2 * np.sum(-(t ** 2) / 2 * np.exp(-1.5 * t ** 2 / 2))
    np.testing.assert_allclose(ad.grad(total)(1.5), expected, rtol=1e-7)


def test_plain_arguments_pass_through():
    """An integer arg (an index) is not a number to differentiate."""
    y0, t, a1, a2, w = _point()

    def f(y, s, a, k):
        return -y * a[k]
    g = ad.grad(lambda a: np.sum(odeint(f, y0, t, (a, 1), **TOL) * w))(a1)
    np.testing.assert_allclose(g, _central(lambda a: np.sum(si.odeint(f, y0, t, (a, 1), **TOL)
                                                              * w), [a1], 0),
                               rtol=1e-5, atol=1e-6)
    assert g[0] == g[2] == 0.0


def test_tangents_by_forward_sensitivities():
    y0, t, a1, a2, _ = _point()
    h = 1e-6
    for k, v in enumerate([np.sin(np.arange(3.0)), np.cos(np.arange(4.0)),
                           np.cos(np.arange(3.0))]):
        def sol(x, k=k):
            xs = [y0, t, a1]
            xs[k] = x
            return odeint(func, xs[0], xs[1], (xs[2], a2), **TOL)
        x = [y0, t, a1][k]
        _, tangent = ad.jvp(sol)(x, v)
        plain = [lambda x: si.odeint(func, x, t, (a1, a2), **TOL),
                 lambda x: si.odeint(func, y0, x, (a1, a2), **TOL),
                 lambda x: si.odeint(func, y0, t, (x, a2), **TOL)][k]
        np.testing.assert_allclose(tangent, (plain(x + h * v) - plain(x - h * v)) / (2 * h),
                                   rtol=1e-5, atol=1e-7)


def test_a_recording_replays_it():
    y0, t, a1, a2, w = _point()
    loss = _loss(w)
    rec = ad.record(lambda y: loss(y, t, a1, a2), y0)
    y1 = y0 + 0.1
    np.testing.assert_allclose(rec(y1), loss(y1, t, a1, a2), rtol=1e-12)
    np.testing.assert_allclose(rec.grad(y1), ad.grad(loss)(y1, t, a1, a2), rtol=1e-9)


def test_dropin_module():
    from pyautodiff.autograd import grad
    from pyautodiff.autograd.scipy import integrate
    y0, t, a1, a2, w = _point()
    np.testing.assert_allclose(grad(_loss(w, integrate.odeint))(y0, t, a1, a2),
                               ad.grad(_loss(w))(y0, t, a1, a2), rtol=1e-12)


# -- higher orders: odeint's rules record inside a derivative ----------------------------

TIMES = np.array([0.0, 1.0])


def riccati(p, xp=np):
    """The sum of squares of y' = -k y^2 at TIMES, p = (y0, k): by odeint,
    and (xp given) by its solution y0 / (1 + k y0 t)."""
    if xp is not np:
        return xp.sum((p[0] / (1 + p[1] * p[0] * TIMES)) ** 2)
    return np.sum(odeint(lambda y, s, k: -k * y * y, p[:1], TIMES, (p[1],), **TOL) ** 2)


P, V = np.array([0.8, 0.6]), np.array([0.3, -0.7])


@pytest.fixture(scope="module")
def exact():
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")

    def f(p):
        return riccati(p, anp)
    return autograd, anp, f


def test_hessian_and_recorded_hessian_by_hand(exact):
    autograd, _, f = exact
    expected = autograd.hessian(f)(P)
    np.testing.assert_allclose(ad.hessian(riccati)(P), expected, rtol=1e-7, atol=1e-8)
    # a recording's one-sweep Hessian differentiates the gradient forward
    np.testing.assert_allclose(ad.record(riccati, P).hessian(P), expected, rtol=1e-7, atol=1e-8)


def test_third_order_through_nesting_by_hand(exact):
    autograd, anp, f = exact

    def quadratic(p):
        return np.sum(ad.hvp(riccati)(p, V) * V)
    expected = autograd.grad(lambda p: anp.sum(autograd.hessian(f)(p) @ V * V))(P)
    np.testing.assert_allclose(ad.grad(quadratic)(P), expected, rtol=1e-6, atol=1e-7)


def test_hvp_with_times_and_arguments():
    """Every operand of autograd's system: against central differences of
    the gradient in the same direction."""
    y0, t, a1, a2, w = _point()

    def packed(p):
        return np.sum(odeint(func, p[:3], p[3:7], (p[7:10], p[10:]), **TOL) * w)
    p = np.concatenate([y0, t, a1, a2])
    v = np.sin(np.arange(1.0, p.size + 1))
    g, h = ad.grad(packed), 1e-5
    np.testing.assert_allclose(ad.hvp(packed)(p, v), (g(p + h * v) - g(p - h * v)) / (2 * h),
                               rtol=1e-5, atol=1e-6)


def test_a_func_closing_over_a_traced_value_is_refused():
    """The traced value would reach the integrator as a constant: a silent
    zero derivative.  Passed in args it is differentiated."""
    t = np.linspace(0.0, 1.0, 3)
    with pytest.raises(TypeError, match="scipy.integrate.odeint.*args"):
        ad.grad(lambda k: np.sum(odeint(lambda y, s: -k * y, np.ones(2), t)))(2.0)
    with pytest.raises(TypeError, match="scipy.integrate.odeint.*args"):
        ad.grad(lambda k: np.sum(odeint(lambda y, s, c: -k * c * y, np.ones(2), t,
                                        (ad.Value(1.0),))))(2.0)


def test_scipys_own_odeint_raises():
    """scipy's odeint takes plain numbers out of traced ones: DetachError,
    never a silent zero."""
    t = np.linspace(0.0, 1.0, 3)
    with pytest.raises(ad.DetachError):
        ad.grad(lambda y: np.sum(si.odeint(lambda y, s: -y, y, t)))(np.ones(2))


def test_nested_parameters_in_args_as_autograds_ode_net():
    """args holding a network's list of (W, b) pairs, as autograd's ode_net
    example passes them: the gradient keeps their structure."""
    ag = pytest.importorskip("autograd")
    from autograd.scipy.integrate import odeint as ag_odeint

    def f(npm):
        def rhs(y, t, params, scale):
            (W, b), (V, c) = params
            return scale * npm.tanh(npm.dot(npm.tanh(npm.dot(y, W) + b), V) + c)
        return rhs

    rng = np.random.default_rng(3)
    params = [(0.3 * rng.normal(size=(2, 3)), 0.1 * rng.normal(size=3)),
              (0.3 * rng.normal(size=(3, 2)), 0.1 * rng.normal(size=2))]
    y0, t = np.array([1.0, -0.5]), np.linspace(0.0, 1.0, 4)

    def loss(solve, npm, pack=tuple):
        # autograd needs its own tuple to trace through a container
        return lambda p: npm.sum(solve(f(npm), y0, t, pack((p, 0.7)))[-1] ** 2)

    import autograd.builtins
    import autograd.numpy as anp
    got = ad.grad(loss(odeint, np))(params)
    want = ag.grad(loss(ag_odeint, anp, autograd.builtins.tuple))(params)
    assert isinstance(got, list) and isinstance(got[1], tuple)
    for a, b in zip(ad.pytree.flatten(got)[0], ad.pytree.flatten(want)[0]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)

    def by_scale(s):
        return np.sum(odeint(f(np), y0, t, (params, s))[-1] ** 2)
    h = 1e-5
    assert ad.grad(by_scale)(0.7) == pytest.approx(
        (by_scale(0.7 + h) - by_scale(0.7 - h)) / (2 * h), rel=1e-5)


def test_dicts_in_args_as_autograds():
    """A dict among args (and a dict inside a list) is differentiated as a
    list is: against HIPS autograd's odeint (given autograd's own dict) and
    central differences of scipy's, to first and second order."""
    ag = pytest.importorskip("autograd")
    import autograd.builtins as ab
    import autograd.numpy as anp
    from autograd.scipy.integrate import odeint as ag_odeint

    def rhs(npm):
        def f(y, s, p, extra):
            return -p["k"] * y * y + extra[0]["c"] * npm.sin(s)
        return f

    y0, t = np.array([1.0, 2.0]), np.linspace(0.0, 1.0, 5)

    def loss(solve, npm, d=dict, t_=tuple, l_=list):
        def at(k, c):
            args = t_((d(k=k), l_([d(c=c)])))
            return npm.sum(solve(rhs(npm), y0, t, args, **TOL) ** 2)
        return at

    got = ad.grad(loss(odeint, np), (0, 1))(0.7, 0.5)
    want = ag.grad(loss(ag_odeint, anp, ab.dict, ab.tuple, ab.list), (0, 1))(0.7, 0.5)
    plain, h = loss(si.odeint, np), 1e-5
    central = ((plain(0.7 + h, 0.5) - plain(0.7 - h, 0.5)) / (2 * h),
               (plain(0.7, 0.5 + h) - plain(0.7, 0.5 - h)) / (2 * h))
    np.testing.assert_allclose(got, want, rtol=1e-7)
    np.testing.assert_allclose(got, central, rtol=1e-6)
    g = ad.grad(loss(odeint, np))
    assert ad.grad(g)(0.7, 0.5) == pytest.approx((g(0.7 + h, 0.5) - g(0.7 - h, 0.5)) / (2 * h),
                                                 rel=1e-5)


def test_plain_entries_of_nests_in_args_reach_func_unchanged():
    """An int used as a count and a string beside the traced entries of a
    dict or list in args: func gets them as they were (not floats, not
    refused), and the gradient is scipy's by central differences."""
    def f(y, s, p, extra):
        assert isinstance(p["n"], int) and p["label"] == "decay" and extra[1] == 3
        return -sum(p["k"] * y for _ in range(p["n"])) + extra[0] * extra[1]

    y0, t, h = np.array([1.0, 2.0]), np.linspace(0.0, 1.0, 5), 1e-5

    def loss(solve):
        return lambda k, c: np.sum(solve(f, y0, t, ({"k": k, "n": 2, "label": "decay"},
                                                    [c, 3]), **TOL) ** 2)
    got = ad.grad(loss(odeint), (0, 1))(0.7, 0.5)
    plain = loss(si.odeint)
    central = ((plain(0.7 + h, 0.5) - plain(0.7 - h, 0.5)) / (2 * h),
               (plain(0.7, 0.5 + h) - plain(0.7, 0.5 - h)) / (2 * h))
    np.testing.assert_allclose(got, central, rtol=1e-6)


def test_a_traced_value_in_an_object_odeint_cannot_see_is_refused_by_what_it_is():
    """A traced value held in args by an object that is not a list, tuple,
    dict or ndarray reaches the integrator as a constant: refused with a
    message that names both ways that can happen and the containers odeint
    takes."""
    class Params:
        def __init__(self, k):
            self.k = k
    t = np.linspace(0.0, 1.0, 3)
    with pytest.raises(TypeError, match="list, tuple or dict"):
        ad.grad(lambda k: np.sum(odeint(lambda y, s, p: -p.k * y, np.ones(2), t,
                                        (Params(k),))))(2.0)


ODEINT_CTRL_C_SCRIPT = """
import os, signal, threading, time, traceback
import numpy as np
import pyautodiff as ad
from pyautodiff.scipy_integrate import odeint

t = np.linspace(0.0, 200.0, 201)


def loss(k):
    y = odeint(lambda y, s, k: np.array([y[1], -k * y[0]]), np.array([1.0, 0.0]),
               t, (k,), rtol=1e-10, atol=1e-10)
    return np.sum(y[:, 0] ** 2)


sent = []


def ctrl_c():
    time.sleep(1.0)         # into the adjoint's integrations (tens of seconds)
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)


threading.Thread(target=ctrl_c, daemon=True).start()
try:
    ad.grad(loss)(1.3)
    print("finished")
except KeyboardInterrupt as exc:
    print("interrupted", time.perf_counter() - sent[0])
"""


def test_ctrl_c_stops_a_gradient_through_odeint():
    # the adjoint integrates inside the reverse sweep's extern rule, its
    # func called back by scipy's integrator: the interrupt comes out of
    # ad.grad as itself, promptly
    import os
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", ODEINT_CTRL_C_SCRIPT],
                         capture_output=True, text=True, timeout=300,
                         cwd=os.path.dirname(os.path.dirname(ad.__file__)))
    assert out.returncode == 0, out.stderr
    assert "Exception ignored" not in out.stderr, out.stderr
    word, delay = out.stdout.split()
    assert word == "interrupted" and float(delay) < 10.0    # (a busy machine)
