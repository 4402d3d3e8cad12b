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

``MeanField`` is a product of families keyed by parameter name.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar, Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma, gammaln, multigammaln, polygamma

from ..errors import BDMCError

LOG_2PI = float(np.log(2 * np.pi))


def _pytree(cls):
    """Register a frozen dataclass as a pytree: array fields are leaves, ClassVars are not fields."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    return jax.tree_util.register_dataclass(cls, data_fields=names, meta_fields=[])


def _vmap_n(fn, n):
    for _ in range(n):
        fn = jax.vmap(fn)
    return fn


def _bisect_decreasing(f, target, lo, hi, iters=200):
    """Solve the decreasing scalar equation ``f(u) = target`` for ``u`` in ``[lo, hi]`` by bisection.

    Fixed iteration count, so it is jit/vmap friendly and cannot diverge.
    """

    def body(_, bounds):
        a, b = bounds
        mid = 0.5 * (a + b)
        above = f(mid) > target  # still left of the root
        return jnp.where(above, mid, a), jnp.where(above, b, mid)

    a, b = jax.lax.fori_loop(0, iters, body, (jnp.asarray(lo, jnp.float64), jnp.asarray(hi, jnp.float64)))
    return 0.5 * (a + b)


def _sym(m):
    return 0.5 * (m + jnp.swapaxes(m, -1, -2))


def _logdet_pd(m):
    return pd_logdet(m)


# Small dense linear algebra as plain XLA ops. Under vmap, jnp.linalg.cholesky / inv / solve / slogdet / eigh
# lower to batched LAPACK custom calls, which stalled jaxlib 0.10's CPU thread pool (every thread waiting) on
# a 2-core machine. Event matrices here are small, so the factorizations are unrolled; above SMALL the
# LAPACK versions are used.
SMALL = 24


def pd_cholesky(m):
    """Lower Cholesky factor of a (batch of) symmetric positive definite matrices (NaN when not PD)."""
    d = m.shape[-1]
    if d > SMALL:
        return jnp.linalg.cholesky(m)
    L = [[None] * d for _ in range(d)]
    for j in range(d):
        diag = m[..., j, j] - sum((L[j][k] ** 2 for k in range(j)), jnp.zeros_like(m[..., 0, 0]))
        L[j][j] = jnp.sqrt(jnp.where(diag > 0, diag, jnp.nan))
        for i in range(j + 1, d):
            off = m[..., i, j] - sum((L[i][k] * L[j][k] for k in range(j)), jnp.zeros_like(m[..., 0, 0]))
            L[i][j] = off / L[j][j]
    zero = jnp.zeros_like(m[..., 0, 0])
    return jnp.stack([jnp.stack([L[i][j] if j <= i else zero for j in range(d)], -1) for i in range(d)], -2)


def _lower_inverse(L):
    """Inverse of a lower-triangular matrix by forward substitution."""
    d = L.shape[-1]
    if d > SMALL:
        eye = jnp.broadcast_to(jnp.eye(d, dtype=L.dtype), L.shape)
        return jax.scipy.linalg.solve_triangular(L, eye, lower=True)
    rows = []
    for i in range(d):
        row = jnp.zeros(L.shape[:-2] + (d,), L.dtype).at[..., i].set(1.0)
        for j in range(i):
            row = row - L[..., i, j][..., None] * rows[j]
        rows.append(row / L[..., i, i][..., None])
    return jnp.stack(rows, axis=-2)


def pd_inverse(m):
    """Inverse of a (batch of) symmetric positive definite matrices via :func:`pd_cholesky`."""
    Linv = _lower_inverse(pd_cholesky(m))
    return _sym(jnp.swapaxes(Linv, -1, -2) @ Linv)


def pd_logdet(m):
    """``log|m|`` of a (batch of) symmetric positive definite matrices."""
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(pd_cholesky(m), axis1=-2, axis2=-1)), axis=-1)


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
        return jnp.sum(_vmap_n(type(self)._log_prob_event, nb)(x, *self._params()))

    def sample(self, key):
        """One draw, shape ``batch_shape + event_shape``."""
        nb = len(self.batch_shape)
        size = int(np.prod(self.batch_shape)) if nb else 1
        keys = key
        if nb:
            keys = jax.random.split(key, size)
            keys = keys.reshape(self.batch_shape + keys.shape[1:])
        return _vmap_n(type(self)._sample_event, nb)(keys, *self._params())

    def natural(self):
        """Flat natural parameters, shape ``(*batch, dim)``."""
        return _vmap_n(type(self)._natural_event, len(self.batch_shape))(*self._params())

    @classmethod
    def from_natural(cls, eta):
        """The family member with natural parameters ``eta`` (shape ``(*batch, dim)``)."""
        return cls(*_vmap_n(cls._from_natural_event, eta.ndim - 1)(eta))

    def valid(self):
        """True when every factor's parameters lie in the family's parameter space."""
        return jnp.all(_vmap_n(type(self)._valid_event, len(self.batch_shape))(*self._params()))

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
        return cls(mean, _sym(cov))

    @staticmethod
    def _log_prob_event(x, mean, cov):
        chol = pd_cholesky(cov)
        w = _lower_inverse(chol) @ (x - mean)
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
        prec = _sym(-2.0 * eta[d:].reshape(d, d))
        cov = pd_inverse(prec)
        return cov @ eta[:d], cov

    @classmethod
    def log_partition(cls, eta):
        d = cls._dim(eta.shape[0])
        prec = _sym(-2.0 * eta[d:].reshape(d, d))
        return 0.5 * eta[:d] @ pd_inverse(prec) @ eta[:d] - 0.5 * _logdet_pd(prec)

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
        return cls(*_fit_inverse_gamma(x))

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
        return cls(*_fit_inverse_wishart(x))

    @classmethod
    def _log_prob_event(cls, x, df, scale):
        p = x.shape[-1]
        return (
            0.5 * df * _logdet_pd(scale) - 0.5 * df * p * jnp.log(2.0) - multigammaln(0.5 * df, p)
            - 0.5 * (df + p + 1) * _logdet_pd(x) - 0.5 * jnp.trace(pd_inverse(x) @ scale)
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
        return -2.0 * eta[-1] - p - 1, _sym(-2.0 * eta[:-1].reshape(p, p))

    @classmethod
    def log_partition(cls, eta):
        p = cls._p(eta.shape[0])
        df, scale = cls._from_natural_event(eta)
        return multigammaln(0.5 * df, p) + 0.5 * df * p * jnp.log(2.0) - 0.5 * df * _logdet_pd(scale)

    @staticmethod
    def stats(x):
        return jnp.concatenate([pd_inverse(x).ravel(), jnp.stack([_logdet_pd(x)])])

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
        const = _vmap_n(lambda d: self._expected_logdet_const(d, p), self.df.ndim)(self.df)
        return _logdet_pd(self.scale) + const


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
        return cls(_fit_dirichlet(x, iterations))

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


def _inv_digamma(y, newton: int = 8):
    """Inverse of the digamma function (Minka's initialization and Newton steps)."""
    x = jnp.where(y >= -2.22, jnp.exp(y) + 0.5, -1.0 / (y - digamma(1.0)))
    for _ in range(newton):
        x = x - (digamma(x) - y) / polygamma(1, x)
    return x


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
            raise BDMCError(f"Categorical.fit needs integer samples of shape (num_samples, ...), got {x.dtype} {x.shape}")
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
        raise NotImplementedError("Categorical statistics need the number of classes: use stats_of")

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
    return _vmap_n(type(q).stats, len(q.batch_shape))(x)


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


@jax.tree_util.register_pytree_node_class
class MeanField:
    """A product ``q(theta) = prod_name q_name(theta[name])`` of families keyed by parameter name."""

    def __init__(self, factors: Mapping[str, Family]):
        if not factors:
            raise BDMCError("a MeanField needs at least one factor")
        for name, f in factors.items():
            if not isinstance(f, Family):
                raise BDMCError(f"MeanField factor {name!r} is not a fitted Family: {f!r}")
        self.factors = dict(factors)

    def tree_flatten(self):
        names = tuple(self.factors)
        return tuple(self.factors[n] for n in names), names

    @classmethod
    def tree_unflatten(cls, names, children):
        obj = object.__new__(cls)
        obj.factors = dict(zip(names, children))
        return obj

    def __getitem__(self, name):
        return self.factors[name]

    def __repr__(self):
        inner = ", ".join(f"{n}: {type(f).__name__}{f.batch_shape}" for n, f in self.factors.items())
        return f"MeanField({inner})"

    def log_prob(self, theta: Mapping):
        """``log q(theta)`` for one draw (a dict with one entry per factor)."""
        return sum(f.log_prob(theta[n]) for n, f in self.factors.items())

    def sample(self, key):
        """One draw: a dict with one entry per factor."""
        keys = jax.random.split(key, len(self.factors))
        return {n: f.sample(k) for (n, f), k in zip(self.factors.items(), keys)}

    def natural(self):
        return {n: f.natural() for n, f in self.factors.items()}

    def from_natural(self, eta: Mapping):
        """A MeanField of the same families with natural parameters ``eta``."""
        return MeanField({n: type(f).from_natural(eta[n]) for n, f in self.factors.items()})

    def valid(self):
        return jnp.all(jnp.stack([f.valid() for f in self.factors.values()]))

    def replace(self, **factors):
        return MeanField({**self.factors, **factors})


def fit_mean_field(samples: Mapping, family: Mapping, *, pseudo_count: float = 0.0) -> MeanField:
    """Moment-match one family per named parameter (Eq. 5).

    Parameters
    ----------
    samples : mapping of str to array
        Posterior draws, each ``(num_samples, ...)``.
    family : mapping of str to family
        A name (``"normal"``, ``"inverse_gamma"``, ``"inverse_wishart"``, ``"dirichlet"``, ``"categorical"``),
        a :class:`Family` subclass, or an already fitted :class:`Family` (used as it is). For a categorical
        the number of classes is read from ``num_classes[name]`` when the spec is ``("categorical", k)``,
        else taken as one more than the largest label seen.
    pseudo_count : float
        Added to every categorical count (see :meth:`Categorical.fit`).

    Returns
    -------
    MeanField
    """
    factors = {}
    for name, spec in family.items():
        if isinstance(spec, Family):
            factors[name] = spec
            continue
        if name not in samples:
            raise BDMCError(f"family names parameter {name!r}, but the samples only have {sorted(samples)}")
        num_classes = None
        if isinstance(spec, tuple):
            spec, num_classes = spec
        cls = resolve(spec)
        x = samples[name]
        if cls is Categorical:
            k = int(num_classes) if num_classes is not None else int(np.max(np.asarray(x))) + 1
            factors[name] = Categorical.fit(x, num_classes=k, pseudo_count=pseudo_count)
        else:
            factors[name] = cls.fit(x)
    return MeanField(factors)


# Module-level compiled fits: compiled once per input shape, not once per call.


@jax.jit
def _fit_inverse_gamma(x):
    m_inv, m_log = jnp.mean(1.0 / x, axis=0), jnp.mean(jnp.log(x), axis=0)
    c = m_log + jnp.log(m_inv)
    solve = lambda cc: jnp.exp(_bisect_decreasing(lambda u: u - digamma(jnp.exp(u)), cc, -30.0, 40.0))  # noqa: E731
    shape = _vmap_n(solve, c.ndim)(c)
    return shape, shape / m_inv


@jax.jit
def _fit_inverse_wishart(x):
    p = x.shape[-1]
    M = _sym(jnp.mean(pd_inverse(x), axis=0))
    target = jnp.mean(_logdet_pd(x), axis=0) + _logdet_pd(M)

    def lhs(u):
        df = p - 1 + jnp.exp(u)
        return p * jnp.log(df / 2.0) - jnp.sum(digamma((df - jnp.arange(1, p + 1) + 1) / 2.0))

    solve = lambda t: p - 1 + jnp.exp(_bisect_decreasing(lhs, t, -30.0, 40.0))  # noqa: E731
    df = _vmap_n(solve, target.ndim)(target)
    return df, _sym(df[..., None, None] * pd_inverse(M))


@functools.partial(jax.jit, static_argnums=1)
def _fit_dirichlet(x, iterations):
    s = jnp.mean(jnp.log(x), axis=0)
    m, m2 = jnp.mean(x, axis=0), jnp.mean(x**2, axis=0)
    # Method-of-moments start: alpha_0 = (m - m2) / (m2 - m^2), averaged over coordinates.
    a0 = jnp.mean((m - m2) / jnp.maximum(m2 - m**2, 1e-300), axis=-1, keepdims=True)
    alpha = jnp.maximum(m * a0, 1e-3)

    def step(_, a):
        return _inv_digamma(digamma(jnp.sum(a, axis=-1, keepdims=True)) + s)

    return jax.lax.fori_loop(0, iterations, step, alpha)
