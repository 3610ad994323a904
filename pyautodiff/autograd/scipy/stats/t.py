"""autograd.scipy.stats.t: scipy.stats.t's pdf, logpdf, cdf, logcdf, recorded
for Values and Arrays (pyautodiff.scipy_stats)."""
from ....scipy_stats import t as _distribution

pdf = _distribution.pdf
logpdf = _distribution.logpdf
cdf = _distribution.cdf
logcdf = _distribution.logcdf
