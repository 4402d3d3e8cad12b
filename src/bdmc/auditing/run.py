"""``bdmc.audit``: the project's checks run on one model and one sampler, as one :class:`AuditResult`.

The checks, in order: simulator vs density, simulation-based calibration (SBC) of the sampler, Geweke (for
samplers that are fixed kernels), BDMC on simulated data (sandwich, B-hat, the bug alarm) and, with real data,
BREAD's real-data protocol, and the evidence. The audit's false-alarm level is split evenly (Bonferroni) among
the checks whose verdict is a statistical test, so the whole audit says "fail" on a correct model and sampler
with probability at most ``level``; the exact identity and the informative outcomes take none of it.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jax

from ..checks.samplers import KernelSampler, NumPyroNUTS, Sampler
from ..contracts.capabilities import ConditionalPrior, GibbsConditionals, OwnKernel, supports
from ..contracts.estimate import seed_of
from ..contracts.model import simulate, validate_data
from ..core.named_kernels import LABELS, named_kernel
from ..errors import BDMCError
from ..files import to_jsonable
from ..version import __version__
from . import checks_bdmc, checks_evidence, checks_geweke, checks_prior, checks_sbc, checks_simulator
from .budget import Budget, budget_label
from .guard import error_outcome, guarded
from .report import write_report
from .result import AuditResult, CheckOutcome

SAMPLERS = ("auto", "gibbs", "nuts", "hmc", "mala", "rwm", "numpyro-nuts", "pymc-nuts", "stan-nuts")
# Each PPL's own NUTS, the sampler "auto" audits for a program in that language.
OWN_NUTS = {"NumPyro": "numpyro-nuts", "PyMC": "pymc-nuts", "Stan": "stan-nuts"}
ADAPTIVE_THIN = 2  # thinning of a PPL's NUTS when the budget leaves it automatic (no pilot: it adapts)
# Mean acceptance the SBC chains of a named gradient kernel adapt their step toward in warm-up (Stan's and
# BlackJAX's defaults; MALA's optimal rate).
TARGET_ACCEPT = {"hmc": 0.8, "nuts": 0.8, "mala": 0.574}


@dataclass(frozen=True)
class ResolvedSampler:
    """The audited sampler: its name, what SBC runs (draws on a data set) and its kernel (None when it is not a
    fixed kernel, as NumPyro's NUTS with warm-up adaptation is not)."""

    label: str
    sampler: Any
    kernel: Any
    settings: Mapping[str, Any]


def audit(key, model, *, sampler: Any = "auto", data=None, quick: bool = False, budget: Budget | None = None,
          level: float = 0.01, hyperparameters: Sequence[str] | None = None, name: str | None = None,
          ppl: str | None = None, on_stage: Callable[[str], None] | None = None,
          on_outcome: Callable[[CheckOutcome], None] | None = None,
          on_progress: Callable[[str], None] | None = None, progress: bool = False,
          report_dir: str | os.PathLike | None = None, provenance: Mapping[str, Any] | None = None) -> AuditResult:
    """Run the project's checks on ``model`` and ``sampler`` (see ``docs/audit.md``).

    Parameters
    ----------
    key : PRNG key
        Every check draws from its own ``fold_in`` of it.
    model : Model
        A built-in model or a PPL program (:func:`bdmc.ppl.from_numpyro` and the other adapters).
    sampler : str, Sampler or kernel
        ``"auto"`` (the program's own PPL's NUTS for a NumPyro, PyMC or Stan program, the model's own Gibbs
        kernel when it has one, else bdmc's NUTS), one of ``"gibbs"``, ``"nuts"``, ``"hmc"``, ``"mala"``,
        ``"rwm"`` (bdmc kernels; step sizes from a pilot on one simulated data set, frozen), ``"numpyro-nuts"``,
        ``"pymc-nuts"`` (``pymc.sample``), ``"stan-nuts"`` (Stan's NUTS through pystan), an object with
        ``draws(key, data, *, num_draws)`` (:mod:`bdmc.checks.samplers`, :mod:`bdmc.ppl.samplers`) or a kernel
        ``kernel(key, latent, data, lam) -> (latent, info)``.
    data : pytree, optional
        The user's observed data. The evidence is then that of these data, and BREAD's real-data protocol
        runs when ``hyperparameters`` are named; otherwise the evidence is that of a simulated data set.
    quick : bool
        Use :meth:`Budget.quick` instead of :meth:`Budget.default` (when ``budget`` is not given).
    budget : Budget, optional
    level : float
        False-alarm level of the whole audit, split evenly among its statistical checks.
    hyperparameters : sequence of str, optional
        Sites fitted on the real data by the real-data protocol (e.g. ``("scale_sq",)``).
    name, ppl : str, optional
        How the report names the model and its language.
    on_stage : callable, optional
        Called with a short description as each check starts.
    on_outcome : callable, optional
        Called with each :class:`CheckOutcome` as it finishes.
    on_progress : callable, optional
        Called with a count within a stage as it grows (``"12 of 50 simulated data sets"``), where the stage
        loops on the host (SBC of a sampler that is not one compiled program).
    progress : bool
        Show the engine's progress bars.
    report_dir : path, optional
        Write the report (:func:`bdmc.auditing.report.write_report`) here before the first check and again as
        each check finishes, so that an interrupted audit keeps what it found.
    provenance : mapping, optional
        What was run, for the report (command line, files, function, observed names, data file); the date,
        bdmc's version, the budget's name and the seed are added.

    A check that raises becomes that check's ``"error"`` verdict, with its message and what to try; the other
    checks still run. Only a wrong choice of sampler (refused before anything runs) and an interrupt propagate.

    Returns
    -------
    AuditResult
    """
    if not 0 < level < 1:
        raise BDMCError(f"level must lie in (0, 1), got {level}")
    began = time.perf_counter()
    budget_name = budget_label(budget, quick=quick)
    budget = budget if budget is not None else (Budget.quick() if quick else Budget.default())
    say = on_stage or (lambda _: None)
    if data is not None:
        data = validate_data(model, data)
    check_sampler(model, sampler)  # a wrong choice is the caller's mistake, refused before anything runs
    resolved, resolve_error = _resolve_guarded(jax.random.fold_in(key, 100), model, sampler, budget=budget)
    fixed_kernel = resolved is not None and resolved.kernel is not None
    label = resolved.label if resolved is not None else _sampler_label(sampler)
    statistical = ["sbc", "bdmc"] + (["geweke"] if fixed_kernel else [])
    if not supports(model, GibbsConditionals):
        statistical.append("simulator-density")
    if budget.prior_runs > 0:
        statistical.append("prior-normalization")
    each = level / len(statistical)
    planned = ([checks_simulator.NAME] + ([checks_prior.NAME] if budget.prior_runs > 0 else [])
               + [checks_sbc.NAME, checks_geweke.NAME, checks_bdmc.NAME]
               + ([checks_bdmc.REAL_NAME] if data is not None else []) + [checks_evidence.NAME])
    settings = {"budget": to_jsonable(dataclasses.asdict(budget)), "level": level, "level_per_check": each,
                "statistical_checks": statistical, "key": list(seed_of(key)),
                "sampler": dict(resolved.settings) if resolved is not None else {"sampler": str(sampler)},
                "overall_level": f"each statistical check at {each:.3g} = {level:g} / {len(statistical)}: the audit "
                                 f"fails a correct model and sampler with probability at most {level:g}",
                "hyperparameters": list(hyperparameters or ())}
    stamp = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "bdmc_version": __version__,
             "budget": budget_name, "seed": _seed_int(key), **dict(provenance or {})}
    outcomes: list[CheckOutcome] = []

    def result() -> AuditResult:
        finished = {o.name for o in outcomes}
        return AuditResult(model=name or repr(model), ppl=ppl or _ppl_of(model), sampler=label,
                           data="simulated" if data is None else "user's data", checks=tuple(outcomes),
                           settings=settings, seconds=time.perf_counter() - began, provenance=stamp,
                           pending=tuple(n for n in planned if n not in finished))

    def done(outcome: CheckOutcome) -> None:
        outcomes.append(outcome)
        if report_dir is not None:  # rewritten as each check finishes: an interrupted audit keeps its checks
            write_report(result(), report_dir)
        if on_outcome is not None:
            on_outcome(outcome)

    if report_dir is not None:
        write_report(result(), report_dir)

    say("simulator vs density")
    done(guarded(checks_simulator.NAME, "Simulator vs density", lambda: checks_simulator.simulator_outcome(
        jax.random.fold_in(key, 1), model, num_triples=budget.triples, num_latents=budget.simulator_latents,
        num_data=budget.simulator_data, num_prior=budget.simulator_prior, level=each)))

    if budget.prior_runs > 0:
        say("prior normalization (forward and reverse AIS from a fitted reference)")
        done(guarded(checks_prior.NAME, checks_prior.TITLE, lambda: checks_prior.prior_outcome(
            jax.random.fold_in(key, 8), model, num_steps=budget.prior_steps, num_runs=budget.prior_runs,
            level=each)))

    sbc_title = f"Simulation-based calibration of {label}"
    say(f"simulation-based calibration of {label}")
    if resolved is None:
        done(error_outcome(checks_sbc.NAME, sbc_title, resolve_error, during=f"building {label}"))
    else:
        done(guarded(checks_sbc.NAME, sbc_title, lambda: checks_sbc.sbc_outcome(
            jax.random.fold_in(key, 2), model, resolved.sampler, label=resolved.label, level=each,
            num_replications=budget.sbc_replications, num_draws=budget.sbc_draws,
            thinning=resolved.settings.get("thinning"),
            on_progress=None if on_progress is None else lambda done_, total: on_progress(
                f"{done_} of {total} simulated data sets"))))

    geweke_title = f"Geweke test of {label}"
    if fixed_kernel:
        say(f"Geweke test of {label}")
        done(guarded(checks_geweke.NAME, geweke_title, lambda: checks_geweke.geweke_outcome(
            jax.random.fold_in(key, 3), model, resolved.kernel, level=each, num_samples=budget.geweke_samples,
            num_steps=budget.geweke_steps, sampler=resolved.label)))
    else:
        why = ("its sampler could not be built (see the SBC check)" if resolved is None else
               f"{label} adapts during warm-up, so it is not a fixed kernel that can be run from a given state (SBC "
               "audits it instead)")
        done(CheckOutcome(name=checks_geweke.NAME, title=geweke_title, verdict="not run", statistic="-",
                          level=None, summary=f"not run: {why}"))

    say("BDMC on simulated data (forward and reverse AIS)")
    sandwich_res = None

    def bdmc_check() -> CheckOutcome:
        nonlocal sandwich_res
        outcome, sandwich_res = checks_bdmc.bdmc_outcome(
            jax.random.fold_in(key, 4), model, kernel=resolved.kernel if fixed_kernel else None,
            steps=budget.sandwich_steps, num_runs=budget.sandwich_runs, level=each, progress=progress)
        return outcome

    done(guarded(checks_bdmc.NAME, "BDMC on simulated data: sandwich, B-hat and the bug alarm", bdmc_check))

    if data is not None:
        done(guarded(checks_bdmc.REAL_NAME, "BDMC on the real data: BREAD's real-data protocol",
                     lambda: _real_data(jax.random.fold_in(key, 5), model, data, hyperparameters, budget=budget,
                                        say=say, progress=progress)))

    data_label = ("the given data" if data is not None else "the simulated data set of the BDMC check"
                  if sandwich_res is not None else "a simulated data set")
    say(f"evidence of {data_label}")

    def evidence_check() -> CheckOutcome:
        evidence_data = (data if data is not None else sandwich_res.data if sandwich_res is not None
                         else simulate(jax.random.fold_in(key, 9), model).data)  # the BDMC check raised
        draws, sampler_stats = None, None
        if budget.evidence_draws > 0 and resolved is not None:
            k_draws = jax.random.fold_in(key, 6)
            if hasattr(resolved.sampler, "diagnosed_draws"):  # a PPL's NUTS: its divergences too
                draws, sampler_stats = resolved.sampler.diagnosed_draws(k_draws, evidence_data,
                                                                        num_draws=budget.evidence_draws)
            else:
                draws = resolved.sampler.draws(k_draws, evidence_data, num_draws=budget.evidence_draws)
        return checks_evidence.evidence_outcome(
            jax.random.fold_in(key, 7), model, evidence_data, kernel=resolved.kernel if fixed_kernel else None,
            num_steps=budget.evidence_steps, num_runs=budget.evidence_runs, data_label=data_label, draws=draws,
            sampler_stats=sampler_stats, sampler=label, num_draws=budget.evidence_bracket_draws, progress=progress)

    done(guarded(checks_evidence.NAME, f"Evidence: log p(y) of {data_label}", evidence_check))
    return result()


def check_sampler(model, sampler: Any) -> None:
    """Refuse a sampler choice that cannot apply to ``model`` (an unknown name, another language's NUTS, Gibbs
    without a kernel), before any check runs."""
    if not isinstance(sampler, str):
        if not (isinstance(sampler, Sampler) or callable(sampler)):
            raise BDMCError(f"sampler must be a name ({', '.join(SAMPLERS)}), a sampler with draws(...) or a kernel, "
                            f"got {type(sampler).__name__}")
        return
    if sampler not in SAMPLERS:
        raise BDMCError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}, or pass a sampler "
                        "object or a kernel")
    language = {"numpyro-nuts": "NumPyro", "pymc-nuts": "PyMC", "stan-nuts": "Stan"}.get(sampler)
    if language is not None and _ppl_of(model) != language:
        raise BDMCError(f"sampler {sampler!r} needs a {language} program (bdmc.ppl.from_{language.lower()}), got "
                        f"{model!r}")
    if sampler == "gibbs" and not supports(model, OwnKernel):
        raise BDMCError(f"sampler 'gibbs' needs a model with its own kernel (default_kernel); {model!r} has none: "
                        "choose nuts, hmc, mala or rwm")


def _resolve_guarded(key, model, sampler, *, budget: Budget):
    """``(resolved, None)``, or ``(None, error)`` when building the sampler (its pilot) raised."""
    try:
        return resolve_sampler(key, model, sampler, warmup=budget.sbc_warmup, thin=budget.sbc_thin,
                               num_draws=budget.sbc_draws), None
    except Exception as err:  # noqa: BLE001  reported as the SBC check's error; the sampler-free checks run
        return None, err


def _sampler_label(sampler: Any) -> str:
    return sampler if isinstance(sampler, str) else type(sampler).__name__


def _seed_int(key) -> int | list[int]:
    """The integer seed of ``jax.random.key(seed)`` (its key data is ``(0, seed)``), else the key data."""
    words = [int(w) for w in seed_of(key)]
    return words[-1] if len(words) == 2 and words[0] == 0 else words


def resolve_sampler(key, model, sampler: Any, *, warmup: int = 500, thin: int | None = 1,
                    num_draws: int = 100) -> ResolvedSampler:
    """The sampler an audit runs, from its name or object (see :func:`audit`).

    ``warmup`` and ``thin`` configure the sampler built from a name or a kernel (a sampler object is kept as it is).
    ``thin=None`` picks the thinning of a fixed kernel from a pilot of ``num_draws`` kept draws
    (:func:`bdmc.auditing.checks_sbc.pilot_thin`, driven by ``fold_in(key, 1)``), recorded under
    ``settings["thinning"]``; a PPL's own NUTS then gets ``ADAPTIVE_THIN``.

    A named gradient kernel gets its step size from a pilot (:func:`bdmc.core.pilot.tune`) on one data set
    simulated with ``key``: HMC keeps the pilot's table by lambda, NUTS, MALA and random-walk Metropolis its
    value at lambda = 1 (MALA's step is half its square: BlackJAX's MALA moves by ``sqrt(2 step)``).
    """
    check_sampler(model, sampler)
    if isinstance(sampler, str):
        if sampler == "auto":
            sampler = OWN_NUTS.get(_ppl_of(model)) or ("gibbs" if supports(model, OwnKernel) else "nuts")
        return _thinned(key, model, _named(key, model, sampler, warmup=warmup, thin=thin),
                        thin, num_draws)
    if isinstance(sampler, Sampler):
        kernel = sampler.kernel if isinstance(sampler, KernelSampler) else None
        return ResolvedSampler(type(sampler).__name__, sampler, kernel, sampler.settings())
    if callable(sampler):
        label = f"the kernel {type(sampler).__name__}"
        built = KernelSampler(sampler, warmup=warmup, thin=1 if thin is None else thin, model=model)
        return _thinned(key, model, ResolvedSampler(label, built, sampler, {"sampler": "kernel",
                                                                             "kernel": repr(sampler)}),
                        thin, num_draws)
    raise AssertionError("unreachable: check_sampler refuses every other sampler")  # pragma: no cover


def _thinned(key, model, resolved: ResolvedSampler, thin: int | None, num_draws: int) -> ResolvedSampler:
    """``resolved`` with its thinning: as given, or (``thin=None``, a fixed kernel) from a pilot."""
    if thin is not None or resolved.kernel is None:
        how = {"thin": getattr(resolved.sampler, "thin", thin), "automatic": False}
        return dataclasses.replace(resolved, settings={**resolved.settings, "thinning": how})
    chosen, how = checks_sbc.pilot_thin(jax.random.fold_in(key, 1), model, resolved.sampler, num_draws=num_draws)
    return dataclasses.replace(resolved, sampler=dataclasses.replace(resolved.sampler, thin=chosen),
                               settings={**resolved.settings, "thinning": how})


def _named(key, model, name: str, *, warmup: int, thin: int | None) -> ResolvedSampler:
    if name == "numpyro-nuts":
        thin = ADAPTIVE_THIN if thin is None else thin
        s = NumPyroNUTS(model, num_warmup=warmup, thin=thin)
        return ResolvedSampler("NumPyro's NUTS", s, None, s.settings())
    if name in ("pymc-nuts", "stan-nuts"):
        language = "PyMC" if name == "pymc-nuts" else "Stan"
        from ..ppl.samplers import PyMCNUTS, StanNUTS

        s = (PyMCNUTS if language == "PyMC" else StanNUTS)(model, num_warmup=warmup,
                                                            thin=ADAPTIVE_THIN if thin is None else thin)
        return ResolvedSampler(f"{language}'s NUTS", s, None, s.settings())
    thin = 1 if thin is None else thin
    kernel, chosen = named_kernel(key, model, name)
    # SBC's chains adapt the pilot's step to each data set in warm-up (then keep it fixed); Geweke and AIS run the
    # pilot's kernel as it is.
    target = TARGET_ACCEPT.get(name)
    sampler = KernelSampler(kernel, warmup=warmup, thin=thin, model=model, target_accept=target)
    settings = {"sampler": name, "kernel": chosen["repr"], "warmup_target_accept": target}
    if "pilot_step_size_at_1" in chosen:
        settings["pilot_step_size_at_1"] = chosen["pilot_step_size_at_1"]
    return ResolvedSampler(LABELS[name], sampler, kernel, settings)


def _real_data(key, model, data, hyperparameters, *, budget: Budget, say, progress) -> CheckOutcome:
    title = "BDMC on the real data: BREAD's real-data protocol"
    if not hyperparameters:
        return CheckOutcome(name=checks_bdmc.REAL_NAME, title=title, verdict="not run", statistic="-", level=None,
                            summary="not run: name the hyperparameters to fit on the real data "
                                    "(hyperparameters=..., --hyperparameters)")
    if not supports(model, ConditionalPrior):
        return CheckOutcome(name=checks_bdmc.REAL_NAME, title=title, verdict="not run", statistic="-", level=None,
                            summary="not run: the model cannot draw its other latents given fixed hyperparameters "
                                    "(sample_prior_given; the PPL adapters provide it)")
    say("BREAD's real-data protocol (NUTS fit, forward AIS on real and simulated data)")
    return checks_bdmc.real_data_outcome(key, model, data, hyperparameters=hyperparameters,
                                         steps=budget.real_steps, num_runs=budget.real_runs,
                                         mcmc_steps=budget.real_mcmc_steps, num_warmup=budget.real_warmup,
                                         on_stage=say, progress=progress)


PPL_OF_MODULE = {"bdmc.ppl.numpyro": "NumPyro", "bdmc.ppl.pymc": "PyMC", "bdmc.ppl.stan": "Stan",
                 "bdmc.ppl.webppl": "WebPPL"}


def _ppl_of(model) -> str:
    # By the adapter's module, so that naming the language does not import PyMC or Stan.
    return PPL_OF_MODULE.get(type(model).__module__, "bdmc (built-in)")

