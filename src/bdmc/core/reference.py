"""A path from a fitted reference to the whole posterior: for programs that mark no prior and likelihood.

Forward AIS needs a start it can draw exactly and whose normalizer it knows. The prior is one; when a program
gives only its whole unnormalized posterior ``gamma(x) = p(x, y)``, a reference ``q`` fitted to it is another:
a multivariate Student-t on the unconstrained space, centred at the posterior's mode with the inverse Hessian's
shape, widened. The path ``f(x; lam) = q(x)^(1 - lam) gamma(x)^lam`` runs from ``q`` (normalizer 1) to
``gamma`` (normalizer p(y)), so forward AIS from q is still an unbiased estimate of p(y), a stochastic lower
bound on log p(y), and reverse AIS from the exact latent (a draw from gamma / p(y)) a stochastic upper bound,
for any q fixed before the run. The fit uses its own keys (``fold_in(key, REFERENCE_STREAM)``) and is frozen.

:class:`ReferencePath` is that path as a bdmc Model (its "prior" is q, its one "likelihood" term
``log gamma - log q``), so every estimator and check runs on it unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jax.scipy.special import gammaln
from scipy import optimize

from ..contracts.capabilities import ChecksData, CollapsedDensity, InitialPoints, supports
from ..errors import BDMCError

REFERENCE_STREAM = 0x7EF3A1C5  # folded into the caller's key for the fit's starting points


@dataclass(frozen=True, eq=False)
class ReferencePath:
    """The model on the path from a Student-t reference to its whole posterior (see the module docstring).

    Parameters
    ----------
    model
        A bdmc Model (its ``log_prior + sum(log_likelihood)``, or its collapsed ``log_density`` at lam = 1, is the
        unnormalized posterior) whose latents the reference covers, flattened in ``ravel_pytree`` order.
    mean, scale_tril : tuple
        The reference's location and the lower Cholesky factor of its scale matrix.
    df : float
        Its degrees of freedom.

    Hashed by identity, as the PPL adapters: a static argument of compiled runs.
    """

    model: Any
    mean: tuple
    scale_tril: tuple
    df: float = 5.0

    def _unravel(self):
        return _unraveler(self.model)

    def sample_prior(self, key):
        """An exact draw from the reference."""
        mean = jnp.asarray(self.mean, jnp.result_type(float))
        tril = jnp.asarray(self.scale_tril, mean.dtype)
        k_normal, k_chi = jax.random.split(key)
        z = jax.random.normal(k_normal, mean.shape, mean.dtype)
        chi2 = 2.0 * jax.random.gamma(k_chi, self.df / 2.0, dtype=mean.dtype)
        return self._unravel()(mean + tril @ z / jnp.sqrt(chi2 / self.df))

    def sample_data(self, key, latent):
        """Refused: simulated data for a sandwich come from the model's own prior (``bdmc.simulate(key,
        path.model)``), whose latent is the exact posterior sample; the reference is only where a run starts."""
        raise BDMCError("simulate data with the model itself (bdmc.simulate(key, path.model)), then run the "
                        "estimators on the path: a latent drawn from the reference is not an exact posterior sample")

    def log_prior(self, latent):
        """The reference's normalized log density."""
        flat = ravel_pytree(latent)[0]
        mean = jnp.asarray(self.mean, flat.dtype)
        tril = jnp.asarray(self.scale_tril, flat.dtype)
        d, df = flat.shape[0], self.df
        white = jax.scipy.linalg.solve_triangular(tril, flat - mean, lower=True)
        return (gammaln((df + d) / 2) - gammaln(df / 2) - 0.5 * d * jnp.log(df * jnp.pi)
                - jnp.sum(jnp.log(jnp.diag(tril))) - 0.5 * (df + d) * jnp.log1p(jnp.sum(white**2) / df))

    def log_likelihood(self, latent, data):
        """One term: the whole unnormalized posterior over the reference, ``log gamma(x) - log q(x)``."""
        return jnp.atleast_1d(log_joint(self.model, latent, data) - self.log_prior(latent))

    def check_data(self, data):
        return self.model.check_data(data) if supports(self.model, ChecksData) else data

    def __repr__(self):
        return f"ReferencePath({self.model!r}, Student-t df={self.df:g} on {len(self.mean)} coordinates)"


def log_joint(model, latent, data):
    """The unnormalized posterior ``log p(x, y)`` of a model (its collapsed density at lam = 1, if it has one)."""
    if supports(model, CollapsedDensity):
        return model.log_density(latent, data, 1.0)
    return model.log_prior(latent) + jnp.sum(model.log_likelihood(latent, data))


def _start_sampler(model):
    """Where the fit starts: a model's own initializer if it has one (a Stan program: uniform on (-2, 2) in
    every unconstrained coordinate, as Stan starts its samplers; it needs no simulator), else its prior."""
    return model.sample_initial if supports(model, InitialPoints) else model.sample_prior


def _unraveler(model):
    like = jax.eval_shape(_start_sampler(model), jax.random.key(0))
    return ravel_pytree(jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), like))[1]


def _negative_hessian(model, unravel, data, mode):
    """``-d^2 log p(x, y)`` at the mode: by autodiff, or (a density computed outside JAX, such as a Stan
    program's, has a gradient but no second derivative) by central differences of the gradient."""
    def log_joint_flat(f):
        return log_joint(model, unravel(f), data)

    x = jnp.asarray(mode, jnp.result_type(float))
    try:
        return -np.asarray(jax.jit(jax.hessian(log_joint_flat))(x), np.float64)
    except ValueError:  # JAX's "cannot be differentiated" of a host call; any other fault recurs in grad below
        pass
    grad = jax.jit(jax.grad(log_joint_flat))
    step = 1e-4 * (1.0 + np.abs(np.asarray(mode, np.float64)))
    rows = []
    for i in range(len(mode)):
        e = np.zeros(len(mode))
        e[i] = step[i]
        up = np.asarray(grad(jnp.asarray(mode + e, x.dtype)), np.float64)
        down = np.asarray(grad(jnp.asarray(mode - e, x.dtype)), np.float64)
        rows.append(-(up - down) / (2 * step[i]))
    return np.asarray(rows).reshape(len(mode), len(mode))


def reference_path(key, model, data, *, df: float = 5.0, widen: float = 1.5, num_starts: int = 8,
                   starts=None) -> ReferencePath:
    """Fit a Student-t reference to ``model``'s posterior given ``data`` and return the path from it.

    The fit maximizes ``log p(x, y)`` by L-BFGS from ``num_starts`` points (on ``fold_in(key,
    REFERENCE_STREAM)``: prior draws, or the model's ``sample_initial`` where it has one, as a Stan program does;
    or ``starts``: latents with a leading axis), takes the best mode and the
    inverse of the negative Hessian there (its eigenvalues floored, so a flat direction gets a wide scale), and
    widens it by ``widen``: heavier tails and a wider scale keep ``gamma / q`` bounded, which AIS's variance needs.

    Raises
    ------
    BDMCError
        When no start reaches a finite log density.
    """
    unravel = _unraveler(model)
    if starts is None:
        keys = jax.random.split(jax.random.fold_in(key, REFERENCE_STREAM), int(num_starts))
        starts = jax.vmap(_start_sampler(model))(keys)
    flats = np.asarray(jax.vmap(lambda x: ravel_pytree(x)[0])(starts), np.float64)
    value_and_grad = jax.jit(jax.value_and_grad(lambda f: -log_joint(model, unravel(f), data)))

    def objective(f):
        v, g = value_and_grad(jnp.asarray(f, jnp.result_type(float)))
        v, g = float(v), np.asarray(g, np.float64)
        return (v, g) if math.isfinite(v) and np.all(np.isfinite(g)) else (1e300, np.zeros_like(g))

    best = None
    for f0 in flats:
        res = optimize.minimize(objective, f0, jac=True, method="L-BFGS-B", options={"maxiter": 2000})
        if math.isfinite(res.fun) and res.fun < 1e300 and (best is None or res.fun < best.fun):
            best = res
    if best is None:
        raise BDMCError(f"the reference fit found no start with a finite log density for {model!r}")
    mode = best.x
    precision = _negative_hessian(model, unravel, data, mode)
    precision = (precision + precision.T) / 2
    vals, vecs = np.linalg.eigh(precision)
    top = np.max(np.abs(vals)) if vals.size else 1.0
    vals = np.maximum(vals, 1e-8 * top if top > 0 else 1.0)  # a flat or convex direction: wide, not infinite
    cov = (vecs / vals) @ vecs.T
    tril = np.linalg.cholesky(widen**2 * (cov + cov.T) / 2)
    return ReferencePath(model, tuple(float(v) for v in mode), tuple(tuple(float(v) for v in row) for row in tril),
                         float(df))
