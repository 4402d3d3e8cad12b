"""NumPyro ports of posteriordb posteriors with proper priors, for an external log-evidence benchmark.

Every posterior shipped under ``benchmarks/data/posteriordb/<name>/`` (the Stan program verbatim, its data,
reference-posterior summaries; see that folder's README) has an :class:`Entry` in :data:`POSTERIORS`: a NumPyro
program written the way a user would (natural units, the Stan program's priors and likelihood with NumPyro's
normalized densities, the Stan parameter names as site names, constrained parameters declared through their
distribution's support), the names of its observed sites, and the maps between its sites and the reference
draws' flat names (``"theta[1]"`` ...).

The observed sites carry the whole likelihood with one term per data case along their leading axis. Where the
Stan likelihood is not a product over cases (time series, a Gaussian process, hidden Markov models) the port
writes it by the chain rule, one term ``log p(y_t | y_<t)`` per case: the location / mixture weights of the
case's distribution are computed from the *data* (``series`` and the like, passed in as a covariate), so the
sum over cases is exactly the Stan likelihood (up to the constant reported in ``stan_normalized``). For those
entries ``NumPyroModel.sample_data`` draws each case given the observed past (a one-step-ahead simulation), not
a fresh series; ``Entry.simulates`` is False for them.

``benchmarks/posteriordb_check.py`` compares each port's log joint density with the Stan program's (pystan) at
20 reference draws; the constant offsets it found are in ``stan_check.json`` and are read into
``Entry.stan_normalized`` / ``Entry.stan_offset`` / ``Entry.notes`` here.

Usage::

    import posteriordb_models as pdb           # with benchmarks/ on sys.path
    entry = pdb.POSTERIORS["eight_schools-eight_schools_noncentered"]
    data, reference, info = pdb.load(entry.name)
    model = bdmc.ppl.from_numpyro(entry.model, observed=list(entry.observed), **entry.covariates(data))
    observed = entry.observations(data)         # {site: array}, the data for log_likelihood / bdmc runs

``entry.args(data)`` is the full keyword set (covariates and observed values, the latter given to ``obs=``),
for NumPyro's own tools (``log_density``, MCMC). Pass only ``entry.covariates(data)`` to ``from_numpyro`` when
bdmc should simulate data (BDMC's forward / reverse runs): an observed value given as a keyword would be fixed
in every simulated data set.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import logsumexp
from numpyro.distributions import constraints

DATA_DIR = Path(__file__).resolve().parent / "data" / "posteriordb"


# ------------------------------------------------------------------------------------------- helpers


class OrderedNormal(dist.Distribution):
    """Independent ``Normal(loc[k], scale[k])`` restricted to ``x[0] < x[1]`` (and ``x[0] > 0`` when
    ``positive``), normalized: Stan's ``ordered[2]`` / ``positive_ordered[2]`` parameter with elementwise
    normal priors. Only two components (every posterior here); the mass of the region is computed once, in
    NumPy/SciPy, from the constant ``loc`` and ``scale``. Sampling is by rejection (64 proposals per draw)."""

    arg_constraints = {}
    reparametrized_params = []

    def __init__(self, loc, scale, positive: bool = False, *, validate_args=None):
        self.loc, self.scale, self.positive = np.asarray(loc, float), np.asarray(scale, float), positive
        if self.loc.shape != (2,) or self.scale.shape != (2,):
            raise ValueError("OrderedNormal handles two components")
        self.log_mass = log_ordered_mass(self.loc, self.scale, positive)
        super().__init__(batch_shape=(), event_shape=(2,), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=1)
    def support(self):
        return constraints.positive_ordered_vector if self.positive else constraints.ordered_vector

    def log_prob(self, value):
        return jnp.sum(dist.Normal(self.loc, self.scale).log_prob(value), -1) - self.log_mass

    def sample(self, key, sample_shape=()):
        tries = 64
        z = jax.random.normal(key, tuple(sample_shape) + (tries, 2))
        x = self.loc + self.scale * z
        ok = x[..., 0] < x[..., 1]
        if self.positive:
            ok = ok & (x[..., 0] > 0)
        first = jnp.argmax(ok, axis=-1)
        return jnp.take_along_axis(x, first[..., None, None], axis=-2)[..., 0, :]


def log_ordered_mass(loc, scale, positive):
    from scipy import integrate, stats

    if not positive:  # P(X1 < X2)
        return float(stats.norm.logcdf((loc[1] - loc[0]) / math.hypot(scale[0], scale[1])))
    mass, _ = integrate.quad(lambda x: stats.norm.pdf(x, loc[0], scale[0]) * stats.norm.sf(x, loc[1], scale[1]),
                             0.0, np.inf, epsabs=1e-14, epsrel=1e-12)
    return float(np.log(mass))


def half_student_t(df, scale):
    """Stan's ``student_t_lpdf(s | df, 0, scale) - student_t_lccdf(0 | df, 0, scale)`` on ``<lower=0>`` s."""
    return dist.FoldedDistribution(dist.StudentT(df, 0.0, scale))


def _exp_quad_cov(x, alpha, rho):
    """Stan's ``gp_exp_quad_cov(x, alpha, rho)`` for real inputs."""
    d = x[:, None] - x[None, :]
    return alpha ** 2 * jnp.exp(-0.5 * d ** 2 / rho ** 2)


def _hmm_predictive_logits(log_trans, log_emit):
    """log p(z_t = k | y_<t) for a hidden Markov model, by the normalized forward filter over the data.

    ``log_trans[j, k]`` = log p(z_t = k | z_t-1 = j); ``log_emit[t, k]`` = log p(y_t | z_t = k). The initial
    state is uniform."""
    k = log_trans.shape[0]
    log_pred0 = jnp.full((k,), -jnp.log(k))

    def step(log_filt, emit):
        log_pred = logsumexp(log_filt[:, None] + log_trans, axis=0)
        post = log_pred + emit
        return post - logsumexp(post), log_pred

    post0 = log_pred0 + log_emit[0]
    _, log_preds = jax.lax.scan(step, post0 - logsumexp(post0), log_emit[1:])
    return jnp.concatenate([log_pred0[None], log_preds])


def flat_names(name, value):
    """Reference-style flat names (1-based, row-major) of a site value with a leading draw axis."""
    value = np.asarray(value)
    if value.ndim == 1:
        return {name: value}
    out = {}
    for index in np.ndindex(*value.shape[1:]):
        out[name + "[" + ",".join(str(i + 1) for i in index) + "]"] = value[(slice(None),) + index]
    return out


def gather(flat, name, shape):
    """The inverse of :func:`flat_names`: stack flat names back into a site value (draw axis first)."""
    if not shape:
        return np.asarray(flat[name], float)
    cols = [np.asarray(flat[name + "[" + ",".join(str(i + 1) for i in index) + "]"], float)
            for index in np.ndindex(*shape)]
    return np.stack(cols, -1).reshape(cols[0].shape + tuple(shape))


def floats(x):
    return jnp.asarray(np.asarray(x, dtype=float))


# ------------------------------------------------------------------------------------------- models


def eight_schools_noncentered(sigma, y=None):
    J = sigma.shape[0]
    theta_trans = numpyro.sample("theta_trans", dist.Normal(0.0, 1.0).expand([J]).to_event(1))
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    theta = theta_trans * tau + mu
    numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def eight_schools_centered(sigma, y=None):
    J = sigma.shape[0]
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    theta = numpyro.sample("theta", dist.Normal(mu, tau).expand([J]).to_event(1))
    numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def blr(X, y=None):
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([X.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
    numpyro.sample("y", dist.Normal(X @ beta, sigma), obs=y)


def arK(lags, y=None):
    """AR(K): ``lags[i, k-1]`` is y[t-k] for the i-th modelled time point t = K+1..T; y holds y[K+1..T]."""
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 10.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([lags.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    numpyro.sample("y", dist.Normal(alpha + lags @ beta, sigma), obs=y)


def arma11(series, y=None):
    """ARMA(1,1) with err[0] = 0; the one-step predictions nu[t] use the observed ``series`` (= y)."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    phi = numpyro.sample("phi", dist.Normal(0.0, 2.0))
    theta = numpyro.sample("theta", dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    nu1 = mu + phi * mu

    def step(err_prev, y_pair):
        y_prev, y_now = y_pair
        nu = mu + phi * y_prev + theta * err_prev
        return y_now - nu, nu

    _, nu_rest = jax.lax.scan(step, series[0] - nu1, (series[:-1], series[1:]))
    nu = jnp.concatenate([jnp.reshape(nu1, (1,)), nu_rest])
    numpyro.sample("y", dist.Normal(nu, sigma), obs=y)


def low_dim_gauss_mix(N, y=None):
    mu = numpyro.sample("mu", OrderedNormal([0.0, 0.0], [2.0, 2.0]))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0).expand([2]).to_event(1))
    theta = numpyro.sample("theta", dist.Beta(5.0, 5.0))
    mixture = dist.MixtureSameFamily(dist.Categorical(probs=jnp.stack([theta, 1.0 - theta])),
                                     dist.Normal(mu, sigma))
    with numpyro.plate("cases", N):
        numpyro.sample("y", mixture, obs=y)


def gp_regr(x, series, y=None):
    """GP regression; y ~ MVN(0, K + sigma I) written as one conditional normal per case (Cholesky order),
    with the conditioning values taken from the observed ``series`` (= y)."""
    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    cov = _exp_quad_cov(x, alpha, rho) + sigma * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(cov)
    z = solve_triangular(L, series, lower=True)
    scale = jnp.diagonal(L)
    numpyro.sample("y", dist.Normal(series - scale * z, scale), obs=y)


def gp_pois_regr(x, k=None):
    N = x.shape[0]
    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    f_tilde = numpyro.sample("f_tilde", dist.Normal(0.0, 1.0).expand([N]).to_event(1))
    L = jnp.linalg.cholesky(_exp_quad_cov(x, alpha, rho) + 1e-10 * jnp.eye(N))
    f = L @ f_tilde
    numpyro.sample("k", dist.Poisson(jnp.exp(f)), obs=k)


def hmm_example(series, y=None):
    """Two-state Gaussian HMM (unit emission sd), uniform initial state; one predictive mixture per case."""
    theta1 = numpyro.sample("theta1", dist.Dirichlet(jnp.ones(2)))
    theta2 = numpyro.sample("theta2", dist.Dirichlet(jnp.ones(2)))
    mu = numpyro.sample("mu", OrderedNormal([3.0, 10.0], [1.0, 1.0], positive=True))
    log_trans = jnp.log(jnp.stack([theta1, theta2]))
    logits = _hmm_predictive_logits(log_trans, dist.Normal(mu, 1.0).log_prob(series[:, None]))
    n = series.shape[0]
    numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(logits=logits),
                                               dist.Normal(jnp.broadcast_to(mu, (n, 2)), 1.0)), obs=y)


def _hmm_drive(uv_series, alpha, emission, uv):
    theta1 = numpyro.sample("theta1", dist.Dirichlet(alpha[0]))
    theta2 = numpyro.sample("theta2", dist.Dirichlet(alpha[1]))
    log_trans = jnp.log(jnp.stack([theta1, theta2]))
    emit = emission()  # batch (K,), event (2,): (u, v) given the state
    n = uv_series.shape[0]
    logits = _hmm_predictive_logits(log_trans, emit.log_prob(uv_series[:, None, :]))
    components = _broadcast_components(emit, n)
    numpyro.sample("uv", dist.MixtureSameFamily(dist.Categorical(logits=logits), components), obs=uv)


def _broadcast_components(emit, n):
    base = emit.base_dist
    if isinstance(base, dist.Exponential):
        return dist.Exponential(jnp.broadcast_to(base.rate, (n,) + base.rate.shape)).to_event(1)
    return dist.Normal(jnp.broadcast_to(base.loc, (n,) + base.loc.shape),
                       jnp.broadcast_to(base.scale, (n,) + base.scale.shape)).to_event(1)


def hmm_drive_0(uv_series, alpha, uv=None):
    """Two-state HMM on (u, v) = (1/speed, hoop distance), exponential emissions with rates phi, lambda."""

    def emission():
        phi = numpyro.sample("phi", OrderedNormal([0.0, 3.0], [1.0, 1.0], positive=True))
        lam = numpyro.sample("lambda", OrderedNormal([0.0, 3.0], [1.0, 1.0], positive=True))
        return dist.Exponential(jnp.stack([phi, lam], -1)).to_event(1)

    _hmm_drive(uv_series, alpha, emission, uv)


def hmm_drive_1(uv_series, alpha, tau, rho, uv=None):
    """Two-state HMM on (u, v), normal emissions with means phi, lambda and known sds tau, rho."""

    def emission():
        phi = numpyro.sample("phi", OrderedNormal([0.0, 3.0], [1.0, 1.0]))
        lam = numpyro.sample("lambda", OrderedNormal([0.0, 3.0], [1.0, 1.0]))
        return dist.Normal(jnp.stack([phi, lam], -1), jnp.stack([tau, rho])).to_event(1)

    _hmm_drive(uv_series, alpha, emission, uv)


def diamonds(Xc, Y=None):
    """brms linear regression on centred predictors (the Stan program's transformed data Xc)."""
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([Xc.shape[1]]).to_event(1))
    intercept = numpyro.sample("Intercept", dist.StudentT(3.0, 8.0, 10.0))
    sigma = numpyro.sample("sigma", half_student_t(3.0, 10.0))
    numpyro.sample("Y", dist.Normal(intercept + Xc @ b, sigma), obs=Y)


def _spd_cov_exp_quad(slambda, sdgp, lscale):
    """Stan's spd_cov_exp_quad for one length-scale (D = 1)."""
    return sdgp ** 2 * jnp.sqrt(2 * jnp.pi) * lscale * jnp.exp(-0.5 * lscale ** 2 * slambda[:, 0] ** 2)


def accel_gp(Xgp_1, slambda_1, Xgp_sigma_1, slambda_sigma_1, Y=None):
    """brms approximate (Hilbert-space) GP for the mean and the log sd of the mcycle accelerations."""
    intercept = numpyro.sample("Intercept", dist.StudentT(3.0, -13.0, 36.0))
    sdgp_1 = numpyro.sample("sdgp_1", half_student_t(3.0, 36.0))
    lscale_1 = numpyro.sample("lscale_1", dist.InverseGamma(1.124909, 0.0177))
    zgp_1 = numpyro.sample("zgp_1", dist.Normal(0.0, 1.0).expand([Xgp_1.shape[1]]).to_event(1))
    intercept_sigma = numpyro.sample("Intercept_sigma", dist.StudentT(3.0, 0.0, 10.0))
    sdgp_sigma_1 = numpyro.sample("sdgp_sigma_1", half_student_t(3.0, 36.0))
    lscale_sigma_1 = numpyro.sample("lscale_sigma_1", dist.InverseGamma(1.124909, 0.0177))
    zgp_sigma_1 = numpyro.sample("zgp_sigma_1",
                                 dist.Normal(0.0, 1.0).expand([Xgp_sigma_1.shape[1]]).to_event(1))
    mu = intercept + Xgp_1 @ (jnp.sqrt(_spd_cov_exp_quad(slambda_1, sdgp_1, lscale_1)) * zgp_1)
    log_sigma = intercept_sigma + Xgp_sigma_1 @ (
        jnp.sqrt(_spd_cov_exp_quad(slambda_sigma_1, sdgp_sigma_1, lscale_sigma_1)) * zgp_sigma_1)
    # Far in the priors' tails (a half-t sd, an inverse-gamma length scale) the spectral densities overflow (inf * 0)
    # or the sd underflows to 0, and the density is NaN, where Stan rejects the point: there a case has zero density
    # (its mean at the most negative float: the square overflows to inf), as for the ODE ports.
    sigma = jnp.exp(log_sigma)
    ok = jnp.isfinite(mu) & jnp.isfinite(sigma) & (sigma > 0)
    far = jnp.finfo(jnp.result_type(mu)).min
    numpyro.sample("Y", dist.Normal(jnp.where(ok, mu, far), jnp.where(ok, sigma, 1.0)), obs=Y)


def _odeint(func, y0, ts, *params):
    from jax.experimental.ode import odeint

    # Stan's default tolerances for its ODE solvers (1e-6); the log-density check against Stan ran at 1e-10.
    return odeint(func, y0, ts, *params, rtol=RTOL, atol=ATOL, mxstep=100_000)


RTOL = ATOL = 1e-6


def _log_or_reject(z):
    """``log z`` where the ODE solution is positive and finite, else -inf: a lognormal term of zero density there,
    as Stan rejects a point where its solver fails or ``lognormal`` meets a non-positive location (parameters
    far in a prior's tail make the solution overflow)."""
    ok = jnp.isfinite(z) & (z > 0)
    return jnp.where(ok, jnp.log(jnp.where(ok, z, 1.0)), -jnp.inf)


def lotka_volterra(ts, y=None):
    """Predator-prey ODE; case 0 is the initial measurement y_init (time 0, z = z_init), cases 1..N the
    measurements at ``ts``; each case sums the two species' lognormal terms."""
    theta = numpyro.sample("theta", dist.TruncatedNormal(jnp.array([1.0, 0.05, 1.0, 0.05]),
                                                         jnp.array([0.5, 0.05, 0.5, 0.05]), low=0.0).to_event(1))
    z_init = numpyro.sample("z_init", dist.LogNormal(jnp.log(10.0), 1.0).expand([2]).to_event(1))
    sigma = numpyro.sample("sigma", dist.LogNormal(-1.0, 1.0).expand([2]).to_event(1))

    def dz_dt(z, t, theta):
        u, v = z[0], z[1]
        return jnp.stack([(theta[0] - theta[1] * v) * u, (-theta[2] + theta[3] * u) * v])

    z = _odeint(dz_dt, z_init, jnp.concatenate([jnp.zeros(1), ts]), theta)
    numpyro.sample("y", dist.LogNormal(_log_or_reject(z), sigma).to_event(1), obs=y)


def one_comp_mm_elim_abs(times, D, V, C_hat=None):
    """One-compartment pharmacokinetics, first-order absorption, Michaelis-Menten elimination (t0 = 0)."""
    k_a = numpyro.sample("k_a", dist.HalfCauchy(1.0))
    K_m = numpyro.sample("K_m", dist.HalfCauchy(1.0))
    V_m = numpyro.sample("V_m", dist.HalfCauchy(1.0))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(1.0))

    def dC_dt(C, t, k_a, K_m, V_m):
        dose = jnp.where(t > 0, jnp.exp(-k_a * t) * D * k_a / V, 0.0)
        return jnp.reshape(dose - (V_m / V) * C[0] / (K_m + C[0]), (1,))

    C = _odeint(dC_dt, jnp.zeros(1), jnp.concatenate([jnp.zeros(1), times]), k_a, K_m, V_m)[1:, 0]
    numpyro.sample("C_hat", dist.LogNormal(_log_or_reject(C), sigma), obs=C_hat)


# ------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Entry:
    """One posteriordb posterior and its NumPyro port.

    name : the posteriordb posterior name (also the data folder's name).
    model : the NumPyro program; keyword arguments from :meth:`args`.
    observed : the observed sites (leading axis = data cases); every other sample site is a latent.
    args : ``data.json`` dict -> the program's keyword arguments, observed values included (given to ``obs=``).
    params : {latent site: constrained values with a leading draw axis} -> {reference flat name: draws}.
    latents : ({reference flat name: draws}, args) -> {latent site: constrained values}; the inverse of params.
    sites : {latent site: event shape}, in the Stan program's parameter order (these are its parameters).
    simulates : whether ``sample_data`` draws a fresh data set (False where cases are conditioned on the
        observed past: time series, the GP regression, HMMs).
    stan_normalized / stan_offset / notes : from stan_check.json: whether the Stan program's log density is
        the port's exactly (offset 0), the constant log p_numpyro - log p_stan, and why.
    """

    name: str
    model: Callable
    observed: tuple
    args: Callable[[dict], dict]
    params: Callable[[dict], dict]
    latents: Callable[[Mapping, dict], dict]
    sites: Mapping[str, tuple]
    simulates: bool = True
    stan_normalized: bool | None = None
    stan_offset: float | None = None
    notes: str = ""

    def covariates(self, data: dict) -> dict:
        """The program's keyword arguments without the observed values (for ``bdmc.ppl.from_numpyro``)."""
        return {k: v for k, v in self.args(data).items() if k not in self.observed}

    def observations(self, data: dict) -> dict:
        """{observed site: values}: the data of a bdmc run."""
        args = self.args(data)
        return {k: args[k] for k in self.observed}


def _sites_params(sites, derived=None):
    """params() flattening the latent sites (and ``derived(samples) -> {name: value}`` extras, first)."""

    def params(samples):
        out = {}
        values = dict(samples)
        if derived is not None:
            values = {**derived(values), **values}
        for name, value in values.items():
            value = np.asarray(value)
            if value.ndim == 0:
                value = value[None]
            out.update(flat_names(name, value))
        return out

    return params


def _sites_latents(sites, inverse=None):
    def latents(flat, args):
        if inverse is not None:
            return inverse(flat, args)
        return {name: gather(flat, name, shape) for name, shape in sites.items()}

    return latents


def build_entry(name, model, observed, args, sites, *, params=None, latents=None, simulates=True):
    return Entry(name=name, model=model, observed=tuple(observed), args=args,
                 params=params or _sites_params(sites), latents=latents or _sites_latents(sites),
                 sites=dict(sites), simulates=simulates)


def _eight_schools_params(samples):
    tau, mu = np.asarray(samples["tau"])[:, None], np.asarray(samples["mu"])[:, None]
    theta = np.asarray(samples["theta_trans"]) * tau + mu
    out = flat_names("theta", theta)
    out.update({"mu": np.asarray(samples["mu"]), "tau": np.asarray(samples["tau"])})
    return out


def _eight_schools_latents(flat, args):
    mu, tau = np.asarray(flat["mu"], float), np.asarray(flat["tau"], float)
    theta = gather(flat, "theta", (len(args["sigma"]),))
    return {"theta_trans": (theta - mu[..., None]) / tau[..., None], "mu": mu, "tau": tau}


def _gp_pois_cholesky(x, alpha, rho):
    x = np.asarray(x, float)
    cov = alpha ** 2 * np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / rho ** 2) + 1e-10 * np.eye(len(x))
    return np.linalg.cholesky(cov)


def _gp_pois_params(samples):
    rho, alpha, f_tilde = (np.asarray(samples[k], float) for k in ("rho", "alpha", "f_tilde"))
    x = np.asarray(load("gp_pois_regr-gp_pois_regr")[0]["x"], float)
    f = np.stack([_gp_pois_cholesky(x, a, r) @ ft for a, r, ft in zip(alpha, rho, f_tilde, strict=False)])
    return {"rho": rho, "alpha": alpha, **flat_names("f", f)}


def _gp_pois_latents(flat, args):
    rho, alpha = np.asarray(flat["rho"], float), np.asarray(flat["alpha"], float)
    f = gather(flat, "f", (len(args["x"]),))
    x = np.asarray(args["x"], float)
    f_tilde = np.stack([np.linalg.solve(_gp_pois_cholesky(x, a, r), fi)
                        for a, r, fi in zip(alpha, rho, f, strict=False)])
    return {"rho": rho, "alpha": alpha, "f_tilde": f_tilde}


def _gp_pois_args(d):
    return {"x": floats(d["x"]), "k": jnp.asarray(np.asarray(d["k"], dtype=np.int32))}


def _arK_args(d):
    y, K = np.asarray(d["y"], float), int(d["K"])
    lags = np.stack([y[K - k:len(y) - k] for k in range(1, K + 1)], -1)
    return {"lags": floats(lags), "y": floats(y[K:])}


def _hmm_drive_args(d, normal):
    uv = np.stack([np.asarray(d["u"], float), np.asarray(d["v"], float)], -1)
    out = {"uv_series": floats(uv), "alpha": floats(d["alpha"])}
    if normal:
        out.update(tau=floats(d["tau"]), rho=floats(d["rho"]))
    out["uv"] = floats(uv)
    return out


def _diamonds_args(d):
    X = np.asarray(d["X"], float)
    Xc = X[:, 1:] - X[:, 1:].mean(0)
    return {"Xc": floats(Xc), "Y": floats(d["Y"])}


def _accel_gp_args(d):
    return {k: floats(d[k]) for k in ("Xgp_1", "slambda_1", "Xgp_sigma_1", "slambda_sigma_1", "Y")}


def _lotka_volterra_args(d):
    y = np.concatenate([np.asarray(d["y_init"], float)[None], np.asarray(d["y"], float)])
    return {"ts": floats(d["ts"]), "y": floats(y)}


def _one_comp_args(d):
    if float(d["t0"]) != 0.0:
        raise ValueError("the port assumes t0 = 0")
    return {"times": floats(d["times"]), "D": float(d["D"]), "V": float(d["V"]), "C_hat": floats(d["C_hat"])}


def _registry() -> dict:
    entries = [
        build_entry("eight_schools-eight_schools_noncentered", eight_schools_noncentered, ["y"],
               lambda d: {"sigma": floats(d["sigma"]), "y": floats(d["y"])},
               {"theta_trans": (8,), "mu": (), "tau": ()},
               params=_eight_schools_params, latents=_eight_schools_latents),
        build_entry("eight_schools-eight_schools_centered", eight_schools_centered, ["y"],
               lambda d: {"sigma": floats(d["sigma"]), "y": floats(d["y"])}, {"theta": (8,), "mu": (), "tau": ()}),
        build_entry("sblrc-blr", blr, ["y"], lambda d: {"X": floats(d["X"]), "y": floats(d["y"])},
               {"beta": (5,), "sigma": ()}),
        build_entry("sblri-blr", blr, ["y"], lambda d: {"X": floats(d["X"]), "y": floats(d["y"])},
               {"beta": (5,), "sigma": ()}),
        build_entry("arK-arK", arK, ["y"], _arK_args, {"alpha": (), "beta": (5,), "sigma": ()}, simulates=False),
        build_entry("arma-arma11", arma11, ["y"], lambda d: {"series": floats(d["y"]), "y": floats(d["y"])},
               {"mu": (), "phi": (), "theta": (), "sigma": ()}, simulates=False),
        build_entry("low_dim_gauss_mix-low_dim_gauss_mix", low_dim_gauss_mix, ["y"],
               lambda d: {"N": int(d["N"]), "y": floats(d["y"])}, {"mu": (2,), "sigma": (2,), "theta": ()}),
        build_entry("gp_pois_regr-gp_regr", gp_regr, ["y"],
               lambda d: {"x": floats(d["x"]), "series": floats(d["y"]), "y": floats(d["y"])},
               {"rho": (), "alpha": (), "sigma": ()}, simulates=False),
        build_entry("gp_pois_regr-gp_pois_regr", gp_pois_regr, ["k"], _gp_pois_args,
               {"rho": (), "alpha": (), "f_tilde": (11,)}, params=_gp_pois_params, latents=_gp_pois_latents),
        build_entry("hmm_example-hmm_example", hmm_example, ["y"],
               lambda d: {"series": floats(d["y"]), "y": floats(d["y"])},
               {"theta1": (2,), "theta2": (2,), "mu": (2,)}, simulates=False),
        build_entry("bball_drive_event_0-hmm_drive_0", hmm_drive_0, ["uv"], lambda d: _hmm_drive_args(d, False),
               {"theta1": (2,), "theta2": (2,), "phi": (2,), "lambda": (2,)}, simulates=False),
        build_entry("bball_drive_event_1-hmm_drive_1", hmm_drive_1, ["uv"], lambda d: _hmm_drive_args(d, True),
               {"theta1": (2,), "theta2": (2,), "phi": (2,), "lambda": (2,)}, simulates=False),
        build_entry("diamonds-diamonds", diamonds, ["Y"], _diamonds_args,
               {"b": (24,), "Intercept": (), "sigma": ()}),
        build_entry("mcycle_gp-accel_gp", accel_gp, ["Y"], _accel_gp_args,
               {"Intercept": (), "sdgp_1": (), "lscale_1": (), "zgp_1": (40,), "Intercept_sigma": (),
                "sdgp_sigma_1": (), "lscale_sigma_1": (), "zgp_sigma_1": (20,)}),
        build_entry("hudson_lynx_hare-lotka_volterra", lotka_volterra, ["y"], _lotka_volterra_args,
               {"theta": (4,), "z_init": (2,), "sigma": (2,)}),
        build_entry("one_comp_mm_elim_abs-one_comp_mm_elim_abs", one_comp_mm_elim_abs, ["C_hat"], _one_comp_args,
               {"k_a": (), "K_m": (), "V_m": (), "sigma": ()}),
    ]
    return {e.name: e for e in entries}


def stan_checks() -> dict:
    """Every recorded check against Stan: ``stan_check.json`` and each family's ``stan_check_<family>.json``."""
    checks = {}
    for path in sorted(DATA_DIR.glob("stan_check*.json")):
        checks.update(json.loads(path.read_text()))
    return checks


def _with_stan_check(entries: dict) -> dict:
    import dataclasses

    checks = stan_checks()
    out = {}
    for name, entry in entries.items():
        check = checks.get(name)
        if check is not None and check.get("ok"):
            entry = dataclasses.replace(entry, stan_normalized=bool(check["normalized"]),
                                        stan_offset=float(check.get("offset_tight", check["offset"])),
                                        notes=check["explanation"])
        out[name] = entry
    return out


def _all_entries() -> dict:
    """The ports written here and those of :mod:`posteriordb_ports` (one module per family)."""
    import posteriordb_ports  # imports this module: its helpers are defined by now

    entries = _registry()
    for entry in posteriordb_ports.entries():
        if entry.name in entries:
            raise ValueError(f"{entry.name} is ported twice")
        entries[entry.name] = entry
    return entries


POSTERIORS: dict[str, Entry] = _with_stan_check(_all_entries())


def load(name: str) -> tuple[dict, dict, dict]:
    """(data, reference summaries, info) of a shipped posterior, read from ``data/posteriordb/<name>/``."""
    folder = DATA_DIR / name
    return tuple(json.loads((folder / f).read_text()) for f in ("data.json", "reference.json", "info.json"))
