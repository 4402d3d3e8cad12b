"""``bdmc audit``: the project's checks run together on one model and sampler, reported as one HTML page."""

from .result import AuditResult, CheckOutcome, Figure

__all__ = ["AuditResult", "CheckOutcome", "Figure"]
