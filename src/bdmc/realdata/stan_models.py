"""The BREAD paper's five real-data models (Appendix C) written in Stan, with NumPy simulators.

The programs are package data, ``bdmc/realdata/stan/<model>.stan``, read once at import into the
``*_PROGRAM`` strings. The regressions come first; matrix factorization, AR(1) and the mixture follow at the
end of the module.

The programs are the appendix's, with two changes the Stan adapter needs (:mod:`bdmc.ppl.stan`): every prior
term is a normalized ``target += ..._lpdf`` (the appendix's ``~`` statements drop constants), so ``log_prior``
is normalized and equals the NumPyro and PyMC versions' (:mod:`bdmc.realdata.models`,
:mod:`bdmc.realdata.pymc_models`); and the likelihood is multiplied by the data variable ``bdmc_lambda``.
Three likelihoods are written in the forms Stan evaluates fastest, with the same density: the regressions
use Stan's GLM functions (``normal_id_glm_lpdf``, ``bernoulli_logit_glm_lpmf``, whose gradients are
analytic: 6.9x faster per gradient than ``normal_lpdf(y | x * beta + alpha, ...)`` on NHEFS, 1.8x for the
logistic on Pima), and the mixture takes the log-sum-exp over components of one matrix product rather than a
normal density per case and component (4.9x); ``benchmarks/stan_program_forms.py`` measures both forms.
The parameters are ``sigma_sq, scale_sq, alpha, beta`` in that order, so Stan's unconstrained vector is
``[log sigma_sq, log scale_sq, alpha, beta_1..beta_K]`` (``[log scale_sq, alpha, beta]`` for the logistic
model).

Stan has no prior sampler, so each model comes with a simulator ``simulate(rng, params=None)`` that follows
the adapter's contract: no ``params``, a draw from the prior; all parameters, kept; some of them, kept, and
the others drawn exactly from the prior given them. The conditional is exact for every subset: ``sigma_sq``
is independent of the rest; given ``scale_sq`` the coefficients are independent normals; and when
``scale_sq`` is free but coefficients are fixed, it is drawn from its conjugate inverse-gamma conditional
before the free coefficients.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Callable, Mapping

import numpy as np

from ..errors import BDMCError
from .models import checked_array, checked_cells, checked_series, checked_sizes


def _program(name: str) -> str:
    """The text of ``stan/<name>.stan``, byte for byte (the compile caches key on it)."""
    return (importlib.resources.files(__package__) / "stan" / f"{name}.stan").read_text(encoding="utf-8")


LINEAR_REGRESSION_PROGRAM = _program("linear_regression")
LOGISTIC_REGRESSION_PROGRAM = _program("logistic_regression")


def _inverse_gamma(rng: np.random.Generator, shape: float, rate: float) -> float:
    """One draw from IG(shape, rate): the reciprocal of a Gamma(shape, rate) draw."""
    return float(1.0 / rng.gamma(shape, 1.0 / rate))


def _given(params, shapes: Mapping[str, tuple]) -> dict:
    """The fixed parameters as float64 (scalars as floats), their names and shapes checked."""
    given = dict(params or {})
    unknown = sorted(set(given) - set(shapes))
    if unknown:
        raise BDMCError(f"cannot fix {unknown}: the model's parameters are {list(shapes)}")
    out = {}
    for name, value in given.items():
        value = np.asarray(value, np.float64)
        if value.shape != shapes[name]:
            raise BDMCError(f"{name} must have shape {shapes[name]}, got {value.shape}")
        out[name] = value if value.ndim else float(value)
    return out


def _variance_given(rng, p: dict, name: str, coefficients: tuple = ()) -> None:
    """Draw a free IG(1, 1) variance conjugately given the N(0, variance) coefficients already fixed."""
    if name not in p:
        c = np.concatenate([np.ravel(p[n]) for n in coefficients if n in p] + [np.zeros(0)])
        p[name] = _inverse_gamma(rng, 1.0 + 0.5 * c.size, 1.0 + 0.5 * c @ c)


def _regression_simulator(x, *, noise: bool, observe: Callable) -> Callable:
    """``simulate(rng, params=None)``: the parameters (``sigma_sq`` with ``noise``, ``scale_sq, alpha, beta``)
    in ``params`` kept, the others drawn from the prior given them, then ``observe(rng, params, x @ beta +
    alpha)`` as ``y``."""
    x = checked_array(x, "x", ndim=2)
    shapes = {**({"sigma_sq": ()} if noise else {}), "scale_sq": (), "alpha": (), "beta": (x.shape[1],)}

    def simulate(rng, params=None):
        p = _given(params, shapes)
        if noise:
            _variance_given(rng, p, "sigma_sq")  # independent of every other parameter
        _variance_given(rng, p, "scale_sq", ("alpha", "beta"))
        scale = np.sqrt(p["scale_sq"])
        if "alpha" not in p:
            p["alpha"] = float(scale * rng.normal())
        if "beta" not in p:
            p["beta"] = scale * rng.normal(size=shapes["beta"])
        p = {n: p[n] for n in shapes}
        return p, {"y": observe(rng, p, x @ p["beta"] + p["alpha"])}

    return simulate


def _normal_observations(rng, p, mean):
    return mean + np.sqrt(p["sigma_sq"]) * rng.normal(size=mean.shape[0])


def _bernoulli_observations(rng, p, logits):
    probability = 0.5 * (1.0 + np.tanh(0.5 * logits))  # the logistic function, without overflow
    return (rng.uniform(size=logits.shape[0]) < probability).astype(np.int64)


def linear_regression_simulator(x) -> Callable:
    """``simulate(rng, params=None) -> (params, {"y": (N,)})`` for :data:`LINEAR_REGRESSION_PROGRAM` and a design
    ``x`` (N, K): any subset of ``sigma_sq, scale_sq, alpha, beta`` (natural space) is kept, the others are drawn
    from the prior given them, and ``y`` given all of them."""
    return _regression_simulator(x, noise=True, observe=_normal_observations)


def logistic_regression_simulator(x) -> Callable:
    """``simulate(rng, params=None) -> (params, {"y": (N,)})`` for :data:`LOGISTIC_REGRESSION_PROGRAM` and a
    design ``x`` (N, K): any subset of ``scale_sq, alpha, beta`` is kept, the others are drawn from the prior given
    them, and the 0/1 labels ``y`` (int64) given all of them."""
    return _regression_simulator(x, noise=False, observe=_bernoulli_observations)


def _stan_model(program: str, simulator: Callable, x, y_placeholder):
    from ..ppl.stan import from_stan

    x = checked_array(x, "x", ndim=2)
    data = {"N": x.shape[0], "K": x.shape[1], "x": x, "y": y_placeholder(x.shape[0])}
    return from_stan(program, data=data, observed="y", simulate=simulator(x))


def linear_regression(x):
    """:func:`bdmc.realdata.linear_regression` (NHEFS in the paper) as a Stan program, for a design ``x`` (N, K).

    The model, its argument and its errors are the NumPyro builder's; pystan is needed (``pip install -e
    '.[stan]'``). The program compiles on first use (a minute or two, then cached).

    Returns
    -------
    bdmc.ppl.stan.StanModel
        Data ``{"y": (N,)}``; latents ``[log sigma_sq, log scale_sq, alpha, beta]`` (length K + 3); parameters
        ``sigma_sq, scale_sq, alpha, beta``.
    """
    return _stan_model(LINEAR_REGRESSION_PROGRAM, linear_regression_simulator, x, np.zeros)


def logistic_regression(x):
    """:func:`bdmc.realdata.logistic_regression` (Pima in the paper) as a Stan program, for a design ``x`` (N, K).

    The model, its argument and its errors are the NumPyro builder's; pystan is needed, as for
    :func:`linear_regression`.

    Returns
    -------
    bdmc.ppl.stan.StanModel
        Data ``{"y": (N,)}`` of 0/1 labels (int); latents ``[log scale_sq, alpha, beta]`` (length K + 2);
        parameters ``scale_sq, alpha, beta``.
    """
    return _stan_model(LOGISTIC_REGRESSION_PROGRAM, logistic_regression_simulator, x,
                       lambda n: np.zeros(n, np.int64))


# ------------------------------------------------------------------------------------------------ the other three
# Matrix factorization, AR(1) and the Gaussian mixture (Appendix C), with the NumPyro programs' parameters in
# the same order, so Stan's unconstrained vector is theirs flattened (matrices column-major) and, for the
# mixture, its simplex ``pi`` on Stan's stick-breaking scale. The mixture sums its assignments out with
# log_sum_exp, as the NumPyro program's MixtureSameFamily does.

MATRIX_FACTORIZATION_PROGRAM = _program("matrix_factorization")
AR1_PROGRAM = _program("ar1")
MIXTURE_PROGRAM = _program("gaussian_mixture")


def matrix_factorization_simulator(rows, cols, *, shape, latent_dim: int = 5) -> Callable:
    """``simulate(rng, params=None) -> (params, {"ratings": (C,)})`` for :data:`MATRIX_FACTORIZATION_PROGRAM`.

    Parameters
    ----------
    rows, cols : int arrays (C,)
        The observed cells (0-based).
    shape : tuple of int
    latent_dim : int

    Returns
    -------
    callable
        Any subset of ``scale_u_sq, scale_v_sq, sigma_sq, U, V`` is kept; each free variance is drawn given the
        fixed factor it scales (conjugate inverse-gamma), then the free factors given their variances.
    """
    rows, cols = np.asarray(rows), np.asarray(cols)
    num_rows, num_cols = (int(s) for s in shape)
    shapes = {"scale_u_sq": (), "scale_v_sq": (), "sigma_sq": (), "U": (num_rows, latent_dim),
              "V": (latent_dim, num_cols)}

    def simulate(rng, params=None):
        p = _given(params, shapes)
        _variance_given(rng, p, "scale_u_sq", ("U",))
        _variance_given(rng, p, "scale_v_sq", ("V",))
        _variance_given(rng, p, "sigma_sq")
        for factor, variance in (("U", "scale_u_sq"), ("V", "scale_v_sq")):
            if factor not in p:
                p[factor] = np.sqrt(p[variance]) * rng.normal(size=shapes[factor])
        mean = np.sum(p["U"][rows] * p["V"][:, cols].T, axis=-1)
        return {n: p[n] for n in shapes}, {"ratings": mean + np.sqrt(p["sigma_sq"]) * rng.normal(size=rows.size)}

    return simulate


def ar1_simulator(y_prev) -> Callable:
    """``simulate(rng, params=None) -> (params, {"y": (T,)})`` for :data:`AR1_PROGRAM`: ``alpha, beta, sigma_sq``
    are independent a priori, so the free ones are drawn from their priors; each step given ``y_prev``."""
    y_prev = checked_array(y_prev, "y_prev", ndim=1)
    shapes = {"alpha": (), "beta": (), "sigma_sq": ()}

    def simulate(rng, params=None):
        p = _given(params, shapes)
        p.setdefault("alpha", float(rng.normal()))
        p.setdefault("beta", float(1.0 + 0.1 * rng.normal()))
        _variance_given(rng, p, "sigma_sq")
        y = p["alpha"] + p["beta"] * y_prev + np.sqrt(p["sigma_sq"]) * rng.normal(size=y_prev.size)
        return {n: p[n] for n in shapes}, {"y": y}

    return simulate


def gaussian_mixture_simulator(num_cases: int, *, dim: int = 2, num_components: int = 2) -> Callable:
    """``simulate(rng, params=None) -> (params, {"y": (N, D)})`` for :data:`MIXTURE_PROGRAM`.

    A free ``scale_sq`` is drawn given a fixed ``mu`` (conjugate inverse-gamma); ``sigma_sq`` and ``pi`` are
    independent of the rest. Each point's assignment is drawn from ``pi`` and the point from its component.
    """
    shapes = {"scale_sq": (), "sigma_sq": (), "mu": (num_components, dim), "pi": (num_components,)}

    def simulate(rng, params=None):
        p = _given(params, shapes)
        _variance_given(rng, p, "scale_sq", ("mu",))
        _variance_given(rng, p, "sigma_sq")
        if "mu" not in p:
            p["mu"] = np.sqrt(p["scale_sq"]) * rng.normal(size=shapes["mu"])
        if "pi" not in p:
            p["pi"] = rng.dirichlet(np.ones(num_components))
        z = rng.choice(num_components, size=num_cases, p=p["pi"] / p["pi"].sum())
        y = p["mu"][z] + np.sqrt(p["sigma_sq"]) * rng.normal(size=(num_cases, dim))
        return {n: p[n] for n in shapes}, {"y": y}

    return simulate


def matrix_factorization(rows, cols, *, shape, latent_dim: int = 5):
    """The matrix factorization model (MovieLens in the paper) as a Stan program, on the observed cells.

    Parameters
    ----------
    rows, cols : int arrays (C,)
        Row and column (0-based) of each observed cell, e.g. ``load_movielens()["rows"]``.
    shape : tuple of int
    latent_dim : int

    Returns
    -------
    bdmc.ppl.stan.StanModel
        Data ``{"ratings": (C,)}``; parameters ``scale_u_sq, scale_v_sq, sigma_sq, U, V``.

    Raises
    ------
    bdmc.MissingExtraError, bdmc.DataError
        As :func:`bdmc.realdata.models.matrix_factorization`.
    """
    from ..ppl.stan import from_stan

    rows, cols, num_rows, num_cols, latent_dim = checked_cells(rows, cols, shape=shape, latent_dim=latent_dim)
    rows, cols = rows.astype(np.int64), cols.astype(np.int64)
    data = {"num_rows": num_rows, "num_cols": num_cols, "latent_dim": latent_dim, "C": rows.size,
            "rows": rows + 1, "cols": cols + 1, "ratings": np.zeros(rows.size)}
    return from_stan(MATRIX_FACTORIZATION_PROGRAM, data=data, observed="ratings",
                     simulate=matrix_factorization_simulator(rows, cols, shape=(num_rows, num_cols),
                                                             latent_dim=latent_dim))


def ar1(y):
    """The AR(1) model (GOOG in the paper) as a Stan program: data ``{"y": y[1:]}`` given ``y[:-1]``.

    Parameters
    ----------
    y : array (T,)

    Returns
    -------
    bdmc.ppl.stan.StanModel
        Data ``{"y": (T - 1,)}`` (see :func:`bdmc.realdata.models.ar1_data`); parameters ``alpha, beta,
        sigma_sq``.
    """
    from ..ppl.stan import from_stan

    y = checked_series(y)
    data = {"T": y.size - 1, "y_prev": y[:-1], "y": np.zeros(y.size - 1)}
    return from_stan(AR1_PROGRAM, data=data, observed="y", simulate=ar1_simulator(y[:-1]))


def gaussian_mixture(num_cases: int, *, dim: int = 2, num_components: int = 2):
    """The clustering model (Old Faithful in the paper) as a Stan program, the assignments summed out.

    Parameters
    ----------
    num_cases, dim, num_components : int
        N, D and K (K = 2 in the paper).

    Returns
    -------
    bdmc.ppl.stan.StanModel
        Data ``{"y": (N, D)}``; parameters ``scale_sq, sigma_sq, mu (K, D), pi (K,)``.
    """
    from ..ppl.stan import from_stan

    n, d, k = checked_sizes(num_cases=num_cases, dim=dim, num_components=num_components)
    return from_stan(MIXTURE_PROGRAM, data={"N": n, "D": d, "K": k, "y": np.zeros((n, d))}, observed="y",
                     simulate=gaussian_mixture_simulator(n, dim=d, num_components=k))
