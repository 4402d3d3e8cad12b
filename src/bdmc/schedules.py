"""Public schedules: ``linear``, ``sigmoidal``, ``geometric``, ``data_path`` and ``validate``."""

from .core.schedules import data_path, geometric, linear, sigmoidal, validate

__all__ = ["data_path", "geometric", "linear", "sigmoidal", "validate"]
