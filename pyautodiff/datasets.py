"""Small deterministic toy data sets, standard library only."""
import math
import random


def make_moons(n=100, noise=0.1, seed=1337):
    """Two interleaving half circles, built the way scikit-learn's
    make_moons builds them (outer moon first, shuffled, then Gaussian
    noise), with labels -1 and +1 as micrograd's demo uses them.

    Returns (X, y): X a list of [x0, x1] floats, y a list of ints.
    """
    rng = random.Random(seed)
    n_out = n // 2
    n_in = n - n_out
    points = []
    for i in range(n_out):
        t = math.pi * i / (n_out - 1) if n_out > 1 else 0.0
        points.append(([math.cos(t), math.sin(t)], -1))
    for i in range(n_in):
        t = math.pi * i / (n_in - 1) if n_in > 1 else 0.0
        points.append(([1 - math.cos(t), 1 - math.sin(t) - 0.5], 1))
    rng.shuffle(points)
    X = [[x0 + rng.gauss(0.0, noise), x1 + rng.gauss(0.0, noise)]
         for (x0, x1), _ in points]
    y = [label for _, label in points]
    return X, y
