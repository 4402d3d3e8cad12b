"""Collapsed and uncollapsed Gaussian matrix factorization in NumPyro, PyMC and Stan (BREAD paper, Sec. 5.2.1).

The model approximates an ``N x D`` matrix ``Y`` by the product of ``U`` (``N x K``) and ``V`` (``K x D``),
with every hyperparameter fixed to 1::

    u_ik ~ N(0, 1)      v_kj ~ N(0, 1)      y_ij | u_i, v_j ~ N(u_i . v_j, 1)

Integrating ``U`` out gives the *collapsed* representation, whose only latent is ``V``::

    v_kj ~ N(0, 1)      y_i | V ~ N(0, V^T V + I)   (rows independent given V)

Both representations score the same data ``{"Y": (N, D)}`` and, in NumPyro and PyMC, one log-likelihood term
per row of ``Y`` (the data cases). Stan reports the likelihood as one term (see :mod:`bdmc.ppl.stan`).

Because ``(U, V)`` drawn from the joint is an exact posterior draw of the uncollapsed model given the data it
generated, its ``V`` is an exact posterior draw of the collapsed model: :func:`simulate_shared` simulates one
data set and exact sample that every representation and PPL can share, and :func:`latent_from_factors` maps
``(U, V)`` to each model's latent format (:func:`factors_from_latent` maps back).

Latent formats (all parameters are unconstrained reals, so no transform is involved):

- NumPyro and PyMC: ``{"U": (N, K), "V": (K, D)}`` uncollapsed, ``{"V": (K, D)}`` collapsed;
- Stan: Stan's flat unconstrained vector, each matrix in column-major order, ``U`` before ``V``.

pymc and pystan are imported only when a model in them is built (extras ``pymc`` and ``stan``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError, DataError, require
from ..ppl import registry

PPLS = ("numpyro", "pymc", "stan")  # the languages the study's programs are written in (keys of registry.PPLS)
REPRESENTATIONS = ("collapsed", "uncollapsed")
OBSERVED = "Y"

# The Stan programs: bdmc_lambda multiplies the likelihood only; every density is a normalized _lpdf. Both
# representations score the same data, so they share one data block.
_STAN_DATA = """
data {
  int<lower=1> N;
  int<lower=1> D;
  int<lower=1> K;
  matrix[N, D] Y;
  real<lower=0, upper=1> bdmc_lambda;
}
"""

UNCOLLAPSED_STAN = _STAN_DATA + """parameters {
  matrix[N, K] U;
  matrix[K, D] V;
}
model {
  target += std_normal_lpdf(to_vector(U));
  target += std_normal_lpdf(to_vector(V));
  target += bdmc_lambda * normal_lpdf(to_vector(Y) | to_vector(U * V), 1);
}
"""

COLLAPSED_STAN = _STAN_DATA + """parameters {
  matrix[K, D] V;
}
model {
  target += std_normal_lpdf(to_vector(V));
  {
    matrix[D, D] L = cholesky_decompose(add_diag(crossprod(V), 1.0));
    row_vector[D] zero = rep_row_vector(0, D);
    real loglik = 0;
    for (i in 1:N) {
      loglik += multi_normal_cholesky_lpdf(Y[i] | zero, L);
    }
    target += bdmc_lambda * loglik;
  }
}
"""


class SharedSample(NamedTuple):
    """One simulated data set and the exact sample that generated it.

    Attributes
    ----------
    data : dict
        ``{"Y": (N, D)}``, the data of every representation and PPL.
    U : jax.Array (N, K)
    V : jax.Array (K, D)
        The factors that generated ``Y``; ``(U, V)`` is an exact posterior draw of the uncollapsed model and
        ``V`` one of the collapsed model.
    """

    data: dict
    U: jax.Array
    V: jax.Array


# ------------------------------------------------------------------------------------------------ programs

def _numpyro():
    numpyro = require("numpyro", extra=registry.PPLS["numpyro"].extra)
    return numpyro, numpyro.distributions


def uncollapsed_program(num_rows, num_cols, latent_dim, Y=None):
    """NumPyro: ``U``, ``V`` with standard normal entries; each row ``y_i ~ N(u_i V, I)``."""
    numpyro, dist = _numpyro()
    U = numpyro.sample("U", dist.Normal(0.0, 1.0).expand([num_rows, latent_dim]).to_event(2))
    V = numpyro.sample("V", dist.Normal(0.0, 1.0).expand([latent_dim, num_cols]).to_event(2))
    with numpyro.plate("rows", num_rows):
        numpyro.sample(OBSERVED, dist.Normal(U @ V, 1.0).to_event(1), obs=Y)


def collapsed_program(num_rows, num_cols, latent_dim, Y=None):
    """NumPyro: ``V`` with standard normal entries; each row ``y_i ~ N(0, V^T V + I)`` (``U`` integrated out)."""
    numpyro, dist = _numpyro()
    V = numpyro.sample("V", dist.Normal(0.0, 1.0).expand([latent_dim, num_cols]).to_event(2))
    cov = V.T @ V + jnp.eye(num_cols)
    with numpyro.plate("rows", num_rows):
        numpyro.sample(OBSERVED, dist.MultivariateNormal(jnp.zeros(num_cols), covariance_matrix=cov), obs=Y)


def _pymc_model(representation, num_rows, num_cols, latent_dim):
    pm = require("pymc", extra=registry.PPLS["pymc"].extra)
    pt = require("pytensor.tensor", extra=registry.PPLS["pymc"].extra)
    placeholder = np.zeros((num_rows, num_cols))
    with pm.Model(name="") as model:
        if representation == "uncollapsed":
            U = pm.Normal("U", 0.0, 1.0, shape=(num_rows, latent_dim))
            V = pm.Normal("V", 0.0, 1.0, shape=(latent_dim, num_cols))
            pm.Normal(OBSERVED, mu=pt.dot(U, V), sigma=1.0, observed=placeholder)
        else:
            V = pm.Normal("V", 0.0, 1.0, shape=(latent_dim, num_cols))
            cov = pt.dot(V.T, V) + pt.eye(num_cols)
            pm.MvNormal(OBSERVED, mu=np.zeros(num_cols), cov=cov, observed=placeholder)
    return model


def _stan_simulator(representation, num_rows, num_cols, latent_dim):
    """``simulate(rng, params=None)`` for :func:`bdmc.ppl.from_stan`, in numpy."""

    def simulate(rng, params=None):
        if params is None:
            params = {"V": rng.normal(size=(latent_dim, num_cols))}
            if representation == "uncollapsed":
                params = {"U": rng.normal(size=(num_rows, latent_dim)), **params}
        V = np.asarray(params["V"])
        # Collapsed: y_i ~ N(0, V^T V + I) drawn as u_i V + noise with a fresh u_i ~ N(0, I).
        U = np.asarray(params["U"]) if representation == "uncollapsed" else rng.normal(size=(num_rows, latent_dim))
        return params, {OBSERVED: U @ V + rng.normal(size=(num_rows, num_cols))}

    return simulate


# ------------------------------------------------------------------------------------------------ builders

def _check_sizes(ppl, num_rows, num_cols, latent_dim):
    if ppl not in PPLS:
        raise BDMCError(f"unknown ppl {ppl!r}; choose one of {list(PPLS)}")
    for name, value in (("num_rows", num_rows), ("num_cols", num_cols), ("latent_dim", latent_dim)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise DataError(f"{name} must be a positive integer, got {value!r}")
    return int(num_rows), int(num_cols), int(latent_dim)


def _build(representation, ppl, num_rows, num_cols, latent_dim):
    N, D, K = _check_sizes(ppl, num_rows, num_cols, latent_dim)
    if ppl == "numpyro":
        from ..ppl import from_numpyro

        program = uncollapsed_program if representation == "uncollapsed" else collapsed_program
        return from_numpyro(program, N, D, K, observed=OBSERVED)
    if ppl == "pymc":
        from ..ppl import from_pymc

        return from_pymc(_pymc_model(representation, N, D, K), observed=OBSERVED)
    from ..ppl import from_stan

    code = UNCOLLAPSED_STAN if representation == "uncollapsed" else COLLAPSED_STAN
    return from_stan(code, data={"N": N, "D": D, "K": K, OBSERVED: np.zeros((N, D))}, observed=OBSERVED,
                     simulate=_stan_simulator(representation, N, D, K))


def uncollapsed(ppl: str = "numpyro", *, num_rows: int = 50, num_cols: int = 25, latent_dim: int = 5):
    """The uncollapsed matrix factorization model (latents ``U`` and ``V``) written in ``ppl``.

    Parameters
    ----------
    ppl : {"numpyro", "pymc", "stan"}
        The language the model is written in (see :mod:`bdmc.ppl`).
    num_rows, num_cols, latent_dim : int
        ``N``, ``D`` and ``K`` (50, 25 and 5 in the paper).

    Returns
    -------
    bdmc.ppl.NumPyroModel, bdmc.ppl.PyMCModel or bdmc.ppl.StanModel
        Data ``{"Y": (N, D)}``; latents as in :func:`latent_from_factors`. NumPyro and PyMC score one
        log-likelihood term per row of ``Y``; Stan one term in all.

    Raises
    ------
    bdmc.MissingExtraError
        When the PPL is not installed.
    bdmc.BDMCError, bdmc.DataError
        For an unknown ``ppl`` or a size that is not a positive integer.
    """
    return _build("uncollapsed", ppl, num_rows, num_cols, latent_dim)


def collapsed(ppl: str = "numpyro", *, num_rows: int = 50, num_cols: int = 25, latent_dim: int = 5):
    """The collapsed matrix factorization model (``U`` integrated out, latent ``V``) written in ``ppl``.

    Each row of ``Y`` is ``N(0, V^T V + I)`` given ``V``, independently of the other rows.

    Parameters
    ----------
    ppl : {"numpyro", "pymc", "stan"}
    num_rows, num_cols, latent_dim : int
        ``N``, ``D`` and ``K`` (50, 25 and 5 in the paper).

    Returns
    -------
    bdmc.ppl.NumPyroModel, bdmc.ppl.PyMCModel or bdmc.ppl.StanModel
        Data ``{"Y": (N, D)}``; latents as in :func:`latent_from_factors`.
    """
    return _build("collapsed", ppl, num_rows, num_cols, latent_dim)


def build(representation: str, ppl: str = "numpyro", *, num_rows: int = 50, num_cols: int = 25,
          latent_dim: int = 5):
    """:func:`collapsed` or :func:`uncollapsed` by name (``representation`` in ``REPRESENTATIONS``)."""
    _check_representation(representation)
    return _build(representation, ppl, num_rows, num_cols, latent_dim)


def _check_representation(representation):
    if representation not in REPRESENTATIONS:
        raise BDMCError(f"unknown representation {representation!r}; choose one of {list(REPRESENTATIONS)}")


# ------------------------------------------------------------------------------------------------ shared sample

def simulate_shared(key, *, num_rows: int = 50, num_cols: int = 25, latent_dim: int = 5) -> SharedSample:
    """Simulate one data set and exact sample that every representation and PPL can share.

    Draws ``U``, ``V`` from their standard normal priors and ``Y = U V + E`` with standard normal noise:
    a draw from the uncollapsed model's joint, hence ``(U, V)`` is an exact posterior sample given ``Y`` (and
    ``V`` an exact posterior sample of the collapsed model, whose joint is the marginal of ``(V, Y)``).

    Parameters
    ----------
    key : PRNG key
    num_rows, num_cols, latent_dim : int

    Returns
    -------
    SharedSample
    """
    N, D, K = _check_sizes("numpyro", num_rows, num_cols, latent_dim)
    k_u, k_v, k_y = jax.random.split(key, 3)
    U = jax.random.normal(k_u, (N, K))
    V = jax.random.normal(k_v, (K, D))
    Y = U @ V + jax.random.normal(k_y, (N, D))
    return SharedSample(data={OBSERVED: Y}, U=U, V=V)


def latent_from_factors(ppl: str, representation: str, U, V):
    """The latent of the ``representation`` model written in ``ppl`` that holds the factors ``(U, V)``.

    Parameters
    ----------
    ppl : {"numpyro", "pymc", "stan"}
    representation : {"collapsed", "uncollapsed"}
    U : array (N, K) or None
        Ignored (may be None) for the collapsed representation.
    V : array (K, D)

    Returns
    -------
    dict or jax.Array
        ``{"U": U, "V": V}`` / ``{"V": V}`` for NumPyro and PyMC; Stan's flat unconstrained vector
        (column-major ``U`` then ``V``) for Stan.
    """
    _check_representation(representation)
    if ppl not in PPLS:
        raise BDMCError(f"unknown ppl {ppl!r}; choose one of {list(PPLS)}")
    V = jnp.asarray(V, jnp.float64)
    if representation == "uncollapsed":
        if U is None:
            raise BDMCError("the uncollapsed representation needs U as well as V")
        U = jnp.asarray(U, jnp.float64)
    if ppl == "stan":
        parts = ([U.T.ravel()] if representation == "uncollapsed" else []) + [V.T.ravel()]
        return jnp.concatenate(parts)
    return {"U": U, "V": V} if representation == "uncollapsed" else {"V": V}


def factors_from_latent(ppl: str, representation: str, latent, *, num_rows: int = 50, num_cols: int = 25,
                        latent_dim: int = 5):
    """The inverse of :func:`latent_from_factors`: ``(U, V)``, with ``U = None`` for the collapsed model."""
    _check_representation(representation)
    N, D, K = _check_sizes(ppl, num_rows, num_cols, latent_dim)
    if ppl != "stan":
        return (latent["U"] if representation == "uncollapsed" else None), latent["V"]
    latent = jnp.asarray(latent)
    expected = (N * K if representation == "uncollapsed" else 0) + K * D
    if latent.shape != (expected,):
        raise BDMCError(f"a Stan latent of the {representation} model must have shape ({expected},), "
                        f"got {latent.shape}")
    if representation == "uncollapsed":
        return latent[:N * K].reshape(K, N).T, latent[N * K:].reshape(D, K).T
    return None, latent.reshape(D, K).T
