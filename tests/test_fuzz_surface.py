"""The NumPy-surface fuzzer: random programs of NumPy calls on the drop-in
agree with HIPS autograd or, where they differ, with central differences;
and the fuzzer does find a wrong derivative."""
import random

import numpy as np
import pytest

pytest.importorskip("autograd")

from helpers import fuzz_size  # noqa: E402
from pyautodiff.testing import fuzz_surface  # noqa: E402


def test_random_programs_agree():
    n = fuzz_size(60, long=1500)
    counts, found = fuzz_surface.fuzz_surface(n, seed=11, out=lambda s: None)
    bad = [(o, str(p), d) for o, p, d in found if o in ("disagree", "unsupported")]
    assert not bad, bad[:3]
    # every program is checked, and a good share against autograd itself
    # (the rest, whose functions autograd lacks, by central differences)
    assert counts["agree"] + counts["central"] + counts["autograd"] == n
    assert counts["agree"] > n // 3


def test_every_function_is_drawn():
    drawn = set()
    for k in range(400):
        drawn.update(fuzz_surface.random_program(random.Random(f"9/{k}")).names)
    assert drawn == {e.name for e in fuzz_surface.CATALOGUE}


def test_programs_are_valid_numpy():
    p = fuzz_surface.random_program(random.Random("5/1"), seed="5/1")
    value = p.function(np)(p.x0)
    assert np.ndim(value) == 0 and np.isfinite(value)


def test_a_wrong_derivative_is_found(monkeypatch):
    """Planted: tanh with its right value and a slope 1% too steep."""
    import pyautodiff as ad
    import pyautodiff.autograd.numpy as pnp

    def slope(out):
        return 1.01 * (1.0 - out * out)

    wrong = ad.custom_op(np.tanh, lambda g, out, x: (g * slope(out),),
                         jvp=lambda ts, out, x: ts[0] * slope(out))
    monkeypatch.setattr(pnp, "tanh", wrong)
    program = next(p for p in (fuzz_surface.random_program(random.Random(f"7/{k}"), seed=k)
                               for k in range(2000)) if p.names[-1:] == ["tanh"])
    outcome, detail = fuzz_surface.check(program)
    assert outcome == "disagree", (outcome, detail, str(program))
    assert detail.startswith("gradient"), detail
