"""autograd.scipy.stats: one module per distribution (norm, t, gamma, beta,
chi2, poisson, dirichlet, multivariate_normal), each holding that
distribution's functions of pyautodiff.scipy_stats."""
from . import beta, chi2, dirichlet, gamma, multivariate_normal, norm, poisson, t  # noqa: F401
