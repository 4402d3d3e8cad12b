"""Process-wide settings bdmc changes only when asked."""

import jax


def enable_x64(enabled: bool = True) -> None:
    """Switch JAX to float64 (``enabled=True``) or back to its float32 default, for the whole process.

    Importing bdmc changes no JAX setting. The paper's numbers and the closed-form checks are float64, so the
    ``bdmc`` command calls this (``--float32`` to opt out); float32 is what a GPU run wants. Call it before
    building arrays: arrays made earlier keep their dtype.
    """
    jax.config.update("jax_enable_x64", bool(enabled))
