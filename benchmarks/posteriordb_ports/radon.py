"""NumPyro ports of posteriordb's radon programs (Gelman and Hill's Minnesota / US radon regressions).

Thirteen Stan programs on three data sets: ``radon_mn`` (Minnesota, 919 houses in 85 counties), ``radon_all`` (the
US, 12573 houses in 386 counties) and ``radon_mod`` (the same US data under other names, for ``radon_county``). One
NumPyro program per Stan program; a program on two data sets is two entries. The centered and noncentered programs
define the same posterior; the noncentered ones sample the standardized ``alpha_raw`` / ``beta_raw`` (their Stan
parameters, hence the sites) and report ``alpha = mu_alpha + sigma_alpha * alpha_raw`` (posteriordb's dimensions)
through ``params``. County indices are 1-based in the data and 0-based in the programs' ``county`` covariate.

Every likelihood is ``target += normal_lpdf`` per house (normalized) except ``radon_county``'s ``y ~ normal``; the
priors are ``~`` statements, which drop their constants (``EXPECTED`` below).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import posteriordb_models as pm

from bdmc.errors import DataError

C = 0.5 * math.log(2 * math.pi)
LOG2, LOG10 = math.log(2.0), math.log(10.0)
COUNTIES = {"radon_mn": 85, "radon_all": 386, "radon_mod": 386}


# ------------------------------------------------------------------------------------------- programs


def _normal_vector(name, loc, scale, size):
    return numpyro.sample(name, dist.Normal(loc, scale).expand([size]).to_event(1))


def _likelihood(mu, sigma_y, log_radon):
    numpyro.sample("log_radon", dist.Normal(mu, sigma_y), obs=log_radon)


def radon_pooled(floor_measure, log_radon=None):
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 10.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0))
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    _likelihood(alpha + beta * floor_measure, sigma_y, log_radon)


def radon_county_intercept(J, county, floor_measure, log_radon=None):
    alpha = _normal_vector("alpha", 0.0, 10.0, J)
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0))
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    _likelihood(alpha[county] + beta * floor_measure, sigma_y, log_radon)


def _county_effect(name, J, centered):
    """``name[J] ~ normal(mu_name, sigma_name)`` with its hyperparameters: centered (the vector itself is the
    parameter) or noncentered (``name_raw ~ normal(0, 1)``, ``name = mu_name + sigma_name * name_raw``)."""
    mu = numpyro.sample("mu_" + name, dist.Normal(0.0, 10.0))
    sigma = numpyro.sample("sigma_" + name, dist.HalfNormal(1.0))
    if centered:
        return _normal_vector(name, mu, sigma, J)
    return mu + sigma * _normal_vector(name + "_raw", 0.0, 1.0, J)


def _partially_pooled(centered):
    def model(J, county, log_radon=None):
        alpha = _county_effect("alpha", J, centered)
        sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
        _likelihood(alpha[county], sigma_y, log_radon)

    return model


def _variable_intercept(centered):
    def model(J, county, floor_measure, log_radon=None):
        alpha = _county_effect("alpha", J, centered)
        beta = numpyro.sample("beta", dist.Normal(0.0, 10.0))
        sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
        _likelihood(alpha[county] + floor_measure * beta, sigma_y, log_radon)

    return model


def _variable_slope(centered):
    def model(J, county, floor_measure, log_radon=None):
        alpha = numpyro.sample("alpha", dist.Normal(0.0, 10.0))
        beta = _county_effect("beta", J, centered)
        sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
        _likelihood(alpha + floor_measure * beta[county], sigma_y, log_radon)

    return model


def _hierarchical_intercept(centered):
    def model(J, county, log_uppm, floor_measure, log_radon=None):
        alpha = _county_effect("alpha", J, centered)
        beta = _normal_vector("beta", 0.0, 10.0, 2)
        sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
        _likelihood(alpha[county] + log_uppm * beta[0] + floor_measure * beta[1], sigma_y, log_radon)

    return model


def _variable_intercept_slope(centered):
    def model(J, county, floor_measure, log_radon=None):
        alpha = _county_effect("alpha", J, centered)
        beta = _county_effect("beta", J, centered)
        sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
        _likelihood(alpha[county] + floor_measure * beta[county], sigma_y, log_radon)

    return model


def radon_county(J, county, y=None):
    """The warmup paper's county-intercept model: implicit uniform(0, 100) priors on both scales."""
    mu_a = numpyro.sample("mu_a", dist.Normal(0.0, 1.0))
    sigma_a = numpyro.sample("sigma_a", dist.Uniform(0.0, 100.0))
    sigma_y = numpyro.sample("sigma_y", dist.Uniform(0.0, 100.0))
    a = _normal_vector("a", mu_a, sigma_a, J)
    numpyro.sample("y", dist.Normal(a[county], sigma_y), obs=y)


def _named(fn, name):
    fn.__name__ = fn.__qualname__ = name
    return fn


radon_partially_pooled_centered = _named(_partially_pooled(True), "radon_partially_pooled_centered")
radon_partially_pooled_noncentered = _named(_partially_pooled(False), "radon_partially_pooled_noncentered")
radon_variable_intercept_centered = _named(_variable_intercept(True), "radon_variable_intercept_centered")
radon_variable_intercept_noncentered = _named(_variable_intercept(False), "radon_variable_intercept_noncentered")
radon_variable_slope_centered = _named(_variable_slope(True), "radon_variable_slope_centered")
radon_variable_slope_noncentered = _named(_variable_slope(False), "radon_variable_slope_noncentered")
radon_hierarchical_intercept_centered = _named(_hierarchical_intercept(True),
                                               "radon_hierarchical_intercept_centered")
radon_hierarchical_intercept_noncentered = _named(_hierarchical_intercept(False),
                                                  "radon_hierarchical_intercept_noncentered")
radon_variable_intercept_slope_centered = _named(_variable_intercept_slope(True),
                                                 "radon_variable_intercept_slope_centered")
radon_variable_intercept_slope_noncentered = _named(_variable_intercept_slope(False),
                                                    "radon_variable_intercept_slope_noncentered")


# ------------------------------------------------------------------------------------------- data


def _args(data_name, covariates, observed="log_radon"):
    """data.json -> keyword arguments: ``J`` and the 0-based ``county`` where the program takes them, the named
    real covariates, and the observed values."""
    J = COUNTIES[data_name]

    def args(d):
        if int(d["J"]) != J or int(d["N"]) != len(d[observed]):
            raise DataError(f"{data_name}: expected J = {J} counties and N = len({observed})")
        out = {}
        for key in covariates:
            if key == "J":
                out["J"] = J
            elif key == "county":
                index = np.asarray(d["county" if data_name == "radon_mod" else "county_idx"], dtype=np.int32)
                if index.min() < 1 or index.max() > J:
                    raise DataError(f"{data_name}: county indices outside 1..{J}")
                out["county"] = jnp.asarray(index - 1)
            else:
                out[key] = pm.floats(d[key])
        out[observed] = pm.floats(d[observed])
        return out

    return args


# ------------------------------------------------------------------------------------------- params


def _noncentered(sites, raw):
    """params / latents for a noncentered program: ``raw = {raw site: (reported name, loc site, scale site)}``; the
    reported flat names (posteriordb's dimensions) hold ``loc + scale * raw`` in place of the raw site."""

    def params(samples):
        out = {}
        for name, value in samples.items():
            value = np.asarray(value, float)
            if name in raw:
                new, loc, scale = raw[name]
                loc, scale = (np.asarray(samples[k], float)[..., None] for k in (loc, scale))
                value = loc + scale * value
                name = new
            out.update(pm.flat_names(name, value if value.ndim else value[None]))
        return out

    def latents(flat, args):
        out = {name: pm.gather(flat, name, shape) for name, shape in sites.items() if name not in raw}
        for name, (new, loc, scale) in raw.items():
            out[name] = (pm.gather(flat, new, sites[name]) - out[loc][..., None]) / out[scale][..., None]
        return {name: out[name] for name in sites}

    return params, latents


def _sites(program, J):
    """The Stan program's parameters, in its order, with their shapes."""
    hyper = {"mu_alpha": (), "sigma_alpha": ()}
    table = {
        "radon_pooled": {"alpha": (), "beta": (), "sigma_y": ()},
        "radon_county_intercept": {"alpha": (J,), "beta": (), "sigma_y": ()},
        "radon_partially_pooled": {"alpha": (J,), **hyper, "sigma_y": ()},
        "radon_variable_intercept": {"alpha": (J,), "beta": (), **hyper, "sigma_y": ()},
        "radon_variable_slope": {"alpha": (), "beta": (J,), "mu_beta": (), "sigma_beta": (), "sigma_y": ()},
        "radon_hierarchical_intercept": {"alpha": (J,), "beta": (2,), **hyper, "sigma_y": ()},
        "radon_variable_intercept_slope": {"sigma_y": (), "sigma_alpha": (), "sigma_beta": (), "alpha": (J,),
                                           "beta": (J,), "mu_alpha": (), "mu_beta": ()},
        "radon_county": {"a": (J,), "mu_a": (), "sigma_a": (), "sigma_y": ()},
    }
    return table[program]


def _base(program, centered):
    """The program's name without its ``_centered`` / ``_noncentered`` suffix."""
    return program if centered is None else program.rsplit("_", 1)[0]


def _entry(data_name, program, model, covariates, *, centered=None, observed="log_radon"):
    J = COUNTIES[data_name]
    sites = _sites(_base(program, centered), J)
    extra = {}
    if centered is False:
        effects = [name for name, shape in sites.items() if shape == (J,)]
        sites = {(name + "_raw" if name in effects else name): shape for name, shape in sites.items()}
        raw = {name + "_raw": (name, "mu_" + name, "sigma_" + name) for name in effects}
        extra["params"], extra["latents"] = _noncentered(sites, raw)
    return pm.build_entry(f"{data_name}-{program}", model, [observed], _args(data_name, covariates, observed),
                          sites, **extra)


PROGRAMS = [  # (program, model, covariates, centered: None where the program has no noncentered twin)
    ("radon_pooled", radon_pooled, ["floor_measure"], None),
    ("radon_county_intercept", radon_county_intercept, ["J", "county", "floor_measure"], None),
    ("radon_partially_pooled_centered", radon_partially_pooled_centered, ["J", "county"], True),
    ("radon_partially_pooled_noncentered", radon_partially_pooled_noncentered, ["J", "county"], False),
    ("radon_variable_intercept_centered", radon_variable_intercept_centered, ["J", "county", "floor_measure"], True),
    ("radon_variable_intercept_noncentered", radon_variable_intercept_noncentered, ["J", "county", "floor_measure"],
     False),
    ("radon_variable_slope_centered", radon_variable_slope_centered, ["J", "county", "floor_measure"], True),
    ("radon_variable_slope_noncentered", radon_variable_slope_noncentered, ["J", "county", "floor_measure"], False),
    ("radon_hierarchical_intercept_centered", radon_hierarchical_intercept_centered,
     ["J", "county", "log_uppm", "floor_measure"], True),
    ("radon_hierarchical_intercept_noncentered", radon_hierarchical_intercept_noncentered,
     ["J", "county", "log_uppm", "floor_measure"], False),
    ("radon_variable_intercept_slope_centered", radon_variable_intercept_slope_centered,
     ["J", "county", "floor_measure"], True),
    ("radon_variable_intercept_slope_noncentered", radon_variable_intercept_slope_noncentered,
     ["J", "county", "floor_measure"], False),
]

ENTRIES = [_entry(data_name, program, model, covariates, centered=centered)
           for data_name in ("radon_mn", "radon_all") for program, model, covariates, centered in PROGRAMS]
ENTRIES.append(_entry("radon_mod", "radon_county", radon_county, ["J", "county"], observed="y"))


# ------------------------------------------------------------------------------------------- expected offsets


def _offset(n_wide=0, n_unit=0, n_half=0):
    """log p_numpyro - log p_stan of priors written with ``~``: ``n_wide`` normal(., 10) terms with a fixed scale
    (-log sqrt(2 pi) - log 10 dropped each), ``n_unit`` normal terms whose constant is -log sqrt(2 pi) (scale 1, or
    a parameter, whose -log sigma Stan keeps), ``n_half`` normal(0, 1) on a ``<lower=0>`` scale (-log sqrt(2 pi)
    dropped, and NumPyro's HalfNormal adds log 2)."""
    return lambda d: n_wide * (-C - LOG10) - n_unit * C + n_half * (LOG2 - C)


_WIDE = "normal(0, 10) drops -log sqrt(2 pi) - log 10 on"
_HALF = "normal(0, 1) drops -log sqrt(2 pi) on the <lower=0> {}, where NumPyro's HalfNormal(1) adds log 2 each"
_LIK = "the likelihood is target += normal_lpdf per house (normalized)"
_CENTERED = ("the centered program's `alpha ~ normal(mu_alpha, sigma_alpha)` drops -log sqrt(2 pi) per county (it "
             "keeps -log sigma_alpha, a parameter); the noncentered program's `alpha_raw ~ normal(0, 1)` drops the "
             "same -log sqrt(2 pi) per county, so both programs have this constant")
_EXPECTED_BY_PROGRAM = {
    "radon_pooled": (_offset(n_wide=2, n_half=1),
                     f"`~` statements: {_WIDE} alpha and beta; {_HALF.format('sigma_y')}; {_LIK}."),
    "radon_county_intercept": (lambda d: _offset(n_wide=d["J"] + 1, n_half=1)(d),
                               f"`~` statements: {_WIDE} each alpha[j] (J counties) and beta; "
                               f"{_HALF.format('sigma_y')}; {_LIK}."),
    "radon_partially_pooled": (lambda d: _offset(n_wide=1, n_unit=d["J"], n_half=2)(d),
                               f"`~` statements: {_WIDE} mu_alpha; {_HALF.format('sigma_y, sigma_alpha')}; "
                               f"{_CENTERED}; {_LIK}."),
    "radon_variable_intercept": (lambda d: _offset(n_wide=2, n_unit=d["J"], n_half=2)(d),
                                 f"`~` statements: {_WIDE} mu_alpha and beta; "
                                 f"{_HALF.format('sigma_y, sigma_alpha')}; {_CENTERED}; {_LIK}."),
    "radon_variable_slope": (lambda d: _offset(n_wide=2, n_unit=d["J"], n_half=2)(d),
                             f"`~` statements: {_WIDE} alpha and mu_beta; {_HALF.format('sigma_y, sigma_beta')}; "
                             + _CENTERED.replace("alpha", "beta") + f"; {_LIK}."),
    "radon_hierarchical_intercept": (lambda d: _offset(n_wide=3, n_unit=d["J"], n_half=2)(d),
                                     f"`~` statements: {_WIDE} mu_alpha, beta[1] and beta[2]; "
                                     f"{_HALF.format('sigma_y, sigma_alpha')}; {_CENTERED}; {_LIK}."),
    "radon_variable_intercept_slope": (lambda d: _offset(n_wide=2, n_unit=2 * d["J"], n_half=3)(d),
                                       f"`~` statements: {_WIDE} mu_alpha and mu_beta; "
                                       f"{_HALF.format('sigma_y, sigma_alpha, sigma_beta')}; {_CENTERED}, and "
                                       "likewise for beta; " + f"{_LIK}."),
}

EXPECTED = {f"{data_name}-{program}": _EXPECTED_BY_PROGRAM[_base(program, centered)]
            for data_name in ("radon_mn", "radon_all") for program, _, _, centered in PROGRAMS}
EXPECTED["radon_mod-radon_county"] = (
    lambda d: -(1 + d["J"] + d["N"]) * C - 2 * math.log(100.0),
    "`~` statements drop -log sqrt(2 pi) for mu_a ~ normal(0, 1), for each a[j] ~ normal(mu_a, sigma_a) (J counties; "
    "-log sigma_a is kept) and for each y[n] ~ normal(a[county[n]], sigma_y) (N houses); sigma_a and sigma_y have no "
    "statement (Stan's implicit uniform on <lower=0, upper=100>, density 1 there), where NumPyro's Uniform(0, 100) "
    "has density 1/100 each (-2 log 100).")

N_CASES: dict = {}
