"""autograd.scipy.stats.chi2: scipy.stats.chi2's pdf, logpdf, cdf, recorded
for Values and Arrays (pyautodiff.scipy_stats)."""
from ....scipy_stats import chi2 as _distribution

pdf = _distribution.pdf
logpdf = _distribution.logpdf
cdf = _distribution.cdf
