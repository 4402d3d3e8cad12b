"""Tools users point at their own models and samplers: conditional consistency and the Geweke test."""

from .consistency import ConsistencyResult, conditional_consistency
from .geweke import GewekeResult, geweke

__all__ = ["ConsistencyResult", "conditional_consistency", "GewekeResult", "geweke"]
