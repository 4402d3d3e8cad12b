"""NumPyro programs of the ``hierarchical`` family's posteriordb ports, and the likelihood distributions they need.

Where a Stan program marginalizes a discrete indicator with ``log_sum_exp`` (data augmentation in capture-recapture
and occupancy models) or scores a case whose probabilities depend on the case's own earlier values (the dogs'
learning model), the case's distribution is a small :class:`numpyro.distributions.Distribution` with one term per
case (an individual, a species, a dog) that can also simulate the case.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints


def _log1m(p):
    return jnp.log1p(-p)


def _all_zero_or_never(zero, log_never):
    """``log_never`` where a case had no detection, else -inf (a detected individual is certainly present)."""
    return jnp.where(zero, log_never, -jnp.inf)


# ------------------------------------------------------------------------------------------- distributions


class AvoidanceLearning(dist.Distribution):
    """Dog j's trials: y[t] ~ bernoulli(a^(sum of y before t) * b^(trials before t - sum of y before t)).
    Batch (dogs,), event (trials,)."""

    arg_constraints = {}
    support = constraints.independent(constraints.boolean, 1)

    def __init__(self, a, b, n_trials, *, validate_args=None):
        self.a, self.b = a, b
        super().__init__(batch_shape=jnp.shape(a), event_shape=(n_trials,), validate_args=validate_args)

    def log_prob(self, value):
        before = jnp.cumsum(value, -1) - value
        other = jnp.arange(value.shape[-1]) - before
        p = self.a[..., None] ** before * self.b[..., None] ** other
        hit = value == 1
        return jnp.sum(jnp.where(hit, jnp.log(jnp.where(hit, p, 1.0)), _log1m(jnp.where(hit, 0.0, p))), -1)

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape
        a, b = jnp.broadcast_to(self.a, shape), jnp.broadcast_to(self.b, shape)

        def step(counts, key):
            p = a ** counts[0] * b ** counts[1]
            y = jax.random.bernoulli(key, p).astype(jnp.int32)
            return (counts[0] + y, counts[1] + 1 - y), y

        zero = jnp.zeros(shape, jnp.int32)
        _, ys = jax.lax.scan(step, (zero, zero), jax.random.split(key, self.event_shape[0]))
        return jnp.moveaxis(ys, 0, -1)


class AugmentedOccupancy(dist.Distribution):
    """One species' detections at J sites (K visits each): available with probability Omega; an available
    species occupies each site with probability inv_logit(logit_psi) and is detected on each visit to an occupied
    site with probability inv_logit(logit_theta). Batch (species,), event (sites,)."""

    arg_constraints = {}
    support = constraints.independent(constraints.nonnegative_integer, 1)

    def __init__(self, Omega, logit_psi, logit_theta, n_sites, n_visits, *, validate_args=None):
        self.Omega, self.logit_psi, self.logit_theta, self.K = Omega, logit_psi, logit_theta, n_visits
        super().__init__(batch_shape=jnp.shape(logit_psi), event_shape=(n_sites,), validate_args=validate_args)

    def log_prob(self, value):
        psi, theta = self.logit_psi[..., None], self.logit_theta[..., None]
        seen = jax.nn.log_sigmoid(psi) + dist.Binomial(self.K, logits=theta).log_prob(value)
        unseen = jnp.logaddexp(jax.nn.log_sigmoid(psi) + dist.Binomial(self.K, logits=theta).log_prob(0),
                               jax.nn.log_sigmoid(-psi))
        available = jnp.log(self.Omega) + jnp.sum(jnp.where(value > 0, seen, unseen), -1)
        return jnp.logaddexp(available, _all_zero_or_never(jnp.all(value == 0, -1), _log1m(self.Omega)))

    def sample(self, key, sample_shape=()):
        k1, k2, k3 = jax.random.split(key, 3)
        shape = tuple(sample_shape) + self.batch_shape + self.event_shape
        available = jax.random.bernoulli(k1, self.Omega, tuple(sample_shape) + self.batch_shape)[..., None]
        occupied = jax.random.bernoulli(k2, jax.nn.sigmoid(self.logit_psi[..., None]), shape)
        counts = dist.Binomial(self.K, logits=jnp.broadcast_to(self.logit_theta[..., None], shape)).sample(k3)
        return jnp.where(available & occupied, counts, 0)


class AugmentedCaptures(dist.Distribution):
    """One individual of an augmented population: present with probability omega, then captured on occasion t
    with log-odds logit_p[t] + gamma * (captured on t - 1) (gamma = 0: no behavioural response). Batch
    (individuals,), event (occasions,)."""

    arg_constraints = {}
    support = constraints.independent(constraints.boolean, 1)

    def __init__(self, omega, logit_p, gamma=0.0, *, validate_args=None):
        self.omega, self.logit_p, self.gamma = omega, logit_p, gamma
        super().__init__(batch_shape=logit_p.shape[:-1], event_shape=logit_p.shape[-1:], validate_args=validate_args)

    def log_prob(self, value):
        previous = jnp.concatenate([jnp.zeros_like(value[..., :1]), value[..., :-1]], -1)
        logits = self.logit_p + self.gamma * previous
        present = jnp.log(self.omega) + jnp.sum(dist.Bernoulli(logits=logits).log_prob(value), -1)
        return jnp.logaddexp(present, _all_zero_or_never(jnp.all(value == 0, -1), _log1m(self.omega)))

    def sample(self, key, sample_shape=()):
        k1, k2 = jax.random.split(key)
        shape = tuple(sample_shape) + self.batch_shape
        present = jax.random.bernoulli(k1, self.omega, shape).astype(jnp.int32)
        logits = jnp.broadcast_to(self.logit_p, shape + self.event_shape)

        def step(prev, inputs):
            key, logit = inputs
            y = jax.random.bernoulli(key, jax.nn.sigmoid(logit + self.gamma * prev)).astype(jnp.int32)
            return y, y

        keys = jax.random.split(k2, self.event_shape[0])
        _, ys = jax.lax.scan(step, jnp.zeros(shape, jnp.int32), (keys, jnp.moveaxis(logits, -1, 0)))
        return jnp.moveaxis(ys, 0, -1) * present[..., None]


class AugmentedCaptureCount(dist.Distribution):
    """One individual of an augmented population: present with probability omega, then captured on
    binomial(T, inv_logit(logit_p)) of T occasions. Batch (individuals,)."""

    arg_constraints = {}
    support = constraints.nonnegative_integer

    def __init__(self, omega, logit_p, n_occasions, *, validate_args=None):
        self.omega, self.logit_p, self.T = omega, logit_p, n_occasions
        super().__init__(batch_shape=jnp.shape(logit_p), validate_args=validate_args)

    def log_prob(self, value):
        present = jnp.log(self.omega) + dist.Binomial(self.T, logits=self.logit_p).log_prob(value)
        return jnp.logaddexp(present, _all_zero_or_never(value == 0, _log1m(self.omega)))

    def sample(self, key, sample_shape=()):
        k1, k2 = jax.random.split(key)
        shape = tuple(sample_shape) + self.batch_shape
        present = jax.random.bernoulli(k1, self.omega, shape)
        counts = dist.Binomial(self.T, logits=jnp.broadcast_to(self.logit_p, shape)).sample(k2)
        return jnp.where(present, counts, 0)


# ------------------------------------------------------------------------------------------- programs


def losscurve_sislob(cohort, t_idx, premium, t_value, weibull, loss=None):
    """Loss development: cumulative loss = LR[cohort] * premium[cohort] * growth factor (Weibull / log-logistic)."""
    omega = numpyro.sample("omega", dist.LogNormal(0.0, 0.5))
    theta = numpyro.sample("theta", dist.LogNormal(0.0, 0.5))
    mu_LR = numpyro.sample("mu_LR", dist.Normal(0.0, 0.5))
    sd_LR = numpyro.sample("sd_LR", dist.LogNormal(0.0, 0.5))
    LR = numpyro.sample("LR", dist.LogNormal(mu_LR, sd_LR).expand([premium.shape[0]]).to_event(1))
    loss_sd = numpyro.sample("loss_sd", dist.LogNormal(0.0, 0.7))
    if weibull:
        gf = 1.0 - jnp.exp(-((t_value / theta) ** omega))
    else:
        gf = t_value ** omega / (t_value ** omega + theta ** omega)
    lm = LR[cohort] * premium[cohort] * gf[t_idx]
    numpyro.sample("loss", dist.Normal(lm, loss_sd * premium[cohort]), obs=loss)


def pilots(group, scenario, n_groups, n_scenarios, y=None):
    mu_a = numpyro.sample("mu_a", dist.Normal(0.0, 1.0))
    sigma_a = numpyro.sample("sigma_a", dist.Uniform(0.0, 100.0))
    a = numpyro.sample("a", dist.Normal(10.0 * mu_a, sigma_a).expand([n_groups]).to_event(1))
    mu_b = numpyro.sample("mu_b", dist.Normal(0.0, 1.0))
    sigma_b = numpyro.sample("sigma_b", dist.Uniform(0.0, 100.0))
    b = numpyro.sample("b", dist.Normal(10.0 * mu_b, sigma_b).expand([n_scenarios]).to_event(1))
    sigma_y = numpyro.sample("sigma_y", dist.Uniform(0.0, 100.0))
    numpyro.sample("y", dist.Normal(a[group] + b[scenario], sigma_y), obs=y)


def _seeds_alphas(scale):
    return [numpyro.sample(k, dist.Normal(0.0, scale)) for k in ("alpha0", "alpha1", "alpha12", "alpha2")]


def _seeds_likelihood(alphas, b, N, x1, x2, n):
    alpha0, alpha1, alpha12, alpha2 = alphas
    numpyro.sample("n", dist.Binomial(N, logits=alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1 * x2 + b), obs=n)


def seeds_centered(N, x1, x2, n=None):
    """Random effects c, centred to b = c - mean(c) in the likelihood."""
    alphas = _seeds_alphas(1.0)
    sigma = numpyro.sample("sigma", dist.HalfCauchy(1.0))
    c = numpyro.sample("c", dist.Normal(0.0, sigma).expand([N.shape[0]]).to_event(1))
    _seeds_likelihood(alphas, c - jnp.mean(c), N, x1, x2, n)


def seeds_stanified(N, x1, x2, n=None):
    alphas = _seeds_alphas(1.0)
    sigma = numpyro.sample("sigma", dist.HalfCauchy(1.0))
    b = numpyro.sample("b", dist.Normal(0.0, sigma).expand([N.shape[0]]).to_event(1))
    _seeds_likelihood(alphas, b, N, x1, x2, n)


def glmm_poisson(year, C=None):
    """Poisson counts with a cubic trend in year and normal year effects eps."""
    alpha = numpyro.sample("alpha", dist.Uniform(-20.0, 20.0))
    beta1 = numpyro.sample("beta1", dist.Uniform(-10.0, 10.0))
    # Stan declares beta2 on (-10, 20) but gives it uniform(-10, 10): the prior's support is (-10, 10).
    beta2 = numpyro.sample("beta2", dist.Uniform(-10.0, 10.0))
    beta3 = numpyro.sample("beta3", dist.Uniform(-10.0, 10.0))
    sigma = numpyro.sample("sigma", dist.Uniform(0.0, 5.0))
    eps = numpyro.sample("eps", dist.Normal(0.0, sigma).expand([year.shape[0]]).to_event(1))
    log_lambda = alpha + beta1 * year + beta2 * year ** 2 + beta3 * year ** 3 + eps
    numpyro.sample("C", dist.Poisson(jnp.exp(log_lambda)), obs=C)


def dogs_nonhierarchical(n_dogs, n_trials, y=None):
    mu = numpyro.sample("mu_logit_ab", dist.Logistic(0.0, 1.0).expand([2]).to_event(1))
    sigma = numpyro.sample("sigma_logit_ab", dist.HalfNormal(1.0).expand([2]).to_event(1))
    L = numpyro.sample("L_logit_ab", dist.LKJCholesky(2, 2.0))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([n_dogs, 2]).to_event(2))
    logit_ab = mu + z @ (sigma[:, None] * L)
    ab = jax.nn.sigmoid(logit_ab)
    numpyro.sample("y", AvoidanceLearning(ab[:, 0], ab[:, 1], n_trials), obs=y)


def election88_full(age, edu, age_edu, state, region, black, female, v_prev, sizes, y=None):
    effects = {}
    for name, size in zip("abcde", sizes, strict=True):
        scale = numpyro.sample(f"sigma_{name}", dist.Uniform(0.0, 100.0))
        effects[name] = numpyro.sample(name, dist.Normal(0.0, scale).expand([size]).to_event(1))
    beta = numpyro.sample("beta", dist.Normal(0.0, 100.0).expand([5]).to_event(1))
    y_hat = (beta[0] + beta[1] * black + beta[2] * female + beta[4] * female * black + beta[3] * v_prev
             + effects["a"][age] + effects["b"][edu] + effects["c"][age_edu] + effects["d"][state]
             + effects["e"][region])
    numpyro.sample("y", dist.Bernoulli(logits=y_hat), obs=y)


def multi_occupancy(n_species, n_sites, n_visits, X=None):
    """Species occupancy with data augmentation to S species; (uv1, uv2) bivariate normal per species."""
    alpha = numpyro.sample("alpha", dist.Cauchy(0.0, 2.5))
    beta = numpyro.sample("beta", dist.Cauchy(0.0, 2.5))
    Omega = numpyro.sample("Omega", dist.Beta(2.0, 2.0))
    # (rho_uv + 1) / 2 ~ beta(2, 2); the map's domain makes the support (-1, 1), not the real line
    to_rho = dist.transforms.AffineTransform(-1.0, 2.0, domain=constraints.unit_interval)
    rho = numpyro.sample("rho_uv", dist.TransformedDistribution(dist.Beta(2.0, 2.0), to_rho))
    sigma = numpyro.sample("sigma_uv", dist.HalfCauchy(2.5).expand([2]).to_event(1))
    uv1 = numpyro.sample("uv1", dist.Normal(0.0, sigma[0]).expand([n_species]).to_event(1))
    uv2 = numpyro.sample("uv2", dist.Normal(rho * sigma[1] / sigma[0] * uv1,
                                            sigma[1] * jnp.sqrt(1.0 - rho ** 2)).to_event(1))
    numpyro.sample("X", AugmentedOccupancy(Omega, uv1 + alpha, uv2 + beta, n_sites, n_visits), obs=X)


def irt_2pl(n_items, n_persons, y=None):
    sigma_theta = numpyro.sample("sigma_theta", dist.HalfCauchy(2.0))
    theta = numpyro.sample("theta", dist.Normal(0.0, sigma_theta).expand([n_persons]).to_event(1))
    sigma_a = numpyro.sample("sigma_a", dist.HalfCauchy(2.0))
    a = numpyro.sample("a", dist.LogNormal(0.0, sigma_a).expand([n_items]).to_event(1))
    mu_b = numpyro.sample("mu_b", dist.Normal(0.0, 5.0))
    sigma_b = numpyro.sample("sigma_b", dist.HalfCauchy(2.0))
    b = numpyro.sample("b", dist.Normal(mu_b, sigma_b).expand([n_items]).to_event(1))
    numpyro.sample("y", dist.Bernoulli(logits=a[:, None] * (theta - b[:, None])).to_event(1), obs=y)


def capture_history(M, T, sigma_max, behaviour, y=None):
    """Mth (behaviour False) / Mtbh (True): occasion effects, individual effects, and (Mtbh) a recapture effect."""
    omega = numpyro.sample("omega", dist.Uniform(0.0, 1.0))
    mean_p = numpyro.sample("mean_p", dist.Uniform(0.0, 1.0).expand([T]).to_event(1))
    gamma = numpyro.sample("gamma", dist.Normal(0.0, 10.0)) if behaviour else 0.0
    sigma = numpyro.sample("sigma", dist.Uniform(0.0, sigma_max))
    eps_raw = numpyro.sample("eps_raw", dist.Normal(0.0, 1.0).expand([M]).to_event(1))
    logit_p = jax.scipy.special.logit(mean_p) + (sigma * eps_raw)[:, None]
    numpyro.sample("y", AugmentedCaptures(omega, logit_p, gamma), obs=y)


def Mh(M, T, y=None):
    """Individual heterogeneity in capture probability; y[i] = captures of individual i in T occasions."""
    omega = numpyro.sample("omega", dist.Uniform(0.0, 1.0))
    mean_p = numpyro.sample("mean_p", dist.Uniform(0.0, 1.0))
    sigma = numpyro.sample("sigma", dist.Uniform(0.0, 5.0))
    eps_raw = numpyro.sample("eps_raw", dist.Normal(0.0, 1.0).expand([M]).to_event(1))
    eps = jax.scipy.special.logit(mean_p) + sigma * eps_raw
    numpyro.sample("y", AugmentedCaptureCount(omega, eps, T), obs=y)


def glmm1(site, nsite, obs=None):
    alpha_mu = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    sd_alpha = numpyro.sample("sd_alpha", dist.Uniform(0.0, 5.0))
    alpha = numpyro.sample("alpha", dist.Normal(alpha_mu, sd_alpha).expand([nsite]).to_event(1))
    numpyro.sample("obs", dist.Poisson(jnp.exp(alpha[site])), obs=obs)


def lda(doc, M, V, K, w=None):
    """Latent Dirichlet allocation with the topic of each word summed out: w[n] ~ categorical(theta[doc] @ phi)."""
    theta = numpyro.sample("theta", dist.Dirichlet(jnp.ones(K)).expand([M]).to_event(1))
    phi = numpyro.sample("phi", dist.Dirichlet(jnp.ones(V)).expand([K]).to_event(1))
    numpyro.sample("w", dist.Categorical(probs=theta[doc] @ phi), obs=w)


def hier_2pl(item, person, n_items, n_persons, y=None):
    """2PL IRT with (log discrimination xi1, difficulty xi2) bivariate normal per item, written as xi1's normal and
    xi2's conditional normal given xi1."""
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([n_persons]).to_event(1))
    mu = numpyro.sample("mu", dist.Normal(jnp.array([0.0, 0.0]), jnp.array([1.0, 5.0])).to_event(1))
    tau = numpyro.sample("tau", dist.Exponential(0.1).expand([2]).to_event(1))
    L = numpyro.sample("L_Omega", dist.LKJCholesky(2, 4.0))
    xi1 = numpyro.sample("xi1", dist.Normal(mu[0], tau[0]).expand([n_items]).to_event(1))
    xi2 = numpyro.sample("xi2", dist.Normal(mu[1] + tau[1] * L[1, 0] * (xi1 - mu[0]) / tau[0],
                                            tau[1] * L[1, 1]).to_event(1))
    numpyro.sample("y", dist.Bernoulli(logits=jnp.exp(xi1)[item] * (theta[person] - xi2[item])), obs=y)
