"""Rate-distortion curves of a decoder from one forward AIS run (Huang et al. 2020).

Each intermediate distribution of the AIS path ``q_beta(z | x) = p(z) p(x | z)^beta / Z_beta(x)`` is the optimal
channel of the rate-distortion problem with distortion ``d(x, z) = -log p(x | z)`` at Lagrange multiplier
``beta``: its distortion ``D_beta(x) = E_q[d]`` and rate ``R_beta(x) = KL(q_beta || p(z)) = -beta D_beta(x) -
log Z_beta(x)`` are a point of the curve. One AIS chain visits every beta, so one run gives the whole curve:

- ``log Z_beta`` from the chains' partial log-weights up to beta (log-mean-exp over chains: a stochastic lower
  bound, so the rate comes out high: the curve estimated lies above the true one in expectation);
- ``D_beta`` from the chains' states at beta, weighted by their partial weights (self-normalized).

The AIS engine weights a chain at its current state and then moves it: the increment from ``beta_i`` to
``beta_{i+1}`` is ``(beta_{i+1} - beta_i) log p(x | z_i)`` at the state ``z_i`` the chain holds at ``beta_i``, so
the recorded increments carry both the partial weights and the distortions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import logsumexp, softmax

from ..errors import BDMCError

LOG_2PI = float(np.log(2.0 * np.pi))
POINTS = 200  # betas kept on the curve (log-spaced over the path's indices)


@dataclass(frozen=True)
class RateDistortion:
    """A rate-distortion curve, averaged over images, with each image's curve.

    Attributes
    ----------
    beta : ndarray (P,)
        The intermediate distributions' inverse temperatures, increasing from 0.
    rate, distortion : ndarray (P,)
        Mean over images of ``R_beta(x)`` and ``D_beta(x)`` in nats.
    mse : ndarray (P,)
        The distortion as mean squared error per pixel (``d`` without its Gaussian normalizer, times
        ``2 sigma^2 / D``).
    per_image_rate, per_image_distortion : ndarray (n_images, P)
    sigma : float
    num_pixels : int
    """

    beta: np.ndarray
    rate: np.ndarray
    distortion: np.ndarray
    mse: np.ndarray
    per_image_rate: np.ndarray
    per_image_distortion: np.ndarray
    sigma: float
    num_pixels: int

    def to_frame(self) -> pd.DataFrame:
        """One row per beta: ``beta``, ``rate``, ``distortion``, ``mse``."""
        return pd.DataFrame({"beta": self.beta, "rate": self.rate, "distortion": self.distortion, "mse": self.mse})


def rate_distortion(path, increments, *, sigma: float, num_pixels: int, points: int = POINTS) -> RateDistortion:
    """The curve from a forward AIS run's recorded increments (``anneal(..., record_increments=True)``).

    Parameters
    ----------
    path : array (T,)
        The betas visited, from 0 increasing to 1.
    increments : array (n_images, T - 1, chains)
        Every chain's log-weight increment at every step.
    sigma : float
        The decoder's observation noise (for the squared-error scale).
    num_pixels : int
        D, the image's dimension.
    points : int
        Betas kept (log-spaced indices over the path, the first and the last included).

    Returns
    -------
    RateDistortion
    """
    betas = np.asarray(path, np.float64)
    inc = np.asarray(increments, np.float64)
    if inc.ndim != 3 or inc.shape[1] != betas.size - 1:
        raise BDMCError(f"increments must be (images, T - 1, chains) for a path of {betas.size} betas, got "
                        f"{inc.shape}")
    steps = np.diff(betas)
    if betas[0] != 0.0 or np.any(steps <= 0):
        raise BDMCError("a rate-distortion curve needs a forward path increasing from beta = 0 (the prior)")
    # Partial log-weights before each increment (log Z_beta's runs) and the distortion at each state.
    partial = np.concatenate([np.zeros_like(inc[:, :1]), np.cumsum(inc, axis=1)[:, :-1]], axis=1)
    distortion_runs = -inc / steps[None, :, None]
    kept = np.unique(np.r_[0, np.geomspace(1, betas.size - 2, num=max(2, points) - 1).astype(int)])
    partial, distortion_runs, beta = partial[:, kept], distortion_runs[:, kept], betas[kept]
    log_z = logsumexp(partial, axis=2) - np.log(partial.shape[2])
    distortion = np.sum(softmax(partial, axis=2) * distortion_runs, axis=2)
    rate = -beta[None, :] * distortion - log_z  # at beta = 0 exactly 0; noise may take a small one below 0
    mean_d = distortion.mean(axis=0)
    mse = (mean_d - 0.5 * num_pixels * (LOG_2PI + 2.0 * np.log(sigma))) * 2.0 * sigma**2 / num_pixels
    return RateDistortion(beta=beta, rate=rate.mean(axis=0), distortion=mean_d, mse=mse, per_image_rate=rate,
                          per_image_distortion=distortion, sigma=float(sigma), num_pixels=int(num_pixels))


def linear_gaussian_rate_distortion(params, image, *, sigma: float, betas) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``(rate, distortion)`` of pPCA at each beta: ``q_beta = N(mu, S)`` with ``S = (I + beta W^T W /
    sigma^2)^-1``, ``mu = S beta W^T (x - b) / sigma^2`` (float64 NumPy; the closed form the curve is tested on)."""
    w, b = np.asarray(params["weight"], np.float64), np.asarray(params["bias"], np.float64)
    x = np.asarray(image, np.float64) - b
    s2, k, dim = float(sigma) ** 2, w.shape[1], b.size
    rates, distortions = [], []
    for beta in np.asarray(betas, np.float64):
        cov = np.linalg.inv(np.eye(k) + beta * w.T @ w / s2)
        mu = cov @ w.T @ x * beta / s2
        resid = x - w @ mu
        distortions.append((resid @ resid + np.trace(w @ cov @ w.T)) / (2 * s2) + 0.5 * dim * (LOG_2PI + np.log(s2)))
        rates.append(0.5 * (np.trace(cov) + mu @ mu - k - np.linalg.slogdet(cov)[1]))
    return np.array(rates), np.array(distortions)
