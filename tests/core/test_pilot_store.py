"""Frozen pilots on disk: a new process making a call on the same model, data and options (whatever its key) loads
its pilot's choice and gets the numbers a new pilot gives; any other call (other data, model constant or setting,
another pilot seed among them) runs its own."""

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import bdmc
from bdmc.core import pilot_store
from bdmc.core.pilot import Pilot, forget_frozen_pilots
from bdmc.core.smc_pilot import DataPathPilot
from bdmc.kernels import HMC
from bdmc.models import GaussianMean

MODEL = GaussianMean(n=20, dim=5)
PILOT = Pilot(num_steps=8, num_chains=4, warmup=2)  # small: what is tested is the store, not the pilot


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("BDMC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(pilot_store.PILOT_CACHE_SWITCH, "1")
    bdmc.clear_caches()
    yield tmp_path / "pilots"
    bdmc.clear_caches()


@pytest.fixture(scope="module")
def data():
    return bdmc.simulate(jax.random.key(1), MODEL).data


def run(seed, data, *, model=MODEL, tune=PILOT):
    return bdmc.forward_ais(jax.random.key(seed), model, data, num_steps=10, num_runs=2, kernel=HMC(model),
                            tune=tune, progress=False)


def test_the_same_call_in_a_new_process_loads_the_choice_and_gets_the_same_numbers(store, data):
    first = run(0, data)
    assert not first.settings["pilot_loaded"] and len(list(store.glob("*.pkl"))) == 1
    forget_frozen_pilots()  # what a new process starts from: no frozen pilot in memory
    again = run(0, data)
    assert again.settings["pilot_loaded"] and again.settings["pilot_reused"]
    assert again.settings["pilot_seconds"] == 0.0 < first.settings["pilot_seconds"]
    # The same tables, so the same run: the numbers a new pilot gives, and the same evaluations behind them.
    for name in ("step_sizes", "preconditioner", "pilot_evals", "pilot_move_correlation"):
        assert again.settings[name] == first.settings[name]
    np.testing.assert_array_equal(again.runs, first.runs)
    assert again.n_evals == first.n_evals


def test_another_key_loads_the_choice_and_other_data_or_settings_run_their_own_pilot(store, data):
    first = run(0, data)
    forget_frozen_pilots()
    # The pilot's key is its own (Pilot.seed), not the caller's: another key loads the same choice, and its run is
    # the one a new pilot would give it.
    other_key = run(1, data)
    assert other_key.settings["pilot_loaded"] and other_key.settings["step_sizes"] == first.settings["step_sizes"]
    bdmc.clear_caches()
    np.testing.assert_array_equal(other_key.runs, run_without_store(1, data).runs)
    forget_frozen_pilots()
    assert not run(0, data, tune=dataclasses.replace(PILOT, seed=1)).settings["pilot_loaded"]
    forget_frozen_pilots()
    assert not run(0, jax.tree.map(lambda a: a + 0.5, data)).settings["pilot_loaded"]
    forget_frozen_pilots()
    assert not run(0, data, tune=dataclasses.replace(PILOT, target_acceptance=0.8)).settings["pilot_loaded"]
    forget_frozen_pilots()
    # reuse=False forces a new pilot, on disk as in memory
    assert not run(0, data, tune=dataclasses.replace(PILOT, reuse=False)).settings["pilot_loaded"]
    assert len(list(store.glob("*.pkl"))) == 4  # the new pilot of reuse=False replaced the first call's file


def run_without_store(seed, data):
    """:func:`run` with the store switched off (a new pilot, whatever the disk holds)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(pilot_store.PILOT_CACHE_SWITCH, "0")
        return run(seed, data)


def test_the_fingerprint_sees_a_models_constants_and_refuses_a_python_callback(store, data):
    validated = bdmc.contracts.model.validate_data(MODEL, data)
    name = lambda model: pilot_store.stored_name(jax.random.key(0), model, validated, HMC(model), (10,))  # noqa: E731
    assert name(MODEL) == name(GaussianMean(n=20, dim=5)) is not None
    # Equal code, another prior scale held as a closed-over constant: another fingerprint.
    assert name(Scaled(MODEL, 1.0)) != name(Scaled(MODEL, 2.0))
    # A density that calls back into Python has no stable fingerprint: never stored (tune() stores only a name).
    assert name(Callback(MODEL)) is None


def test_a_damaged_file_runs_the_pilot_and_the_store_keeps_the_newest(store, data, monkeypatch):
    first = run(0, data)
    (path,) = store.glob("*.pkl")
    path.write_bytes(b"not a pickle")
    forget_frozen_pilots()
    again = run(0, data)
    assert not again.settings["pilot_loaded"]
    np.testing.assert_array_equal(again.runs, first.runs)
    monkeypatch.setattr(pilot_store, "MAX_FILES", 2)
    monkeypatch.setattr(pilot_store, "PRUNE_EVERY", 1)  # pruned at every save (test_pruning_is_batched: the rest)
    for seed in (1, 2):  # other pilot seeds: other choices, each stored
        forget_frozen_pilots()
        run(0, data, tune=dataclasses.replace(PILOT, seed=seed))
    assert len(list(store.glob("*.pkl"))) == 2  # three written, the oldest dropped


def test_the_switch_turns_the_store_off(store, data, monkeypatch):
    monkeypatch.setenv(pilot_store.PILOT_CACHE_SWITCH, "0")
    assert pilot_store.store_dir() is None
    run(0, data)
    assert not store.exists()


def test_a_new_process_loads_what_this_one_stored(store, data):
    """The real thing: a fresh interpreter (fork and exec: no JAX state is inherited) makes this process's call."""
    here = run(0, data)
    script = textwrap.dedent(f"""
        import json, jax, bdmc
        from bdmc.core.pilot import Pilot
        from bdmc.kernels import HMC
        from bdmc.models import GaussianMean
        bdmc.enable_x64({bool(jax.config.jax_enable_x64)})  # this process's precision (CI runs float32 too)
        model = GaussianMean(n=20, dim=5)
        data = bdmc.simulate(jax.random.key(1), model).data
        est = bdmc.forward_ais(jax.random.key(0), model, data, num_steps=10, num_runs=2, kernel=HMC(model),
                               tune=Pilot(num_steps=8, num_chains=4, warmup=2), progress=False)
        print(json.dumps({{"loaded": est.settings["pilot_loaded"], "runs": [float(r) for r in est.runs]}}))
    """)
    env = {**os.environ, "BDMC_CACHE_DIR": str(store.parent), pilot_store.PILOT_CACHE_SWITCH: "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True,
                          timeout=600)
    there = json.loads(done.stdout.strip().splitlines()[-1])
    assert there["loaded"] and not here.settings["pilot_loaded"]
    np.testing.assert_allclose(there["runs"], np.asarray(here.runs), rtol=1e-12, atol=0)


# ---------------------------------------------------------------------------------------------- models
@dataclasses.dataclass(frozen=True)
class Scaled:
    """The model with its latent scaled by a constant the density closes over."""

    base: GaussianMean
    scale: float

    def sample_prior(self, key):
        return self.base.sample_prior(key)

    def sample_data(self, key, latent):
        return self.base.sample_data(key, latent)

    def log_prior(self, latent):
        return self.base.log_prior(latent)

    def log_likelihood(self, latent, data):
        shift = np.full(np.shape(latent["mu"]), self.scale)  # a constant of the jaxpr, not a traced argument
        return self.base.log_likelihood({"mu": latent["mu"] * shift}, data)


@dataclasses.dataclass(frozen=True)
class Callback:
    """The model with a log prior computed in Python (a host callback, as some PPL adapters make)."""

    base: GaussianMean

    def sample_prior(self, key):
        return self.base.sample_prior(key)

    def sample_data(self, key, latent):
        return self.base.sample_data(key, latent)

    def log_prior(self, latent):
        mu = latent["mu"]
        zero = jax.pure_callback(lambda x: np.zeros((), np.asarray(x).dtype), jax.ShapeDtypeStruct((), mu.dtype),
                                 jax.lax.stop_gradient(mu), vmap_method="sequential")
        return self.base.log_prior(latent) + zero

    def log_likelihood(self, latent, data):
        return self.base.log_likelihood(latent, data)


def test_the_data_path_pilot_is_stored_too(store):
    """SMC's data-path pilot: a call on the same model, data and options in a new process loads its path, tables
    and moves, and gets the same numbers, whatever its key; another pilot seed pilots anew."""
    model = GaussianMean(n=6, dim=2)
    data = bdmc.simulate(jax.random.key(2), model).data
    smc = lambda seed, tune="pilot": bdmc.smc(jax.random.key(seed), model, data,  # noqa: E731
                                              num_particles=32, num_runs=2, kernel=HMC(model), tune=tune,
                                              progress=False)
    first = smc(0)
    forget_frozen_pilots()
    again = smc(0)
    assert not first.settings["data_pilot_loaded"] and again.settings["data_pilot_loaded"]
    for name in ("path_steps", "step_sizes", "preconditioner", "moves_per_step", "data_pilot_evals"):
        assert again.settings[name] == first.settings[name], name
    np.testing.assert_array_equal(again.runs, first.runs)
    forget_frozen_pilots()
    assert smc(1).settings["data_pilot_loaded"]
    forget_frozen_pilots()
    assert not smc(0, DataPathPilot(seed=1)).settings["data_pilot_loaded"]


def test_pruning_is_batched_and_keeps_the_newest(store, monkeypatch):
    """A process prunes at its first save and every PRUNE_EVERY-th after (listing the store costs milliseconds):
    the store never holds more than MAX_FILES + PRUNE_EVERY - 1 files, and a prune keeps the newest."""
    monkeypatch.setattr(pilot_store, "MAX_FILES", 3)
    monkeypatch.setattr(pilot_store, "PRUNE_EVERY", 4)
    monkeypatch.setattr(pilot_store, "_SAVES", {})
    counts = []
    for i in range(13):
        pilot_store.save(f"pilot{i:02d}", {"i": i}, {})
        os.utime(store / f"pilot{i:02d}.pkl", ns=(i * 10**9, i * 10**9))  # distinct ages whatever the clock
        counts.append(len(list(store.glob("*.pkl"))))
    assert max(counts) <= 3 + 4 - 1
    # The 13th save pruned (1, 5, 9, 13): what is left is the newest three.
    assert sorted(p.stem for p in store.glob("*.pkl")) == ["pilot10", "pilot11", "pilot12"]


# ------------------------------------------------------------------------------------------- prior checks
@dataclasses.dataclass(frozen=True)
class Edged:
    """``x ~ N(0, 1)``, ``y_i ~ N(x, 1)``, its log-likelihood NaN beyond ``|x| > edge`` (1.2% of the prior at
    2.5, a bug the check's 1,024 draws find; none at 50)."""

    edge: float = 50.0

    def sample_prior(self, key):
        return {"x": jax.random.normal(key)}

    def sample_data(self, key, latent):
        return latent["x"] + jax.random.normal(key, (4,))

    def log_prior(self, latent):
        return -0.5 * latent["x"] ** 2 - 0.5 * np.log(2 * np.pi)

    def log_likelihood(self, latent, data):
        x = latent["x"]
        return jax.numpy.where(jax.numpy.abs(x) > self.edge, jax.numpy.nan, -0.5 * (data - x) ** 2)


def test_a_passed_prior_check_is_kept_and_a_new_process_does_not_run_it_again(store, monkeypatch):
    from bdmc.core import prior_check

    checks = []
    real = prior_check._check
    monkeypatch.setattr(prior_check, "_check", lambda *a, **k: checks.append(a[1]) or real(*a, **k))
    y = jax.numpy.array([0.1, -0.2, 0.15, 0.1])
    ais = lambda model, data, seed=0: bdmc.forward_ais(jax.random.key(seed), model, data, num_steps=5,  # noqa: E731
                                                       num_runs=2, kernel=HMC(model), tune="off", progress=False)
    first = ais(Edged(), y)
    assert len(checks) == 1 and len(list((store.parent / pilot_store.PRIOR_CHECKS).glob("*.passed"))) == 1
    bdmc.clear_caches()  # what a new process starts from: no verdict in memory
    again = ais(Edged(), y, seed=1)  # another key: the verdict is per model and data, as within a process
    assert len(checks) == 1 and np.isfinite(again.value) and np.isfinite(first.value)
    ais(Edged(), y + 1.0)  # other data: checked
    assert len(checks) == 2
    # The negative control: a model that differs only in a constant (a NaN region on 1.2% of the prior) has
    # another fingerprint, so the correct model's pass does not cover it; and a failed check is never kept, so
    # it fails in every process.
    for _ in range(2):
        bdmc.clear_caches()
        with pytest.raises(bdmc.errors.NonFiniteLogDensityError, match="exact prior draw"):
            ais(Edged(edge=2.5), y)
    assert len(checks) == 4 and len(list((store.parent / pilot_store.PRIOR_CHECKS).glob("*.passed"))) == 2
    # The switch turns this part off too: checked again, nothing written.
    monkeypatch.setenv(pilot_store.PILOT_CACHE_SWITCH, "0")
    bdmc.clear_caches()
    ais(Edged(), y)
    assert len(checks) == 5
