"""Independent oracles for pyautodiff's derivatives, the gradient checker
built on them, and the fuzzers and baseline engine that use them.

``check_grad(f, *args, modes=("rev",), order=1)`` (also ``ad.check_grad``)
checks ``ad.grad``, and with ``modes=("rev", "fwd")`` / ``order=2``
``ad.jvp`` / ``ad.hvp``, along every entry of the arguments, against
central differences and against dual / hyper-dual numbers::

    import numpy as np
    from pyautodiff.testing import check_grad
    check_grad(lambda x: np.sum(np.sin(x) ** 2), np.array([0.3, -1.2]), order=2)

The oracles share no code with the tape.  Every elementwise op's value and
first and second partials are one row of one table written from the math
(``rules.py``; its rows are named after the C ops, and a test checks that
every op of the C enum has a row or is listed as not elementwise), and
three forward-mode methods read those rows:

- ``dual.py``: dual numbers (first derivatives), ``Dual`` and ``dual_grad``;
- ``hyperdual.py``: hyper-dual numbers (exact second derivatives);
- ``arrays.py``: a NumPy reference for array programs, ``Reference``, with
  NumPy's broadcasting, whose reductions, reshapes, indexing, joins, matrix
  products and logsumexp are written there from their math.

Derivatives of any order, and of derivatives, have a fourth method,
written from the math of power series and not from the table:
``taylor.py``, truncated Taylor series ("jets") nested to any depth, and
``taylor_api.py``, the functional API (grad, jvp, vjp, hvp, jacobian,
hessian) computed by them.

The differential fuzzers run random programs on the tape and on the
oracles: ``python -m pyautodiff.testing.fuzz --kind all`` (fuzz.py;
fuzz_scalars.py, fuzz_arrays.py and fuzz_second.py are the three kinds),
``--kind nested`` (fuzz_nested.py: nestings of the functional API
against jets) and ``--kind sparse`` (fuzz_sparse.py: sparse Jacobians
and Hessians against dense ones), also ``python -m bench.fuzz`` in a
checkout.  ``pure.py`` is a pure-Python engine with micrograd's
semantics, the baseline of ``python -m pyautodiff`` and of the
benchmarks.
"""
from .check import check_grad
from .dual import Dual, dual_grad
from .hyperdual import HyperDual, hyperdual_derivatives
from .rules import RULES

__all__ = ["check_grad", "Dual", "dual_grad", "HyperDual", "hyperdual_derivatives",
           "RULES"]
