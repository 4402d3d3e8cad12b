"""Per-image AIS for decoder-based models: forward (lower bound), reverse from the exact z (upper bound).

The paper's protocol (Wu et al. 2017, Sec. 4): for each image, 16 chains anneal over z along
``p(z) p(x | z)^beta`` (sigmoidal schedule), one HMC trajectory of 10 leapfrog steps per distribution with
the step size tuned to about 65% acceptance; the image's estimate is the log-mean-exp over its chains and
the data set's is the mean over images. Every weight belongs to ONE image and ONE chain: a weight of a
batch of images together would estimate ``log prod_i p(x_i)`` with a looser bound (its log-mean-exp is
taken over chains of the whole batch, not per image), so it is not offered. The images are one batched call
of the project's annealing engine (:func:`bdmc.core.engine.anneal` with a batch axis over images): image
``i`` runs on ``fold_in(key, i)`` exactly as ``bdmc.forward_ais`` (or ``bdmc.reverse_ais``) would run it alone
on that key with the same kernel and path, with the engine's density checks, failure messages, progress and
compile cache. Step sizes come from a frozen pilot table (:mod:`bdmc.generative.pilot`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import CompiledCache
from ..contracts.estimate import Estimate, freeze, seed_of
from ..contracts.pairs import direction_of
from ..core import runner
from ..core.ais import AIS_PAIR, make_path
from ..core.engine import DEFAULT_CHUNK, anneal
from ..core.prior_check import PRIOR_CHECK_DRAWS
from ..errors import BDMCError, DataError
from ..kernels.hmc import HMC
from .model import DecoderData, DecoderModel, EncoderData, EncoderStartModel, check_decoder, positive_sigma
from .pilot import pilot_table, resolve_tune
from .rate_distortion import RateDistortion
from .rate_distortion import rate_distortion as curve_from_increments


class EncoderStart(NamedTuple):
    """Start AIS from an encoder: ``encoder(params, x) -> (mean, log_std)`` of a diagonal Gaussian q(z | x)."""

    encoder: Callable
    params: Any


@dataclass(frozen=True)
class ImageEstimates:
    """Per-image log-likelihood estimates of a decoder model, one weight per image and chain.

    Attributes
    ----------
    log_weights : ndarray (n_images, n_chains)
        One single-run estimate of ``log p(x_i)`` per image and chain: the AIS log-weight (forward), or minus
        the reverse log-weight (reverse; ``exp(-value)`` is unbiased for ``1 / p(x_i)``).
    per_image, per_image_stderr : ndarray (n_images,)
        Each image's estimate, combined over its chains by ``combine`` (log-mean-exp for the lower bound,
        log-harmonic-mean for the upper), and its delta-method standard error.
    mean, stderr : float
        The mean of ``per_image`` over images and its standard error across images.
    bound : {"lower", "upper"}
    combine : str
    latents : ndarray (n_images, n_chains, k)
        The chains' final z (forward: approximate posterior samples; reverse: approximate prior samples).
    acceptance : ndarray (T - 1,)
        Mean HMC acceptance over images and chains at each step.
    step_size : float or StepSizeTable
        The frozen step size the run used (pass it as ``tune=`` to reuse it).
    seconds, compile_seconds, n_evals, compiled
        Wall time excluding compilation (pilot included), compilation time, gradient evaluations (pilot
        included), and whether this call compiled the run.
    settings : mapping
    seed : tuple of int
    rate_distortion : RateDistortion or None
        The rate-distortion curve from the same run (forward AIS from the prior with ``rate_distortion=True``).
    """

    log_weights: np.ndarray
    per_image: np.ndarray
    per_image_stderr: np.ndarray
    mean: float
    stderr: float
    bound: str
    combine: str
    latents: np.ndarray = field(repr=False)
    acceptance: np.ndarray = field(repr=False)
    step_size: Any
    seconds: float
    compile_seconds: float
    n_evals: int
    compiled: bool
    settings: Mapping[str, Any] = field(default_factory=dict)
    seed: tuple = ()
    rate_distortion: RateDistortion | None = field(default=None, repr=False)

    def __post_init__(self):
        freeze(self, ("log_weights", "per_image", "per_image_stderr", "latents", "acceptance"))

    @property
    def num_images(self) -> int:
        return int(self.log_weights.shape[0])

    def estimate(self, i: int) -> Estimate:
        """Image ``i``'s estimate as a project :class:`~bdmc.Estimate` (for ``bdmc.bug_alarm``, tables)."""
        return Estimate.from_runs(self.log_weights[i], bound=self.bound, seconds=self.seconds / self.num_images,
                                  compile_seconds=0.0, n_evals=self.n_evals // self.num_images,
                                  settings=dict(self.settings) | {"image": int(i)}, seed=self.seed,
                                  compiled=self.compiled, estimator=AIS_PAIR.estimator(self.settings["direction"]))

    def to_dict(self) -> dict:
        """JSON-ready summary (per-image values, not the latents)."""
        return {"mean": self.mean, "stderr": self.stderr, "bound": self.bound, "combine": self.combine,
                "per_image": self.per_image.tolist(), "per_image_stderr": self.per_image_stderr.tolist(),
                "seconds": self.seconds, "compile_seconds": self.compile_seconds, "n_evals": int(self.n_evals),
                "compiled": self.compiled, "acceptance_mean": float(np.mean(self.acceptance)),
                "settings": {k: (v if isinstance(v, (int, float, str, bool)) or v is None else repr(v))
                             for k, v in self.settings.items()},
                "seed": list(self.seed)}


def ais_log_likelihood(key, decoder, params, images, *, sigma, latent_dim: int, num_steps: int = 1000,
                       num_runs: int = 16, leapfrog_steps: int = 10, target_acceptance: float = 0.65,
                       schedule="sigmoidal", tune="pilot", step_size: float = 0.05, pilot_images: int = 4,
                       init: EncoderStart | tuple | None = None, chunk_size: int = DEFAULT_CHUNK,
                       progress="auto", rate_distortion: bool = False) -> ImageEstimates:
    """Forward AIS per image: a stochastic lower bound on each ``log p(x_i)`` under ``N(decoder(z), sigma^2 I)``.

    Parameters
    ----------
    key : PRNG key
    decoder : callable
        ``decoder(params, z) -> mean image (D,)``, a pure JAX function.
    params : pytree
        The decoder's parameters (an argument of the compiled run, never a constant).
    images : array (n_images, D)
        Each row is evaluated on its own: one weight per image and chain.
    sigma : float
        Observation noise standard deviation (an argument of the compiled run: a sweep compiles once).
    latent_dim : int
    num_steps : int
        Intermediate distributions T (the paper: 10,000).
    num_runs : int
        Independent AIS chains per image, one weight each (the paper: 16 chains).
    leapfrog_steps : int
        Leapfrog steps of the one HMC trajectory per distribution (the paper: 10).
    target_acceptance : float
        Acceptance the pilot steers the step size to (the paper: about 0.65).
    schedule : str or array
        "sigmoidal" (the paper's), "linear", "geometric", or an explicit path (T,) from 0 to 1.
    tune : "pilot", "off", Pilot or StepSizeTable
        "pilot": pilot runs with their own keys on the first ``pilot_images`` images choose a step size for
        each beta, frozen for the run (:mod:`bdmc.generative.pilot`); "off": ``step_size`` everywhere; a
        table: used as given. "in-chain" adaptation is refused: it breaks the bound.
    step_size : float
        The step size with ``tune="off"``, and the pilot's starting point.
    pilot_images : int
        Images the pilot runs on (their tables are combined by geometric mean).
    init : EncoderStart or (encoder, enc_params), optional
        AIS from the encoder: start from ``q(z | x)`` and anneal along ``q^(1-beta) (p(z) p(x | z))^beta``
        (see :class:`~bdmc.generative.model.EncoderStartModel`). Default: from the prior.
    chunk_size : int
        Steps per compiled call (progress granularity; the numbers do not depend on it).
    progress : bool, "auto" or callable
        A progress bar per chunk, or ``callback(done, total)``.
    rate_distortion : bool
        Also estimate the rate-distortion curve from this run's intermediate distributions (Huang et al. 2020;
        :mod:`bdmc.generative.rate_distortion`): every increment is recorded, n_images x T x runs numbers.
        Needs the path from the prior (no ``init``).

    Returns
    -------
    ImageEstimates
        ``bound="lower"``; with ``rate_distortion``, its ``rate_distortion`` curve.
    """
    if rate_distortion and init is not None:
        raise BDMCError("rate_distortion needs AIS from the prior: the path from an encoder is no rate-distortion "
                        "channel of the prior")
    return _evaluate(key, decoder, params, images, None, direction="forward", sigma=sigma, latent_dim=latent_dim,
                     num_steps=num_steps, num_runs=num_runs, leapfrog_steps=leapfrog_steps,
                     target_acceptance=target_acceptance, schedule=schedule, tune=tune, step_size=step_size,
                     pilot_images=pilot_images, init=init, chunk_size=chunk_size, progress=progress,
                     rate_distortion=rate_distortion)


def reverse_ais_log_likelihood(key, decoder, params, images, latents, *, sigma, latent_dim: int,
                               num_steps: int = 1000, num_runs: int = 16, leapfrog_steps: int = 10,
                               target_acceptance: float = 0.65, schedule="sigmoidal", tune="pilot",
                               step_size: float = 0.05, pilot_images: int = 4,
                               init: EncoderStart | tuple | None = None, chunk_size: int = DEFAULT_CHUNK,
                               progress="auto") -> ImageEstimates:
    """Reverse AIS per image from the exact ``z`` that generated it: a stochastic upper bound on ``log p(x_i)``.

    Every chain of image i starts at ``latents[i]`` (an exact posterior sample: the z the image was drawn
    from, e.g. by :func:`~bdmc.generative.simulate_images`) and anneals along the reversed schedule. Each
    chain's ``-log w`` is a single-run upper bound; an image's chains combine by log-harmonic-mean, as
    :func:`bdmc.reverse_ais` does. Other parameters as for :func:`ais_log_likelihood` (with ``init`` the path
    ends at the encoder instead of the prior). The pilot, when it runs, draws on ``fold_in`` streams of
    ``key`` that this run's chains never use.

    Returns
    -------
    ImageEstimates
        ``bound="upper"``.
    """
    return _evaluate(key, decoder, params, images, latents, direction="reverse", sigma=sigma,
                     latent_dim=latent_dim, num_steps=num_steps, num_runs=num_runs,
                     leapfrog_steps=leapfrog_steps, target_acceptance=target_acceptance, schedule=schedule,
                     tune=tune, step_size=step_size, pilot_images=pilot_images, init=init,
                     chunk_size=chunk_size, progress=progress)


def image_keys(key, num_images: int):
    """Image ``i``'s key, ``fold_in(key, i)``: what ``bdmc.forward_ais`` / ``bdmc.reverse_ais`` of that image alone
    would be called with to give the same numbers (its pilot folds ``PILOT_STREAM`` into the same key)."""
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(int(num_images)))


def _evaluate(key, decoder, params, images, exact, *, direction, sigma, latent_dim, num_steps, num_runs,
              leapfrog_steps, target_acceptance, schedule, tune, step_size, pilot_images, init, chunk_size,
              progress, rate_distortion: bool = False) -> ImageEstimates:
    images = _check_images(images)
    n, dim = images.shape
    check_decoder(decoder, params, latent_dim, dim)
    if int(num_runs) < 1:
        raise BDMCError(f"num_runs must be at least 1, got {num_runs}")
    kind, tuning = resolve_tune(tune, target_acceptance)
    path = make_path(schedule, num_steps if isinstance(schedule, str) else None)
    log_sigma = jnp.log(jnp.asarray(positive_sigma(sigma), images.dtype))
    case = DecoderData(images, params, log_sigma)
    case_axes = DecoderData(0, None, None)
    if init is None:
        model, data, axes = DecoderModel(decoder, int(latent_dim), dim), case, case_axes
    else:
        encoder, enc_params = EncoderStart(*init)
        mean, log_std = _encode(encoder, enc_params, images, int(latent_dim))
        model = EncoderStartModel(decoder, int(latent_dim), dim)
        data, axes = EncoderData(case, mean, log_std), EncoderData(case_axes, 0, 0)

    kernel = HMC(model, step_size=float(step_size), num_integration_steps=int(leapfrog_steps))
    pilot = None
    if kind == "pilot":
        cases = [jax.tree.map(lambda ax, a, i=i: a if ax is None else a[i], axes, data, is_leaf=lambda x: x is None)
                 for i in range(min(n, max(1, int(pilot_images))))]
        table, *cost = pilot_table(key, model, cases, kernel, tuning)
        kernel = HMC(model, step_size=table, num_integration_steps=int(leapfrog_steps))
        pilot = runner.PilotCost(*cost)
    elif kind == "table":
        kernel = HMC(model, step_size=tuning, num_integration_steps=int(leapfrog_steps))

    side = direction_of(direction)
    exact_start = None
    if not side.forward:
        z = _check_latents(exact, n, int(latent_dim), images.dtype)
        start_u = z if init is None else jax.vmap(model.to_u, (0, axes))(z, data)
        exact_start = jnp.broadcast_to(start_u[:, None, :], (n, int(num_runs), int(latent_dim)))
    start, keys = runner.start_batch(side, image_keys(key, n), model, chains=int(num_runs), exact_start=exact_start)
    # The decoder is shared by every image, so a NaN region of it shows in any image: fewer draws per image.
    run = anneal(keys, model, data, kernel, side.visit(path), start, batch_axes=axes, batch_label="image",
                 chunk_size=chunk_size, prior_check=PRIOR_CHECK_DRAWS // 8, progress=progress,
                 record_increments=rate_distortion,
                 description=f"{direction} AIS T={path.shape[0]} ({n} images x {num_runs} runs)")
    latents = run.latents if init is None else jax.vmap(jax.vmap(model.to_z, (0, None)), (0, axes))(run.latents,
                                                                                                      data)
    settings = {"direction": direction, "num_steps": int(path.shape[0]), "num_runs": int(num_runs),
                "num_images": int(n), "sigma": float(sigma), "latent_dim": int(latent_dim),
                "leapfrog_steps": int(leapfrog_steps), "schedule": schedule if isinstance(schedule, str) else "array",
                "tuned": kind if kind != "pilot" else f"pilot on {len(cases)} image(s)",
                "target_acceptance": float(target_acceptance), "step_sizes": repr(kernel.step_size),
                "init": "prior" if init is None else "encoder", "kernel": "HMC"}
    curve = (curve_from_increments(np.asarray(path), run.increments, sigma=float(sigma), num_pixels=dim)
             if rate_distortion else None)
    return _combine(side, run, np.asarray(latents), kernel.step_size, pilot, settings, key, curve)


def _combine(side, run, latents, step_size, pilot, settings, key, curve=None) -> ImageEstimates:
    runs = side.sign * run.log_weights
    per_image = [Estimate.from_runs(r, bound=side.bound, seconds=0.0, compile_seconds=0.0, n_evals=0,
                                    who=f"{side.name} AIS, image {i}", settings=settings)
                 for i, r in enumerate(runs)]
    values = np.array([e.value for e in per_image])
    n = values.size
    finite = np.all(np.isfinite(values))
    stderr = float(np.std(values, ddof=1) / math.sqrt(n)) if n > 1 and finite else float("nan")
    return ImageEstimates(
        log_weights=runs, per_image=values, per_image_stderr=np.array([e.stderr for e in per_image]),
        mean=float(np.mean(values)), stderr=stderr, bound=side.bound, combine=per_image[0].combine,
        latents=latents, acceptance=np.mean(run.info.acceptance, axis=0), step_size=step_size,
        **runner.costs(run, pilot), compiled=run.compiled, settings=settings, seed=seed_of(key), rate_distortion=curve)


_ENCODE = CompiledCache("generative encoder", maxsize=16)


def _encode(encoder, enc_params, images, latent_dim):
    """The encoder's ``(mean, log_std)`` for every image, checked to be (n, k) and finite."""
    fn, _ = _ENCODE.get_or_build(encoder, lambda: jax.jit(jax.vmap(encoder, (None, 0))))
    try:
        mean, log_std = fn(enc_params, images)
    except (TypeError, ValueError) as err:
        raise BDMCError(f"encoder(params, x) must return (mean, log_std) of shape ({latent_dim},): {err}") from err
    for name, value in (("mean", mean), ("log_std", log_std)):
        if tuple(value.shape) != (images.shape[0], latent_dim):
            raise BDMCError(f"encoder {name} has shape {tuple(value.shape[1:])} per image, the latent has "
                            f"({latent_dim},)")
        if not bool(jnp.all(jnp.isfinite(value))):
            raise BDMCError(f"the encoder's {name} is NaN or infinite for image "
                            f"{int(np.argmax(~np.all(np.isfinite(np.asarray(value)), axis=1)))}")
    return mean.astype(images.dtype), log_std.astype(images.dtype)


def _check_images(images) -> jax.Array:
    arr = np.asarray(images)
    if arr.ndim != 2:
        raise DataError(f"images must have shape (n_images, D), one row per image, got {arr.shape}; each image "
                        "gets its own weights (a joint weight over a batch of images is a looser bound)")
    if arr.shape[0] < 1:
        raise DataError("images is empty")
    if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0] if np.issubdtype(arr.dtype, np.number) else None
        raise DataError(f"images must be finite numbers; the first bad value is at {tuple(bad)}" if bad is not None
                        else f"images have non-numeric dtype {arr.dtype}")
    return jnp.asarray(arr, jnp.result_type(float)) if np.issubdtype(arr.dtype, np.integer) else jnp.asarray(arr)


def _check_latents(latents, n, k, dtype):
    if latents is None:
        raise BDMCError("reverse AIS starts from the exact z of each image: pass latents of shape (n_images, k)")
    z = jnp.asarray(latents, dtype)
    if z.shape != (n, k):
        raise DataError(f"latents must have shape (n_images, latent_dim) = ({n}, {k}), got {tuple(z.shape)}")
    if not bool(jnp.all(jnp.isfinite(z))):
        raise DataError("latents contain NaN or inf")
    return z

