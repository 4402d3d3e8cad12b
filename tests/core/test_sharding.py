"""``bdmc.shard_runs``: a run's chains split across devices give the numbers of the same run on one device.

The CPU shows several devices only to a process started with ``--xla_force_host_platform_device_count``, so the
comparison runs in a fresh interpreter with four: forward AIS over two compiled chunks of steps (the state passed
split from program to program), and tempered SMC with particles (resampled within each run: a run's particles on
one device) after its pilot, which runs on one device. That the runs really were split is read off the final
latents' sharding; a placement that kept every chain on one device fails there, one that drew other keys per
device fails the comparison.
"""

import jax
import pytest

import bdmc
from bdmc.errors import OptionError

SHARDED_EQUALS_UNSHARDED = """
import os
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
import jax, numpy as np, warnings
import bdmc
from bdmc.errors import OptionError
warnings.filterwarnings("ignore", category=bdmc.UntrustedStderrWarning)
bdmc.enable_x64()
assert len(jax.devices()) == 4
model = bdmc.models.LinearRegression()
data, _ = bdmc.simulate(jax.random.key(0), model)
key = jax.random.key(3)
calls = {
    "forward AIS, two chunks": lambda: bdmc.forward_ais(key, model, data, num_steps=100, num_runs=8, tune="off",
                                                        progress=False),
    "tempered SMC": lambda: bdmc.tempered_smc(key, model, data, num_runs=4, num_particles=8, num_steps=10,
                                              progress=False),
}
for name, call in calls.items():
    alone = call()
    with bdmc.shard_runs() as mesh:
        split = call()
    assert mesh.size == 4
    sharding = jax.tree.leaves(split.details.latents)[0].sharding
    assert sharding.num_devices == 4 and not sharding.is_fully_replicated, (name, sharding)
    np.testing.assert_allclose(split.runs, alone.runs, rtol=1e-12, atol=1e-12, err_msg=name)
    assert split.n_evals == alone.n_evals, name
with bdmc.shard_runs():
    try:
        bdmc.forward_ais(key, model, data, num_steps=10, num_runs=6, tune="off", progress=False)
    except OptionError as err:
        assert "6 runs cannot be split evenly across 4 devices" in str(err), err
    else:
        raise AssertionError("6 runs on 4 devices were not refused")
    two = jax.tree.map(lambda a: np.stack([a, a]), (data, jax.vmap(model.sample_prior)(jax.random.split(key, 8))))
    try:  # a batch of data sets (the generative models' images) is refused, not silently run on one device
        bdmc.anneal(jax.random.split(key, 2), model, two[0], model.default_kernel(), np.linspace(0, 1, 3), two[1],
                    batch_axes=0, progress=False)
    except OptionError as err:
        assert "a batch of data sets" in str(err), err
    else:
        raise AssertionError("a batch of data sets was not refused")
"""


def test_a_sharded_run_gives_the_unsharded_runs_numbers_and_uneven_runs_are_refused():
    from helpers import run_fresh_python

    run_fresh_python(SHARDED_EQUALS_UNSHARDED)


@pytest.mark.filterwarnings("ignore::bdmc.UntrustedStderrWarning")  # 3 runs of 5 steps: the numbers are compared
def test_one_device_runs_as_before_and_no_device_is_refused(key):
    model = bdmc.models.GaussianMean(n=3, dim=1)
    data = bdmc.simulate(jax.random.key(0), model).data
    alone = bdmc.forward_ais(key, model, data, num_steps=5, num_runs=3, tune="off", progress=False)
    with bdmc.shard_runs(jax.devices()[:1]) as mesh:  # one device: nothing to split, any number of runs
        same = bdmc.forward_ais(key, model, data, num_steps=5, num_runs=3, tune="off", progress=False)
    assert mesh.size == 1 and same.value == alone.value
    with pytest.raises(OptionError, match="at least one device"), bdmc.shard_runs([]):
        pass
