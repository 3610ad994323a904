"""python -m pyautodiff: train micrograd's moons MLP and show the speed-up."""
from .demo import main

main()
