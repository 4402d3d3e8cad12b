"""The clustering model MG+G of the BDMC paper (Sec. 6), with the cluster centres integrated out.

``z_i ~ Categorical(pi)``, ``theta_kj ~ N(0, sigma_theta^2)``, ``y_ij ~ N(theta_{z_i j}, sigma_noise^2)``.
The latent state keeps only the assignments ``z``; every computation works with the tempered sufficient
statistics of each cluster under per-row likelihood weights ``lam``:
``W_k = sum_{i in k} lam_i``, ``S_k = sum_{i in k} lam_i y_i`` and ``Q_k = sum_{i in k} lam_i |y_i|^2``.
Per dimension, completing the square in theta gives

``log INT N(theta; 0, s^2) prod_i N(y_i; theta, sigma^2)^{lam_i} dtheta
= -W/2 log(2 pi sigma^2) - Q/(2 sigma^2) - log s - log(P)/2 + (S / sigma^2)^2 / (2 P)``,
``P = 1/s^2 + W/sigma^2``, which is exactly 0 at ``W = S = Q = 0`` (the density is normalized at lam = 0).

:class:`Clustering` fixes pi and both variances (the paper's experiments); :class:`ClusteringHyper` integrates
them out (Dirichlet and inverse-gamma priors, the paper's footnote 6). Both use the collapsed Gibbs sweep
:func:`collapsed_gibbs_sweep`.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln, logsumexp

from ..errors import BDMCError
from ..exact import mixture_log_marginal_enumerate
from ..exact.enumeration import MAX_ASSIGNMENTS
from ..kernels import Conditional, KernelInfo
from ..contracts.model import check_array_shape

LOG_2PI = math.log(2 * math.pi)  # a Python float: it takes the dtype of the arrays it meets


def collapsed_cluster_term(W, S, Q, *, sigma_theta, sigma_noise):
    """Log of the tempered likelihood of each cluster with its centre integrated out.

    Parameters
    ----------
    W : array (..., )
        Total likelihood weight of the cluster's rows.
    S : array (..., D)
        Weighted sum of the rows.
    Q : array (..., )
        Weighted sum of the rows' squared norms.
    sigma_theta, sigma_noise : float or array
        Prior standard deviation of the centre coordinates and the noise standard deviation.

    Returns
    -------
    array (...,)
        ``log INT N(theta; 0, sigma_theta^2 I) prod_i N(y_i; theta, sigma_noise^2 I)^{lam_i} dtheta``.
    """
    dim = S.shape[-1]
    v = sigma_noise**2
    P = 1.0 / sigma_theta**2 + W / v
    return (
        -0.5 * W * dim * (LOG_2PI + jnp.log(v))
        - 0.5 * Q / v
        - dim * jnp.log(sigma_theta)
        - 0.5 * dim * jnp.log(P)
        + 0.5 * jnp.sum(S**2, axis=-1) / v**2 / P
    )


def cluster_stats(z, data, lam, num_clusters):
    """Per-cluster statistics ``(C, W, S, Q)``: counts (unweighted, for the prior of z) and tempered sums.

    ``C (K,)`` counts the rows of each cluster; ``W (K,)``, ``S (K, D)`` and ``Q (K,)`` are the lam-weighted
    number of rows, sum of rows and sum of squared row norms.
    """
    onehot = jax.nn.one_hot(z, num_clusters, dtype=data.dtype)
    members = onehot * lam[:, None]  # (N, K) weighted membership
    return onehot.sum(0), members.sum(0), members.T @ data, members.T @ jnp.sum(data**2, axis=1)


def sample_tempered_data(key, z, lam, *, num_clusters, dim, sigma_theta, sigma_noise):
    """Centres from their prior, then row i from ``N(theta_{z_i}, sigma_noise^2 / lam_i)``; 0 where lam_i = 0."""
    k_theta, k_noise = jax.random.split(key)
    theta = sigma_theta * jax.random.normal(k_theta, (num_clusters, dim))
    sd = sigma_noise / jnp.sqrt(jnp.where(lam > 0, lam, 1.0))
    y = theta[z] + sd[:, None] * jax.random.normal(k_noise, (z.shape[0], dim))
    return jnp.where(lam[:, None] > 0, y, 0.0)  # switched-off rows carry no information


def _shift(stats, onehot, sign, l, y, q):
    """Add (sign = 1) or remove (sign = -1) one row of weight ``l`` in the cluster marked by ``onehot``."""
    C, W, S, Q = stats
    return C + sign * onehot, W + sign * l * onehot, S + (sign * l * onehot)[:, None] * y, Q + sign * l * onehot * q


def collapsed_gibbs_sweep(key, z, data, lam, num_clusters, site_logits, *, reverse=False):
    """Resample z_1, ..., z_n in turn (one ``lax.scan``), updating cluster statistics row by row.

    ``site_logits((C, W, S, Q), y, l)`` returns the normalized log conditional of a row's assignment given
    statistics that exclude the row. Each site is visited once, so its old value comes from the initial z;
    one-hot updates (no scatters) and Gumbel noise drawn up front keep the vmapped sweep cheap to compile.
    A sweep costs O(n k dim). ``reverse=True`` visits z_n, ..., z_1: the reverse operator of the sweep.
    """
    q = jnp.sum(data**2, axis=1)

    def site(stats, xs):
        old, y, l, qi, gumbel = xs
        stats = _shift(stats, jax.nn.one_hot(old, num_clusters, dtype=y.dtype), -1.0, l, y, qi)
        new = jnp.argmax(site_logits(stats, y, l) + gumbel).astype(jnp.int32)  # Gumbel-max draw
        return _shift(stats, jax.nn.one_hot(new, num_clusters, dtype=y.dtype), 1.0, l, y, qi), new

    gumbel = jax.random.gumbel(key, (z.shape[0], num_clusters), data.dtype)
    return jax.lax.scan(site, cluster_stats(z, data, lam, num_clusters), (z, data, lam, q, gumbel),
                        reverse=reverse)[1]


def collapsed_gibbs_log_transition(z_from, z_to, data, lam, num_clusters, site_logits, *, reverse=False):
    """``log T(z_to | z_from)`` of :func:`collapsed_gibbs_sweep` (same site order and ``reverse``).

    The sweep is forced through the target: each site is removed with its starting value, scored under the
    statistics of the partially updated state, and put back with its target value; the site
    log-probabilities add up (one ``lax.scan``).
    """
    q = jnp.sum(data**2, axis=1)

    def site(carry, xs):
        stats, total = carry
        old, new, y, l, qi = xs
        stats = _shift(stats, jax.nn.one_hot(old, num_clusters, dtype=y.dtype), -1.0, l, y, qi)
        new_hot = jax.nn.one_hot(new, num_clusters, dtype=y.dtype)
        total = total + jnp.sum(new_hot * site_logits(stats, y, l))
        return (_shift(stats, new_hot, 1.0, l, y, qi), total), None

    init = (cluster_stats(z_from, data, lam, num_clusters), jnp.zeros((), data.dtype))
    return jax.lax.scan(site, init, (z_from, z_to, data, lam, q), reverse=reverse)[0][1]


def chain_rule_terms(z, data, term):
    """``log p(y_i | y_<i, z)`` for every row, from a collapsed cluster term ``term(W, S, Q)``."""
    n = z.shape[0]
    q = jnp.sum(data**2, axis=1)
    same = (z[:, None] == z[None, :]) & jnp.tril(jnp.ones((n, n), bool))  # j <= i, same cluster
    m = same.astype(data.dtype)
    W, S, Q = m.sum(1), m @ data, m @ q
    return term(W, S, Q) - term(W - 1.0, S - data, Q - q)


def predictive_gain(stats, y, l, term):
    """Change of each cluster's collapsed term when a row of weight ``l`` joins it (exactly 0 when l == 0)."""
    _, W, S, Q = stats
    gain = term(W + l, S + l * y, Q + l * jnp.sum(y**2)) - term(W, S, Q)
    return jnp.where(l == 0, 0.0, gain)


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
            raise ValueError(
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

    # ----- variational Bayes: q(z_i) categorical, q(theta_k) = N(m_k, v_k I) ---------------------------------

    @property
    def vb_log_symmetries(self) -> float:
        """``log k!``: the k components' relabelings leave the model unchanged (the VB+sym correction)."""
        return math.lgamma(self.k + 1)

    def vb_init(self, key, data):
        """Random responsibilities (a Dirichlet(1) draw per row), then the matching q(theta)."""
        r = jax.random.dirichlet(key, jnp.ones(self.k), (self.n,)).astype(data.dtype)
        return self._vb_theta(r, data)

    def vb_update(self, params, data):
        """One coordinate-ascent sweep: q(z) given q(theta) (Eq. 39), then q(theta) given q(z) (Eq. 40)."""
        r, m, v = params
        expected = -(jnp.sum((data[:, None, :] - m[None]) ** 2, axis=-1) + self.dim * v[None]) / (2 * self.sigma_noise**2)
        r = jax.nn.softmax(self.log_weights[None, :] + expected, axis=1)
        return self._vb_theta(r, data)

    def vb_bound(self, params, data):
        """The variational lower bound F(q) = E_q[log p(theta, z, y)] + H[q] (Eq. 38)."""
        r, m, v = params
        sn2, st2, d = self.sigma_noise**2, self.sigma_theta**2, self.dim
        sq = jnp.sum((data[:, None, :] - m[None]) ** 2, axis=-1) + d * v[None]
        log_lik = jnp.sum(r * (-0.5 * d * jnp.log(2 * jnp.pi * sn2) - 0.5 * sq / sn2))
        log_pz = jnp.sum(r * self.log_weights[None, :])
        log_ptheta = jnp.sum(-0.5 * d * jnp.log(2 * jnp.pi * st2) - 0.5 * (jnp.sum(m**2, axis=1) + d * v) / st2)
        entropy_z = -jnp.sum(jnp.where(r > 0, r * jnp.log(jnp.where(r > 0, r, 1.0)), 0.0))
        entropy_theta = jnp.sum(0.5 * d * jnp.log(2 * jnp.pi * jnp.e * v))
        return log_lik + log_pz + log_ptheta + entropy_z + entropy_theta

    def _vb_theta(self, r, data):
        precision = 1.0 / self.sigma_theta**2 + jnp.sum(r, axis=0) / self.sigma_noise**2
        m = (r.T @ data) / self.sigma_noise**2 / precision[:, None]
        return r, m, 1.0 / precision

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


@dataclass(frozen=True)
class CollapsedGibbs:
    """The collapsed Gibbs sweep of a clustering model as a kernel ``(key, latent, data, lam)``.

    ``model`` is a :class:`Clustering` or a :class:`ClusteringHyper` (any object with ``sweep`` and ``k``).
    """

    model: Any
    reverse: bool = False

    @property
    def evals_per_step(self) -> int:
        """Every site scores its row under all k clusters: k full-data likelihood evaluations per sweep."""
        return int(self.model.k)

    def __call__(self, key, latent, data, lam):
        if self.reverse:
            latent = self.model.sweep(key, latent, data, lam, reverse=True)
        else:  # models without a reverse sweep (ClusteringHyper) keep working forward
            latent = self.model.sweep(key, latent, data, lam)
        return latent, KernelInfo(jnp.ones((), jnp.result_type(float)))

    def log_transition(self, latent_from, latent_to, data, lam):
        """``log T(latent_to | latent_from)``: the sweep forced to the target, site log-probabilities summed."""
        self._require_transition_density()
        return self.model.sweep_log_transition(latent_from, latent_to, data, lam, reverse=self.reverse)

    def reversed(self) -> "CollapsedGibbs":
        """The reverse operator: the same site updates visited in the opposite order."""
        self._require_transition_density()
        return CollapsedGibbs(self.model, reverse=not self.reverse)

    def _require_transition_density(self):
        if not hasattr(self.model, "sweep_log_transition"):
            raise BDMCError(
                f"CollapsedGibbs of {type(self.model).__name__} has no transition density: the model lacks "
                "`sweep_log_transition`, which `log_transition` and `reversed` need"
            )


# ----- the hyperparameter-integrated variant (paper footnote 6) -----------------------------------------------


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
