"""micrograd's two-moons classifier, unchanged, on pyautodiff.

A micrograd MLP (2 -> 16 -> 16 -> 1, 337 scalar parameters) learns to
separate two interleaved half circles with the max-margin loss and L2
regularization of micrograd's demo.  The network is the micrograd drop-in
(pyautodiff.micrograd.nn); the update is micrograd's hand-written SGD with a
decaying learning rate, or ad.optim.Adam on the same 337 Values.

    python examples/moons_mlp.py [--steps 100] [--points 100] [--optimizer sgd|adam]
"""
import argparse
import time

import pyautodiff as ad
from pyautodiff.datasets import make_moons
from pyautodiff.demo import make_model, moons_loss
from pyautodiff.micrograd.engine import Value
from pyautodiff.micrograd.nn import MLP


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd")
    args = ap.parse_args(argv)

    X, y = make_moons(args.points, noise=0.1)
    model = make_model(MLP)                     # micrograd's seeded weights
    params = model.parameters()
    adam = ad.optim.Adam(params, lr=0.02) if args.optimizer == "adam" else None
    print(f"{model}\n{len(params)} parameters, {len(X)} points, "
          f"{args.optimizer}")

    t0 = time.perf_counter()
    for step in range(args.steps):
        loss, accuracy = moons_loss(model, Value, X, y)
        model.zero_grad()
        loss.backward()
        if adam is not None:
            adam.step()
        else:
            lr = 1.0 - 0.9 * step / args.steps  # micrograd's schedule
            for p in params:
                p.data -= lr * p.grad
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step:3d}  loss {loss.data:.4f}  "
                  f"accuracy {accuracy:.0%}")
    elapsed = time.perf_counter() - t0
    print(f"{args.steps} steps in {elapsed:.2f} s; final training accuracy "
          f"{accuracy:.0%}")
    return accuracy


if __name__ == "__main__":
    main()
