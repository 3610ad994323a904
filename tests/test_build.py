"""The compiled core: version check, missing build, the op table from C."""
import subprocess
import sys
import textwrap

import pytest

import pyautodiff as ad
from pyautodiff import _core


def run(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)


def test_stale_build_is_a_clear_import_error():
    proc = run("""
        import sys, types
        fake = types.ModuleType("pyautodiff._version")
        fake.__version__ = "0.0.0-other"      # as if the package moved on
        sys.modules["pyautodiff._version"] = fake
        try:
            import pyautodiff
        except ImportError as e:
            print("ImportError:", e)
    """)
    assert "ImportError:" in proc.stdout, proc.stderr
    assert "stale" in proc.stdout and "pip install" in proc.stdout


def test_missing_build_is_a_clear_import_error():
    proc = run("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "pyautodiff._ad_core":
                    raise ImportError("blocked for the test")
        sys.meta_path.insert(0, Block())
        try:
            import pyautodiff
        except ImportError as e:
            print("ImportError:", e)
    """)
    assert "not built" in proc.stdout, (proc.stdout, proc.stderr)


def test_op_table_comes_from_the_c_enum():
    names = _core.OPS
    assert names["LEAF"] == 0 and len(names) == _core.NUM_OPS
    assert sorted(names.values()) == list(range(_core.NUM_OPS))
    for name, code in names.items():
        assert _core.OP_NAMES[code] == name.lower()
        assert _core.OP_ARITY[code] in (0, 1, 2)


def _csrc_module(name):
    """A build-time script of csrc/, imported from the checkout."""
    import importlib
    import os
    csrc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "csrc")
    sys.path.insert(0, csrc)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def test_the_op_enum_is_written_out_from_the_op_table():
    """cffi expands no macros, so csrc/opcodes.h holds the op enum written
    out from the table in csrc/rules.h by csrc/gen_opcodes.py: regenerated,
    it must be the file checked in.  The script reads the table as the
    compiler does: the same ops, names, arities and kinds."""
    gen = _csrc_module("gen_opcodes")
    with open(gen.RULES) as f:
        rules = f.read()
    with open(gen.OUTPUT) as f:
        assert f.read() == gen.render(rules), "run python csrc/gen_opcodes.py"
    from pyautodiff._core import ffi, lib
    kinds = ffi.typeof("enum ad_op_kind").relements
    rows = gen.rows(rules)
    assert len(rows) == _core.NUM_OPS
    for code, (name, cname, arity, kind, _) in enumerate(rows):
        assert _core.OPS[name[3:]] == code
        assert (_core.OP_NAMES[code], _core.OP_ARITY[code]) == (cname, arity)
        assert lib.ad_op_kind(code) == kinds["AD_KIND_" + kind]
    assert lib.ad_op_kind(_core.NUM_OPS) == lib.ad_op_kind(-1) == -1


def test_c_rejects_malformed_records_without_crashing():
    import struct
    from pyautodiff._core import ffi, lib
    c = _core.new_tape()
    pack = struct.Struct(_core.RECORD_FORMAT).pack
    bad = [
        pack(99, -1, -1, 0, 0.0, 0.0),          # unknown op
        pack(_core.OPS["MUL"], 0, 5, 0, 0.0, 0.0),   # operand not earlier
        pack(_core.OPS["TANH"], -3, -1, 0, 0.0, 0.0),
        pack(_core.OPS["LEAF"], 0, -1, 0, 0.0, 0.0),  # a leaf has no operands
    ]
    for rec in bad:
        buf = bytearray(pack(_core.OPS["LEAF"], -1, -1, 0, 1.0, 1.0) + rec)
        with pytest.raises(ValueError):
            _core.check(lib.ad_tape_append(c, ffi.from_buffer("ad_record[]", buf), 2), c)
        assert c.n == 0            # a bad batch stores nothing
    with pytest.raises(IndexError):
        _core.check(lib.ad_backward(c, 1, ffi.new("int64_t[]", [5]),
                                    ffi.new("double[]", [1.0]), 0, 0), c)
    with pytest.raises(IndexError):
        _core.check(lib.ad_forward(c, 0, 7, 0), c)


def test_forward_replay_reproduces_recorded_values_bit_for_bit():
    from pyautodiff._core import ffi, lib
    with ad.Tape() as t:
        x, y = ad.Value(0.3), ad.Value(1.7)
        z = x
        for k in range(50):
            z = (z * y + x).tanh() - z / y + (z ** 2).sqrt() + 2.0 ** x
            z = z.sigmoid() * 3.0 - abs(z).log().exp() + z.sin() * z.cos()
        t.flush()
        n = t.nflushed
        recorded = list(ffi.unpack(t._c.val, n))
        for i in range(n):            # wipe every non-leaf value
            if t._c.op[i] != _core.OPS["LEAF"]:
                t._c.val[i] = 0.0
        _core.check(lib.ad_forward(t._c, 0, n, 0), t._c)
        assert list(ffi.unpack(t._c.val, n)) == recorded
        assert recorded[z._i] == z.data


def test_draw_dot():
    pytest.importorskip("graphviz")
    x = ad.Value(2.0, label="x")
    y = (x * 3.0 + x).tanh()
    y.label = "y"
    dot = ad.draw_dot(y)
    src = dot.source
    assert "x | data 2.0000" in src and "tanh" in src and "*" in src
    assert src.count("shape=record") == 4      # x, x*3, +, tanh


def test_replay_of_a_square_matches_pythons_pow_bit_for_bit():
    # x*x and pow(x, 2) differ in the last bit for some x; the C sweeps must
    # compute what Python computed (found by the differential fuzzer)
    from pyautodiff._core import ffi, lib
    with ad.Tape() as t:
        x = ad.Value(-0.37180729926431066)
        y = x ** 2
        t.flush()
        _core.check(lib.ad_forward(t._c, 0, t.nflushed, 0), t._c)
        assert t._c.val[y._i] == (-0.37180729926431066) ** 2 == y.data


def test_the_gil_is_kept_only_where_the_build_says(tmp_path):
    """csrc/build_ffi.py keeps the GIL for the calls in KEEP_GIL by
    redefining the two macros cffi brackets each call with.  That rests on
    how cffi writes its wrappers: the redefinition must come after
    Python.h and before the first wrapper, each kept call's wrapper must
    be named _cffi_f_<name>, and no wrapper may hand the GIL back in
    between (Py_BLOCK_THREADS would restore a thread state never saved)."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "csrc"))
    try:
        import build_ffi
    finally:
        sys.path.pop(0)
    path = tmp_path / "emitted.c"
    build_ffi.ffibuilder.emit_c_code(str(path))
    code = path.read_text()
    first_wrapper = code.index("static PyObject *\n_cffi_f_")
    assert code.index("#include <Python.h>") < code.index("#define AD_KEEPS_GIL") \
        < first_wrapper
    assert build_ffi.KEEP_GIL
    for name in build_ffi.KEEP_GIL:
        wrapper = code.index(f"_cffi_f_{name}(PyObject *self")
        body = code[wrapper:code.index("\n}\n", wrapper)]
        assert "Py_BEGIN_ALLOW_THREADS" in body and "Py_END_ALLOW_THREADS" in body
    for word in ("Py_BLOCK_THREADS", "Py_UNBLOCK_THREADS"):
        assert word not in code[first_wrapper:]
    # and every other call still releases it: as many brackets as wrappers
    wrappers = code.count("static PyObject *\n_cffi_f_")
    assert code[first_wrapper:].count("Py_BEGIN_ALLOW_THREADS") == wrappers
