"""Evidence bugs found in the wild, each reproduced as a mutation of a correct estimator of ``log p(y)``.

The model is a regression users write: ``y ~ Normal(a + b x, sigma)``, ``a, b ~ Normal(0, 2)``,
``sigma ~ HalfNormal(1)``, 30 cases, as a NumPyro program. Two correct estimators, each a callable
``estimator(data, *, seed) -> (log_z, stderr)`` as :func:`bdmc.calibrate_estimator` takes it:

- **Laplace importance sampling** (``laplace_is``): the posterior mode and Hessian on the unconstrained space
  (damped Newton), a Student-t proposal (5 degrees of freedom) at the mode with the inverse Hessian widened by 1.5, and
  ``log mean exp(log p(x, y) - log q(x))`` over 2,000 proposal draws; the stderr by the delta method.
- **tempered SMC** (``tempered_smc``): 256 particles along ``lambda_k = (k / 40)^4``, resampled (systematic) when
  the effective sample size falls below half, moved by 5 random-walk Metropolis steps scaled to the particles'
  spread; ``log Z`` is the sum of ``log sum_i W_i w_i``, ``W`` the normalized weights before the step.

The bugs, each a one-line change of one of them (``BUGS``):

1. *the likelihood integrated instead of the posterior* (LaplacesDemon #43): the importance weight
   ``p(y | x) / q(x)`` drops the prior (and its log-Jacobian);
2. *the maximum log posterior reported as the evidence* (MacroEconometricModels.jl #130): ``log p(x*, y)`` at the
   mode, with the stderr 0;
3. *an SMC increment that omits the resampled weights*: ``log mean_i w_i`` instead of ``log sum_i W_i w_i``, right
   only on the steps that follow a resampling;
4. *an unnormalized truncation*: the program's ``sigma`` prior written as a Normal(0, 1) density on the positive
   half-line, without its factor 2 (``log 2`` low): a program bug, so the estimator is right and the program wrong;
5. *``~`` against ``target +=``*: the likelihood written as Stan's ``~`` writes it, dropping ``-log(2 pi) / 2`` per
   case (``15 log(2 pi)`` = 27.6 nats high on 30 cases): a program bug too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.flatten_util import ravel_pytree
from jax.scipy.special import logsumexp
from numpyro.distributions import constraints

import bdmc

NUM_CASES = 30
X = jnp.linspace(-1.0, 1.0, NUM_CASES)
IS_DRAWS, IS_DF, IS_WIDEN = 2000, 5.0, 1.5
SMC_PARTICLES, SMC_STEPS, SMC_MOVES = 256, 40, 5


class HalfNormalUnnormalized(dist.Distribution):
    """A half-normal written as the Normal(0, scale) density on the positive half-line: half its mass is lost.
    It samples correctly (the simulator is right); its ``log_prob`` lacks ``log 2``."""

    support = constraints.positive
    reparametrized_params = ["scale"]

    def __init__(self, scale=1.0, *, validate_args=None):
        self.scale = scale
        super().__init__(batch_shape=jnp.shape(scale), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        return jnp.abs(self.scale * jax.random.normal(key, sample_shape + self.batch_shape))

    def log_prob(self, value):
        return dist.Normal(0.0, self.scale).log_prob(value)


class NormalDroppedConstant(dist.Normal):
    """Normal's density as Stan's ``~`` writes it: without ``-log(2 pi) / 2``."""

    def log_prob(self, value):
        return super().log_prob(value) + 0.5 * math.log(2 * math.pi)


def regression(x, y=None, *, prior=dist.HalfNormal, likelihood=dist.Normal):
    a = numpyro.sample("a", dist.Normal(0.0, 2.0))
    b = numpyro.sample("b", dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma", prior(1.0))
    with numpyro.plate("cases", x.shape[0]):
        numpyro.sample("y", likelihood(a + b * x, sigma), obs=y)


def correct(x, y=None):
    regression(x, y)


def truncation_unnormalized(x, y=None):
    regression(x, y, prior=HalfNormalUnnormalized)


def dropped_constants(x, y=None):
    regression(x, y, likelihood=NormalDroppedConstant)


PROGRAMS = {"correct": correct, "truncation": truncation_unnormalized, "dropped-constants": dropped_constants}


def program_model(name: str = "correct"):
    """One of ``PROGRAMS`` as a bdmc Model (latent: the unconstrained sites; data: ``{"y": (30,)}``)."""
    return bdmc.ppl.from_numpyro(PROGRAMS[name], X, observed="y")


# ------------------------------------------------------------------------------------------- estimators
def newton_mode(f, start, iterations: int = 100):
    """The minimum of a smooth ``f`` by Levenberg-damped Newton steps (a step that does not lower ``f`` is refused
    and the damping raised): robust where a line search fails on a posterior in natural units."""

    def body(_, state):
        z, value, damping = state
        grad, hess = jax.grad(f)(z), jax.hessian(f)(z)
        step = jnp.linalg.solve(hess + damping * jnp.eye(z.size), grad)
        new = z - step
        new_value = f(new)
        better = jnp.isfinite(new_value) & (new_value < value)
        return (jnp.where(better, new, z), jnp.where(better, new_value, value),
                jnp.where(better, damping / 3, damping * 4))

    z, value, _ = jax.lax.fori_loop(0, iterations, body, (start, f(start), jnp.asarray(1.0)))
    return z, value


def _flat(model):
    """``(dim, unravel)``: the size of the flat unconstrained latent and the map back to the latent dict."""
    template = model.sample_prior(jax.random.key(0))
    flat, unravel = ravel_pytree(template)
    return flat.size, unravel


def laplace_is(model, *, drop_prior: bool = False, report_mode: bool = False):
    """Importance sampling from a Student-t at the Laplace fit (module docstring); the mutations of bugs 1 and 2."""
    dim, unravel = _flat(model)

    def log_joint(z, y):
        latent = unravel(z)
        return model.log_prior(latent) + jnp.sum(model.log_likelihood(latent, {"y": y}))

    def log_weight_term(z, y):
        latent = unravel(z)
        lik = jnp.sum(model.log_likelihood(latent, {"y": y}))
        return lik if drop_prior else lik + model.log_prior(latent)

    @jax.jit
    def run(key, y):
        mode, neg_peak = newton_mode(lambda z: -log_joint(z, y), jnp.zeros(dim))
        hessian = jax.hessian(lambda z: -log_joint(z, y))(mode)
        cov = IS_WIDEN * jnp.linalg.inv(hessian + 1e-9 * jnp.eye(dim))
        chol = jnp.linalg.cholesky(cov)
        k_z, k_chi = jax.random.split(key)
        normal = jax.random.normal(k_z, (IS_DRAWS, dim))
        chi2 = 2.0 * jax.random.gamma(k_chi, IS_DF / 2, (IS_DRAWS,))
        draws = mode + (normal * jnp.sqrt(IS_DF / chi2)[:, None]) @ chol.T
        white = jax.scipy.linalg.solve_triangular(chol, (draws - mode).T, lower=True).T
        log_q = (jax.scipy.special.gammaln((IS_DF + dim) / 2) - jax.scipy.special.gammaln(IS_DF / 2)
                 - dim / 2 * jnp.log(IS_DF * jnp.pi) - jnp.sum(jnp.log(jnp.diag(chol)))
                 - (IS_DF + dim) / 2 * jnp.log1p(jnp.sum(white ** 2, axis=1) / IS_DF))
        log_w = jax.vmap(lambda z: log_weight_term(z, y))(draws) - log_q
        log_z = logsumexp(log_w) - jnp.log(IS_DRAWS)
        w = jnp.exp(log_w - jnp.max(log_w))
        stderr = jnp.std(w) / (jnp.mean(w) * jnp.sqrt(IS_DRAWS))
        return log_z, stderr, -neg_peak

    def estimator(data, *, seed: int):
        log_z, stderr, peak = run(jax.random.key(seed), jnp.asarray(data["y"]))
        if report_mode:
            return float(peak), 0.0
        return float(log_z), float(stderr)

    return estimator


def tempered_smc(model, *, omit_weights: bool = False):
    """Tempered SMC with ESS-triggered resampling (module docstring); with ``omit_weights`` bug 3."""
    dim, unravel = _flat(model)
    lambdas = (jnp.arange(SMC_STEPS + 1) / SMC_STEPS) ** 4

    def log_lik(z, y):
        return jnp.sum(model.log_likelihood(unravel(z), {"y": y}))

    def log_prior(z):
        return model.log_prior(unravel(z))

    @jax.jit
    def run(key, y):
        k_init, key = jax.random.split(key)
        particles = jax.vmap(lambda k: ravel_pytree(model.sample_prior(k))[0])(
            jax.random.split(k_init, SMC_PARTICLES))
        log_w = jnp.full(SMC_PARTICLES, -jnp.log(SMC_PARTICLES))

        def step(carry, k):
            particles, log_w, log_z, key = carry
            key, k_resample, k_move = jax.random.split(key, 3)
            lik = jax.vmap(lambda z: log_lik(z, y))(particles)
            increment = (lambdas[k] - lambdas[k - 1]) * lik
            if omit_weights:
                log_z = log_z + logsumexp(increment) - jnp.log(SMC_PARTICLES)
            else:
                log_z = log_z + logsumexp(log_w + increment)
            log_w = log_w + increment
            log_w = log_w - logsumexp(log_w)
            ess = 1.0 / jnp.sum(jnp.exp(2 * log_w))
            u = (jax.random.uniform(k_resample) + jnp.arange(SMC_PARTICLES)) / SMC_PARTICLES
            index = jnp.clip(jnp.searchsorted(jnp.cumsum(jnp.exp(log_w)), u), 0, SMC_PARTICLES - 1)
            resample = ess < SMC_PARTICLES / 2
            particles = jnp.where(resample, particles[index], particles)
            log_w = jnp.where(resample, jnp.full(SMC_PARTICLES, -jnp.log(SMC_PARTICLES)), log_w)
            scale = 2.38 / jnp.sqrt(dim) * jnp.sqrt(jnp.cov(particles.T, aweights=jnp.exp(log_w)).diagonal() + 1e-12)

            def target(z):
                return log_prior(z) + lambdas[k] * log_lik(z, y)

            def move(z, key):
                def one(state, key):
                    z, lp = state
                    k_prop, k_acc = jax.random.split(key)
                    proposal = z + scale * jax.random.normal(k_prop, (dim,))
                    lp_new = target(proposal)
                    accept = jnp.log(jax.random.uniform(k_acc)) < lp_new - lp
                    return (jnp.where(accept, proposal, z), jnp.where(accept, lp_new, lp)), None

                (z, _), _ = jax.lax.scan(one, (z, target(z)), jax.random.split(key, SMC_MOVES))
                return z

            particles = jax.vmap(move)(particles, jax.random.split(k_move, SMC_PARTICLES))
            return (particles, log_w, log_z, key), None

        (_, _, log_z, _), _ = jax.lax.scan(step, (particles, log_w, jnp.zeros(()), key),
                                           jnp.arange(1, SMC_STEPS + 1))
        return log_z

    def estimator(data, *, seed: int):
        return float(run(jax.random.key(seed), jnp.asarray(data["y"]))), math.nan

    return estimator


@dataclass(frozen=True)
class EvidenceBug:
    """One bug from the wild: where it was reported, what it changes, and how to build the mutated estimator."""

    name: str
    reported: str
    change: str
    program: str  # the NumPyro program the estimator runs on ("correct" unless the bug is in the program)
    kind: str  # "estimator" or "program"

    def estimator(self):
        model = program_model(self.program)
        if self.name == "likelihood-integrated":
            return laplace_is(model, drop_prior=True)
        if self.name == "max-log-posterior":
            return laplace_is(model, report_mode=True)
        if self.name == "smc-omits-weights":
            return tempered_smc(model, omit_weights=True)
        return laplace_is(model)


BUGS = (
    EvidenceBug("likelihood-integrated", "LaplacesDemon #43", "the importance weight drops the prior",
                "correct", "estimator"),
    EvidenceBug("max-log-posterior", "MacroEconometricModels.jl #130", "log p(x*, y) at the mode as log p(y)",
                "correct", "estimator"),
    EvidenceBug("smc-omits-weights", "SMC increment without W_{t-1}", "log mean w_t for log sum W_{t-1} w_t",
                "correct", "estimator"),
    EvidenceBug("truncation", "half-normal without its normalizer", "the sigma prior loses log 2",
                "truncation", "program"),
    EvidenceBug("dropped-constants", "rstan #813 (~ against target +=)", "the likelihood drops log(2 pi)/2 a case",
                "dropped-constants", "program"),
)
CONTROLS = {"laplace-is": lambda: laplace_is(program_model()), "tempered-smc": lambda: tempered_smc(program_model())}


def exact_offset(bug: EvidenceBug) -> float | None:
    """The bug's error in nats where it is a constant (program bugs), else None."""
    return {"truncation": -math.log(2.0), "dropped-constants": NUM_CASES * 0.5 * math.log(2 * math.pi)}.get(bug.name)


def numpy_data(data) -> dict:
    """A data set as plain arrays (for rows and for the other tools)."""
    return {k: np.asarray(v) for k, v in data.items()}
