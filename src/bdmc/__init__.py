"""bdmc: sandwich log marginal likelihoods with bidirectional Monte Carlo.

Importing bdmc changes one global JAX setting, and only one the user has not set: JAX's persistent compilation
cache, pointed at ``~/.cache/bdmc/jax`` (``$BDMC_CACHE_DIR/jax``) so that a second process on the same model and
sizes loads its programs instead of compiling them (:func:`bdmc.config.default_compilation_cache`;
``BDMC_COMPILE_CACHE=0`` opts out, a ``JAX_COMPILATION_CACHE_DIR`` of the user's is kept). The estimators follow
JAX's active dtype; call :func:`enable_x64` (as the ``bdmc`` command does) for the float64 the paper's numbers
were computed in.
"""

from . import contracts, estimators, kernels, models
from .caching import cache_info, clear_caches
from .config import default_compilation_cache as _default_compilation_cache
from .config import enable_compilation_cache, enable_x64
from .contracts.capabilities import capabilities
from .contracts.estimate import ESTIMATORS, Estimate, gap, log_harmonic_mean, log_mean_exp
from .contracts.model import Simulated, simulate
from .contracts.pairs import PAIRS
from .core import schedules
from .core.ais import forward_ais, reverse_ais
from .core.engine import anneal
from .core.records import AnnealResult, StepInfo
from .core.sharding import shard_runs
from .core.smc import shme, smc
from .core.tempered import reverse_tempered_smc, tempered_smc
from .errors import (
    BDMCError,
    DataError,
    DivergenceWarning,
    MissingCapabilityError,
    MissingExtraError,
    NonFiniteLogDensityError,
    NonFiniteLogWeightError,
    RunHealthWarning,
    ScheduleError,
    UntrustedStderrWarning,
)
from .version import __version__

_default_compilation_cache()

__all__ = ["audit", "calibrate_estimator", "Calibration",
    "AnnealResult", "BayesFactor",
    "BDMCError", "BreadResult", "BugAlarm", "DataError", "DivergenceWarning", "ESTIMATORS", "PAIRS",
    "Estimate", "EstimateCheck", "EvidenceResult",
    "MissingCapabilityError", "MissingExtraError", "NonFiniteLogDensityError", "NonFiniteLogWeightError",
    "ReferencePath", "RunHealthWarning", "SandwichResult", "ScheduleError", "UntrustedStderrWarning", "Simulated",
    "StepInfo",
    "__version__", "anneal", "bracket", "bread",
    "bug_alarm", "cache_info", "capabilities",
    "check_estimate", "checks", "clear_caches", "compare", "contracts", "enable_compilation_cache",
    "enable_x64", "estimators", "evidence",
    "exact", "forward_ais", "gap", "kernels", "log_harmonic_mean", "log_mean_exp", "models", "ppl",
    "reference_path", "reverse_ais", "reverse_tempered_smc", "sandwich", "schedules", "shard_runs", "shme",
    "simulate", "smc",
    "tempered_smc",
]


# Subpackages and names reached as attributes (``bdmc.plotting.plot_bread(res)``, ``bdmc.sandwich(...)``, ``from bdmc
# import evidence``) but imported on first access (PEP 562): they load SciPy's statistics, pandas, matplotlib, Dask,
# the data sets' sources or the command line, which ``import bdmc`` should not (a first call in a fresh process
# pays for every import; the estimators need JAX alone). The estimators, kernels, models and contracts are
# imported with bdmc itself (every estimator registers itself in ``ESTIMATORS`` on import).
_LAZY_SUBPACKAGES = ("auditing", "bracketing", "calibration", "checks", "cli", "datasets", "exact", "experiments",
                     "files", "generative", "interop", "intervals", "plotting", "ppl", "realdata")
_LAZY_NAMES = {
    "bracket": "bracketing", "Calibration": "calibration",
    "BugAlarm": "checks.alarm", "bug_alarm": "checks.alarm", "BreadResult": "checks.bread", "bread": "checks.bread",
    "SandwichResult": "checks.sandwich", "sandwich": "checks.sandwich",
    "ReferencePath": "core.reference", "reference_path": "core.reference",
    "BayesFactor": "intervals.bayes_factor", "compare": "intervals.bayes_factor",
    "EstimateCheck": "intervals.estimate_check", "check_estimate": "intervals.estimate_check",
    "EvidenceResult": "intervals.result", "evidence": "intervals.run",
}


def __getattr__(name: str):
    import importlib

    if name in _LAZY_SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")  # also binds it here, so this runs once per name
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
        globals()[name] = value  # later lookups are plain attribute reads
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_SUBPACKAGES) | set(_LAZY_NAMES))


def audit(key, model, **options):
    """Run the project's checks on a model and its sampler, as one report (see :func:`bdmc.auditing.audit`).

    Imported on first use: the audit draws figures, and ``import bdmc`` should not load matplotlib.
    """
    from .auditing import audit as run

    return run(key, model, **options)


def calibrate_estimator(key, model, estimator, **options):
    """Calibrate another tool's evidence against bdmc's ground truth (see :func:`bdmc.calibration.calibrate_estimator`).

    Imported on first use, with the rest of :mod:`bdmc.calibration`.
    """
    from .calibration import calibrate_estimator as run

    return run(key, model, estimator, **options)
