import os

import jax
import pytest

import bdmc

# The suite runs in float64 (the closed forms and pinned values are float64) unless BDMC_TEST_DTYPE=float32,
# which CI uses for one pass over the core tests.
FLOAT32 = os.environ.get("BDMC_TEST_DTYPE", "float64") == "float32"
bdmc.enable_x64(not FLOAT32)


def pytest_collection_modifyitems(config, items):
    """Under float32, skip the tests marked ``float64`` (pinned float64 numbers), saying why."""
    if not FLOAT32:
        return
    skip = pytest.mark.skip(reason="needs float64 (marked float64); this run is BDMC_TEST_DTYPE=float32")
    for item in items:
        if item.get_closest_marker("float64") is not None:
            item.add_marker(skip)


@pytest.fixture
def key():
    return jax.random.key(20261122)


@pytest.fixture(scope="module", autouse=True)
def _compiled_programs_per_module():
    """Forget compiled programs after each test module, through the public ``bdmc.clear_caches()``.

    bdmc's own caches are bounded, but JAX keeps an executable for every distinct (function, static model,
    shapes) it has compiled; one process running hundreds of models grew past 3 GB without this.
    """
    yield
    bdmc.clear_caches()
