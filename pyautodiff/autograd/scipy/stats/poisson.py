"""autograd.scipy.stats.poisson: scipy.stats.poisson's pmf, logpmf, cdf, recorded
for Values and Arrays (pyautodiff.scipy_stats)."""
from ....scipy_stats import poisson as _distribution

pmf = _distribution.pmf
logpmf = _distribution.logpmf
cdf = _distribution.cdf
