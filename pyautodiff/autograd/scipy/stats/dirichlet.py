"""autograd.scipy.stats.dirichlet: scipy.stats.dirichlet's pdf, logpdf, recorded
for Values and Arrays (pyautodiff.scipy_stats)."""
from ....scipy_stats import dirichlet as _distribution

pdf = _distribution.pdf
logpdf = _distribution.logpdf
