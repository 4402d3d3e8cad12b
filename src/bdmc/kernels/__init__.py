"""Transition operators ``kernel(key, latent, data, lam) -> (latent, KernelInfo)`` leaving f(.; lam) invariant."""

from ._base import KernelInfo
from .combinators import Cycle, Gibbs, Repeat, cycle, repeat
from .gradient import HMC, MALA, RandomWalkMH

__all__ = ["KernelInfo", "Gibbs", "Cycle", "Repeat", "cycle", "repeat", "RandomWalkMH", "MALA", "HMC"]
