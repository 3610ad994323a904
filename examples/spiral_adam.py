"""A batched classifier: ad.nn.MLP learns three interleaved spiral arms
with Adam and the cross-entropy loss, the whole batch in each step.

    python examples/spiral_adam.py [--points 100] [--steps 400] [--hidden 64]

Each forward pass is a few Array operations on the tape (matrix products,
tanh, log-softmax), however many points there are.
"""
import argparse

import numpy as np

import pyautodiff as ad
from pyautodiff import nn


def make_spiral(points_per_class, classes=3, noise=0.2, seed=0):
    """`classes` arms winding out from the origin, each a class: point j of
    arm k sits at radius j/n and angle 4k + 4j/n (+ noise) radians."""
    rng = np.random.default_rng(seed)
    n = points_per_class
    X = np.empty((n * classes, 2))
    y = np.repeat(np.arange(classes), n)
    radius = np.linspace(0.0, 1.0, n)
    for k in range(classes):
        angle = np.linspace(4.0 * k, 4.0 * (k + 1), n) + rng.normal(0, noise, n)
        X[k * n:(k + 1) * n] = np.column_stack([radius * np.sin(angle),
                                                radius * np.cos(angle)])
    return X, y


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=100, help="points per class")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    X, y = make_spiral(args.points, seed=args.seed)
    model = nn.MLP([2, args.hidden, args.hidden, 3], activation="tanh",
                   rng=args.seed)
    opt = ad.optim.Adam(model.parameters(), lr=args.lr)
    print(f"{model}: {sum(p.size for p in model.parameters())} weights, "
          f"{len(X)} points in 3 classes")

    for step in range(args.steps):
        logits = model(X)
        loss = nn.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            accuracy = np.mean(logits.data.argmax(axis=1) == y)
            print(f"step {step:4d}  loss {loss.item():.4f}  "
                  f"accuracy {accuracy:.1%}")
    with ad.no_grad():
        accuracy = float(np.mean(model(X).data.argmax(axis=1) == y))
    print(f"final training accuracy {accuracy:.1%}")
    return accuracy


if __name__ == "__main__":
    main()
