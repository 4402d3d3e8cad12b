"""A Gaussian mixture fitted to posterior draws on the latent space: the proposal family of the proposal stage.

One Gaussian is a poor proposal for a funnel or a skewed posterior (a hierarchical scale, a Poisson GP): the
importance weights' relative variance runs into the tens and the certified bounds widen by nats. A mixture of a
few full-covariance Gaussians (scikit-learn's EM, on standardized draws) follows such shapes; the forward runs draw
from the same mixture with Student-t components (heavier tails, so the weights keep a finite variance), the reverse
runs evaluate it with each component's covariance scaled down (lighter tails, so ``q / p`` stays bounded).
Drawing and evaluating it is host-side NumPy: the mixture's size and each component's share vary, which would
recompile a JAX program per shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import numpy as np
from scipy import special

from ..errors import OptionError

COMPONENTS = (1, 4, 16)  # the mixtures tried, largest first ruled out by the draws they would be fitted on
DRAWS_PER_PARAMETER = 2  # fitted draws needed per free parameter of a mixture
REG_COVAR = 1e-6  # on the standardized draws: relative to each coordinate's variance


@dataclass(frozen=True)
class Mixture:
    """Weights, means and Cholesky factors of the covariances of a Gaussian mixture on the flat latent space."""

    log_weights: np.ndarray  # (K,)
    means: np.ndarray  # (K, d)
    chols: np.ndarray  # (K, d, d), lower

    @property
    def num_components(self) -> int:
        return int(self.means.shape[0])

    def log_pdf(self, x, *, scale: float = 1.0, nu: float | None = None) -> np.ndarray:
        """``log q(x)`` (rows of ``x``) of the mixture with every covariance times ``scale``; Student-t components
        with ``nu`` degrees of freedom (their covariance the same) when given, else Gaussian."""
        x = np.asarray(x, np.float64)
        parts = [self.log_weights[k] + _component_log_pdf(x, self.means[k], self.chols[k], scale, nu)
                 for k in range(self.num_components)]
        return special.logsumexp(np.stack(parts, axis=1), axis=1)

    def sample(self, key, count: int, *, scale: float = 1.0, nu: float | None = None) -> np.ndarray:
        """``count`` independent draws (rows) of the mixture (as in :meth:`log_pdf`), in random order."""
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())
        count, dim = int(count), self.means.shape[1]
        comps = rng.choice(self.num_components, size=count, p=np.exp(self.log_weights - special.logsumexp(
            self.log_weights)))
        z = rng.standard_normal((count, dim))
        g = np.ones(count) if nu is None else rng.gamma(nu / 2.0, 2.0 / nu, count)
        out = np.empty((count, dim))
        for k in range(self.num_components):  # one component at a time: memory count x d, not count x d x d
            rows = comps == k
            factor = self.chols[k] * math.sqrt(scale * _t_variance_correction(nu))
            out[rows] = self.means[k] + (z[rows] @ factor.T) / np.sqrt(g[rows])[:, None]
        return out


def candidate_components(num_draws: int, dim: int) -> tuple[int, ...]:
    """The mixture sizes :data:`COMPONENTS` that ``num_draws`` fitted draws can support in ``dim`` dimensions."""
    per_component = dim + dim * (dim + 1) // 2 + 1
    return tuple(k for k in COMPONENTS if k == 1 or k * per_component * DRAWS_PER_PARAMETER <= num_draws)


def fit_mixture(draws: np.ndarray, components: int, *, seed: int = 0) -> Mixture:
    """A ``components``-Gaussian mixture fitted to ``draws`` (rows) by EM, on draws standardized per coordinate.

    Raises
    ------
    bdmc.errors.OptionError
        Fewer than two draws, or fewer draws than components.
    """
    from sklearn.mixture import GaussianMixture

    draws = np.asarray(draws, np.float64)
    if draws.ndim != 2 or draws.shape[0] < max(2, components):
        raise OptionError(f"{draws.shape[0]} draws cannot fit a mixture of {components} Gaussians")
    center, spread = draws.mean(axis=0), draws.std(axis=0)
    spread = np.where(spread > 0, spread, 1.0)
    if components == 1:  # the sample mean and covariance: no EM needed
        cov = np.atleast_2d(np.cov((draws - center) / spread, rowvar=False)) + REG_COVAR * np.eye(draws.shape[1])
        means, covs, weights = np.zeros((1, draws.shape[1])), cov[None], np.ones(1)
    else:
        gm = GaussianMixture(components, covariance_type="full", reg_covar=REG_COVAR, random_state=seed,
                             n_init=1, max_iter=200, init_params="k-means++").fit((draws - center) / spread)
        means, covs, weights = gm.means_, gm.covariances_, gm.weights_
    chols = np.stack([np.linalg.cholesky(c) for c in covs]) * spread[None, :, None]
    return Mixture(log_weights=np.log(weights), means=center + means * spread, chols=chols)


def _t_variance_correction(nu):
    """The factor that gives a Student-t the covariance of its scale matrix: ``(nu - 2) / nu`` (1 for a Gaussian)."""
    return 1.0 if nu is None else (nu - 2.0) / nu


def _component_log_pdf(x, mean, chol, scale, nu):
    dim = mean.shape[0]
    factor = chol * math.sqrt(scale * _t_variance_correction(nu))
    white = (x - mean) @ np.linalg.inv(factor).T  # one small inverse of a triangular factor, one matmul
    quad = np.sum(white**2, axis=1)
    log_det = float(np.sum(np.log(np.diag(factor))))
    if nu is None:
        return -0.5 * quad - log_det - 0.5 * dim * math.log(2 * math.pi)
    return (special.gammaln((nu + dim) / 2) - special.gammaln(nu / 2) - 0.5 * dim * math.log(nu * math.pi) - log_det
            - 0.5 * (nu + dim) * np.log1p(quad / nu))
