"""Problems x backends.

A problem is a function ``fn(backend, cfg) -> Result`` registered with
``@problem``.  The runner calls it once per repeat and backend, interleaved,
and prints one table row per (problem, metric, backend).  New rows (arrays,
record-once replay, ...) are new registered functions; nothing else changes.
"""
from dataclasses import dataclass, field
from typing import Callable

PROBLEMS = []


@dataclass(frozen=True)
class Problem:
    name: str
    fn: Callable
    metrics: dict                       # metric name -> unit, e.g. {"backward": "ns/op"}
    size: Callable = lambda cfg: ""     # cfg -> short text for the table, e.g. "100k ops"
    note: str = ""                      # printed under the table


@dataclass
class Result:
    samples: dict                               # metric -> list of times, in the metric's unit
    check: dict = field(default_factory=dict)   # name -> float, compared across backends
    note: str = ""                              # what this backend ran differently, if anything


class Unsupported(Exception):
    """A problem cannot run on a backend (say why); the row is left out."""


def problem(name, metrics, size=lambda cfg: "", note=""):
    def register(fn):
        PROBLEMS.append(Problem(name, fn, dict(metrics), size, note))
        return fn
    return register
