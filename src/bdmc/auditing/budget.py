"""How much each check of an audit computes: :class:`Budget`, its presets and their names."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    """How much each check computes. ``Budget.default()`` and ``Budget.quick()`` are the presets.

    Parameters
    ----------
    triples : int
        Random triples per conditional and lambda (simulator vs density, for models with conditionals).
    simulator_latents, simulator_data, simulator_prior : int
        Prior draws, data sets per draw and prior draws of the forward-simulation check (models without).
    sbc_replications, sbc_draws, sbc_warmup : int
        Simulated data sets, posterior draws kept per data set and warm-up transitions of the sampler.
    sbc_thin : int or None
        Transitions between kept draws. ``None`` (the default): for a fixed kernel, chosen from a pilot so
        that the draws are near independent (:func:`bdmc.auditing.checks_sbc.pilot_thin`, at most
        ``checks_sbc.MAX_THIN``); ``ADAPTIVE_THIN`` for NumPyro's NUTS. A number is kept as given.
    geweke_samples, geweke_steps : int
        Chains of each Geweke simulation, and kernel steps per successive-conditional chain.
    sandwich_steps : tuple of int
        Chain lengths T of the sandwich on simulated data.
    sandwich_runs : int
        Independent runs per direction and length.
    evidence_steps, evidence_runs : int
        T and independent runs of the forward AIS estimate on the user's data.
    evidence_draws : int
        Posterior draws of the sampler for the bracketing bounds (0: none).
    evidence_bracket_draws : int
        Draws of the Gaussian fitted to them, for the bracketing lower bound.
    real_steps : tuple of int
        Chain lengths of the real-data protocol.
    real_runs : int
        Independent runs per condition and chain length.
    real_mcmc_steps : tuple of int
        NUTS steps S behind the reverse chains' starts (empty: forward comparison only).
    real_warmup : int
        NUTS adaptation (and sampling) steps of the hyperparameter fit.
    prior_steps, prior_runs : int
        T and independent runs per direction of the prior-normalization check (0 runs: not run).
    """

    triples: int = 64
    simulator_latents: int = 64
    simulator_data: int = 64
    simulator_prior: int = 4000
    sbc_replications: int = 200
    sbc_draws: int = 100
    sbc_warmup: int = 500
    sbc_thin: int | None = None
    geweke_samples: int = 2000
    geweke_steps: int = 50
    sandwich_steps: tuple = (10, 100, 1000)
    sandwich_runs: int = 16
    evidence_steps: int = 1000
    evidence_runs: int = 16
    evidence_draws: int = 1000
    evidence_bracket_draws: int = 2000
    real_steps: tuple = (10, 100, 1000)
    real_runs: int = 20
    real_mcmc_steps: tuple = (100, 1000)
    real_warmup: int = 500
    prior_steps: int = 200
    prior_runs: int = 32

    @classmethod
    def default(cls) -> Budget:
        return cls()

    @classmethod
    def quick(cls) -> Budget:
        """A first look in about a minute on a small model: every check runs, with little power."""
        return cls(triples=16, simulator_latents=32, simulator_data=32, simulator_prior=1000, sbc_replications=50,
                   sbc_draws=50, sbc_warmup=150, sbc_thin=None, geweke_samples=500, geweke_steps=20,
                   sandwich_steps=(10, 100), sandwich_runs=8, evidence_steps=200, evidence_runs=8, evidence_draws=200,
                   real_steps=(10, 100), real_runs=8, real_mcmc_steps=(), real_warmup=150, prior_steps=100,
                   prior_runs=16)


def budget_label(budget: Budget | None, *, quick: bool = False) -> str:
    """The budget by name: ``"quick"`` or ``"default"`` for the presets, ``"custom"`` for any other."""
    if budget is None:
        return "quick" if quick else "default"
    return {Budget.quick(): "quick", Budget.default(): "default"}.get(budget, "custom")
