"""BDMC for decoder models: forward and reverse AIS on images simulated from the decoder, their gap and the
bug alarm (Wu et al. 2017, Sec. 5; Grosse et al. 2015).

Images simulated from the model come with the z that generated them, an exact posterior sample, so
reverse AIS gives an upper bound beside forward AIS's lower bound on every image's ``log p(x)``; the gap
bounds both estimates' error on such images. The alarm is the project's certified one
(:func:`bdmc.checks.alarm.bug_alarm`), applied to each image with level ``alpha / num_images`` (Bonferroni),
so the probability that it fires anywhere on a correct model is at most ``alpha``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import jax
import numpy as np

from ..checks.alarm import ALPHA, BugAlarm, bug_alarm
from .ais import ImageEstimates, ais_log_likelihood, reverse_ais_log_likelihood
from .model import simulate_images


@dataclass(frozen=True)
class GapResult:
    """Forward and reverse AIS on simulated images.

    Attributes
    ----------
    forward, reverse : ImageEstimates
    images, latents : ndarray
        The simulated images (n, D) and the z that generated them (n, k).
    gap : ndarray (n,)
        Reverse minus forward estimate per image (nats).
    mean_gap, stderr_gap : float
        Their mean over images and its standard error.
    alarms : tuple of BugAlarm
        Each image's alarm at level ``alpha / n``.
    alpha : float
    """

    forward: ImageEstimates
    reverse: ImageEstimates
    images: np.ndarray = field(repr=False)
    latents: np.ndarray = field(repr=False)
    gap: np.ndarray
    mean_gap: float
    stderr_gap: float
    alarms: tuple = field(repr=False)
    alpha: float = ALPHA

    @property
    def fired(self) -> bool:
        """The alarm fired on some image (probability at most ``alpha`` when everything is correct)."""
        return any(a.fired for a in self.alarms)

    @property
    def worst_image(self) -> int:
        """The image whose bounds cross the most (the one to look at when the alarm fires)."""
        return int(np.argmax([a.crossing for a in self.alarms]))

    def message(self) -> str:
        a: BugAlarm = self.alarms[self.worst_image]
        return f"image {self.worst_image} of {len(self.alarms)}: " + a.message()


def bdmc_gap(key, decoder, params, *, sigma, latent_dim: int, num_images: int = 8, num_steps: int = 1000,
             num_runs: int = 16, alpha: float = ALPHA, **options) -> GapResult:
    """Simulate ``num_images`` images from the decoder, bound each ``log p(x)`` from both sides.

    Parameters
    ----------
    key : PRNG key
        Split three ways: simulation, forward run (and its pilot), reverse run; the two runs are independent.
    decoder, params, sigma, latent_dim
        The model (see :func:`~bdmc.generative.ais_log_likelihood`).
    num_images, num_steps, num_runs : int
    alpha : float
        Level of the alarm over all images together.
    **options
        Passed to both runs (``leapfrog_steps``, ``schedule``, ``tune``, ``target_acceptance``, ...). The
        reverse run reuses the forward run's frozen step-size table.
    """
    key_sim, key_fwd, key_rev = jax.random.split(key, 3)
    images, latents = simulate_images(key_sim, decoder, params, sigma=sigma, latent_dim=latent_dim,
                                      num_images=num_images)
    common = dict(sigma=sigma, latent_dim=latent_dim, num_steps=num_steps, num_runs=num_runs)
    forward = ais_log_likelihood(key_fwd, decoder, params, images, **common, **options)
    options = dict(options) | {"tune": forward.step_size} if options.get("tune", "pilot") != "off" else options
    reverse = reverse_ais_log_likelihood(key_rev, decoder, params, images, latents, **common, **options)
    gap = reverse.per_image - forward.per_image
    n = gap.size
    alarms = tuple(bug_alarm(forward.estimate(i), reverse.estimate(i), alpha=alpha / n) for i in range(n))
    return GapResult(forward=forward, reverse=reverse, images=np.asarray(images), latents=np.asarray(latents),
                     gap=gap, mean_gap=float(np.mean(gap)),
                     stderr_gap=float(np.std(gap, ddof=1) / math.sqrt(n)) if n > 1 else float("nan"),
                     alarms=alarms, alpha=float(alpha))
