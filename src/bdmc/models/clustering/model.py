"""The clustering model with fixed weights and variances (MG+G): sampling, densities and exact evidence."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from ...contracts.model import check_array_shape
from ...errors import OptionError
from ...exact import mixture_log_marginal_enumerate
from ...exact.enumeration import MAX_ASSIGNMENTS
from ...kernels import Conditional
from . import vb
from .gibbs import CollapsedGibbs, collapsed_gibbs_log_transition, collapsed_gibbs_sweep
from .statistics import (
    LOG_2PI,
    chain_rule_terms,
    cluster_stats,
    collapsed_cluster_term,
    predictive_gain,
    sample_tempered_data,
)


@dataclass(frozen=True)
class Clustering:
    """Finite Gaussian mixture with fixed weights and variances, cluster centres collapsed (MG+G).

    Latent ``{"z": int32 (n,)}``; data ``(n, dim)``. The defaults are the paper's sizes (50 points,
    25 dimensions, 10 clusters); ``sigma_theta`` and ``sigma_noise`` were chosen so the posterior captures
    most of the structure without concentrating on one partition (see ``docs/models/clustering.md``).

    Parameters
    ----------
    n, dim, k : int
        Data points, dimensions and clusters.
    sigma_theta : float
        Prior standard deviation of each coordinate of a cluster centre.
    sigma_noise : float
        Within-cluster noise standard deviation.
    weights : tuple of float, optional
        Fixed mixture probabilities pi (normalized here); uniform over the k clusters when omitted.
    """

    n: int = 50
    dim: int = 25
    k: int = 10
    sigma_theta: float = 1.2
    sigma_noise: float = 1.0
    weights: tuple | None = None

    @property
    def log_weights(self) -> jax.Array:
        """log pi, shape (k,)."""
        if self.weights is None:
            return jnp.full(self.k, -jnp.log(self.k))
        w = jnp.asarray(self.weights, jnp.result_type(float))
        return jnp.log(w) - jnp.log(jnp.sum(w))

    # ----- the generative model -------------------------------------------------------------------------

    def sample_prior(self, key):
        """Draw the assignments from the prior: ``{"z": int32 (n,)}``."""
        z = jax.random.categorical(key, self.log_weights, shape=(self.n,))
        return {"z": z.astype(jnp.int32)}

    def sample_data(self, key, latent):
        """Draw the centres from their prior, then the data given the assignments."""
        return self.sample_data_tempered(key, latent, 1.0)

    def sample_data_tempered(self, key, latent, lam):
        """Data from the tempered likelihood normalized in y (centres drawn from their prior).

        Row i has noise variance ``sigma_noise^2 / lam_i``; rows with ``lam_i == 0`` are set to 0.
        """
        return sample_tempered_data(key, latent["z"], self._lam(lam), num_clusters=self.k, dim=self.dim,
                                    sigma_theta=self.sigma_theta, sigma_noise=self.sigma_noise)

    def log_prior(self, latent):
        """``sum_i log pi_{z_i}``."""
        return jnp.sum(self.log_weights[latent["z"]])

    def log_likelihood(self, latent, data):
        """Chain-rule terms ``log p(y_i | y_<i, z)``, shape (n,); they sum to the collapsed ``log p(y | z)``."""
        return chain_rule_terms(latent["z"], data, self._term)

    def log_density(self, latent, data, lam):
        """``log p(z) + log INT p(theta) prod_i p(y_i | theta, z)^{lam_i} dtheta`` (collapsed, normalized)."""
        _, W, S, Q = cluster_stats(latent["z"], data, self._lam(lam, data.dtype), self.k)
        return self.log_prior(latent) + jnp.sum(self._term(W, S, Q))

    def check_data(self, data):
        """Raise a DataError unless the data has shape (n, dim)."""
        check_array_shape("Clustering data", data, (self.n, self.dim))

    def exact_log_marginal(self, data):
        """log p(y) by enumerating all k**n assignments (centres integrated analytically).

        Raises
        ------
        ValueError
            When k**n exceeds the enumeration limit of ``bdmc.exact``.
        """
        if self.k**self.n > MAX_ASSIGNMENTS:
            raise OptionError(
                f"exact log p(y) of Clustering enumerates k**n = {self.k}**{self.n} assignments; only up to "
                f"{MAX_ASSIGNMENTS} are affordable (e.g. n = 6, k = 3)"
            )
        return mixture_log_marginal_enumerate(
            data, log_weights=self.log_weights, sigma_theta=self.sigma_theta, sigma_noise=self.sigma_noise
        )

    # ----- predictive and conditionals ------------------------------------------------------------------

    def log_predictive(self, latent, data, lam, i):
        """log p(y_i | the other rows weighted by lam, their assignments), marginalizing z_i and the centres.

        ``log sum_k pi_k p(y_i | cluster k's tempered statistics without row i)``; row i's own weight is
        ignored (it is 0 in use).
        """
        lam = self._lam(lam, data.dtype).at[i].set(0.0)
        stats = cluster_stats(latent["z"], data, lam, self.k)
        return logsumexp(self.log_weights + predictive_gain(stats, data[i], 1.0, self._term))

    # ----- BIC: the centres are the parameters, assignments summed out ---------------------------------

    def bic_sample_params(self, key):
        """Centres drawn from their prior: a starting point for maximizing :meth:`bic_log_likelihood`."""
        return self.sigma_theta * jax.random.normal(key, (self.k, self.dim))

    def bic_log_likelihood(self, theta, data):
        """log p(y | centres) with every assignment summed out: sum_i log sum_k pi_k N(y_i; theta_k, s^2 I)."""
        r = (data[:, None, :] - theta[None, :, :]) / self.sigma_noise
        comp = jnp.sum(-0.5 * r**2 - jnp.log(self.sigma_noise) - 0.5 * LOG_2PI, axis=-1)
        return jnp.sum(logsumexp(self.log_weights[None, :] + comp, axis=1))

    # ----- variational Bayes: q(z_i) categorical, q(theta_k) = N(m_k, v_k I) -------------------------------
    # The functions of ``vb`` take the model first, so they are its methods as they stand (docstrings included).

    vb_log_symmetries = property(vb.log_symmetries)
    vb_init = vb.init
    vb_update = vb.update
    vb_bound = vb.bound

    # ----- Gibbs conditionals and the collapsed sweep (the scan itself is in ``gibbs``) ------------------

    def sample_case(self, key, latent, data, lam, i):
        """Redraw z_i from its collapsed conditional under ``f(.; lam)`` (its prior when lam_i = 0).

        With :meth:`log_predictive` this is the posterior-particle-filter proposal of SMC (Eqs. 18-22).
        """
        return self.site_conditional(i).update(key, latent, data, lam)

    def site_conditional(self, i: int) -> Conditional:
        """The Gibbs conditional of ``z_i`` given the other assignments (centres collapsed)."""

        def logits(latent, data, lam):
            lam = self._lam(lam, data.dtype)
            stats = cluster_stats(latent["z"], data, lam.at[i].set(0.0), self.k)
            return self._site_logits(stats, data[i], lam[i])

        def update(key, latent, data, lam):
            new = jax.random.categorical(key, logits(latent, data, lam)).astype(jnp.int32)
            return {**latent, "z": latent["z"].at[i].set(new)}

        def log_prob(latent, data, lam):
            return logits(latent, data, lam)[latent["z"][i]]

        def assign(latent, source):
            return {**latent, "z": latent["z"].at[i].set(source["z"][i])}

        return Conditional(f"z[{i}] | z[-{i}]", update, log_prob, assign)

    def conditionals(self):
        """One Gibbs block per assignment ``z_i`` (for testing; the kernel is the scanned sweep)."""
        return tuple(self.site_conditional(i) for i in range(self.n))

    def default_kernel(self):
        """The collapsed Gibbs sweep over z_1..z_n."""
        return CollapsedGibbs(self)

    def sweep(self, key, latent, data, lam, *, reverse=False):
        """Resample z_1, ..., z_n in turn from their collapsed conditionals (see ``collapsed_gibbs_sweep``).

        ``reverse=True`` visits the sites in the opposite order (the sweep's reverse operator).
        """
        z = collapsed_gibbs_sweep(key, latent["z"], data, self._lam(lam, data.dtype), self.k, self._site_logits,
                                  reverse=reverse)
        return {**latent, "z": z}

    def sweep_log_transition(self, latent_from, latent_to, data, lam, *, reverse=False):
        """``log T(latent_to | latent_from)`` of :meth:`sweep` (see ``collapsed_gibbs_log_transition``)."""
        return collapsed_gibbs_log_transition(latent_from["z"], latent_to["z"], data, self._lam(lam, data.dtype),
                                              self.k, self._site_logits, reverse=reverse)

    # ----- helpers --------------------------------------------------------------------------------------

    def _lam(self, lam, dtype=None):
        dtype = jnp.result_type(float) if dtype is None else dtype
        return jnp.broadcast_to(jnp.asarray(lam, dtype), (self.n,))

    def _term(self, W, S, Q):
        return collapsed_cluster_term(W, S, Q, sigma_theta=self.sigma_theta, sigma_noise=self.sigma_noise)

    def _site_logits(self, stats, y, l):
        """Normalized log conditional of one row's assignment given statistics that exclude the row."""
        return jax.nn.log_softmax(self.log_weights + predictive_gain(stats, y, l, self._term))
