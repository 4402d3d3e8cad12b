"""``bdmc.audit``: the project's checks run on one model and one sampler, as one :class:`AuditResult`.

The checks, in order: simulator vs density, prior normalization, simulation-based calibration (SBC) of the
sampler, Geweke (for samplers that are fixed kernels), BDMC on simulated data (sandwich, B-hat, the bug alarm)
and, with real data, BREAD's real-data protocol, and the evidence. The audit's false-alarm level is split evenly
(Bonferroni) among the checks whose verdict is a statistical test, so the whole audit says "fail" on a correct
model and sampler with probability at most ``level``; the exact identity and the informative outcomes take none
of it.

Each check draws from its own stream of the caller's key (:class:`AuditKeys`), and hands what a later check
needs to it explicitly (the BDMC check's simulated data set and its exact ``log p(y)`` to the evidence check).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

import jax

from ..caching import release_compiled
from ..checks.labels import Exchangeable, find_exchangeable
from ..contracts.capabilities import ConditionalPrior, GibbsConditionals, ReleasesResources, supports
from ..contracts.estimate import seed_of
from ..contracts.model import simulate, validate_data
from ..contracts.sampler import DiagnosedDraws
from ..errors import BDMCError, OptionError
from ..files import to_jsonable
from ..ppl.registry import ppl_of
from ..version import __version__
from . import checks_bdmc, checks_evidence, checks_geweke, checks_prior, checks_sbc, checks_simulator
from .budget import Budget, budget_label
from .guard import error_outcome, guarded, guarded_with
from .report import write_report
from .result import AuditResult, CheckOutcome
from .samplers import (
    ADAPTIVE_THIN,
    SAMPLERS,
    ResolvedSampler,
    build_sampler,
    check_sampler,
    language_name,
    resolve_sampler,
    sampler_choice,
    sampler_label,
)

__all__ = ["ADAPTIVE_THIN", "SAMPLERS", "AuditKeys", "Budget", "ResolvedSampler", "audit", "check_sampler",
           "resolve_sampler"]

REAL_TITLE = "BDMC on the real data: BREAD's real-data protocol"


class AuditKeys(NamedTuple):
    """The audit's one key stream: each use of the caller's key is ``fold_in(key, n)`` with its own fixed ``n``
    (:data:`AUDIT_STREAMS`), so that a check's numbers do not depend on which other checks ran."""

    simulator: Any
    sbc: Any
    geweke: Any
    bdmc: Any
    real_data: Any
    evidence_draws: Any  # the sampler's draws behind the evidence's bracketing bounds
    evidence: Any
    prior: Any
    evidence_data: Any  # a data set for the evidence when the BDMC check raised before simulating one
    sampler: Any  # the sampler's pilot (step sizes, thinning)
    labels: Any  # the check that exchangeable components are a symmetry of the posterior

    @classmethod
    def of(cls, key) -> AuditKeys:
        return cls(**{name: jax.random.fold_in(key, n) for name, n in AUDIT_STREAMS.items()})


AUDIT_STREAMS = {"simulator": 1, "sbc": 2, "geweke": 3, "bdmc": 4, "real_data": 5, "evidence_draws": 6,
                 "evidence": 7, "prior": 8, "evidence_data": 9, "sampler": 100, "labels": 101}


@dataclass(frozen=True)
class AuditPlan:
    """What an audit will run: its sampler (None when building it raised: ``sampler_error``), the checks and
    the level each statistical one gets."""

    resolved: ResolvedSampler | None
    sampler_error: BaseException | None
    label: str
    planned: tuple[str, ...]
    statistical: tuple[str, ...]
    each: float
    budget: Budget
    exchangeable: Exchangeable | None = None

    @property
    def kernel(self):
        """The audited sampler's fixed kernel (Geweke, and the AIS runs), None when it is not one."""
        return self.resolved.kernel if self.resolved is not None else None


def audit(key, model, *, sampler: Any = "auto", data=None, quick: bool = False, budget: Budget | None = None,
          level: float = 0.01, hyperparameters: Sequence[str] | None = None, name: str | None = None,
          ppl: str | None = None, on_stage: Callable[[str], None] | None = None,
          on_outcome: Callable[[CheckOutcome], None] | None = None,
          on_progress: Callable[[str], None] | None = None, progress: bool = False,
          report_dir: str | os.PathLike | None = None, provenance: Mapping[str, Any] | None = None,
          exchangeable: str | Sequence[str] | None = "auto", release: bool = True) -> AuditResult:
    """Run the project's checks on ``model`` and ``sampler`` (see ``docs/audit.md``).

    Parameters
    ----------
    key : PRNG key
        Every check draws from its own ``fold_in`` of it (:class:`AuditKeys`).
    model : Model
        A built-in model or a PPL program (:func:`bdmc.ppl.from_numpyro` and the other adapters).
    sampler : str, Sampler or kernel
        ``"auto"`` (the program's own PPL's NUTS for a NumPyro, PyMC or Stan program, the model's own Gibbs
        kernel when it has one, bdmc's HMC for a density evaluated outside JAX (WebPPL), else bdmc's NUTS), one
        of ``"gibbs"``, ``"nuts"``, ``"hmc"``, ``"mala"``,
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
        How the report names the model and its language (default: ``repr(model)`` and the adapter's language).
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
    exchangeable : "auto", sequence of str or None
        Latent sites whose leading axis indexes exchangeable components (a mixture's ``("mu", "w")``), so that SBC
        tests label-invariant quantities and the evidence's bracketing is corrected for the ``K!`` labellings
        (:mod:`bdmc.checks.labels`). "auto" finds them by permuting groups of sites (a program's sites only);
        named sites that are not a symmetry of the posterior are refused before anything runs; None: none.
    release : bool
        Drop the compiled programs bdmc holds when the audit ends (:func:`bdmc.caching.release_compiled`; JAX's
        caches of the user's own programs are left alone), so that a process auditing many models keeps a flat
        memory (``benchmarks/audit_memory.py``). False keeps them, for a second audit of the same model object.

    A check that raises becomes that check's ``"error"`` verdict, with its message and what to try; the other
    checks still run. Only a wrong choice of sampler (refused before anything runs) and an interrupt propagate.

    Returns
    -------
    AuditResult
    """
    if not 0 < level < 1:
        raise OptionError(f"level must lie in (0, 1), got {level}")
    began = time.perf_counter()
    budget_name = budget_label(budget, quick=quick)
    budget = budget if budget is not None else (Budget.quick() if quick else Budget.default())
    own = ppl_of(model)  # the model's language, asked once
    data = validate_data(model, data) if data is not None else None
    choice = sampler_choice(model, sampler, language=own)  # a wrong choice is refused before anything runs
    keys = AuditKeys.of(key)
    components = _exchangeable(keys.labels, model, exchangeable)  # named sites that are not one: refused here
    plan = _plan(keys, model, sampler, choice, budget=budget, level=level, real=data is not None)
    plan = dataclasses.replace(plan, exchangeable=components)
    stamp = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "bdmc_version": __version__,
             "budget": budget_name, "seed": _seed_int(key), **dict(provenance or {})}
    record = _Record(model=name or repr(model), ppl=ppl or language_name(own), sampler=plan.label,
                     data="simulated" if data is None else "user's data", planned=plan.planned,
                     settings=_settings(plan, key, sampler, level, hyperparameters), provenance=stamp, began=began,
                     report_dir=report_dir, on_outcome=on_outcome)
    say = on_stage or (lambda _: None)
    try:
        _run_checks(keys, model, plan, record, data=data, hyperparameters=hyperparameters, say=say,
                    on_progress=on_progress, progress=progress)
    finally:
        if release:  # an interrupted audit releases its programs too
            if supports(model, ReleasesResources):
                model.release()
            release_compiled()
    return record.result()


def _plan(keys: AuditKeys, model, sampler, choice, *, budget: Budget, level: float, real: bool) -> AuditPlan:
    """The sampler built (or the error building it raised), the checks to run and each one's level."""
    try:
        resolved, error = build_sampler(keys.sampler, model, choice, warmup=budget.sbc_warmup,
                                        thin=budget.sbc_thin, num_draws=budget.sbc_draws), None
    except Exception as err:  # noqa: BLE001  reported as the SBC check's error; the sampler-free checks run
        resolved, error = None, err
    fixed_kernel = resolved is not None and resolved.kernel is not None
    statistical = (["sbc", "bdmc"] + (["geweke"] if fixed_kernel else [])
                   + ([] if supports(model, GibbsConditionals) else ["simulator-density"])
                   + (["prior-normalization"] if budget.prior_runs > 0 else []))
    planned = ([checks_simulator.NAME] + ([checks_prior.NAME] if budget.prior_runs > 0 else [])
               + [checks_sbc.NAME, checks_geweke.NAME, checks_bdmc.NAME]
               + ([checks_bdmc.REAL_NAME] if real else []) + [checks_evidence.NAME])
    return AuditPlan(resolved=resolved, sampler_error=error,
                     label=resolved.label if resolved is not None else sampler_label(sampler),
                     planned=tuple(planned), statistical=tuple(statistical), each=level / len(statistical),
                     budget=budget)


def _settings(plan: AuditPlan, key, sampler, level: float, hyperparameters) -> dict:
    each, statistical = plan.each, list(plan.statistical)
    return {"budget": to_jsonable(dataclasses.asdict(plan.budget)), "level": level, "level_per_check": each,
            "statistical_checks": statistical, "key": list(seed_of(key)),
            "sampler": dict(plan.resolved.settings) if plan.resolved is not None else {"sampler": str(sampler)},
            "overall_level": f"each statistical check at {each:.3g} = {level:g} / {len(statistical)}: the audit "
                             f"fails a correct model and sampler with probability at most {level:g}",
            "hyperparameters": list(hyperparameters or ()),
            "exchangeable": plan.exchangeable.describe() if plan.exchangeable is not None else None}


def _exchangeable(key, model, exchangeable) -> Exchangeable | None:
    """The exchangeable components to use: found ("auto"), named and checked, or none."""
    if exchangeable is None:
        return None
    if isinstance(exchangeable, str):
        if exchangeable != "auto":
            raise OptionError(f'exchangeable must be "auto", a sequence of site names or None, got {exchangeable!r}')
        try:
            return find_exchangeable(key, model)
        except Exception:  # noqa: BLE001  a program that fails here fails its checks, each with its own error
            return None
    try:
        return find_exchangeable(key, model, tuple(exchangeable))
    except BDMCError as err:
        raise OptionError(f"exchangeable={list(exchangeable)}: {err}") from err


class _Record:
    """The outcomes so far, as an :class:`AuditResult`; the report rewritten as each check finishes, so that an
    interrupted audit keeps its checks."""

    def __init__(self, *, began: float, report_dir, on_outcome, planned: tuple[str, ...], **fields):
        self.began, self.report_dir, self.on_outcome, self.planned = began, report_dir, on_outcome, planned
        self.fields, self.outcomes = fields, []
        if report_dir is not None:
            write_report(self.result(), report_dir)

    def result(self) -> AuditResult:
        finished = {o.name for o in self.outcomes}
        return AuditResult(checks=tuple(self.outcomes), seconds=time.perf_counter() - self.began,
                           pending=tuple(n for n in self.planned if n not in finished), **self.fields)

    def done(self, outcome: CheckOutcome) -> None:
        self.outcomes.append(outcome)
        if self.report_dir is not None:
            write_report(self.result(), self.report_dir)
        if self.on_outcome is not None:
            self.on_outcome(outcome)


def _run_checks(keys: AuditKeys, model, plan: AuditPlan, record: _Record, *, data, hyperparameters, say,
                on_progress, progress) -> None:
    """Every check in order, each outcome recorded as it finishes."""
    budget, each = plan.budget, plan.each
    say("simulator vs density")
    record.done(guarded(checks_simulator.NAME, "Simulator vs density", lambda: checks_simulator.simulator_outcome(
        keys.simulator, model, num_triples=budget.triples, num_latents=budget.simulator_latents,
        num_data=budget.simulator_data, num_prior=budget.simulator_prior, level=each)))
    if budget.prior_runs > 0:
        say("prior normalization (forward and reverse AIS from a fitted reference)")
        record.done(guarded(checks_prior.NAME, checks_prior.TITLE, lambda: checks_prior.prior_outcome(
            keys.prior, model, num_steps=budget.prior_steps, num_runs=budget.prior_runs, level=each)))
    say(f"simulation-based calibration of {plan.label}")
    record.done(_sbc_check(keys.sbc, model, plan, on_progress))
    record.done(_geweke_check(keys.geweke, model, plan, say))
    say("BDMC on simulated data (forward and reverse AIS)")
    outcome, simulated = guarded_with(
        checks_bdmc.NAME, "BDMC on simulated data: sandwich, B-hat and the bug alarm",
        lambda: checks_bdmc.bdmc_outcome(keys.bdmc, model, kernel=plan.kernel, steps=budget.sandwich_steps,
                                         num_runs=budget.sandwich_runs, level=each, progress=progress))
    record.done(outcome)
    if data is not None:
        record.done(guarded(checks_bdmc.REAL_NAME, REAL_TITLE, lambda: _real_data_check(
            keys.real_data, model, data, hyperparameters, budget=budget, say=say, progress=progress)))
    data_label = ("the given data" if data is not None else "the simulated data set of the BDMC check"
                  if simulated is not None else "a simulated data set")
    say(f"evidence of {data_label}")
    record.done(guarded(checks_evidence.NAME, f"Evidence: log p(y) of {data_label}", lambda: _evidence_check(
        keys, model, plan, data=data, simulated=simulated, data_label=data_label, progress=progress)))


def _sbc_check(key, model, plan: AuditPlan, on_progress) -> CheckOutcome:
    title = f"Simulation-based calibration of {plan.label}"
    if plan.resolved is None:
        return error_outcome(checks_sbc.NAME, title, plan.sampler_error, during=f"building {plan.label}")
    resolved = plan.resolved
    counted = None if on_progress is None else (lambda n, total: on_progress(f"{n} of {total} simulated data sets"))
    return guarded(checks_sbc.NAME, title, lambda: checks_sbc.sbc_outcome(
        key, model, resolved.sampler, label=resolved.label, level=plan.each,
        num_replications=plan.budget.sbc_replications, num_draws=plan.budget.sbc_draws,
        thinning=resolved.settings.get("thinning"), on_progress=counted, exchangeable=plan.exchangeable))


def _geweke_check(key, model, plan: AuditPlan, say) -> CheckOutcome:
    title = f"Geweke test of {plan.label}"
    if plan.kernel is not None:
        say(title)
        return guarded(checks_geweke.NAME, title, lambda: checks_geweke.geweke_outcome(
            key, model, plan.kernel, level=plan.each, num_samples=plan.budget.geweke_samples,
            num_steps=plan.budget.geweke_steps, sampler=plan.label))
    why = ("its sampler could not be built (see the SBC check)" if plan.resolved is None else
           f"{plan.label} adapts during warm-up, so it is not a fixed kernel that can be run from a given state (SBC "
           "audits it instead)")
    return CheckOutcome(name=checks_geweke.NAME, title=title, verdict="not run", statistic="-", level=None,
                        summary=f"not run: {why}")


def _evidence_check(keys: AuditKeys, model, plan: AuditPlan, *, data, simulated, data_label: str,
                    progress) -> CheckOutcome:
    """The evidence of the user's data, else of the BDMC check's data set (with the exact value it found), else
    of a data set simulated here (the BDMC check raised)."""
    if data is not None:
        evidence_data, exact = data, "compute"
    elif simulated is not None:
        evidence_data, exact = simulated.data, simulated.exact
    else:
        evidence_data, exact = simulate(keys.evidence_data, model).data, "compute"
    budget, sampler = plan.budget, plan.resolved.sampler if plan.resolved is not None else None
    draws, sampler_stats = None, None
    if budget.evidence_draws > 0 and sampler is not None:
        if supports(sampler, DiagnosedDraws):  # a NUTS: its divergences too
            draws, sampler_stats = sampler.diagnosed_draws(keys.evidence_draws, evidence_data,
                                                           num_draws=budget.evidence_draws)
        else:
            draws = sampler.draws(keys.evidence_draws, evidence_data, num_draws=budget.evidence_draws)
    return checks_evidence.evidence_outcome(
        keys.evidence, model, evidence_data, kernel=plan.kernel, num_steps=budget.evidence_steps,
        num_runs=budget.evidence_runs, data_label=data_label, draws=draws, sampler_stats=sampler_stats,
        sampler=plan.label, num_draws=budget.evidence_bracket_draws, exact=exact, progress=progress,
        exchangeable=plan.exchangeable)


def _real_data_check(key, model, data, hyperparameters, *, budget: Budget, say, progress) -> CheckOutcome:
    if not hyperparameters:
        return CheckOutcome(name=checks_bdmc.REAL_NAME, title=REAL_TITLE, verdict="not run", statistic="-",
                            level=None, summary="not run: name the hyperparameters to fit on the real data "
                                                "(hyperparameters=..., --hyperparameters)")
    if not supports(model, ConditionalPrior):
        return CheckOutcome(name=checks_bdmc.REAL_NAME, title=REAL_TITLE, verdict="not run", statistic="-",
                            level=None, summary="not run: the model cannot draw its other latents given fixed "
                                                "hyperparameters (sample_prior_given; the PPL adapters provide it)")
    say("BREAD's real-data protocol (NUTS fit, forward AIS on real and simulated data)")
    return checks_bdmc.real_data_outcome(key, model, data, hyperparameters=hyperparameters,
                                         steps=budget.real_steps, num_runs=budget.real_runs,
                                         mcmc_steps=budget.real_mcmc_steps, num_warmup=budget.real_warmup,
                                         on_stage=say, progress=progress)


def _seed_int(key) -> int | list[int]:
    """The integer seed of ``jax.random.key(seed)`` (its key data is ``(0, seed)``), else the key data."""
    words = [int(w) for w in seed_of(key)]
    return words[-1] if len(words) == 2 and words[0] == 0 else words
