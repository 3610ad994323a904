"""The sparse-derivative fuzzer (pyautodiff/testing/fuzz_sparse.py;
``python -m bench.fuzz --kind sparse`` runs many more): random programs'
patterns, sparse values (eager and recorded) and colourings against the
dense derivatives; and that it fails on a planted wrong pattern or
colouring."""
import numpy as np
import pytest

from pyautodiff import sparse
from helpers import fuzz_size
from pyautodiff.testing import fuzz, fuzz_sparse

pytest.importorskip("scipy.sparse")


def _quiet(*args):
    pass


def test_a_short_run_agrees():
    n = fuzz_size(60)
    counts = fuzz_sparse.fuzz_sparse(n, seed=3, out=_quiet)
    assert counts["tried"] + counts["skipped"] == n
    assert counts["disagreed"] == 0
    assert counts["agreed"] == counts["tried"] >= 0.8 * n


def test_the_command_line_profile(capsys):
    assert fuzz.main(["--kind", "sparse", "--count", "20", "--seed", "4"]) == 0
    out = capsys.readouterr().out
    assert "sparse programs tried" in out and "0 disagreed" in out


def _drop_last_nonzero(take):
    """_take with the last nonzero of the last non-empty row left out."""
    def wrong(ptr, idx, nnz, rows):
        p, q = take(ptr, idx, nnz, rows)
        filled = np.flatnonzero(np.diff(p))
        if len(filled):
            r = filled[-1]
            q = np.delete(q, p[r + 1] - 1)
            p = p.copy()
            p[r + 1:] -= 1
        return p, q
    return wrong


def test_a_dropped_nonzero_is_caught(monkeypatch, capsys):
    monkeypatch.setattr(sparse, "_take", _drop_last_nonzero(sparse._take))
    counts = fuzz_sparse.fuzz_sparse(20, seed=3, out=_quiet)
    assert counts["disagreed"] >= 10
    assert fuzz.main(["--kind", "sparse", "--count", "6", "--seed", "3"]) == 1
    assert "is not in the pattern" in capsys.readouterr().out


def test_a_wrong_colouring_is_caught(monkeypatch):
    # one colour for every column: values summed together, and the check
    # of the colouring fails wherever a row has two nonzeros
    def one_colour(p, q, nrows, ncols):
        return np.zeros(ncols, np.int64), 1
    monkeypatch.setattr(sparse, "color_columns", one_colour)
    found = [fuzz_sparse.check_program(np.random.default_rng(seed), 6, hessian=False)
             for seed in range(8)]
    assert sum(bool(problems) for problems in found) >= 4
    assert any("have colours" in p for problems in found for p in problems)


def test_a_wrong_star_colouring_is_caught(monkeypatch):
    # two colours alternating: proper on a path, never a star colouring
    # of one with four vertices
    monkeypatch.setattr(sparse, "color_star",
                        lambda p, q, n: (np.arange(n, dtype=np.int64) % 2, min(n, 2)))
    found = [fuzz_sparse.check_program(np.random.default_rng(1000 + seed), 6, hessian=True)
             for seed in range(8)]
    assert sum(bool(problems) for problems in found) >= 4
    assert any("colour" in p for problems in found for p in problems)
