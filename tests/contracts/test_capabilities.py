"""Capability protocols: what they ask for, how a missing one is reported, and that defaults are recorded."""

import dataclasses

import jax
import pytest

import bdmc
from bdmc.contracts import (
    CAPABILITIES,
    BICFit,
    CaseProposal,
    GibbsConditionals,
    LabelSymmetry,
    capabilities,
    capability_table,
    missing_methods,
    require,
    supports,
)
from bdmc.contracts.capabilities import protocol_methods
from bdmc.errors import MissingCapabilityError
from bdmc.models import REGISTRY, GaussianMean, LinearRegression


@dataclasses.dataclass(frozen=True)
class Bare:
    """The four core methods and nothing else."""

    def sample_prior(self, key):
        return jax.random.normal(key)

    def sample_data(self, key, latent):
        return latent + jax.random.normal(key, (3,))

    def log_prior(self, latent):
        return -0.5 * latent**2

    def log_likelihood(self, latent, data):
        return -0.5 * (data - latent) ** 2


@dataclasses.dataclass(frozen=True)
class HalfProposal(Bare):
    def log_predictive(self, latent, data, lam, i):
        return 0.0


def test_protocols_name_their_methods_and_properties():
    assert protocol_methods(CaseProposal) == ("log_predictive", "sample_case")
    assert protocol_methods(BICFit) == ("bic_log_likelihood", "bic_sample_params")
    assert protocol_methods(LabelSymmetry) == ("vb_log_symmetries",)  # a property
    assert len({c.name for c in CAPABILITIES}) == len(CAPABILITIES)


def test_supports_needs_every_method():
    assert isinstance(Bare(), bdmc.contracts.Model)
    assert not supports(Bare(), GibbsConditionals) and supports(GaussianMean(), GibbsConditionals)
    assert not supports(HalfProposal(), CaseProposal)
    assert missing_methods(HalfProposal(), CaseProposal) == ["sample_case"]


def test_a_missing_capability_is_an_error_that_names_methods_and_purpose():
    with pytest.raises(MissingCapabilityError) as err:
        require(HalfProposal(), CaseProposal, purpose="SMC's posterior proposal")
    message = str(err.value)
    assert "SMC's posterior proposal needs HalfProposal to define sample_case" in message
    assert "case proposal" in message and err.value.missing == ("sample_case",)
    assert isinstance(err.value, bdmc.BDMCError)


def test_consumers_raise_instead_of_silently_changing_behaviour(key):
    data, _ = bdmc.simulate(key, Bare())
    with pytest.raises(MissingCapabilityError, match="sample_case"):
        bdmc.smc(key, HalfProposal(), data, proposal="posterior", num_runs=2, progress=False)
    with pytest.raises(MissingCapabilityError, match="vb_init"):
        bdmc.estimators.variational_bayes(key, LinearRegression(), bdmc.simulate(key, LinearRegression()).data)
    with pytest.raises(MissingCapabilityError, match="sample_data_tempered"):
        bdmc.checks.geweke(key, Bare(), bdmc.kernels.RandomWalkMH(Bare()), lam=0.5, num_samples=10, num_steps=2)


def test_documented_defaults_are_recorded_in_the_result(key):
    """SMC's proposal="auto" picks by capability, and the choice is in the settings, not hidden."""
    data, _ = bdmc.simulate(key, Bare())
    est = bdmc.smc(key, Bare(), data, num_runs=2, progress=False, kernel=bdmc.kernels.RandomWalkMH(Bare()))
    assert est.settings["proposal"] == "prior"


def test_capability_table_covers_every_built_in_model():
    models = {name: cls() for name, cls in REGISTRY.items()}
    table = capability_table(models)
    assert [row["model"] for row in table] == list(models)
    assert all(set(row) == {"model"} | {c.name for c in CAPABILITIES} for row in table)
    assert capabilities(GaussianMean())["exact evidence"] and not capabilities(Bare())["exact evidence"]


def _runtime_protocols():
    """Every runtime-checkable protocol bdmc defines (capabilities, kernels, samplers, models)."""
    import importlib
    import pkgutil
    import typing

    found = {}
    for info in pkgutil.walk_packages(bdmc.__path__, "bdmc."):
        if not info.name.startswith("bdmc.contracts"):
            continue
        for value in vars(importlib.import_module(info.name)).values():
            runtime = isinstance(value, type) and getattr(value, "_is_runtime_protocol", False)
            if runtime and value is not typing.Protocol:
                found[value.__qualname__] = value
    return list(found.values())


class _Field:
    """An instance attribute supplies a protocol's member; and one set to None blocks a method."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)

    def log_density(self, latent, data, lam):
        return 0.0


class _Dynamic:
    """Members from ``__getattr__``: only ``isinstance`` can say."""

    def __getattr__(self, name):
        if name == "check_data":
            return lambda data: None
        raise AttributeError(name)


class _Slotted:
    __slots__ = ("check_data",)


class _SlottedWithDict:
    """A slot beside an instance ``__dict__``: the slot is on the class whether or not the instance set it."""

    __slots__ = ("check_data", "evals_per_step", "__dict__")


def _objects():
    from bdmc import kernels

    objects = [Bare(), HalfProposal(), _Field(), _Field(log_density=None), _Field(check_data=lambda d: None),
               _Field(check_data=None),
               _Field(caches_terms=True, evals_per_step=3), _Dynamic(), _Slotted(), _SlottedWithDict(), object()]
    for name in sorted(REGISTRY):
        model = REGISTRY[name]()
        objects.append(model)
        objects.append(kernels.HMC(model))
    blocked = _Field(check_data=lambda d: None)
    blocked.__dict__["log_density"] = None  # a method blocked on one instance
    return objects + [blocked, kernels.HMC(LinearRegression(), step_size=0.1, num_integration_steps=3)]


def test_supports_answers_as_isinstance_does_for_every_protocol():
    """``supports`` decides from the class where it can (a warm call asks often); its answer is ``isinstance``'s
    for every runtime protocol bdmc defines, on the built-in models and kernels and on objects whose members come
    from instance attributes, ``__getattr__`` or slots. It fails if the fast path ignores an instance attribute."""
    protocols = _runtime_protocols()
    assert len(protocols) >= len(CAPABILITIES) + 5
    checked = 0
    for obj in _objects():
        for protocol in protocols:
            for _ in range(2):  # the second answer comes from the class's cached view
                assert supports(obj, protocol) == isinstance(obj, protocol), (type(obj).__name__, protocol)
                checked += 1
    assert checked > 500
