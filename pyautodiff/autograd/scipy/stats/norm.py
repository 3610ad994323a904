"""autograd.scipy.stats.norm: scipy.stats.norm's pdf, logpdf, cdf, logcdf, sf, logsf, recorded
for Values and Arrays (pyautodiff.scipy_stats)."""
from ....scipy_stats import norm as _distribution

pdf = _distribution.pdf
logpdf = _distribution.logpdf
cdf = _distribution.cdf
logcdf = _distribution.logcdf
sf = _distribution.sf
logsf = _distribution.logsf
