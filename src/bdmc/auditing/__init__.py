"""``bdmc audit``: the project's checks run together on one model and sampler, reported as one HTML page."""

from .report import render_html, write_report
from .result import AuditResult, CheckOutcome, Figure
from .run import SAMPLERS, Budget, audit, resolve_sampler

__all__ = ["AuditResult", "Budget", "CheckOutcome", "Figure", "SAMPLERS", "audit", "render_html", "resolve_sampler",
           "write_report"]
