"""Sequential Monte Carlo (particle learning, BDMC paper Alg. 2) and the sequential harmonic mean estimator (Alg. 3).

Both run the annealing engine along the data path, which switches data cases on one at a time: SMC forward
from prior draws, SHME backward from the exact posterior sample, deleting cases in reverse order. Each run has
``num_particles`` particles, resampled adaptively; after each data case the model's kernel is applied
``num_moves`` times (the knob of the paper's Sec. 6.2). With one particle SMC is AIS on the data path.

Proposals (Sec. 3.4):

- ``"prior"`` (Eqs. 16-17, and 21-22 for collapsed models): a case's local latents are drawn from their prior
  while the case is switched off (the kernel does this), and the weight is the case's likelihood (its collapsed
  predictive for collapsed models) at the current state.
- ``"posterior"`` (Eqs. 18-20): the weight is the case's predictive density with its local latents summed out,
  ``model.log_predictive(latent, data, lam, i)``, and the local latents are then drawn from their conditional
  given the case, ``model.sample_case(key, latent, data, lam, i)``. In reverse the same two hooks delete the
  case: weight by the inverse predictive, then redraw the local latents from their prior.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ..contracts.capabilities import CaseProposal, require, supports
from ..contracts.estimate import Estimate, register_estimator, seed_of
from ..contracts.model import log_predictive, n_cases, validate_data
from ..errors import BDMCError
from ..kernels import repeat
from . import schedules
from .ais import broadcast_latent, check_exact_latent, default_kernel, require_exact_latent
from .engine import AISRule, anneal
from .prior import prior_draws
from .resampling import AdaptiveResampling

PROPOSALS = ("auto", "prior", "posterior")


class PosteriorProposal:
    """Weight a switched case by its predictive density and redraw its local latents from their conditional."""

    def __hash__(self):
        return hash(PosteriorProposal)

    def __eq__(self, other):
        return type(other) is PosteriorProposal

    @staticmethod
    def _switched(lam_from, lam_to):
        """The case that changes, the sign (+1 on, -1 off) and the weights with that case off."""
        delta = lam_to - lam_from
        i = jnp.argmax(jnp.abs(delta))
        sign = jnp.sign(delta[i])
        off = jnp.where(sign > 0, lam_from, lam_to)
        return i, sign, off

    def increment(self, model, latent, data, lam_from, lam_to):
        i, sign, off = self._switched(lam_from, lam_to)
        return sign * log_predictive(model, latent, data, off, i)

    def refresh(self, key, model, latent, data, lam_from, lam_to):
        i, _, _ = self._switched(lam_from, lam_to)
        return model.sample_case(key, latent, data, lam_to, i)

    def culprit(self, model, latent, data, lam_from, lam_to):
        """Name a NaN or +inf predictive behind a failed weight check (on the host, after the run stopped)."""
        i, _, off = self._switched(jnp.asarray(lam_from), jnp.asarray(lam_to))
        value = float(model.log_predictive(latent, data, off, i))
        return None if value < float("inf") else ("log_predictive", int(i), value)


@register_estimator("smc", label="SMC", knob="num_moves", knobs=(1, 3, 10), bound="lower")
def smc(
    key,
    model,
    data,
    *,
    exact_latent=None,
    num_moves: int = 1,
    num_particles: int = 1,
    num_runs: int = 16,
    kernel: Any = None,
    proposal: str = "auto",
    resampling: str = "systematic",
    ess_threshold: float = 0.5,
    order=None,
    progress="auto",
) -> Estimate:
    """SMC over data cases from prior draws: a stochastic lower bound on ``log p(y)`` (BDMC paper, Alg. 2).

    Parameters
    ----------
    key : PRNG key
    model, data
        A Model and its observed data; ``model.log_likelihood`` has one term per data case.
    exact_latent : optional
        Not used (SMC starts from prior draws); accepted so every estimator has one call shape.
    num_moves : int
        MCMC transitions (applications of ``kernel``) after each data case is added: the knob.
    num_particles : int
        Particles per run, resampled when their ESS falls below ``ess_threshold * num_particles``.
    num_runs : int
        Independent runs, each giving one estimate of ``log p(y)``; combined by log-mean-exp.
    kernel : optional
        Transition operator leaving every intermediate distribution invariant; the model's by default.
    proposal : {"auto", "prior", "posterior"}
        How a new case's local latents are proposed (module docstring); "auto" is "posterior" when the model
        supports :class:`~bdmc.contracts.CaseProposal` (as the paper's models do), else "prior"; the choice
        is recorded in ``settings["proposal"]``.
    resampling : {"systematic", "stratified", "multinomial"}
    ess_threshold : float
        In [0, 1]; 1 resamples after every case, 0 never.
    order : sequence of int, optional
        The order in which cases are added (default 0..N-1).

    Returns
    -------
    Estimate
        ``bound="lower"``; one run per entry of ``runs``.
    """
    return _run(key, model, data, None, direction="forward", num_moves=num_moves, num_particles=num_particles,
                num_runs=num_runs, kernel=kernel, proposal=proposal, resampling=resampling,
                ess_threshold=ess_threshold, order=order, progress=progress)


@register_estimator("shme", label="SHME", knob="num_moves", knobs=(1, 3, 10), bound="upper", needs_exact=True)
def shme(
    key,
    model,
    data,
    *,
    exact_latent=None,
    num_moves: int = 1,
    num_particles: int = 1,
    num_runs: int = 16,
    kernel: Any = None,
    proposal: str = "auto",
    resampling: str = "systematic",
    ess_threshold: float = 0.5,
    order=None,
    progress="auto",
) -> Estimate:
    """Sequential harmonic mean estimator: a stochastic upper bound on ``log p(y)`` (BDMC paper, Alg. 3).

    Every particle starts at ``exact_latent`` (the latent that generated the simulated data); data cases are
    deleted one at a time in the reverse of ``order``, particles are resampled in proportion to 1/w, and runs
    combine by log-harmonic-mean. Options are as for :func:`smc`.

    The upper-bound guarantee averages over the exact sample as well as the runs. All runs share the one
    exact sample, so the weight of the first deletion (a function of that sample alone, and a whole
    predictive density with ``proposal="posterior"``) does not average out across runs: on a tiny data set
    the combined estimate can sit below ``log p(y)`` by about the spread of that first log-predictive
    (measured: 0.3 nat on a 6 x 2 low-rank problem). On realistic data the later deletions dominate.
    """
    require_exact_latent(exact_latent, "SHME")
    return _run(key, model, data, exact_latent, direction="reverse", num_moves=num_moves,
                num_particles=num_particles, num_runs=num_runs, kernel=kernel, proposal=proposal,
                resampling=resampling, ess_threshold=ess_threshold, order=order, progress=progress)


def _run(key, model, data, exact_latent, *, direction, num_moves, num_particles, num_runs, kernel, proposal,
         resampling, ess_threshold, order, progress) -> Estimate:
    if proposal not in PROPOSALS:
        raise BDMCError(f"unknown proposal {proposal!r}; choose one of {PROPOSALS}")
    if proposal == "auto":
        proposal = "posterior" if supports(model, CaseProposal) else "prior"
    if proposal == "posterior":
        require(model, CaseProposal, purpose="SMC with proposal='posterior' (else use proposal='prior')")
    for name, value in (("num_moves", num_moves), ("num_particles", num_particles), ("num_runs", num_runs)):
        if int(value) != value or value < 1:
            raise BDMCError(f"{name} must be a positive integer, got {value}")
    data = validate_data(model, data)
    path = schedules.data_path(n_cases(model, data), order=order)
    kernel = default_kernel(model) if kernel is None else kernel
    kernel = kernel if num_moves == 1 else repeat(kernel, int(num_moves))
    chains = num_runs * num_particles
    rule = PosteriorProposal() if proposal == "posterior" else AISRule()
    resampler = AdaptiveResampling(scheme=resampling, ess_threshold=ess_threshold)
    key_run = key
    if direction == "forward":
        init, key_run = prior_draws(key, model, chains)
    else:
        init = broadcast_latent(model, exact_latent, chains)
        check_exact_latent(model, data, exact_latent, init, path[-1], description="SHME")
        path = path[::-1]
    name = "SMC" if direction == "forward" else "SHME"
    result = anneal(key_run, model, data, kernel, path, init, num_particles=num_particles, resampler=resampler,
                    rule=rule, progress=progress, description=f"{name} ({num_moves} moves/case)")
    runs = result.log_evidence if direction == "forward" else -result.log_evidence
    settings = {"method": name.lower(), "direction": direction, "num_moves": int(num_moves),
                "num_particles": int(num_particles), "num_runs": int(num_runs), "proposal": proposal,
                "resampling": resampling, "ess_threshold": float(ess_threshold), "kernel": type(kernel).__name__}
    return Estimate.from_runs(
        runs, bound="lower" if direction == "forward" else "upper", seconds=result.seconds,
        compile_seconds=result.compile_seconds, n_evals=result.n_evals, settings=settings, seed=seed_of(key),
        details=result, compiled=result.compiled,
    )
