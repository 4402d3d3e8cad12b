"""The binary attributes model (BG + G) of the BDMC paper, Sec. 6, with the feature matrix A collapsed out.

``z_ik ~ Bernoulli(pi_k)``, ``a_kj ~ N(0, sigma_a^2)``, ``y_ij ~ N(sum_k z_ik a_kj, sigma_n^2)``. Only the
binary matrix Z is kept as a latent; A is integrated analytically. With per-row weights lam (W = diag(lam))
every column a_j of A has the same posterior precision ``P = Z^T W Z / sigma_n^2 + I / sigma_a^2`` and

    log INT p(A) prod_i N(y_i; z_i A, sigma_n^2 I)^{lam_i} dA
        = sum_i lam_i [-D/2 log(2 pi sigma_n^2) - |y_i|^2 / (2 sigma_n^2)]
          - D K log sigma_a - D/2 log|P| + 1/2 sum_j b_j^T P^{-1} b_j,      b_j = Z^T W y_j / sigma_n^2.

Internally we write ``M = Z^T W Z + r I`` with ``r = sigma_n^2 / sigma_a^2`` (so ``P = M / sigma_n^2``) and
``H = Z^T W Y``. The collapsed Gibbs sweep follows Doshi-Velez and Ghahramani (2009): it carries ``M^{-1}``
and ``H``, removes a row with a rank-one downdate, scores each bit from the tempered predictive of that row
and adds the row back with a rank-one update.

``BinaryAttributesHyper`` puts the hyperparameters in the model (pi ~ Beta, collapsed; both variances
~ InvGamma, latent) for cross-model comparisons (paper, Table 1).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betaln, gammaln, logsumexp

from ..kernels import Conditional, KernelInfo
from ..contracts.model import check_array_shape

LOG_2PI = float(np.log(2 * np.pi))
MAX_ENUMERATED_BITS = 20  # exact_log_marginal sums over 2**(N K) matrices


class SufficientStats(NamedTuple):
    """What the collapsed sampler carries: ``minv = (Z^T W Z + r I)^{-1}`` (K, K) and ``h = Z^T W Y`` (K, D)."""

    minv: jax.Array
    h: jax.Array


def _row_weights(lam, n, dtype):
    return jnp.broadcast_to(jnp.asarray(lam, dtype), (n,))


def all_binary_rows(k: int) -> np.ndarray:
    """Every binary vector of length ``k``, shape (2**k, k)."""
    return np.array(list(itertools.product((0, 1), repeat=k)), dtype=np.int32)


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
        w = _row_weights(lam, self.n, jnp.result_type(float))
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
        w = _row_weights(lam, self.n, y.dtype)
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
    # sufficient statistics and rank-one updates (Doshi-Velez and Ghahramani, 2009)
    def stats(self, z, data, lam) -> SufficientStats:
        """``(Z^T W Z + r I)^{-1}`` and ``Z^T W Y`` from scratch."""
        y = jnp.asarray(data)
        w = _row_weights(lam, self.n, y.dtype)
        zw = z.astype(y.dtype) * w[:, None]
        m = zw.T @ z.astype(y.dtype) + self.ratio * jnp.eye(self.k, dtype=y.dtype)
        chol = jnp.linalg.cholesky(m)
        minv = jax.scipy.linalg.cho_solve((chol, True), jnp.eye(self.k, dtype=y.dtype))
        return SufficientStats(minv, zw.T @ y)

    @staticmethod
    def remove_row(stats: SufficientStats, z_row, y_row, w) -> SufficientStats:
        """Sherman-Morrison downdate: take a row with weight ``w`` out of the statistics.

        ``(M - w z z^T)^{-1} = M^{-1} + w u u^T / (1 - w z^T u)`` with ``u = M^{-1} z``; the denominator
        equals ``1 / (1 + w z^T M_{-i}^{-1} z) > 0`` because the remaining matrix is at least ``r I``.
        """
        zf = z_row.astype(stats.minv.dtype)
        u = stats.minv @ zf
        minv = stats.minv + w * jnp.outer(u, u) / (1.0 - w * zf @ u)
        return SufficientStats(minv, stats.h - w * jnp.outer(zf, y_row))

    @staticmethod
    def add_row(stats: SufficientStats, z_row, y_row, w) -> SufficientStats:
        """Sherman-Morrison update: put a row with weight ``w`` into the statistics."""
        zf = z_row.astype(stats.minv.dtype)
        u = stats.minv @ zf
        minv = stats.minv - w * jnp.outer(u, u) / (1.0 + w * zf @ u)
        return SufficientStats(minv, stats.h + w * jnp.outer(zf, y_row))

    def _row_score(self, z_row, minv, mean, y_row, w):
        """Log tempered predictive of row y_i given the other rows, up to terms free of ``z_row``.

        With A's posterior from the other rows having column means ``mean`` (k, dim) and covariance
        ``sigma_n^2 minv``, ``N(y; z A, sigma_n^2)^w`` integrates to ``-D/2 log(1 + w q) -
        w |y - z mean|^2 / (2 sigma_n^2 (1 + w q))`` plus constants, with ``q = z^T minv z`` (the determinant
        lemma and Sherman-Morrison). O(k^2 + k dim) work; exactly 0 when w = 0.
        """
        zf = z_row.astype(minv.dtype)
        q = zf @ minv @ zf
        resid = y_row - zf @ mean
        c = 1.0 + w * q
        score = -0.5 * self.dim * jnp.log(c) - 0.5 * w * jnp.sum(resid**2) / (self.sigma_n**2 * c)
        return jnp.where(w == 0, 0.0, score)

    def bit_prior(self, counts_rest):
        """(log p(z_ik = 1 | Z_{-i}), log p(z_ik = 0 | Z_{-i})), each (k,); ``counts_rest`` = column sums without row i.

        With pi fixed the bits are independent a priori, so the counts do not matter here.
        """
        del counts_rest
        return self.log_pi, self.log_1m_pi

    def bit_logit(self, z_row, bit, minv, mean, y_row, w, prior_logit):
        """``log p(z_ik = 1 | rest) - log p(z_ik = 0 | rest)`` given the row-removed posterior of A."""
        on = self._row_score(z_row.at[bit].set(1), minv, mean, y_row, w)
        off = self._row_score(z_row.at[bit].set(0), minv, mean, y_row, w)
        return prior_logit[bit] + on - off

    def _update_row(self, key, stats, z_row, y_row, w, prior_logit, reverse=False):
        """Remove a row, redraw its K bits in turn (inner scan; last bit first if ``reverse``), add it back."""
        rest = self.remove_row(stats, z_row, y_row, w)
        mean = rest.minv @ rest.h  # posterior mean of A from the other rows

        def one_bit(row, xs):
            bit, k = xs
            logit = self.bit_logit(row, bit, rest.minv, mean, y_row, w, prior_logit)
            on = jnp.log(jax.random.uniform(k, dtype=rest.minv.dtype)) < jax.nn.log_sigmoid(logit)
            return row.at[bit].set(on.astype(row.dtype)), None

        bits = jnp.arange(self.k)
        new_row, _ = jax.lax.scan(one_bit, z_row, (bits, jax.random.split(key, self.k)), unroll=True,
                                  reverse=reverse)
        return self.add_row(rest, new_row, y_row, w), new_row

    def sweep(self, key, z, data, lam, *, return_stats: bool = False, reverse: bool = False):
        """One collapsed Gibbs sweep over every bit z_ik (rows in a scan, the bits of a row in an inner scan).

        The statistics are recomputed from scratch at the start of every sweep (the latent state is Z alone
        and lam changes between calls), so rounding from the N rank-one downdate/update pairs within a sweep
        never accumulates across sweeps. ``reverse=True`` visits the bits in the opposite order (last row
        and last bit first): the sweep's reverse operator.
        """
        y = jnp.asarray(data)
        w = _row_weights(lam, self.n, y.dtype)

        def one_row(carry, xs):
            stats, counts = carry
            k, z_row, y_row, w_i = xs
            counts_rest = counts - z_row
            log_on, log_off = self.bit_prior(counts_rest)
            stats, new_row = self._update_row(k, stats, z_row, y_row, w_i, log_on - log_off, reverse)
            return (stats, counts_rest + new_row), new_row

        init = (self.stats(z, y, w), jnp.sum(z, axis=0))
        (stats, _), z_new = jax.lax.scan(one_row, init, (jax.random.split(key, self.n), z, y, w), reverse=reverse)
        return (z_new, stats) if return_stats else z_new

    def sweep_log_transition(self, z_from, z_to, data, lam, *, reverse: bool = False):
        """``log T(z_to | z_from)`` of :meth:`sweep` (same visiting order and ``reverse``).

        The sweep is forced through the target: each bit's log conditional of its target value is taken on
        the partially updated matrix (earlier bits at their targets, later ones at their starting values),
        and the terms add up.
        """
        y = jnp.asarray(data)
        w = _row_weights(lam, self.n, y.dtype)

        def one_row(carry, xs):
            stats, counts, total = carry
            row_from, row_to, y_row, w_i = xs
            counts_rest = counts - row_from
            log_on, log_off = self.bit_prior(counts_rest)
            rest = self.remove_row(stats, row_from, y_row, w_i)
            mean = rest.minv @ rest.h

            def one_bit(row, bit):
                logit = self.bit_logit(row, bit, rest.minv, mean, y_row, w_i, log_on - log_off)
                target = row_to[bit]
                logp = jnp.where(target == 1, jax.nn.log_sigmoid(logit), jax.nn.log_sigmoid(-logit))
                return row.at[bit].set(target), logp

            _, logps = jax.lax.scan(one_bit, row_from, jnp.arange(self.k), unroll=True, reverse=reverse)
            stats = self.add_row(rest, row_to, y_row, w_i)
            return (stats, counts_rest + row_to, total + jnp.sum(logps)), None

        init = (self.stats(z_from, y, w), jnp.sum(z_from, axis=0), jnp.zeros((), y.dtype))
        (_, _, total), _ = jax.lax.scan(one_row, init, (z_from, z_to, y, w), reverse=reverse)
        return total

    # ----------------------------------------------------------------------------------------------------
    # conditionals and kernel
    def _site_logit(self, i, bit, z, data, lam):
        """Logit of z_ik given every other bit, with the statistics of the other rows computed from scratch."""
        y = jnp.asarray(data)
        w = _row_weights(lam, self.n, y.dtype)
        rest = self.stats(z, y, w.at[i].set(0.0))
        log_on, log_off = self.bit_prior(jnp.sum(z, axis=0) - z[i])
        return self.bit_logit(z[i], bit, rest.minv, rest.minv @ rest.h, y[i], w[i], log_on - log_off)

    def site_conditional(self, i: int, bit: int) -> Conditional:
        """The conditional of the single bit ``z[i, bit]`` given the rest of Z (A collapsed), for testing."""

        def update(key, latent, data, lam):
            logit = self._site_logit(i, bit, latent["Z"], data, lam)
            on = jnp.log(jax.random.uniform(key)) < jax.nn.log_sigmoid(logit)
            return {**latent, "Z": latent["Z"].at[i, bit].set(on.astype(latent["Z"].dtype))}

        def log_prob(latent, data, lam):
            logit = self._site_logit(i, bit, latent["Z"], data, lam)
            return jnp.where(latent["Z"][i, bit] == 1, jax.nn.log_sigmoid(logit), jax.nn.log_sigmoid(-logit))

        def assign(latent, source):
            return {**latent, "Z": latent["Z"].at[i, bit].set(source["Z"][i, bit])}

        return Conditional(f"z[{i},{bit}] | rest", update, log_prob, assign)

    def conditionals(self):
        """Every single-bit conditional, in the order the sweep visits them."""
        return tuple(self.site_conditional(i, b) for i in range(self.n) for b in range(self.k))

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
        on = _row_weights(lam, self.n, log_y.dtype)[i] > 0
        pick = jax.random.categorical(key, log_pz + jnp.where(on, log_y, 0.0))
        return {**latent, "Z": latent["Z"].at[i].set(rows[pick].astype(latent["Z"].dtype))}

    def _row_terms(self, latent, data, lam, i):
        """All 2**k candidate rows z_i, their log prior given Z_{-i}, and log p(y_i | z_i, other rows)."""
        y = jnp.asarray(data)
        w = _row_weights(lam, self.n, y.dtype).at[i].set(0.0)
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
        ValueError
            When n * k exceeds ``MAX_ENUMERATED_BITS`` (2**20 matrices).
        """
        bits = self.n * self.k
        if bits > MAX_ENUMERATED_BITS:
            raise ValueError(
                f"exact_log_marginal enumerates 2**(n*k) = 2**{bits} matrices; the limit is n*k <= "
                f"{MAX_ENUMERATED_BITS}"
            )
        y = jnp.asarray(data)
        all_z = jnp.asarray(all_binary_rows(bits).reshape(-1, self.n, self.k))

        def one(z):
            return self.log_density({"Z": z}, y, 1.0)

        return logsumexp(jax.lax.map(one, all_z, batch_size=batch_size))

    # ----------------------------------------------------------------------------------------------------
    # variational Bayes: q(Z) Bernoulli, q(A) Gaussian (algebra in binary_attributes_vb)
    @property
    def vb_num_labels(self) -> int:
        """Attributes whose relabelings leave the model unchanged when pi is one value."""
        return self.k

    @property
    def vb_log_symmetries(self) -> float:
        """log of the number of attribute permutations preserving the prior (``log k!`` for a scalar pi)."""
        from .binary_attributes_vb import log_symmetries  # deferred: the VB module is only needed by VB

        return log_symmetries(self)

    def vb_init(self, key, data):
        """Random q(Z) (uniform nu), then the matching q(A) (see ``binary_attributes_vb.init``)."""
        from .binary_attributes_vb import init

        return init(self, key, data)

    def vb_update(self, params, data):
        """One coordinate-ascent sweep: each column of q(Z) in turn, then q(A) (Eqs. 39-40)."""
        from .binary_attributes_vb import update

        return update(self, params, data)

    def vb_bound(self, params, data):
        """The exact bound E_q[log p(Y | Z, A) + log p(A) + log p(Z)] + H[q] on log p(Y)."""
        from .binary_attributes_vb import bound

        return bound(self, params, data)


@dataclass(frozen=True)
class CollapsedBitSweep:
    """Kernel: one collapsed Gibbs sweep of a binary attributes model (see ``BinaryAttributes.sweep``)."""

    model: BinaryAttributes
    evals_per_step: int = 1
    reverse: bool = False

    def __call__(self, key, latent, data, lam):
        z = self.model.sweep(key, latent["Z"], data, lam, reverse=self.reverse)
        return {**latent, "Z": z}, KernelInfo(jnp.ones((), jnp.result_type(float)))

    def log_transition(self, latent_from, latent_to, data, lam):
        """``log T(latent_to | latent_from)``: the sweep forced to the target, bit log-probabilities summed."""
        return self.model.sweep_log_transition(latent_from["Z"], latent_to["Z"], data, lam, reverse=self.reverse)

    def reversed(self) -> "CollapsedBitSweep":
        """The reverse operator: the same bit updates visited in the opposite order."""
        return CollapsedBitSweep(self.model, self.evals_per_step, reverse=not self.reverse)


# --------------------------------------------------------------------------------------------------------
# the hyperparameter-integrated variant (BDMC paper, footnote 6)


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
            latent = jax.tree.map(lambda p, c: jnp.where(accept, p, c), prop, latent)
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
        ValueError
            When n * k exceeds ``MAX_ENUMERATED_BITS``.
        """
        bits = self.n * self.k
        if bits > MAX_ENUMERATED_BITS:
            raise ValueError(
                f"exact_log_marginal enumerates 2**(n*k) = 2**{bits} matrices; the limit is n*k <= "
                f"{MAX_ENUMERATED_BITS}"
            )
        y = jnp.asarray(data)
        x, w = np.polynomial.legendre.leggauss(num_nodes)
        lo, hi = log_range
        u = jnp.asarray(0.5 * (hi - lo) * x + 0.5 * (hi + lo))
        log_w = jnp.asarray(np.log(0.5 * (hi - lo) * w))
        all_z = jnp.asarray(all_binary_rows(bits).reshape(-1, self.n, self.k))
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
