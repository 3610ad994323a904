"""valgrind over a smoke run of the C core.

`python .ci/valgrind.py` runs this file's workload under two valgrind tools
at once, on the checkout it sits in:

- memcheck, which fails the run on any error or definite leak with a frame
  in our C code;
- callgrind, which says which functions of our C code ran.

"Every C file counts" means: the C files are csrc/*.c, read from the
directory, never listed here.  An error or leak is ours when a frame of any
of its stacks (where it happened, where its block was allocated or freed)
lies in a csrc/*.c file, and it is charged to the innermost such frame
(cffi's generated wrapper and its module set-up are cffi's code).
memcheck sees only code that runs, so the workload calls into every file,
and callgrind checks that it did: the run fails if a csrc/*.c file
compiles to no function of the core (nm finds none: the build left it out)
or none of its functions ran.  The table printed gives per file its errors
and how many of its functions ran, out of how many it compiles to
(a function inlined whole counts as part of its caller; one built twice,
plain and AVX2, counts once; an AVX2 dispatcher's resolver, which runs
when the core is loaded, does not count as a run).

The interpreter and its other extensions are left out: they have
allocations of their own that live until exit.  Locating frames needs the
core's debug information (-g, in Python's default CFLAGS); without it the
run fails and says so."""
import collections
import glob
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C_FILES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "csrc", "*.c")))


def workload():
    import random
    import numpy as np
    import pyautodiff as ad
    from pyautodiff.micrograd.engine import Value
    from pyautodiff.micrograd.nn import MLP

    random.seed(0)
    x, y = ad.Value(2.0), ad.Value(3.0)
    f = (x * y + y ** 2).tanh() / (x - 0.5) + x.exp().log() + abs(-y).sqrt()
    f = f + (2.0 ** x).sigmoid().sin().cos() - 1.0 / x + x ** y
    f.backward()
    with ad.Tape() as t:
        z = (x * 3.0).sigmoid().sin().cos()
        for _ in range(40_000):               # growth and a flush
            z = z * 1.0
        z.backward()
    with ad.Tape() as t:
        t._c.max_bytes = 1                    # allocation failure path
        w = ad.Value(1.0)
        zs = [w * 2.0 for _ in range(3000)]
        try:
            zs[-1].backward()
        except MemoryError:
            pass
        t._c.max_bytes = -1
        zs[-1].backward()
    model = MLP(2, [4, 1])
    for _ in range(3):
        loss = sum(((1 + -label * model([Value(a), Value(b)])).relu()
                    for (a, b), label in [((0.1, 0.2), 1), ((-0.3, 0.5), -1)]),
                   Value(0))
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data -= 0.1 * p.grad
    ad.current_tape().compact()

    # lbfgs.c: L-BFGS in C on a recording
    res = ad.minimize(lambda v: np.sum((v[1:] - v[:-1] ** 2) ** 2 * 100.0
                                       + (1.0 - v[:-1]) ** 2),
                      np.zeros(5), method="lbfgs")
    assert res.success, res.message

    # matmul.c: a small product of two matrices is computed in C
    A = np.arange(12.0).reshape(3, 4) / 10.0

    def g(v):
        return np.sum(np.tanh(A @ v.reshape(4, 1)) ** 2) + np.sum(np.sin(v[1:] * v[:-1])) \
            + np.sum(np.prod(v.reshape(2, 2) + 1.0, axis=0))

    x0, v = np.linspace(-0.5, 0.5, 4), np.ones(4)
    G = ad.record(g, x0)
    H = G.hessian(x0)                         # second.c, tangent.c
    assert np.allclose(G.hvp(x0, v), H @ v)
    assert np.isclose(ad.jvp(g)(x0, v)[1], G.grad(x0) @ v)
    assert np.allclose(G.sparse_hessian(x0).toarray(), H)     # sparsity.c
    X = np.random.default_rng(0).normal(size=(6, 4))          # many.c
    assert np.allclose(G.map(X, method="grad", threads=2)[1], G.grad(X[1]))
    assert np.allclose(G.map(X, method="hessian", threads=2)[2], G.hessian(X[2]))

    # lanes.c: a recording of scalars, mapped eight points at a time
    S = ad.record(lambda a: ad.tanh(a * 1.5) + ad.exp(a) / (a * a + 1.0), 0.3)
    P = np.linspace(-1.0, 1.0, 11)
    assert np.allclose(S.map(P, method="grad", threads=2)[3], S.grad(P[3]))

    # optim.c: an optimizer's step
    W, b = ad.Array(np.ones((3, 4))), ad.Array(np.zeros((3, 1)))
    opt = ad.optim.Adam([W, b], lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        (ad.tanh(W @ ad.Array(x0.reshape(4, 1)) + b) ** 2).sum().backward()
        opt.step()
    print("workload ok", f.data, x.grad)


def core_path():
    sys.path.insert(0, ROOT)       # this checkout's build, as the workload's PYTHONPATH
    spec = importlib.util.find_spec("pyautodiff._ad_core")
    if spec is None or not spec.origin:
        raise SystemExit(f"pyautodiff's C core is not built in {ROOT}")
    return spec.origin


def core_functions(core):
    """({C file: its functions}, {function: its C files}, the AVX2
    dispatchers' names), from the core's symbols.  A clone's suffix
    (.avx2, .default, .part.0 ...) is cut: one function, however built."""
    try:
        out = subprocess.run(["nm", "--defined-only", "--line-numbers", core],
                             capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        raise SystemExit("nm (binutils) is needed to find the C files' functions") from None
    by_file, files_of, dispatchers = collections.defaultdict(set), collections.defaultdict(set), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, name = parts[1], parts[2]
        if kind == "i":
            dispatchers.add(name)
        if kind not in "tTW" or name.endswith(".resolver") or len(parts) < 4:
            continue
        path = parts[3].rsplit(":", 1)[0]
        if os.path.basename(os.path.dirname(path)) == "csrc" and os.path.basename(path) in C_FILES:
            base = name.split(".")[0]
            by_file[os.path.basename(path)].add(base)
            files_of[base].add(os.path.basename(path))
    return by_file, files_of, dispatchers


def functions_run(callgrind_out, files_of, dispatchers):
    """{C file: its functions that ran}, read from callgrind's output, where
    a name or file appears once as "(id) text" and then as "(id)"."""
    names, run = {}, collections.defaultdict(set)
    current_file = None
    with open(callgrind_out) as f:
        for line in f:
            m = re.match(r"(c?f[lien])=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if not m:
                continue
            key, ident, text = m.groups()
            space = "fn" if key in ("fn", "cfn") else "fl"
            if text is not None:
                names[space, ident] = text
            if key == "fl":
                current_file = os.path.basename(names["fl", ident])
            elif key == "fn":
                name = names["fn", ident]
                if name in dispatchers or name.endswith(".resolver"):
                    continue
                base = name.split(".")[0]
                candidates = files_of.get(base, ())
                # a static function's name may recur in several files
                for c in ([current_file] if current_file in candidates else candidates):
                    run[c].add(base)
    return run


def shown(error):
    what = error.findtext("what") or error.findtext("xwhat/text", "")
    lines = [f"{error.findtext('kind')}: {what}"]
    for stack in error.iter("stack"):         # where, then where allocated/freed
        lines += [f"    {fr.findtext('fn', '?')} ({fr.findtext('file', fr.findtext('obj', '?'))}"
                  f":{fr.findtext('line', '?')})" for fr in stack.iter("frame")][:8]
        lines.append("    ...")
    return "\n".join(lines)


def errors_in_core(xml_file):
    """(all errors and definite leaks, {C file: how many are ours})."""
    try:
        root = ET.parse(xml_file).getroot()
    except ET.ParseError as e:
        raise SystemExit(f"memcheck's XML output is unreadable ({e}): did valgrind finish?")
    errors = [e for e in root.iter("error")
              if not e.findtext("kind", "").startswith("Leak_")
              or e.findtext("kind") == "Leak_DefinitelyLost"]
    ours = collections.Counter()
    for e in errors:
        in_csrc = [fr.findtext("file") for fr in e.iter("frame")
                   if fr.findtext("file") in C_FILES
                   and os.path.basename(fr.findtext("dir", "")) == "csrc"]
        if in_csrc:
            ours[in_csrc[0]] += 1
            if sum(ours.values()) <= 5:
                print(shown(e))
    return errors, ours


def main():
    core = core_path()
    by_file, files_of, dispatchers = core_functions(core)
    if not by_file:
        print(f"{core} has no line information: build it with -g "
              "(PYAUTODIFF_CFLAGS=-g) so errors can be placed in csrc/")
        return 1
    env = dict(os.environ, PYTHONMALLOC="malloc",
               PYTHONPATH=os.pathsep.join([ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    program = [sys.executable, os.path.abspath(__file__), "--workload"]
    with tempfile.TemporaryDirectory() as tmp:
        xml_file, calls = os.path.join(tmp, "memcheck.xml"), os.path.join(tmp, "callgrind.out")
        tools = {
            "memcheck": ["valgrind", "--leak-check=full", "--show-leak-kinds=definite",
                         "--num-callers=50", "--xml=yes", f"--xml-file={xml_file}",
                         f"--log-file={os.path.join(tmp, 'memcheck.log')}"],
            "callgrind": ["valgrind", "--tool=callgrind", f"--callgrind-out-file={calls}",
                          f"--log-file={os.path.join(tmp, 'callgrind.log')}"],
        }
        # the two runs at once: each takes about half a minute
        procs = {tool: subprocess.Popen(cmd + program, env=env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for tool, cmd in tools.items()}
        failed = False
        for tool, proc in procs.items():
            out, err = proc.communicate()
            if proc.returncode != 0 or "workload ok" not in out:
                print(f"{tool}: the workload failed\n{out}{err[-2000:]}")
                failed = True
        if failed:
            return 1
        print(out.strip())
        errors, ours = errors_in_core(xml_file)
        run = functions_run(calls, files_of, dispatchers)

    print(f"{'C file':<14} {'errors':>6}  functions run")
    unreached = []
    for name in C_FILES:
        ran = len(run.get(name, set()) & by_file.get(name, set()))
        print(f"{name:<14} {ours[name]:>6}  {ran:>4} of {len(by_file.get(name, ()))}")
        if ran == 0:
            unreached.append(name)
    print(f"valgrind: {sum(ours.values())} errors and definite leaks in pyautodiff's "
          f"C code ({len(errors)} in the whole process)")
    if unreached:
        print("never run by the workload (or not in the build): " + ", ".join(unreached))
    return 1 if ours or unreached else 0


if __name__ == "__main__":
    if "--workload" in sys.argv:
        workload()
    else:
        sys.exit(main())
