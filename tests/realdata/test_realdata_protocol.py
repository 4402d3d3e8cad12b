"""The real-data BREAD protocol: the fit, the approximate posterior samples, the two verdicts and resumption."""

import json

import jax
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("numpyro")

from bdmc import BDMCError  # noqa: E402
from bdmc.realdata import (  # noqa: E402
    bread_real,
    fit_hyperparameters,
    forward_consistency,
    linear_regression,
    posterior_checkpoints,
    reverse_agreement,
)


@pytest.fixture(scope="module")
def regression():
    """A linear regression with known sigma_sq = 0.5 and 400 cases: the posterior pins sigma_sq within ~7%."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y = 0.3 + x @ np.array([1.0, -0.5]) + rng.normal(scale=np.sqrt(0.5), size=400)
    return linear_regression(x), {"y": y}, x, y


@pytest.fixture(scope="module")
def fitted(regression):
    model, data, _, _ = regression
    return fit_hyperparameters(jax.random.key(1), model, data, hyperparameters=["sigma_sq"], num_warmup=300,
                               num_samples=300)


def test_fit_recovers_the_noise_variance(regression, fitted):
    model, data, x, y = regression
    fit = fitted
    # The least-squares residual variance is the posterior's centre to O(1/N); the posterior sd is ~0.035.
    design = np.column_stack([np.ones(len(y)), x])
    resid = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    assert abs(float(fit.hyperparameters["sigma_sq"]) - resid.var()) < 0.03
    assert 0.6 < fit.acceptance < 0.99
    assert fit.inverse_mass.shape == (5,)  # sigma_sq, scale_sq, alpha, beta (2)


def test_fit_names_unknown_hyperparameters(regression):
    model, data, _, _ = regression
    with pytest.raises(BDMCError, match="tau"):
        fit_hyperparameters(jax.random.key(1), model, data, hyperparameters=["tau"], num_warmup=20, num_samples=5)


def test_posterior_checkpoints_start_and_move_to_the_posterior(regression, fitted):
    model, data, x, y = regression
    fit = fitted
    far = model.sample_prior_given(jax.random.key(3), {"sigma_sq": 5.0, "scale_sq": 1.0})
    far = {**far, "beta": far["beta"] + 3.0}
    states = posterior_checkpoints(jax.random.key(4), model, data, far, checkpoints=[0, 200],
                                   step_size=fit.step_size, inverse_mass=fit.inverse_mass)
    assert set(states) == {0, 200}
    for name in far:  # S = 0 is the start itself
        np.testing.assert_array_equal(np.asarray(states[0][name]), np.asarray(far[name]))
    beta_hat = np.linalg.lstsq(np.column_stack([np.ones(len(y)), x]), y, rcond=None)[0][1:]
    # 200 NUTS steps reach the posterior (sd ~0.035 per coefficient) from 3 units away.
    assert np.max(np.abs(np.asarray(states[200]["beta"]) - beta_hat)) < 0.2
    assert abs(float(model.constrain(states[200])["sigma_sq"]) - 0.5) < 0.15


def _runs(real_climb, sim_climb, *, n=200, noise=1.0, seed=0):
    """Synthetic forward runs whose medians climb by the given amounts to the longest run."""
    rng = np.random.default_rng(seed)
    rows = []
    for condition, climb, top in (("forward-real", real_climb, -500.0), ("forward-simulated", sim_climb, -800.0)):
        for T, c in zip((10, 100, 1000), climb, strict=False):
            rows.append(pd.DataFrame({"condition": condition, "num_steps": T, "chain": np.arange(n),
                                      "log_ml": top + c + noise * rng.normal(size=n), "seconds": 1.0}))
    return pd.concat(rows, ignore_index=True)


def test_forward_consistency_ignores_the_shift_and_flags_a_different_climb():
    same = forward_consistency(_runs([-100.0, -10.0, 0.0], [-100.0, -10.0, 0.0]))
    assert same.consistent and same.relative < 0.05
    assert abs(same.table["delta"]).max() < 1.0
    differ = forward_consistency(_runs([-300.0, -40.0, 0.0], [-100.0, -10.0, 0.0]))
    assert not differ.consistent
    assert differ.discrepancy == pytest.approx(200.0, abs=1.0)
    assert "NOT consistent" in differ.summary()


def test_reverse_agreement_flags_a_start_that_matters():
    rng = np.random.default_rng(1)
    rows = [pd.DataFrame({"condition": "forward-simulated", "num_steps": T, "chain": np.arange(100),
                          "log_ml": -130.0 - 100.0 / T + rng.normal(size=100), "seconds": 1.0}) for T in (10, 100)]

    def reverse(shift_s10):
        out = list(rows)
        for S in (10, 1000):
            for T in (10, 100):
                out.append(pd.DataFrame({"condition": f"reverse-S{S}", "num_steps": T, "chain": np.arange(100),
                                         "log_ml": -110.0 + (shift_s10 if S == 10 else 0.0) + rng.normal(size=100),
                                         "seconds": 1.0}))
        return pd.concat(out, ignore_index=True)

    assert reverse_agreement(reverse(0.0)).agree
    moved = reverse_agreement(reverse(8.0))
    assert not moved.agree and moved.table["kruskal_p"].max() < 1e-6


@pytest.mark.slow  # 18 s; the run store's resume and refusal are in the default suite (tests/experiments)
def test_bread_real_end_to_end_resumes_and_refuses_other_settings(regression, tmp_path, monkeypatch):
    model, data, _, _ = regression
    kwargs = dict(hyperparameters=["sigma_sq", "scale_sq"], steps=[5, 40], num_runs=12, mcmc_steps=[0, 20],
                  num_warmup=150, num_samples=50, kernel="hmc", out=tmp_path)
    res = bread_real(jax.random.key(5), model, data, progress=False, **kwargs)
    assert set(res.runs["condition"]) == {"forward-real", "forward-simulated", "reverse-S0", "reverse-S20"}
    assert len(res.runs) == 4 * 2 * 12
    # Real data and data simulated from the fit behave alike; the reverse bound sits above the forward one.
    assert res.forward.consistent
    b = res.bread_bounds()
    assert (b["b_hat"] > -3 * b["b_hat_stderr"]).all()
    assert {"fit.json", "simulated.npz", "runs.csv"} <= {p.name for p in tmp_path.iterdir()}

    import bdmc.realdata.protocol as protocol

    def refuse(*args, **kw):
        raise AssertionError("a finished run was repeated")

    monkeypatch.setattr(protocol, "forward_ais", refuse)
    monkeypatch.setattr(protocol, "reverse_ais", refuse)
    again = bread_real(jax.random.key(5), model, data, progress=False, **kwargs)
    pd.testing.assert_frame_equal(again.runs, res.runs)
    with pytest.raises(BDMCError, match="different settings.*num_runs: 12 -> 13"):
        bread_real(jax.random.key(5), model, data, progress=False, **{**kwargs, "num_runs": 13})


def test_bread_real_refuses_bad_options(regression):
    model, data, _, _ = regression
    with pytest.raises(BDMCError, match="kernel"):
        bread_real(jax.random.key(0), model, data, hyperparameters=["sigma_sq"], kernel="mala")
    with pytest.raises(BDMCError, match="steps"):
        bread_real(jax.random.key(0), model, data, hyperparameters=["sigma_sq"], steps=[0, 10])


@pytest.mark.slow
def test_cli_bread_real_writes_the_verdict(tmp_path):
    from typer.testing import CliRunner

    from bdmc.cli import app

    pytest.importorskip("bokeh_sampledata")
    out = tmp_path / "ar1"
    result = CliRunner().invoke(app, ["bread-real", "--model", "ar1", "--steps", "5,30", "--runs", "10",
                                      "--mcmc-steps", "0,20", "--kernel", "hmc",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "forward curves are" in result.output
    verdict = json.loads((out / "verdict.json").read_text())
    assert set(verdict["hyperparameters"]) == {"alpha", "beta", "sigma_sq"}
    written = {p.name for p in out.iterdir()}
    assert {"bread_real.png", "quartiles.csv", "bread.csv", "forward_consistency.csv"} <= written
    bad = CliRunner().invoke(app, ["bread-real", "--model", "ar1", "--ppl", "pymc"])
    assert bad.exit_code != 0 and "numpyro" in bad.output


@pytest.mark.slow
@pytest.mark.parametrize("centre", [True, False])
def test_uncentred_movielens_ratings_break_forward_consistency(centre):
    """Appendix D: without an intercept, uncentred ratings misspecify the model and the forward curves part."""
    pytest.importorskip("recbole")
    from bdmc.datasets import load_movielens
    from bdmc.realdata import CASES

    model, real = CASES["matrix-factorization"].build(ppl="numpyro", centre=centre)
    res = bread_real(jax.random.key(11), model, real, hyperparameters=CASES["matrix-factorization"].hyperparameters,
                     steps=[10, 100, 1000], num_runs=50, mcmc_steps=[], kernel="hmc", progress=False)
    assert set(res.runs["condition"]) == {"forward-real", "forward-simulated"}
    assert res.forward.consistent == centre, res.forward.summary()
    assert load_movielens(centre=centre)["ratings"].mean() == pytest.approx(0.0 if centre else 3.862, abs=1e-3)


def test_a_directory_from_before_num_runs_was_named_so_resumes(tmp_path):
    """settings.json written when the setting was "num_chains" names the same setting as "num_runs"."""
    import bdmc.realdata.protocol as protocol

    config = protocol.run_config(jax.random.key(0), hyperparameters=["sigma_sq"], num_runs=100)
    protocol.open_run_store(tmp_path, config, context={"model": "ar1"})
    path = tmp_path / "settings.json"

    def rename(chains):
        saved = json.loads(path.read_text())
        saved["settings"].pop("num_runs", None)
        saved["settings"]["num_chains"] = chains
        path.write_text(json.dumps(saved))

    rename(100)
    protocol.open_run_store(tmp_path, config, context={"model": "ar1"})  # the same settings: resumed
    rename(50)
    with pytest.raises(BDMCError, match="num_runs: 50 -> 100"):
        protocol.open_run_store(tmp_path, config, context={"model": "ar1"})
    # Older still: no settings.json, the fit's config says num_chains.
    path.unlink()
    legacy_config = {k: v for k, v in config.items() if k != "num_runs"}
    (tmp_path / protocol.FIT_NAME).write_text(json.dumps({"config": {**legacy_config, "num_chains": 50}}))
    with pytest.raises(BDMCError, match="num_runs: 50 -> 100"):
        protocol.open_run_store(tmp_path, config, context={"model": "ar1"})
