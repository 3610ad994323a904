"""ad.minimize: scipy's methods on a recorded function against scipy driven
by hand-written gradients, and method='lbfgs' (L-BFGS in C) against the
known optima; guards that flip on the way, and the error paths."""
import importlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyautodiff as ad
from pyautodiff import _core

minimize_module = importlib.import_module("pyautodiff.minimize")

try:
    import scipy.optimize as so
except ImportError:            # the scipy tests skip; the built-in ones run
    so = None
needs_scipy = pytest.mark.skipif(so is None, reason="scipy is not installed")


# --- problems and their hand-written derivatives ---------------------------------

def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_value_and_grad(x):
    d = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * d - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * d
    return rosen(x), g


def logistic_data(seed=0, n=200, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w_true = rng.normal(size=d)
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-X @ w_true))).astype(float)
    return X, y


LAM = 0.1


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.log(1.0 + np.exp(z)) - y * z) + 0.5 * LAM * np.sum(w ** 2)


def logistic_value_and_grad(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return logistic_loss(w, X, y), X.T @ (p - y) / len(y) + LAM * w


def logistic_hessian(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return (X.T * (p * (1 - p))) @ X / len(y) + LAM * np.eye(len(w))


def scipy_reference(value_and_grad, x0, **kwargs):
    return so.minimize(value_and_grad, x0, jac=True, **kwargs)


# --- scipy's methods ---------------------------------------------------------------

@needs_scipy
@pytest.mark.parametrize("n", [2, 5, 20, 100])
def test_rosenbrock_lbfgsb_follows_scipy_with_the_hand_gradient(n):
    tight = {"ftol": 1e-15, "gtol": 1e-10}
    res = ad.minimize(rosen, np.zeros(n), options=tight)
    ref = scipy_reference(rosen_value_and_grad, np.zeros(n), method="L-BFGS-B",
                          options=tight)
    assert res.success and ref.success
    assert res.x == pytest.approx(ref.x, abs=1e-6)
    assert res.fun == pytest.approx(ref.fun, abs=1e-12)
    assert res.x == pytest.approx(np.ones(n), abs=1e-6)
    assert abs(res.nit - ref.nit) <= 0.2 * ref.nit
    assert res.jac == pytest.approx(rosen_value_and_grad(res.x)[1], abs=1e-9)


@needs_scipy
@pytest.mark.parametrize("method,tol", [("L-BFGS-B", 1e-12),
                                        ("Newton-CG", 1e-12), ("BFGS", 1e-9)])
def test_logistic_regression_reaches_scipys_optimum(method, tol):
    X, y = logistic_data()
    w0 = np.zeros(X.shape[1])
    ref = scipy_reference(lambda w: logistic_value_and_grad(w, X, y), w0,
                          method="BFGS", options={"gtol": 1e-12})
    res = ad.minimize(lambda w: logistic_loss(w, X, y), w0, method=method,
                      tol=tol)
    assert res.success, res.message
    assert res.x == pytest.approx(ref.x, abs=1e-6)
    assert res.fun == pytest.approx(ref.fun, rel=1e-12)
    # the optimum: the hand-written gradient vanishes there
    assert np.abs(logistic_value_and_grad(res.x, X, y)[1]).max() < 1e-7


SCIPY_METHODS = ["L-BFGS-B", "BFGS", "CG", "Newton-CG", "trust-ncg",
                 "trust-krylov", "trust-constr", "TNC", "SLSQP", "dogleg",
                 "trust-exact", "Nelder-Mead", "Powell"]


@needs_scipy
@pytest.mark.parametrize("method", SCIPY_METHODS)
def test_every_scipy_method_reaches_the_optimum(method):
    X, y = logistic_data(seed=1, n=60, d=3)
    ref = scipy_reference(lambda w: logistic_value_and_grad(w, X, y),
                          np.zeros(3), method="BFGS", options={"gtol": 1e-12})
    res = ad.minimize(lambda w: logistic_loss(w, X, y), np.zeros(3),
                      method=method)
    assert res.success, res.message
    assert res.x == pytest.approx(ref.x, abs=1e-3)
    assert res.fun == pytest.approx(ref.fun, rel=1e-7)


@needs_scipy
@pytest.mark.parametrize("method", ["Newton-CG", "trust-ncg", "trust-krylov",
                                    "trust-constr"])
def test_newton_methods_get_the_exact_hessian_vector_product(method, monkeypatch):
    X, y = logistic_data(seed=2, n=50, d=4)
    seen = {}

    def spy(fun, x0, **kwargs):
        seen.update(kwargs, fun=fun)
        return real(fun, x0, **kwargs)
    real = so.minimize
    monkeypatch.setattr(so, "minimize", spy)
    ad.minimize(lambda w: logistic_loss(w, X, y), np.zeros(4), method=method)
    assert seen["jac"] is True and "hess" not in seen
    rng = np.random.default_rng(3)
    for _ in range(3):
        w, v = rng.normal(size=4), rng.normal(size=4)
        assert seen["hessp"](w, v) == pytest.approx(
            logistic_hessian(w, X, y) @ v, rel=1e-12, abs=1e-14)
        f, g = seen["fun"](w)
        want_f, want_g = logistic_value_and_grad(w, X, y)
        assert f == pytest.approx(want_f, rel=1e-13)
        assert g == pytest.approx(want_g, rel=1e-12, abs=1e-14)


@needs_scipy
def test_bounds_with_lbfgsb_match_scipy():
    bounds = [(-0.5, 0.5)] * 6
    res = ad.minimize(rosen, np.zeros(6), bounds=bounds)
    ref = scipy_reference(rosen_value_and_grad, np.zeros(6),
                          method="L-BFGS-B", bounds=bounds)
    assert res.success
    assert res.x == pytest.approx(ref.x, abs=1e-7)
    assert res.x[0] == pytest.approx(0.5)        # the bound is active
    assert np.all(np.abs(res.x) <= 0.5)


@needs_scipy
def test_scipy_callback_is_called_with_x_in_x0s_shape():
    target = np.arange(6.0).reshape(2, 3)
    seen = []
    res = ad.minimize(lambda W: np.sum((W - target) ** 4), np.zeros((2, 3)),
                      callback=lambda W: seen.append(W.copy()))
    assert len(seen) == res.nit >= 3
    assert all(W.shape == (2, 3) for W in seen)
    assert res.x.shape == (2, 3) and res.jac.shape == (2, 3)
    assert res.x == pytest.approx(target, abs=0.02)

    results = []
    ad.minimize(lambda W: np.sum((W - target) ** 2), np.zeros((2, 3)),
                method="BFGS",
                callback=lambda intermediate_result: results.append(
                    (intermediate_result.x.shape, intermediate_result.fun)))
    assert results and all(shape == (2, 3) for shape, _ in results)
    assert results[-1][1] == pytest.approx(0.0, abs=1e-10)


@needs_scipy
def test_scalar_x0_gives_a_float():
    res = ad.minimize(lambda x: (x - 3.0) ** 2 + ad.cos(x), 0.0)
    ref = scipy_reference(lambda x: ((x[0] - 3) ** 2 + np.cos(x[0]),
                                     np.array([2 * (x[0] - 3) - np.sin(x[0])])),
                          np.zeros(1), method="L-BFGS-B")
    assert isinstance(res.x, float) and isinstance(res.jac, float)
    assert res.x == pytest.approx(ref.x[0], abs=1e-8)


@needs_scipy
def test_scipy_path_records_again_where_a_guard_flips():
    calls = []

    def f(x):
        calls.append(x)
        if x > 1.0:                     # a guard: x = 0 records the other branch
            return (x - 3.0) ** 2
        return 10.0 - 2.0 * x
    res = ad.minimize(f, 0.0)
    assert res.success and res.x == pytest.approx(3.0, abs=1e-6)
    assert len(calls) == 2              # at x0, and once past x = 1


def test_scipy_missing_is_an_import_error_that_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    with pytest.raises(ImportError, match=r"pip install 'pyautodiff\[scipy\]'"):
        ad.minimize(rosen, np.zeros(3))
    with pytest.raises(ImportError, match="method='lbfgs' needs no scipy"):
        ad.minimize(rosen, np.zeros(3), method="Newton-CG")
    # the built-in one still runs
    assert ad.minimize(rosen, np.zeros(3), method="lbfgs").success


def test_lbfgs_never_imports_scipy():
    script = textwrap.dedent("""
        import sys
        sys.modules["scipy"] = None          # any import of scipy fails
        import numpy as np
        import pyautodiff as ad
        f = lambda x: np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2
                             + (1.0 - x[:-1]) ** 2)
        res = ad.minimize(f, np.zeros(10), method="lbfgs")
        assert res.success, res.message
        assert np.abs(res.x - 1).max() < 1e-4, res.x
        assert not [m for m in sys.modules if m.startswith("scipy.")]
        print("ok", res.nit)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True,
                         text=True, cwd=_root())
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


def _root():
    import os
    return os.path.dirname(os.path.dirname(os.path.abspath(ad.__file__)))


# --- method='lbfgs': L-BFGS in C -------------------------------------------------

@pytest.mark.parametrize("n", [2, 10, 100])
def test_lbfgs_rosenbrock_reaches_the_optimum(n):
    res = ad.minimize(rosen, np.zeros(n), method="lbfgs")
    assert res.success, res.message
    assert res.x == pytest.approx(np.ones(n), abs=1e-4)
    assert res.fun < 1e-8
    assert res.fun == pytest.approx(rosen(res.x), rel=1e-12, abs=1e-300)
    assert res.jac == pytest.approx(rosen_value_and_grad(res.x)[1], abs=1e-9)
    assert res.nit < 12 * n + 60 and res.nfev >= res.nit


def test_lbfgs_tight_gtol_makes_the_gradient_small():
    res = ad.minimize(rosen, np.zeros(10), method="lbfgs", tol=1e-9,
                      options={"ftol": 0.0})
    assert res.success and "gtol" in res.message
    assert np.abs(rosen_value_and_grad(res.x)[1]).max() <= 1e-9
    assert res.x == pytest.approx(np.ones(10), abs=1e-8)


def test_lbfgs_quadratic_in_few_iterations():
    rng = np.random.default_rng(4)
    n = 30
    q = np.linspace(1.0, 10.0, n)        # the Hessian's eigenvalues
    b = rng.normal(size=n)
    res = ad.minimize(lambda x: 0.5 * np.sum(x * (q * x)) - np.sum(b * x),
                      np.zeros(n), method="lbfgs", tol=1e-7,
                      options={"ftol": 0.0})
    assert res.success and "gtol" in res.message
    assert np.abs(q * res.x - b).max() <= 1e-7          # the gradient
    assert res.x == pytest.approx(b / q, abs=1e-7)
    assert res.nit <= 30
    one = ad.minimize(lambda x: (x - 5.0) ** 2, 0.0, method="lbfgs")
    assert one.x == pytest.approx(5.0) and one.nit <= 2


def test_lbfgs_with_matmul():
    # least squares through the extern matmul entries, called from C
    rng = np.random.default_rng(5)
    A, b = rng.normal(size=(40, 6)), rng.normal(size=40)
    res = ad.minimize(lambda x: np.sum((A @ x - b) ** 2), np.zeros(6),
                      method="lbfgs", tol=1e-10, options={"ftol": 0.0})
    assert res.success
    assert res.x == pytest.approx(np.linalg.lstsq(A, b, rcond=None)[0], abs=1e-8)
    # a matrix of unknowns: X W ~ Y
    W_true = rng.normal(size=(6, 3))
    Y = A @ W_true
    res = ad.minimize(lambda W: np.mean((A @ W - Y) ** 2), np.zeros((6, 3)),
                      method="lbfgs", tol=1e-10, options={"ftol": 0.0})
    assert res.success and res.x.shape == (6, 3)
    assert res.x == pytest.approx(W_true, abs=1e-9)


def test_lbfgs_on_a_mixed_value_and_array_tape():
    # a scalar leaf (a Value), array entries computed from it, scalar ops on
    # top: the minimum of sum((c x - 1)^2) + x^4 + exp(-x), by Newton's
    # iteration on the hand-derived derivative
    c = np.arange(1.0, 4.0)

    def f(x):
        return np.sum((x * c - 1.0) ** 2) + x ** 4 + ad.exp(-x)
    res = ad.minimize(f, 2.0, method="lbfgs", tol=1e-12, options={"ftol": 0.0})
    x = 2.0
    for _ in range(50):
        d1 = np.sum(2 * c * (c * x - 1)) + 4 * x ** 3 - np.exp(-x)
        d2 = np.sum(2 * c * c) + 12 * x ** 2 + np.exp(-x)
        x -= d1 / d2
    assert isinstance(res.x, float) and res.success
    assert res.x == pytest.approx(x, abs=1e-12)

    # an array variable scaled by Value constants
    s = ad.Value(3.0)
    res = ad.minimize(lambda v: s * np.sum((v - 2.0) ** 2) + s ** 2,
                      np.zeros(4), method="lbfgs")
    assert res.x == pytest.approx(np.full(4, 2.0)) and res.fun == pytest.approx(9.0)


@needs_scipy
def test_lbfgs_reaches_scipys_logistic_optimum():
    X, y = logistic_data(seed=6)
    ref = scipy_reference(lambda w: logistic_value_and_grad(w, X, y),
                          np.zeros(5), method="BFGS", options={"gtol": 1e-12})
    res = ad.minimize(lambda w: logistic_loss(w, X, y), np.zeros(5),
                      method="lbfgs", tol=1e-10, options={"ftol": 0.0})
    assert res.success
    assert res.x == pytest.approx(ref.x, abs=1e-8)
    assert res.fun == pytest.approx(ref.fun, rel=1e-14)


def test_lbfgs_callback_and_stop_iteration():
    seen = []
    res = ad.minimize(rosen, np.zeros((2, 2)), method="lbfgs",
                      callback=lambda X: seen.append(X.copy()))
    plain = ad.minimize(rosen, np.zeros((2, 2)), method="lbfgs")
    assert len(seen) == res.nit == plain.nit
    assert seen[-1] == pytest.approx(res.x) and seen[-1].shape == (2, 2)
    assert res.x == pytest.approx(plain.x, abs=0)   # pausing changes nothing

    def stop_after_three(intermediate_result):
        seen.append(intermediate_result.fun)
        if len(seen) == 3:
            raise StopIteration
    seen.clear()
    res = ad.minimize(rosen, np.zeros(5), method="lbfgs",
                      callback=stop_after_three)
    assert res.nit == 3 and not res.success and res.status == 99
    assert res.fun == seen[-1] and "StopIteration" in res.message


def _mask_guarded(x):
    # a guard on the mask z < 0 that flips on the way (see below)
    z = ad.concatenate([x, np.array([-1.0])])
    return np.sum((x - 2.0) ** 2) + 10.0 * np.sum(z[z < 0.0] ** 2)


@pytest.mark.parametrize("f, x0", [(rosen, np.zeros(30)),
                                   (_mask_guarded, np.array([-1.0, -2.0, 0.5]))])
def test_lbfgs_pausing_to_let_python_run_changes_nothing(monkeypatch, f, x0):
    # the C run comes back to Python after every iteration (0 s), never
    # (inf) or at the default: the same iterates, bit for bit
    runs = []
    for seconds in (float("inf"), 0.0, minimize_module.SLICE_SECONDS):
        monkeypatch.setattr(minimize_module, "SLICE_SECONDS", seconds)
        runs.append(ad.minimize(f, x0, method="lbfgs"))
    never = runs[0]
    assert never.success and never.nit > 5
    for res in runs[1:]:
        assert np.array_equal(res.x, never.x) and res.fun == never.fun
        assert np.array_equal(res.jac, never.jac)
        assert (res.nit, res.nfev, res.message) == \
            (never.nit, never.nfev, never.message)


CTRL_C_SCRIPT = """
import os, signal, sys, threading, time, traceback
import numpy as np
import pyautodiff as ad

def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

sent = []
def ctrl_c():
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)

# the Ctrl-C comes once the C run is under way: well after the time that
# recording f and making the minimizer take here (seconds on a sanitizer
# build of a busy machine), measured on a run of one iteration
start = time.perf_counter()
ad.minimize(rosen, np.zeros(200_000), method="lbfgs", options={"maxiter": 1})
threading.Timer(2 * (time.perf_counter() - start) + 0.3, ctrl_c).start()
try:
    # no tolerance can be met: minutes of iterations at this n
    ad.minimize(rosen, np.zeros(200_000), method="lbfgs",
                options={"gtol": 0.0, "ftol": 0.0, "maxiter": 10 ** 9})
except KeyboardInterrupt as exc:
    where = traceback.extract_tb(exc.__traceback__)[-1].name
    print("interrupted", where, time.perf_counter() - sent[0])
else:
    print("finished")
"""


def test_lbfgs_ctrl_c_lands_promptly():
    # in a child process, so a late Ctrl-C cannot reach pytest itself
    try:
        out = subprocess.run([sys.executable, "-c", CTRL_C_SCRIPT],
                             capture_output=True, text=True, cwd=_root(),
                             timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("Ctrl-C did not stop minimize(method='lbfgs') in 30 s")
    assert out.returncode == 0, out.stderr
    word, where, delay = out.stdout.split()
    # raised from the loop around the C run (not while recording f),
    # within a generous bound of the signal: the machine may be busy
    assert (word, where) == ("interrupted", "_lbfgs")
    assert float(delay) < 1.0


def test_lbfgs_records_again_where_a_scalar_guard_flips():
    calls = []

    def f(x):
        # (x.data would pin x: every step would record again)
        calls.append(x > 1.0)
        if x > 1.0:
            return (x - 3.0) ** 2
        return 10.0 - 2.0 * x
    res = ad.minimize(f, 0.0, method="lbfgs")
    assert res.success and res.x == pytest.approx(3.0, abs=1e-6)
    assert calls == [False, True]


def test_lbfgs_records_again_where_a_mask_guard_flips():
    # z[z < 0] is a boolean index: a guard on the whole mask, which goes
    # from [T, T, F, T] at x0 to [F, F, F, T] at the minimum (z's last
    # element, a constant, keeps the selection from ever being empty)
    def f(x):
        calls.append(1)
        z = ad.concatenate([x, np.array([-1.0])])
        return np.sum((x - 2.0) ** 2) + 10.0 * np.sum(z[z < 0.0] ** 2)
    calls = []
    res = ad.minimize(f, np.array([-1.0, -2.0, 0.5]), method="lbfgs")
    assert res.success
    assert res.x == pytest.approx(np.full(3, 2.0), abs=1e-5)
    assert res.fun == pytest.approx(10.0)
    assert len(calls) >= 2


def test_lbfgs_result_reads_like_scipys():
    res = ad.minimize(lambda x: np.sum((x - 1.0) ** 2), np.zeros(3),
                      method="lbfgs")
    for field in ("x", "fun", "jac", "nit", "nfev", "njev", "status",
                  "success", "message"):
        assert getattr(res, field) is res[field]
    with pytest.raises(AttributeError):
        res.hess_inv


# --- the result: scipy's OptimizeResult for every method --------------------------

ALL_METHODS = ["lbfgs", "ipopt"] + SCIPY_METHODS + ["trust-constr with constraints",
                                                    "SLSQP with constraints"]


@needs_scipy
@pytest.mark.parametrize("method", ALL_METHODS)
def test_every_method_returns_scipys_optimize_result(method):
    # (method='ipopt' and 'lbfgs' returned a class of pyautodiff's own)
    from pyautodiff import ipopt_library
    name, _, constrained = method.partition(" with ")
    kwargs = {}
    if name == "ipopt":
        try:
            ipopt_library.load()
        except ImportError:
            pytest.skip("no IPOPT library is installed")
    if name == "ipopt" or constrained:
        kwargs = dict(bounds=[(-5, 5)] * 3,
                      constraints={"type": "ineq", "fun": lambda x: 2.0 - x[0]})
    res = ad.minimize(lambda x: np.sum((x - 1.0) ** 2), np.zeros(3), method=name,
                      **kwargs)
    assert type(res) is so.OptimizeResult
    assert res.success, res.message
    assert res.x == pytest.approx(np.ones(3), abs=1e-3)
    assert res.fun == pytest.approx(0.0, abs=1e-6)
    fields = {"x", "fun", "status", "success", "message"}
    if name not in ("Nelder-Mead", "Powell"):
        fields.add("nit")
    if kwargs:
        fields |= {"multipliers", "bound_multipliers", "constr"}
        # the constraint and the bounds are inactive: no force
        np.testing.assert_allclose(np.concatenate(res.multipliers), [0], atol=1e-5)
        np.testing.assert_allclose(res.bound_multipliers, 0, atol=1e-5)
        np.testing.assert_allclose(np.concatenate(res.constr), [1.0], atol=1e-3)
    assert fields <= set(res), fields - set(res)
    for field in fields:
        assert getattr(res, field) is res[field]


def test_without_scipy_the_result_is_pyautodiffs_own(monkeypatch):
    from pyautodiff import result
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    res = ad.minimize(lambda x: np.sum((x - 1.0) ** 2), np.zeros(3),
                      method="lbfgs")
    assert type(res) is result.OptimizeResult
    assert res.success and res.x == pytest.approx(np.ones(3))
    text = repr(res)
    assert "fun: " in text and "message: 'converged" in text
    with pytest.raises(AttributeError):
        res.hess_inv


# --- Ctrl-C and the callbacks' KeyboardInterrupt -----------------------------------

SCIPY_CTRL_C_SCRIPT = """
import os, signal, sys, threading, time, traceback
import numpy as np
import pyautodiff as ad

method, n = sys.argv[1], int(sys.argv[2])
running = threading.Event()
sent = []


def ctrl_c():
    running.wait()
    time.sleep(0.3)
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)


threading.Thread(target=ctrl_c, daemon=True).start()
rosen = lambda x: np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
kwargs = {}
if len(sys.argv) > 3:
    kwargs["constraints"] = {"type": "ineq", "fun": lambda x: 1e6 - np.sum(x ** 2)}
try:
    # no tolerance can be met: minutes of iterations at these n; the
    # callback only says when the method runs
    ad.minimize(rosen, np.full(n, -1.2), method=method, tol=1e-300,
                options={"maxiter": 10 ** 8}, callback=lambda *a, **k: running.set(),
                **kwargs)
except KeyboardInterrupt as exc:
    names = [frame.name for frame in traceback.extract_tb(exc.__traceback__)]
    print("interrupted", names[1], time.perf_counter() - sent[0])
else:
    print("finished")
"""


@needs_scipy
@pytest.mark.parametrize("method, n, constrained", [
    ("L-BFGS-B", 20_000, False), ("Newton-CG", 20_000, False), ("TNC", 20_000, False),
    ("SLSQP", 300, True), ("trust-constr", 2000, True)])
def test_ctrl_c_stops_scipys_methods_promptly(method, n, constrained):
    args = [sys.executable, "-c", SCIPY_CTRL_C_SCRIPT, method, str(n)]
    try:
        out = subprocess.run(args + ["constrained"] * constrained, capture_output=True,
                             text=True, cwd=_root(), timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"Ctrl-C did not stop minimize(method={method!r}) in 120 s")
    assert out.returncode == 0, out.stderr
    assert "Exception ignored" not in out.stderr, out.stderr
    word, where, delay = out.stdout.split()
    assert (word, where) == ("interrupted", "minimize")
    assert float(delay) < 10.0          # generous: the machine may be busy


@pytest.mark.parametrize("method", ["lbfgs", pytest.param("L-BFGS-B", marks=needs_scipy),
                                    pytest.param("trust-constr", marks=needs_scipy)])
def test_a_keyboard_interrupt_from_the_callback_comes_out_of_minimize(method):
    calls = []

    def callback(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        ad.minimize(rosen, np.zeros(10), method=method, callback=callback)
    assert len(calls) == 3


# --- bad input and faults ---------------------------------------------------------

@pytest.mark.parametrize("method", ["lbfgs", "L-BFGS-B"])
@pytest.mark.parametrize("x0", [np.zeros(3, complex), np.array(["a", "b"]),
                                True, None, np.array([1.0, None]), "1.0"])
def test_x0_of_the_wrong_type_is_a_type_error(x0, method):
    with pytest.raises(TypeError, match="x0 must be real numbers"):
        ad.minimize(rosen, x0, method=method)


@pytest.mark.parametrize("method", ["lbfgs", "L-BFGS-B"])
def test_empty_x0_is_a_value_error(method):
    with pytest.raises(ValueError, match="no elements"):
        ad.minimize(rosen, np.zeros(0), method=method)
    with pytest.raises(ValueError, match="no elements"):
        ad.minimize(rosen, np.zeros((3, 0)), method=method)


def test_integer_x0_is_taken_as_floats():
    res = ad.minimize(lambda x: np.sum((x - 0.5) ** 2), np.array([3, -2]),
                      method="lbfgs")
    assert res.x.dtype == np.float64 and res.x == pytest.approx([0.5, 0.5])


@pytest.mark.parametrize("f,x0,says", [
    (lambda x: np.sum(np.log(x)), np.array([-1.0, 1.0]), "f(x0) is nan"),
    (lambda x: np.sum(np.exp(x)), np.array([1000.0]), "f(x0) is inf"),
    (lambda x: np.sum(x ** 2), np.array([np.nan, 1.0]), "f(x0) is nan"),
    (lambda x: np.sum(ad.sqrt(x)), np.array([0.0, 1.0]), "gradient of f at x0"),
    (lambda x: -np.sum(ad.sqrt(x)), np.array([1.0, 0.0]), "gradient of f at x0"),
    # sqrt'(0) = inf times d(x*x)/dx = 0: a nan in the gradient, f finite
    (lambda x: np.sum(ad.sqrt(x * x)), np.array([0.0, 1.0]),
     "gradient of f at x0"),
])
def test_lbfgs_nonfinite_at_the_start_fails_clearly(f, x0, says):
    with np.errstate(all="ignore"):
        res = ad.minimize(f, x0, method="lbfgs")
    assert not res.success and res.status == 3 and res.nit == 0
    assert says in res.message
    assert res.x == pytest.approx(x0, nan_ok=True)


def test_lbfgs_takes_subnormal_gradients_as_finite():
    # a gradient of 1e-310 (subnormal) is finite and below gtol: converged
    res = ad.minimize(lambda x: 1e-310 * np.sum(x), np.array([0.0, 1.0]),
                      method="lbfgs")
    assert res.success and res.nit == 0 and "gtol" in res.message
    np.testing.assert_array_equal(res.jac, [1e-310, 1e-310])


def test_lbfgs_steps_back_from_nan_on_the_way():
    # -log(x) - log(1 - x) lives on (0, 1); the first step from 0.9 lands
    # outside, where it is nan, and the line search shrinks it
    f = lambda x: np.sum(-np.log(x) - np.log(1.0 - x))   # noqa: E731
    with np.errstate(all="ignore"):
        res = ad.minimize(f, np.array([0.9, 0.2]), method="lbfgs")
    assert res.success, res.message
    assert res.x == pytest.approx([0.5, 0.5], abs=1e-5)


def test_lbfgs_unbounded_below_stops():
    res = ad.minimize(lambda x: -np.sum(x), np.ones(2), method="lbfgs",
                      options={"maxiter": 50})
    assert not res.success and res.nit == 50 and res.status == 1
    assert "maxiter" in res.message and res.fun < -1e6


def test_lbfgs_finite_only_near_x0_ends_in_bounded_work():
    # f is nan outside a ball of radius 1e-6 around x0, and its gradient
    # points out of the ball: the steps shrink until they fit
    def f(x):
        return np.sum((x - 2.0) ** 2) + np.log(1e-12 - np.sum((x - 1.0) ** 2))
    with np.errstate(all="ignore"):
        res = ad.minimize(f, np.ones(2), method="lbfgs")
    assert np.isfinite(res.fun) and res.fun <= f(np.ones(2))
    assert np.sum((res.x - 1.0) ** 2) < 1e-12
    assert res.nfev <= 25 * (res.nit + 2)


def test_lbfgs_options_are_checked():
    with pytest.raises(TypeError, match="unknown option 'iters'"):
        ad.minimize(rosen, np.zeros(2), method="lbfgs", options={"iters": 3})
    for bad in ({"m": 0}, {"maxls": 0}, {"maxiter": -1}, {"gtol": -1.0},
                {"ftol": float("nan")}):
        with pytest.raises(ValueError):
            ad.minimize(rosen, np.zeros(2), method="lbfgs", options=bad)
    for bad in ({"m": 2.5}, {"maxiter": "10"}, {"gtol": "small"}, {"m": True}):
        with pytest.raises(TypeError):
            ad.minimize(rosen, np.zeros(2), method="lbfgs", options=bad)
    with pytest.raises(ValueError, match="takes no bounds"):
        ad.minimize(rosen, np.zeros(2), method="lbfgs", bounds=[(0, 1)] * 2)
    res = ad.minimize(rosen, np.zeros(2), method="lbfgs",
                      options={"maxiter": 3, "m": 1, "maxls": 5})
    assert res.nit == 3 and res.status == 1


@pytest.mark.parametrize("method", ["lbfgs", "L-BFGS-B"])
def test_a_non_scalar_objective_is_a_type_error(method):
    with pytest.raises(TypeError, match="ad.minimize needs a function returning a scalar"):
        ad.minimize(lambda x: x ** 2, np.zeros(3), method=method)


def test_lbfgs_objective_not_depending_on_x():
    res = ad.minimize(lambda x: 4.0, np.ones(3), method="lbfgs")
    assert res.success and res.fun == 4.0 and res.nit == 0
    assert res.jac == pytest.approx(np.zeros(3))


def test_lbfgs_allocation_failure_is_a_memory_error(monkeypatch):
    real = _core.new_lbfgs
    monkeypatch.setattr(_core, "new_lbfgs",
                        lambda n, m: real(n, m, max_bytes=1000))
    with pytest.raises(MemoryError, match="out of memory for L-BFGS"):
        ad.minimize(rosen, np.zeros(100), method="lbfgs")
    assert ad.minimize(rosen, np.zeros(3), method="lbfgs").success  # fits


def test_an_exception_in_an_extern_rule_comes_back_from_the_c_loop():
    calls = {"n": 0}

    def vjp(g, out, x):
        calls["n"] += 1
        if calls["n"] == 5:
            raise ZeroDivisionError("rule failed on purpose")
        return (g * 2.0 * x,)
    square = ad.custom_op(lambda x: x * x, vjp)
    with pytest.raises(ZeroDivisionError, match="on purpose"):
        ad.minimize(lambda x: np.sum(square(x - 1.0) * np.arange(1.0, 4.0))
                    + np.sum(x ** 4), np.zeros(3), method="lbfgs")
    assert calls["n"] == 5

    def callback(x):
        raise KeyError("from the callback")
    with pytest.raises(KeyError, match="from the callback"):
        ad.minimize(rosen, np.zeros(3), method="lbfgs", callback=callback)


def test_c_rejects_a_malformed_minimizer():
    from pyautodiff._core import check, lib
    o = _core.new_lbfgs(3, 2)
    with pytest.raises(ValueError, match="no tape"):
        check(lib.ad_lbfgs_run(o), o)
    rec = ad.record(rosen, np.zeros(3))
    keep = minimize_module._attach(o, rec)
    plan = o.replay
    good = plan.output
    plan.output = 10 ** 6
    with pytest.raises(ValueError, match="objective entry"):
        check(lib.ad_lbfgs_run(o), o)
    plan.output = plan.leaf[0]            # the leaf: three numbers, not one
    with pytest.raises(ValueError, match="one number"):
        check(lib.ad_lbfgs_run(o), o)
    plan.output = good
    leaves = np.array([good], np.int64)   # not a leaf
    plan.leaf = _core.ffi.from_buffer("int64_t[]", leaves)
    with pytest.raises(ValueError, match="not a leaf"):
        check(lib.ad_lbfgs_run(o), o)
    plan.leaf = _core.ffi.from_buffer("int64_t[]", rec._plan_keep[0])
    o.maxls = 0
    with pytest.raises(ValueError, match="bad options"):
        check(lib.ad_lbfgs_run(o), o)
    o.maxls = 20
    for pause in (-1.0, float("nan")):
        o.pause = pause
        with pytest.raises(ValueError, match="bad options"):
            check(lib.ad_lbfgs_run(o), o)
    o.pause = 0.0
    o.npairs = 5                          # more than m
    with pytest.raises(ValueError, match="corrupt"):
        check(lib.ad_lbfgs_run(o), o)
    o.npairs = 0
    small = _core.new_lbfgs(2, 2)         # made for 2 variables, not 3
    keep2 = minimize_module._attach(small, rec)
    with pytest.raises(ValueError, match="hold 3 numbers"):
        check(lib.ad_lbfgs_run(small), small)
    del keep2
    _core.ffi.buffer(o.x, 24)[:] = np.full(3, 1.0).tobytes()
    assert check(lib.ad_lbfgs_run(o), o) is None
    assert o.status == lib.AD_LBFGS_GTOL and o.f == 0.0   # x = 1: the optimum


@pytest.mark.parametrize("method", ["L-BFGS-B", "BFGS", "Newton-CG", "lbfgs"])
def test_args_go_to_f_as_scipy_passes_them(method):
    import scipy.optimize as so
    A = np.array([[3.0, 1.0], [1.0, 2.0]])
    b = np.array([1.0, -1.0])

    def f(x, A, b):
        return 0.5 * x @ (A @ x) - b @ x
    res = ad.minimize(f, np.zeros(2), method=method, args=(A, b))
    np.testing.assert_allclose(res.x, np.linalg.solve(A, b), atol=1e-6)
    ref = so.minimize(f, np.zeros(2), args=(A, b), method="BFGS")
    np.testing.assert_allclose(res.fun, ref.fun, atol=1e-10)
    # one argument need not be a tuple, as in scipy
    res = ad.minimize(lambda x, c: np.sum((x - c) ** 2), np.zeros(3), method=method,
                      args=2.0)
    np.testing.assert_allclose(res.x, 2.0, atol=1e-6)


def test_scipys_positional_args_are_a_clear_error():
    with pytest.raises(TypeError, match="args, is a keyword here"):
        ad.minimize(lambda x, c: np.sum((x - c) ** 2), np.zeros(2), (1.0,))
