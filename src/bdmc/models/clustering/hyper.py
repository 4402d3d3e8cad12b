"""The clustering model with its hyperparameters integrated out (BDMC paper, footnote 6).

The weights are collapsed (Dirichlet-multinomial assignments); the two log-variances are latent and move by
univariate slice sampling on the collapsed density after each collapsed Gibbs sweep over z.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln, logsumexp

from ...contracts.model import check_array_shape
from ...kernels import Conditional
from .gibbs import CollapsedGibbs, collapsed_gibbs_sweep
from .statistics import chain_rule_terms, cluster_stats, collapsed_cluster_term, predictive_gain, sample_tempered_data


def log_inverse_gamma_of_log(x, shape, scale):
    """Log density of ``x = log v`` when ``v ~ InvGamma(shape, scale)`` (includes the Jacobian ``v``)."""
    return shape * jnp.log(scale) - gammaln(shape) - shape * x - scale * jnp.exp(-x)


def slice_sample(key, x0, log_f, *, width, max_steps):
    """One univariate slice-sampling update of ``x0`` under ``log_f`` (Neal 2003: stepping out, shrinkage).

    Stepping out is capped at ``max_steps`` widths, split at random between the two sides, which keeps the
    update reversible; shrinkage always ends because ``x0`` itself lies in the slice.
    """
    k_level, k_pos, k_split, k_shrink = jax.random.split(key, 4)
    log_y = log_f(x0) + jnp.log(jax.random.uniform(k_level, dtype=x0.dtype))
    left = x0 - width * jax.random.uniform(k_pos, dtype=x0.dtype)
    right = left + width
    j = jnp.floor(max_steps * jax.random.uniform(k_split, dtype=x0.dtype))
    k = max_steps - 1 - j

    def out_left(c):
        return c[0] - width, c[1] - 1

    def out_right(c):
        return c[0] + width, c[1] - 1

    left = jax.lax.while_loop(lambda c: (c[1] > 0) & (log_f(c[0]) > log_y), out_left, (left, j))[0]
    right = jax.lax.while_loop(lambda c: (c[1] > 0) & (log_f(c[0]) > log_y), out_right, (right, k))[0]

    def shrink(c):
        lo, hi, _, key, _ = c
        key, sub = jax.random.split(key)
        x = lo + (hi - lo) * jax.random.uniform(sub, dtype=x0.dtype)
        inside = log_f(x) > log_y
        lo = jnp.where(~inside & (x < x0), x, lo)
        hi = jnp.where(~inside & (x >= x0), x, hi)
        return lo, hi, x, key, inside

    init = (left, right, x0, k_shrink, jnp.zeros((), bool))
    return jax.lax.while_loop(lambda c: ~c[4], shrink, init)[2]


@dataclass(frozen=True)
class ClusteringHyper:
    """The clustering model with its hyperparameters integrated out (BDMC paper, footnote 6).

    ``pi ~ Dirichlet(alpha 1_k)`` (collapsed: the assignments follow a Dirichlet-multinomial),
    ``sigma_theta^2 ~ InvGamma(theta_shape, theta_scale)``, ``sigma_noise^2 ~ InvGamma(noise_shape,
    noise_scale)``, then the model of :class:`Clustering` with the centres collapsed. Latent
    ``{"z": int32 (n,), "log_sigma_theta2": (), "log_sigma_noise2": ()}``; the log-variances are unconstrained
    and ``log_prior`` includes the log Jacobian. The defaults (alpha = 1, both inverse gammas with shape 1 and
    scale 1) are weak but proper; see ``docs/models/clustering.md``.

    The kernel is the collapsed Gibbs sweep over z followed by one slice-sampling update of each
    log-variance on the collapsed density.
    """

    n: int = 50
    dim: int = 25
    k: int = 10
    alpha: float = 1.0
    theta_shape: float = 1.0
    theta_scale: float = 1.0
    noise_shape: float = 1.0
    noise_scale: float = 1.0
    slice_width: float = 1.0
    slice_max_steps: int = 30

    def sample_prior(self, key):
        """Exact prior draw: pi from its Dirichlet then z given pi (so z is Dirichlet-multinomial)."""
        k_pi, k_z, k_t, k_n = jax.random.split(key, 4)
        dtype = jnp.result_type(float)
        log_pi = jnp.log(jax.random.dirichlet(k_pi, jnp.full(self.k, self.alpha, dtype)))
        z = jax.random.categorical(k_z, log_pi, shape=(self.n,)).astype(jnp.int32)
        log_t = jnp.log(self.theta_scale) - jnp.log(jax.random.gamma(k_t, self.theta_shape, dtype=dtype))
        log_n = jnp.log(self.noise_scale) - jnp.log(jax.random.gamma(k_n, self.noise_shape, dtype=dtype))
        return {"z": z, "log_sigma_theta2": log_t, "log_sigma_noise2": log_n}

    def sample_data(self, key, latent):
        """Draw the centres from their prior, then the data given the assignments."""
        return self.sample_data_tempered(key, latent, 1.0)

    def sample_data_tempered(self, key, latent, lam):
        """Data from the tempered likelihood normalized in y (noise variance sigma_noise^2 / lam_i per row)."""
        return sample_tempered_data(key, latent["z"], self._lam(lam), num_clusters=self.k, dim=self.dim,
                                    sigma_theta=jnp.exp(0.5 * latent["log_sigma_theta2"]),
                                    sigma_noise=jnp.exp(0.5 * latent["log_sigma_noise2"]))

    def log_prior(self, latent):
        """Dirichlet-multinomial log mass of z plus the log densities of the two log-variances."""
        counts = jnp.sum(jax.nn.one_hot(latent["z"], self.k, dtype=jnp.result_type(float)), axis=0)
        a = self.alpha
        log_z = gammaln(self.k * a) - gammaln(self.n + self.k * a) + jnp.sum(gammaln(counts + a) - gammaln(a))
        return log_z + self._log_variance_prior(latent["log_sigma_theta2"], latent["log_sigma_noise2"])

    def log_likelihood(self, latent, data):
        """Chain-rule terms ``log p(y_i | y_<i, z, variances)`` (centres collapsed), shape (n,)."""
        return chain_rule_terms(latent["z"], data, self._term(latent))

    def log_density(self, latent, data, lam):
        """Collapsed ``log p(z, variances) + log INT p(theta | .) prod_i p(y_i | .)^{lam_i} dtheta``."""
        _, W, S, Q = cluster_stats(latent["z"], data, self._lam(lam, data.dtype), self.k)
        return self.log_prior(latent) + jnp.sum(self._term(latent)(W, S, Q))

    def check_data(self, data):
        """Raise a DataError unless the data has shape (n, dim)."""
        check_array_shape("ClusteringHyper data", data, (self.n, self.dim))

    def log_predictive(self, latent, data, lam, i):
        """log p(y_i | the other rows weighted by lam, z_-i, variances), z_i and the centres marginalized."""
        lam = self._lam(lam, data.dtype).at[i].set(0.0)
        z_minus = jnp.where(jnp.arange(self.n) == i, -1, latent["z"])  # -1 has an all-zero one-hot row
        stats = cluster_stats(z_minus, data, lam, self.k)
        return logsumexp(self._prior_logits(stats[0]) + predictive_gain(stats, data[i], 1.0, self._term(latent)))

    def site_conditional(self, i: int) -> Conditional:
        """The Gibbs conditional of ``z_i`` given the other assignments and the variances."""

        def logits(latent, data, lam):
            lam = self._lam(lam, data.dtype)
            z_minus = jnp.where(jnp.arange(self.n) == i, -1, latent["z"])
            stats = cluster_stats(z_minus, data, lam.at[i].set(0.0), self.k)
            return self._site_logits(latent)(stats, data[i], lam[i])

        def update(key, latent, data, lam):
            new = jax.random.categorical(key, logits(latent, data, lam)).astype(jnp.int32)
            return {**latent, "z": latent["z"].at[i].set(new)}

        def log_prob(latent, data, lam):
            return logits(latent, data, lam)[latent["z"][i]]

        return Conditional(f"z[{i}] | z[-{i}], variances", update, log_prob)

    def conditionals(self):
        """One Gibbs block per assignment ``z_i`` (the variances are slice-sampled, see ``default_kernel``)."""
        return tuple(self.site_conditional(i) for i in range(self.n))

    def default_kernel(self):
        """Collapsed Gibbs sweep over z, then slice updates of the two log-variances."""
        return CollapsedGibbs(self)

    def sweep(self, key, latent, data, lam):
        """One kernel step: the z sweep, then ``log_sigma_theta2`` and ``log_sigma_noise2`` by slice sampling."""
        k_z, k_t, k_n = jax.random.split(key, 3)
        lam = self._lam(lam, data.dtype)
        z = collapsed_gibbs_sweep(k_z, latent["z"], data, lam, self.k, self._site_logits(latent))
        latent = {**latent, "z": z}
        _, W, S, Q = cluster_stats(z, data, lam, self.k)  # fixed while the variances move

        def log_f(lt, ln):
            terms = collapsed_cluster_term(W, S, Q, sigma_theta=jnp.exp(0.5 * lt), sigma_noise=jnp.exp(0.5 * ln))
            return self._log_variance_prior(lt, ln) + jnp.sum(terms)

        opts = dict(width=self.slice_width, max_steps=self.slice_max_steps)
        lt = slice_sample(k_t, latent["log_sigma_theta2"], lambda x: log_f(x, latent["log_sigma_noise2"]), **opts)
        ln = slice_sample(k_n, latent["log_sigma_noise2"], lambda x: log_f(lt, x), **opts)
        return {**latent, "log_sigma_theta2": lt, "log_sigma_noise2": ln}

    # ----- helpers --------------------------------------------------------------------------------------

    def _lam(self, lam, dtype=None):
        dtype = jnp.result_type(float) if dtype is None else dtype
        return jnp.broadcast_to(jnp.asarray(lam, dtype), (self.n,))

    def _log_variance_prior(self, log_t, log_n):
        return (log_inverse_gamma_of_log(log_t, self.theta_shape, self.theta_scale)
                + log_inverse_gamma_of_log(log_n, self.noise_shape, self.noise_scale))

    def _term(self, latent):
        st, sn = jnp.exp(0.5 * latent["log_sigma_theta2"]), jnp.exp(0.5 * latent["log_sigma_noise2"])
        return lambda W, S, Q: collapsed_cluster_term(W, S, Q, sigma_theta=st, sigma_noise=sn)

    def _prior_logits(self, counts):
        """Dirichlet-multinomial predictive of one assignment given the others' counts."""
        return jnp.log(counts + self.alpha) - jnp.log(jnp.sum(counts) + self.k * self.alpha)

    def _site_logits(self, latent):
        term = self._term(latent)

        def site_logits(stats, y, l):
            return jax.nn.log_softmax(self._prior_logits(stats[0]) + predictive_gain(stats, y, l, term))

        return site_logits
