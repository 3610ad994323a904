"""autograd.scipy.stats.multivariate_normal: scipy.stats.multivariate_normal's pdf, logpdf, entropy, recorded
for Values and Arrays (pyautodiff.scipy_stats)."""
from ....scipy_stats import multivariate_normal as _distribution

pdf = _distribution.pdf
logpdf = _distribution.logpdf
entropy = _distribution.entropy
