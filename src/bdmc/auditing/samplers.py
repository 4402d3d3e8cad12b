"""The sampler an audit runs: a name (``"auto"`` resolved once, here), a sampler object or a kernel, refused
before any check runs when it cannot apply to the model, then built (a pilot's step sizes, its thinning)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jax

from ..checks.samplers import KernelSampler, NumPyroNUTS
from ..contracts.capabilities import HostDensity, OwnKernel, supports
from ..contracts.sampler import Sampler, Thinned
from ..core.named_kernels import LABELS, named_kernel
from ..errors import OptionError, OptionTypeError
from ..ppl.registry import PPL, PPLS, by_sampler, ppl_of
from . import checks_sbc

KERNEL_SAMPLERS = ("gibbs", "nuts", "hmc", "mala", "rwm")  # bdmc kernels on the model's density
SAMPLERS = ("auto", *KERNEL_SAMPLERS, *(p.own_sampler for p in PPLS.values() if p.own_sampler))
ADAPTIVE_THIN = 2  # thinning of a PPL's NUTS when the budget leaves it automatic (no pilot: it adapts)
# Mean acceptance the SBC chains of a named gradient kernel adapt their step toward in warm-up (Stan's and
# BlackJAX's defaults; MALA's optimal rate).
TARGET_ACCEPT = {"hmc": 0.8, "nuts": 0.8, "mala": 0.574}
BUILT_IN = "bdmc (built-in)"  # the language of a model no adapter wrapped


@dataclass(frozen=True)
class ResolvedSampler:
    """The audited sampler: its name, what SBC runs (draws on a data set) and its kernel (None when it is not a
    fixed kernel, as NumPyro's NUTS with warm-up adaptation is not)."""

    label: str
    sampler: Any
    kernel: Any
    settings: Mapping[str, Any]


def language_name(entry: PPL | None) -> str:
    """The name of a language (``"PyMC"``; ``ppl_of(model)``), or ``"bdmc (built-in)"`` for None."""
    return entry.name if entry is not None else BUILT_IN


def sampler_choice(model, sampler: Any, *, language: PPL | None | str = "look up") -> Any:
    """What ``sampler`` names for ``model``: ``"auto"`` resolved (the program's own language's NUTS, else the
    model's own Gibbs kernel, else bdmc's HMC for a density evaluated outside JAX (WebPPL: SBC batches NUTS's
    chains, and a batch pays each step of every chain at its longest tree; benchmarks/results/audit_quick_timing),
    else bdmc's NUTS), any other name or object as given.

    Raises
    ------
    OptionError, OptionTypeError
        When the choice cannot apply to ``model`` (an unknown name, another language's NUTS, Gibbs without a
        kernel, an object that is neither a sampler nor a kernel): refused before any check runs.

    ``language`` is ``model``'s (:func:`bdmc.ppl.registry.ppl_of`) where the caller has it already.
    """
    own = ppl_of(model) if language == "look up" else language
    if not isinstance(sampler, str):
        if not (isinstance(sampler, Sampler) or callable(sampler)):
            raise OptionTypeError(f"sampler must be a name ({', '.join(SAMPLERS)}), a sampler with draws(...) or a "
                                  f"kernel, got {type(sampler).__name__}")
        return sampler
    if sampler not in SAMPLERS:
        raise OptionError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}, or pass a sampler "
                          "object or a kernel")
    if sampler == "auto":
        return (own.own_sampler if own is not None and own.own_sampler else
                "gibbs" if supports(model, OwnKernel) else "hmc" if supports(model, HostDensity) else "nuts")
    needs = by_sampler(sampler)
    if needs is not None and own is not needs:
        raise OptionError(f"sampler {sampler!r} needs a {needs.name} program (bdmc.ppl.from_{needs.flag}), got "
                          f"{model!r}")
    if sampler == "gibbs" and not supports(model, OwnKernel):
        raise OptionError(f"sampler 'gibbs' needs a model with its own kernel (default_kernel); {model!r} has none: "
                          "choose nuts, hmc, mala or rwm")
    return sampler


def check_sampler(model, sampler: Any) -> None:
    """Refuse a sampler choice that cannot apply to ``model`` (see :func:`sampler_choice`)."""
    sampler_choice(model, sampler)


def resolve_sampler(key, model, sampler: Any, *, warmup: int = 500, thin: int | None = 1,
                    num_draws: int = 100) -> ResolvedSampler:
    """The sampler an audit runs, from its name or object (see :func:`bdmc.audit`).

    ``warmup`` and ``thin`` configure the sampler built from a name or a kernel (a sampler object is kept as it is).
    ``thin=None`` picks the thinning of a fixed kernel from a pilot of ``num_draws`` kept draws
    (:func:`bdmc.auditing.checks_sbc.pilot_thin`, driven by ``fold_in(key, 1)``), recorded under
    ``settings["thinning"]``; a PPL's own NUTS then gets ``ADAPTIVE_THIN``.

    A named gradient kernel gets its step size from a pilot (:func:`bdmc.core.pilot.tune`) on one data set
    simulated with ``key``: HMC keeps the pilot's table by lambda, NUTS, MALA and random-walk Metropolis its
    value at lambda = 1 (MALA's step is half its square: BlackJAX's MALA moves by ``sqrt(2 step)``).
    """
    return build_sampler(key, model, sampler_choice(model, sampler), warmup=warmup, thin=thin, num_draws=num_draws)


def build_sampler(key, model, choice: Any, *, warmup: int, thin: int | None, num_draws: int) -> ResolvedSampler:
    """:func:`resolve_sampler` of a choice :func:`sampler_choice` already checked and resolved."""
    if isinstance(choice, str):
        return _thinned(key, model, _named(key, model, choice, warmup=warmup, thin=thin), thin, num_draws)
    if isinstance(choice, Sampler):
        kernel = choice.kernel if isinstance(choice, KernelSampler) else None
        return ResolvedSampler(type(choice).__name__, choice, kernel, choice.settings())
    built = KernelSampler(choice, warmup=warmup, thin=1 if thin is None else thin, model=model)
    resolved = ResolvedSampler(f"the kernel {type(choice).__name__}", built, choice,
                               {"sampler": "kernel", "kernel": repr(choice)})
    return _thinned(key, model, resolved, thin, num_draws)


def sampler_label(sampler: Any) -> str:
    """How the report names a sampler choice that could not be built."""
    return sampler if isinstance(sampler, str) else type(sampler).__name__


def _thinned(key, model, resolved: ResolvedSampler, thin: int | None, num_draws: int) -> ResolvedSampler:
    """``resolved`` with its thinning: as given, or (``thin=None``, a fixed kernel) from a pilot."""
    if thin is not None or resolved.kernel is None:
        own = resolved.sampler.thin if supports(resolved.sampler, Thinned) else thin
        return dataclasses.replace(resolved, settings={**resolved.settings,
                                                       "thinning": {"thin": own, "automatic": False}})
    chosen, how = checks_sbc.pilot_thin(jax.random.fold_in(key, 1), model, resolved.sampler, num_draws=num_draws)
    return dataclasses.replace(resolved, sampler=dataclasses.replace(resolved.sampler, thin=chosen),
                               settings={**resolved.settings, "thinning": how})


def _own_nuts(name: str):
    """The class of a language's own NUTS (PyMC's and Stan's leave JAX: imported only when asked for)."""
    if name == "numpyro-nuts":
        return NumPyroNUTS
    from ..ppl.samplers import PyMCNUTS, StanNUTS

    return {"pymc-nuts": PyMCNUTS, "stan-nuts": StanNUTS}[name]


def _named(key, model, name: str, *, warmup: int, thin: int | None) -> ResolvedSampler:
    own = by_sampler(name)
    if own is not None:
        s = _own_nuts(name)(model, num_warmup=warmup, thin=ADAPTIVE_THIN if thin is None else thin)
        return ResolvedSampler(own.sampler_label, s, None, s.settings())
    kernel, chosen = named_kernel(key, model, name)
    # SBC's chains adapt the pilot's step to each data set in warm-up (then keep it fixed); Geweke and AIS run the
    # pilot's kernel as it is.
    target = TARGET_ACCEPT.get(name)
    sampler = KernelSampler(kernel, warmup=warmup, thin=1 if thin is None else thin, model=model,
                            target_accept=target)
    settings = {"sampler": name, "kernel": chosen["repr"], "warmup_target_accept": target}
    if "pilot_step_size_at_1" in chosen:
        settings["pilot_step_size_at_1"] = chosen["pilot_step_size_at_1"]
    return ResolvedSampler(LABELS[name], sampler, kernel, settings)
