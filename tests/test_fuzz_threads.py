"""The threads fuzzer (pyautodiff/testing/fuzz_threads.py; ``python -m
pyautodiff.testing.fuzz --kind threads`` runs many more): nested programs
whose work is spread over threads agree with the Taylor-jet reference, and
programs that write a traced value into an ndarray raise DetachError."""
import random

from helpers import fuzz_size
from pyautodiff.testing import fuzz_nested, fuzz_threads


def _quiet(*args):
    pass


def test_random_programs_have_no_disagreement():
    n = fuzz_size(40)
    tally = fuzz_threads.fuzz_threads(n, seed=3, out=_quiet)
    c = tally.counts
    assert c["disagree"] == 0, tally.disagreements[0]
    assert c["agree"] >= 0.75 * n


def test_the_rewrites_do_what_they_say():
    rng = random.Random(1)
    base = fuzz_nested.random_program(rng, 3, seed="t")
    threaded = fuzz_threads.threaded(base, random.Random(2))
    assert "_in_thread(" in threaded.source
    written = fuzz_threads.writing(base, random.Random(2))
    assert written.source.count("_written(") == 1
    assert fuzz_threads.check_writes(written) == ("agree", None)
    # the reference runs the same source with no threads, and agrees
    assert fuzz_nested.check(threaded)[0] in ("agree", "kink", "range")
