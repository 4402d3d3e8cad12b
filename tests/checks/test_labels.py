"""Exchangeable components (a mixture's labels): found by permuting them, refused where the prior or the
likelihood sets them apart; SBC on label-invariant quantities passes a correct NUTS that keeps one labelling and
still fails a buggy mixture; the evidence's bracketing symmetrized over the labellings is no longer log 2 low."""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdmc
from bdmc.checks import NumPyroNUTS, sbc
from bdmc.checks.labels import find_exchangeable
from bdmc.contracts.model import simulate

numpyro = pytest.importorskip("numpyro")
dist = pytest.importorskip("numpyro.distributions")

# The programs a user writes: examples/audit_mixture/mixture.py (the exchangeable mixture, and its bug, a density
# that mixes the components' log densities linearly: as symmetric in the labels, so only label-invariant
# quantities can catch it).
_SPEC = importlib.util.spec_from_file_location(
    "audit_mixture_example", Path(__file__).resolve().parents[2] / "examples" / "audit_mixture" / "mixture.py")
EXAMPLE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(EXAMPLE)
_mixture, _buggy, CASES = EXAMPLE.mixture, EXAMPLE.mixture_linear, EXAMPLE.CASES


def _apart(y=None):
    """The corpus's mixture: each mean has its own prior, so the labels are not exchangeable."""
    w = numpyro.sample("w", dist.Dirichlet(jnp.full(2, 2.0)))
    mu = numpyro.sample("mu", dist.Normal(jnp.array([-2.0, 2.0]), 1.0))
    numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(w), dist.Normal(mu, 1.0)), obs=y,
                   sample_shape=() if y is not None else (CASES,))


# The SBC runs' seeds and the bracketing's tolerances are set in float64.
pytestmark = [pytest.mark.float64, pytest.mark.usefixtures("arviz_without_numba")]


def _program(fn):
    return bdmc.ppl.from_numpyro(fn, observed="y")


def test_exchangeable_components_are_found_by_permuting_them_and_refused_where_set_apart():
    key = jax.random.key(0)
    found = find_exchangeable(key, _program(_mixture))
    assert found is not None and set(found.sites) == {"w", "mu"} and found.by == "mu"
    assert found.num_components == 2 and found.log_labellings == pytest.approx(np.log(2))
    assert find_exchangeable(key, _program(_apart)) is None  # its priors set the means apart
    with pytest.raises(bdmc.BDMCError, match=r"priors differ.*mu\[1\]"):
        find_exchangeable(key, _program(_apart), ["mu", "w"])
    with pytest.raises(bdmc.BDMCError, match="changes the log-likelihood"):  # mu without its weights
        find_exchangeable(key, _program(_mixture), ["mu"])
    # A built-in model without named sites has none to find.
    assert find_exchangeable(key, bdmc.models.GaussianMean(n=5)) is None


def test_the_audit_refuses_named_sites_that_are_not_a_symmetry_before_running_anything():
    with pytest.raises(bdmc.BDMCError, match=r"exchangeable=\['mu'\].*log-likelihood"):
        bdmc.audit(jax.random.key(0), _program(_mixture), exchangeable=["mu"], quick=True)


def _sbc(fn, seed):
    model = _program(fn)
    spec = find_exchangeable(jax.random.key(0), model)
    return sbc(jax.random.key(seed), model, NumPyroNUTS(model, num_warmup=150, thin=2), num_replications=60,
               num_draws=50, level=0.01, exchangeable=spec)


def test_sbc_passes_a_nuts_that_keeps_one_labelling_on_label_invariant_quantities():
    res = _sbc(_mixture, 3)
    lab = res.labelling
    # In the sampler's own labels the ranks of the means are not uniform (the labelling it keeps is chosen by
    # where it starts, not by the truth's) ...
    assert {"mu[0]", "mu[1]"} <= set(lab["raw_miscalibrated"]) and lab["one_labelling"] >= 20
    # ... while every label-invariant quantity is calibrated.
    assert res.verdict == "consistent", res.miscalibrated
    assert res.names[-1] == "log-likelihood" and all("ordered by mu" in n for n in res.names[:-1])


def test_sbc_on_label_invariant_quantities_still_catches_a_buggy_mixture():
    res = _sbc(_buggy, 3)
    assert res.verdict == "miscalibrated" and "log-likelihood" in res.miscalibrated


def test_the_evidence_bracketing_symmetrized_over_the_labellings_is_not_log_two_low():
    from bdmc.auditing.checks_evidence import evidence_outcome

    model = _program(_mixture)
    spec = find_exchangeable(jax.random.key(0), model)
    sim = simulate(jax.random.key(1), model)  # two well separated components
    draws = NumPyroNUTS(model, num_warmup=300).draws(jax.random.key(11), sim.data, num_draws=400)
    out = evidence_outcome(jax.random.key(5), model, sim.data, kernel=None, num_steps=1000, num_runs=16,
                           data_label="a simulated data set", draws=draws, exchangeable=spec, exact=None)
    d, sym = out.details, out.details["label_symmetry"]
    # Forward AIS at T = 1,000 with 16 runs: log p(y) (-79.21 by tempered SMC with 4 x 1,024 particles and by AIS
    # at T = 5,000) give or take its own stderr, about 0.08 nats: the bracket is checked to within twice that.
    ais, spread = d["lower"], 2 * out.table[0]["stderr"]
    assert 0 < spread < 0.3
    # Draws in one labelling: the plain upper bound sits about log 2 below the truth, an invalid upper bound.
    assert d["bracket_upper"] < ais - 0.5
    # Symmetrized, the two bounds bracket it, and the upper one moved by about log 2 (the modes do not overlap).
    assert sym["lower"] - 0.1 - spread < ais < sym["upper"] + 0.1 + spread
    assert sym["upper"] - d["bracket_upper"] == pytest.approx(np.log(2), abs=0.1)
    assert "symmetrized" in out.summary
