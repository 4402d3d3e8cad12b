"""``peers.md``, the report of the stored run, rebuilt from its rows by ``benchmarks/peers.py``'s own code
(:func:`peers.page`): the value ``peers_md``."""

from __future__ import annotations

import importlib
from pathlib import Path

import jax

import bdmc


def values(folder: Path) -> dict:
    """``peers_md``: the report of the run stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/peers`` or a copy of it).

    Returns
    -------
    dict
    """
    was = bool(jax.config.jax_enable_x64)
    try:
        peers = importlib.import_module("peers")  # switches float64 on: its closed forms need it
    finally:
        bdmc.enable_x64(was)
    return {"peers_md": peers.page(folder)}
