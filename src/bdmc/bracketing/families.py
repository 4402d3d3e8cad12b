"""Exponential-family variational densities for bracketing (Ji, Shen, West, Secs. 2-3).

Each family is an immutable pytree whose array fields carry optional leading *batch* dimensions: a
``MultivariateNormal`` with ``mean`` of shape ``(k, d)`` is the product of ``k`` independent normals, one per
mixture component, and a ``Categorical`` with ``probs`` of shape ``(n, k)`` is the product of ``n``
per-observation categoricals. A draw has shape ``batch_shape + event_shape`` and ``log_prob`` sums over the
batch.

Every family provides

- ``fit(x)`` (classmethod): moment matching, Eq. (5). For an exponential family minimizing ``KL(p || q)``
  sets ``E_q[T] = E_p[T]``; ``x`` has shape ``(num_samples, *batch, *event)`` and the posterior expectation
  is the sample mean. This is also the maximum-likelihood fit to the samples.
- ``sample(key)``, ``log_prob(x)``;
- the natural-parameter machinery MCSA needs, per event: ``natural()`` (shape ``(*batch, dim)``),
  ``from_natural(eta)``, ``log_partition(eta_event)``, ``stats(x_event)``, ``log_base(x_event)``, with
  ``log q(x) = eta . T(x) - A(eta) + log h(x)``; ``valid()`` tells whether parameters lie in the domain.

Products of families keyed by parameter name (``MeanField``, ``fit_mean_field``) are in
:mod:`bdmc.bracketing.mean_field`; the compiled fits and the small linear algebra in :mod:`.moment_fits` and
:mod:`.numerics`.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma, gammaln, multigammaln

from ..errors import BDMCError, MissingCapabilityError
from .moment_fits import fit_dirichlet, fit_inverse_gamma, fit_inverse_wishart
from .numerics import lower_inverse, pd_cholesky, pd_inverse, pd_logdet, symmetrize, vmap_n

LOG_2PI = float(np.log(2 * np.pi))


def _pytree(cls):
    """Register a frozen dataclass as a pytree: array fields are leaves, ClassVars are not fields."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    return jax.tree_util.register_dataclass(cls, data_fields=names, meta_fields=[])


class Family:
    """Shared behaviour: batch handling around per-event primitives defined by each subclass."""

    event_ndim: ClassVar[int]
    _first: ClassVar[str]  # the field whose trailing ``_first_ndim`` axes are per-event
    _first_ndim: ClassVar[int]

    @property
    def batch_shape(self) -> tuple:
        arr = getattr(self, self._first)
        return tuple(arr.shape[: arr.ndim - self._first_ndim])

    def _params(self):
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    def log_prob(self, x):
        """Log density of one draw ``x`` (shape ``batch_shape + event_shape``), summed over the batch."""
        nb = len(self.batch_shape)
        return jnp.sum(vmap_n(type(self)._log_prob_event, nb)(x, *self._params()))

    def sample(self, key):
        """One draw, shape ``batch_shape + event_shape``."""
        nb = len(self.batch_shape)
        size = int(np.prod(self.batch_shape)) if nb else 1
        keys = key
        if nb:
            keys = jax.random.split(key, size)
            keys = keys.reshape(self.batch_shape + keys.shape[1:])
        return vmap_n(type(self)._sample_event, nb)(keys, *self._params())

    def natural(self):
        """Flat natural parameters, shape ``(*batch, dim)``."""
        return vmap_n(type(self)._natural_event, len(self.batch_shape))(*self._params())

    @classmethod
    def from_natural(cls, eta):
        """The family member with natural parameters ``eta`` (shape ``(*batch, dim)``)."""
        return cls(*vmap_n(cls._from_natural_event, eta.ndim - 1)(eta))

    def valid(self):
        """True when every factor's parameters lie in the family's parameter space."""
        return jnp.all(vmap_n(type(self)._valid_event, len(self.batch_shape))(*self._params()))

    @classmethod
    def _log_prob_via_natural(cls, x, *params):
        """``eta . T(x) - A(eta) + log h(x)`` for one event: the exponential-family form, for identity checks."""
        eta = cls._natural_event(*params)
        return eta @ cls.stats(x) - cls.log_partition(eta) + cls.log_base(x)


@_pytree
class MultivariateNormal(Family):
    """``N(mean, cov)`` on the last axis. ``T(x) = (x, vec(x x^T))``, ``eta = (P m, -vec(P) / 2)``."""

    mean: jax.Array
    cov: jax.Array

    event_ndim: ClassVar[int] = 1
    _first: ClassVar[str] = "mean"
    _first_ndim: ClassVar[int] = 1

    @classmethod
    def fit(cls, x):
        """Moment matching: the sample mean and the (1/N) sample covariance over axis 0."""
        x = jnp.asarray(x)
        if x.ndim < 2:
            raise BDMCError(f"MultivariateNormal.fit needs samples of shape (num_samples, ..., d), got {x.shape}")
        mean = jnp.mean(x, axis=0)
        r = x - mean
        cov = jnp.einsum("n...i,n...j->...ij", r, r) / x.shape[0]
        return cls(mean, symmetrize(cov))

    @staticmethod
    def _log_prob_event(x, mean, cov):
        chol = pd_cholesky(cov)
        w = lower_inverse(chol) @ (x - mean)
        return -0.5 * w @ w - jnp.sum(jnp.log(jnp.diag(chol))) - 0.5 * mean.shape[0] * LOG_2PI

    @staticmethod
    def _sample_event(key, mean, cov):
        return mean + pd_cholesky(cov) @ jax.random.normal(key, mean.shape)

    @staticmethod
    def _natural_event(mean, cov):
        prec = pd_inverse(cov)
        return jnp.concatenate([prec @ mean, (-0.5 * prec).ravel()])

    @staticmethod
    def _dim(size):
        return int(round((-1 + np.sqrt(1 + 4 * size)) / 2))

    @classmethod
    def _from_natural_event(cls, eta):
        d = cls._dim(eta.shape[0])
        prec = symmetrize(-2.0 * eta[d:].reshape(d, d))
        cov = pd_inverse(prec)
        return cov @ eta[:d], cov

    @classmethod
    def log_partition(cls, eta):
        d = cls._dim(eta.shape[0])
        prec = symmetrize(-2.0 * eta[d:].reshape(d, d))
        return 0.5 * eta[:d] @ pd_inverse(prec) @ eta[:d] - 0.5 * pd_logdet(prec)

    @staticmethod
    def stats(x):
        return jnp.concatenate([x, jnp.outer(x, x).ravel()])

    @staticmethod
    def log_base(x):
        return -0.5 * x.shape[0] * LOG_2PI

    @staticmethod
    def _valid_event(mean, cov):
        return jnp.all(jnp.isfinite(pd_cholesky(cov))) & jnp.all(jnp.isfinite(mean))


@_pytree
class InverseGamma(Family):
    """``IG(shape, scale)``: density ``b^a / Gamma(a) x^-(a+1) exp(-b / x)``. ``T(x) = (log x, 1 / x)``."""

    shape: jax.Array
    scale: jax.Array

    event_ndim: ClassVar[int] = 0
    _first: ClassVar[str] = "shape"
    _first_ndim: ClassVar[int] = 0

    @classmethod
    def fit(cls, x):
        """Moment matching of ``E[1/x] = a/b`` and ``E[log x] = log b - digamma(a)`` over axis 0.

        Eliminating ``b`` leaves ``log a - digamma(a) = E[log x] + log E[1/x]`` (positive by Jensen),
        decreasing in ``a``: solved by bisection on ``log a``.
        """
        x = jnp.asarray(x)
        if jnp.ndim(x) < 1:
            raise BDMCError("InverseGamma.fit needs samples of shape (num_samples, ...)")
        return cls(*fit_inverse_gamma(x))

    @staticmethod
    def _log_prob_event(x, a, b):
        return a * jnp.log(b) - gammaln(a) - (a + 1) * jnp.log(x) - b / x

    @staticmethod
    def _sample_event(key, a, b):
        return b / jax.random.gamma(key, a)

    @staticmethod
    def _natural_event(a, b):
        return jnp.stack([-(a + 1.0), -b])

    @staticmethod
    def _from_natural_event(eta):
        return -eta[0] - 1.0, -eta[1]

    @staticmethod
    def log_partition(eta):
        a, b = -eta[0] - 1.0, -eta[1]
        return gammaln(a) - a * jnp.log(b)

    @staticmethod
    def stats(x):
        return jnp.stack([jnp.log(x), 1.0 / x])

    @staticmethod
    def log_base(x):
        return jnp.zeros_like(x)

    @staticmethod
    def _valid_event(a, b):
        return (a > 0) & (b > 0)


@_pytree
class InverseWishart(Family):
    """``IW(df, scale)`` on ``p x p`` matrices: ``|S|^{-(df+p+1)/2} exp(-tr(scale S^-1) / 2)``, up to its constant.

    ``T(S) = (vec(S^-1), log|S|)``, ``eta = (-vec(scale) / 2, -(df + p + 1) / 2)``.
    """

    df: jax.Array
    scale: jax.Array

    event_ndim: ClassVar[int] = 2
    _first: ClassVar[str] = "df"
    _first_ndim: ClassVar[int] = 0

    @staticmethod
    def _expected_logdet_const(df, p):
        i = jnp.arange(1, p + 1)
        return -p * jnp.log(2.0) - jnp.sum(digamma((df - i + 1) / 2.0))

    @classmethod
    def fit(cls, x):
        """Moment matching of ``E[S^-1] = df scale^-1`` and ``E[log|S|] = log|scale| - p log 2 - sum digamma``.

        With ``scale = df M^-1`` (``M = E[S^-1]``) this leaves one decreasing equation in ``df > p - 1``,
        ``p log(df / 2) - sum_i digamma((df - i + 1) / 2) = E[log|S|] + log|M|``: bisection on ``log(df - p + 1)``.
        """
        x = jnp.asarray(x)
        if x.ndim < 3 or x.shape[-1] != x.shape[-2]:
            raise BDMCError(f"InverseWishart.fit needs samples of shape (num_samples, ..., p, p), got {x.shape}")
        return cls(*fit_inverse_wishart(x))

    @classmethod
    def _log_prob_event(cls, x, df, scale):
        p = x.shape[-1]
        return (
            0.5 * df * pd_logdet(scale) - 0.5 * df * p * jnp.log(2.0) - multigammaln(0.5 * df, p)
            - 0.5 * (df + p + 1) * pd_logdet(x) - 0.5 * jnp.trace(pd_inverse(x) @ scale)
        )

    @staticmethod
    def _sample_event(key, df, scale):
        # Bartlett: W = L A A^T L^T ~ Wishart(df, scale^-1) with L L^T = scale^-1; then S = W^-1.
        p = scale.shape[-1]
        k1, k2 = jax.random.split(key)
        chi2 = 2.0 * jax.random.gamma(k1, (df - jnp.arange(p)) / 2.0)
        A = jnp.tril(jax.random.normal(k2, (p, p)), -1) + jnp.diag(jnp.sqrt(chi2))
        L = pd_cholesky(pd_inverse(scale))
        LA = L @ A
        return pd_inverse(LA @ LA.T)

    @staticmethod
    def _natural_event(df, scale):
        p = scale.shape[-1]
        return jnp.concatenate([(-0.5 * scale).ravel(), jnp.stack([-(df + p + 1) / 2.0])])

    @staticmethod
    def _p(size):
        return int(round(np.sqrt(size - 1)))

    @classmethod
    def _from_natural_event(cls, eta):
        p = cls._p(eta.shape[0])
        return -2.0 * eta[-1] - p - 1, symmetrize(-2.0 * eta[:-1].reshape(p, p))

    @classmethod
    def log_partition(cls, eta):
        p = cls._p(eta.shape[0])
        df, scale = cls._from_natural_event(eta)
        return multigammaln(0.5 * df, p) + 0.5 * df * p * jnp.log(2.0) - 0.5 * df * pd_logdet(scale)

    @staticmethod
    def stats(x):
        return jnp.concatenate([pd_inverse(x).ravel(), jnp.stack([pd_logdet(x)])])

    @staticmethod
    def log_base(x):
        return jnp.zeros(())

    @staticmethod
    def _valid_event(df, scale):
        p = scale.shape[-1]
        return (df > p - 1) & jnp.all(jnp.isfinite(pd_cholesky(scale)))

    def expected_inverse(self):
        """``E[S^-1] = df scale^-1`` (for coordinate-ascent updates)."""
        return self.df[..., None, None] * pd_inverse(self.scale)

    def expected_logdet(self):
        """``E[log|S|]``."""
        p = self.scale.shape[-1]
        const = vmap_n(lambda d: self._expected_logdet_const(d, p), self.df.ndim)(self.df)
        return pd_logdet(self.scale) + const


@_pytree
class Dirichlet(Family):
    """``Dir(alpha)`` on the last axis. ``T(x) = log x``, ``eta = alpha - 1``."""

    alpha: jax.Array

    event_ndim: ClassVar[int] = 1
    _first: ClassVar[str] = "alpha"
    _first_ndim: ClassVar[int] = 1

    @classmethod
    def fit(cls, x, *, iterations: int = 2000):
        """Moment matching of ``E[log x_j] = digamma(alpha_j) - digamma(sum alpha)`` (Minka's fixed point)."""
        x = jnp.asarray(x)
        if x.ndim < 2:
            raise BDMCError(f"Dirichlet.fit needs samples of shape (num_samples, ..., k), got {x.shape}")
        return cls(fit_dirichlet(x, iterations))

    @staticmethod
    def _log_prob_event(x, alpha):
        return gammaln(jnp.sum(alpha)) - jnp.sum(gammaln(alpha)) + jnp.sum((alpha - 1) * jnp.log(x))

    @staticmethod
    def _sample_event(key, alpha):
        return jax.random.dirichlet(key, alpha)

    @staticmethod
    def _natural_event(alpha):
        return alpha - 1.0

    @staticmethod
    def _from_natural_event(eta):
        return (eta + 1.0,)

    @staticmethod
    def log_partition(eta):
        return jnp.sum(gammaln(eta + 1.0)) - gammaln(jnp.sum(eta + 1.0))

    @staticmethod
    def stats(x):
        return jnp.log(x)

    @staticmethod
    def log_base(x):
        return jnp.zeros(())

    @staticmethod
    def _valid_event(alpha):
        return jnp.all(alpha > 0)


@_pytree
class Categorical(Family):
    """A product of categoricals on ``{0, ..., k-1}``: ``probs`` has shape ``(*batch, k)``; a draw ``batch_shape``.

    ``T(z) = onehot(z)``, ``eta = log probs``. With one factor per observation this is the paper's
    ``prod_i Mn(z_i | 1, w_i)``.
    """

    probs: jax.Array

    event_ndim: ClassVar[int] = 0
    _first: ClassVar[str] = "probs"
    _first_ndim: ClassVar[int] = 1

    @classmethod
    def fit(cls, x, *, num_classes: int, pseudo_count: float = 0.0):
        """Moment matching: ``w_ij`` = frequency of ``z_i = j`` over axis 0 (plus ``pseudo_count`` per class).

        With ``pseudo_count = 0`` a class never seen in ``x`` gets probability zero, so ``log q = -inf`` for any
        draw that uses it; a small pseudo-count keeps a bound evaluated on held-out samples finite.
        """
        x = jnp.asarray(x)
        if x.ndim < 1 or not jnp.issubdtype(x.dtype, jnp.integer):
            raise BDMCError(
                f"Categorical.fit needs integer samples of shape (num_samples, ...), got {x.dtype} {x.shape}")
        # Scatter-add rather than a (num_samples, *batch, k) one-hot array: n = 600 labels x 10^4 draws is large.
        flat = x.reshape(x.shape[0], -1)
        counts = jnp.zeros((flat.shape[1], num_classes)).at[jnp.arange(flat.shape[1])[None, :], flat].add(1.0)
        counts = counts.reshape(x.shape[1:] + (num_classes,)) + pseudo_count
        return cls(counts / jnp.sum(counts, axis=-1, keepdims=True))

    @staticmethod
    def _log_prob_event(x, probs):
        return jnp.log(probs[x])

    @staticmethod
    def _sample_event(key, probs):
        return jax.random.categorical(key, jnp.log(probs))

    @staticmethod
    def _natural_event(probs):
        return jnp.log(probs)

    @staticmethod
    def _from_natural_event(eta):
        return (jax.nn.softmax(eta),)

    @staticmethod
    def log_partition(eta):
        return jax.nn.logsumexp(eta)

    @staticmethod
    def stats(x):
        raise MissingCapabilityError("Categorical statistics need the number of classes: use stats_of",
                                     missing=("stats",))

    @staticmethod
    def log_base(x):
        return jnp.zeros(())

    @staticmethod
    def _valid_event(probs):
        return jnp.all(probs >= 0) & jnp.all(jnp.isfinite(probs))

    def stats_of(self, x):
        """One-hot statistics of a draw ``x`` (shape ``batch_shape``), shape ``(*batch, k)``."""
        return jax.nn.one_hot(x, self.probs.shape[-1], dtype=jnp.float64)

    @classmethod
    def _log_prob_via_natural(cls, x, probs):
        eta = jnp.log(probs)
        return jnp.where(probs[x] > 0, eta[x] - cls.log_partition(eta), -jnp.inf)


FAMILIES: dict[str, type[Family]] = {
    "normal": MultivariateNormal,
    "mvn": MultivariateNormal,
    "multivariate_normal": MultivariateNormal,
    "inverse_gamma": InverseGamma,
    "inverse_wishart": InverseWishart,
    "dirichlet": Dirichlet,
    "categorical": Categorical,
}


def stats_of(q: Family, x):
    """Sufficient statistics of one draw ``x`` of ``q``, shape ``(*batch, dim)``."""
    if isinstance(q, Categorical):
        return q.stats_of(x)
    return vmap_n(type(q).stats, len(q.batch_shape))(x)


def resolve(spec) -> type[Family]:
    """A family class from a name (``"normal"``, ``"inverse_gamma"``, ...) or the class itself."""
    if isinstance(spec, str):
        try:
            return FAMILIES[spec.lower()]
        except KeyError:
            raise BDMCError(f"unknown variational family {spec!r}; choose one of {sorted(FAMILIES)}") from None
    if isinstance(spec, type) and issubclass(spec, Family):
        return spec
    raise BDMCError(f"a variational family must be a name, a Family class or a fitted Family, got {spec!r}")
