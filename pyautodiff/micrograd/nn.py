"""micrograd's ``nn`` (Module, Neuron, Layer, MLP) on pyautodiff Values.

Same constructors, same order of random draws and the same order of
arithmetic as micrograd, so a seeded model has micrograd's parameters and
gives micrograd's outputs.  The scalar type is a class attribute
(``Neuron.value_type``, ``Layer.neuron_type``, ``MLP.layer_type``), so the
same network code runs on another engine by subclassing.
"""
import random

from .engine import Value


class Module:

    def zero_grad(self):
        for p in self.parameters():
            p.grad = 0

    def parameters(self):
        return []


class Neuron(Module):
    """Weighted sum of the inputs plus a bias, then ReLU unless nonlin=False."""

    value_type = Value

    def __init__(self, nin, nonlin=True):
        self.w = [self.value_type(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = self.value_type(0)
        self.nonlin = nonlin

    def __call__(self, x):
        # the bias starts the sum, as in micrograd: b + w0*x0 + w1*x1 + ...
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        return act.relu() if self.nonlin else act

    def parameters(self):
        return self.w + [self.b]

    def __repr__(self):
        kind = "ReLU" if self.nonlin else "Linear"
        return f"{kind}Neuron({len(self.w)})"


class Layer(Module):
    """nout neurons over the same inputs; one output comes back unwrapped."""

    neuron_type = Neuron

    def __init__(self, nin, nout, **kwargs):
        self.neurons = [self.neuron_type(nin, **kwargs) for _ in range(nout)]

    def __call__(self, x):
        outs = [neuron(x) for neuron in self.neurons]
        return outs[0] if len(outs) == 1 else outs

    def parameters(self):
        return [p for neuron in self.neurons for p in neuron.parameters()]

    def __repr__(self):
        return f"Layer of [{', '.join(str(n) for n in self.neurons)}]"


class MLP(Module):
    """Layers of sizes nin -> nouts[0] -> ... ; the last one is linear."""

    layer_type = Layer

    def __init__(self, nin, nouts):
        sizes = [nin] + list(nouts)
        last = len(nouts) - 1
        self.layers = [self.layer_type(sizes[i], sizes[i + 1], nonlin=i != last)
                       for i in range(len(nouts))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self):
        return f"MLP of [{', '.join(str(layer) for layer in self.layers)}]"
