"""Fit a line by gradient descent: two scalar parameters, w and b, learn
y = x - 1 from a handful of points, driven by ad.optim.SGD.

    python examples/linear_regression.py [--steps 300] [--lr 0.05]
"""
import argparse

import pyautodiff as ad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args(argv)

    xs = [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0]
    ys = [x - 1.0 for x in xs]                  # the line to recover
    w, b = ad.Value(0.0), ad.Value(0.0)
    opt = ad.optim.SGD([w, b], lr=args.lr)

    for step in range(args.steps):
        # mean squared error of the current line over the points
        loss = sum((w * x + b - y) ** 2 for x, y in zip(xs, ys)) / len(xs)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.data:.3e}  "
                  f"w {w.data:+.4f}  b {b.data:+.4f}")
    print(f"fitted y = {w.data:.4f} * x + ({b.data:.4f})")
    return w.data, b.data


if __name__ == "__main__":
    main()
