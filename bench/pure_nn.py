"""micrograd's nn on the pure-Python engine: pyautodiff.micrograd.nn's
network code (micrograd's constructors, order of random draws and of
arithmetic) with the pure engine's Value, so a seeded model has the same
weights and does the same arithmetic on every backend."""
from bench.pure_engine import Value
from pyautodiff.micrograd import nn


class Neuron(nn.Neuron):
    value_type = Value


class Layer(nn.Layer):
    neuron_type = Neuron


class MLP(nn.MLP):
    layer_type = Layer


Module = nn.Module
