"""``ad.nn``: modules and losses on batched ``ad.Array``s.

A batch is an Array whose first axis runs over the examples: ``Linear``
maps (N, nin) to (N, nout) as ``x @ W + b``, and every loss is a mean over
the batch, returning a one-element Array to call ``backward()`` on.  The
whole forward pass of a batch is a handful of tape entries, whatever N is.

(``pyautodiff.micrograd.nn`` is micrograd's scalar-per-neuron drop-in;
this module is the array-based one.)
"""
import numpy as np

from . import functions
from .array import Array, log_softmax, matmul
from .value import Value

__all__ = ["Module", "Linear", "Sequential", "MLP", "mse_loss",
           "cross_entropy", "hinge_loss"]


class Module:
    """A function with parameters.  Subclasses define ``forward``; calling
    the module calls it.  ``parameters()`` finds the Arrays and Values held
    in the module's attributes and in the modules held there, also inside
    lists, tuples and dicts (nested as deep as they go), in attribute order
    and then container order, each once; override it to say otherwise."""

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} defines no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def parameters(self):
        found, seen = [], {id(self): self}
        _collect(vars(self).values(), found, seen)
        return found

    def zero_grad(self):
        for p in self.parameters():
            p.zero_grad()


def _collect(items, found, seen):
    """Append to found the parameters in items not seen yet.  Seen is by
    identity (id -> the object, which keeps the id from being reused during
    the walk): == on Arrays is elementwise, and two equal parameters are
    still two.  A module or container seen before (shared, or a reference
    back up) is not walked again."""
    for item in items:
        if id(item) in seen:
            continue
        if isinstance(item, (Array, Value)):
            seen[id(item)] = item
            found.append(item)
        elif isinstance(item, (Module, list, tuple, dict)):
            seen[id(item)] = item
            _collect(_contents(item), found, seen)


def _contents(item):
    if isinstance(item, Module):
        # a module's own attributes are walked with the same seen, so that
        # a reference back up ends the walk; one that overrides parameters()
        # is asked instead
        if type(item).parameters is not Module.parameters:
            return item.parameters()
        return vars(item).values()
    return item.values() if isinstance(item, dict) else item


def _generator(rng):
    """rng as a NumPy Generator: a Generator itself, or a seed (None for a
    fresh, unpredictable one)."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


class Linear(Module):
    """``x @ W + b`` with W of shape (nin, nout) and b of shape (nout,).

    Both start uniform in [-1/sqrt(nin), 1/sqrt(nin)], as torch's Linear
    does; ``rng`` (a NumPy Generator or a seed) makes them reproducible.
    """

    def __init__(self, nin, nout, bias=True, rng=None):
        if nin < 1 or nout < 1:
            raise ValueError(f"Linear({nin}, {nout}): sizes must be positive")
        gen = _generator(rng)
        bound = 1.0 / np.sqrt(nin)
        self.W = Array(gen.uniform(-bound, bound, size=(nin, nout)))
        self.b = Array(gen.uniform(-bound, bound, size=nout)) if bias else None

    def forward(self, x):
        out = matmul(x, self.W)
        return out if self.b is None else out + self.b

    def __repr__(self):
        nin, nout = self.W.shape
        return f"Linear({nin}, {nout}, bias={self.b is not None})"


class Sequential(Module):
    """Applies its steps in order.  A step is a Module or any function of
    one argument (``ad.tanh``, say); the parameters are the modules'."""

    def __init__(self, *steps):
        for step in steps:
            if not callable(step):
                raise TypeError(f"Sequential takes modules and functions, "
                                f"not {type(step).__name__}")
        self.steps = list(steps)

    def forward(self, x):
        for step in self.steps:
            x = step(x)
        return x

    def __len__(self):
        return len(self.steps)

    def __getitem__(self, k):
        return self.steps[k]

    def __iter__(self):
        return iter(self.steps)

    def __repr__(self):
        inner = ", ".join(getattr(s, "__name__", None) or repr(s)
                          for s in self.steps)
        return f"{type(self).__name__}({inner})"


ACTIVATIONS = {"tanh": functions.tanh, "relu": functions.relu,
               "sigmoid": functions.sigmoid}


class MLP(Sequential):
    """Linear layers of the given sizes, ``sizes[0] -> sizes[1] -> ...``,
    with the activation ('tanh', 'relu' or 'sigmoid') after every layer
    but the last, which stays linear (scores or logits for a loss)."""

    def __init__(self, sizes, activation="tanh", rng=None):
        sizes = list(sizes)
        if len(sizes) < 2:
            raise ValueError(f"MLP needs at least two sizes, got {sizes}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; use one of "
                             f"{', '.join(ACTIVATIONS)}")
        gen = _generator(rng)
        steps = []
        for k, (nin, nout) in enumerate(zip(sizes, sizes[1:])):
            if k:
                steps.append(ACTIVATIONS[activation])
            steps.append(Linear(nin, nout, rng=gen))
        super().__init__(*steps)
        self.sizes = sizes
        self.activation = activation

    def __repr__(self):
        return f"MLP({self.sizes}, activation={self.activation!r})"


# -- losses ----------------------------------------------------------------------

def _shape(x):
    return np.shape(x.data if isinstance(x, (Array, Value)) else x)


def mse_loss(pred, target):
    """Mean of (pred - target)**2 over every element; the shapes must match
    (no broadcasting: (N, 1) against (N,) is an error, not an (N, N) mean)."""
    if _shape(pred) != _shape(target):
        raise ValueError(f"mse_loss: pred has shape {_shape(pred)} but target "
                         f"has shape {_shape(target)}")
    diff = pred - target
    return (diff * diff).mean()


def _labels(labels, name):
    labels = labels.data if isinstance(labels, Array) else labels
    labels = np.asarray(labels)
    if labels.size and labels.dtype.kind not in "iub":
        if not np.all(labels == np.round(labels)):
            raise ValueError(f"{name}: labels must be integers")
    return labels


def cross_entropy(logits, labels):
    """Mean over the batch of -log softmax(logits)[label]: logits of shape
    (N, C) (or (C,) for one example), labels N integers in [0, C).  Computed
    through log_softmax, so large logits do not overflow."""
    if not isinstance(logits, Array):
        logits = Array(logits, _variable=False)
    labels = _labels(labels, "cross_entropy").astype(np.int64)
    if logits.ndim == 1:
        logits = logits.reshape(1, -1)
        labels = labels.reshape(1)
    if logits.ndim != 2:
        raise ValueError(f"cross_entropy: logits must be (N, C) or (C,), not "
                         f"shape {logits.shape}")
    n, c = logits.shape
    if labels.shape != (n,):
        raise ValueError(f"cross_entropy: {n} rows of logits but labels of "
                         f"shape {labels.shape}")
    bad = (labels < 0) | (labels >= c)
    if bad.any():
        raise IndexError(f"cross_entropy: label {labels[bad][0]} is out of "
                         f"bounds for {c} classes")
    picked = log_softmax(logits, axis=1)[np.arange(n), labels]
    return -picked.mean()


def hinge_loss(scores, labels):
    """Mean of relu(1 - y * s): scores s of shape (N,) or (N, 1), labels y
    of -1 and +1, one per score."""
    labels = _labels(labels, "hinge_loss").astype(np.float64)
    shape = _shape(scores)
    if labels.size != int(np.prod(shape)):
        raise ValueError(f"hinge_loss: scores of shape {shape} but "
                         f"{labels.size} labels")
    if not np.all(np.abs(labels) == 1.0):
        raise ValueError("hinge_loss: labels must be -1 or +1")
    margins = 1.0 - scores * labels.reshape(shape)
    return functions.relu(margins).mean()
