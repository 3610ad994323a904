"""``ad.optim.lr_scheduler``: learning-rate schedules with
torch.optim.lr_scheduler's arithmetic.

A scheduler sets ``group['lr']`` in its optimizer's ``param_groups``, which
the optimizer's next ``step()`` reads; call ``scheduler.step()`` after
``optimizer.step()``, once per epoch (or per batch), as in torch.  Like
torch's, StepLR, ExponentialLR and CosineAnnealingLR are chainable: each
step multiplies (or moves) the learning rate the group has now, so two
schedulers on one optimizer compose and a learning rate set by hand is
carried on.  Any object with torch's ``param_groups`` (a list of dicts with
'lr') can be scheduled.
"""
import math

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "ExponentialLR",
           "CosineAnnealingLR", "ReduceLROnPlateau"]


def _groups(optimizer):
    groups = getattr(optimizer, "param_groups", None)
    if groups is None:
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer: it "
                        "has no param_groups")
    return groups


class LRScheduler:
    """What the epoch-driven schedulers share.  ``last_epoch`` counts the
    steps taken (-1 before the one the constructor takes, which leaves the
    learning rate as it is); ``get_lr()`` gives the next learning rates
    from ``last_epoch``, the groups' current ones and ``base_lrs``."""

    def __init__(self, optimizer, last_epoch=-1):
        groups = _groups(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for k, group in enumerate(groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in "
                                   f"param_groups[{k}] when resuming an "
                                   "optimizer")
        self.base_lrs = [group["initial_lr"] for group in groups]
        self.last_epoch = last_epoch
        self._initial = True      # the constructor's step changes nothing
        self._step_count = 0
        self.step()
        self._initial = False

    def get_lr(self):
        raise NotImplementedError(f"{type(self).__name__} defines no get_lr()")

    def step(self):
        """Advance one epoch and set every group's learning rate."""
        self._step_count += 1
        self.last_epoch += 1
        groups = _groups(self.optimizer)
        for group, lr in zip(groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in groups]

    def get_last_lr(self):
        """The learning rates the last step() set, one per group."""
        return self._last_lr

    def _current(self):
        return [group["lr"] for group in _groups(self.optimizer)]

    def state_dict(self):
        """Everything but the optimizer, as torch saves it."""
        return {key: value for key, value in vars(self).items()
                if key != "optimizer"}

    def load_state_dict(self, state_dict):
        vars(self).update(state_dict)


class LambdaLR(LRScheduler):
    """lr = initial lr * lr_lambda(epoch); lr_lambda a function or one
    per group.  (Its state dict leaves the functions out, as torch's.)"""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        ngroups = len(_groups(optimizer))
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != ngroups:
                raise ValueError(f"Expected {ngroups} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * ngroups
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got "
                                f"{type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * fn(self.last_epoch)
                for fn, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self):
        state = super().state_dict()
        del state["lr_lambdas"]
        return state


class StepLR(LRScheduler):
    """lr times gamma every step_size epochs: initial lr * gamma **
    (epoch // step_size)."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        if int(step_size) != step_size or step_size < 1:
            raise ValueError(f"step_size must be a positive integer, not "
                             f"{step_size!r}")
        self.step_size = int(step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size:
            return self._current()
        return [lr * self.gamma for lr in self._current()]


class ExponentialLR(LRScheduler):
    """lr times gamma every epoch: initial lr * gamma ** epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._initial:
            return self._current()
        return [lr * self.gamma for lr in self._current()]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr down to eta_min over T_max
    epochs (and back up over the next T_max, and so on), in torch's
    recursive form: each step scales lr - eta_min by
    (1 + cos(pi * t / T_max)) / (1 + cos(pi * (t - 1) / T_max)), which
    equals the closed form eta_min + (initial lr - eta_min) *
    (1 + cos(pi * t / T_max)) / 2 to rounding when nothing else moves lr."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        if int(T_max) != T_max or T_max < 1:
            raise ValueError(f"T_max must be a positive integer, not {T_max!r}")
        self.T_max = int(T_max)
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        t, T, low = self.last_epoch, self.T_max, self.eta_min
        if self._initial:
            return self._current()
        if self._step_count == 1 and t > 0:        # resumed: the closed form
            return [low + (base - low) * (1 + math.cos(t * math.pi / T)) / 2
                    for base in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:
            # leaving the bottom, where the ratio would be 0/0
            return [lr + (base - low) * (1 - math.cos(math.pi / T)) / 2
                    for base, lr in zip(self.base_lrs, self._current())]
        ratio = ((1 + math.cos(math.pi * t / T))
                 / (1 + math.cos(math.pi * (t - 1) / T)))
        return [ratio * (lr - low) + low for lr in self._current()]


class ReduceLROnPlateau:
    """lr times factor (not below min_lr) once the metric passed to
    ``step(metric)`` has not improved for more than ``patience`` epochs,
    then ``cooldown`` epochs of rest; torch's rules for 'better' (mode
    'min' or 'max', threshold 'rel' or 'abs') and its eps (a change
    smaller than eps is not made)."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10,
                 threshold=1e-4, threshold_mode="rel", cooldown=0, min_lr=0,
                 eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode!r} is unknown; use 'min' or 'max'")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode!r} is unknown; "
                             "use 'rel' or 'abs'")
        groups = _groups(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(groups):
                raise ValueError(f"expected {len(groups)} min_lrs, got "
                                 f"{len(min_lr)}")
            self.min_lrs = list(min_lr)
        else:
            self.min_lrs = [min_lr] * len(groups)
        self.mode, self.factor, self.patience = mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.eps = cooldown, eps
        self.last_epoch = 0
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self._last_lr = [group["lr"] for group in groups]

    def _is_better(self, a):
        best, th = self.best, self.threshold
        if self.mode == "min":
            return a < (best * (1.0 - th) if self.threshold_mode == "rel"
                        else best - th)
        return a > (best * (th + 1.0) if self.threshold_mode == "rel"
                    else best + th)

    def step(self, metrics):
        """One epoch with this value of the metric."""
        current = float(metrics)
        self.last_epoch += 1
        if self._is_better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0     # bad epochs in cooldown don't count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in _groups(self.optimizer)]

    def _reduce_lr(self):
        for group, low in zip(_groups(self.optimizer), self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, low)
            if old - new > self.eps:
                group["lr"] = new

    get_last_lr = LRScheduler.get_last_lr
    state_dict = LRScheduler.state_dict
    load_state_dict = LRScheduler.load_state_dict
