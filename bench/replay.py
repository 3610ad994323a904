"""Record once, replay many; and exact second derivatives.

- replay-chain: the scalar chain of bench/scalar.py recorded once with
  ad.record, then value and gradient per replay, against engines that must
  record again each time (pure Python, micrograd).
- replay-moons: micrograd's moons training step, the loss recorded once as
  a function of the 337 parameters and replayed every step.
- hessian-rosenbrock: the full Hessian at n = 100.
- mlp-hvp: a Hessian-vector product of the 784-256-10 MLP loss, against one
  gradient of the same loss.
"""
import random
import time

import numpy as np

from bench.arrays import _engine, _mlp_data
from bench.registry import Result, Unsupported, problem
from bench.scalar import (LEAVES, MOONS_SEED, _bind, _run, chain_ops, chain_plan,
                          moons_step, moons_steps)
from pyautodiff.datasets import make_moons


def _median_ns(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        out = fn()
        times.append(time.perf_counter_ns() - t0)
    return sorted(times)[len(times) // 2], out


# --- the scalar chain, recorded once ------------------------------------------

@problem("replay-chain", {"value+grad": "ns/op"},
         size=lambda cfg: f"{chain_ops(cfg) // 1000}k ops",
         note="replay-chain: the scalar-chain's ops; pyautodiff records them once "
              "(ad.record) and each sample is one replay of value and gradient in "
              "C; the other engines record and sweep again. Compare the "
              "scalar-chain rows for pyautodiff re-recording. CasADi (SX Function) "
              "is compared when installed.")
def replay_chain(backend, cfg):
    n = chain_ops(cfg)
    plan = chain_plan(n)
    if backend.name == "pyautodiff":
        import pyautodiff as ad

        def chain(*leaves):
            return _run(leaves[0], _bind(plan, leaves, ad.tanh))
        F = ad.record(chain, *LEAVES, argnum=(0, 1, 2, 3))
        ns, (value, grads) = _median_ns(lambda: F.value_and_grad(*LEAVES), 5)
        check = {"tanh value": value}
        check.update({f"tanh grad[{i}]": g for i, g in enumerate(grads)})
        return Result({"value+grad": [ns / n]}, check, "recorded once")
    if backend.name == "casadi":
        return _casadi_chain(plan, n)
    if not backend.scalar or backend.Value is None:
        raise Unsupported("no scalar engine")

    def eager():
        leaves = [backend.Value(v) for v in LEAVES]
        y = _run(leaves[0], _bind(plan, leaves, backend.unary))
        y.backward()
        return y, leaves
    ns, (y, leaves) = _median_ns(eager, 1)
    check = {f"{backend.unary_name} value": y.data}
    check.update({f"{backend.unary_name} grad[{i}]": leaf.grad
                  for i, leaf in enumerate(leaves)})
    return Result({"value+grad": [ns / n]}, check, "records again")


def _casadi_chain(plan, n):
    import casadi
    xs = [casadi.SX.sym(f"x{i}") for i in range(len(LEAVES))]
    y = _run(xs[0], _bind(plan, xs, casadi.tanh))
    x = casadi.vertcat(*xs)
    f = casadi.Function("f", [x], [y, casadi.gradient(y, x)])
    ns, (value, grad) = _median_ns(lambda: f(LEAVES), 5)
    check = {"tanh value": float(value)}
    check.update({f"tanh grad[{i}]": float(grad[i]) for i in range(len(LEAVES))})
    return Result({"value+grad": [ns / n]}, check, "SX Function, built once")


# --- micrograd's moons step, recorded once -------------------------------------

def _moons_loss(params, sizes, X, y, alpha=1e-4):
    """micrograd's demo loss with its MLP's weights taken from the flat list
    params (in micrograd's parameters() order): relu layers, a linear last."""
    k = 0
    scores = []
    layers = []
    for nin, nout in zip(sizes, sizes[1:]):
        neurons = []
        for _ in range(nout):
            neurons.append((params[k:k + nin], params[k + nin]))
            k += nin + 1
        layers.append(neurons)
    for a, b in X:
        row = [a, b]
        for depth, neurons in enumerate(layers):
            out = []
            for w, bias in neurons:
                act = sum((wi * xi for wi, xi in zip(w, row)), bias)
                out.append(act.relu() if depth < len(layers) - 1 else act)
            row = out
        scores.append(row[0])
    losses = [(1 + -yi * si).relu() for yi, si in zip(y, scores)]
    data_loss = sum(losses) * (1.0 / len(losses))
    reg_loss = alpha * sum(p * p for p in params)
    return data_loss + reg_loss


@problem("replay-moons", {"train step": "ms/step"},
         size=lambda cfg: "MLP 2-16-16-1, 100 pts",
         note="replay-moons: the moons-step's training step; pyautodiff records the "
              "loss once as a function of the 337 parameters (ad.record) and each "
              "step replays value and gradient in C, then updates the parameters; "
              "the other engines run micrograd's demo step.")
def replay_moons(backend, cfg):
    X, y = make_moons(100, noise=0.1, seed=MOONS_SEED)
    if backend.name == "pyautodiff":
        import pyautodiff as ad
        from pyautodiff.micrograd.nn import MLP
        random.seed(MOONS_SEED)
        params = [p.data for p in MLP(2, [16, 16, 1]).parameters()]
        X = [[float(a), float(b)] for a, b in X]
        y = [int(v) for v in y]
        F = ad.record(lambda ps: _moons_loss(ps, [2, 16, 16, 1], X, y), params)
        times, check = [], {}
        for k in range(moons_steps(cfg)):
            t0 = time.perf_counter_ns()
            loss, grads = F.value_and_grad(params)
            lr = 1.0 - 0.9 * k / 100
            params = [p - lr * g for p, g in zip(params, grads)]
            times.append((time.perf_counter_ns() - t0) / 1e6)
            check[f"loss at step {k}"] = loss
        return Result({"train step": times}, check, "recorded once")
    return moons_step(backend, cfg)     # micrograd's demo step, as in moons-step


# --- the Hessian of Rosenbrock at n = 100 ------------------------------------

def _rosen(x, np_):
    return np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rosen_hessian_numpy(x):
    n = len(x)
    h = np.zeros((n, n))
    d = np.arange(n - 1)
    h[d, d] = 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    h[d + 1, d + 1] += 200.0
    h[d, d + 1] = h[d + 1, d] = -400.0 * x[:-1]
    return h


def _rosen_hessian_pyautodiff(x):
    import pyautodiff as ad
    return ad.hessian(lambda v: _rosen(v, np))(x)


def _rosen_hessian_autograd(x):
    import autograd
    import autograd.numpy as anp
    return autograd.hessian(lambda v: _rosen(v, anp))(x)


def _rosen_hessian_torch(x):
    import torch
    from torch.func import hessian
    return hessian(lambda v: _rosen(v, torch))(torch.tensor(x)).numpy()


HESSIANS = {"numpy (by hand)": _rosen_hessian_numpy,
            "pyautodiff": _rosen_hessian_pyautodiff,
            "autograd": _rosen_hessian_autograd, "torch": _rosen_hessian_torch}


@problem("hessian-rosenbrock", {"hessian": "ms"}, size=lambda cfg: "n = 100",
         note="hessian-rosenbrock: the full Hessian, traced at each call; pyautodiff "
              "runs one tangent and one second-order sweep per column; numpy (by "
              "hand) fills the analytic tridiagonal Hessian.")
def hessian_rosenbrock(backend, cfg):
    fn = _engine(HESSIANS, backend)
    x = np.linspace(-1.0, 1.5, 100)
    ns, h = _median_ns(lambda: fn(x), 1)
    return Result({"hessian": [ns / 1e6]},
                  {"trace": float(np.trace(h)), "|H|": float(np.abs(h).sum())})


# --- a Hessian-vector product of the MLP loss ------------------------------------

def _mlp_loss(np_, logsumexp, X, y):
    def loss(ps):
        W1, b1, W2, b2 = ps
        z = np_.tanh(X @ W1 + b1) @ W2 + b2
        return np_.mean(logsumexp(z, axis=1) - z[np.arange(len(y)), y])
    return loss


def _mlp_hvp_pyautodiff(params, v, X, y):
    import pyautodiff as ad
    loss = _mlp_loss(np, ad.logsumexp, X, y)
    t_grad, _ = _median_ns(lambda: ad.grad(loss)(params), 1)
    t_hvp, hv = _median_ns(lambda: ad.hvp(loss)(params, v), 1)
    return t_grad, t_hvp, hv


def _mlp_hvp_torch(params, v, X, y):
    import torch
    ps = [torch.tensor(p) for p in params]
    vs = [torch.tensor(p) for p in v]
    Xt, yt = torch.tensor(X), torch.tensor(y)

    def loss(*ws):
        W1, b1, W2, b2 = ws
        z = torch.tanh(Xt @ W1 + b1) @ W2 + b2
        return torch.nn.functional.cross_entropy(z, yt)
    t_grad, _ = _median_ns(lambda: torch.func.grad(loss, argnums=(0, 1, 2, 3))(*ps), 1)
    t_hvp, hv = _median_ns(lambda: torch.autograd.functional.hvp(loss, tuple(ps),
                                                                  tuple(vs))[1], 1)
    return t_grad, t_hvp, [h.numpy() for h in hv]


# (autograd's hessian_vector_product takes one array, not a list of them)
MLP_HVPS = {"pyautodiff": _mlp_hvp_pyautodiff, "torch": _mlp_hvp_torch}


@problem("mlp-hvp", {"grad": "ms", "hvp": "ms", "hvp/grad": "x"},
         size=lambda cfg: "784-256-10, batch 128",
         note="mlp-hvp: the mlp-784-256-10 loss; one gradient and one exact "
              "Hessian-vector product (along a random direction), each traced at "
              "the call; hvp/grad is their ratio.")
def mlp_hvp(backend, cfg):
    fn = _engine(MLP_HVPS, backend)
    params, X, y = _mlp_data()
    rng = np.random.default_rng(1)
    v = [rng.normal(size=p.shape) for p in params]
    t_grad, t_hvp, hv = fn(params, v, X, y)
    return Result({"grad": [t_grad / 1e6], "hvp": [t_hvp / 1e6],
                   "hvp/grad": [t_hvp / t_grad]},
                  {"|Hv|": float(sum(np.abs(h).sum() for h in hv))})

