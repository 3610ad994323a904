"""Saved recordings under edits: a file either loads into a tape as
consistent as a recorded one (same values, gradients and Hessians as an
independent evaluation of that tape) or raises ValueError; never a crash,
never a hang on a file that never ends."""
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import autograd
import autograd.numpy as anp
from scipy.special import logsumexp

import pyautodiff as ad
from pyautodiff import _core, tapefile
from pyautodiff.testing.rules import RULES

pytestmark = pytest.mark.filterwarnings("ignore:Output seems independent")


# -- a result that depends on no variable -------------------------------------
# (what an edited flag or op can make of a recording, and what a recording
# of a comparison is): its derivatives are zeros, as autograd's

def _on_a_comparison(np_):
    return lambda x: np_.sum((x < 0.0) * 1.0)


def test_derivatives_of_a_result_that_depends_on_no_variable_are_zeros():
    x = np.array([0.5, -1.0, 2.0])
    want = autograd.grad(_on_a_comparison(anp))(x)
    f = _on_a_comparison(np)
    F = ad.record(f, x)
    np.testing.assert_array_equal(F.grad(x), want)          # one C call
    np.testing.assert_array_equal(F.value_and_grad(x)[1], want)
    np.testing.assert_array_equal(F.hessian(x), np.zeros((3, 3)))
    np.testing.assert_array_equal(ad.grad(f)(x), want)
    a = ad.Array(x)
    out = f(a)
    out.backward()
    assert out.data == 1.0
    np.testing.assert_array_equal(a.grad, want)


# -- ad_array_check: an entry's checks before its values exist ---------------

def test_array_check_takes_what_the_appends_take_and_nothing_else():
    from pyautodiff import _core
    ffi, lib, OPS = _core.ffi, _core.lib, _core.OPS
    t = _core.new_tape()
    x = np.arange(6.0)
    _core.check(lib.ad_array_leaf(t, ffi.from_buffer("double[]", x), 1,
                                  ffi.new("int64_t[]", [6]), 1), t)

    def check(op, a, b, shape, map_=None, stride=None, offset=0):
        cmap = ffi.new("int64_t[]", map_) if map_ else ffi.NULL
        cstride = ffi.new("int64_t[]", stride or [0]) if stride is not None else ffi.NULL
        return lib.ad_array_check(t, op, a, b, len(shape),
                                  ffi.new("int64_t[]", list(shape) or [0]),
                                  cmap, len(map_ or ()), cstride, offset)

    good = [(OPS["TANH"], 0, -1, (6,)), (OPS["ADD"], 0, 0, (6,)),
            (OPS["SUM"], 0, -1, ()), (OPS["RESHAPE"], 0, -1, (2, 3)),
            (OPS["GATHER"], 0, -1, (2,), [5, 0]),
            (OPS["SCATTER"], 0, -1, (7,), [6, 0, 1, 2, 3, 4]),
            (OPS["GATHER"], 0, -1, (3,), None, [-2], 5)]
    bad = [(OPS["TANH"], 0, -1, (7,)), (OPS["TANH"], 0, -1, (10 ** 12,)),
           (OPS["ADD"], 0, 1, (6,)), (OPS["TANH"], 0, 0, (6,)),
           (OPS["RESHAPE"], 0, -1, (4,)), (OPS["SUM"], 0, -1, (2,)),
           (OPS["TANH"], 0, -1, (1,) * 17), (OPS["TANH"], 0, -1, (-1,)),
           (OPS["GATHER"], 0, -1, (2,), [6, 0]), (OPS["GATHER"], 0, -1, (2,), [-1, 0]),
           (OPS["GATHER"], 0, -1, (3,), [0, 1]),
           (OPS["GATHER"], 0, -1, (2 ** 40, 2 ** 40), [0]),    # its size overflows
           (OPS["SCATTER"], 0, -1, (6,), [6, 0, 1, 2, 3, 4]),
           (OPS["GATHER"], 0, -1, (3,), None, [-2], 6),
           (OPS["GATHER"], 0, -1, (4,), None, [2], 0),
           (OPS["SCATTER"], 0, -1, (3,), None, [1], 0), (OPS["TANH"], 0, -1, (6,), [0]),
           (OPS["GATHER"], 0, -1, (2,)), (ad._core.NUM_OPS, 0, -1, (6,))]
    for args in good:
        assert check(*args) == lib.AD_OK, (args, ffi.string(t.errmsg))
    for args in bad:
        assert check(*args) == lib.AD_EINVAL, args
    assert t.n == 1                     # nothing was appended


# -- recordings, and their files taken apart ---------------------------------

W = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])


def f_strided(x):        # a strided gather, elementwise ops, a sum
    return np.sum(np.tanh(x) * x[::-1])


def f_mixed(x):          # gather and scatter by maps, reshape, max, logsumexp,
    y = ad.concatenate([x[[0, 2, 1]], x ** 2])      # matmul, where, a mean
    z = (W @ x.reshape(3, 1)).reshape(-1)
    m = np.max(y) + ad.logsumexp(y) + np.sum(np.where(y > 0.1, y, 0.0) * 0.5)
    return m + np.mean(np.exp(z))


def f_scalar(x):         # scalar entries, a constant, a guard
    y = x * 2.0 + 1.0
    if y > 0:
        return ad.Value(1.5) * ad.tanh(y) * y + x ** 3
    return -y


def f_masked(x):         # a mask: an array guard
    return np.sum(x[x > 0.0] ** 2) + np.sum(x)


CASES = {"strided": (f_strided, np.array([0.3, 0.5, 0.7])),
         "mixed": (f_mixed, np.array([0.3, -0.5, 0.7])),
         "scalar": (f_scalar, 0.4),
         "masked": (f_masked, np.array([0.3, -0.5, 0.7]))}


def saved(tmp_path, name):
    """The recording of CASES[name] saved: (its file's bytes, header, payload)."""
    fn, x = CASES[name]
    path = tmp_path / f"{name}.adtape"
    ad.record(fn, x).save(path)
    data = path.read_bytes()
    _, _, head_len = tapefile._PREFIX.unpack_from(data)
    start = tapefile._PREFIX.size
    return data, json.loads(data[start:start + head_len]), \
        bytearray(data[start + head_len:-32])


def signed(header, payload, version=tapefile.VERSION):
    """A file of this header and payload with a correct checksum."""
    head = json.dumps(header).encode()
    body = tapefile._PREFIX.pack(tapefile.MAGIC, version, len(head)) + head \
        + bytes(payload)
    return body + hashlib.sha256(body).digest()


def column_at(header, name, i):
    """(offset, size) of entry i's item in a column of the payload."""
    size = {"op": 4, "a": 4, "b": 4, "imm": 8, "flags": 1}[name]
    return header["columns"][name][0] + size * i, size


# -- an independent evaluation of a saved tape: NumPy, entry by entry --------

def _on_arrays(rule):
    """The oracle row's value on ndarrays (NumPy: NaNs, not math's errors),
    of (x, c) for an op of one operand, fused with a constant c or not, or
    of (x, y)."""
    n = 1 if rule.arity == 1 and rule.constant is None else 2   # operands it takes

    def value(*operands):
        return rule.value(*[np.asarray(x, dtype=float) for x in operands[:n]])
    return value


# the elementwise ops: every row of the oracle table
_UNARY = {name: _on_arrays(rule) for name, rule in RULES.items() if rule.arity == 1}
_BINARY = {name: _on_arrays(rule) for name, rule in RULES.items() if rule.arity == 2}
_BINARY["extern"] = np.matmul
_REDUCE = {"sum": np.sum, "max": np.max, "min": np.min, "lse": logsumexp, "prod": np.prod}


def evaluate(data, x):
    """The saved tape's output at argument x (its one float or array)."""
    _, _, head_len = tapefile._PREFIX.unpack_from(data)
    start = tapefile._PREFIX.size
    h = json.loads(data[start:start + head_len])
    payload = data[start + head_len:-32]

    def col(ref, dtype):
        return np.frombuffer(payload, dtype, ref[1], ref[0])

    op, a, b, imm = (col(h["columns"][k], t) for k, t in
                     (("op", "<i4"), ("a", "<i4"), ("b", "<i4"), ("imm", "<f8")))
    arrays = {e["i"]: e for e in h["arrays"]}
    v = []
    with np.errstate(all="ignore"):
        for i in range(h["entries"]):
            name, c = _core.OP_NAMES[op[i]], imm[i]
            e = arrays.get(i)
            shape = tuple(e["shape"]) if e else ()
            va = v[a[i]] if a[i] >= 0 else None
            if i in h["leaves"][0]:
                out = np.asarray(x, dtype=float)
            elif name == "leaf":
                out = col(e["values"], "<f8").reshape(shape) if e else c
            elif name in _UNARY:
                out = _UNARY[name](va, c)
            elif name in _BINARY:
                out = _BINARY[name](va, v[b[i]])
            elif e is None and name in ("sum", "max", "min", "lse", "prod", "reshape",
                                        "gather", "scatter"):
                out = va / c if name == "sum" else va   # of one number
            elif name in _REDUCE:
                axes = tuple(d for d in range(np.ndim(va))
                             if not shape or (shape[d] == 1 and np.shape(va)[d] != 1))
                out = _REDUCE[name](va, axis=axes, keepdims=bool(shape)) \
                    if axes else np.asarray(va, dtype=float)
                out = out / c if name == "sum" else out
            elif name == "reshape":
                out = np.reshape(va, shape)
            elif name == "gather" and "strided" in e:
                offset, *strides = e["strided"]
                flat = offset + sum(np.indices(shape)[d] * s for d, s in enumerate(strides))
                out = np.reshape(va, -1)[flat] if shape else np.reshape(va, -1)[offset]
            elif name == "gather":
                out = np.reshape(va, -1)[col(e["map"], "<i8")].reshape(shape)
            elif name == "scatter":
                out = np.zeros(int(np.prod(shape)))
                np.add.at(out, col(e["map"], "<i8"), np.reshape(va, -1))
                out = out.reshape(shape)
            else:
                raise AssertionError(name)
            v.append(np.reshape(out, shape) if e else float(np.reshape(out, ())))
    return v[h["out"]] if h["out"] is not None else h["out_const"]


def close(got, want, rtol=1e-9, atol=1e-12):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    return got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=atol,
                                                   equal_nan=True)


def smooth_diff(f, x, h=1e-5):
    """Central differences of f at x (f: float -> float or array), or None
    where two step sizes disagree (a kink, a branch, rounding)."""
    x = np.asarray(x, dtype=float)

    def at(step):
        cols = []
        for k in np.ndindex(x.shape):
            up, down = x.copy(), x.copy()
            up[k] += step
            down[k] -= step
            cols.append((np.asarray(f(up if x.ndim else float(up)))
                         - np.asarray(f(down if x.ndim else float(down)))) / (2 * step))
        return np.stack(cols, axis=-1).reshape(np.shape(cols[0]) + x.shape)

    with np.errstate(all="ignore"):
        d1, d2 = at(h), at(h / 2)
    if not (np.all(np.isfinite(d1)) and close(d1, d2, rtol=1e-4, atol=1e-6)):
        return None
    return d2


def consistent(G, data, x):
    """G (loaded from data) gives the saved tape's value at x, and
    derivatives that agree with its own values: or G's replay raises
    BranchError (an edited guard that fails at x).  None where the tape
    is too rough at x for central differences to say."""
    try:
        value = G(x)
    except ad.BranchError:
        return True
    if not close(value, evaluate(data, x)):
        return False
    if not np.isfinite(value).all() or np.size(value) != 1:
        return True
    if abs(np.asarray(value).item()) > 1e8:
        return None          # differences would lose the derivatives' digits
    # an infinite partial times a zero one is NaN (x ** 0.5 at 0 behind a
    # mask), as in a recording: where differences cannot judge
    grad, fd = G.grad(x), smooth_diff(G, x)
    if fd is None or not np.isfinite(grad).all():
        return None
    if not close(grad, fd.reshape(np.shape(grad)), rtol=1e-4, atol=1e-6):
        return False
    hess, hd = G.hessian(x), smooth_diff(G.grad, x)
    if hd is None or not np.isfinite(hess).all():
        return None
    return close(hess, hd, rtol=1e-3, atol=1e-5)


def load_or_none(data):
    """The recording in these bytes (read as a binary file object), or None
    for a ValueError."""
    try:
        return ad.load(io.BytesIO(data))
    except ValueError:
        return None


# -- every value of a field ---------------------------------------------------

@pytest.mark.parametrize("name", ["strided", "scalar"])
def test_every_value_of_every_flags_byte(tmp_path, name):
    """Only the bits a recording gives load; the rest are ValueErrors (a
    cleared variable bit of an argument's leaf crashed the one-call
    gradient)."""
    data, header, payload = saved(tmp_path, name)
    x = CASES[name][1]
    loaded = 0
    for i in range(header["entries"]):
        at, _ = column_at(header, "flags", i)
        for value in range(256):
            edited = bytearray(payload)
            edited[at] = value
            file = signed(header, edited)
            G = load_or_none(file)
            if G is None:
                continue
            loaded += 1
            assert consistent(G, file, x) is not False, (i, value)
    assert loaded >= header["entries"]          # the saved values, at least
    assert loaded < 2 * header["entries"]


@pytest.mark.parametrize("name", ["strided", "mixed", "scalar"])
def test_every_op_code_of_every_entry(tmp_path, name):
    data, header, payload = saved(tmp_path, name)
    x = CASES[name][1]
    for i in range(header["entries"]):
        at, _ = column_at(header, "op", i)
        for op in list(range(-2, 260)) + [2 ** 31 - 1, -2 ** 31]:
            edited = bytearray(payload)
            edited[at:at + 4] = struct.pack("<i", op)
            file = signed(header, edited)
            G = load_or_none(file)
            if G is not None:
                assert 0 <= op < _core.NUM_OPS
                assert consistent(G, file, x) is not False, (i, op)


@pytest.mark.parametrize("name", ["strided", "mixed", "scalar"])
def test_operands_out_of_range(tmp_path, name):
    data, header, payload = saved(tmp_path, name)
    for i in range(header["entries"]):
        for field in ("a", "b"):
            at, _ = column_at(header, field, i)
            for j in (i, i + 1, header["entries"], -2, 2 ** 31 - 1, -2 ** 31):
                edited = bytearray(payload)
                edited[at:at + 4] = struct.pack("<i", j)
                assert load_or_none(signed(header, edited)) is None, (i, field, j)


def _edited(header, change):
    h = json.loads(json.dumps(header))
    change(h)
    return h


def _array(h, i):
    return next(e for e in h["arrays"] if e["i"] == i)


def test_edited_shapes_and_sizes(tmp_path):
    """Checked before any values are allocated: a huge edited shape is a
    ValueError, not a MemoryError."""
    data, header, payload = saved(tmp_path, "mixed")
    shapes = ([7], [3, 1], [1], [], [0], [-1], [10 ** 12], [2 ** 40, 2 ** 40],
              [1] * 17, [3.0], ["3"], [True], 3, None)
    x = CASES["mixed"][1]
    for e in header["arrays"]:
        for shape in shapes:
            h = _edited(header, lambda h: _array(h, e["i"]).update(shape=shape))
            file = signed(h, payload)
            if shape == [10 ** 12] and e["i"] in (3, 4):
                continue    # a scatter into 10**12 zeros: as consistent as
                # a recorded tape, and only memory would stop it
            G = load_or_none(file)      # (and no MemoryError)
            # a shape its operands allow (a gather's (3, 1) for (3,)) is
            # the tape it describes
            assert G is None or (shape in ([3, 1], [1], []) and
                                 consistent(G, file, x) is not False), (e, shape)
    for change in (lambda h: h["columns"]["op"].__setitem__(1, 4),
                   lambda h: h["columns"]["imm"].__setitem__(1, 10 ** 15),
                   lambda h: h["columns"]["flags"].__setitem__(0, -1),
                   lambda h: h.update(entries=h["entries"] - 1),
                   lambda h: h.update(entries=10 ** 12),
                   lambda h: _array(h, 0).update(values=[_array(h, 0)["values"][0], 2]),
                   lambda h: h["arrays"].append(dict(h["arrays"][-1])),
                   lambda h: h["arrays"].pop(3),
                   lambda h: _array(h, 1).update(values=[0, 3]),
                   lambda h: _array(h, 0).pop("values")):
        assert load_or_none(signed(_edited(header, change), payload)) is None


def test_index_maps_out_of_range(tmp_path):
    data, header, payload = saved(tmp_path, "mixed")
    fn, x = CASES["mixed"]
    maps = [e for e in header["arrays"] if "map" in e]
    assert len(maps) >= 3                    # a gather and two scatters
    for e in maps:
        offset, count = e["map"]
        op = _core.OP_NAMES[struct.unpack_from("<i", payload,
                                               header["columns"]["op"][0] + 4 * e["i"])[0]]
        size = int(np.prod(e["shape"]))
        for k in range(count):
            for index in (-1, size if op == "scatter" else 3, 2 ** 62, -2 ** 63):
                edited = bytearray(payload)
                edited[offset + 8 * k:offset + 8 * k + 8] = struct.pack("<q", index)
                assert load_or_none(signed(header, edited)) is None, (e, k, index)
    # a map that stays in range gives the tape it describes
    e = maps[0]
    edited = bytearray(payload)
    edited[e["map"][0]:e["map"][0] + 8] = struct.pack("<q", 2)
    file = signed(header, edited)
    assert consistent(load_or_none(file), file, x) is not False


def test_strided_gathers_out_of_range(tmp_path):
    data, header, payload = saved(tmp_path, "strided")
    (e,) = [e for e in header["arrays"] if "strided" in e]
    assert e["strided"] == [2, -1]
    for strided in ([3, -1], [1, -1], [-1, 1], [0, 2], [2, -2], [2], [2, -1, 0],
                    [2 ** 63 - 1, -1], [2, -2 ** 63], [2.0, -1]):
        h = _edited(header, lambda h: _array(h, e["i"]).update(strided=strided))
        assert load_or_none(signed(h, payload)) is None, strided
    for strided in ([0, 1], [1, 0]):         # in range: the tape it describes
        file = signed(_edited(header, lambda h: _array(h, e["i"]).update(
            strided=strided)), payload)
        assert consistent(load_or_none(file), file, CASES["strided"][1]) is True


def test_guards_out_of_range_or_of_the_wrong_kind(tmp_path):
    data, header, payload = saved(tmp_path, "scalar")
    (guard,) = header["guards"]
    n = header["entries"]
    for bad in ([n, 1.0, "x"], [-1, 1.0, "x"], [guard[0], 1, "x"],
                [guard[0], "1.0", "x"], [guard[0], [0, 1], "x"], [guard[0], 1.0, 7],
                [guard[0], 1.0], [float(guard[0]), 1.0, "x"], guard[0]):
        h = _edited(header, lambda h: h.update(guards=[bad]))
        assert load_or_none(signed(h, payload)) is None, bad
    data, header, payload = saved(tmp_path, "masked")
    (guard,) = header["guards"]
    assert isinstance(guard[1], list)        # a mask: its values
    for bad in ([guard[0], 1.0, "x"],                  # a number for a mask
                [guard[0], [guard[1][0], 2], "x"],     # two values for three
                [guard[0], [len(payload), 3], "x"],    # past the payload
                [1, guard[1], "x"]):                   # three for a 0-d entry
        h = _edited(header, lambda h: h.update(guards=[bad]))
        assert load_or_none(signed(h, payload)) is None, bad


def test_arguments_outputs_and_externs(tmp_path):
    data, header, payload = saved(tmp_path, "mixed")
    n = header["entries"]
    extern = next(iter(header["externs"]))
    changes = [
        lambda h: h.update(leaves=[[1]]), lambda h: h.update(leaves=[[0, 0]]),
        lambda h: h.update(leaves=[[7]]),               # a constant leaf
        lambda h: h.update(leaves=[[0], [0]]), lambda h: h.update(leaves=[]),
        lambda h: h["structures"][0].update(kinds=["float"]),
        lambda h: h["structures"][0].update(shapes=[[4]]),
        lambda h: h["structures"][0].update(node=["list", []]),
        lambda h: h["structures"][0].update(node=["set", [None]]),
        lambda h: h.update(argnum=1), lambda h: h.update(argnum=[0, 3]),
        lambda h: h.update(argnum=0.0),
        lambda h: h.update(out=n), lambda h: h.update(out=-1),
        lambda h: h.update(out=None), lambda h: h.update(out=None, out_const=[None]),
        lambda h: h.update(out_const=1.0), lambda h: h.update(name=3),
        lambda h: h.update(externs={}), lambda h: h.update(externs={extern: "conv"}),
        lambda h: h["externs"].update({"3": "matmul"}),
        lambda h: h.update(externs={"0" + extern: "matmul"}),
        lambda h: h.pop("columns"), lambda h: h.update(columns=[]),
    ]
    for change in changes:
        assert load_or_none(signed(_edited(header, change), payload)) is None
    # a constant output is a plain value again
    G = load_or_none(signed(_edited(header, lambda h: h.update(
        out=None, out_const=[[1.5, 2.0]])), payload))
    out = G(CASES["mixed"][1])
    assert out.__class__ is np.ndarray and out.tolist() == [[1.5, 2.0]]
    G = load_or_none(signed(_edited(header, lambda h: h.update(
        out=None, out_const=2.5)), payload))
    assert G(CASES["mixed"][1]) == 2.5
    np.testing.assert_array_equal(G.grad(CASES["mixed"][1]), np.zeros(3))


def test_every_truncation_and_trailing_bytes(tmp_path):
    data, header, payload = saved(tmp_path, "mixed")
    for cut in range(len(data)):
        with pytest.raises(ValueError):
            ad.load(io.BytesIO(data[:cut]))
    for extra in (b"\0", data):
        with pytest.raises(ValueError, match="longer"):
            ad.load(io.BytesIO(data + extra))


def test_random_edits_with_a_correct_checksum(tmp_path):
    """Random byte edits anywhere, re-signed: each file is a ValueError or
    a tape that gives what an independent evaluation of it gives.  In a
    subprocess, so that a crash shows as a failure."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import pathlib
        import test_tapefile as T
        count = int(sys.argv[1])
        results = {{"ValueError": 0, "loaded": 0, "checked": 0}}
        for name in ("strided", "mixed", "scalar", "masked"):
            data, _, _ = T.saved(pathlib.Path({str(tmp_path)!r}), name)
            print(T.random_edits(data, T.CASES[name][1], range(count), results))
        print(results)
    """)
    out = subprocess.run([sys.executable, "-c", script, "1500"], capture_output=True,
                         text=True, timeout=600, cwd=os.getcwd())
    assert out.returncode == 0, out.stderr[-3000:]
    results = eval(out.stdout.splitlines()[-1])
    assert sum(results.values()) - results["checked"] == 4 * 1500
    assert results["loaded"] > 100 and results["checked"] > 50


def random_edits(data, x, seeds, results):
    """Load edits of data (one to three random bytes, re-signed); every one
    loads into a consistent tape or is a ValueError."""
    body = bytearray(data[:-32])
    for seed in seeds:
        rng = np.random.default_rng(seed)
        edited = bytearray(body)
        for _ in range(rng.integers(1, 4)):
            edited[rng.integers(len(edited))] = rng.integers(256)
        file = bytes(edited) + hashlib.sha256(edited).digest()
        G = load_or_none(file)
        if G is None:
            results["ValueError"] += 1
            continue
        results["loaded"] += 1
        verdict = consistent(G, file, x)
        assert verdict is not False, seed
        results["checked"] += verdict is True
    return "ok"


# -- sources: paths, file objects, and files that never end ------------------

def test_what_load_takes(tmp_path):
    data, header, payload = saved(tmp_path, "strided")
    path = tmp_path / "strided.adtape"
    x = CASES["strided"][1]
    want = ad.record(*CASES["strided"]).grad(x)
    for source in (path, str(path), os.fsencode(path)):
        np.testing.assert_array_equal(ad.load(source).grad(x), want)
    with open(path, "rb") as f:
        np.testing.assert_array_equal(ad.load(f).grad(x), want)
        assert not f.closed
    np.testing.assert_array_equal(ad.load(io.BytesIO(data)).grad(x), want)
    for bad in (123, 0, True, None, 1.5, [str(path)]):
        with pytest.raises(TypeError, match="path .str or os.PathLike. or a binary file"):
            ad.load(bad)
    with open(path, "r") as f, pytest.raises(TypeError, match="binary"):
        ad.load(f)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_that_never_end(device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    with pytest.raises(ValueError, match="not a saved"):
        ad.load(device)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
@pytest.mark.parametrize("what", ["zeros", "a recording, again and again",
                                  "a header that claims a lot",
                                  "a header that never closes"])
def test_a_fifo_that_never_ends(tmp_path, what):
    data, _, _ = saved(tmp_path, "strided")
    prefix = tapefile._PREFIX.pack
    first, then = {
        "zeros": (b"", bytes(1 << 16)),
        "a recording, again and again": (b"", data),
        "a header that claims a lot": (prefix(tapefile.MAGIC, 2, 1 << 40), b"{"),
        "a header that never closes": (prefix(tapefile.MAGIC, 2, 1 << 24),
                                       b"[" * (1 << 16)),
    }[what]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def write_forever():
        try:
            with open(fifo, "wb") as f:
                f.write(first)
                while True:
                    f.write(then)
        except OSError:               # the reader is gone: a broken pipe
            pass

    writer = threading.Thread(target=write_forever, daemon=True)
    writer.start()
    started = time.monotonic()
    with pytest.raises(ValueError):
        ad.load(fifo)
    assert time.monotonic() - started < 10
    writer.join(timeout=10)
    assert not writer.is_alive()
