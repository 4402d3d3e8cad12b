"""The BREAD paper's linear and logistic regressions (Appendix C) written in Stan, with NumPy simulators.

The programs are the appendix's, with two changes the Stan adapter needs (:mod:`bdmc.ppl.stan`): every prior
term is a normalized ``target += ..._lpdf`` (the appendix's ``~`` statements drop constants), so ``log_prior``
is normalized and equals the NumPyro and PyMC versions' (:mod:`bdmc.realdata.models`,
:mod:`bdmc.realdata.pymc_models`); and the likelihood is multiplied by the data variable ``bdmc_lambda``.
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

from typing import Any, Callable, Mapping

import numpy as np

from ..errors import BDMCError
from .models import _matrix

LINEAR_REGRESSION_PROGRAM = """
data {
  int<lower=0> N;
  int<lower=0> K;
  matrix[N, K] x;
  vector[N] y;
  real<lower=0, upper=1> bdmc_lambda;
}
parameters {
  real<lower=0> sigma_sq;
  real<lower=0> scale_sq;
  real alpha;
  vector[K] beta;
}
model {
  target += inv_gamma_lpdf(sigma_sq | 1, 1);
  target += inv_gamma_lpdf(scale_sq | 1, 1);
  target += normal_lpdf(alpha | 0, sqrt(scale_sq));
  target += normal_lpdf(beta | 0, sqrt(scale_sq));
  target += bdmc_lambda * normal_lpdf(y | x * beta + alpha, sqrt(sigma_sq));
}
"""

LOGISTIC_REGRESSION_PROGRAM = """
data {
  int<lower=0> N;
  int<lower=0> K;
  matrix[N, K] x;
  array[N] int<lower=0, upper=1> y;
  real<lower=0, upper=1> bdmc_lambda;
}
parameters {
  real<lower=0> scale_sq;
  real alpha;
  vector[K] beta;
}
model {
  target += inv_gamma_lpdf(scale_sq | 1, 1);
  target += normal_lpdf(alpha | 0, sqrt(scale_sq));
  target += normal_lpdf(beta | 0, sqrt(scale_sq));
  target += bdmc_lambda * bernoulli_logit_lpmf(y | x * beta + alpha);
}
"""


def _inverse_gamma(rng: np.random.Generator, shape: float, rate: float) -> float:
    """One draw from IG(shape, rate): the reciprocal of a Gamma(shape, rate) draw."""
    return float(1.0 / rng.gamma(shape, 1.0 / rate))


def _draw_parameters(rng, params: Mapping[str, Any] | None, num_inputs: int, *, noise: bool) -> dict:
    """The regression parameters: those in ``params`` kept, the others drawn from the prior given them."""
    names = ("sigma_sq", "scale_sq", "alpha", "beta") if noise else ("scale_sq", "alpha", "beta")
    given = dict(params or {})
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise BDMCError(f"cannot fix {unknown}: the model's parameters are {list(names)}")
    out = {n: (np.asarray(v, np.float64) if n == "beta" else float(v)) for n, v in given.items()}
    if "beta" in out and out["beta"].shape != (num_inputs,):
        raise BDMCError(f"beta must have shape ({num_inputs},), got {out['beta'].shape}")
    if noise and "sigma_sq" not in out:  # independent of every other parameter
        out["sigma_sq"] = _inverse_gamma(rng, 1.0, 1.0)
    if "scale_sq" not in out:
        # Conjugate update on the coefficients held fixed (none: the prior IG(1, 1)).
        fixed = [np.atleast_1d(out[n]) for n in ("alpha", "beta") if n in out]
        coefficients = np.concatenate(fixed) if fixed else np.zeros(0)
        out["scale_sq"] = _inverse_gamma(rng, 1.0 + 0.5 * coefficients.size, 1.0 + 0.5 * coefficients @ coefficients)
    scale = np.sqrt(out["scale_sq"])
    if "alpha" not in out:
        out["alpha"] = float(scale * rng.normal())
    if "beta" not in out:
        out["beta"] = scale * rng.normal(size=num_inputs)
    return {n: out[n] for n in names}


def _regression_simulator(x, *, noise: bool, observe: Callable) -> Callable:
    """``simulate(rng, params=None)``: the parameters (:func:`_draw_parameters`), then
    ``observe(rng, params, x @ beta + alpha)`` as ``y``."""
    x = _matrix(x, "x", ndim=2)

    def simulate(rng, params=None):
        p = _draw_parameters(rng, params, x.shape[1], noise=noise)
        return p, {"y": observe(rng, p, x @ p["beta"] + p["alpha"])}

    return simulate


def linear_regression_simulator(x) -> Callable:
    """``simulate(rng, params=None) -> (params, {"y": (N,)})`` for :data:`LINEAR_REGRESSION_PROGRAM`.

    Parameters
    ----------
    x : array (N, K)

    Returns
    -------
    callable
        The simulator: ``params`` (any subset of ``sigma_sq, scale_sq, alpha, beta``, natural space) are kept
        and the others drawn from the prior given them; ``y`` is drawn given all of them.
    """
    def observe(rng, p, mean):
        return mean + np.sqrt(p["sigma_sq"]) * rng.normal(size=mean.shape[0])

    return _regression_simulator(x, noise=True, observe=observe)


def logistic_regression_simulator(x) -> Callable:
    """``simulate(rng, params=None) -> (params, {"y": (N,)})`` for :data:`LOGISTIC_REGRESSION_PROGRAM`.

    Parameters
    ----------
    x : array (N, K)

    Returns
    -------
    callable
        The simulator: ``params`` (any subset of ``scale_sq, alpha, beta``) are kept and the others drawn from
        the prior given them; the 0/1 labels ``y`` (int64) are drawn given all of them.
    """
    def observe(rng, p, logits):
        probability = 0.5 * (1.0 + np.tanh(0.5 * logits))  # the logistic function, without overflow
        return (rng.uniform(size=logits.shape[0]) < probability).astype(np.int64)

    return _regression_simulator(x, noise=False, observe=observe)


def _stan_model(program: str, simulator: Callable, x, y_placeholder):
    from ..ppl.stan import from_stan

    x = _matrix(x, "x", ndim=2)
    data = {"N": x.shape[0], "K": x.shape[1], "x": x, "y": y_placeholder(x.shape[0])}
    return from_stan(program, data=data, observed="y", simulate=simulator(x))


def linear_regression(x):
    """The linear regression model (NHEFS in the paper) as a Stan program, for a design ``x`` (N, K).

    Parameters
    ----------
    x : array (N, K)

    Returns
    -------
    bdmc.ppl.stan.StanModel
        Data ``{"y": (N,)}``; latents ``[log sigma_sq, log scale_sq, alpha, beta]`` (length K + 3); parameters
        ``sigma_sq, scale_sq, alpha, beta``. The program compiles on first use (a minute or two, then cached).

    Raises
    ------
    bdmc.MissingExtraError
        When pystan is not installed (``pip install 'bdmc[stan]'``).
    bdmc.DataError
        When ``x`` is not a finite, non-empty 2-d array.
    """
    return _stan_model(LINEAR_REGRESSION_PROGRAM, linear_regression_simulator, x, np.zeros)


def logistic_regression(x):
    """The logistic regression model (Pima in the paper) as a Stan program, for a design ``x`` (N, K).

    Parameters
    ----------
    x : array (N, K)

    Returns
    -------
    bdmc.ppl.stan.StanModel
        Data ``{"y": (N,)}`` of 0/1 labels (int); latents ``[log scale_sq, alpha, beta]`` (length K + 2);
        parameters ``scale_sq, alpha, beta``.

    Raises
    ------
    bdmc.MissingExtraError
        When pystan is not installed (``pip install 'bdmc[stan]'``).
    bdmc.DataError
        When ``x`` is not a finite, non-empty 2-d array.
    """
    return _stan_model(LOGISTIC_REGRESSION_PROGRAM, logistic_regression_simulator, x,
                       lambda n: np.zeros(n, np.int64))
