"""Importing bdmc turns JAX's persistent compilation cache on, unless the user chose otherwise (in a fresh
interpreter each: JAX decides once per process, at its first compilation)."""

import json
import os
import subprocess
import sys

import pytest

PROBE = ("import json, jax, bdmc; print(json.dumps([jax.config.jax_compilation_cache_dir, "
         "jax.config.jax_persistent_cache_min_compile_time_secs]))")


def _import_bdmc(tmp_path, **env):
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("JAX_COMPILATION_CACHE_DIR", "BDMC_COMPILE_CACHE", "BDMC_CACHE_DIR")}
    environment.update(BDMC_CACHE_DIR=str(tmp_path / "bdmc"), **env)
    out = subprocess.run([sys.executable, "-c", PROBE], env=environment, capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", ["default", "user dir", "opt out"])
def test_the_cache_is_on_by_default_and_a_users_choice_is_kept(tmp_path, case):
    if case == "default":
        directory, threshold = _import_bdmc(tmp_path)
        assert directory == str(tmp_path / "bdmc" / "jax") and threshold == 0.0
        assert (tmp_path / "bdmc" / "jax").is_dir()
    elif case == "user dir":
        directory, threshold = _import_bdmc(tmp_path, JAX_COMPILATION_CACHE_DIR=str(tmp_path / "mine"))
        assert directory == str(tmp_path / "mine") and threshold == 1.0  # JAX's default threshold, untouched
    else:
        directory, _ = _import_bdmc(tmp_path, BDMC_COMPILE_CACHE="0")
        assert directory is None
        assert not (tmp_path / "bdmc").exists()
