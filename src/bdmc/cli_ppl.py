"""Models from files for the command line: ``--numpyro path.py:fn``, ``--pymc path.py:name``, ``--stan path.stan``.

``--data file.npz`` holds the program's arguments (covariates, sizes): keyword arguments of a NumPyro function
or of a function building the PyMC model, and the Stan program's data block. ``--observed`` names the data
variable(s) bdmc simulates and scores.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import numpy as np
import typer

PPL_FLAGS = ("numpyro", "pymc", "stan")


def load_ppl_model(*, numpyro: str | None, pymc: str | None, stan: str | None, data: Path | None,
                   observed: str | None, simulator: str | None):
    """``(label, model, settings)`` for the one PPL flag given, or None when none is."""
    given = {flag: spec for flag, spec in zip(PPL_FLAGS, (numpyro, pymc, stan)) if spec}
    if not given:
        return None
    if len(given) > 1:
        raise typer.BadParameter(f"give one of --numpyro, --pymc, --stan, not {sorted(given)}")
    if not observed:
        raise typer.BadParameter("name the observed data variable(s), comma-separated", param_hint="'--observed'")
    flag, spec = next(iter(given.items()))
    arrays = _load_npz(data)
    names = [n.strip() for n in observed.split(",") if n.strip()]
    from . import ppl

    if flag == "numpyro":
        fn = _load_attr(spec, "--numpyro")
        kwargs = {k: v for k, v in arrays.items() if k not in names}
        model = ppl.from_numpyro(fn, observed=names, **kwargs)
    elif flag == "pymc":
        obj = _load_attr(spec, "--pymc")
        kwargs = {k: v for k, v in arrays.items() if k not in names}
        pm_model = obj(**kwargs) if callable(obj) else obj
        model = ppl.from_pymc(pm_model, observed=names)
    else:
        path = Path(spec)
        if not path.is_file():
            raise typer.BadParameter(f"no Stan program at {spec}", param_hint="'--stan'")
        if not simulator:
            raise typer.BadParameter("a Stan program needs a Python simulator path.py:fn", param_hint="'--simulator'")
        model = ppl.from_stan(path.read_text(), data=arrays, observed=names,
                              simulate=_load_attr(simulator, "--simulator"))
    digest = hashlib.sha256()
    for key in sorted(arrays):
        digest.update(key.encode() + np.ascontiguousarray(arrays[key]).tobytes())
    files = [spec.split(":")[0]] + ([simulator.split(":")[0]] if simulator else [])
    for f in files:
        digest.update(Path(f).read_bytes())
    settings = {flag: spec, "data": str(data) if data else None, "observed": names,
                "sha256": digest.hexdigest()[:16]}
    return f"{flag}:{Path(spec.split(':')[0]).stem}", model, settings


def _load_npz(path: Path | None) -> dict:
    if path is None:
        return {}
    if not Path(path).is_file():
        raise typer.BadParameter(f"no such file {path}", param_hint="'--data'")
    with np.load(path, allow_pickle=False) as npz:
        return {k: np.asarray(npz[k]) for k in npz.files}


def _load_attr(spec: str, flag: str):
    """The object ``NAME`` defined in the Python file of ``PATH:NAME``."""
    path, sep, name = spec.rpartition(":")
    if not sep or not name or not path:
        raise typer.BadParameter(f"expected PATH.py:NAME, got {spec!r}", param_hint=f"'{flag}'")
    if not Path(path).is_file():
        raise typer.BadParameter(f"no such file {path}", param_hint=f"'{flag}'")
    module_spec = importlib.util.spec_from_file_location(f"bdmc_user_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    if not hasattr(module, name):
        defined = sorted(n for n in vars(module) if not n.startswith("_"))
        raise typer.BadParameter(f"{path} defines no {name!r}; it defines {defined}", param_hint=f"'{flag}'")
    return getattr(module, name)
