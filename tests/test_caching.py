"""Compile caches are bounded and clearable, results say whether compilation was paid, import is inert."""

import subprocess
import sys

import jax
import numpy as np
import pytest

import bdmc
from bdmc.caching import CompiledCache, cache_info


def test_the_cache_keeps_the_most_recently_used_entries():
    cache = CompiledCache("test", maxsize=2)
    built = []

    def get(k):
        return cache.get_or_build(k, lambda: built.append(k) or k.upper())

    assert get("a") == ("A", True) and get("b") == ("B", True) and get("a") == ("A", False)
    get("c")  # evicts b, the least recently used
    assert len(cache) == 2 and get("a") == ("A", False) and get("b") == ("B", True)
    assert built == ["a", "b", "c", "b"]
    assert cache_info()["test"] == (2, 2)
    with pytest.raises(ValueError, match="maxsize"):
        CompiledCache("bad", maxsize=0)


def test_estimates_say_whether_they_compiled_and_clear_caches_forgets(key):
    model = bdmc.models.GaussianMean(n=4, dim=2)
    data, _ = bdmc.simulate(key, model)
    run = lambda k: bdmc.forward_ais(k, model, data, num_steps=7, num_runs=3, progress=False)  # noqa: E731
    bdmc.clear_caches()
    first, second = run(jax.random.key(1)), run(jax.random.key(2))
    assert first.compiled and first.compile_seconds > 0
    assert not second.compiled and second.compile_seconds == 0.0
    bdmc.clear_caches()
    third = run(jax.random.key(1))
    assert third.compiled and third.compile_seconds > 0
    np.testing.assert_array_equal(third.runs, first.runs)  # a recompiled program gives the same numbers


def test_importing_bdmc_changes_no_jax_setting():
    code = ("import jax; before = bool(jax.config.jax_enable_x64); import bdmc, bdmc.cli; "
            "assert bool(jax.config.jax_enable_x64) == before, 'import flipped x64'; print(before)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_enable_x64_switches_the_dtype_both_ways():
    was = bool(jax.config.jax_enable_x64)
    try:
        bdmc.enable_x64(False)
        assert jax.numpy.ones(()).dtype == np.float32
        bdmc.enable_x64(True)
        assert jax.numpy.ones(()).dtype == np.float64
    finally:
        bdmc.enable_x64(was)
