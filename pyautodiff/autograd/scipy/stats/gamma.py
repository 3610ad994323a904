"""autograd.scipy.stats.gamma: scipy.stats.gamma's pdf, logpdf, cdf, recorded
for Values and Arrays (pyautodiff.scipy_stats)."""
from ....scipy_stats import gamma as _distribution

pdf = _distribution.pdf
logpdf = _distribution.logpdf
cdf = _distribution.cdf
