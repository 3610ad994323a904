"""valgrind memcheck over a smoke run of the C core.

`python .ci/valgrind.py` runs this file's workload under valgrind and fails
if any error or definite leak has a frame in pyautodiff's C code.  The
interpreter and its other extensions are left out: they have allocations
of their own that live until exit."""
import os
import re
import subprocess
import sys
import tempfile

OUR_CODE = re.compile(r"\b(ad_[a-z_]+|reverse_entry|reverse_array|forward_array|hands_float|shrink|grow|append) "
                      r"\((tape|reverse|forward|opinfo|blocks|blockcache)\.c:"
                      r"|\b[a-z_]+ \(lbfgs\.c:")


def workload():
    import random
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
    import numpy as np                        # L-BFGS in C on a recording
    res = ad.minimize(lambda v: np.sum((v[1:] - v[:-1] ** 2) ** 2 * 100.0
                                       + (1.0 - v[:-1]) ** 2),
                      np.zeros(5), method="lbfgs")
    assert res.success, res.message
    print("workload ok", f.data, x.grad)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "valgrind.log")
        cmd = ["valgrind", "--leak-check=full", "--show-leak-kinds=definite",
               "--num-callers=50", f"--log-file={log}",
               sys.executable, __file__, "--workload"]
        env = dict(os.environ, PYTHONMALLOC="malloc")
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        print(proc.stdout.strip())
        with open(log) as f:
            text = f.read()
    if proc.returncode != 0 or "workload ok" not in proc.stdout:
        print(proc.stderr[-2000:])
        return 1
    # one record per error or leak: blocks separated by an empty ==PID== line
    records = re.split(r"\n==\d+== \n", text)
    ours = [r for r in records
            if OUR_CODE.search(r) and ("Invalid" in r or "uninitialised" in r
                                       or "definitely lost" in r
                                       or "Mismatched" in r)]
    summary = re.search(r"ERROR SUMMARY: (\d+) errors", text)
    print(f"valgrind: {len(records)} records read, {len(ours)} in pyautodiff's "
          f"C code (interpreter total: {summary.group(1) if summary else '?'} errors)")
    for r in ours[:5]:
        print(r)
    return 1 if ours else 0


if __name__ == "__main__":
    if "--workload" in sys.argv:
        workload()
    else:
        sys.exit(main())
