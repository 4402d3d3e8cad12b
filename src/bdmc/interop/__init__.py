"""Results out to other tools: AIS/SMC estimates and sandwich tables as ArviZ ``InferenceData``."""

from .arviz import to_inference_data

__all__ = ["to_inference_data"]
