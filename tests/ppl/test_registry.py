"""The one table of languages (``bdmc.ppl.registry``): every entry names a real adapter, and the command line and
the audit read their flags, samplers and names from it."""

from __future__ import annotations

import ast
import importlib.util
import pathlib
import sys

import pytest

from bdmc.auditing.samplers import SAMPLERS, language_name, sampler_choice
from bdmc.errors import OptionError
from bdmc.models import GaussianMean
from bdmc.ppl.registry import PPLS, by_sampler, ppl, ppl_of


@pytest.mark.parametrize("flag", list(PPLS))
def test_every_entry_names_its_adapter_module_and_loader(flag):
    entry = PPLS[flag]
    assert entry.flag == flag and entry.suffixes and all(s.startswith(".") for s in entry.suffixes)
    spec = importlib.util.find_spec(entry.module)
    assert spec is not None and spec.origin is not None
    # Read, not imported: naming a language must not load it.
    defined = {n.name for n in ast.parse(pathlib.Path(spec.origin).read_text()).body
               if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert f"from_{flag}" in defined
    import bdmc.ppl

    assert entry.loader() is getattr(bdmc.ppl, f"from_{flag}")  # the public wrapper, which imports the adapter
    assert entry.names_an_object == entry.metavar.startswith("PATH.py:")


def test_naming_a_language_imports_none():
    before = set(sys.modules)
    assert ppl_of(GaussianMean()) is None and language_name(None) == "bdmc (built-in)"
    assert ppl("stan").name == "Stan" and by_sampler("pymc-nuts") is PPLS["pymc"] and by_sampler("nuts") is None
    loaded = {m for m in set(sys.modules) - before if m.split(".")[0] in ("numpyro", "pymc", "stan", "httpstan")}
    assert not loaded
    with pytest.raises(OptionError, match="unknown language 'julia'"):
        ppl("julia")


def test_the_audit_reads_its_samplers_from_the_registry():
    own = [p.own_sampler for p in PPLS.values() if p.own_sampler]
    assert own == ["numpyro-nuts", "pymc-nuts", "stan-nuts"] and SAMPLERS[-len(own):] == tuple(own)
    gm = GaussianMean()
    assert sampler_choice(gm, "auto") == "gibbs" and sampler_choice(gm, "nuts") == "nuts"
    with pytest.raises(OptionError, match="needs a Stan program"):
        sampler_choice(gm, "stan-nuts")


class _Delegating:
    """GaussianMean's contract without its own Gibbs kernel."""

    def __init__(self):
        self._m = GaussianMean()

    def sample_prior(self, key):
        return self._m.sample_prior(key)

    def sample_data(self, key, latent):
        return self._m.sample_data(key, latent)

    def log_prior(self, latent):
        return self._m.log_prior(latent)

    def log_likelihood(self, latent, data):
        return self._m.log_likelihood(latent, data)


class _OnHost(_Delegating):
    densities_on_host = True


def test_a_density_on_the_host_is_audited_under_hmc_and_batched_under_nuts():
    """A model whose densities leave JAX (a WebPPL program) gets bdmc's HMC from "auto", and SBC batches bdmc's NUTS
    chains on it with vmap (a request per chain costs more than the longest tree); the same model in JAX gets
    bdmc's NUTS, mapped over data sets."""
    from bdmc.checks.samplers import KernelSampler
    from bdmc.kernels import NUTS

    for model, auto, batch in ((_OnHost(), "hmc", "vmap"), (_Delegating(), "nuts", "map")):
        assert sampler_choice(model, "auto") == auto and sampler_choice(model, "nuts") == "nuts"
        assert KernelSampler(NUTS(model, step_size=0.1), model=model).batch == batch


def test_the_command_line_declares_one_flag_per_language():
    from bdmc.cli._common import PPL_OPTIONS
    from bdmc.cli._models import ppl_given, program_flags

    assert set(PPL_OPTIONS) == set(PPLS) | {"simulator"}
    assert program_flags() == "--numpyro PATH.py:FN, --pymc PATH.py:NAME, --stan PATH.stan or --webppl PATH.wppl"
    assert ppl_given(numpyro=None, pymc="m.py:m", stan=None, webppl=None) == ("pymc", "m.py:m")
    assert ppl_given(numpyro=None, pymc=None, stan=None, webppl=None) is None
