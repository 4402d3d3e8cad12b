"""The binary attributes model with fixed hyperparameters: sampling, the collapsed density and exact evidence.

The collapsed Gibbs sweep and its rank-one statistics are in ``gibbs``; the methods here that belong to it
(:meth:`BinaryAttributes.stats`, ``remove_row``, ``add_row``, ``sweep``, ``sweep_log_transition``) delegate.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from ...contracts.model import check_array_shape
from ...errors import OptionError
from ...kernels import Conditional
from . import gibbs, vb
from .gibbs import CollapsedBitSweep, SufficientStats, row_score, row_weights

LOG_2PI = float(np.log(2 * np.pi))
MAX_ENUMERATED_BITS = 20  # exact_log_marginal sums over 2**(N K) matrices


def all_binary_rows(k: int) -> np.ndarray:
    """Every binary vector of length ``k``, shape (2**k, k)."""
    return np.array(list(itertools.product((0, 1), repeat=k)), dtype=np.int32)


def all_binary_matrices(n: int, k: int) -> jax.Array:
    """Every ``n x k`` binary matrix, shape (2**(n k), n, k): the Z that ``exact_log_marginal`` sums over.

    Raises
    ------
    OptionError
        When ``n * k`` exceeds ``MAX_ENUMERATED_BITS`` (2**20 matrices).
    """
    bits = n * k
    if bits > MAX_ENUMERATED_BITS:
        raise OptionError(f"exact_log_marginal enumerates 2**(n*k) = 2**{bits} matrices; the limit is n*k <= "
                          f"{MAX_ENUMERATED_BITS}")
    return jnp.asarray(all_binary_rows(bits).reshape(-1, n, k))


@dataclass(frozen=True)
class BinaryAttributes:
    """Binary attributes model with A collapsed: latent ``{"Z": int32 (n, k)}``, data ``(n, dim)``.

    Parameters
    ----------
    n, dim, k : int
        Data cases N, observed dimensions D and binary attributes K (the paper's 50, 25, 10).
    pi : float or tuple of float
        Prior probability that an attribute is on, one value for all attributes or one per attribute.
    sigma_a : float
        Prior standard deviation of the feature matrix entries a_kj.
    sigma_n : float
        Observation noise standard deviation.

    Notes
    -----
    The defaults of ``pi``, ``sigma_a`` and ``sigma_n`` were chosen so that the posterior over Z captures
    most of the structure without concentrating on one explanation; the evidence is in
    ``docs/models/binary_attributes.md`` (script ``benchmarks/hyperparameters_binary_attributes.py``).
    """

    n: int = 50
    dim: int = 25
    k: int = 10
    pi: float | tuple = 0.3
    sigma_a: float = 1.0
    sigma_n: float = 1.0

    # ----------------------------------------------------------------------------------------------------
    # prior and data
    @property
    def log_pi(self) -> jax.Array:
        """(k,) log prior probability of each attribute being on."""
        return jnp.log(jnp.broadcast_to(jnp.asarray(self.pi, jnp.result_type(float)), (self.k,)))

    @property
    def log_1m_pi(self) -> jax.Array:
        """(k,) log prior probability of each attribute being off."""
        return jnp.log1p(-jnp.broadcast_to(jnp.asarray(self.pi, jnp.result_type(float)), (self.k,)))

    @property
    def ratio(self) -> float:
        """``r = sigma_n^2 / sigma_a^2``, the ridge added to ``Z^T W Z``."""
        return (self.sigma_n / self.sigma_a) ** 2

    def sample_prior(self, key):
        """Draw ``Z`` with independent Bernoulli(pi_k) entries."""
        p = jnp.broadcast_to(jnp.asarray(self.pi, jnp.result_type(float)), (self.k,))
        return {"Z": jax.random.bernoulli(key, p, (self.n, self.k)).astype(jnp.int32)}

    def sample_features(self, key):
        """Draw the collapsed feature matrix ``A`` (k, dim) from its prior."""
        return self.sigma_a * jax.random.normal(key, (self.k, self.dim))

    def sample_data(self, key, latent):
        """``y = Z A + noise`` with A drawn from its prior (it is integrated out of the latent state)."""
        return self.sample_data_tempered(key, latent, 1.0)

    def sample_data_tempered(self, key, latent, lam):
        """Data from the tempered likelihood normalized in y: noise variance sigma_n^2 / lam_i per row.

        A is drawn from its prior, so (Z, y) has the joint whose conditional of Z is ``f(Z; lam)``. Rows
        with lam_i = 0 carry no information and are set to 0.
        """
        k_a, k_y = jax.random.split(key)
        w = row_weights(lam, self.n, jnp.result_type(float))
        sd = self.sigma_n / jnp.sqrt(jnp.where(w > 0, w, 1.0))
        mean = latent["Z"].astype(w.dtype) @ self.sample_features(k_a)
        y = mean + sd[:, None] * jax.random.normal(k_y, (self.n, self.dim))
        return jnp.where(w[:, None] > 0, y, 0.0)

    def log_prior(self, latent):
        """Normalized log p(Z)."""
        z = latent["Z"]
        return jnp.sum(jnp.where(z == 1, self.log_pi[None, :], self.log_1m_pi[None, :]))

    def check_data(self, data):
        check_array_shape("BinaryAttributes data", data, (self.n, self.dim))

    # ----------------------------------------------------------------------------------------------------
    # the collapsed density
    def collapsed_log_likelihood(self, z, data, lam):
        """``log INT p(A) prod_i p(y_i | z_i, A)^{lam_i} dA`` for a binary matrix ``z`` (n, k) and weights lam.

        Computed from scratch by a Cholesky factorization of ``I + Z^T W Z / r`` (which is exactly I at
        lam = 0, so the result is exactly 0 there).
        """
        y = jnp.asarray(data)
        w = row_weights(lam, self.n, y.dtype)
        zf = z.astype(y.dtype)
        zw = zf * w[:, None]
        scaled = jnp.eye(self.k, dtype=y.dtype) + (zw.T @ zf) / self.ratio
        chol = jnp.linalg.cholesky(scaled)
        h = zw.T @ y
        v = jax.scipy.linalg.solve_triangular(chol, h, lower=True)
        row_terms = -0.5 * self.dim * (LOG_2PI + 2 * jnp.log(self.sigma_n)) - 0.5 * jnp.sum(y**2, 1) / self.sigma_n**2
        data_term = jnp.sum(jnp.where(w == 0, 0.0, w * row_terms))
        logdet = 2 * jnp.sum(jnp.log(jnp.diag(chol)))
        # b^T P^{-1} b = h^T M^{-1} h / sigma_n^2 with M = r * scaled.
        quad = jnp.sum(v**2) / (self.ratio * self.sigma_n**2)
        return data_term - 0.5 * self.dim * logdet + 0.5 * quad

    def log_density(self, latent, data, lam):
        """``log p(Z) + log INT p(A) prod_i p(y_i | Z, A)^{lam_i} dA``: equals log p(Z) at lam = 0, log p(Z, y) at 1."""
        return self.log_prior(latent) + self.collapsed_log_likelihood(latent["Z"], data, lam)

    def log_likelihood(self, latent, data):
        """Chain-rule terms ``log p(y_i | y_<i, Z)`` (A integrated out); they sum to log p(y | Z)."""
        z = latent["Z"]
        prefixes = jnp.tril(jnp.ones((self.n, self.n), jnp.result_type(float)))  # row i: cases 0..i switched on
        cumulative = jax.vmap(lambda w: self.collapsed_log_likelihood(z, data, w))(prefixes)
        return jnp.diff(cumulative, prepend=0.0)

    # ----------------------------------------------------------------------------------------------------
    # sufficient statistics and rank-one updates (Doshi-Velez and Ghahramani, 2009; algebra in ``gibbs``)
    def stats(self, z, data, lam) -> SufficientStats:
        """``(Z^T W Z + r I)^{-1}`` and ``Z^T W Y`` from scratch."""
        return gibbs.sufficient_stats(self, z, data, lam)

    remove_row = staticmethod(gibbs.remove_row)
    add_row = staticmethod(gibbs.add_row)

    def bit_prior(self, counts_rest):
        """(log p(z_ik = 1 | Z_{-i}), log p(z_ik = 0 | Z_{-i})), each (k,); ``counts_rest`` = column sums without row i.

        With pi fixed the bits are independent a priori, so the counts do not matter here.
        """
        del counts_rest
        return self.log_pi, self.log_1m_pi

    def bit_logit(self, z_row, bit, minv, mean, y_row, w, prior_logit):
        """``log p(z_ik = 1 | rest) - log p(z_ik = 0 | rest)`` given the row-removed posterior of A."""
        on = row_score(self, z_row.at[bit].set(1), minv, mean, y_row, w)
        off = row_score(self, z_row.at[bit].set(0), minv, mean, y_row, w)
        return prior_logit[bit] + on - off

    def sweep(self, key, z, data, lam, *, return_stats: bool = False, reverse: bool = False):
        """One collapsed Gibbs sweep over every bit z_ik (rows in a scan, the bits of a row in an inner scan).

        The statistics are recomputed from scratch at the start of every sweep (the latent state is Z alone
        and lam changes between calls), so rounding from the N rank-one downdate/update pairs within a sweep
        never accumulates across sweeps. ``reverse=True`` visits the bits in the opposite order (last row
        and last bit first): the sweep's reverse operator.
        """
        return gibbs.sweep(self, key, z, data, lam, return_stats=return_stats, reverse=reverse)

    def sweep_log_transition(self, z_from, z_to, data, lam, *, reverse: bool = False):
        """``log T(z_to | z_from)`` of :meth:`sweep` (same visiting order and ``reverse``).

        The sweep is forced through the target: each bit's log conditional of its target value is taken on
        the partially updated matrix (earlier bits at their targets, later ones at their starting values),
        and the terms add up.
        """
        return gibbs.sweep_log_transition(self, z_from, z_to, data, lam, reverse=reverse)

    # ----------------------------------------------------------------------------------------------------
    # conditionals and kernel
    def _site_logit(self, i, bit, z, data, lam):
        """Logit of z_ik given every other bit, with the statistics of the other rows computed from scratch."""
        y = jnp.asarray(data)
        w = row_weights(lam, self.n, y.dtype)
        rest = self.stats(z, y, w.at[i].set(0.0))
        log_on, log_off = self.bit_prior(jnp.sum(z, axis=0) - z[i])
        return self.bit_logit(z[i], bit, rest.minv, rest.minv @ rest.h, y[i], w[i], log_on - log_off)

    def _redraw_bit(self, key, i, bit, latent, data, lam):
        """``z[i, bit]`` redrawn from its conditional; ``i`` and ``bit`` may be Python or traced integers."""
        logit = self._site_logit(i, bit, latent["Z"], data, lam)
        on = jnp.log(jax.random.uniform(key)) < jax.nn.log_sigmoid(logit)
        return {**latent, "Z": latent["Z"].at[i, bit].set(on.astype(latent["Z"].dtype))}

    def site_conditional(self, i: int, bit: int) -> Conditional:
        """The conditional of the single bit ``z[i, bit]`` given the rest of Z (A collapsed), for testing."""

        def update(key, latent, data, lam):
            return self._redraw_bit(key, i, bit, latent, data, lam)

        def log_prob(latent, data, lam):
            logit = self._site_logit(i, bit, latent["Z"], data, lam)
            return jnp.where(latent["Z"][i, bit] == 1, jax.nn.log_sigmoid(logit), jax.nn.log_sigmoid(-logit))

        def assign(latent, source):
            return {**latent, "Z": latent["Z"].at[i, bit].set(source["Z"][i, bit])}

        return Conditional(f"z[{i},{bit}] | rest", update, log_prob, assign)

    def conditionals(self):
        """Every single-bit conditional, in the order the sweep visits them."""
        return tuple(self.site_conditional(i, b) for i in range(self.n) for b in range(self.k))

    def num_sites(self) -> int:
        """Single-bit conditionals: ``n * k``."""
        return self.n * self.k

    def update_site(self, key, j, latent, data, lam):
        """``conditionals()[j].update`` for a traced index ``j``: bit ``j % k`` of row ``j // k``."""
        return self._redraw_bit(key, j // self.k, j % self.k, latent, data, lam)

    def default_kernel(self):
        """The collapsed Gibbs sweep with rank-one updates."""
        return CollapsedBitSweep(self)

    # ----------------------------------------------------------------------------------------------------
    # predictive and exact marginal likelihood
    def log_predictive(self, latent, data, lam, i):
        """log p(y_i | other rows weighted by lam, Z_{-i}), z_i and A marginalized (all 2**k rows summed).

        ``lam[i]`` is treated as 0. Each column of y_i is ``N(z_i M_j, sigma_n^2 + z_i Sigma z_i^T)`` with
        ``M, Sigma`` the tempered posterior of A from the other rows.
        """
        _, log_pz, log_y = self._row_terms(latent, data, lam, i)
        return logsumexp(log_pz + log_y)

    def sample_case(self, key, latent, data, lam, i):
        """Redraw row z_i from its conditional given Z_{-i} when case i is switched fully on or off.

        With ``lam[i] == 1`` this is ``p(z_i | Z_{-i}, y)`` over all 2**k rows (the posterior-particle-filter
        proposal, paired with :meth:`log_predictive`); with ``lam[i] == 0`` it is the prior of z_i.
        """
        rows, log_pz, log_y = self._row_terms(latent, data, lam, i)
        on = row_weights(lam, self.n, log_y.dtype)[i] > 0
        pick = jax.random.categorical(key, log_pz + jnp.where(on, log_y, 0.0))
        return {**latent, "Z": latent["Z"].at[i].set(rows[pick].astype(latent["Z"].dtype))}

    def _row_terms(self, latent, data, lam, i):
        """All 2**k candidate rows z_i, their log prior given Z_{-i}, and log p(y_i | z_i, other rows)."""
        y = jnp.asarray(data)
        w = row_weights(lam, self.n, y.dtype).at[i].set(0.0)
        rest = self.stats(latent["Z"], y, w)
        mean = rest.minv @ rest.h
        rows = jnp.asarray(all_binary_rows(self.k), y.dtype)
        log_on, log_off = self.bit_prior(jnp.sum(latent["Z"], axis=0) - latent["Z"][i])
        log_pz = rows @ log_on + (1 - rows) @ log_off
        var = self.sigma_n**2 * (1.0 + jnp.einsum("rk,kl,rl->r", rows, rest.minv, rows))
        sq = jnp.sum((y[i][None, :] - rows @ mean) ** 2, axis=1)
        log_y = -0.5 * self.dim * (LOG_2PI + jnp.log(var)) - 0.5 * sq / var
        return rows, log_pz, log_y

    def bic_sample_params(self, key):
        """A drawn from its prior: a starting point for maximizing :meth:`bic_log_likelihood`."""
        return self.sigma_a * jax.random.normal(key, (self.k, self.dim))

    def bic_log_likelihood(self, A, data):
        """log p(Y | A) with every row's binary vector summed out (2**k terms per row)."""
        rows = jnp.asarray(all_binary_rows(self.k), A.dtype)
        log_pz = rows @ self.log_pi + (1 - rows) @ self.log_1m_pi
        r = (data[:, None, :] - (rows @ A)[None, :, :]) / self.sigma_n
        log_y = jnp.sum(-0.5 * r**2 - jnp.log(self.sigma_n) - 0.5 * LOG_2PI, axis=-1)
        return jnp.sum(logsumexp(log_pz[None, :] + log_y, axis=1))

    def exact_log_marginal(self, data, *, batch_size: int = 4096):
        """log p(y) by enumerating all 2**(n k) binary matrices, A integrated analytically.

        Raises
        ------
        OptionError
            When n * k exceeds ``MAX_ENUMERATED_BITS`` (2**20 matrices).
        """
        all_z = all_binary_matrices(self.n, self.k)
        y = jnp.asarray(data)

        def one(z):
            return self.log_density({"Z": z}, y, 1.0)

        return logsumexp(jax.lax.map(one, all_z, batch_size=batch_size))

    # ----------------------------------------------------------------------------------------------------
    # variational Bayes: q(Z) Bernoulli, q(A) Gaussian. The functions of ``vb`` take the model first, so
    # they are its methods as they stand (docstrings included).
    vb_log_symmetries = property(vb.log_symmetries)
    vb_init = vb.init
    vb_update = vb.update
    vb_bound = vb.bound
