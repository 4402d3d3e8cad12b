"""Gaussian mean with a full, strongly anisotropic prior covariance: exact log-ML and an exact Gibbs kernel.

The prior covariance ``S = V diag(e) V^T`` has eigenvalues spread geometrically over ``condition`` (largest to
smallest) and a fixed random rotation ``V``. The prior sampler draws through that eigendecomposition,
``x = m + V (sqrt(e) * eps)``: a sampler that used ``V^T`` in place of ``V`` draws from ``V^T diag(e) V``
instead, a covariance with the same eigenvalues (so every trace-level moment agrees) but the wrong
orientation. That is the multivariate-Gaussian sampler bug BREAD found in WebPPL (paper Sec. 5.2.2), and this
model is where ``benchmarks/check_power.py`` reproduces it.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..caching import cached
from ..contracts.model import check_array_shape
from ..errors import BDMCError
from ..kernels import Conditional
from ..kernels.conditional import CopyBlock
from .gaussian_cases import LOG_2PI, GaussianCases


@cached(maxsize=64)
def _rotation(dim: int, seed: int, angle: float | None) -> np.ndarray:
    """The eigenvector matrix V.

    With ``angle``: a rotation by ``angle`` in each plane spanned by coordinate axes k and dim-1-k, which carry
    the k-th largest and k-th smallest eigenvalue. At 45 degrees ``V^T diag(e) V`` puts each large eigenvalue
    where ``V diag(e) V^T`` puts the small one: the largest difference a transposed V can make. Without it: a
    Haar-random orthogonal matrix fixed by ``seed`` (QR of a Gaussian matrix with the signs of R fixed).
    """
    if angle is not None:
        q = np.eye(dim)
        c, s = np.cos(angle), np.sin(angle)
        for k in range(dim // 2):
            j = dim - 1 - k
            q[k, k], q[k, j], q[j, k], q[j, j] = c, -s, s, c
    else:
        q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))
        q = q * np.where(np.diag(r) < 0, -1.0, 1.0)
    q.setflags(write=False)
    return q


@dataclass(frozen=True)
class CorrelatedGaussianMean(GaussianCases):
    """``x ~ N(prior_mean 1, S)`` with ``S = V diag(e) V^T``; ``y_i ~ N(x, noise_std^2 I_dim)`` for i = 1..n.

    Latent ``{"x": (dim,)}``; data ``(n, dim)``.

    Attributes
    ----------
    n, dim : int
        Data cases and dimension.
    prior_mean : float
        Every coordinate's prior mean.
    prior_std : float
        Square root of the largest prior eigenvalue.
    condition : float
        Largest over smallest prior eigenvalue; the eigenvalues are
        ``prior_std^2 * condition^(-k / (dim - 1))``, k = 0..dim-1 (geometric spacing).
    noise_std : float
        Observation noise standard deviation.
    rotation_seed : int
        Seeds the rotation ``V`` (a Haar-random orthogonal matrix) when ``rotation_angle`` is None.
    rotation_angle : float or None
        If given, ``V`` rotates by this angle (radians) in each plane pairing the k-th largest with the k-th
        smallest eigen-axis; ``pi / 4`` makes the transposed-eigenvector bug as large as it can be.
    """

    n: int = 10
    dim: int = 4
    prior_mean: float = 0.0
    prior_std: float = 3.0
    condition: float = 100.0
    noise_std: float = 1.0
    rotation_seed: int = 0
    rotation_angle: float | None = None

    mean_site = "x"  # a class attribute, not a field: the latent site GaussianCases draws the data about

    def __post_init__(self):
        if self.n < 1 or self.dim < 1:
            raise BDMCError(f"CorrelatedGaussianMean needs n >= 1 and dim >= 1, got n={self.n}, dim={self.dim}")
        if not (self.prior_std > 0 and self.noise_std > 0 and self.condition >= 1):
            raise BDMCError("CorrelatedGaussianMean needs prior_std > 0, noise_std > 0 and condition >= 1, got "
                            f"{self.prior_std}, {self.noise_std}, {self.condition}")

    # ------------------------------------------------------------------------------- the prior covariance

    @property
    def eigenvalues(self) -> np.ndarray:
        """The prior covariance's eigenvalues ``e``, largest first."""
        k = np.arange(self.dim) / max(self.dim - 1, 1)
        return self.prior_std**2 * float(self.condition) ** (-k)

    @property
    def eigenvectors(self) -> np.ndarray:
        """The rotation ``V``: column k is the eigenvector of eigenvalue ``e[k]``."""
        return _rotation(self.dim, self.rotation_seed,
                         None if self.rotation_angle is None else float(self.rotation_angle))

    @property
    def prior_cov(self) -> np.ndarray:
        """``S = V diag(e) V^T``."""
        V = self.eigenvectors
        return (V * self.eigenvalues) @ V.T

    # ---------------------------------------------------------------------------------------- contract

    def sample_prior(self, key):
        """``x = m + V (sqrt(e) * eps)``, ``eps ~ N(0, I)``."""
        eps = jax.random.normal(key, (self.dim,))
        return {"x": self.prior_mean + jnp.asarray(self.eigenvectors) @ (jnp.sqrt(jnp.asarray(self.eigenvalues)) * eps)}

    def log_prior(self, latent):
        z = jnp.asarray(self.eigenvectors).T @ (latent["x"] - self.prior_mean)  # coordinates in the eigenbasis
        e = jnp.asarray(self.eigenvalues)
        return jnp.sum(-0.5 * z**2 / e - 0.5 * jnp.log(e) - 0.5 * LOG_2PI)

    def check_data(self, data):
        check_array_shape("CorrelatedGaussianMean data", data, (self.n, self.dim))

    def exact_log_marginal(self, data):
        """Closed-form log p(y).

        With ``ybar`` the case mean and ``SS = sum_i |y_i - ybar|^2``, the likelihood factors into
        ``N(ybar; x, noise^2 / n I)`` times a term free of x, so

            log p(y) = log N(ybar; m, S + noise^2 / n I) - SS / (2 noise^2)
                       - (n - 1) dim / 2 log(2 pi noise^2) - dim / 2 log n.

        ``S + noise^2 / n I`` shares the eigenvectors of S, so its log-determinant and quadratic form are
        sums over the eigenbasis.
        """
        y = jnp.asarray(data)
        v = self.noise_std**2
        ybar = jnp.mean(y, axis=0)
        ss = jnp.sum((y - ybar) ** 2)
        c = jnp.asarray(self.eigenvalues) + v / self.n
        z = jnp.asarray(self.eigenvectors).T @ (ybar - self.prior_mean)
        log_mean_term = jnp.sum(-0.5 * z**2 / c - 0.5 * jnp.log(c) - 0.5 * LOG_2PI)
        return (log_mean_term - 0.5 * ss / v - 0.5 * (self.n - 1) * self.dim * (LOG_2PI + jnp.log(v))
                - 0.5 * self.dim * jnp.log(self.n))

    # ------------------------------------------------------------------------------------ the Gibbs kernel

    def _x_conditional(self, data, lam):
        """Mean and eigenbasis precisions of x under f(.; lam): ``S^-1 + (sum lam) / noise^2 I`` shares V."""
        lam = jnp.broadcast_to(jnp.asarray(lam, jnp.result_type(float)), (self.n,))
        v = self.noise_std**2
        V = jnp.asarray(self.eigenvectors)
        precision = 1.0 / jnp.asarray(self.eigenvalues) + jnp.sum(lam) / v  # eigenvalues of the precision
        # S^-1 m + sum_i lam_i y_i / v in eigenbasis coordinates; a switched-off case adds nothing.
        weighted = jnp.where(lam[:, None] == 0, 0.0, lam[:, None] * data).sum(axis=0)
        rhs = (V.T @ jnp.full(self.dim, self.prior_mean)) / jnp.asarray(self.eigenvalues) + V.T @ weighted / v
        mean = V @ (rhs / precision)
        return mean, precision

    def gibbs_update(self, key, latent, data, lam):
        """Exact draw of x from f(x; lam) (prior times tempered likelihood): one block, through the eigenbasis."""
        mean, precision = self._x_conditional(data, lam)
        eps = jax.random.normal(key, (self.dim,))
        return {"x": mean + jnp.asarray(self.eigenvectors) @ (eps / jnp.sqrt(precision))}

    def _log_prob_x(self, latent, data, lam):
        mean, precision = self._x_conditional(data, lam)
        z = jnp.asarray(self.eigenvectors).T @ (latent["x"] - mean)
        return jnp.sum(-0.5 * precision * z**2 + 0.5 * jnp.log(precision) - 0.5 * LOG_2PI)

    def conditionals(self):
        """The single Gibbs block: x given the data, under f(.; lam)."""
        return (Conditional("x", self.gibbs_update, self._log_prob_x, CopyBlock(("x",))),)
