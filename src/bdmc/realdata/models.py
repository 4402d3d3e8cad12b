"""The five models of the BREAD paper's real-data experiments (Appendix C), written once in NumPyro.

Each ``*_program`` is the NumPyro program with the appendix's priors and hyperpriors; each builder returns
:func:`bdmc.ppl.from_numpyro` of it for given data arrays, with the data cases on the leading axis of the
observed site. All variances are drawn from inverse-gamma(1, 1) priors, as in the appendix.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..errors import DataError, require
from ..ppl.registry import PPLS


def _numpyro():
    numpyro = require("numpyro", extra=PPLS["numpyro"].extra)
    return numpyro, numpyro.distributions


def checked_array(x, name: str, *, ndim: int) -> np.ndarray:
    """``x`` as a float64 array, checked: ``ndim`` dimensions, none empty, every value finite.

    Parameters
    ----------
    x : array_like
    name : str
        The argument's name, for the error message.
    ndim : int

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    bdmc.DataError
        When ``x`` has another number of dimensions, an empty one, or a non-finite value.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != ndim or 0 in x.shape:
        raise DataError(f"{name} must be a non-empty {ndim}-d array, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise DataError(f"{name} holds non-finite values")
    return x


def checked_sizes(**sizes) -> tuple[int, ...]:
    """The sizes given by name (``num_cases=10, dim=2``) as ints, each checked to be a positive integer.

    Raises
    ------
    bdmc.DataError
        Naming the first size that is not a positive integer.
    """
    for name, value in sizes.items():
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise DataError(f"{name} must be a positive integer, got {value!r}")
    return tuple(int(value) for value in sizes.values())


def checked_cells(rows, cols, *, shape, latent_dim) -> tuple:
    """The observed cells of a matrix factorization, checked: ``(rows, cols, num_rows, num_cols, latent_dim)``.

    Raises
    ------
    bdmc.DataError
        When ``rows`` and ``cols`` are not 1-d integer indices of one length inside a matrix of ``shape``, or
        ``latent_dim`` is not a positive integer.
    """
    rows, cols = np.asarray(rows), np.asarray(cols)
    num_rows, num_cols = (int(s) for s in shape)
    if rows.shape != cols.shape or rows.ndim != 1 or rows.size == 0:
        raise DataError(f"rows and cols must be 1-d and of one length, got shapes {rows.shape} and {cols.shape}")
    if not (np.issubdtype(rows.dtype, np.integer) and np.issubdtype(cols.dtype, np.integer)):
        raise DataError("rows and cols must be integer indices of the observed cells")
    if rows.min() < 0 or rows.max() >= num_rows or cols.min() < 0 or cols.max() >= num_cols:
        raise DataError(f"observed cells fall outside the matrix of shape {(num_rows, num_cols)}")
    return (rows, cols, num_rows, num_cols, *checked_sizes(latent_dim=latent_dim))


def checked_series(y) -> np.ndarray:
    """An AR(1) series ``y`` (T,) as float64, checked: finite, 2 or more values (one step given the one before)."""
    y = checked_array(y, "y", ndim=1)
    if y.size < 2:
        raise DataError(f"an AR(1) series needs 2 or more values, got {y.size}")
    return y


# ------------------------------------------------------------------------------------------------ programs

def linear_regression_program(x, y=None):
    """y_i ~ N(alpha + x_i beta, sigma_sq); alpha, beta_k ~ N(0, scale_sq); sigma_sq, scale_sq ~ IG(1, 1)."""
    numpyro, dist = _numpyro()
    sigma_sq = numpyro.sample("sigma_sq", dist.InverseGamma(1.0, 1.0))
    scale_sq = numpyro.sample("scale_sq", dist.InverseGamma(1.0, 1.0))
    alpha = numpyro.sample("alpha", dist.Normal(0.0, jnp.sqrt(scale_sq)))
    beta = numpyro.sample("beta", dist.Normal(0.0, jnp.sqrt(scale_sq)).expand([x.shape[1]]).to_event(1))
    with numpyro.plate("cases", x.shape[0]):
        numpyro.sample("y", dist.Normal(x @ beta + alpha, jnp.sqrt(sigma_sq)), obs=y)


def logistic_regression_program(x, y=None):
    """y_i ~ Bernoulli(logistic(alpha + x_i beta)); alpha, beta_k ~ N(0, scale_sq); scale_sq ~ IG(1, 1)."""
    numpyro, dist = _numpyro()
    scale_sq = numpyro.sample("scale_sq", dist.InverseGamma(1.0, 1.0))
    alpha = numpyro.sample("alpha", dist.Normal(0.0, jnp.sqrt(scale_sq)))
    beta = numpyro.sample("beta", dist.Normal(0.0, jnp.sqrt(scale_sq)).expand([x.shape[1]]).to_event(1))
    with numpyro.plate("cases", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=x @ beta + alpha), obs=y)


def matrix_factorization_program(rows, cols, num_rows, num_cols, latent_dim, ratings=None):
    """Y_ij ~ N((U V)_ij, sigma_sq) on the observed cells (rows[c], cols[c]) only.

    U (num_rows, latent_dim) has entries N(0, scale_u_sq), V (latent_dim, num_cols) entries N(0, scale_v_sq);
    scale_u_sq, scale_v_sq, sigma_sq ~ IG(1, 1). Missing cells contribute nothing, as in the appendix's
    ``if (Y[i,j] > -999999)``.
    """
    numpyro, dist = _numpyro()
    scale_u_sq = numpyro.sample("scale_u_sq", dist.InverseGamma(1.0, 1.0))
    scale_v_sq = numpyro.sample("scale_v_sq", dist.InverseGamma(1.0, 1.0))
    sigma_sq = numpyro.sample("sigma_sq", dist.InverseGamma(1.0, 1.0))
    U = numpyro.sample("U", dist.Normal(0.0, jnp.sqrt(scale_u_sq)).expand([num_rows, latent_dim]).to_event(2))
    V = numpyro.sample("V", dist.Normal(0.0, jnp.sqrt(scale_v_sq)).expand([latent_dim, num_cols]).to_event(2))
    mean = jnp.sum(U[rows] * V[:, cols].T, axis=-1)  # (U V)[rows, cols] without forming U V
    with numpyro.plate("cells", rows.shape[0]):
        numpyro.sample("ratings", dist.Normal(mean, jnp.sqrt(sigma_sq)), obs=ratings)


def ar1_program(y_prev, y=None):
    """y_n ~ N(alpha + beta y_{n-1}, sigma_sq) given y_{n-1}.

    alpha ~ N(0, 1), beta ~ N(1, 0.1^2), sigma_sq ~ IG(1, 1).
    """
    numpyro, dist = _numpyro()
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 1.0))
    beta = numpyro.sample("beta", dist.Normal(1.0, 0.1))  # Stan's normal(1, 0.1): 0.1 is the standard deviation
    sigma_sq = numpyro.sample("sigma_sq", dist.InverseGamma(1.0, 1.0))
    with numpyro.plate("steps", y_prev.shape[0]):
        numpyro.sample("y", dist.Normal(alpha + beta * y_prev, jnp.sqrt(sigma_sq)), obs=y)


def gaussian_mixture_program(num_cases, dim, num_components, y=None):
    """y_n ~ sum_k pi_k N(mu_k, sigma_sq I), the assignment summed out.

    mu_kd ~ N(0, scale_sq); pi ~ Dirichlet(1, ..., 1); scale_sq, sigma_sq ~ IG(1, 1).
    """
    numpyro, dist = _numpyro()
    scale_sq = numpyro.sample("scale_sq", dist.InverseGamma(1.0, 1.0))
    sigma_sq = numpyro.sample("sigma_sq", dist.InverseGamma(1.0, 1.0))
    mu = numpyro.sample("mu", dist.Normal(0.0, jnp.sqrt(scale_sq)).expand([num_components, dim]).to_event(2))
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(num_components)))
    components = dist.Normal(mu, jnp.sqrt(sigma_sq)).to_event(1)
    with numpyro.plate("cases", num_cases):
        numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(probs=pi), components), obs=y)


# ------------------------------------------------------------------------------------------------ builders

def linear_regression(x):
    """The linear regression model (NHEFS in the paper) for a design ``x`` (N, K).

    ``y_i ~ N(alpha + x_i beta, sigma_sq)``; ``alpha, beta_k ~ N(0, scale_sq)``; ``sigma_sq, scale_sq ~ IG(1, 1)``.
    The same model is written in PyMC and Stan (:mod:`bdmc.realdata.pymc_models`,
    :mod:`bdmc.realdata.stan_models`), with the same argument and errors.

    Parameters
    ----------
    x : array (N, K)
        Inputs; the intercept ``alpha`` is part of the model.

    Returns
    -------
    bdmc.ppl.NumPyroModel
        Data ``{"y": (N,)}``; latents ``sigma_sq, scale_sq, alpha, beta`` (variances on the log scale).

    Raises
    ------
    bdmc.MissingExtraError
        When the PPL is not installed (``pip install -e '.[numpyro]'``, ``'.[pymc]'``, ``'.[stan]'`` in bdmc's
        checkout).
    bdmc.DataError
        When ``x`` is not a finite, non-empty 2-d array.
    """
    from ..ppl import from_numpyro

    return from_numpyro(linear_regression_program, checked_array(x, "x", ndim=2), observed="y")


def logistic_regression(x):
    """The logistic regression model (Pima in the paper) for a design ``x`` (N, K), with the argument and errors
    of :func:`linear_regression`.

    ``y_i ~ Bernoulli(logistic(alpha + x_i beta))``; ``alpha, beta_k ~ N(0, scale_sq)``; ``scale_sq ~ IG(1, 1)``.
    Also written in PyMC and Stan.

    Returns
    -------
    bdmc.ppl.NumPyroModel
        Data ``{"y": (N,)}`` of 0/1 labels; latents ``scale_sq, alpha, beta``.
    """
    from ..ppl import from_numpyro

    return from_numpyro(logistic_regression_program, checked_array(x, "x", ndim=2), observed="y")


def matrix_factorization(rows, cols, *, shape, latent_dim: int = 5):
    """The matrix factorization model (MovieLens in the paper) on the observed cells of a matrix.

    Parameters
    ----------
    rows, cols : int arrays (C,)
        Row and column of each observed cell (the data cases), e.g. ``load_movielens()["rows"]``.
    shape : tuple of int
        (number of rows, number of columns) of the full matrix.
    latent_dim : int
        Inner dimension of ``U V`` (5 in the paper).

    Returns
    -------
    bdmc.ppl.NumPyroModel
        Data ``{"ratings": (C,)}``; latents ``scale_u_sq, scale_v_sq, sigma_sq, U, V``.
    """
    from ..ppl import from_numpyro

    cells = checked_cells(rows, cols, shape=shape, latent_dim=latent_dim)
    return from_numpyro(matrix_factorization_program, *cells, observed="ratings")


def ar1(y):
    """The AR(1) time-series model (GOOG in the paper) on a series ``y`` (T,).

    The data cases are the steps 2..T, each given the previous value: data ``{"y": y[1:]}``, and the model
    holds ``y[:-1]``. Simulated data draw each step given the real previous value.

    Parameters
    ----------
    y : array (T,)

    Returns
    -------
    bdmc.ppl.NumPyroModel
        Data ``{"y": (T - 1,)}``; latents ``alpha, beta, sigma_sq``.
    """
    from ..ppl import from_numpyro

    return from_numpyro(ar1_program, checked_series(y)[:-1], observed="y")


def ar1_data(y) -> dict:
    """The data dict of :func:`ar1` for a series ``y``: its steps 2..T."""
    return {"y": np.asarray(y, dtype=np.float64)[1:]}


def gaussian_mixture(num_cases: int, *, dim: int = 2, num_components: int = 2):
    """The clustering model (Old Faithful in the paper): a Gaussian mixture with the assignments summed out.

    Parameters
    ----------
    num_cases : int
        Number of data points N.
    dim : int
        Dimension D of each point (2 for Old Faithful).
    num_components : int
        Number of clusters K (2 in the paper).

    Returns
    -------
    bdmc.ppl.NumPyroModel
        Data ``{"y": (N, D)}``; latents ``scale_sq, sigma_sq, mu, pi`` (``pi`` stick-breaking unconstrained).
    """
    from ..ppl import from_numpyro

    sizes = checked_sizes(num_cases=num_cases, dim=dim, num_components=num_components)
    return from_numpyro(gaussian_mixture_program, *sizes, observed="y")
