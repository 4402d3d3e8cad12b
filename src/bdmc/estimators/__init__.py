"""Log marginal likelihood estimators, one function each: ``estimator(key, model, data, *, exact_latent=None,
num_runs=..., <knob>=..., ...) -> Estimate``, each registered in :data:`bdmc.ESTIMATORS` beside its definition.

AIS, reverse AIS, SMC, SHME and tempered SMC live in :mod:`bdmc.core` (they are the annealing engine) and are
re-exported here so every estimator is in one place. Every module of this package is imported here, so an
estimator in a new module registers itself without further edits (docs/contributing.md).
"""

import importlib as _importlib
import pkgutil as _pkgutil

from ..core.ais import forward_ais as ais
from ..core.ais import reverse_ais
from ..core.smc import shme, smc
from ..core.tempered import reverse_tempered_smc, tempered_smc
from .bic import bic
from .bridge import bridge_sampling
from .cms import chib_murray_salakhutdinov, cms
from .importance import harmonic_mean, likelihood_weighting
from .nested import ConstrainedEllipticalSlice, ConstrainedGibbs, ConstrainedRandomWalk, nested_sampling
from .vb import variational_bayes

__all__ = ["ConstrainedEllipticalSlice", "ConstrainedGibbs", "ConstrainedRandomWalk",
           "ais", "bic", "bridge_sampling", "chib_murray_salakhutdinov", "cms",
           "harmonic_mean", "likelihood_weighting", "nested_sampling", "reverse_ais",
           "reverse_tempered_smc", "shme", "smc", "tempered_smc", "variational_bayes"]

for _module in _pkgutil.iter_modules(__path__):
    _importlib.import_module(f"{__name__}.{_module.name}")
