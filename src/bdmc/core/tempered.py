"""Tempered SMC on the geometric path: forward from prior draws (unbiased for Z), in reverse from the exact
latent (unbiased for 1/Z).

``num_particles`` particles per run move along the path ``f(x; lam) = p(x) p(y | x)^lam`` from prior to
posterior: at each temperature every particle is weighted by ``f(x; lam_to) / f(x; lam_from)``, the run's
particles are resampled when their ESS falls below ``ess_threshold * num_particles``, and each particle then
takes ``num_moves`` transitions of a kernel that leaves ``f(.; lam_to)`` invariant. Everything adaptive (the
temperatures, the kernel's step sizes and preconditioner) is chosen by the AIS pilot (:mod:`bdmc.core.pilot`)
on its own keys and frozen, so the run is a Feynman-Kac particle system with fixed potentials and kernels:

- **Forward.** Its estimate ``Z_hat = prod_t (1/K) sum_k w_t^k`` is unbiased for ``Z = p(y)`` (Del Moral 2004,
  Prop. 7.4.1; any resampling scheme that keeps each particle's expected offspring proportional to its
  weight). So ``log Z_hat`` is a stochastic lower bound on ``log p(y)``: ``E[log Z_hat] <= log p(y)``, and
  ``P(log Z_hat > log p(y) + b) <= exp(-b)`` (Markov).
- **Reverse.** Run the same system along the reversed path, from ``f(.; 1)`` (the posterior, normalizer Z) to
  ``f(.; 0)`` (the prior, normalizer 1). The same theorem says its estimate is unbiased for the ratio of
  the end normalizers, ``1 / Z``, *provided its initial particles are distributed as the first target*.
  The argument (docs/tempered_smc.md) needs each initial particle to be marginally a posterior draw, not the
  particles to be independent: the proof conditions on nothing at time 0 but the law of the first particle
  system, and with the ``K`` particles all equal to one exact latent ``x*`` the law is that of ``x*``
  copied ``K`` times; the first weights are then equal, and the identity ``E[Z_hat_rev] = 1/Z`` holds by the
  tower property through ``x*``. So ``-log Z_hat_rev`` is a stochastic upper bound on ``log p(y)``, as
  reverse AIS's (its ``K = 1`` case) is.

With ``num_particles = 1`` both are AIS. Temperatures adapted *inside* the run from its own particles (as
BlackJAX's and PyMC's adaptive tempering do) break the first condition: the potentials depend on the
particles they weight, and the estimate is biased (``tests/core/test_tempered.py`` measures the bias).
"""

from __future__ import annotations

from typing import Any

from ..contracts.estimate import Estimate
from ..contracts.model import validate_data
from ..contracts.pairs import EstimatorPair, direction_of, register_pair
from ..errors import BDMCError
from ..kernels import RepeatUpTo, repeat
from . import runner
from .ais import plan
from .pilot import MAX_MOVES, Pilot
from .resampling import AdaptiveResampling

PARTICLES = 32  # particles per run of num_particles="auto"


def tempered_sequential_monte_carlo(
    key,
    model,
    data,
    *,
    direction: str,
    exact_latent=None,
    num_steps: int = 100,
    num_particles: int | str = "auto",
    num_runs: int = 16,
    num_moves: int | str = "auto",
    kernel: Any = None,
    schedule="auto",
    tune: str | Pilot = "auto",
    resampling: str = "systematic",
    ess_threshold: float = 0.5,
    progress="auto",
) -> Estimate:
    """Tempered SMC in either direction (module docstring): forward from prior draws, an unbiased estimate of
    ``p(y)`` and so a stochastic lower bound on its log; in reverse from the exact posterior sample to the prior,
    unbiased for ``1 / p(y)``, so the negated log is a stochastic upper bound.

    Parameters
    ----------
    key : PRNG key
        Drives the run; the pilot folds in its own stream (:mod:`bdmc.core.pilot`).
    model, data
        A Model and its observed data.
    direction : {"forward", "reverse"}
        Forward runs combine by log-mean-exp; in reverse every particle of a run starts at its run's exact
        latent, the pilot still runs forward from prior draws on its own keys and the run follows the reverse
        of the temperatures it chose; runs combine by log-harmonic-mean.
    exact_latent : optional
        Reverse only (forward ignores it): one exact sample, or a batch with a leading axis of ``num_runs``
        (one per run).
    num_steps : int
        Temperatures T on the path, 0 and 1 included (T - 1 weightings): the knob.
    num_particles : int or "auto"
        Particles per run ("auto": :data:`PARTICLES`).
    num_runs : int
        Independent runs, each one estimate of ``log p(y)``; the ± is their spread, so the default (16, as for
        forward AIS) gives it 15 degrees of freedom.
    num_moves : int or "auto"
        Kernel transitions per particle at each temperature. "auto": the pilot's choice
        (:meth:`bdmc.core.pilot.Tuned.moves_for`: enough moves that a particle keeps at most 0.2 of its
        correlation with where it began, from the pilot's measured lag-one correlation, at most 10), frozen;
        1 when no pilot runs (a model with its own kernel).
    kernel : optional
        Leaves every ``f(.; lam)`` invariant; the model's own, else pilot-tuned HMC (as :func:`bdmc.forward_ais`).
    schedule : "auto", a schedule name or an array
        The temperatures; "auto" takes the pilot's (frozen), as :func:`bdmc.forward_ais` does.
    tune : "auto", "pilot", "off" or Pilot
        As for :func:`bdmc.forward_ais`: every adaptive choice comes from a pilot on its own keys, frozen.
    resampling : {"systematic", "stratified", "multinomial"}
    ess_threshold : float
        A run's particles are resampled when their ESS falls below this share of ``num_particles``.
    progress : bool, "auto" or callable

    Returns
    -------
    Estimate
        One entry of ``runs`` per run; ``settings`` records the particles, moves and the pilot's choices.
    """
    side = direction_of(direction)
    if isinstance(num_particles, str) and num_particles == "auto":
        num_particles = PARTICLES
    auto_moves = isinstance(num_moves, str) and num_moves == "auto"
    for option, value in (("num_moves", 1 if auto_moves else num_moves), ("num_particles", num_particles),
                          ("num_runs", num_runs)):
        if isinstance(value, (bool, str)) or int(value) != value or value < 1:
            extra = ' or "auto"' if option in ("num_particles", "num_moves") else ""
            raise BDMCError(f"{option} must be a positive integer{extra}, got {value!r}")
    num_particles, num_runs = int(num_particles), int(num_runs)
    if not 0.0 <= float(ess_threshold) <= 1.0:
        raise BDMCError(f"ess_threshold must lie in [0, 1], got {ess_threshold!r}")
    try:
        resampler = AdaptiveResampling(scheme=resampling, ess_threshold=float(ess_threshold))
    except ValueError as err:  # an unknown scheme, named by the resampler
        raise BDMCError(str(err)) from err
    name = "tempered SMC" if side.forward else "reverse tempered SMC"
    data = validate_data(model, data)
    # One exact latent per run, copied to its particles.
    begun = runner.start(side, key, model, data, chains=num_runs * num_particles, exact_latent=exact_latent,
                         copies=num_particles, name=name)
    path, kernel, tuned = plan(model, data, kernel, schedule, num_steps, tune)
    if auto_moves and tuned is not None:
        # The count is data of the compiled run: calls whose pilots chose different counts share one program.
        num_moves = tuned.moves_for()
        kernel = RepeatUpTo(kernel, num_moves, MAX_MOVES)
    else:
        num_moves = 1 if auto_moves else int(num_moves)
        kernel = kernel if num_moves == 1 else repeat(kernel, num_moves)
    settings = {"method": "tempered-smc", "direction": side.name, "num_steps": int(path.shape[0]),
                "num_particles": num_particles, "num_runs": num_runs, "num_moves": num_moves,
                "moves_chosen": ("pilot" if tuned is not None else "default") if auto_moves else "given",
                "resampling": resampling, "ess_threshold": float(ess_threshold), "kernel": type(kernel).__name__}
    return runner.run(side, model, data, begun, runner.Route(path, kernel, tuned), name=name,
                      detail=f"T={path.shape[0]} K={num_particles}", settings=settings, num_particles=num_particles,
                      resampler=resampler, progress=progress)


FORWARD_DOC = """Tempered SMC from prior draws: an unbiased estimate of ``p(y)``, a stochastic lower bound on its log.

    ``tempered_smc(key, model, data, *, num_steps=100, num_particles="auto", num_runs=16, num_moves="auto",
    kernel=None, schedule="auto", tune="auto", resampling="systematic", ess_threshold=0.5, progress="auto")``:
    the parameters are those of :func:`tempered_sequential_monte_carlo` (``exact_latent`` is accepted and not
    used); runs combine by log-mean-exp.

    Returns
    -------
    Estimate
        ``bound="lower"``; one entry of ``runs`` per run; ``settings`` records the particles, moves and the
        pilot's choices.
    """

REVERSE_DOC = """Tempered SMC from the exact posterior sample to the prior: unbiased for ``1 / p(y)``, so the negated
    log is a stochastic upper bound on ``log p(y)`` (module docstring).

    Every particle of a run starts at ``exact_latent`` (one exact sample, or a batch with a leading axis of
    ``num_runs``: one per run); runs combine by log-harmonic-mean. The parameters are those of
    :func:`tempered_sequential_monte_carlo`; the pilot runs forward from prior draws on its own keys and the run
    follows the reverse of the temperatures it chose.

    Returns
    -------
    Estimate
        ``bound="upper"``.
    """

TEMPERED_PAIR = EstimatorPair(
    "tempered-smc", lower="tempered-smc", upper="rev-tempered-smc", knob="num_steps", symbol="T",
    nouns=("number of temperatures", "numbers of temperatures"), axis="temperatures T",
    labels=("tempered SMC", "reverse tempered SMC"),
    remedy="More temperatures (a larger T), more particles (--particles) or more runs (--runs)",
    summary="tempered SMC from prior and exact latent, --steps = T", smallest=2, default_knob=100,
    particles=PARTICLES, styles=(("#9edae5", "o"), ("#ff9896", "s")))
tempered_smc, reverse_tempered_smc = register_pair(
    TEMPERED_PAIR, tempered_sequential_monte_carlo, knobs=(10, 30, 100),
    estimator_labels=("tempered SMC", "rev tempered SMC"), docs=(FORWARD_DOC, REVERSE_DOC),
    names=("tempered_smc", "reverse_tempered_smc"))
