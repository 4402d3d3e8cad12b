"""Choosing the observation noise sigma on validation images by AIS (the paper's protocol, never by KDE)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import BDMCError
from .ais import ImageEstimates, ais_log_likelihood
from .model import positive_sigma


@dataclass(frozen=True)
class SigmaSweep:
    """AIS on validation images for each sigma of a grid.

    ``best`` maximizes the mean per-image lower bound; ``means`` and ``stderrs`` are, per sigma, the mean over
    images and its standard error across images; ``results`` the full :class:`ImageEstimates`.
    """

    best: float
    sigmas: np.ndarray
    means: np.ndarray
    stderrs: np.ndarray
    results: tuple = field(repr=False)


def tune_sigma(key, decoder, params, valid_images, *, sigmas, latent_dim: int, num_steps: int = 1000,
               num_runs: int = 16, **options) -> SigmaSweep:
    """Evaluate AIS on ``valid_images`` at every sigma of ``sigmas`` and return the best and the whole sweep.

    Sigma is an argument of the compiled run, so the sweep compiles once. Every sigma uses the same ``key``
    (common random numbers: the comparison between sigmas is less noisy than each value) and its own pilot
    table (the step sizes a posterior needs depend on sigma). ``options`` go to
    :func:`~bdmc.generative.ais_log_likelihood`.
    """
    grid = np.array([positive_sigma(s) for s in np.atleast_1d(np.asarray(sigmas, np.float64))])
    if grid.size < 1:
        raise BDMCError("tune_sigma needs at least one sigma")
    results: list[ImageEstimates] = [
        ais_log_likelihood(key, decoder, params, valid_images, sigma=float(s), latent_dim=latent_dim,
                           num_steps=num_steps, num_runs=num_runs, **options) for s in grid]
    means = np.array([r.mean for r in results])
    return SigmaSweep(best=float(grid[int(np.argmax(means))]), sigmas=grid, means=means,
                      stderrs=np.array([r.stderr for r in results]), results=tuple(results))
