import jax
import pytest

import bdmc  # noqa: F401  (switches on float64)


@pytest.fixture
def key():
    return jax.random.key(20261122)
