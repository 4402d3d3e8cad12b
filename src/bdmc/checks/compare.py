"""Two implementations of one model must agree on ``log p(y)``: a check that sees density bugs the alarm cannot.

A wrong constant in a log-likelihood, or a wrong noise variance written consistently into a program, leaves
every forward/reverse comparison *within* that program honest: both directions bound the program's own
``log p(y)``, which is simply the wrong number. A second implementation of the same model (a built-in model
and its NumPyro program, two PPLs) bounds the right one, and the two cannot both be correct if their bounds
cross. The argument is the bug alarm's (:mod:`bdmc.checks.alarm`): A's pooled forward estimate ``L_A`` has
``E exp(L_A) = p_A(y)`` and B's pooled reverse estimate ``U_B`` has ``E exp(-U_B) = 1 / p_B(y)``; run with
independent randomness, ``E exp(L_A - U_B) = p_A(y) / p_B(y)``, which is 1 when both implement the same model
correctly, so ``P(L_A - U_B >= c) <= exp(-c)``. Testing ``L_A`` against ``U_B`` and ``L_B`` against ``U_A``,
each at ``alpha / 2``, fires with probability at most ``alpha`` when both are correct.

When the two latent representations agree (after ``to_b``), the log densities can also be compared directly at
the same points: equal up to rounding, different by a constant (a wrong normalizing constant: the offset is
reported), or different by a varying amount (a wrong variance, a missing term, a different parametrization).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..contracts.capabilities import CollapsedDensity, supports
from ..contracts.estimate import Estimate
from ..contracts.model import log_density, validate_data
from ..contracts.pairs import estimator_pair
from ..errors import BDMCError
from .alarm import ALPHA, BugAlarm, bug_alarm
from .sandwich import checked_steps, exact_log_marginal_or_none, given_or_simulated


@dataclass(frozen=True)
class DensityComparison:
    """``log f_A(x) - log f_B(to_b(x))`` at the same latents, for the same data (``f = prior x likelihood``).

    Attributes
    ----------
    joint : ndarray
        Differences of the joint log density, one per latent tried.
    prior, likelihood : ndarray or None
        The same split into log prior and summed log-likelihood (None for a model with its own collapsed
        ``log_density``).
    magnitude : float
        Largest ``|log f|`` seen; the rounding tolerance is ``rtol * (1 + magnitude)``.
    rtol : float
    num_cases : int
        Data cases (to express an offset per case).
    """

    joint: np.ndarray
    prior: np.ndarray | None
    likelihood: np.ndarray | None
    magnitude: float
    rtol: float
    num_cases: int

    @property
    def tol(self) -> float:
        """Largest difference accepted as rounding error."""
        return self.rtol * (1.0 + self.magnitude)

    @property
    def equal(self) -> bool:
        """The two log densities agree at every latent tried, up to rounding."""
        return bool(np.max(np.abs(self.joint)) <= self.tol)

    @property
    def constant(self) -> bool:
        """They differ, by the same amount at every latent tried (a normalizing constant)."""
        return not self.equal and bool(np.ptp(self.joint) <= self.tol)

    @property
    def offset(self) -> float:
        """Median of ``log f_A - log f_B`` over the latents tried: the constant when :attr:`constant`."""
        return float(np.median(self.joint))

    @property
    def fired(self) -> bool:
        """The densities differ by more than rounding."""
        return not self.equal

    def message(self) -> str:
        """One sentence on what the comparison found."""
        if self.equal:
            return (f"log densities agree at all {self.joint.size} latents tried (largest difference "
                    f"{np.max(np.abs(self.joint)):.2g} nats, rounding tolerance {self.tol:.2g})")
        split = ""
        if self.prior is not None:
            like = float(np.median(self.likelihood))
            split = (f" (log prior {np.median(self.prior):+.6g}, log-likelihood {like:+.6g} = "
                     f"{like / self.num_cases:+.6g} per case)")
        if self.constant:
            return (f"log densities differ by a constant: A - B = {self.offset:+.6g} nats at every latent tried"
                    f"{split}; a normalizing constant is wrong in one of them, and log p(y) differs by the same "
                    "amount")
        return (f"log densities differ by an amount that varies with the latent: A - B from {np.min(self.joint):+.4g}"
                f" to {np.max(self.joint):+.4g} nats, median {self.offset:+.4g}{split.replace(' (', ' (medians: ')}; "
                "a term differs (a variance, a missing factor) or the latents are not the same parametrization "
                "(a Jacobian)")


@dataclass(frozen=True)
class ModelComparison:
    """Two implementations of one model, sandwiched on the same data, and their verdicts.

    Attributes
    ----------
    a_vs_b : BugAlarm
        A's lower bounds against B's upper bounds, at level ``alpha / 2``.
    b_vs_a : BugAlarm
        B's lower bounds against A's upper bounds, at level ``alpha / 2``.
    density : DensityComparison or None
        The direct comparison of the log densities (None when not requested).
    estimates : dict
        ``{("A" | "B", "lower" | "upper"): [Estimate, ...]}``, one per knob value, in the order of ``steps``.
    table : pandas.DataFrame
        One row per model, knob value and direction.
    exact_a, exact_b : float or None
        Each model's closed-form log p(y), when it has one.
    alpha : float
        Level of the two sandwich comparisons together.
    names, labels : tuple of str
        How the report names A and B, and what they are.
    """

    a_vs_b: BugAlarm
    b_vs_a: BugAlarm
    density: DensityComparison | None
    estimates: dict = field(repr=False)
    table: pd.DataFrame = field(repr=False)
    exact_a: float | None = None
    exact_b: float | None = None
    alpha: float = ALPHA
    names: tuple = ("A", "B")
    labels: tuple = ("", "")
    data: Any = field(default=None, repr=False)
    exact_latent: Any = field(default=None, repr=False)

    @property
    def bounds_cross(self) -> bool:
        """One model's lower bounds exceed the other's upper bounds beyond chance (level ``alpha``)."""
        return self.a_vs_b.fired or self.b_vs_a.fired

    @property
    def fired(self) -> bool:
        """The two implementations disagree: their bounds cross, or their log densities differ."""
        return self.bounds_cross or (self.density is not None and self.density.fired)

    def verdict(self, which: str) -> BugAlarm:
        """The run-level bug alarm of one implementation on its own (``which`` is "A" or "B"), at ``alpha``."""
        return bug_alarm(self.estimates[(which, "lower")], self.estimates[(which, "upper")], alpha=self.alpha)

    def message(self) -> str:
        """What was found, in sentences."""
        a, b = self.names
        lines = []
        for alarm, lo, up in ((self.a_vs_b, a, b), (self.b_vs_a, b, a)):
            state = "CROSS" if alarm.fired else "do not cross"
            lines.append(f"{lo}'s lower bounds vs {up}'s upper bounds: {state} (pooled {lo} lower - {up} upper = "
                         f"{alarm.crossing:+.3g} nats, p-bound {alarm.p_bound:.2g}, level {alarm.alpha:g})")
        if self.density is not None:
            lines.append(self.density.message())
        if self.exact_a is not None or self.exact_b is not None:
            lines.append(f"closed forms: {a} {_fmt(self.exact_a)}, {b} {_fmt(self.exact_b)}")
        head = (f"MODELS DISAGREE: {a} and {b} are not the same model, or one of them has a bug" if self.fired else
                f"no disagreement found between {a} and {b} (level {self.alpha:g} for the bounds)")
        return f"{head}; {a} = {self.labels[0]}, {b} = {self.labels[1]}\n" + "\n".join("  " + line for line in lines)

    def to_dict(self) -> dict:
        """A JSON-ready summary."""
        d = self.density
        return {
            "fired": self.fired, "bounds_cross": self.bounds_cross, "alpha": self.alpha,
            "a_vs_b": self.a_vs_b.to_dict(), "b_vs_a": self.b_vs_a.to_dict(),
            "density": None if d is None else {"fired": d.fired, "equal": d.equal, "constant": d.constant,
                                               "offset": d.offset, "max_abs": float(np.max(np.abs(d.joint))),
                                               "tol": d.tol},
            "exact_a": self.exact_a, "exact_b": self.exact_b, "message": self.message(),
        }


def compare_models(
    key,
    model_a,
    model_b,
    *,
    data=None,
    exact_latent=None,
    to_b: Callable | None = None,
    data_to_b: Callable | None = None,
    steps: Iterable[int] = (10, 100, 1000),
    num_runs: int = 16,
    kernel_a=None,
    kernel_b=None,
    method: str = "ais",
    num_particles: int = 1,
    alpha: float = ALPHA,
    density_check: bool = True,
    num_points: int = 32,
    rtol: float | None = None,
    progress=False,
) -> ModelComparison:
    """Check that two implementations of one model agree on ``log p(y)`` and on their log density.

    Data are simulated from A (or given, with the latent that generated them); both models are sandwiched on
    them (forward and reverse AIS, or SMC and SHME, at every knob value in ``steps``); B's reverse runs start
    from A's exact latent mapped by ``to_b``. The comparison fires when A's lower bounds exceed B's upper
    bounds, or B's lower bounds exceed A's upper bounds, beyond chance (:func:`bdmc.bug_alarm`, each at level
    ``alpha / 2``, so at most ``alpha`` in all when both are correct), or when the log densities differ at the
    same latents by more than rounding.

    Parameters
    ----------
    key : PRNG key
    model_a, model_b : Model
        The two implementations. A simulates the data.
    data, exact_latent : optional
        A's data and the latent that generated them; simulated from A when omitted.
    to_b : callable, optional
        ``to_b(latent_of_a) -> latent_of_b``: B's representation of one of A's latents (e.g. for a NumPyro
        program, ``lambda x: program.unconstrain({...})``). Identity when omitted.
    data_to_b : callable, optional
        ``data_to_b(data_of_a) -> data_of_b`` (e.g. ``lambda y: {"y": y}`` for a NumPyro program). Identity
        when omitted.
    steps : iterable of int
        Chain lengths T (AIS) or MCMC moves per data case (SMC).
    num_runs : int
        Independent runs per model, direction and knob value.
    kernel_a, kernel_b : optional
        Each model's transition kernel (its default kernel when omitted).
    method : {"ais", "smc"}
        The lower and upper estimators, as for :func:`bdmc.sandwich`.
    num_particles : int
        Particles per SMC / SHME run.
    alpha : float
        Level of the two bound comparisons together.
    density_check : bool
        Also compare ``log_prior + sum log_likelihood`` directly at the same latents. Meaningful when ``to_b``
        maps between representations with unit Jacobian, or when both models include their Jacobians (as bdmc
        models and the NumPyro adapter do on unconstrained latents); otherwise a Jacobian shows up as a
        varying difference.
    num_points : int
        Latents for the density comparison: A's exact latent and ``num_points - 1`` draws from A's prior.
    rtol : float, optional
        Relative rounding tolerance of the density comparison. Default: 1e-8, or ``64 * eps`` of JAX's active
        float dtype when larger (float32: 7.6e-6; float64 keeps 1e-8).
    progress : bool or "auto"

    Returns
    -------
    ModelComparison
    """
    if not 0 < alpha < 1:
        raise BDMCError(f"alpha must lie in (0, 1), got {alpha}")
    steps = checked_steps(method, steps)
    if num_runs < 1 or num_points < 1:
        raise BDMCError(f"num_runs and num_points must be at least 1, got {num_runs} and {num_points}")
    to_b = _identity if to_b is None else to_b
    data_to_b = _identity if data_to_b is None else data_to_b

    key_data, key_runs, key_points = jax.random.split(key, 3)
    data, exact_latent = given_or_simulated(key_data, model_a, data, exact_latent)
    data_a = validate_data(model_a, data)
    data_b = validate_data(model_b, data_to_b(data_a))
    latent_b = to_b(exact_latent)

    pair = estimator_pair(method)
    estimates: dict = {(m, side): [] for m in "AB" for side in ("lower", "upper")}
    rows = []
    for T in steps:
        keys = jax.random.split(jax.random.fold_in(key_runs, T), 4)
        for i, (name, model, d, start, kernel) in enumerate((("A", model_a, data_a, exact_latent, kernel_a),
                                                             ("B", model_b, data_b, latent_b, kernel_b))):
            common = dict(knob=T, num_runs=num_runs, kernel=kernel, num_particles=num_particles, progress=progress)
            lo = pair.run("forward", keys[2 * i], model, d, **common)
            up = pair.run("reverse", keys[2 * i + 1], model, d, exact_latent=start, **common)
            estimates[(name, "lower")].append(lo)
            estimates[(name, "upper")].append(up)
            rows += [_row(name, method, T, "forward", lo), _row(name, method, T, "reverse", up)]

    density = None
    if density_check:
        latents = (jax.vmap(model_a.sample_prior)(jax.random.split(key_points, num_points - 1))
                   if num_points > 1 else None)
        density = compare_densities(model_a, model_b, data_a, data_b, exact_latent, latents, to_b=to_b, rtol=rtol)

    return ModelComparison(
        a_vs_b=bug_alarm(estimates[("A", "lower")], estimates[("B", "upper")], alpha=alpha / 2),
        b_vs_a=bug_alarm(estimates[("B", "lower")], estimates[("A", "upper")], alpha=alpha / 2),
        density=density, estimates=estimates, table=pd.DataFrame(rows),
        exact_a=exact_log_marginal_or_none(model_a, data_a), exact_b=exact_log_marginal_or_none(model_b, data_b),
        alpha=alpha, labels=(_label(model_a), _label(model_b)), data=data_a, exact_latent=exact_latent,
    )


def compare_densities(model_a, model_b, data_a, data_b, latent, more_latents=None, *, to_b: Callable | None = None,
                      rtol: float | None = None) -> DensityComparison:
    """``log f_A(x) - log f_B(to_b(x))`` at ``latent`` and at each latent stacked along the leading axis of
    ``more_latents`` (see :func:`compare_models`; ``rtol`` defaults as there)."""
    to_b = _identity if to_b is None else to_b
    if rtol is None:  # float32 rounds log densities at about 1e-7 of their size
        rtol = max(1e-8, 64 * float(jnp.finfo(jnp.result_type(float)).eps))
    points = jax.tree.map(lambda a: jnp.asarray(a)[None], latent)
    if more_latents is not None:
        points = jax.tree.map(lambda a, b: jnp.concatenate([a, jnp.asarray(b)]), points, more_latents)
    split = not (supports(model_a, CollapsedDensity) or supports(model_b, CollapsedDensity))

    def terms(model, x, d):
        if split:
            return model.log_prior(x), jnp.sum(model.log_likelihood(x, d))
        return log_density(model, x, d, 1.0), jnp.zeros(())

    def one(x):
        pa, la = terms(model_a, x, data_a)
        pb, lb = terms(model_b, to_b(x), data_b)
        return pa, la, pb, lb

    pa, la, pb, lb = (np.asarray(v, np.float64) for v in jax.vmap(one)(points))
    joint = (pa + la) - (pb + lb)
    joint = np.where(np.isnan(joint), np.inf, joint)
    magnitude = float(np.max(np.abs(np.concatenate([pa + la, pb + lb]))))
    n_cases = int(np.shape(jax.eval_shape(model_a.log_likelihood, latent, data_a))[0]) if split else 1
    return DensityComparison(joint=joint, prior=pa - pb if split else None, likelihood=la - lb if split else None,
                             magnitude=magnitude if np.isfinite(magnitude) else 0.0, rtol=rtol, num_cases=n_cases)


def _identity(x):
    return x


def _label(model) -> str:
    """A short description: the class name, or the adapter's own repr (it names the program)."""
    return type(model).__name__ if hasattr(model, "__dataclass_fields__") else repr(model)


def _fmt(x) -> str:
    return "none" if x is None else f"{x:.6g}"


def _row(name: str, method: str, T: int, direction: str, est: Estimate) -> dict:
    return {"model": name, "method": method, "num_steps": T, "direction": direction, "bound": est.bound,
            "value": est.value, "stderr": est.stderr, "mean_single": est.mean_single,
            "stderr_single": est.stderr_single, "seconds": est.seconds}


__all__: Sequence[str] = ("DensityComparison", "ModelComparison", "compare_densities", "compare_models")
