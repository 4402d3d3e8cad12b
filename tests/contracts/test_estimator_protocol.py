"""Every registered estimator obeys one protocol: call shape, result record, combination rule, reproducibility."""

import inspect
import json

import jax
import numpy as np
import pytest

import bdmc
from bdmc.contracts import ESTIMATORS, Estimate, combine_runs, register_estimator
from bdmc.experiments.bench import available
from bdmc.models import Clustering, GaussianMean

# Tiny problems: the first one an estimator can run on is used.
MODELS = (GaussianMean(n=6, dim=2), Clustering(n=6, k=2, dim=2))
NUM_RUNS = 3


@pytest.fixture(scope="module")
def problems():
    return [(m, *bdmc.simulate(jax.random.key(3), m)) for m in MODELS]


def _setup(name, problems):
    for model, data, latent in problems:
        if name in available(model):
            return model, data, latent
    pytest.fail(f"no test model supports {name}")


def _call(info, key, model, data, latent):
    quiet = {"progress": False} if "progress" in inspect.signature(info.fn).parameters else {}
    return info(key, model, data, exact_latent=latent if info.needs_exact else None, num_runs=NUM_RUNS,
                **{info.knob: min(info.knobs)}, **quiet)


def test_the_registry_holds_every_estimator_of_the_paper():
    assert {"lw", "hme", "ais", "rev-ais", "smc", "shme", "ns", "bic", "vb", "vb+sym", "cms"} <= set(ESTIMATORS)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_call_shape(name):
    info = ESTIMATORS[name]
    params = inspect.signature(info.fn).parameters
    positional = [p.name for p in params.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == ["key", "model", "data"]
    keyword = {p.name: p for p in params.values() if p.kind is p.KEYWORD_ONLY}
    assert {"exact_latent", "num_runs", info.knob} <= set(keyword)
    assert keyword["exact_latent"].default is None  # those that need it say so with a BDMCError (below)
    assert info.knobs and info.combine in bdmc.contracts.COMBINE_RULES


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_result_record_and_reproducibility(name, problems):
    info = ESTIMATORS[name]
    model, data, latent = _setup(name, problems)
    bdmc.clear_caches()  # so that this call compiles, whatever ran before it in this process
    est = _call(info, jax.random.key(11), model, data, latent)
    assert isinstance(est, Estimate)
    assert est.bound == info.bound and est.combine == info.combine
    assert est.runs.shape == (NUM_RUNS,) and np.all(np.isfinite(est.runs))
    assert est.value == combine_runs(est.runs, est.combine)  # the record carries the rule that made its value
    assert est.settings and est.n_evals > 0 and est.seconds >= 0 and est.compiled is True  # a first call compiles
    assert json.loads(json.dumps(est.to_dict(), allow_nan=False))["combine"] == est.combine
    # The recorded seed rebuilds the key, and the same call with it reproduces every run exactly.
    again = _call(info, est.key, model, data, latent)
    np.testing.assert_array_equal(again.runs, est.runs)
    assert again.seed == est.seed


@pytest.mark.parametrize("name", sorted(n for n, i in ESTIMATORS.items() if i.needs_exact))
def test_an_estimator_that_needs_the_exact_sample_says_so(name, problems):
    info = ESTIMATORS[name]
    model, data, _ = _setup(name, problems)
    with pytest.raises(bdmc.BDMCError, match="exact_latent"):
        info(jax.random.key(0), model, data, num_runs=NUM_RUNS, **{info.knob: min(info.knobs)})


def test_registration_refuses_a_call_shape_that_breaks_the_protocol():
    with pytest.raises(TypeError, match="exact_latent"):
        @register_estimator("broken", label="B", knob="num_steps", knobs=(1,), bound="lower")
        def broken(key, model, data, exact_latent, *, num_steps=1, num_runs=1):  # exact_latent positional
            raise AssertionError
    with pytest.raises(TypeError, match="num_runs"):
        @register_estimator("broken", label="B", knob="num_steps", knobs=(1,), bound="lower")
        def broken2(key, model, data, *, exact_latent=None, num_steps=1, num_chains=1):
            raise AssertionError
    assert "broken" not in ESTIMATORS


def test_combination_rules_are_the_papers():
    runs = np.log([1.0, 2.0, 4.0])
    assert combine_runs(runs, "log-mean-exp") == pytest.approx(np.log(7 / 3), rel=1e-15)
    assert combine_runs(runs, "log-harmonic-mean") == pytest.approx(-np.log((1 + 0.5 + 0.25) / 3), rel=1e-15)
    assert combine_runs(runs, "mean-log") == pytest.approx(np.mean(runs), rel=1e-15)
    assert combine_runs(runs, "max") == np.log(4.0)
    with pytest.raises(ValueError, match="unknown combination rule"):
        combine_runs(runs, "median")
