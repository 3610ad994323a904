"""A drop-in for the ``micrograd`` package: ``from pyautodiff.micrograd.engine
import Value`` and ``from pyautodiff.micrograd.nn import MLP`` run micrograd
programs unchanged, with micrograd's numbers."""
from .engine import Value
from .nn import MLP, Layer, Module, Neuron

__all__ = ["Value", "Module", "Neuron", "Layer", "MLP"]
