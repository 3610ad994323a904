"""``ad.optim``: SGD, Adam, AdamW and RMSprop with torch.optim's arithmetic,
stepping every parameter in one C call (csrc/optim.c).

Parameters are ``ad.Value``s and ``ad.Array``s, mixed freely, on any tapes.
An optimizer keeps a table of them for C (csrc/optim.h): which tape, which
entry, how many elements, where its state starts.  A Value's data and grad
live in its tape entry, an Array's in its NumPy buffer and its entry's
gradient block, so C updates them in place; the table's entry numbers are
refreshed only when a tape has been compacted (renumbered) since the last
step.  The one Python loop per step gives each scalar Value its new
``.data`` (a Value keeps a copy of its data for recording).

As in torch, a parameter without a gradient is skipped: one that no
``backward()`` has reached yet (and whose grad was not assigned), or whose
gradient ``zero_grad()`` has cleared (its default, ``set_to_none=True``,
like torch's).  ``.grad`` still reads 0 for such a parameter.

The hyperparameters are also ``opt.param_groups[0]``, torch's dict of
them (one group: every parameter shares them), so a learning-rate
scheduler written for torch, ``ad.optim.lr_scheduler``'s or one's own,
sets ``group['lr']`` and the next step uses it.  ``state_dict()`` and
``load_state_dict()`` save and restore step counts, moments and
hyperparameters, keyed by parameter position as torch keys them.
"""
import sys
from collections.abc import MutableMapping

import numpy as np

from . import _core
from ._core import ffi, lib
from .array import Array
from .tape import Tape
from .tape_state import holding
from .value import Value
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "lr_scheduler"]

# torch's spelling, ``from torch.optim.lr_scheduler import StepLR``, works
# here too, the way os makes ``os.path`` importable
sys.modules[__name__ + ".lr_scheduler"] = lr_scheduler

_LEAF = _core.OPS["LEAF"]


def _param_list(params):
    """params as a list of distinct leaf Values and Arrays, or the error
    torch gives for the same mistake."""
    if isinstance(params, (Value, Array, np.ndarray)):
        raise TypeError("params argument given to the optimizer should be an "
                        "iterable of Values or Arrays, but got "
                        f"{type(params).__name__}")
    if isinstance(params, (set, frozenset)):
        raise TypeError("optimizer parameters need to be organized in ordered "
                        "collections, but the ordering of a set changes "
                        "between runs; use a list instead")
    if isinstance(params, dict):
        raise TypeError("parameter groups (dicts) are not supported; pass a "
                        "list of Values and Arrays")
    params = list(params)
    if not params:
        raise ValueError("optimizer got an empty parameter list")
    seen = set()
    for p in params:
        if not isinstance(p, (Value, Array)):
            raise TypeError("optimizer can only optimize Values and Arrays, "
                            f"but one of the params is {type(p).__name__}")
        if not isinstance(p._t, Tape):
            raise ValueError("can't optimize a Value or Array computed under "
                             "no_grad: it is on no tape")
        if id(p) in seen:
            raise ValueError("optimizer got the same parameter twice")
        seen.add(id(p))
    for p in params:
        t = p._t
        t._check_open()
        t.flush()
        if t._c.op[p._i] != _LEAF:
            raise ValueError("can't optimize a non-leaf Value or Array: "
                             "parameters are inputs, not results of operations")
    return params


class _Hyper:
    """A hyperparameter kept in the C struct, checked on assignment, so a
    step reads it with no copying (``opt.lr = 0.01`` between steps works)."""

    def __init__(self, field, check):
        self.field = field
        self.check = check

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, opt, owner=None):
        if opt is None:
            return self
        return getattr(opt._o, self.field)

    def __set__(self, opt, value):
        setattr(opt._o, self.field, self.check(value))


def _nonnegative(name):
    """A check that v is a number >= 0 (NaN fails too), as torch's."""
    def check(v):
        v = float(v)
        if not 0.0 <= v:
            raise ValueError(f"Invalid {name}: {v}")
        return v
    return check


def _beta(index):
    def check(v):
        v = float(v)
        if not 0.0 <= v < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {v}")
        return v
    return check


class _ParamGroup(MutableMapping):
    """``opt.param_groups[0]``: torch's dict of a group's hyperparameters.
    Its hyperparameter keys are the optimizer's own (read from and checked
    into the C struct, which every step reads), 'params' is the parameter
    list, and any other key (a scheduler's 'initial_lr') is kept here, as
    a dict would keep it."""

    def __init__(self, opt):
        self._opt = opt
        self._extra = {}

    def __getitem__(self, key):
        if key == "params":
            return self._opt.params
        if key in self._opt._hyper_names:
            return getattr(self._opt, key)
        return self._extra[key]

    def __setitem__(self, key, value):
        if key == "params":
            raise TypeError("an optimizer's parameters are fixed when it is "
                            "made; make a new optimizer for other ones")
        if key in self._opt._hyper_names:
            setattr(self._opt, key, value)
        else:
            self._extra[key] = value

    def __delitem__(self, key):
        if key == "params" or key in self._opt._hyper_names:
            raise KeyError(f"can't delete {key!r}: the optimizer needs it")
        del self._extra[key]

    def __iter__(self):
        yield "params"
        yield from self._opt._hyper_names
        yield from self._extra

    def __len__(self):
        return 1 + len(self._opt._hyper_names) + len(self._extra)

    def __repr__(self):
        return repr(dict(self))


class Optimizer:
    """What SGD, Adam, AdamW and RMSprop share: the parameter table, the
    state vectors, ``step()``, ``zero_grad()``, ``param_groups`` and the
    state dicts."""

    _rule = None          # enum ad_optim_rule
    _state_names = ()     # torch's names of the state vectors the rule uses

    lr = _Hyper("lr", _nonnegative("learning rate"))
    weight_decay = _Hyper("weight_decay", _nonnegative("weight_decay value"))

    def __init__(self, params, **hyper):
        self._o = o = ffi.new("ad_optim *")
        o.rule = self._rule
        o.err_index = -1
        for name, value in hyper.items():
            setattr(self, name, value)
        self.params = _param_list(params)
        self.param_groups = [_ParamGroup(self)]
        self._build_table()

    def _build_table(self):
        params = self.params
        tapes, tape_of = [], {}
        for p in params:
            if id(p._t) not in tape_of:
                tape_of[id(p._t)] = len(tapes)
                tapes.append(p._t)
        self._tapes = tapes
        self._tape = np.array([tape_of[id(p._t)] for p in params], np.int32)
        self._entry = np.array([p._i for p in params], np.int64)
        self._size = np.array([-1 if isinstance(p, Value) else p._d.size
                               for p in params], np.int64)
        used = np.where(self._size < 0, 1, self._size)
        self._offset = np.concatenate(([0], np.cumsum(used)[:-1])).astype(np.int64)
        nstate = int(used.sum())
        self._steps = np.zeros(len(params))
        # state vectors: zeros, as torch initializes them on a first step
        self._state = [np.zeros(nstate) for _ in self._state_names]
        self._values = [p for p in params if isinstance(p, Value)]
        self._scalar_data = ffi.new("double[]", max(len(self._values), 1))
        self._generations = [t.generation for t in tapes]

        o = self._o
        o.nparams = len(params)
        o.ntapes = len(tapes)
        self._ctapes = ffi.new("ad_tape *[]", [t._c for t in tapes])
        o.tapes = self._ctapes
        o.tape = ffi.from_buffer("int32_t[]", self._tape)
        o.entry = ffi.from_buffer("int64_t[]", self._entry)
        o.size = ffi.from_buffer("int64_t[]", self._size)
        o.offset = ffi.from_buffer("int64_t[]", self._offset)
        o.steps = ffi.from_buffer("double[]", self._steps)
        o.nstate = nstate
        # a rule may not use all three; the unused ones point at the first
        state = self._state + [self._state[0]] * (3 - len(self._state))
        o.state1, o.state2, o.state3 = (ffi.from_buffer("double[]", s)
                                        for s in state)
        o.scalar_data = self._scalar_data

    def _prepare(self):
        """Every tape open and flushed, the entry numbers current."""
        stale = False
        for k, t in enumerate(self._tapes):
            t._check_open()
            if len(t.nodes) != t.nflushed:
                t.flush()
            if t.generation != self._generations[k]:
                self._generations[k] = t.generation
                stale = True
        if stale:        # a compaction renumbered entries
            self._entry[:] = [p._i for p in self.params]

    def step(self):
        """One update of every parameter that has a gradient."""
        with holding(self._tapes):    # (other threads may use them too)
            self._prepare()
            _core.check(lib.ad_optim_step(self._o), self._o)
        # each Value's own copy of its data, for recording
        for v, d in zip(self._values, ffi.unpack(self._scalar_data,
                                                 len(self._values))):
            v._d = d

    def zero_grad(self, set_to_none=True):
        """Reset the gradients to 0.  set_to_none=True (torch's default)
        also marks them absent, so step() skips a parameter until a
        backward reaches it again; False keeps them as zero gradients
        (weight decay and momentum still move the parameter)."""
        with holding(self._tapes):
            self._prepare()
            _core.check(lib.ad_optim_zero_grad(self._o, bool(set_to_none)), self._o)

    # -- state dicts -----------------------------------------------------------

    def _state_slices(self, k):
        """Parameter k's element range in the state vectors, and its shape."""
        p = self.params[k]
        off = int(self._offset[k])
        shape = () if isinstance(p, Value) else p.shape
        return slice(off, off + max(int(self._size[k]), 1)), shape

    def state_dict(self):
        """torch's layout: {'state': {k: {'step': ..., buffers...}},
        'param_groups': [{hyperparameters..., 'params': [0, 1, ...]}]}, k
        the parameter's position; a parameter that has taken no step has
        no state, as in torch.  Buffers are copies: ndarrays of the
        parameter's shape for an Array, floats for a Value."""
        state = {}
        for k in range(len(self.params)):
            if self._steps[k] == 0:
                continue
            at, shape = self._state_slices(k)
            entry = {"step": float(self._steps[k])}
            for name, vec in zip(self._state_names, self._state):
                buf = vec[at].reshape(shape)
                entry[name] = float(buf) if shape == () else buf.copy()
            state[k] = entry
        group = {key: value for key, value in self.param_groups[0].items()
                 if key != "params"}
        group["params"] = list(range(len(self.params)))
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict):
        """Restore what state_dict() saved, into an optimizer of the same
        kind over parameters of the same shapes, in the same order.  The
        whole dict is checked first: a bad one changes nothing."""
        groups = state_dict["param_groups"]
        if len(groups) != 1:
            raise ValueError(f"loaded state dict has {len(groups)} parameter "
                             "groups; this optimizer has 1")
        group = groups[0]
        if len(group["params"]) != len(self.params):
            raise ValueError(f"loaded state dict has {len(group['params'])} "
                             f"parameters; this optimizer has "
                             f"{len(self.params)}")
        missing = [name for name in self._hyper_names if name not in group]
        if missing:
            raise KeyError(f"loaded state dict has no {', '.join(missing)} "
                           f"for {type(self).__name__}")
        state = state_dict["state"]
        loaded = {}
        for k, entry in state.items():
            if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
                raise TypeError(f"loaded state dict: the state is keyed by "
                                f"parameter position, not {k!r}")
            if not 0 <= k < len(self.params):
                raise ValueError(f"loaded state dict has state for parameter "
                                 f"{k}; this optimizer has {len(self.params)}")
            loaded[k] = self._checked_state(k, entry)
        self._set_hyper({name: group[name] for name in self._hyper_names})
        extra = self.param_groups[0]._extra
        extra.clear()
        extra.update((key, value) for key, value in group.items()
                     if key != "params" and key not in self._hyper_names)
        self._steps[:] = 0.0
        for vec in self._state:
            vec[:] = 0.0
        for k, (step, bufs) in loaded.items():
            at, _ = self._state_slices(k)
            self._steps[k] = step
            for vec, buf in zip(self._state, bufs):
                vec[at] = buf.ravel()

    def _set_hyper(self, values):
        """Set every hyperparameter, or (one fails its check) none."""
        before = {name: getattr(self, name) for name in values}
        try:
            for name, value in values.items():
                setattr(self, name, value)
        except BaseException:
            for name, value in before.items():
                setattr(self, name, value)
            raise

    def _checked_state(self, k, entry):
        """Parameter k's step count and buffers from a loaded state entry,
        each buffer checked against the parameter's shape."""
        missing = [name for name in ("step",) + self._state_names
                   if name not in entry]
        if missing:
            raise KeyError(f"loaded state of parameter {k} has no "
                           f"{', '.join(missing)} for {type(self).__name__}")
        step = float(entry["step"])
        if not (step >= 1 and step == int(step)):
            raise ValueError(f"loaded state of parameter {k}: step {step} is "
                             "not a positive whole number")
        _, shape = self._state_slices(k)
        bufs = []
        for name in self._state_names:
            buf = np.asarray(entry[name], dtype=np.float64)
            if buf.shape != shape:
                raise ValueError(f"loaded state of parameter {k}: {name} has "
                                 f"shape {buf.shape}, the parameter {shape}")
            bufs.append(buf)
        return step, bufs

    # Pickle and copies: an optimizer of the same kind over the parameters
    # (pickled with the model in one dumps call, its unpickled ones), its C
    # table built anew and its state_dict() loaded.  The hyperparameters'
    # names are the constructor's keywords, as in torch.
    def __reduce__(self):
        return _rebuilt, (type(self), self.params, self.state_dict())

    def __repr__(self):
        hyper = ", ".join(f"{name}={getattr(self, name)!r}"
                          for name in self._hyper_names)
        return f"{type(self).__name__}({len(self.params)} parameters, {hyper})"


def _rebuilt(cls, params, state_dict):
    """A copy of an optimizer (Optimizer.__reduce__)."""
    group = state_dict["param_groups"][0]
    opt = cls(params, **{name: group[name] for name in cls._hyper_names})
    opt.load_state_dict(state_dict)
    return opt


class SGD(Optimizer):
    """Stochastic gradient descent, torch.optim.SGD's arithmetic, per element:

        g = g + weight_decay * p
        b = g (first step), else b * momentum + (1 - dampening) * g
        g = g + momentum * b (nesterov), or b (momentum != 0)
        p = p - lr * g
    """

    _rule = lib.AD_OPTIM_SGD
    _state_names = ("momentum_buffer",)
    _hyper_names = ("lr", "momentum", "dampening", "nesterov", "weight_decay")
    momentum = _Hyper("momentum", _nonnegative("momentum value"))
    dampening = _Hyper("dampening", float)

    def __init__(self, params, lr, momentum=0, dampening=0, nesterov=False,
                 weight_decay=0):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero "
                             "dampening")
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening,
                         nesterov=nesterov, weight_decay=weight_decay)

    nesterov = property(lambda self: bool(self._o.nesterov),
                        lambda self, v: setattr(self._o, "nesterov", bool(v)))


class Adam(Optimizer):
    """Adam, torch.optim.Adam's arithmetic.  Per element, t the parameter's
    step count from 1:

        g = g + weight_decay * p
        m = m + (1 - beta1) * (g - m)           (torch's lerp)
        v = v * beta2 + (1 - beta2) * g * g
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)
    """

    _rule = lib.AD_OPTIM_ADAM
    _state_names = ("exp_avg", "exp_avg_sq")
    _decoupled = False
    _hyper_names = ("lr", "betas", "eps", "weight_decay")
    eps = _Hyper("eps", _nonnegative("epsilon value"))
    beta1 = _Hyper("beta1", _beta(0))
    beta2 = _Hyper("beta2", _beta(1))

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0):
        beta1, beta2 = betas
        super().__init__(params, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                         weight_decay=weight_decay)
        self._o.decoupled = self._decoupled

    @property
    def betas(self):
        return (self.beta1, self.beta2)

    @betas.setter
    def betas(self, value):
        self.beta1, self.beta2 = value


class AdamW(Adam):
    """Adam with decoupled weight decay, torch.optim.AdamW's arithmetic: the
    parameter first shrinks, p = p * (1 - lr * weight_decay), then takes
    Adam's step without weight decay in the gradient."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2):
        super().__init__(params, lr=lr, betas=betas, eps=eps,
                         weight_decay=weight_decay)


class RMSprop(Optimizer):
    """RMSprop, torch.optim.RMSprop's arithmetic, per element:

        g = g + weight_decay * p
        s = s * alpha + (1 - alpha) * g * g
        a = a + (1 - alpha) * (g - a); avg = sqrt(s - a * a) + eps  (centered)
        avg = sqrt(s) + eps                                         (otherwise)
        b = b * momentum + g / avg; p = p - lr * b       (momentum > 0)
        p = p - lr * g / avg                             (otherwise)
    """

    _rule = lib.AD_OPTIM_RMSPROP
    _state_names = ("square_avg", "momentum_buffer", "grad_avg")
    _hyper_names = ("lr", "alpha", "eps", "weight_decay", "momentum",
                    "centered")
    alpha = _Hyper("alpha", _nonnegative("alpha value"))
    eps = _Hyper("eps", _nonnegative("epsilon value"))
    momentum = _Hyper("momentum", _nonnegative("momentum value"))

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0,
                 momentum=0, centered=False):
        super().__init__(params, lr=lr, alpha=alpha, eps=eps,
                         weight_decay=weight_decay, momentum=momentum,
                         centered=centered)

    centered = property(lambda self: bool(self._o.centered),
                        lambda self, v: setattr(self._o, "centered", bool(v)))
