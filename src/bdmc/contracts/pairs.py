"""Estimator pairs: a lower and an upper estimator of ``log p(y)`` that sandwich it at one knob, in one registry.

A pair is one bidirectional function ``run(key, model, data, *, direction, exact_latent=None, num_runs=...,
<knob>=..., ...) -> Estimate`` and one :class:`EstimatorPair` record. :func:`register_pair` makes the two
directions the two estimators of :data:`~bdmc.contracts.estimate.ESTIMATORS` (the lower runs ``"forward"``,
from the prior; the upper ``"reverse"``, from the exact posterior sample) and files the record in
:data:`PAIRS`. Everything that speaks of a pair (the sandwich, the bug alarm, the ``bdmc`` commands, the
figures and the docs) reads it from here, so a new pair is one module and its test (docs/contributing.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..errors import OptionError, OptionTypeError
from .estimate import ESTIMATORS, Estimate, EstimatorInfo, Side, register_estimator, unregister_estimator

# Options of bdmc.sandwich handed to a pair's estimators when both of their signatures take them.
PASSED_ON = ("kernel", "schedule", "num_particles", "progress")
FALLBACK_STYLE = ("#7f7f7f", "*")  # colour and marker of an estimator whose pair names none


class Direction(NamedTuple):
    """One side of a pair, as data: where its chains start and how its weights become a bound.

    Attributes
    ----------
    name : {"forward", "reverse"}
    bound : {"lower", "upper"}
        The side of ``log p(y)`` its runs bound stochastically.
    sign : float
        A run's estimate is ``sign * log-weight``: forward weights estimate ``Z``, reverse ones ``1 / Z``.
    start : {"prior", "exact"}
        Its chains start from prior draws, or from the exact posterior sample (the latent that generated the
        simulated data), and walk the path backwards.
    """

    name: str
    bound: Side
    sign: float
    start: str

    @property
    def forward(self) -> bool:
        return self.name == "forward"

    def visit(self, path, *, head: int = 0):
        """The rows a run visits: ``path`` forward, or reversed after ``head`` rows of its end (lambda = 1)."""
        if self.forward:
            return path
        return np.concatenate([np.repeat(path[-1:], int(head), axis=0), path[::-1]])


FORWARD = Direction("forward", "lower", 1.0, "prior")
REVERSE = Direction("reverse", "upper", -1.0, "exact")
DIRECTIONS = ("forward", "reverse")  # the lower bound's rows, then the upper bound's
BY_NAME = {d.name: d for d in (FORWARD, REVERSE)}


def direction_of(name: str) -> Direction:
    """The :class:`Direction` named ``name``; an OptionError names the two."""
    if name not in BY_NAME:
        raise OptionError(f"direction must be 'forward' or 'reverse', got {name!r}")
    return BY_NAME[name]


@dataclass(frozen=True)
class EstimatorPair:
    """A lower and an upper estimator of :data:`ESTIMATORS` that sandwich ``log p(y)`` at one knob.

    Attributes
    ----------
    name : str
        The ``method`` of :func:`bdmc.sandwich`, ``bdmc sandwich --method`` and the table's ``method`` column.
    lower, upper : str
        Registry names of the lower-bound estimator (run forward, from the prior) and of the upper-bound one
        (run in reverse, from the exact posterior sample).
    knob : str
        The keyword of the budget both estimators take and a sandwich varies (``num_steps``, ``num_moves``).
    symbol : str
        How tables and messages name the knob ("T", "moves").
    nouns : (str, str)
        The knob in sentences, singular and plural ("chain length", "chain lengths").
    axis : str
        The knob's axis label in figures.
    labels : (str, str)
        How the alarm, tables and figures name the lower and the upper estimator ("forward AIS", "reverse AIS").
    remedy : str
        What gives weights that support a ± with this pair (its knob first, then the other levers), as the
        ``bdmc sandwich`` summary words it.
    summary : str
        One line for ``--method`` help: what the pair is and what its knob counts.
    smallest : int
        The smallest knob value the pair can run (a path needs the prior and the posterior: T >= 2).
    default_knob : int
        The knob of a single check when none is given (:func:`bdmc.check_estimate`).
    particles : int or None
        Particles per run when a sandwich is not told; None for a pair of single chains (no particles option).
    styles : ((str, str), (str, str))
        Colour and marker of the lower and the upper estimator in benchmark figures.
    """

    name: str
    lower: str
    upper: str
    knob: str
    symbol: str
    nouns: tuple[str, str]
    axis: str
    labels: tuple[str, str]
    remedy: str
    summary: str
    smallest: int = 1
    default_knob: int = 100
    particles: int | None = None
    styles: tuple = (FALLBACK_STYLE, FALLBACK_STYLE)

    @property
    def estimators(self) -> tuple[EstimatorInfo, EstimatorInfo]:
        """The registry entries of the lower and the upper estimator."""
        return ESTIMATORS[self.lower], ESTIMATORS[self.upper]

    def estimator(self, direction: str) -> str:
        """The registry name of the estimator that runs ``direction``."""
        return (self.lower, self.upper)[DIRECTIONS.index(direction_of(direction).name)]

    @property
    def options(self) -> tuple[str, ...]:
        """The options of a sandwich (of :data:`PASSED_ON`) that both estimators take."""
        takes = [set(inspect.signature(info.fn).parameters) for info in self.estimators]
        return tuple(o for o in PASSED_ON if all(o in t for t in takes))

    def label(self, direction: str, knob: int) -> str:
        """The name of one bound in messages, e.g. "forward AIS T=100" or "SHME moves=3"."""
        return f"{self.labels[DIRECTIONS.index(direction)]} {self.symbol}={int(knob)}"

    def run(self, direction: str, key, model, data, *, knob: int, num_runs: int, exact_latent=None,
            **options) -> Estimate:
        """One estimate: the lower (``"forward"``) or upper (``"reverse"``) estimator at knob value ``knob``.

        ``options`` are any of :data:`PASSED_ON`; those the pair does not take are dropped (e.g. ``schedule``
        for SMC, which follows the data path), and so is ``num_particles=None`` (the estimators' default).
        """
        info = ESTIMATORS[self.estimator(direction)]
        kwargs = {k: v for k, v in options.items() if k in self.options and not (k == "num_particles" and v is None)}
        if not direction_of(direction).forward:
            kwargs["exact_latent"] = exact_latent
        return info(key, model, data, **{self.knob: int(knob)}, num_runs=int(num_runs), **kwargs)


PAIRS: dict[str, EstimatorPair] = {}


def estimator_pair(name: str) -> EstimatorPair:
    """The :class:`EstimatorPair` named ``name``; an OptionError names the choices for an unknown one."""
    if name not in PAIRS:
        raise OptionError(f"unknown method {name!r}; choose one of: {', '.join(PAIRS)}")
    return PAIRS[name]


def pair_of(estimator: str | None) -> tuple[EstimatorPair, str] | None:
    """The pair a registry name belongs to and the direction it runs, or None for an estimator of no pair."""
    for pair in PAIRS.values():
        if estimator in (pair.lower, pair.upper):
            return pair, DIRECTIONS[(pair.lower, pair.upper).index(estimator)]
    return None


def register_pair(pair: EstimatorPair, run: Callable, *, knobs: tuple, estimator_labels: tuple[str, str],
                  docs: tuple[str, str], names: tuple[str, str], requires: tuple = (),
                  kernel_requires: tuple = ()) -> tuple[Callable, Callable]:
    """File ``pair`` in :data:`PAIRS` and register both directions of ``run`` as its two estimators.

    Parameters
    ----------
    pair : EstimatorPair
    run : callable
        ``run(key, model, data, *, direction, exact_latent=None, num_runs=..., <pair.knob>=..., ...)``: one
        function for both directions (:mod:`bdmc.core.runner` runs either).
    knobs : tuple of int
        Both estimators' default benchmark sweep.
    estimator_labels : (str, str)
        The registry labels of the two estimators (benchmark figures: "AIS", "rev AIS").
    docs : (str, str)
        The docstrings of the lower and the upper function.
    names : (str, str)
        Their Python names (``forward_ais``, ``reverse_ais``).
    requires, kernel_requires : tuple
        Capabilities both need of the model and of its default kernel.

    Returns
    -------
    (callable, callable)
        The lower and the upper estimator, each ``fn(key, model, data, *, exact_latent=None, ...)``.
    """
    if pair.name in PAIRS and _origin(PAIRS[pair.name]) != _origin_of(run):
        raise OptionError(f"estimator pair {pair.name!r} is already registered")
    signature = inspect.signature(run)
    if "direction" not in signature.parameters:
        raise OptionTypeError(f"the run of pair {pair.name!r} ({run.__qualname__}) takes no keyword 'direction'")
    fns = []
    for direction, registry_name, label, doc, py_name in zip(DIRECTIONS, (pair.lower, pair.upper), estimator_labels,
                                                              docs, names, strict=True):
        fn = _directed(run, direction, signature, name=py_name, doc=doc)
        side = BY_NAME[direction]
        fns.append(register_estimator(registry_name, label=label, knob=pair.knob, knobs=knobs, bound=side.bound,
                                      needs_exact=not side.forward, requires=requires,
                                      kernel_requires=kernel_requires)(fn))
    PAIRS[pair.name] = pair
    _RUNS[pair.name] = run
    return fns[0], fns[1]


def unregister_pair(name: str) -> None:
    """Remove the pair ``name`` and its two estimators from the registries (a test's teardown)."""
    pair = PAIRS.pop(name, None)
    _RUNS.pop(name, None)
    if pair is not None:
        for estimator in (pair.lower, pair.upper):
            unregister_estimator(estimator)


_RUNS: dict[str, Callable] = {}  # each pair's bidirectional function, so a reloaded module re-registers


def _origin(pair: EstimatorPair) -> tuple:
    return _origin_of(_RUNS[pair.name])


def _origin_of(fn) -> tuple:
    return fn.__module__, fn.__qualname__


def _directed(run: Callable, direction: str, signature: inspect.Signature, *, name: str, doc: str) -> Callable:
    """``run`` with ``direction`` fixed, under the signature of ``run`` less that keyword."""

    def estimator(key, model, data, **options):
        return run(key, model, data, direction=direction, **options)

    estimator.__signature__ = signature.replace(
        parameters=[p for p in signature.parameters.values() if p.name != "direction"])
    estimator.__name__ = estimator.__qualname__ = name
    estimator.__module__ = run.__module__
    estimator.__doc__ = doc
    estimator.__annotations__ = {k: v for k, v in getattr(run, "__annotations__", {}).items() if k != "direction"}
    return estimator


__all__ = ["BY_NAME", "DIRECTIONS", "Direction", "EstimatorPair", "FORWARD", "PAIRS", "PASSED_ON", "REVERSE",
           "direction_of", "estimator_pair", "pair_of", "register_pair", "unregister_pair"]
