import os

import jax
import pytest

import bdmc

# The suite runs in float64 (the closed forms and pinned values are float64) unless BDMC_TEST_DTYPE=float32,
# which CI uses for one pass over the core tests.
FLOAT32 = os.environ.get("BDMC_TEST_DTYPE", "float64") == "float32"
bdmc.enable_x64(not FLOAT32)


@pytest.fixture
def key():
    return jax.random.key(20261122)
