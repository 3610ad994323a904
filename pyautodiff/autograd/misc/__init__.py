"""autograd.misc: flatten (nests as flat vectors), const_graph (a function
recorded once and replayed), and the optimizers of misc.optimizers."""
from .flatten import flatten
from .tracers import const_graph
from . import optimizers  # noqa: F401  (ag.misc.optimizers.adam)

__all__ = ["flatten", "const_graph"]
