"""python -m pyautodiff: a short tour (pyautodiff/demo.py): micrograd's moons
MLP with its speed-up, then an optimization with exact derivatives."""
from .demo import tour

tour()
