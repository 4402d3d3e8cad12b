"""``bdmc audit``: the project's checks run together on one model and sampler, reported as one HTML page."""

from .result import AuditResult, CheckOutcome, Figure
from .run import SAMPLERS, Budget, audit, resolve_sampler

__all__ = ["AuditResult", "Budget", "CheckOutcome", "Figure", "SAMPLERS", "audit", "resolve_sampler"]
