"""Differential fuzzing of the tape against the independent oracles.

``python -m pyautodiff.testing.fuzz [--kind scalars|arrays|second|nested|surface|sparse|threads|all]
[--examples N | --count N] [--seed S] [--strict]`` (``python -m bench.fuzz`` in a checkout) runs N
random programs of each kind and reports how many were tried, skipped and
how many disagreed; the exit status is 1 if any disagreed.  The kinds:

- scalars (fuzz_scalars.py): Value programs against dual numbers, and C
  replays at the recorded and at new inputs;
- arrays (fuzz_arrays.py): Array and mixed programs against the NumPy
  forward-mode reference (arrays.py), and C replays;
- second (fuzz_second.py): Hessian-vector and Jacobian-vector products of
  the scalar programs against hyper-dual numbers, eagerly and replayed;
- nested (fuzz_nested.py): derivatives of derivatives of any order (random
  nestings of grad, jvp, vjp, hvp, jacobian, hessian, with closures) of
  scalar and small-array programs against Taylor-series jets (taylor.py).
  A nesting pyautodiff does not support (NotImplementedError) is counted
  apart, per nesting shape, and fails the run only with --strict; --nesting
  'grad(grad(f))' draws only that nesting;
- surface (fuzz_surface.py): programs of NumPy calls (reductions, shapes,
  products, np.linalg ...) on pyautodiff.autograd against HIPS autograd,
  refereed by central differences, to third order and replayed;
- sparse (fuzz_sparse.py): sparsity patterns, sparse Jacobians and
  Hessians (eager and recorded) and their colourings against the dense
  ad.jacobian / ad.hessian and independent checks of the colourings;
- threads (fuzz_threads.py): the nested programs with their work spread
  over threads (Thread, ThreadPoolExecutor, asyncio.to_thread) against the
  jets, and with a traced value written into an ndarray, which must raise
  DetachError.
("all" runs scalars, arrays and second.)
"""
import argparse
import random
import sys

from . import (fuzz_arrays, fuzz_nested, fuzz_scalars, fuzz_second, fuzz_sparse,
               fuzz_surface, fuzz_threads)


def main(argv=None, prog="python -m pyautodiff.testing.fuzz"):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--examples", "--count", type=int, default=10_000,
                    help="programs of each kind (default 10000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kind", choices=("scalars", "arrays", "second", "nested", "surface",
                                       "sparse", "threads", "all"),
                    default="scalars",
                    help="scalar Value programs (default), array programs "
                         "(fuzz_arrays.py), second derivatives of scalar "
                         "programs (fuzz_second.py), nested derivatives "
                         "(fuzz_nested.py), NumPy's surface against autograd "
                         "(fuzz_surface.py), sparse derivatives against dense "
                         "ones (fuzz_sparse.py), threads and writes into arrays "
                         "(fuzz_threads.py), or all but nested, surface, "
                         "sparse and threads")
    ap.add_argument("--nesting", action="append", metavar="SHAPE",
                    help="nested: draw only this nesting, e.g. 'grad(grad(f))' "
                         "(outermost first; repeatable)")
    ap.add_argument("--strict", action="store_true",
                    help="nested: a nesting that raises NotImplementedError "
                         "fails the run too")
    ap.add_argument("--arrays", action="store_const", const="arrays", dest="kind",
                    help="the same as --kind arrays")
    ap.add_argument("--max-steps", type=int, default=None,
                    help="most steps of a program (default 30 scalar, 12 array)")
    ap.add_argument("--program", type=int, metavar="SEED",
                    help="print the array program of this seed (as reported "
                         "with a disagreement) and what its checks find")
    cfg = ap.parse_args(argv)
    if cfg.program is not None:
        program = fuzz_arrays.random_program(random.Random(cfg.program),
                                             cfg.max_steps or 12)
        print(program)
        print(fuzz_arrays.check(program))
        return 0
    bad = 0
    if cfg.kind in ("scalars", "all"):
        bad += fuzz_scalars.fuzz_scalars(cfg.examples, cfg.seed, cfg.max_steps or 30)[2]
    if cfg.kind in ("arrays", "all"):
        bad += fuzz_arrays.fuzz(cfg.examples, cfg.seed, cfg.max_steps or 12)[2]
    if cfg.kind in ("second", "all"):
        bad += fuzz_second.fuzz_second(cfg.examples, cfg.seed, cfg.max_steps or 20)[2]
    if cfg.kind == "nested":            # not in "all": most nestings raise today
        nestings = [fuzz_nested.parse_nesting(n) for n in cfg.nesting or ()]
        bad += fuzz_nested.fuzz_nested(cfg.examples, cfg.seed, cfg.max_steps or 5,
                                       strict=cfg.strict, nestings=nestings
                                       ).failures(cfg.strict)
    if cfg.kind == "surface":
        bad += fuzz_surface.fuzz_surface(cfg.examples, cfg.seed, cfg.max_steps or 4
                                         )[0]["disagree"]
    if cfg.kind == "sparse":
        bad += fuzz_sparse.fuzz_sparse(cfg.examples, cfg.seed)["disagreed"]
    if cfg.kind == "threads":
        bad += fuzz_threads.fuzz_threads(cfg.examples, cfg.seed, cfg.max_steps or 4
                                         ).failures(False)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
