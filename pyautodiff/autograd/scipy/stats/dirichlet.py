"""autograd.scipy.stats.dirichlet: scipy.stats.dirichlet's pdf, logpdf, recorded
for Values and Arrays (pyautodiff.scipy_stats)."""
from ....scipy_stats import dirichlet as _distribution

pdf = _distribution.pdf
logpdf = _distribution.logpdf


def rvs(alpha, size=1, random_state=None):
    """scipy.stats.dirichlet.rvs: samples, of plain parameters (a sample
    has no derivative in alpha here)."""
    from ...extend import _traced
    if _traced(alpha):
        raise NotImplementedError("scipy.stats.dirichlet.rvs: samples are not "
                                  "differentiable in alpha")
    import scipy.stats
    return scipy.stats.dirichlet.rvs(alpha, size=size, random_state=random_state)
