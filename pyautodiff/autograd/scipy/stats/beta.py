"""autograd.scipy.stats.beta: scipy.stats.beta's pdf, logpdf, cdf, recorded
for Values and Arrays (pyautodiff.scipy_stats)."""
from ....scipy_stats import beta as _distribution

pdf = _distribution.pdf
logpdf = _distribution.logpdf
cdf = _distribution.cdf
