"""The binary attributes model with its hyperparameters in the model (BDMC paper, Table 1 and footnote 6).

pi is integrated out (a Beta-Bernoulli prior on each bit); the two log-variances are latent and move by
random-walk Metropolis-Hastings after each collapsed bit sweep (:class:`HyperSweep`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betaln, gammaln, logsumexp

from ...contracts.model import check_array_shape
from ...kernels import Conditional, KernelInfo
from .model import BinaryAttributes, all_binary_matrices


@dataclass(frozen=True)
class _BetaBernoulliAttributes(BinaryAttributes):
    """BinaryAttributes with every pi_k ~ Beta(a, b) integrated out (internal; sigmas may be traced values)."""

    a: float = 1.0
    b: float = 1.0

    def bit_prior(self, counts_rest):
        """Beta-Bernoulli predictive of z_ik given the other rows: ``(m_{-i,k} + a) / (N - 1 + a + b)``."""
        c = jnp.asarray(counts_rest, jnp.result_type(float))
        log_total = jnp.log(self.n - 1 + self.a + self.b)
        return jnp.log(c + self.a) - log_total, jnp.log(self.n - 1 - c + self.b) - log_total

    def log_prior(self, latent):
        """Normalized log p(Z) with pi integrated: a beta-binomial term per column."""
        m = jnp.sum(latent["Z"], axis=0).astype(jnp.result_type(float))
        return jnp.sum(betaln(m + self.a, self.n - m + self.b) - betaln(self.a, self.b))


def _log_inv_gamma_of_log(u, shape, scale):
    """log density of ``u = log s`` when ``s ~ InvGamma(shape, scale)`` (includes the Jacobian ``log s``)."""
    return shape * jnp.log(scale) - gammaln(shape) - shape * u - scale * jnp.exp(-u)


@dataclass(frozen=True)
class BinaryAttributesHyper:
    """Binary attributes model with its hyperparameters in the model (BDMC paper, Table 1 and footnote 6).

    ``pi_k ~ Beta(a, b)`` (integrated out), ``sigma_a^2 ~ InvGamma(shape_a, scale_a)``,
    ``sigma_n^2 ~ InvGamma(shape_n, scale_n)``, then Z, A and y as in :class:`BinaryAttributes` (A collapsed).
    Latent ``{"Z": int32 (n, k), "log_sigma_a2": (), "log_sigma_n2": ()}``; the variances are kept as
    unconstrained logs and ``log_prior`` includes the Jacobian. Defaults: Beta(1, 1) and InvGamma(1, 1), weak
    but proper.

    The kernel is the collapsed bit sweep (with the beta-Bernoulli prior of each bit) followed by
    random-walk Metropolis-Hastings on each log variance at the scales ``mh_scales`` (large scales move at
    small lam, small ones near the posterior), all on the collapsed density.
    """

    n: int = 50
    dim: int = 25
    k: int = 10
    a: float = 1.0
    b: float = 1.0
    shape_a: float = 1.0
    scale_a: float = 1.0
    shape_n: float = 1.0
    scale_n: float = 1.0
    mh_scales: tuple = (3.0, 1.0, 0.3, 0.1)

    def fixed(self, latent) -> BinaryAttributes:
        """The fixed-variance model at the latent's variances (pi integrated out); its fields may be traced."""
        return _BetaBernoulliAttributes(
            n=self.n, dim=self.dim, k=self.k, pi=0.5, a=self.a, b=self.b,
            sigma_a=jnp.exp(0.5 * latent["log_sigma_a2"]), sigma_n=jnp.exp(0.5 * latent["log_sigma_n2"]),
        )

    def sample_prior(self, key):
        """Draw the variances, then pi from its Beta prior and Z given pi."""
        k_a, k_n, k_pi, k_z = jax.random.split(key, 4)
        log_a2 = jnp.log(self.scale_a) - jnp.log(jax.random.gamma(k_a, self.shape_a))
        log_n2 = jnp.log(self.scale_n) - jnp.log(jax.random.gamma(k_n, self.shape_n))
        pi = jax.random.beta(k_pi, self.a, self.b, (self.k,))
        z = jax.random.bernoulli(k_z, pi, (self.n, self.k)).astype(jnp.int32)
        return {"Z": z, "log_sigma_a2": log_a2, "log_sigma_n2": log_n2}

    def sample_data(self, key, latent):
        """A from its prior at the latent sigma_a, then y (see ``BinaryAttributes.sample_data``)."""
        return self.fixed(latent).sample_data(key, latent)

    def sample_data_tempered(self, key, latent, lam):
        """Tempered data, noise variance sigma_n^2 / lam_i (see ``BinaryAttributes.sample_data_tempered``)."""
        return self.fixed(latent).sample_data_tempered(key, latent, lam)

    def log_prior(self, latent):
        """Normalized log p(Z, log sigma_a^2, log sigma_n^2), pi integrated out."""
        return (
            self.fixed(latent).log_prior(latent)
            + _log_inv_gamma_of_log(latent["log_sigma_a2"], self.shape_a, self.scale_a)
            + _log_inv_gamma_of_log(latent["log_sigma_n2"], self.shape_n, self.scale_n)
        )

    def log_density(self, latent, data, lam):
        """``log_prior + log INT p(A) prod_i p(y_i | Z, A, sigma_n)^{lam_i} dA`` (normalized at lam = 0)."""
        return self.log_prior(latent) + self.fixed(latent).collapsed_log_likelihood(latent["Z"], data, lam)

    def log_likelihood(self, latent, data):
        """Chain-rule terms ``log p(y_i | y_<i, Z, sigmas)`` (A integrated out)."""
        return self.fixed(latent).log_likelihood(latent, data)

    def check_data(self, data):
        check_array_shape("BinaryAttributesHyper data", data, (self.n, self.dim))

    def site_conditional(self, i: int, bit: int) -> Conditional:
        """The conditional of bit ``z[i, bit]`` given everything else (pi and A integrated out)."""

        def update(key, latent, data, lam):
            return self.fixed(latent).site_conditional(i, bit).update(key, latent, data, lam)

        def log_prob(latent, data, lam):
            return self.fixed(latent).site_conditional(i, bit).log_prob(latent, data, lam)

        return Conditional(f"z[{i},{bit}] | rest", update, log_prob)

    def conditionals(self):
        """Every single-bit conditional (the variances move by Metropolis-Hastings, not by a conditional)."""
        return tuple(self.site_conditional(i, b) for i in range(self.n) for b in range(self.k))

    def num_sites(self) -> int:
        """Single-bit conditionals: ``n * k``."""
        return self.n * self.k

    def update_site(self, key, j, latent, data, lam):
        """``conditionals()[j].update`` for a traced index ``j``: bit ``j % k`` of row ``j // k``."""
        return self.fixed(latent).update_site(key, j, latent, data, lam)

    def update_variances(self, key, latent, data, lam):
        """Random-walk MH on each log variance at every scale of ``mh_scales``; returns (latent, mean acceptance)."""
        accepts = []
        names = ("log_sigma_a2", "log_sigma_n2")
        keys = jax.random.split(key, len(self.mh_scales) * len(names))
        current = self.log_density(latent, data, lam)
        for j, (scale, name) in enumerate(itertools.product(self.mh_scales, names)):
            k_prop, k_acc = jax.random.split(keys[j])
            prop = {**latent, name: latent[name] + scale * jax.random.normal(k_prop, dtype=current.dtype)}
            proposed = self.log_density(prop, data, lam)
            log_ratio = proposed - current
            accept = jnp.log(jax.random.uniform(k_acc, dtype=current.dtype)) < log_ratio
            latent = jax.tree.map(partial(jnp.where, accept), prop, latent)
            current = jnp.where(accept, proposed, current)
            accepts.append(jnp.exp(jnp.minimum(log_ratio, 0.0)))  # acceptance probability, a diagnostic only
        return latent, jnp.mean(jnp.stack(accepts))

    def default_kernel(self):
        """Collapsed bit sweep, then MH on the log variances."""
        return HyperSweep(self)

    def log_predictive(self, latent, data, lam, i):
        """log p(y_i | other rows weighted by lam, Z_{-i}, sigmas), z_i and A marginalized (2**k rows)."""
        return self.fixed(latent).log_predictive(latent, data, lam, i)

    def exact_log_marginal(self, data, *, num_nodes: int = 160, log_range=(-12.0, 20.0), batch_size: int = 64):
        """log p(y) on tiny instances: Z enumerated, A analytic, the two log variances by Gauss-Legendre.

        Parameters
        ----------
        num_nodes : int
            Quadrature nodes per log variance over ``log_range`` (the InvGamma tails beyond it are
            negligible for the default priors).

        Raises
        ------
        OptionError
            When n * k exceeds ``MAX_ENUMERATED_BITS``.
        """
        all_z = all_binary_matrices(self.n, self.k)
        y = jnp.asarray(data)
        x, w = np.polynomial.legendre.leggauss(num_nodes)
        lo, hi = log_range
        u = jnp.asarray(0.5 * (hi - lo) * x + 0.5 * (hi + lo))
        log_w = jnp.asarray(np.log(0.5 * (hi - lo) * w))
        ua, un = jnp.meshgrid(u, u, indexing="ij")
        lwa, lwn = jnp.meshgrid(log_w, log_w, indexing="ij")

        def at(args):
            log_a2, log_n2, lw = args

            def one(z):
                return self.log_density({"Z": z, "log_sigma_a2": log_a2, "log_sigma_n2": log_n2}, y, 1.0)

            return lw + logsumexp(jax.vmap(one)(all_z))

        vals = jax.lax.map(at, (ua.ravel(), un.ravel(), (lwa + lwn).ravel()), batch_size=batch_size)
        return logsumexp(vals)


@dataclass(frozen=True)
class HyperSweep:
    """Kernel of :class:`BinaryAttributesHyper`: the collapsed bit sweep, then MH on the log variances."""

    model: BinaryAttributesHyper

    @property
    def evals_per_step(self) -> int:
        return 1 + 2 * len(self.model.mh_scales)

    def __call__(self, key, latent, data, lam):
        k_z, k_v = jax.random.split(key)
        z = self.model.fixed(latent).sweep(k_z, latent["Z"], data, lam)
        latent, acceptance = self.model.update_variances(k_v, {**latent, "Z": z}, data, lam)
        return latent, KernelInfo(acceptance)
