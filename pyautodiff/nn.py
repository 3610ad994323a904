"""``ad.nn``: modules and losses on batched ``ad.Array``s.

A batch is an Array whose first axis runs over the examples: ``Linear``
maps (N, nin) to (N, nout) as ``x @ W + b``, and every loss is a mean over
the batch, returning a one-element Array to call ``backward()`` on.  The
whole forward pass of a batch is a handful of tape entries, whatever N is.

(``pyautodiff.micrograd.nn`` is micrograd's scalar-per-neuron drop-in;
this module is the array-based one.)
"""
from collections import OrderedDict, namedtuple

import numpy as np

from . import functions
from .array import Array, maximum
from .matmul import matmul
from .reductions import log_softmax
from .value import Value

__all__ = ["Module", "Linear", "Sequential", "MLP", "Dropout", "Embedding",
           "mse_loss", "cross_entropy", "hinge_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "clip_grad_norm_",
           "clip_grad_value_"]


class Module:
    """A function with parameters.  Subclasses define ``forward``; calling
    the module calls it.  ``parameters()`` finds the Arrays and Values held
    in the module's attributes and in the modules held there, also inside
    lists, tuples and dicts (nested as deep as they go), in attribute order
    and then container order, each once; override it to say otherwise.

    ``named_parameters()`` names them as torch does, by attribute names and
    container indices or keys joined with dots ('layers.0.W'); a module
    inside that overrides ``parameters()`` has its parameters named by
    position in that list.  ``state_dict()`` and ``load_state_dict()``
    save and restore them by those names; ``train()`` and ``eval()`` set
    ``training`` on the module and every module inside it (Dropout reads
    it)."""

    training = True

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} defines no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def _members(self):
        """(name, item) for what the module holds, in order."""
        return vars(self).items()

    def named_parameters(self):
        return [(name, item) for name, item in _walk(self, own_lists=True)
                if not isinstance(item, Module)]

    def parameters(self):
        return [item for _, item in self.named_parameters()]

    def modules(self):
        """This module and every module inside it, each once."""
        return [self] + [item for _, item in _walk(self, own_lists=False)
                         if isinstance(item, Module)]

    def zero_grad(self):
        for p in self.parameters():
            p.zero_grad()

    def train(self, mode=True):
        """Training mode (or, mode=False, evaluation mode) for this module
        and every module inside it; returns the module."""
        for m in self.modules():
            m.training = bool(mode)
        return self

    def eval(self):
        return self.train(False)

    def state_dict(self):
        """An OrderedDict of the parameters by name: a copy of each Array's
        data (an ndarray), each Value's data (a float)."""
        return OrderedDict((name, _saved(p))
                           for name, p in self.named_parameters())

    def load_state_dict(self, state_dict, strict=True):
        """Copy the values in state_dict into the parameters of the same
        names.  strict: every name must match both ways (else
        RuntimeError naming the missing and unexpected ones); the shapes
        must always match.  Everything is checked before anything is
        copied.  Returns (missing_keys, unexpected_keys), as torch does."""
        named = dict(self.named_parameters())
        missing = [name for name in named if name not in state_dict]
        unexpected = [name for name in state_dict if name not in named]
        if strict and (missing or unexpected):
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}: "
                + "; ".join(f"{what} key(s): {', '.join(names)}"
                            for what, names in (("missing", missing),
                                                ("unexpected", unexpected))
                            if names))
        loads = [(named[name], _loadable(name, named[name], value))
                 for name, value in state_dict.items() if name in named]
        for p, value in loads:
            p.data = value
        return IncompatibleKeys(missing, unexpected)


IncompatibleKeys = namedtuple("IncompatibleKeys",
                              ["missing_keys", "unexpected_keys"])


def _saved(p):
    return p.data.copy() if isinstance(p, Array) else float(p.data)


def _loadable(name, p, value):
    """value as the new data of parameter p, or the error torch gives."""
    arr = np.asarray(value)
    shape = p.shape if isinstance(p, Array) else ()
    if arr.shape != shape:
        raise RuntimeError(f"size mismatch for {name}: copying a parameter "
                           f"with shape {arr.shape} from the state dict, the "
                           f"shape in the current model is {shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: can't load {arr.dtype} data into a "
                        "parameter")
    return arr if isinstance(p, Array) else float(arr)


def _walk(module, own_lists):
    """(dotted name, item) for every parameter and module reached from
    module, each once, modules before what they hold.  Seen is by identity
    (id -> the object, which keeps the id from being reused during the
    walk): == on Arrays is elementwise, and two equal parameters are still
    two.  A module or container seen before (shared, or a reference back
    up) is not walked again.  own_lists: a module that overrides
    parameters() is asked for them instead of walked (for parameters); else
    every module's attributes are walked (to reach all modules)."""
    found, seen = [], {id(module): module}
    # the module's own attributes even when it overrides parameters(): that
    # override may well call Module.parameters()
    _collect(module._members(), "", found, seen, own_lists)
    return found


_WALKED = (Array, Value, Module, list, tuple, dict)


def _collect(items, prefix, found, seen, own_lists):
    for key, item in items:
        if not isinstance(item, _WALKED) or id(item) in seen:
            continue
        seen[id(item)] = item
        name = prefix + str(key)
        if isinstance(item, (Array, Value)):
            found.append((name, item))
        else:
            if isinstance(item, Module):
                found.append((name, item))
                inner = _module_items(item, own_lists)
            else:
                inner = (item.items() if isinstance(item, dict)
                         else enumerate(item))
            _collect(inner, name + ".", found, seen, own_lists)


def _module_items(module, own_lists):
    if own_lists and type(module).parameters is not Module.parameters:
        return enumerate(module.parameters())
    return module._members()


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

    def _members(self):
        # torch names a Sequential's steps by index alone: '0.W', '2.b'
        others = [(key, item) for key, item in vars(self).items()
                  if key != "steps"]
        return list(enumerate(self.steps)) + others

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


class Dropout(Module):
    """Inverted dropout: in training (``module.train()``, the default) each
    element is zeroed with probability p and the rest are scaled by
    1/(1 - p), so the expected output is the input; in evaluation
    (``module.eval()``) the input passes unchanged.  ``rng`` (a NumPy
    Generator or a seed) makes the masks reproducible."""

    def __init__(self, p=0.5, rng=None):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, "
                             f"but got {p}")
        self.p = float(p)
        self.rng = _generator(rng)

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        keep = self.rng.random(_shape(x)) >= self.p
        if self.p == 1.0:        # nothing kept, and 1/(1 - p) is no number
            return x * np.zeros(keep.shape)
        return x * (keep / (1.0 - self.p))

    def __repr__(self):
        return f"Dropout(p={self.p})"


class Embedding(Module):
    """A table of num_embeddings vectors of embedding_dim: ``weight`` of
    shape (num_embeddings, embedding_dim), N(0, 1) at the start as torch's.
    Called on integer indices of any shape it gives their rows, of shape
    indices.shape + (embedding_dim,); the gradient adds back into each
    row once per time it was picked."""

    def __init__(self, num_embeddings, embedding_dim, rng=None):
        if num_embeddings < 1 or embedding_dim < 1:
            raise ValueError(f"Embedding({num_embeddings}, {embedding_dim}): "
                             "sizes must be positive")
        gen = _generator(rng)
        self.weight = Array(gen.standard_normal((num_embeddings,
                                                 embedding_dim)))

    def forward(self, indices):
        if isinstance(indices, (Array, Value)):
            raise TypeError("Embedding takes integer indices (an int ndarray "
                            f"or list), not an {type(indices).__name__}")
        indices = np.asarray(indices)
        if indices.size == 0:
            indices = indices.astype(np.intp)
        if indices.dtype.kind not in "iu":
            raise TypeError(f"Embedding: indices must be integers, not "
                            f"{indices.dtype}")
        n = self.weight.shape[0]
        bad = (indices < 0) | (indices >= n)
        if bad.any():
            raise IndexError(f"Embedding: index {indices[bad].flat[0]} is out "
                             f"of range for {n} embeddings")
        return self.weight[indices]

    def __repr__(self):
        return f"Embedding({self.weight.shape[0]}, {self.weight.shape[1]})"


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


def _same_shapes(loss, a, b, names):
    """No broadcasting in a loss: (N, 1) against (N,) is an error, not an
    (N, N) mean."""
    if _shape(a) != _shape(b):
        raise ValueError(f"{loss}: {names[0]} has shape {_shape(a)} but "
                         f"{names[1]} has shape {_shape(b)}")


def mse_loss(pred, target):
    """Mean of (pred - target)**2 over every element; the shapes must
    match."""
    _same_shapes("mse_loss", pred, target, ("pred", "target"))
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


def binary_cross_entropy(probs, targets):
    """Mean of -(y * log p + (1 - y) * log(1 - p)) over every element, for
    probabilities p in [0, 1] and targets y of the same shape; each log is
    clamped at -100 as torch clamps it, so p = 0 or 1 gives a finite loss.
    The gradient is the clamped loss's own: none through a clamped log
    (torch's backward gives (p - y) / max(p * (1 - p), 1e-12) instead,
    about 1e12 where a log is clamped); elsewhere the two agree."""
    _same_shapes("binary_cross_entropy", probs, targets, ("probs", "targets"))
    p = np.asarray(probs.data if isinstance(probs, (Array, Value)) else probs)
    if not np.all((p >= 0.0) & (p <= 1.0)):
        raise ValueError("binary_cross_entropy: probs must be between 0 and 1")
    with np.errstate(divide="ignore"):       # log(0), clamped just below
        log_p = maximum(functions.log(probs), -100.0)
        log_q = maximum(functions.log(1.0 - probs), -100.0)
    return -(targets * log_p + (1.0 - targets) * log_q).mean()


def binary_cross_entropy_with_logits(logits, targets):
    """binary_cross_entropy(sigmoid(x), y) for logits x, without computing
    sigmoid(x): the mean of max(x, 0) - x * y + log(1 + exp(-|x|)), which
    does not overflow for any x.  Its gradient is (sigmoid(x) - y) / size,
    also at x = 0 (maximum splits a tie evenly and |x|' is 0 there).  With
    no log1p among the ops, 1 + exp(-|x|) is rounded once: each element's
    loss is within about 1e-16 of the exact one (absolute), its gradient
    accurate to rounding."""
    _same_shapes("binary_cross_entropy_with_logits", logits, targets,
                 ("logits", "targets"))
    softplus = maximum(logits, 0.0) + functions.log(
        1.0 + functions.exp(-functions.abs(logits)))
    return (softplus - logits * targets).mean()


# -- gradient clipping, torch.nn.utils' (between backward() and step()) ------

def _grad_params(params):
    """params (one Array or Value, or an iterable of them: a generator too)
    as a list."""
    if isinstance(params, (Array, Value)):
        return [params]
    params = list(params)
    for p in params:
        if not isinstance(p, (Array, Value)):
            raise TypeError("gradients can be clipped for Arrays and Values, "
                            f"not {type(p).__name__}")
    return params


def _scale_grad(p, factor):
    """p's gradient times factor, in place."""
    if isinstance(p, Array):
        p.grad *= factor
    elif p.grad != 0:       # (one computed under no_grad has none to set)
        p.grad = p.grad * factor


def clip_grad_norm_(params, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale the gradients of params, in place, so that their norm taken
    together (the norm of the vector of every element; norm_type inf: the
    largest magnitude) is at most max_norm, and return that norm as it was
    before, a float.  torch's formula: each gradient is multiplied by
    min(1, max_norm / (total_norm + 1e-6)).  A NaN or infinite norm raises
    RuntimeError if error_if_nonfinite, else scales as torch does."""
    params = _grad_params(params)
    max_norm, norm_type = float(max_norm), float(norm_type)
    grads = [np.ravel(p.grad) for p in params]
    grads = [g for g in grads if g.size]
    if not grads:
        return 0.0
    # the norm of the parameters' norms, as torch takes it (NumPy's vector
    # norms: inf is the largest magnitude)
    total = float(np.linalg.norm([np.linalg.norm(g, norm_type) for g in grads],
                                 norm_type))
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from "
            "`parameters` is non-finite, so it cannot be clipped. To disable "
            "this error and scale the gradients by the non-finite norm "
            "anyway, set `error_if_nonfinite=False`")
    coef = max_norm / (total + 1e-6)
    if not coef >= 1.0:     # (a NaN norm scales by NaN, as in torch)
        for p in params:
            _scale_grad(p, coef)
    return total


def clip_grad_value_(params, clip_value):
    """Clamp every gradient element of params into [-clip_value,
    clip_value], in place (torch's clip_grad_value_)."""
    params = _grad_params(params)
    c = float(clip_value)
    for p in params:
        if isinstance(p, Array):
            g = p.grad
            np.clip(g, -c, c, out=g)
        elif p.grad != 0:
            p.grad = float(np.clip(p.grad, -c, c))
