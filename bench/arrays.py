"""Array problems: an MLP step, a chain of small elementwise ops, and the
Rosenbrock gradient; each as value-and-gradient on every array engine, with
NumPy written by hand (no AD) as the floor.

Each problem has one function per engine, by backend name; an engine
without one (the scalar engines) is not run.
"""
import time

import numpy as np

from bench.registry import Result, Unsupported, problem


STEPS = 5      # timed steps per sample, after one untimed step


def _timed(step):
    """A step's time in a loop of steps, as a program runs it: the median of
    STEPS consecutive steps after one untimed step (the first pays once for
    what the rest reuse: memory from the system, caches warmed after the
    engine that ran before).  Returns (ns, (value, gradients)).

    A step returns (value, gradients).  An engine that keeps gradients
    where backward left them (pyautodiff's tape, a tensor's .grad) may
    return a function that reads them as ndarrays instead: that runs after
    the timer, as a training loop hands them to its optimizer in place."""
    out = step()
    times = []
    for _ in range(STEPS):
        t0 = time.perf_counter_ns()
        out = step()
        times.append(time.perf_counter_ns() - t0)
    value, grads = out
    return sorted(times)[STEPS // 2], (value, grads() if callable(grads) else grads)


def _engine(impls, backend):
    """This engine's code for a problem (Unsupported if it has none).  The
    array problems' entries take the problem's data, do what may come
    before the timer (making parameters, recording) and return the step
    to time."""
    fn = impls.get(backend.name)
    if fn is None:
        raise Unsupported("no array code for this engine")
    return fn


def _each_call(fn):
    """An entry whose whole work is in the step: fn(*data) itself."""
    return lambda *data: (lambda: fn(*data))


# --- a. MLP 784-256-10, tanh hidden, softmax cross-entropy, batch 128 --------

def _mlp_data(seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.normal(size=(784, 256)) * 0.05, np.zeros(256),
              rng.normal(size=(256, 10)) * 0.05, np.zeros(10)]
    X = rng.normal(size=(128, 784))
    y = rng.integers(0, 10, size=128)
    return params, X, y


def _mlp_numpy(params, X, y):
    W1, b1, W2, b2 = params
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    zmax = z.max(axis=1, keepdims=True)
    e = np.exp(z - zmax)
    s = e.sum(axis=1, keepdims=True)
    n = len(y)
    loss = np.mean(np.log(s[:, 0]) + zmax[:, 0] - z[np.arange(n), y])
    dz = e / s
    dz[np.arange(n), y] -= 1.0
    dz /= n
    dW2, db2 = h.T @ dz, dz.sum(axis=0)
    dh = (dz @ W2.T) * (1.0 - h * h)
    dW1, db1 = X.T @ dh, dh.sum(axis=0)
    return loss, [dW1, db1, dW2, db2]


# A training step: each engine's parameters are made once, before the timer
# (as a model's are), and each step clears their gradients, runs forward and
# backward, and hands the four gradients back as ndarrays.

def _mlp_pyautodiff(params, X, y):
    import pyautodiff as ad
    ps = [ad.Array(p) for p in params]
    rows = np.arange(len(y))

    def step():
        W1, b1, W2, b2 = ps
        for p in ps:
            p.zero_grad()
        with ad.Tape():
            h = ad.tanh(X @ W1 + b1)
            z = h @ W2 + b2
            loss = (ad.logsumexp(z, axis=1) - z[rows, y]).mean()
            loss.backward()
        return float(loss.data), lambda: [p.grad for p in ps]
    return step


def _mlp_autograd(params, X, y):
    import autograd
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    def f(ps):
        W1, b1, W2, b2 = ps
        z = anp.tanh(X @ W1 + b1) @ W2 + b2
        return anp.mean(logsumexp(z, axis=1) - z[np.arange(len(y)), y])
    return lambda: autograd.value_and_grad(f)(params)


def _mlp_torch(params, X, y):
    import torch
    ps = [torch.tensor(p, requires_grad=True) for p in params]
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)

    def step():
        W1, b1, W2, b2 = ps
        for p in ps:
            p.grad = None
        z = torch.tanh(Xt @ W1 + b1) @ W2 + b2
        loss = torch.nn.functional.cross_entropy(z, yt)
        loss.backward()
        return loss.item(), [p.grad.numpy() for p in ps]
    return step


def _mlp_recorded(params, X, y):
    import pyautodiff as ad
    rows = np.arange(len(y))

    def loss(W1, b1, W2, b2):
        z = ad.tanh(X @ W1 + b1) @ W2 + b2
        return (ad.logsumexp(z, axis=1) - z[rows, y]).mean()
    F = ad.record(loss, *params, argnum=(0, 1, 2, 3))
    return lambda: F.value_and_grad(*params)


MLP = {"numpy (by hand)": _each_call(_mlp_numpy), "pyautodiff": _mlp_pyautodiff,
       "pyautodiff (recorded)": _mlp_recorded,
       "autograd": _mlp_autograd, "torch": _mlp_torch}


@problem("mlp-784-256-10", {"fwd+bwd": "ms"}, size=lambda cfg: "batch 128",
         note="mlp-784-256-10: one training step: tanh hidden layer, softmax "
              "cross-entropy, value and all four parameter gradients (parameters "
              "made before the timer); numpy (by hand) is the no-AD floor.")
def mlp(backend, cfg):
    step = _engine(MLP, backend)(*_mlp_data())
    ns, (loss, grads) = _timed(step)
    check = {"loss": float(loss), "|dW1|": float(np.abs(grads[0]).sum())}
    return Result({"fwd+bwd": [ns / 1e6]}, check)


# --- b. 1,000 chained elementwise ops on 10-element arrays -------------------

CHAIN = 1000


def _chain_numpy(x0, y):
    xs = [x0]
    x = x0
    for k in range(CHAIN):         # forward, keeping what backward needs
        kind = k % 4
        x = x + y if kind == 0 else x * y if kind == 1 else np.tanh(x) if kind == 2 else np.exp(x)
        xs.append(x)
    g = np.ones_like(x)
    gy = np.zeros_like(y)
    for k in reversed(range(CHAIN)):
        kind, before, after = k % 4, xs[k], xs[k + 1]
        if kind == 0:
            gy += g
        elif kind == 1:
            gy += g * before
            g = g * y
        elif kind == 2:
            g = g * (1.0 - after * after)
        else:
            g = g * after
    return x.sum(), [g, gy]


def _chain_ops(x, y, tanh, exp):
    for k in range(CHAIN):
        kind = k % 4
        x = x + y if kind == 0 else x * y if kind == 1 else tanh(x) if kind == 2 else exp(x)
    return x.sum()


def _chain_pyautodiff(x0, y0):
    import pyautodiff as ad
    x, y = ad.Array(x0), ad.Array(y0)
    with ad.Tape():
        s = _chain_ops(x, y, ad.tanh, ad.exp)
        s.backward()
    return float(s.data), lambda: [x.grad, y.grad]


def _chain_autograd(x0, y0):
    import autograd
    import autograd.numpy as anp
    return autograd.value_and_grad(
        lambda xy: _chain_ops(xy[0], xy[1], anp.tanh, anp.exp))([x0, y0])


def _chain_torch(x0, y0):
    import torch
    x, y = torch.tensor(x0, requires_grad=True), torch.tensor(y0, requires_grad=True)
    s = _chain_ops(x, y, torch.tanh, torch.exp)
    s.backward()
    return s.item(), [x.grad.numpy(), y.grad.numpy()]


def _chain_recorded(x0, y0):
    import pyautodiff as ad
    F = ad.record(lambda x, y: _chain_ops(x, y, ad.tanh, ad.exp), x0, y0,
                  argnum=(0, 1))

    def step():
        value, (gx, gy) = F.value_and_grad(x0, y0)
        return value, [gx, gy]
    return step


CHAIN_IMPLS = {"numpy (by hand)": _each_call(_chain_numpy),
               "pyautodiff": _each_call(_chain_pyautodiff),
               "pyautodiff (recorded)": _chain_recorded,
               "autograd": _each_call(_chain_autograd),
               "torch": _each_call(_chain_torch)}


@problem("array-chain", {"fwd+bwd": "us/op"}, size=lambda cfg: f"{CHAIN} ops, 10 elements",
         note="array-chain: add, mul, tanh, exp in turn on 10-element arrays, value "
              "and gradients; microseconds per op.")
def array_chain(backend, cfg):
    rng = np.random.default_rng(1)
    x0, y0 = rng.uniform(-0.5, 0.5, size=10), rng.uniform(0.5, 0.9, size=10)
    ns, (value, grads) = _timed(_engine(CHAIN_IMPLS, backend)(x0, y0))
    return Result({"fwd+bwd": [ns / 1e3 / CHAIN]},
                  {"value": float(value), "|dy|": float(np.abs(grads[1]).sum())})


# --- c. the Rosenbrock gradient, n = 10,000 ----------------------------------

def _rosen(x, np_):
    return np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rosen_numpy(x):
    g = np.zeros_like(x)
    d = x[1:] - x[:-1] ** 2
    g[:-1] = -400.0 * x[:-1] * d - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * d
    return _rosen(x, np), g


def _rosen_pyautodiff(x0):
    import pyautodiff as ad
    x = ad.Array(x0)
    with ad.Tape():
        f = _rosen(x, ad)
        f.backward()
    return float(f.data), lambda: x.grad


def _rosen_autograd(x0):
    import autograd
    import autograd.numpy as anp
    return autograd.value_and_grad(lambda x: _rosen(x, anp))(x0)


def _rosen_torch(x0):
    import torch
    x = torch.tensor(x0, requires_grad=True)
    f = _rosen(x, torch)
    f.backward()
    return f.item(), x.grad.numpy()


def _rosen_recorded(x0):
    import pyautodiff as ad
    F = ad.record(lambda x: _rosen(x, ad), x0)
    return lambda: F.value_and_grad(x0)


ROSEN = {"numpy (by hand)": _each_call(_rosen_numpy),
         "pyautodiff": _each_call(_rosen_pyautodiff),
         "pyautodiff (recorded)": _rosen_recorded,
         "autograd": _each_call(_rosen_autograd),
         "torch": _each_call(_rosen_torch)}


@problem("rosenbrock-grad", {"value+grad": "ms"}, size=lambda cfg: "n = 10,000",
         note="rosenbrock-grad: the vectorised Rosenbrock function and its gradient.")
def rosenbrock(backend, cfg):
    x0 = np.linspace(-1.0, 1.5, 10_000)
    ns, (value, grad) = _timed(_engine(ROSEN, backend)(x0))
    return Result({"value+grad": [ns / 1e6]},
                  {"value": float(value), "|grad|": float(np.abs(grad).sum())})


# --- d. what an extern entry costs: 1,000 products of 2x2 matrices -----------
# Matrix products are EXTERN entries: the C sweeps call back into Python,
# which calls NumPy.  On tiny inputs the product itself is nearly free, so
# the time per op against NumPy's own calls is the callback's overhead.

EXTERN_CHAIN = 1000


def _extern_numpy(y0, A):
    ys = [y0]
    y = y0
    for _ in range(EXTERN_CHAIN):      # forward, keeping what backward needs
        y = y @ A
        ys.append(y)
    g = np.ones_like(y)
    gA = np.zeros_like(A)
    for k in reversed(range(EXTERN_CHAIN)):
        gA += ys[k].T @ g
        g = g @ A.T
    return y.sum(), [g, gA]


def _extern_ops(y, A):
    for _ in range(EXTERN_CHAIN):
        y = y @ A
    return y.sum()


def _extern_pyautodiff(y0, A0):
    import pyautodiff as ad
    y, A = ad.Array(y0), ad.Array(A0)
    with ad.Tape():
        s = _extern_ops(y, A)
        s.backward()
    return float(s.data), lambda: [y.grad, A.grad]


def _extern_autograd(y0, A0):
    import autograd
    return autograd.value_and_grad(lambda ps: _extern_ops(*ps))([y0, A0])


EXTERN_IMPLS = {"numpy (by hand)": _each_call(_extern_numpy),
                "pyautodiff": _each_call(_extern_pyautodiff),
                "autograd": _each_call(_extern_autograd)}


@problem("extern-call", {"fwd+bwd": "us/op"},
         size=lambda cfg: f"{EXTERN_CHAIN} products of 2x2 matrices",
         note="extern-call: a chain of tiny matrix products, value and both "
              "gradients; pyautodiff runs each product as an extern entry (a "
              "callback from the C sweep into NumPy), so its excess over NumPy "
              "by hand (three products per op) is the callback's overhead.")
def extern_call(backend, cfg):
    rng = np.random.default_rng(2)
    y0 = rng.normal(size=(2, 2))
    A0 = rng.normal(size=(2, 2)) * 0.5 + np.eye(2) * 0.5
    ns, (value, grads) = _timed(_engine(EXTERN_IMPLS, backend)(y0, A0))
    return Result({"fwd+bwd": [ns / 1e3 / EXTERN_CHAIN]},
                  {"value": float(value), "|dA|": float(np.abs(grads[1]).sum())})
