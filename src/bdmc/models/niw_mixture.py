"""Gaussian mixture with normal-inverse-Wishart components, everything but the labels integrated out.

``pi ~ Dir(alpha 1_k)`` (``alpha = 1/k`` by default), ``Sigma_j ~ IW(df, scale)``, ``mu_j | Sigma_j ~ N(0, Sigma_j /
tau)``, ``z_i ~ Mn(1, pi)``, ``x_i | z_i = j ~ N(mu_j, Sigma_j)`` (Ji, Shen & West, Sec. 4.2). The latent state
is ``{"z": int32 (n,)}``: ``pi`` gives a Dirichlet-multinomial prior on z, and per cluster the NIW integral of
the tempered likelihood ``prod_{i in j} N(x_i; mu, Sigma)^{lam_i}`` has the closed form of the ordinary NIW
marginal with the lam-weighted statistics ``W = sum lam_i``, ``S = sum lam_i x_i``, ``Q = sum lam_i x_i x_i^T``:

``log INT = -W p/2 log pi + p/2 log(tau / (tau + W)) + df/2 log|scale| - (df + W)/2 log|scale + Q - S S^T/(tau + W)|
+ log Gamma_p((df + W)/2) - log Gamma_p(df/2)``,

which is exactly 0 at ``W = 0`` (the density is normalized at lam = 0). The kernel is the collapsed Gibbs
sweep over ``z_1..z_n`` (:class:`~bdmc.models.clustering.CollapsedGibbs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln, multigammaln

from ..contracts.model import check_array_shape
from ..errors import BDMCError
from .clustering import CollapsedGibbs


def _chol_logdet(m):
    """``log|m|`` of a batch of small SPD matrices by an unrolled Cholesky (no LAPACK custom calls)."""
    d = m.shape[-1]
    L = [[None] * d for _ in range(d)]
    total = jnp.zeros(m.shape[:-2], m.dtype)
    for j in range(d):
        diag = m[..., j, j] - sum((L[j][q] ** 2 for q in range(j)), jnp.zeros_like(m[..., 0, 0]))
        L[j][j] = jnp.sqrt(diag)
        total = total + jnp.log(diag)
        for i in range(j + 1, d):
            off = m[..., i, j] - sum((L[i][q] * L[j][q] for q in range(j)), jnp.zeros_like(m[..., 0, 0]))
            L[i][j] = off / L[j][j]
    return total


@dataclass(frozen=True)
class NIWMixture:
    """Collapsed normal-inverse-Wishart Gaussian mixture (latent: the labels only).

    Parameters
    ----------
    n, dim, k : int
        Data points, dimension p and components.
    tau : float
        Prior precision multiplier of the means: ``mu_j | Sigma_j ~ N(0, Sigma_j / tau)``.
    df : float
        Inverse-Wishart degrees of freedom (> dim - 1).
    scale : float
        The inverse-Wishart scale matrix is ``scale * I``.
    alpha : float, optional
        Dirichlet concentration per component; ``1/k`` when omitted.
    """

    n: int = 200
    dim: int = 2
    k: int = 3
    tau: float = 0.1
    df: float = 4.0
    scale: float = 1.0
    alpha: float | None = None

    def __post_init__(self):
        if self.df <= self.dim - 1:
            raise BDMCError(f"NIWMixture needs df > dim - 1, got df={self.df}, dim={self.dim}")
        if self.tau <= 0 or self.scale <= 0:
            raise BDMCError(f"NIWMixture needs tau > 0 and scale > 0, got tau={self.tau}, scale={self.scale}")

    @property
    def concentration(self) -> float:
        return 1.0 / self.k if self.alpha is None else float(self.alpha)

    # ----- the generative model -------------------------------------------------------------------------

    def sample_prior(self, key):
        """pi from its Dirichlet, then z given pi: an exact draw of the Dirichlet-multinomial labels."""
        k_pi, k_z = jax.random.split(key)
        dtype = jnp.result_type(float)
        pi = jax.random.dirichlet(k_pi, jnp.full(self.k, self.concentration, dtype))
        z = jax.random.categorical(k_z, jnp.log(pi), shape=(self.n,))
        return {"z": z.astype(jnp.int32)}

    def sample_components(self, key):
        """``(mu, Sigma)`` of all k components from their NIW prior, shapes ``(k, dim)`` and ``(k, dim, dim)``."""
        k_w, k_mu = jax.random.split(key)
        p = self.dim
        # Sigma^-1 ~ Wishart(df, scale^-1 I) by summing df outer products when df is an integer, else Bartlett.
        chi2 = 2.0 * jax.random.gamma(k_w, (self.df - jnp.arange(p)) / 2.0, shape=(self.k, p))
        normals = jax.random.normal(jax.random.fold_in(k_w, 1), (self.k, p, p))
        A = jnp.tril(normals, -1) + jax.vmap(jnp.diag)(jnp.sqrt(chi2))
        prec = (A @ jnp.swapaxes(A, -1, -2)) / self.scale
        Sigma = jnp.linalg.inv(prec)
        Sigma = 0.5 * (Sigma + jnp.swapaxes(Sigma, -1, -2))
        chol = jnp.linalg.cholesky(Sigma / self.tau)
        mu = jnp.einsum("kab,kb->ka", chol, jax.random.normal(k_mu, (self.k, p)))
        return mu, Sigma

    def sample_data(self, key, latent):
        """Component parameters from their prior, then ``x_i ~ N(mu_{z_i}, Sigma_{z_i})``; shape ``(n, dim)``."""
        k_c, k_x = jax.random.split(key)
        mu, Sigma = self.sample_components(k_c)
        z = latent["z"]
        eps = jax.random.normal(k_x, (self.n, self.dim))
        return mu[z] + jnp.einsum("nab,nb->na", jnp.linalg.cholesky(Sigma)[z], eps)

    def log_prior(self, latent):
        """Dirichlet-multinomial log mass of z."""
        counts = jnp.sum(jax.nn.one_hot(latent["z"], self.k, dtype=jnp.result_type(float)), axis=0)
        a = self.concentration
        return gammaln(self.k * a) - gammaln(self.n + self.k * a) + jnp.sum(gammaln(counts + a) - gammaln(a))

    def cluster_term(self, W, S, Q):
        """Log NIW integral of each cluster's tempered likelihood (module docstring).

        ``W``, ``S``, ``Q`` have shapes (...), (..., p) and (..., p, p).
        """
        p = self.dim
        kap = self.tau + W
        post = self.scale * jnp.eye(p) + Q - jnp.einsum("...a,...b->...ab", S, S) / kap[..., None, None]
        nu = self.df + W
        return (-0.5 * W * p * jnp.log(jnp.pi) + 0.5 * p * (jnp.log(self.tau) - jnp.log(kap))
                + 0.5 * self.df * p * jnp.log(self.scale) - 0.5 * nu * _chol_logdet(post)
                + multigammaln(0.5 * nu, p) - multigammaln(0.5 * self.df, p))

    def stats(self, z, data, lam):
        """Per-cluster ``(C, W, S, Q)``: counts and lam-weighted number, sum and second moment of the rows."""
        onehot = jax.nn.one_hot(z, self.k, dtype=data.dtype)
        members = onehot * lam[:, None]
        return (onehot.sum(0), members.sum(0), members.T @ data,
                jnp.einsum("nj,na,nb->jab", members, data, data))

    def log_likelihood(self, latent, data):
        """Chain-rule terms ``log p(x_i | x_<i, z)``, shape (n,); they sum to the collapsed ``log p(x | z)``."""
        z = latent["z"]
        n = z.shape[0]
        same = ((z[:, None] == z[None, :]) & jnp.tril(jnp.ones((n, n), bool))).astype(data.dtype)  # j <= i
        W, S = same.sum(1), same @ data
        Q = jnp.einsum("ij,ja,jb->iab", same, data, data)
        xx = jnp.einsum("ia,ib->iab", data, data)
        return self.cluster_term(W, S, Q) - self.cluster_term(W - 1.0, S - data, Q - xx)

    def log_density(self, latent, data, lam):
        """``log p(z) + sum_j log INT NIW(mu_j, Sigma_j) prod_{i in j} N(x_i; mu_j, Sigma_j)^{lam_i}``."""
        _, W, S, Q = self.stats(latent["z"], data, self._lam(lam, data.dtype))
        return self.log_prior(latent) + jnp.sum(self.cluster_term(W, S, Q))

    def check_data(self, data):
        """Raise a DataError unless the data has shape (n, dim)."""
        check_array_shape("NIWMixture data", data, (self.n, self.dim))

    # ----- kernel ---------------------------------------------------------------------------------------

    def default_kernel(self):
        """The collapsed Gibbs sweep over z_1..z_n."""
        return CollapsedGibbs(self)

    def sweep(self, key, latent, data, lam):
        """Resample ``z_1, ..., z_n`` in turn from their collapsed conditionals under the weights ``lam``.

        Site i: remove row i from its cluster's statistics, score every cluster by
        ``log(C_j + alpha) + term(stats_j + row) - term(stats_j)`` (the gain is exactly 0 when lam_i = 0), draw
        by Gumbel-max, add the row back. One ``lax.scan`` over sites; O(n k p^3) per sweep.
        """
        lam = self._lam(lam, data.dtype)
        xx = jnp.einsum("ia,ib->iab", data, data)
        a = self.concentration

        def shift(stats, hot, sign, l, x, q):
            C, W, S, Q = stats
            return (C + sign * hot, W + sign * l * hot, S + (sign * l * hot)[:, None] * x,
                    Q + (sign * l * hot)[:, None, None] * q)

        def site(stats, xs):
            old, x, q, l, g = xs
            stats = shift(stats, jax.nn.one_hot(old, self.k, dtype=x.dtype), -1.0, l, x, q)
            C, W, S, Q = stats
            gain = self.cluster_term(W + l, S + l * x, Q + l * q) - self.cluster_term(W, S, Q)
            logits = jnp.log(C + a) + jnp.where(l == 0, 0.0, gain)
            new = jnp.argmax(logits + g).astype(jnp.int32)
            return shift(stats, jax.nn.one_hot(new, self.k, dtype=x.dtype), 1.0, l, x, q), new

        gumbel = jax.random.gumbel(key, (self.n, self.k), data.dtype)
        z = jax.lax.scan(site, self.stats(latent["z"], data, lam), (latent["z"], data, xx, lam, gumbel))[1]
        return {**latent, "z": z}

    def _lam(self, lam, dtype=None):
        dtype = jnp.result_type(float) if dtype is None else dtype
        return jnp.broadcast_to(jnp.asarray(lam, dtype), (self.n,))
