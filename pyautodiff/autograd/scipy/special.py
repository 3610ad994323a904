"""autograd.scipy.special: scipy.special's functions, recorded for Values and
Arrays (pyautodiff.scipy_special); on plain numbers SciPy's own."""
from ...scipy_special import (beta, betainc, betaln, digamma, erf, erfc, erfcinv,  # noqa: F401
                              erfinv, expit, gamma, gammainc, gammaincc, gammaln,
                              gammasgn, i0, i1, iv, ive, j0, j1, jn, log_ndtr,
                              logit, logsumexp, multigammaln, ndtr, ndtri, polygamma,
                              psi, rgamma, stdtr, xlog1py, xlogy, y0, y1, yn)
