"""ad.record / @ad.function: replays in C against eager runs at many points,
guards, saved recordings (round trips, and every corrupted byte)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyautodiff as ad


def scalar_fn(x, y):
    z = x * y + y ** 2
    for _ in range(5):
        z = ad.tanh(z * 0.3) + ad.sin(x) - y / (1.0 + x * x)
    return ad.exp(z * 0.1) + abs(y) ** 1.5


def array_fn(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


A = np.random.default_rng(0).normal(size=(3, 4))


def mixed_fn(x, s):
    h = np.tanh(A @ x) * s + ad.sigmoid(s) * x[:3]
    return ad.logsumexp(h) + np.mean(np.maximum(x, 0.1) ** 2) * s


def vector_fn(x):
    return np.tanh(A @ x) * np.sum(x ** 2)


RNG = np.random.default_rng(1)


def test_scalar_replay_matches_eager_values_and_gradients():
    F = ad.record(scalar_fn, 0.3, -0.4)
    for _ in range(50):
        x, y = RNG.uniform(-2, 2, size=2)
        value = F(x, y)
        assert value == pytest.approx(ad.value_and_grad(scalar_fn)(x, y)[0], rel=1e-13)
        assert F.grad(x, y) == pytest.approx(ad.grad(scalar_fn)(x, y), rel=1e-12)
        ex, ey = ad.grad(scalar_fn, (0, 1))(x, y)
        assert F.value_and_grad(x, y)[1] == pytest.approx(ex, rel=1e-12)


def test_scalar_replay_at_the_recorded_point_is_bit_exact():
    F = ad.record(scalar_fn, 0.3, -0.4)
    eager = scalar_fn(ad.Value(0.3), ad.Value(-0.4)).data
    assert F(0.3, -0.4) == eager


def test_array_replay_matches_numpy_and_hand_gradient():
    F = ad.record(array_fn, np.zeros(6))
    assert len(F) > 0
    for _ in range(20):
        x = RNG.normal(size=6)
        assert F(x) == pytest.approx(array_fn(x), rel=1e-13)
        g = np.zeros(6)
        g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
        g[1:] += 200 * (x[1:] - x[:-1] ** 2)
        np.testing.assert_allclose(F.grad(x), g, rtol=1e-12)


def test_mixed_replay_all_derivatives_match_the_functional_api():
    F = ad.record(mixed_fn, np.ones(4), 0.5, argnum=0)
    for _ in range(10):
        x, s = RNG.normal(size=4), float(RNG.uniform(0.2, 2))
        v = RNG.normal(size=4)
        assert F(x, s) == pytest.approx(ad.value_and_grad(mixed_fn)(x, s)[0], rel=1e-12)
        np.testing.assert_allclose(F.grad(x, s), ad.grad(mixed_fn)(x, s), rtol=1e-11)
        np.testing.assert_allclose(F.hessian(x, s), ad.hessian(mixed_fn)(x, s),
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(F.hvp(x, s, v), ad.hvp(mixed_fn)(x, s, v),
                                   rtol=1e-10, atol=1e-12)
    # argnum picks the other argument
    G = ad.record(mixed_fn, np.ones(4), 0.5, argnum=1)
    x, s = RNG.normal(size=4), 0.7
    assert G.grad(x, s) == pytest.approx(ad.grad(mixed_fn, 1)(x, s), rel=1e-12)
    both = ad.record(mixed_fn, np.ones(4), 0.5, argnum=(0, 1)).grad(x, s)
    assert isinstance(both, tuple) and both[1] == pytest.approx(G.grad(x, s))


def test_vector_valued_replay_jacobian_and_jvp():
    F = ad.record(vector_fn, np.ones(4))
    for _ in range(5):
        x, v = RNG.normal(size=4), RNG.normal(size=4)
        np.testing.assert_allclose(F(x), vector_fn(x), rtol=1e-13)
        J = F.jacobian(x)
        np.testing.assert_allclose(J, ad.jacobian(vector_fn)(x), rtol=1e-12)
        value, tangent = F.jvp(x, v)
        np.testing.assert_allclose(value, vector_fn(x), rtol=1e-13)
        np.testing.assert_allclose(tangent, J @ v, rtol=1e-10, atol=1e-12)


def test_replay_does_not_grow_the_tape():
    F = ad.record(array_fn, np.zeros(6))
    n = len(F)
    for _ in range(100):
        F.grad(RNG.normal(size=6))
        F.hessian(RNG.normal(size=6))
    assert len(F) == n


def test_argument_errors():
    F = ad.record(array_fn, np.zeros(6))
    with pytest.raises(TypeError, match="1 argument"):
        F(np.zeros(6), 1.0)
    with pytest.raises(ValueError, match=r"\(5,\).*\(6,\)"):
        F(np.zeros(5))
    with pytest.raises(TypeError):
        F("abc")
    G = ad.record(scalar_fn, 1.0, 2.0)
    with pytest.raises(TypeError):
        G(np.zeros(3), 1.0)              # an array where a float was recorded


def piecewise(x):
    if x > 0.5:
        return x * x
    return -x


def test_a_flipped_comparison_raises_branch_error_naming_it():
    F = ad.record(piecewise, 1.0)
    assert F(2.0) == 4.0
    assert F.grad(3.0) == 6.0
    with pytest.raises(ad.BranchError) as err:
        F(0.2)
    message = str(err.value)
    assert "1.0 > 0.5" in message and "test_record.py" in message
    assert F(1.5) == 2.25                # still usable after the error


def test_comparisons_between_values_and_every_operator():
    def f(x, y):
        out = x * y
        if x < y:
            out = out + x
        if x <= 0.0:
            out = out * 2.0
        if y >= x:
            out = out - y
        return out
    F = ad.record(f, -1.0, 2.0)
    assert F(-2.0, 3.0) == f(-2.0, 3.0)
    for args in ((3.0, 2.0), (1.0, 2.0), (-1.0, -3.0)):
        with pytest.raises(ad.BranchError):
            F(*args)


def test_where_on_a_recorded_comparison_replays_without_a_guard():
    def f(x):
        return np.sum(np.where(x > 0, x ** 2, -x))
    F = ad.record(f, np.array([1.0, -1.0, 2.0]))
    for _ in range(10):
        x = RNG.normal(size=3)
        assert F(x) == pytest.approx(f(x))
        np.testing.assert_allclose(F.grad(x), np.where(x > 0, 2 * x, -1.0))


def test_a_boolean_mask_index_is_a_guard():
    def f(x):
        return np.sum(x[x > 0] ** 2)
    F = ad.record(f, np.array([1.0, -1.0, 2.0]))
    assert F(np.array([3.0, -5.0, 1.0])) == 10.0
    with pytest.raises(ad.BranchError, match="mask"):
        F(np.array([-3.0, -5.0, 1.0]))


def test_function_decorator_records_lazily_and_again_when_needed():
    calls = []

    @ad.function
    def f(x):
        calls.append(1)
        return piecewise(x)

    assert f(2.0) == 4.0 and len(calls) == 1
    assert f(3.0) == 9.0 and len(calls) == 1          # replayed
    assert f(0.1) == -0.1 and len(calls) == 2         # a guard flipped
    assert f.grad(0.2) == -1.0 and len(calls) == 2
    assert f.grad(4.0) == 8.0 and len(calls) == 3

    @ad.function
    def g(x):
        calls.append(2)
        return np.sum(x ** 2)
    np.testing.assert_allclose(g.grad(np.ones(3)), 2 * np.ones(3))
    np.testing.assert_allclose(g.grad(np.ones(5)), 2 * np.ones(5))  # new shape
    assert calls.count(2) == 2
    assert g(np.arange(3.0)) == 5.0 and calls.count(2) == 2
    np.testing.assert_allclose(g.hessian(np.ones(3)), 2 * np.eye(3))


def test_custom_ops_replay_through_their_python_rules():
    cube = ad.custom_op(lambda x: x ** 3, lambda g, out, x: (3 * x ** 2 * g,))
    F = ad.record(lambda x: cube(ad.sin(x)), 0.4)
    for x in (0.1, 0.9, -1.3):
        assert F(x) == pytest.approx(np.sin(x) ** 3)
        assert F.grad(x) == pytest.approx(3 * np.sin(x) ** 2 * np.cos(x))


def test_print_and_len():
    F = ad.record(scalar_fn, 0.3, -0.4)
    assert len(F) == len(str(F).splitlines()) - 2
    assert "scalar_fn" in repr(F) and "guard" in repr(F)


# -- saved recordings ----------------------------------------------------------

@pytest.mark.parametrize("fn,args", [
    (scalar_fn, (0.3, -0.4)), (array_fn, (np.zeros(5),)),
    (mixed_fn, (np.ones(4), 0.5)), (piecewise, (1.0,)),
    (lambda x: np.sum(x[x > 0]), (np.array([1.0, -2.0, 3.0]),)),
])
def test_save_and_load_round_trip(tmp_path, fn, args):
    F = ad.record(fn, *args)
    path = tmp_path / "f.adtape"
    F.save(path)
    G = ad.load(path)
    assert len(G) == len(F)
    for _ in range(5):
        new = [a + RNG.normal(scale=0.01, size=np.shape(a)) if np.ndim(a)
               else a + float(RNG.normal(scale=0.01)) for a in args]
        assert G(*new) == pytest.approx(F(*new), rel=1e-14)
        np.testing.assert_allclose(G.grad(*new), F.grad(*new), rtol=1e-14)
    if fn is piecewise:
        with pytest.raises(ad.BranchError):
            G(0.0)


def test_saving_a_custom_op_is_refused(tmp_path):
    op = ad.custom_op(lambda x: 2 * x, lambda g, out, x: (2 * g,))
    with pytest.raises(ValueError, match="Python code"):
        ad.record(lambda x: op(x), 1.0).save(tmp_path / "f.adtape")


def test_truncated_and_foreign_files_are_value_errors(tmp_path):
    F = ad.record(array_fn, np.zeros(4))
    path = tmp_path / "f.adtape"
    F.save(path)
    data = path.read_bytes()
    for cut in (0, 5, 20, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(ValueError):
            ad.load(path)
    path.write_bytes(b"not a tape at all" * 10)
    with pytest.raises(ValueError, match="not a saved"):
        ad.load(path)


def test_a_well_formed_file_with_a_bad_tape_is_a_value_error(tmp_path):
    """Files that pass the checksum but describe an impossible tape: the
    rebuild's checks, not the checksum, must catch them."""
    import hashlib
    import json
    import struct
    from pyautodiff import tapefile
    F = ad.record(array_fn, np.zeros(4))
    path = tmp_path / "f.adtape"
    F.save(path)
    data = path.read_bytes()[:-32]
    magic, version, head_len = tapefile._PREFIX.unpack_from(data)
    start = tapefile._PREFIX.size
    header = json.loads(data[start:start + head_len])
    payload = data[start + head_len:]

    def write(h, p=payload):
        head = json.dumps(h).encode()
        body = struct.pack("<8sIQ", magic, version, len(head)) + head + p
        path.write_bytes(body + hashlib.sha256(body).digest())

    bad_headers = []
    for change in (lambda h: h.update(entries=h["entries"] + 5),
                   lambda h: h.update(out=10 ** 6),
                   lambda h: h.update(leaves=[[-1]]),
                   lambda h: h["arrays"][1].update(shape=[7, 7]),
                   lambda h: h["columns"]["op"].__setitem__(0, 10 ** 9),
                   lambda h: h.pop("guards")):
        h = json.loads(json.dumps(header))
        change(h)
        bad_headers.append(h)
    for h in bad_headers:
        write(h)
        with pytest.raises(ValueError):
            ad.load(path)
    # operands pointing forward, and an unknown op code, in the payload
    ops_at = header["columns"]["a"][0]
    forward_operand = bytearray(payload)
    forward_operand[ops_at + 4:ops_at + 8] = struct.pack("<i", 50)
    op_at = header["columns"]["op"][0]
    unknown_op = bytearray(payload)
    unknown_op[op_at + 4:op_at + 8] = struct.pack("<i", 999)
    for p in (bytes(forward_operand), bytes(unknown_op)):
        write(header, p)
        with pytest.raises(ValueError):
            ad.load(path)


def test_every_flipped_byte_and_every_truncation_is_a_clean_error(tmp_path):
    """In a subprocess, so a crash would show as a failure, not kill pytest."""
    path = tmp_path / "small.adtape"
    ad.record(lambda x: np.sum(np.tanh(x) * x[::-1]), np.ones(2)).save(path)
    script = textwrap.dedent(f"""
        import pyautodiff as ad
        data = open({str(path)!r}, "rb").read()
        bad = {str(tmp_path / "bad.adtape")!r}
        caught = 0
        cases = [data[:k] for k in range(len(data))]
        for k in range(len(data)):
            for bit in (0x01, 0x80):
                flipped = bytearray(data)
                flipped[k] ^= bit
                cases.append(bytes(flipped))
        for case in cases:
            open(bad, "wb").write(case)
            try:
                ad.load(bad)
            except ValueError:
                caught += 1
        print(caught, len(cases))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True,
                         text=True, timeout=600, cwd=os.getcwd())
    assert out.returncode == 0, out.stderr
    caught, total = map(int, out.stdout.split())
    assert caught == total and total > 1000


def test_decisions_on_arrays_are_guards():
    def f(x):
        if x.sum() > 0:                  # a 0-d comparison, then its truth value
            return np.sum(x ** 2)
        if np.any(x < -1.0):
            return np.sum(x * 0.0)
        return np.sum(-x)
    F = ad.record(f, np.array([1.0, 2.0]))
    assert F(np.array([3.0, 1.0])) == 10.0
    with pytest.raises(ad.BranchError, match="truth value"):
        F(np.array([-3.0, 1.0]))
    G = ad.record(f, np.array([-0.5, -0.2]))
    assert G(np.array([-0.1, -0.3])) == pytest.approx(0.4)
    with pytest.raises(ad.BranchError, match="any"):
        G(np.array([-2.0, -0.3]))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(ad.Array([1.0, 2.0]))
    path_free = ad.function(f)
    assert path_free(np.array([-2.0, 0.5])) == 0.0
    assert path_free(np.array([3.0, 1.0])) == 10.0


def test_decisions_survive_save_and_load(tmp_path):
    def f(x):
        return np.sum(x ** 2) if x.sum() > 0 else np.sum(-x)
    F = ad.record(f, np.array([1.0, 2.0]))
    F.save(tmp_path / "f.adtape")
    G = ad.load(tmp_path / "f.adtape")
    assert G(np.array([3.0, 1.0])) == 10.0
    with pytest.raises(ad.BranchError):
        G(np.array([-3.0, 1.0]))


def test_a_mask_that_selects_nothing():
    def f(x):
        return np.sum(x[x < 0]) + np.sum(x ** 2)
    F = ad.record(f, np.array([1.0, 2.0]))       # the mask picks nothing
    assert F(np.array([3.0, 1.0])) == 10.0
    np.testing.assert_allclose(F.grad(np.array([3.0, 1.0])), [6.0, 2.0])
    with pytest.raises(ad.BranchError):
        F(np.array([-3.0, 1.0]))


# -- value_and_grad in one C call ------------------------------------------
# A recording of f(x), x one float or float64 array, with a scalar result,
# answers value_and_grad with one C call; anything else, or a point where
# a guard flips or the result is not finite, takes the general path.  Both
# must give the same answers: the general path is the oracle here.

def _general(F, *args):
    F._replay(args)
    return F.trace.value_and_grad()


@pytest.mark.parametrize("n", [1, 6, 5000])
def test_one_call_value_and_grad_is_the_general_path_bit_for_bit(n):
    F = ad.record(array_fn, np.zeros(n))
    for _ in range(5):
        x = RNG.normal(size=n)
        value, grad = F.value_and_grad(x)
        assert F._objective is not None         # it took the one call
        want_value, want_grad = _general(F, x)
        assert value == want_value and type(value) is float
        np.testing.assert_array_equal(grad, want_grad)
        assert grad.shape == (n,) and grad.flags.writeable
        assert grad is not F.value_and_grad(x)[1]     # a new array each time


def test_one_call_value_and_grad_of_a_float_and_of_a_2d_array():
    F = ad.record(lambda s: ad.sin(s) * s ** 3, 0.7)
    value, grad = F.value_and_grad(1.3)
    assert type(grad) is float
    assert value == pytest.approx(np.sin(1.3) * 1.3 ** 3, rel=1e-14)
    assert grad == pytest.approx(np.cos(1.3) * 1.3 ** 3 + 3 * np.sin(1.3) * 1.3 ** 2,
                                 rel=1e-13)
    assert F.value_and_grad(2) == _general(F, 2)          # an int is a float here
    G = ad.record(lambda m: np.sum(np.tanh(m @ A)), np.ones((2, 3)))
    m = RNG.normal(size=(2, 3))
    value, grad = G.value_and_grad(m)
    np.testing.assert_allclose(grad, (1 - np.tanh(m @ A) ** 2) @ A.T, rtol=1e-13)
    assert value == pytest.approx(np.sum(np.tanh(m @ A)), rel=1e-14)


def test_one_call_falls_back_where_the_general_path_must_answer():
    F = ad.record(array_fn, np.zeros(6))
    x = RNG.normal(size=12)[::2]                      # not contiguous
    np.testing.assert_array_equal(F.grad(x), _general(F, x.copy())[1])
    x32 = RNG.normal(size=6).astype(np.float32)       # converted, as before
    np.testing.assert_array_equal(F.grad(x32), _general(F, x32.astype(np.float64))[1])
    with pytest.raises(ValueError, match="shape"):
        F.grad(np.zeros(7))
    # a guard that flips is still a BranchError, and the recording still works
    P = ad.record(piecewise, 1.0)
    with pytest.raises(ad.BranchError):
        P.value_and_grad(0.2)
    assert P.value_and_grad(3.0) == (9.0, 6.0)


def test_one_call_leaves_infinite_results_and_anomalies_to_the_general_path():
    F = ad.record(lambda x: ad.sum(ad.log(x)), np.ones(3))
    value, grad = F.value_and_grad(np.array([1.0, 0.0, 2.0]))
    assert value == -np.inf
    assert grad[0] == 1.0 and grad[1] == np.inf and grad[2] == 0.5
    with ad.detect_anomaly(), pytest.raises(FloatingPointError):
        F.value_and_grad(np.array([1.0, 0.0, 2.0]))
    assert F.value_and_grad(np.array([1.0, 4.0, 2.0]))[1][1] == 0.25


def test_one_call_is_not_used_for_a_result_that_is_no_scalar():
    vector = ad.record(vector_fn, np.ones(4))
    with pytest.raises(TypeError, match="scalar output"):
        vector.value_and_grad(np.ones(4))
    assert vector._objective is None
    two = ad.record(scalar_fn, 0.3, -0.4)
    assert two.value_and_grad(0.1, 0.2) == _general(two, 0.1, 0.2)
    nested = ad.record(lambda d: d["a"] * d["b"], {"a": 1.0, "b": 2.0})
    assert nested.value_and_grad({"a": 3.0, "b": 5.0}) == (15.0, {"a": 5.0, "b": 3.0})


def test_one_call_made_here_and_other_threads_agree():
    import threading
    F = ad.record(lambda x: ad.sum(ad.tanh(x) * x), np.zeros(2000))
    F.value_and_grad(np.zeros(2000))                 # the one call, made here
    results = []

    def other_thread():
        results.append(F.value_and_grad(np.ones(2000)))

    workers = [threading.Thread(target=other_thread) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    exact = np.tanh(1.0) + 1.0 - np.tanh(1.0) ** 2   # d(tanh(x) x)/dx at 1
    for value, grad in results + [F.value_and_grad(np.ones(2000))]:
        assert value == pytest.approx(2000 * np.tanh(1.0), rel=1e-13)
        np.testing.assert_allclose(grad, exact, rtol=1e-14)


def test_value_and_grad_of_a_recording_of_an_empty_array():
    F = ad.record(lambda x: ad.sum(x * x), np.zeros(0))
    value, grad = F.value_and_grad(np.zeros(0))
    assert value == 0.0 and grad.shape == (0,)


# -- one replay, one guard check ----------------------------------------------
# ad.record's replays, its one-call value_and_grad and the C minimizer's
# evaluations are the one C call ad_replay (csrc/replay.c): a guard that
# flips is the same guard from each.

def _two_guards(x):
    if x[0] > 0.0:                          # guard 0, a Value's comparison
        out = np.sum(x ** 2)
    else:
        out = np.sum(-x)
    return out + np.sum(x[x < 1.0])         # guard 1, a mask


@pytest.mark.parametrize("point, k", [([-1.0, 0.5], 0), ([0.5, 2.0], 1)])
def test_every_caller_finds_the_same_flipped_guard(point, k):
    import importlib
    from pyautodiff._core import check, ffi, lib, new_lbfgs
    minimize_module = importlib.import_module("pyautodiff.minimize")
    F = ad.record(_two_guards, np.array([1.0, 0.5]))
    x = np.array(point)
    messages = []
    for call in (F, F.value_and_grad, F.jacobian):
        with pytest.raises(ad.BranchError) as err:
            call(x)
        messages.append(str(err.value))
    assert len(set(messages)) == 1
    assert ("mask" in messages[0]) == (k == 1)
    o = new_lbfgs(2, 1)
    keep = minimize_module._attach(o, F)
    f, outcome = ffi.new("double *"), ffi.new("int32_t *")
    g = np.empty(2)
    check(lib.ad_lbfgs_evaluate(o, ffi.from_buffer("double[]", x), f,
                                ffi.from_buffer("double[]", g), outcome), o)
    assert outcome[0] == lib.AD_EVAL_GUARD and o.guard == k
    assert np.isnan(f[0]) and np.isnan(g).all()
    del keep
    # ... and minimize records again there, as it must
    res = ad.minimize(_two_guards, np.array([1.0, 0.5]), method="lbfgs")
    assert res.success or res.status in (1, 2)


@pytest.mark.filterwarnings("ignore")      # float(y) of a traced y, meant
def test_a_guard_matches_nan_and_tells_the_zeros_apart():
    def f(x, y):
        return x * 2.0 if y.item() != 5.0 else x      # y.item(): a guard on y
    F = ad.record(f, 1.0, float("nan"))
    assert F(3.0, float("nan")) == 6.0
    G = ad.record(f, 1.0, 0.0)
    assert G.value_and_grad(3.0, 0.0) == (6.0, 2.0)
    with pytest.raises(ad.BranchError):
        G(3.0, -0.0)
    with pytest.raises(ad.BranchError):
        G.value_and_grad(3.0, -0.0)

    def h(x):                                 # an Array's numbers, taken out
        return np.sum(x * np.sum(x[1:] * 0.0 + x[1:]).item())
    H = ad.record(h, np.array([1.0, np.nan]))
    assert np.isnan(H(np.array([2.0, np.nan])))


def test_a_malformed_replay_plan_is_an_error_not_a_crash():
    from pyautodiff._core import check, ffi, lib
    F = ad.record(_two_guards, np.array([1.0, 0.5]))
    c, plan = F.trace.tape._c, F.plan
    x, flipped = np.ones(2), ffi.new("int64_t *")
    good = plan.guard
    bad = np.array([10 ** 9, -1], np.int64)
    plan.guard = ffi.from_buffer("int64_t[]", bad)
    with pytest.raises(ValueError, match="guard 0"):
        check(lib.ad_replay(c, plan, ffi.from_buffer("double[]", x), 0, 0,
                            ffi.NULL, ffi.NULL, flipped), c)
    plan.guard = good
    plan.nexpected += 1
    with pytest.raises(ValueError, match="expected"):
        check(lib.ad_replay(c, plan, ffi.from_buffer("double[]", x), 0, 0,
                            ffi.NULL, ffi.NULL, flipped), c)
    plan.nexpected -= 1
    with pytest.raises(ValueError, match="gradient needs"):
        check(lib.ad_replay(c, plan, ffi.from_buffer("double[]", x), 1, 0,
                            ffi.NULL, ffi.NULL, flipped), c)
    assert F(np.array([2.0, 0.5])) == F.trace.output_value()
