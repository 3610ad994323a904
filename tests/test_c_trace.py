"""The C core's trace switch (-DAD_TRACE, csrc/internal.h): every sweep
prints one line per entry it computes, scalar and array entries alike.

The switch is compile-time, so the test builds a copy of the package with
it (unoptimised, a few seconds) and runs a recording in a subprocess,
reading the lines its sweeps print to stderr."""
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the tests share one build (the module's fixture): with pytest-xdist's
# --dist loadgroup, one worker runs them all and builds once
pytestmark = pytest.mark.xdist_group("c_trace")

PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import pyautodiff as ad

    def f(x, A):
        s = (x * 2.0).sin() + x              # scalar entries
        B = np.tanh(A * s)                    # arrays, a scalar operand
        C = B.reshape(-1)[1:3]                # a move and a gather
        return (C * C).sum() + np.max(A) * s  # reductions

    x0, A0 = 0.3, np.array([[0.5, -1.0], [2.0, 0.25]])
    F = ad.record(f, x0, A0, argnum=(0, 1))
    print(F)

    def section(name):
        sys.stdout.flush()
        sys.stderr.write("== " + name + "\\n")
        sys.stderr.flush()

    section("value")
    print("value", repr(F(x0, A0)))
    section("grad")
    print("dx", repr(F.grad(x0, A0)[0]))
    section("hvp")
    print("hvp", repr(F.hvp(x0, A0, (1.0, np.ones((2, 2))))[0]))
    sys.stdout.flush()
""")

LINE = re.compile(r"^(fwd|rev|tan|2nd) +(\d+) (\w+) +(-?\d+) +(-?\d+)  (.*)$")


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory):
    if not os.path.exists(os.path.join(ROOT, "csrc", "build_ffi.py")):
        pytest.skip("needs a source checkout")
    work = tmp_path_factory.mktemp("traced")
    skip = shutil.ignore_patterns("*.so", "*.o", "__pycache__", "_ad_core.c")
    for part in ("csrc", "pyautodiff"):
        shutil.copytree(os.path.join(ROOT, part), work / part, ignore=skip)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYAUTODIFF_", "LD_PRELOAD"))}
    env["PYAUTODIFF_CFLAGS"] = "-O0 -DAD_TRACE -DAD_NO_CLONES"
    build = subprocess.run([sys.executable, "csrc/build_ffi.py"], cwd=work,
                           env=env, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    env.pop("PYAUTODIFF_CFLAGS")
    env["PYTHONPATH"] = str(work)
    run = subprocess.run([sys.executable, "-c", PROGRAM], cwd=work, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout, run.stderr


def entries(stdout):
    """index -> op name, from print(F)'s listing of the tape."""
    ops = {}
    for line in stdout.splitlines():
        m = re.match(r"^ +(\d+) (\w+)", line)
        if m:
            ops[int(m.group(1))] = m.group(2)
    return ops


def sections(stderr):
    """section -> sweep -> [(index, op, rest of the line)] in order."""
    out, current = {}, None
    for line in stderr.splitlines():
        if line.startswith("== "):
            current = out.setdefault(line[3:], {})
        elif current is not None:
            m = LINE.match(line)
            assert m, f"not a trace line: {line!r}"
            current.setdefault(m.group(1), []).append(
                (int(m.group(2)), m.group(3), m.group(6)))
    return out


def test_every_sweep_prints_every_entry_it_computes(traced_run):
    stdout, stderr = traced_run
    ops = entries(stdout)
    n = len(ops)
    assert n == 14 and sorted(ops) == list(range(n))
    ops_of = [ops[i] for i in range(n)]
    leaves = [i for i in range(n) if ops[i] == "leaf"]
    inner = [i for i in range(n) if i not in leaves]
    got = sections(stderr)
    expected = {
        "value": {"fwd": list(range(n))},
        "grad": {"fwd": list(range(n)), "rev": list(range(n))[::-1]},
        # forward mode and forward-over-reverse: the leaves are seeded
        "hvp": {"fwd": list(range(n)), "tan": inner, "2nd": inner[::-1]},
    }
    for name, sweeps in expected.items():
        for sweep, order in sweeps.items():
            lines = got[name][sweep]
            assert [i for i, _, _ in lines] == order, (name, sweep)
            assert [op for _, op, _ in lines] == [ops_of[i] for i in order]


def test_a_line_shows_the_entry_and_what_the_sweep_computed(traced_run):
    stdout, stderr = traced_run
    got = sections(stderr)
    results = dict(line.split(" ", 1) for line in stdout.splitlines()
                   if line.startswith(("value ", "dx ", "hvp ")))
    # an array entry shows its shape and elements: A * s is 2x2, and
    # x's tensor was A0 itself
    fwd = {i: rest for i, _, rest in got["value"]["fwd"]}
    assert fwd[1] == "(2,2)  val 0.5 -1 2 0.25"
    assert fwd[5].startswith("(2,2)  val ")
    assert fwd[8].startswith("(2)  val ")        # the gather's two elements
    assert fwd[10].startswith("()  val ")        # a sum to a 0-d array
    root = fwd[13]
    assert float(root.split()[2]) == pytest.approx(float(results["value"]),
                                                   rel=1e-5)
    # x (a scalar, entry 0) gets the gradient, and in the second-order
    # sweep the entries above it their adjoint tangents
    rev = {i: rest for i, _, rest in got["grad"]["rev"]}
    assert rev[0].startswith("val 0.3  adj ")
    assert float(rev[0].split()[-1]) == pytest.approx(float(results["dx"]),
                                                      rel=1e-5)
    assert rev[1].startswith("(2,2)  val 0.5 -1 2 0.25  adj ")
    second = {i: rest for i, _, rest in got["hvp"]["2nd"]}
    assert "  adj " in second[2] and "  dadj " in second[2]
    tan = {i: rest for i, _, rest in got["hvp"]["tan"]}
    assert tan[2] == "val 0.6  tan 2"            # d(2x) along dx = 1
