"""One neuron, o = tanh(x1*w1 + x2*w2 + b), and the gradient of its output
with respect to every input, weight and the bias, from one backward().

    python examples/tanh_neuron.py

With b chosen so that the pre-activation is 0.8813735870195432 (atanh of
1/sqrt(2)), o = 1/sqrt(2) and do/dn = 1 - o**2 = 1/2, so every gradient is
half of what the product rule gives: x1.grad = w1/2, w1.grad = x1/2, ...
"""
import argparse

import pyautodiff as ad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.parse_args(argv)
    x1, x2 = ad.Value(2.0, label="x1"), ad.Value(0.0, label="x2")
    w1, w2 = ad.Value(-3.0, label="w1"), ad.Value(1.0, label="w2")
    b = ad.Value(6.8813735870195432, label="b")
    n = x1 * w1 + x2 * w2 + b                   # pre-activation
    o = n.tanh()
    o.backward()

    print(f"o = tanh({n.data:.10f}) = {o.data:.4f}")
    grads = {}
    for v in (x1, w1, x2, w2, b):
        grads[v.label] = v.grad
        print(f"d o / d {v.label:2s} = {v.grad:+.4f}")
    return o.data, grads


if __name__ == "__main__":
    main()
