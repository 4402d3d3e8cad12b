import jax
import pytest

import bdmc  # noqa: F401  (switches on float64)


@pytest.fixture
def key():
    return jax.random.key(20261122)


@pytest.fixture(scope="module", autouse=True)
def _release_compiled_programs():
    """Drop compiled programs after each test module: one process runs the whole suite, and the executables
    of hundreds of models and kernels otherwise accumulate (gigabytes, and XLA crashes late in the run)."""
    yield
    from bdmc.core import engine

    engine._CACHE.clear()
    jax.clear_caches()
