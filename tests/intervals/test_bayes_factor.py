"""``bdmc.compare``: a certified interval on log BF between two programs on one data set, behind three gates.

Two conjugate Gaussian means that differ in their prior scale (exact evidences in closed form, exact posterior
draws): the interval holds the exact log BF. The gates refuse, naming the difference: other observations (values,
shapes), likelihood terms that are not one per observation, a prior density that does not integrate to one; and
pass a correct pair (no false refusal).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdmc
from bdmc.errors import ModelComparisonError
from bdmc.files import to_jsonable
from bdmc.intervals.bayes_factor import compare, observation_digest

NARROW = bdmc.models.GaussianMean(n=12, dim=2, prior_std=1.0)
WIDE = bdmc.models.GaussianMean(n=12, dim=2, prior_std=3.0)


@dataclass(frozen=True)
class Edited:
    """A model edited the ways programs go wrong: a prior density off by a constant, a likelihood summed into one
    term."""

    base: Any
    prior_shift: float = 0.0
    summed: bool = False

    def sample_prior(self, key):
        return self.base.sample_prior(key)

    def sample_data(self, key, latent):
        return self.base.sample_data(key, latent)

    def log_prior(self, latent):
        return self.base.log_prior(latent) + self.prior_shift

    def log_likelihood(self, latent, data):
        terms = self.base.log_likelihood(latent, data)
        return jnp.sum(terms, keepdims=True) if self.summed else terms


def exact_draws(model, data, num=2000, seed=0):
    precision = 1 / model.prior_std**2 + model.n / model.noise_std**2
    mean = jnp.sum(data, axis=0) / model.noise_std**2 / precision
    return {"mu": mean + jax.random.normal(jax.random.key(seed), (num, model.dim)) / jnp.sqrt(precision)}


@pytest.fixture(scope="module")
def data():
    return bdmc.simulate(jax.random.key(2), NARROW).data


def test_the_interval_holds_the_exact_log_bayes_factor(data):
    result = compare(jax.random.key(0), NARROW, WIDE, data, draws_a=exact_draws(NARROW, data),
                     draws_b=exact_draws(WIDE, data), names=("narrow", "wide"), progress=False)
    exact = float(NARROW.exact_log_marginal(data) - WIDE.exact_log_marginal(data))
    assert result.lower <= exact <= result.upper and result.upper - result.lower < 1.5
    assert abs(result.estimate - exact) < 0.3
    assert result.digest == observation_digest(data) and result.num_cases == 12
    assert result.prior_checks["narrow"].verdict == "normalized"
    summary = result.summary()
    assert "log BF(narrow : wide)" in summary and "the same 12 observations" in summary
    assert result.evidence_a.upper_rests_on in summary and "being exact" in summary
    assert result.favours in (None, "narrow")  # the data come from the narrow prior
    # What `bdmc compare --json` writes: the interval and both evidences, as JSON.
    saved = json.loads(json.dumps(to_jsonable(result.to_dict(), nonfinite="string")))
    assert (saved["lower"], saved["upper"], saved["names"]) == (result.lower, result.upper, ["narrow", "wide"])
    assert set(saved["evidence"]) == {"narrow", "wide"}


def test_other_observations_are_refused_naming_the_cases(data):
    other = data.at[3].add(1.0).at[7].add(-2.0)
    with pytest.raises(bdmc.DataError, match=r"differs in 2 of 12 cases \(cases 3, 7\)"):
        compare(jax.random.key(0), NARROW, WIDE, data, data_b=other, check_prior=False, progress=False)
    shorter = bdmc.models.GaussianMean(n=8, dim=2)
    with pytest.raises(bdmc.DataError, match=r"shape \(12, 2\) in A and \(8, 2\) in B"):
        compare(jax.random.key(0), NARROW, shorter, data, data_b=data[:8], check_prior=False, progress=False)


def test_likelihood_terms_that_are_not_one_per_observation_are_refused(data):
    with pytest.raises(ModelComparisonError, match="A has 12 likelihood terms, B has 1"):
        compare(jax.random.key(0), NARROW, Edited(WIDE, summed=True), data, check_prior=False, progress=False)


def test_a_prior_that_does_not_integrate_to_one_is_refused(data):
    with pytest.raises(ModelComparisonError, match=r"prior of B does not integrate to one: log of its integral "
                                                   r"-0\.[67]"):
        compare(jax.random.key(0), NARROW, Edited(WIDE, prior_shift=-math.log(2.0)), data, progress=False)


def test_the_digest_sees_names_shapes_dtypes_and_values():
    y = np.arange(6.0)
    base = observation_digest({"y": y})
    assert base == observation_digest({"y": y.copy()})
    for changed in ({"z": y}, {"y": y.reshape(2, 3)}, {"y": y.astype(np.float32)}, {"y": y + 1e-12}):
        assert observation_digest(changed) != base
