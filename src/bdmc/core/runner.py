"""One bidirectional runner: every annealing estimator, forward or reverse, is a configuration of it.

The direction is data (:class:`bdmc.contracts.pairs.Direction`): where the chains start (prior draws, or the
exact posterior sample that generated the simulated data), which way the path is walked, the sign that turns a
run's log-weight into an estimate of ``log p(y)`` and the bound side. An estimator (AIS, SMC / SHME, tempered
SMC, the generative per-image AIS) contributes only its configuration: the path and kernel its pilot chose
(:class:`Route`), its step rule and resampler, and its settings. The runner does the rest once: the start
(:func:`start`), the engine call, the pilot's cost added to the run's, the settings, :meth:`Estimate.from_runs`
and the health warnings (:func:`run`).

The key convention is the engine's (:mod:`bdmc.core.engine`): a forward run splits the caller's key into the
prior draws' key and the run's; a reverse run runs on the caller's key as is.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import cached
from ..contracts.estimate import Estimate, seed_of
from ..contracts.model import log_density
from ..contracts.nonfinite import describe_nonfinite
from ..contracts.pairs import Direction
from ..errors import BDMCError, NonFiniteLogDensityError
from .engine import anneal
from .health import divergence_fields, warn_if_unhealthy
from .prior import prior_draws_batch, timed_prior_draws
from .prior_check import PRIOR_CHECK_DRAWS

# Frames between the health warning and the caller of a registered estimator: warn_if_unhealthy, run, the
# estimator's bidirectional function, its direction, the registry's wrapper.
CALLER = 6


class Start(NamedTuple):
    """The chains' starting states, the key the run draws on, the caller's key (recorded as the seed), and the
    seconds spent compiling the prior draws' program when this call built it."""

    init: Any
    key: Any
    caller: Any
    compile_seconds: float = 0.0


class Route(NamedTuple):
    """What an estimator's configuration chose before its run: the forward path, the kernel and the pilot.

    Attributes
    ----------
    path : ndarray (T,) or (T, N)
        The path from the prior to the posterior; a reverse run walks it backwards.
    kernel
        The run's kernel (already repeated for several moves per step).
    pilot : optional
        What chose them (:class:`bdmc.core.pilot.Tuned`, :class:`bdmc.core.smc_pilot.RefinedPath`,
        :class:`PilotCost`): its ``seconds`` (compilation included), ``compile_seconds`` and ``n_evals`` are
        part of the estimate's, its ``settings()`` part of the estimate's settings. None: no pilot ran.
    head : int
        Rows at the posterior (lambda = 1) a reverse run visits before its first step back (SHME's dispersal).
    """

    path: np.ndarray
    kernel: Any
    pilot: Any = None
    head: int = 0


class PilotCost(NamedTuple):
    """A pilot's cost alone (a pilot that records no settings)."""

    seconds: float
    compile_seconds: float
    n_evals: int

    def settings(self) -> dict:
        return {}


def start(direction: Direction, key, model, data, *, chains: int, exact_latent=None, copies: int = 1,
          name: str) -> Start:
    """Where ``chains`` chains start, on the caller's ``key``.

    Forward: ``chains`` prior draws (the key split of :func:`bdmc.core.prior.prior_draws`). Reverse: the exact
    latent broadcast to ``chains // copies`` chains (or a batch with that leading axis, checked) and each copied
    ``copies`` times in a row (tempered SMC's particles of a run share their run's latent); its density at the
    posterior is checked first (:func:`check_exact_latent`), so a malformed exact latent is the caller's error,
    found before any pilot runs. ``name`` names the estimator in errors.
    """
    if direction.forward:
        init, key_run, drawn = timed_prior_draws(key, model, chains)
        return Start(init, key_run, key, drawn)
    require_exact_latent(exact_latent, name)
    own = broadcast_latent(model, exact_latent, chains // copies)
    check_exact_latent(model, data, exact_latent, own, 1.0, description=name)
    init = own if copies == 1 else jax.tree.map(lambda a: jnp.repeat(a, copies, axis=0), own)
    return Start(init, key, key)


def start_batch(direction: Direction, keys, model, *, chains: int, exact_start=None) -> tuple[Any, Any]:
    """A batch of data sets' starts (one key each): ``chains`` prior draws per data set forward
    (:func:`bdmc.core.prior.prior_draws_batch`), the given ``exact_start`` (data sets, chains, ...) in reverse."""
    if direction.forward:
        return prior_draws_batch(keys, model, int(chains))
    return exact_start, keys


def run(direction: Direction, model, data, begun: Start, route: Route, *, name: str, detail: str, settings: dict,
        num_particles: int = 1, resampler=None, rule=None, record_increments: bool = False,
        progress="auto") -> Estimate:
    """Run one estimate along ``route`` from ``begun`` and return it, its pilot's cost and settings included.

    A run's estimate is ``direction.sign`` times its log-weight (chains without a resampler: AIS) or its
    particles' log evidence; runs combine by the rule of ``direction.bound``. ``name`` and ``detail``
    ("forward AIS", "T=100") label progress, errors and the health warnings; ``settings`` are the estimator's,
    to which the pilot's are added ("tuned": "off" when none ran).
    """
    result = anneal(begun.key, model, data, route.kernel, direction.visit(route.path, head=route.head), begun.init,
                    num_particles=num_particles, resampler=resampler, rule=rule, prior_check=PRIOR_CHECK_DRAWS,
                    record_increments=record_increments, progress=progress, description=f"{name} {detail}")
    evidence = result.log_weights if resampler is None else result.log_evidence
    settings = dict(settings) | (route.pilot.settings() if route.pilot is not None else {})
    settings.setdefault("tuned", "off")
    cost = costs(result, route.pilot)
    cost["compile_seconds"] += begun.compile_seconds  # a prior draws' program built by this call
    estimate = Estimate.from_runs(direction.sign * evidence, bound=direction.bound, who=name, settings=settings,
                                  seed=seed_of(begun.caller), details=result,
                                  compiled=result.compiled or begun.compile_seconds > 0, **cost,
                                  **divergence_fields(result))
    return warn_if_unhealthy(estimate, f"{name} {detail}", stacklevel=CALLER)


def costs(result, pilot) -> dict:
    """A run's seconds (compilation apart), compilation seconds and evaluations, its pilot's included."""
    extra = (pilot.seconds - pilot.compile_seconds, pilot.compile_seconds, pilot.n_evals) if pilot else (0, 0, 0)
    return {"seconds": result.seconds + extra[0], "compile_seconds": result.compile_seconds + extra[1],
            "n_evals": result.n_evals + extra[2]}


# ------------------------------------------------------------------------------------ the exact start


def require_exact_latent(exact_latent, who: str) -> None:
    """Refuse a missing exact posterior sample, naming the estimator that needs it."""
    if exact_latent is None:
        raise BDMCError(f"{who} starts from the exact posterior sample: pass exact_latent=... (the latent that "
                        "generated the simulated data, as bdmc.simulate returns it)")


def broadcast_latent(model, latent, num_chains):
    """Give one latent a leading chain axis, or check an already batched one."""
    single = latent_shape(model)
    leaves, ref = jax.tree.leaves(latent), jax.tree.leaves(single)
    if jax.tree.structure(latent) != jax.tree.structure(single):
        raise BDMCError(f"exact latent has structure {jax.tree.structure(latent)}, "
                        f"the model's latents have {jax.tree.structure(single)}")
    batched = all(np.ndim(x) == len(r.shape) + 1 for x, r in zip(leaves, ref, strict=False))
    if batched:
        if any(np.shape(x)[0] != num_chains for x in leaves):
            raise BDMCError(f"a batched exact latent needs leading axis num_chains={num_chains}")
        return latent
    for x, r in zip(leaves, ref, strict=False):
        if tuple(np.shape(x)) != tuple(r.shape):
            raise BDMCError(f"exact latent leaf has shape {np.shape(x)}, the model's has {r.shape}")
    return jax.tree.map(lambda x: jax.numpy.broadcast_to(x, (num_chains,) + np.shape(x)), latent)


def check_exact_latent(model, data, exact_latent, init, lam, *, description: str) -> None:
    """Refuse an exact sample whose log density at the path's start is NaN, +inf or -inf, naming the term.

    A reverse run's weights start from this density: NaN or +inf is a bug in the model, and -inf (zero
    density) means the sample could not have generated the data, which would make the upper bound +inf.
    """
    batched = init is exact_latent
    density = _densities(model, batched)
    values = np.atleast_1d(np.asarray(density(init if batched else exact_latent, data, lam)))
    if np.all(np.isfinite(values)):
        return
    chain = int(np.argmax(~np.isfinite(values)))
    latent = jax.tree.map(lambda a: a[chain], init) if batched else exact_latent
    term, case, value = describe_nonfinite(model, latent, data, lam, zero=True) or ("log density", None,
                                                                                   float(values[chain]))
    if value == -np.inf:
        what = f"{term} case {case}" if case is not None else term
        where = f" (chain {chain})" if batched else ""
        raise BDMCError(
            f"{description}: the exact latent{where} has zero density under the posterior ({what} is -inf): it "
            "cannot have generated the data, and every reverse weight would be zero (an upper bound of +inf). "
            "Check that the model's sample_prior and sample_data agree with its log_prior and log_likelihood."
        )
    raise NonFiniteLogDensityError(term=term, value=value, case=case, step=None,
                                   lam=float(lam) if np.ndim(lam) == 0 else np.asarray(lam).tolist(),
                                   chain=chain if batched else None, evaluated_by="exact latent",
                                   direction=description)


@cached(maxsize=256)
def latent_shape(model):
    """Shapes and dtypes of one latent of ``model`` (a prior draw), computed once per model."""
    return jax.eval_shape(model.sample_prior, jax.random.key(0))


@cached(maxsize=256)
def _densities(model, batched: bool):
    fn = lambda x, data, lam: log_density(model, x, data, lam)  # noqa: E731
    return jax.jit(jax.vmap(fn, (0, None, None)) if batched else fn)
