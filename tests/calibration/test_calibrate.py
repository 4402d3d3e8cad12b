"""``bdmc.calibrate_estimator``: a tool's log p(y) and stated ± against bdmc's truth on simulated data sets.

On a model with a closed-form evidence the truth is exact, so a tool is built with a known error: unbiased with
an honest ± (found calibrated, at the stated level, over seeds), 1 nat high, overconfident, underconfident; a tool
that fails on some data sets; resumed rows; the worst data set rerun alone gives the same error.
"""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pytest
from scipy import stats

import bdmc
from bdmc.calibration import adapters, clopper_pearson
from bdmc.calibration.result import CALIBRATED, MISCALIBRATED

MODEL = bdmc.models.LinearRegression(n=10, degree=1)


def noisy(shift=0.0, noise=0.2, stated=0.2):
    """The exact log p(y) plus ``shift`` plus N(0, noise) noise, stating ± ``stated``."""

    def tool(data, *, seed):
        rng = np.random.default_rng(seed + 1000)
        return float(MODEL.exact_log_marginal(data)) + shift + noise * rng.standard_normal(), stated
    return tool


def _calibrate(tool, **options):
    return bdmc.calibrate_estimator(jax.random.key(0), MODEL, tool, **({"num_datasets": 30, "progress": False}
                                                                        | options))


def test_an_honest_tool_is_found_calibrated_and_a_biased_one_is_not():
    honest = _calibrate(noisy(), label="honest")
    assert honest.verdict == CALIBRATED and honest.truth_halfwidth == 0.0
    cover = honest.coverage("95%")
    assert cover.interval[0] <= 0.95 <= cover.interval[1] and cover.n == 30
    assert abs(honest.bias) < 4 * 0.2 / math.sqrt(30) and 0.5 < honest.z_spread < 1.6
    biased = _calibrate(noisy(shift=1.0), label="1 nat high")
    assert biased.verdict == MISCALIBRATED
    assert biased.bias == pytest.approx(1.0, abs=0.2) and biased.coverage("95%").hits <= 2
    assert "miscalibrated" in biased.summary() and "1 nat high" in biased.summary()


def test_an_overconfident_tool_is_found_and_an_underconfident_one_reported():
    over = _calibrate(noisy(noise=1.0, stated=0.1))
    assert over.verdict == MISCALIBRATED and over.tests()["overconfident"] < 1e-6 and over.z_spread > 5
    under = _calibrate(noisy(noise=0.05, stated=1.0))
    assert under.verdict == CALIBRATED  # an underconfident ± is honest, only wasteful
    assert under.coverage("68%").hits == 30 and under.z_spread < 0.2


@pytest.mark.slow  # 60 calibrations; one honest and one biased tool's verdicts stay in the default suite
def test_the_verdict_holds_its_level_over_seeds():
    """An unbiased tool with an honest ±: false 'miscalibrated' verdicts over 60 calibrations within the binomial's
    0.999 quantile at the level 0.05 (a level where the count is informative)."""
    def tool(data, *, seed, _k=[0]):  # noqa: B006 - a counter across calls, for fresh noise per calibration
        _k[0] += 1
        rng = np.random.default_rng(_k[0])
        return float(MODEL.exact_log_marginal(data)) + 0.3 * rng.standard_normal(), 0.3

    wrong = sum(_calibrate(tool, num_datasets=20, level=0.05).verdict == MISCALIBRATED for _ in range(60))
    assert wrong <= stats.binom.ppf(0.999, 60, 0.05)


def test_clopper_pearson_matches_the_beta_quantiles():
    lo, hi = clopper_pearson(7, 20)
    assert lo == pytest.approx(stats.beta.ppf(0.025, 7, 14)) and hi == pytest.approx(stats.beta.ppf(0.975, 8, 13))
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(10, 10)[1] == 1.0


def test_rows_resume_and_a_failing_tool_is_a_failed_row(tmp_path):
    def flaky(data, *, seed):
        if seed % 3 == 0:
            raise RuntimeError("no convergence")
        if seed % 3 == 1:
            return math.nan, 0.1
        return float(MODEL.exact_log_marginal(data)), 0.1

    path = tmp_path / "rows.jsonl"
    first = _calibrate(flaky, num_datasets=6, path=path, label="flaky")
    assert first.num_failed == 4 and len(first.ok) == 2
    assert "RuntimeError: no convergence" in set(first.rows["failed"])
    assert len(path.read_text().splitlines()) == 6
    calls = []
    again = _calibrate(lambda data, *, seed: calls.append(seed) or flaky(data, seed=seed), num_datasets=8,
                       path=path, label="flaky")
    assert calls == [6, 7] and len(again.rows) == 8  # only the new data sets ran
    assert len(path.read_text().splitlines()) == 8 and json.loads(path.read_text().splitlines()[0])["seed"] == 0


def test_the_worst_data_set_reruns_alone_with_the_same_error():
    result = _calibrate(noisy(noise=0.5, stated=0.5), num_datasets=12)
    worst = result.worst(1).iloc[0]
    seed = int(worst["seed"])
    data, _ = bdmc.simulate(jax.random.fold_in(jax.random.key(0), seed), MODEL)
    value, _ = noisy(noise=0.5, stated=0.5)(data, seed=seed)
    assert value - float(MODEL.exact_log_marginal(data)) == pytest.approx(worst["error"])


def logistic(x, y=None):
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 1.0))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    with numpyro.plate("cases", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=a + b * x), obs=y)


def test_without_a_closed_form_the_truth_is_the_sandwich_and_carries_its_gap():
    model = bdmc.ppl.from_numpyro(logistic, np.linspace(-1, 1, 12), observed="y")
    result = bdmc.calibrate_estimator(jax.random.key(1), model, adapters.bdmc_adapter(model, "ais", num_steps=200),
                                      num_datasets=3, truth_steps=300, truth_runs=4, progress=False)
    rows = result.rows
    assert (rows["truth_lower"] <= rows["truth"]).all() and (rows["truth"] <= rows["truth_upper"]).all()
    assert rows["truth_source"].str.contains("sandwich").all() and (rows["truth_upper"] > rows["truth_lower"]).all()
    assert result.rmse < 0.5


def test_bdmc_ais_through_its_adapter_is_calibrated_and_a_bad_estimator_is_refused():
    result = _calibrate(adapters.bdmc_adapter(MODEL, "ais", num_steps=200, num_runs=8), num_datasets=12)
    assert result.verdict == CALIBRATED and result.rmse < 0.5
    with pytest.raises(bdmc.BDMCError, match="rev-ais"):
        adapters.bdmc_adapter(MODEL, "rev-ais")
    with pytest.raises(bdmc.BDMCError, match="num_datasets"):
        _calibrate(noisy(), num_datasets=0)
    with pytest.raises(bdmc.BDMCError, match="callable"):
        _calibrate(3.0)
