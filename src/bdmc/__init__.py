"""bdmc: sandwich log marginal likelihoods with bidirectional Monte Carlo.

Float64 is switched on at import (set ``BDMC_X64=0`` before importing to keep JAX's float32 default).
"""

import os as _os

import jax as _jax

if _os.environ.get("BDMC_X64", "1") != "0":
    _jax.config.update("jax_enable_x64", True)

from . import checks, estimators, exact, kernels, models, ppl, schedules  # noqa: E402
from ._errors import BDMCError, DataError, MissingExtraError, NonFiniteLogWeightError, ScheduleError  # noqa: E402
from ._errors import NonFiniteLogDensityError  # noqa: E402
from .core.ais import forward_ais, reverse_ais  # noqa: E402
from .checks.alarm import BugAlarm, bug_alarm  # noqa: E402
from .checks.bread import BreadResult, bread  # noqa: E402
from .core.engine import AnnealResult, StepInfo, anneal  # noqa: E402
from .checks.sandwich import SandwichResult, sandwich  # noqa: E402
from .core.smc import shme, smc  # noqa: E402
from .core.estimate import Estimate, gap, log_harmonic_mean, log_mean_exp  # noqa: E402
from .models import simulate  # noqa: E402
from .bracketing import bracket  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AnnealResult", "BDMCError", "BreadResult", "BugAlarm", "bread", "bug_alarm", "checks", "DataError", "Estimate",
    "bracket", "estimators",
    "MissingExtraError", "NonFiniteLogDensityError", "NonFiniteLogWeightError", "ScheduleError", "StepInfo", "anneal", "exact", "forward_ais",
    "gap", "kernels", "log_harmonic_mean", "log_mean_exp", "models", "ppl", "reverse_ais", "SandwichResult",
    "sandwich", "schedules", "shme", "simulate", "smc",
]
