"""Upper and lower bounds on ``log p(D)`` from posterior samples (Ji, Shen, West).

- Upper bound, Eqs. (3)-(6): ``U(gamma) = E_p[log p(theta, D) - log q(theta | gamma)] >= log p(D)``, with
  ``gamma_U`` the moment-matching minimizer of ``KL(p || q)``.
- Quasi-optimized lower bound, Eq. (8): ``L(gamma_U) = E_q[log p(theta, D) - log q(theta | gamma_U)]`` from
  fresh draws of ``q``.
- MCSA lower bound, Eqs. (9)-(11): Robbins-Monro iterations towards the maximizer of ``L``.
- Standard variational coordinate ascent (Sec. 3.1, Eq. 7) for conjugate models.

Partial analytic marginalization (the reduced contexts of Sec. 4) is the caller's choice of ``theta``: the
family names the parameters that are kept, ``log_joint`` must be ``log p(theta, D)`` with the others integrated
out, and sample entries not named by the family are dropped (they are marginal posterior draws of the rest).

On held-out evaluation. When ``gamma`` is fitted (moment matching is maximum likelihood) on the same draws
that Eq. (6) averages over, the average is biased low; if the family contains the posterior it falls *below*
``log p(D)`` for every sample. ``fit="crossfit"`` (the default) fits on one half of the draws and evaluates
on the other, both ways round, so each term is an honest upper bound in expectation; ``fit="same"`` is the
paper's literal in-sample estimate.

MCSA and coordinate ascent are in :mod:`bdmc.bracketing.optimize`; the compiled per-draw terms in
:mod:`bdmc.bracketing.terms`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..contracts.estimate import Estimate, seed_of
from ..errors import BDMCError
from .families import Categorical, Family
from .mean_field import MeanField, fit_mean_field
from .optimize import mcsa_diagnostic, mcsa_run
from .samples import as_sample_dict
from .symmetry import LabelSymmetric, align_labels
from .terms import log_ratios, lower_bound_values

# ----------------------------------------------------------------------------------------------- U and L


def upper_bound_values(samples: Mapping, log_joint: Callable, family: Mapping, *, fit: str = "crossfit",
                       pseudo_count: float = 0.5, labels: str | None = None, components: Sequence[str] = ()):
    """Per-sample terms of Eq. (6) and the moment-matched ``q`` on all samples.

    Parameters
    ----------
    samples : mapping of str to array
        Posterior draws ``(num_samples, ...)`` of the parameters the family names.
    log_joint : callable
        ``log p(theta, D)`` of one draw (a dict).
    family : mapping
        See :func:`bdmc.bracketing.mean_field.fit_mean_field`.
    fit : {"crossfit", "same"}
        ``"crossfit"``: fit ``q`` on each half of the draws and evaluate Eq. (6) on the other half (each term
        is then an unbiased estimate of ``U(gamma)`` for a ``gamma`` independent of it). ``"same"``: fit and
        evaluate on all draws (the paper's in-sample estimate, biased low).
    pseudo_count : float
        Added to every categorical count (keeps held-out terms finite when a label is unseen in one half).
    labels : str, optional
        Name of the mixture-label factor: evaluate with the label-symmetrized ``q_sym`` (see
        :mod:`bdmc.bracketing.symmetry`), valid from draws that stay in one labelling. Each set of draws a
        ``q`` is fitted to is first aligned to its own consensus labelling (:func:`align_labels`), so a chain
        that switched labels still gives a single-mode ``q``; the held-out draws need no alignment because
        ``log p - log q_sym`` is invariant under relabelling.
    components : sequence of str
        Per-component factors permuted with the labels (see :class:`LabelSymmetric`).

    Returns
    -------
    values : array (num_eval,)
        Terms whose mean is the upper-bound estimate (for crossfit, half B under ``q_A`` then half A under
        ``q_B``).
    q : MeanField or LabelSymmetric
        Moment matched on all the draws (``gamma_U``; aligned and symmetrized when ``labels`` is given).
    """
    if labels is not None:
        return _upper_symmetric(samples, log_joint, family, fit=fit, pseudo_count=pseudo_count, labels=labels,
                                components=tuple(components))
    q_all = fit_mean_field(samples, family, pseudo_count=pseudo_count)
    if fit == "same":
        return log_ratios(log_joint, q_all, samples), q_all
    h = _crossfit_half(samples, fit)
    # Categorical sizes must agree across halves: pin them to what the full sample shows.
    pinned = {name: (spec, q_all[name].probs.shape[-1]) if isinstance(q_all[name], Categorical)
              and not isinstance(spec, Family) and not isinstance(spec, tuple) else spec
              for name, spec in family.items()}
    first = {k: v[:h] for k, v in samples.items()}
    second = {k: v[h:2 * h] for k, v in samples.items()}
    q_a = fit_mean_field(first, pinned, pseudo_count=pseudo_count)
    q_b = fit_mean_field(second, pinned, pseudo_count=pseudo_count)
    values = jnp.concatenate([log_ratios(log_joint, q_a, second), log_ratios(log_joint, q_b, first)])
    return values, q_all


def _crossfit_half(samples, fit) -> int:
    """Half the number of draws, refusing a ``fit`` other than ``"crossfit"`` (``"same"`` is handled before)
    and fewer than 4 draws."""
    if fit != "crossfit":
        raise BDMCError(f"fit must be 'crossfit' or 'same', got {fit!r}")
    n = next(iter(samples.values())).shape[0]
    if n < 4:
        raise BDMCError(f"need at least 4 posterior samples to cross-fit, got {n}")
    return n // 2


def fit_symmetric(samples: Mapping, family: Mapping, *, labels: str, components: Sequence[str] = (),
                  pseudo_count: float = 0.0, align: bool = True) -> LabelSymmetric:
    """Align the draws' labels (:func:`align_labels`), moment-match ``family`` to them and symmetrize.

    With ``pseudo_count = 0`` this is the paper's exact ``gamma_U`` on the aligned draws; a draw of it never
    uses a label of probability zero, so the lower bound stays finite.
    """
    if labels not in family:
        raise BDMCError(f"labels={labels!r} is not a factor of the family {list(family)}")
    if align:
        samples = align_labels(samples, labels=labels, components=components)
    samples = {n: jnp.asarray(v) for n, v in samples.items()}
    return LabelSymmetric(fit_mean_field(samples, _pin_categorical(samples, family), pseudo_count=pseudo_count),
                          labels=labels, components=components)


def _pin_categorical(samples, family):
    """Give categorical specs an explicit number of classes (the largest label seen plus one, or as given)."""
    out = {}
    for name, spec in family.items():
        if isinstance(spec, str) and spec.lower() == "categorical":
            spec = ("categorical", int(np.max(np.asarray(samples[name]))) + 1)
        out[name] = spec
    return out


def _upper_symmetric(samples, log_joint, family, *, fit, pseudo_count, labels, components):
    pinned = _pin_categorical(samples, family)
    q_all = fit_symmetric(samples, pinned, labels=labels, components=components, pseudo_count=pseudo_count)
    if fit == "same":
        return log_ratios(log_joint, q_all, {n: jnp.asarray(v) for n, v in samples.items()}), q_all
    h = _crossfit_half(samples, fit)
    first = {k: np.asarray(v)[:h] for k, v in samples.items()}
    second = {k: np.asarray(v)[h:2 * h] for k, v in samples.items()}
    q_a = fit_symmetric(first, pinned, labels=labels, components=components, pseudo_count=pseudo_count)
    q_b = fit_symmetric(second, pinned, labels=labels, components=components, pseudo_count=pseudo_count)
    as_jnp = lambda d: {k: jnp.asarray(v) for k, v in d.items()}  # noqa: E731
    values = jnp.concatenate([log_ratios(log_joint, q_a, as_jnp(second)), log_ratios(log_joint, q_b, as_jnp(first))])
    return values, q_all


def batch_means_stderr(values, *, num_blocks: int = 1) -> float:
    """Standard error of the mean of autocorrelated draws by non-overlapping batch means.

    ``values`` is split into ``num_blocks`` contiguous blocks (e.g. the two cross-fit halves), each into
    about ``sqrt(len)`` batches; the batch means' spread gives the error of the overall mean.
    """
    v = np.asarray(values, dtype=np.float64)
    blocks = np.array_split(v, num_blocks)
    means = []
    for b in blocks:
        nb = max(int(math.isqrt(b.size)), 2)
        size = b.size // nb
        if size == 0:
            return float("nan")
        means.append(b[: nb * size].reshape(nb, size).mean(axis=1))
    m = np.concatenate(means)
    return float(np.std(m, ddof=1) / math.sqrt(m.size))


def _estimate(values, *, bound, stderr, seconds, compile_seconds, settings, key, details=None) -> Estimate:
    values = np.asarray(values, dtype=np.float64)
    if np.any(np.isnan(values)) or np.any(values == np.inf):
        raise BDMCError(f"the {bound} bound has NaN or +inf terms: log_joint or the fitted q is broken")
    return Estimate(value=float(np.mean(values)), bound=bound, runs=values, stderr=float(stderr), seconds=seconds,
                    compile_seconds=compile_seconds, n_evals=int(values.size), settings=settings,
                    seed=seed_of(key) if key is not None else (), details=details)


def _timed(fn, *args):
    """Compile ``fn`` for ``args`` and run it once: (outputs, run seconds, compile seconds)."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    t1 = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return out, time.perf_counter() - t1, t1 - t0



# ----------------------------------------------------------------------------------------------- bracket


@dataclasses.dataclass(frozen=True)
class BracketResult:
    """Bounds on ``log p(D)`` from one posterior sample.

    Attributes
    ----------
    upper : Estimate
        ``U(gamma_U)``, Eq. (6); ``stderr`` by batch means (the draws may be autocorrelated).
    lower : Estimate
        The quasi-optimized ``L(gamma_U)``, Eq. (8); iid draws of q, plain standard error.
    mcsa : Estimate or None
        ``L(gamma_L)`` after MCSA, Eq. (11), when requested; ``details`` holds the traces and diagnostic.
    q_upper, q_mcsa : MeanField
        The moment-matched and the MCSA-optimized variational densities.
    integrated_out : tuple of str
        Sample entries not named by the family (treated as analytically integrated out).
    """

    upper: Estimate
    lower: Estimate
    mcsa: Estimate | None
    q_upper: MeanField
    q_mcsa: MeanField | None
    integrated_out: tuple = ()

    @property
    def best_lower(self) -> Estimate:
        if self.mcsa is not None and self.mcsa.value > self.lower.value:
            return self.mcsa
        return self.lower

    @property
    def width(self) -> float:
        """Upper minus the larger lower bound: at least the KL gap, at most the slack of the bracket."""
        return self.upper.value - self.best_lower.value

    @property
    def width_stderr(self) -> float:
        return math.hypot(self.upper.stderr, self.best_lower.stderr)

    def table(self):
        """A tidy pandas table: one row per bound (name, side, value, stderr, seconds, evaluations)."""
        import pandas as pd

        rows = [("U", self.upper), ("L (quasi-optimized)", self.lower)]
        if self.mcsa is not None:
            rows.append(("L (MCSA)", self.mcsa))
        return pd.DataFrame([{"bound": n, "side": e.bound, "value": e.value, "stderr": e.stderr,
                              "seconds": e.seconds, "n_evals": e.n_evals} for n, e in rows])

    def plot(self, ax=None, *, truth: float | None = None):
        """Error bars of the bounds (and a line at ``truth`` if given); returns the axes."""
        import matplotlib.pyplot as plt

        t = self.table()
        if ax is None:
            _, ax = plt.subplots(figsize=(4, 3))
        ax.errorbar(np.arange(len(t)), t["value"], yerr=2 * t["stderr"], fmt="o", capsize=3)
        ax.set_xticks(np.arange(len(t)), t["bound"], rotation=20)
        if truth is not None:
            ax.axhline(truth, color="k", lw=0.8, ls="--", label="log p(D)")
            ax.legend()
        ax.set_ylabel("log p(D) bound")
        return ax


def bracket(samples, log_joint: Callable, *, family: Mapping, key, num_draws: int = 10_000,
            fit: str = "crossfit", pseudo_count: float | None = None, mcsa: bool = False,
            mcsa_options: Mapping | None = None, var_names=None, chain_axis: bool = False,
            labels: str | None = None, components: Sequence[str] = ()) -> BracketResult:
    """Upper and lower bounds on ``log p(D)`` from posterior samples of any MCMC (Ji, Shen, West).

    Parameters
    ----------
    samples : mapping, NumPyro MCMC, ArviZ InferenceData, xarray Dataset or array
        Posterior draws (see :func:`bdmc.bracketing.as_sample_dict`).
    log_joint : callable
        ``log_joint(theta) -> scalar``: ``log p(theta, D)`` for one draw ``theta`` (a dict with the family's
        keys, JAX-traceable), with every parameter not in ``family`` integrated out analytically.
    family : mapping of str to family
        The mean-field variational family, one entry per kept parameter: ``"normal"``, ``"inverse_gamma"``,
        ``"inverse_wishart"``, ``"dirichlet"``, ``"categorical"`` (or ``("categorical", k)``), a Family
        class, or an already fitted Family (used as is).
    key : PRNG key
        For the draws of q (and MCSA).
    num_draws : int
        Draws of q for each lower bound.
    fit : {"crossfit", "same"}
        How Eq. (6) is evaluated (see :func:`upper_bound_values`).
    pseudo_count : float, optional
        Categorical pseudo-count; default 0.5 for ``"crossfit"``, 0 for ``"same"``.
    mcsa : bool
        Also optimize the lower bound by MCSA, started at ``gamma_U``.
    mcsa_options : mapping, optional
        Passed to :func:`mcsa_run` (``num_iterations``, ``num_draws``, ``step_size``, ``decay``, ...).
    var_names, chain_axis
        Passed to :func:`as_sample_dict`.
    labels : str, optional
        For a mixture with exchangeable components: the name of the label factor (e.g. ``"z"``). Both bounds
        then use the label-symmetrized ``q_sym`` (:class:`~bdmc.bracketing.LabelSymmetric`), which keeps the
        upper bound valid when the MCMC draws stay in one of the ``k!`` labellings and tightens the lower
        bound by up to ``log k!``. The ``q`` of the lower bound is fitted to all (aligned) draws with no
        pseudo-count (the paper's ``gamma_U``); ``pseudo_count`` applies to the cross-fitted upper bound only.
        MCSA is not available with ``labels``.
    components : sequence of str
        Per-component parameters permuted with the labels (e.g. ``("mu", "Sigma")``).

    Returns
    -------
    BracketResult
        With ``labels``, ``q_upper`` is a :class:`~bdmc.bracketing.LabelSymmetric`.
    """
    if not callable(log_joint):
        raise BDMCError(f"log_joint must be callable, got {type(log_joint).__name__}")
    if not isinstance(family, Mapping) or not family:
        raise BDMCError("family must be a non-empty mapping from parameter name to variational family")
    if num_draws < 2:
        raise BDMCError(f"num_draws must be at least 2, got {num_draws}")
    all_samples = as_sample_dict(samples, var_names=var_names, chain_axis=chain_axis)
    missing = [n for n, s in family.items() if not isinstance(s, Family) and n not in all_samples]
    if missing:
        raise BDMCError(f"family names {missing}, which are not in the samples {sorted(all_samples)}")
    kept = {n: jnp.asarray(all_samples[n]) for n in family if n in all_samples}
    integrated_out = tuple(sorted(set(all_samples) - set(family)))
    if pseudo_count is None:
        pseudo_count = 0.5 if fit == "crossfit" else 0.0
    if labels is not None and mcsa:
        raise BDMCError("MCSA is not implemented for the label-symmetrized q; call bracket with mcsa=False")
    k_lower, k_mcsa, k_final = jax.random.split(key, 3)
    settings = {"fit": fit, "pseudo_count": pseudo_count, "num_draws": num_draws, "labels": labels,
                "components": tuple(components),
                "integrated_out": integrated_out, "family": {n: _family_name(s) for n, s in family.items()}}

    # Fitting is host-side (categorical sizes are static); evaluation is compiled.
    t0 = time.perf_counter()
    values, q_upper = upper_bound_values(kept, log_joint, family, fit=fit, pseudo_count=pseudo_count,
                                         labels=labels, components=components)
    values = jax.block_until_ready(values)
    if labels is not None and pseudo_count != 0.0:
        q_upper = fit_symmetric(kept, family, labels=labels, components=components, pseudo_count=0.0)
    u_seconds = time.perf_counter() - t0
    upper = _estimate(values, bound="upper", key=None, seconds=u_seconds, compile_seconds=float("nan"),
                      stderr=batch_means_stderr(values, num_blocks=2 if fit == "crossfit" else 1),
                      settings={**settings, "combine": "mean"})

    lb = lambda k, q: lower_bound_values(k, q, log_joint, num_draws=num_draws)  # noqa: E731
    lvals, secs, csecs = _timed(lb, k_lower, q_upper)
    lower = _estimate(lvals, bound="lower", key=k_lower, seconds=secs, compile_seconds=csecs,
                      stderr=float(np.std(np.asarray(lvals), ddof=1) / math.sqrt(num_draws)),
                      settings={**settings, "combine": "mean", "gamma": "moment-matched (gamma_U)"})

    mcsa_est, q_mcsa = None, None
    if mcsa:
        opts = dict(mcsa_options or {})
        run = lambda k, q: mcsa_run(k, q, log_joint, **opts)  # noqa: E731
        (q_mcsa, q_last, info), secs_m, csecs_m = _timed(run, k_mcsa, q_upper)
        diag = mcsa_diagnostic(info.lower)
        fvals, secs_f, csecs_f = _timed(lb, k_final, q_mcsa)
        n_iter = int(info.lower.shape[0])
        mcsa_est = Estimate(
            value=float(np.mean(fvals)), bound="lower", runs=np.asarray(fvals),
            stderr=float(np.std(np.asarray(fvals), ddof=1) / math.sqrt(num_draws)), seconds=secs_m + secs_f,
            compile_seconds=csecs_m + csecs_f, n_evals=int(num_draws + n_iter * opts.get("num_draws", 64)),
            settings={**settings, **opts, "combine": "mean"}, seed=seed_of(k_mcsa),
            details={"trace_lower": np.asarray(info.lower), "step_norm": np.asarray(info.step_norm),
                     "accepted": np.asarray(info.accepted), "q_last": q_last, **diag})
    return BracketResult(upper=upper, lower=lower, mcsa=mcsa_est, q_upper=q_upper, q_mcsa=q_mcsa,
                         integrated_out=integrated_out)


def _family_name(spec) -> str:
    if isinstance(spec, tuple):
        spec = spec[0]
    if isinstance(spec, str):
        return spec
    if isinstance(spec, type):
        return spec.__name__
    return type(spec).__name__ + " (fixed)"
