"""Transition operators ``kernel(key, latent, data, lam) -> (latent, KernelInfo)`` leaving f(.; lam) invariant."""

from ..contracts.kernel import KernelInfo
from .combinators import Cycle, Gibbs, MovesTable, Repeat, RepeatUpTo, cycle, repeat
from .conditional import Conditional, GibbsSweep
from .gradient import MALA, NUTS, RandomWalkMH
from .hmc import HMC, TermsState
from .independent import IndependentMH
from .mass import GaussianTable
from .single_site import SingleSiteMH
from .step_sizes import StepSizeTable

__all__ = ["KernelInfo", "Conditional", "GibbsSweep", "Gibbs", "Cycle", "Repeat", "RepeatUpTo", "MovesTable",
           "cycle", "repeat", "RandomWalkMH",
           "SingleSiteMH", "MALA", "HMC", "NUTS", "IndependentMH", "GaussianTable", "TermsState", "StepSizeTable"]
