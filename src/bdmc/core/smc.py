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

SHME starts every particle of every run at the one exact latent. Before its first deletion it takes
``disperse_steps`` rounds of moves at the full posterior (rows of ones at the head of the reversed path: zero
increments, the kernel's moves at lambda = 1). The exact latent's distribution is the posterior, which those
moves leave invariant, so ``E[1/Z_hat] = 1/p(y)`` still holds; the particles no longer all carry the one latent
into the deletions, which is what spread the estimate from data set to data set beyond its ``stderr``
(:func:`shme`).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from ..contracts.capabilities import CaseProposal, OwnKernel, require, supports
from ..contracts.estimate import Estimate
from ..contracts.model import log_predictive, n_cases, validate_data
from ..contracts.pairs import EstimatorPair, direction_of, register_pair
from ..errors import BDMCError
from ..kernels import repeat
from . import runner, schedules
from .ais import default_kernel
from .ais_rule import AISRule
from .pilot import pilot_key
from .resampling import AdaptiveResampling
from .smc_pilot import DataPathPilot, refine_data_path

PROPOSALS = ("auto", "prior", "posterior")
DEFAULT_DATA_PILOT = DataPathPilot()
DISPERSE_FRACTION = 0.5  # SHME's rounds of moves at the full posterior, as a share of its deletion steps ...
DISPERSE_MIN = 5  # ... and at least this many (benchmarks/shme_one_latent.py)
GENERIC_PARTICLES = 64  # particles per run of num_particles="auto" for models without their own kernel


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
        return jnp.where(sign == 0, 0.0, sign * log_predictive(model, latent, data, off, i))

    def refresh(self, key, model, latent, data, lam_from, lam_to):
        """Redraw the switched case's local latents; a step that switches no case (SHME's moves at the full
        posterior) keeps the state."""
        i, sign, _ = self._switched(lam_from, lam_to)
        drawn = model.sample_case(key, latent, data, lam_to, i)
        return jax.tree.map(lambda old, new: jnp.where(sign == 0, old, new), latent, drawn)

    def culprit(self, model, latent, data, lam_from, lam_to):
        """Name a NaN or +inf predictive behind a failed weight check (on the host, after the run stopped)."""
        i, _, off = self._switched(jnp.asarray(lam_from), jnp.asarray(lam_to))
        value = float(model.log_predictive(latent, data, off, i))
        return None if value < float("inf") else ("log_predictive", int(i), value)


def sequential_monte_carlo(
    key,
    model,
    data,
    *,
    direction: str,
    exact_latent=None,
    num_moves: int = 1,
    num_particles: int | str = "auto",
    num_runs: int = 16,
    kernel: Any = None,
    proposal: str = "auto",
    resampling: str = "systematic",
    ess_threshold: float = 0.5,
    order=None,
    tune: str | DataPathPilot = "auto",
    disperse_steps: int | str = "auto",
    progress="auto",
) -> Estimate:
    """SMC over data cases in either direction: forward from prior draws, switching cases on (SMC, a stochastic
    lower bound on ``log p(y)``, BDMC paper Alg. 2), or in reverse from the exact posterior sample, deleting them
    (SHME, an upper bound, Alg. 3).

    Parameters
    ----------
    key : PRNG key
    model, data
        A Model and its observed data; ``model.log_likelihood`` has one term per data case.
    direction : {"forward", "reverse"}
        Forward runs combine by log-mean-exp; reverse ones (every particle starting at ``exact_latent``,
        resampled in proportion to 1/w) by log-harmonic-mean.
    exact_latent : optional
        The exact posterior sample (reverse only; forward ignores it).
    num_moves : int
        MCMC transitions (applications of ``kernel``) after each data case is added or deleted: the knob. Under
        the data-path pilot, the least at any step: the pilot adds moves at the steps where ``num_moves`` of them
        leave a particle correlated with where it began (``DataPathPilot.moves_target``), frozen by the share
        of data; ``settings["moves_per_step"]`` records the counts.
    num_particles : int or "auto"
        Particles per run, resampled when their ESS falls below ``ess_threshold * num_particles``. "auto" is
        1 (the paper's SMC) for a model with its own kernel or with a predictive proposal, else
        :data:`GENERIC_PARTICLES`: with the prior proposal a single particle cannot recover from the first
        cases' spread of likelihoods, whatever the moves (``bdmc.core.smc_pilot``); the choice is recorded in
        ``settings["num_particles"]``.
    num_runs : int
        Independent runs, each giving one estimate of ``log p(y)``.
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
        The order in which cases are added (default 0..N-1); SHME deletes them in the reverse order.
    tune : "auto", "pilot", "off" or DataPathPilot
        Pilot-chosen, then frozen (:mod:`bdmc.core.smc_pilot`): a pilot with its own keys chooses each step of
        the data path, switching on as many cases at once as keep the step's increment variance near the
        target and splitting a case the particles disagree about into partial steps; the run follows that
        path frozen, so the bound keeps its guarantee, and costs O(N) likelihood terms per step over as many
        steps as the posterior's concentration needs, not N; the same pilot steers the kernel's step size and
        fits its preconditioner at each step, and chooses each step's moves, frozen in tables keyed by the
        share of data switched on (:mod:`bdmc.core.smc_pilot`: on posteriordb's sblrc a fixed step size left
        single SMC runs a median of thousands of nats off). "auto"
        pilots models without a kernel of their own under the "prior" proposal (the paper's models, with their
        own kernels and predictive proposals, run the plain data path); the pilot's time and evaluations are
        included in the estimate's, and ``settings`` records its choice.
    disperse_steps : int or "auto"
        Reverse only: rounds of ``num_moves`` moves at the full posterior before the first deletion (0: the
        paper's Alg. 3). "auto" is :data:`DISPERSE_FRACTION` of the deletion path's steps, at least
        :data:`DISPERSE_MIN`; recorded in ``settings["disperse_steps"]`` (:func:`shme` says why).
    progress : bool, "auto" or callable

    Returns
    -------
    Estimate
        ``bound="lower"`` forward, ``"upper"`` in reverse; one run per entry of ``runs``.
    """
    side = direction_of(direction)
    if proposal not in PROPOSALS:
        raise BDMCError(f"unknown proposal {proposal!r}; choose one of {PROPOSALS}")
    if proposal == "auto":
        proposal = "posterior" if supports(model, CaseProposal) else "prior"
    if proposal == "posterior":
        require(model, CaseProposal, purpose="SMC with proposal='posterior' (else use proposal='prior')")
    if isinstance(num_particles, str) and num_particles == "auto":
        num_particles = 1 if proposal == "posterior" or supports(model, OwnKernel) else GENERIC_PARTICLES
    for name, value in (("num_moves", num_moves), ("num_particles", num_particles), ("num_runs", num_runs)):
        if isinstance(value, (bool, str)) or int(value) != value or value < 1:
            extra = ' or "auto"' if name == "num_particles" else ""
            raise BDMCError(f"{name} must be a positive integer{extra}, got {value!r}")
    if not (isinstance(disperse_steps, str) and disperse_steps == "auto") and (
            isinstance(disperse_steps, (bool, str)) or int(disperse_steps) != disperse_steps or disperse_steps < 0):
        raise BDMCError(f'disperse_steps must be a non-negative integer or "auto", got {disperse_steps!r}')
    if not (isinstance(tune, DataPathPilot) or (isinstance(tune, str) and tune in ("auto", "pilot", "off"))):
        raise BDMCError(f"tune must be 'auto', 'pilot', 'off' or a DataPathPilot, got {tune!r}")
    if tune != "off" and proposal == "posterior" and tune != "auto":
        raise BDMCError("tune refines the data path of the 'prior' proposal; the 'posterior' proposal switches a "
                        "case on in one step by its predictive density: pass tune='off' or proposal='prior'")
    name = "SMC" if side.forward else "SHME"
    data = validate_data(model, data)
    num_cases = n_cases(model, data)
    path = schedules.data_path(num_cases, order=order)
    piloted = isinstance(tune, DataPathPilot) or tune == "pilot" or (
        tune == "auto" and kernel is None and not supports(model, OwnKernel) and proposal == "prior")
    kernel = default_kernel(model) if kernel is None else kernel
    begun = runner.start(side, key, model, data, chains=num_runs * num_particles, exact_latent=exact_latent,
                         name=name)
    refined = None
    if piloted:
        pilot = tune if isinstance(tune, DataPathPilot) else DEFAULT_DATA_PILOT
        refined = refine_data_path(pilot_key(pilot.seed), model, data, kernel, num_cases=num_cases, order=order,
                                   pilot=pilot, moves=int(num_moves), run_particles=int(num_particles))
        path, kernel = refined.path, refined.kernel
    else:
        kernel = kernel if num_moves == 1 else repeat(kernel, int(num_moves))
    settings = {"method": name.lower(), "direction": side.name, "num_moves": int(num_moves),
                "num_particles": int(num_particles), "num_runs": int(num_runs), "proposal": proposal,
                "resampling": resampling, "ess_threshold": float(ess_threshold), "kernel": type(kernel).__name__,
                "tuned": "pilot" if piloted else "off"}
    head = 0
    if not side.forward:
        # Rows at the full posterior: zero increments, the kernel's moves at lambda = 1 (module docstring).
        head = settings["disperse_steps"] = disperse_steps_for(disperse_steps, path)
    return runner.run(side, model, data, begun, runner.Route(path, kernel, refined, head), name=name,
                      detail=f"({num_moves} moves/case)", settings=settings, num_particles=num_particles,
                      resampler=AdaptiveResampling(scheme=resampling, ess_threshold=ess_threshold),
                      rule=PosteriorProposal() if proposal == "posterior" else AISRule(), progress=progress)


SMC_DOC = """SMC over data cases from prior draws: a stochastic lower bound on ``log p(y)`` (BDMC paper, Alg. 2).

    ``smc(key, model, data, *, num_moves=1, num_particles="auto", num_runs=16, kernel=None, proposal="auto",
    resampling="systematic", ess_threshold=0.5, order=None, tune="auto", progress="auto")``: the parameters are
    those of :func:`sequential_monte_carlo` (``exact_latent`` and ``disperse_steps`` are accepted and not used).

    Returns
    -------
    Estimate
        ``bound="lower"``; one run per entry of ``runs``.
    """

SHME_DOC = """Sequential harmonic mean estimator: a stochastic upper bound on ``log p(y)`` (BDMC paper, Alg. 3).

    Every particle starts at ``exact_latent`` (the latent that generated the simulated data), takes
    ``disperse_steps`` rounds of ``num_moves`` kernel moves at the full posterior, and then deletes the data
    cases in the reverse of ``order`` (or of the pilot's path, ``tune``), resampled in proportion to 1/w; runs
    combine by log-harmonic-mean. The parameters are those of :func:`sequential_monte_carlo`.

    The upper-bound guarantee, ``E[1/Z_hat] = 1/p(y)``, averages over the exact sample as well as the runs, and
    every run starts from the one exact sample: what a run remembers of it does not average out across runs,
    and ``stderr`` (taken across runs) does not see it. Without dispersal the combined estimate of a
    Gamma-Poisson model (30 counts, a pilot-chosen path, 32 runs of 32 particles) spread by 0.21 nats from data
    set to data set, and sat below ``log p(y)`` by more than three of its standard errors on 17 of 200 data sets
    (down to 1.41 nats below), though ``E[p(y)/Z_hat]`` was 1 within its error (the path is not at fault: one
    case at a time spread by 0.25 nats). Moves at the full posterior leave the exact sample's distribution
    unchanged, so the guarantee stands, and they spread the particles over the posterior before the first
    deletion: the default brought the spread to 0.07 nats and 2 of 200 data sets below by three standard errors
    (``benchmarks/results/shme_one_latent/``).

    Returns
    -------
    Estimate
        ``bound="upper"``; ``settings["disperse_steps"]`` records the rounds of moves.
    """

SMC_PAIR = EstimatorPair(
    "smc", lower="smc", upper="shme", knob="num_moves", symbol="moves",
    nouns=("number of moves per data case", "numbers of moves per data case"), axis="MCMC moves per data case",
    labels=("SMC", "SHME"),
    remedy="More moves per data case (larger --steps values), more particles (--particles) or more runs (--runs)",
    summary="SMC/SHME, --steps = moves per case", smallest=1, default_knob=1, particles=1,
    styles=(("#2ca02c", "D"), ("#ff7f0e", "P")))
smc, shme = register_pair(SMC_PAIR, sequential_monte_carlo, knobs=(1, 3, 10), estimator_labels=("SMC", "SHME"),
                          docs=(SMC_DOC, SHME_DOC), names=("smc", "shme"))


def disperse_steps_for(disperse_steps, path) -> int:
    """SHME's rounds of moves at the full posterior: ``disperse_steps``, or for "auto" the share
    :data:`DISPERSE_FRACTION` of the deletion path's steps, at least :data:`DISPERSE_MIN`."""
    if isinstance(disperse_steps, str):
        return max(DISPERSE_MIN, math.ceil(DISPERSE_FRACTION * (len(path) - 1)))
    return int(disperse_steps)
