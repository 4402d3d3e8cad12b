"""Models for the commands: built-in models with typed ``--option KEY=VALUE`` and programs from PPL files.

``--numpyro path.py:fn``, ``--pymc path.py:name``, ``--stan path.stan``: ``--data file.npz`` holds the
program's arguments (covariates, sizes): keyword arguments of a NumPyro function or of a function building
the PyMC model, and the Stan program's data block. ``--observed`` names the data variable(s) bdmc simulates
and scores.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import math
import typing
from pathlib import Path
from typing import Any

import numpy as np

from .. import models as builtin_models
from ..files import to_jsonable
from ._common import CLIError

PPL_FLAGS = ("numpyro", "pymc", "stan", "webppl")
# Integer fields that count something (data cases, dimensions, components): a model of size zero or less
# is meaningless, and the built-in classes do not check it themselves.
_COUNTS_FROM_ZERO = {"degree"}  # a polynomial of degree 0 is a constant
_SCALE_WORDS = ("std", "sigma", "scale", "shape")  # float fields that must be positive


def builtin_model(name: str, options: list[str]):
    """``(model, options)`` for a registered model name and ``KEY=VALUE`` strings, every value checked."""
    if name not in builtin_models.REGISTRY:
        choices = ", ".join(sorted(builtin_models.REGISTRY))
        raise CLIError(f"--model: unknown model {name!r}; choose one of: {choices} (see `bdmc models`)")
    cls = builtin_models.REGISTRY[name]
    model_options = parse_options(cls, options)
    _check_values(cls, {**{f.name: default(f) for f in init_fields(cls)}, **model_options})
    try:
        return cls(**model_options), model_options
    except (TypeError, ValueError) as err:
        raise CLIError(f"--option: {name} rejected {model_options}: {err}") from None


def _check_values(cls, values: dict) -> None:
    for key, value in values.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            smallest = 0 if key in _COUNTS_FROM_ZERO else 1
            if value < smallest:
                raise CLIError(f"--option {key}={value}: {cls.__name__}.{key} must be an integer >= {smallest}")
        elif isinstance(value, float) and any(w in key for w in _SCALE_WORDS):
            if not (value > 0 and math.isfinite(value)):
                raise CLIError(f"--option {key}={value}: {cls.__name__}.{key} must be a positive number")


def model_settings(model, options: dict) -> dict:
    """A built-in model's full options (defaults included) as JSON values, for the settings file."""
    return to_jsonable(dataclasses.asdict(model)) if dataclasses.is_dataclass(model) else to_jsonable(options)


def init_fields(cls) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(cls) if f.init] if dataclasses.is_dataclass(cls) else []


def default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def parse_options(cls, items: list[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings into constructor options typed by the model dataclass's fields."""
    fields = {f.name: f for f in init_fields(cls)}
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001  unresolvable annotations: fall back to the defaults' types
        hints = {}
    options: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise CLIError(f"--option: {item!r} is not KEY=VALUE; use e.g. --option n=50")
        if key not in fields:
            valid = ", ".join(fields) or "(none)"
            raise CLIError(f"--option: {cls.__name__} has no option {key!r}; valid options: {valid}")
        try:
            options[key] = _convert(raw.strip(), hints.get(key, fields[key].type), default(fields[key]))
        except ValueError as err:
            raise CLIError(f"--option {key}={raw!r}: {err}") from None
    return options


def _convert(raw: str, annotation, default_value) -> Any:
    """Convert ``raw`` to the field's annotated type (or its default's type when not resolvable)."""
    target = annotation if isinstance(annotation, type) else _origin_type(annotation, default_value)
    if target is bool:
        low = raw.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError("expected true or false")
    if target is int:
        try:
            return int(raw.replace("_", ""))
        except ValueError:
            raise ValueError("expected an integer") from None
    if target is float:
        try:
            return float(raw)
        except ValueError:
            raise ValueError("expected a number") from None
    if target in (tuple, list):
        parts = [p.strip() for p in raw.strip("()[]").split(",") if p.strip()]
        ref = list(default_value) if isinstance(default_value, (tuple, list)) else []
        values = [_convert(p, None, ref[i] if i < len(ref) else (ref[-1] if ref else 0.0)) for i, p in
                  enumerate(parts)]
        if ref and len(values) != len(ref):
            raise ValueError(f"expected {len(ref)} comma-separated values like {','.join(map(str, ref))}")
        return target(values)
    if target is str:
        return raw
    return _literal(raw)


def _origin_type(annotation, default_value):
    origin = typing.get_origin(annotation)
    if origin in (tuple, list):
        return origin
    if origin is typing.Union or type(annotation).__name__ == "UnionType":  # Optional[X] / X | None
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and isinstance(args[0], type):
            return args[0]
    if isinstance(annotation, str):
        return {"int": int, "float": float, "bool": bool, "str": str, "tuple": tuple, "list": list}.get(
            annotation, type(default_value) if default_value is not None else None)
    return type(default_value) if default_value is not None else None


def _literal(raw: str) -> Any:
    """Best-effort value of an untyped option: int, then float, then the string itself."""
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


# --------------------------------------------------------------------------------------------- PPL programs


def ppl_given(*, numpyro: str | None, pymc: str | None, stan: str | None,
              webppl: str | None = None) -> tuple[str, str] | None:
    """``(flag, spec)`` of the one PPL flag given, None when none is; several are refused."""
    given = {flag: spec for flag, spec in zip(PPL_FLAGS, (numpyro, pymc, stan, webppl)) if spec}
    if len(given) > 1:
        raise CLIError(f"give one of --numpyro, --pymc, --stan, --webppl, not {' and '.join('--' + g for g in given)}")
    return next(iter(given.items())) if given else None


def ppl_label(flag: str, spec: str) -> str:
    """The model's name in settings and default output paths, e.g. ``numpyro:regression``."""
    return f"{flag}:{Path(spec.split(':')[0]).stem}"


def load_ppl_model(flag: str, spec: str, *, data: Path | None, observed: str | None, simulator: str | None):
    """``(model, settings)`` for a program in NumPyro, PyMC, Stan or WebPPL."""
    if not observed:
        raise CLIError("--observed: name the program's observed data variable(s), comma-separated, e.g. "
                       "--observed y")
    arrays = load_npz(data)
    names = [n.strip() for n in observed.split(",") if n.strip()]
    from .. import ppl

    if flag == "numpyro":
        fn = _load_attr(spec, "--numpyro")
        kwargs = {k: v for k, v in arrays.items() if k not in names}
        model = ppl.from_numpyro(fn, observed=names, **kwargs)
    elif flag == "pymc":
        obj = _load_attr(spec, "--pymc")
        kwargs = {k: v for k, v in arrays.items() if k not in names}
        pm_model = obj(**kwargs) if callable(obj) else obj
        model = ppl.from_pymc(pm_model, observed=names)
    elif flag == "webppl":
        path = Path(spec)
        if not path.is_file():
            raise CLIError(f"--webppl: no WebPPL program at {spec}; give the path of a .wppl file")
        missing = [n for n in names if n not in arrays]
        if missing:
            raise CLIError(f"--data: a WebPPL program reads its observations' shapes from the data; "
                           f"{data or 'no file'} lacks {missing}")
        model = ppl.from_webppl(path.read_text(), arrays, observed=names,
                                simulate=_load_attr(simulator, "--simulator") if simulator else None)
    else:
        path = Path(spec)
        if not path.is_file():
            raise CLIError(f"--stan: no Stan program at {spec}; give the path of a .stan file")
        if not simulator:
            raise CLIError("--simulator: a Stan program needs a Python simulator, --simulator path.py:fn")
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
    return model, settings


def load_npz(path: Path | None) -> dict:
    """The arrays of a ``--data`` file (``.npz``), by name; none without a file.

    Parameters
    ----------
    path : Path or None

    Returns
    -------
    dict
        Name -> numpy array.

    Raises
    ------
    CLIError
        When the file is missing or is not a readable ``.npz``.
    """
    if path is None:
        return {}
    if not Path(path).is_file():
        raise CLIError(f"--data: no such file {path}; give a .npz file of the program's arguments")
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: np.asarray(npz[k]) for k in npz.files}
    except (OSError, ValueError) as err:
        raise CLIError(f"--data: cannot read {path} as .npz ({err}); write it with numpy.savez") from None




def _load_attr(spec: str, flag: str):
    """The object ``NAME`` defined in the Python file of ``PATH:NAME``."""
    path, sep, name = spec.rpartition(":")
    if not sep or not name or not path:
        raise CLIError(f"{flag}: expected PATH.py:NAME, got {spec!r}")
    if not Path(path).is_file():
        raise CLIError(f"{flag}: no such file {path}")
    module_spec = importlib.util.spec_from_file_location(f"bdmc_user_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    if not hasattr(module, name):
        defined = sorted(n for n in vars(module) if not n.startswith("_"))
        raise CLIError(f"{flag}: {path} defines no {name!r}; it defines {defined}")
    return getattr(module, name)
