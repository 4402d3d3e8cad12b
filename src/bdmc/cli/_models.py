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
import inspect
import math
import re
import typing
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .. import models as builtin_models
from ..errors import OptionError, UserProgramError, describe_arguments, program_line
from ..ppl.registry import PPLS, ppl
from ._common import CLIError, register_user_file

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
        elif (isinstance(value, float) and any(w in key for w in _SCALE_WORDS)
              and not (value > 0 and math.isfinite(value))):
            raise CLIError(f"--option {key}={value}: {cls.__name__}.{key} must be a positive number")


def model_settings(model, options: dict) -> dict:
    """A built-in model's full options (defaults included), for the settings file (its store saves them as JSON
    values)."""
    return dataclasses.asdict(model) if dataclasses.is_dataclass(model) else dict(options)


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
        numbers = options[key] if isinstance(options[key], (tuple, list)) else (options[key],)
        if any(isinstance(v, float) and not math.isfinite(v) for v in numbers):  # float() takes nan and inf
            raise CLIError(f"--option {key}={raw.strip()}: must be a finite number")
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
        raise OptionError("expected true or false")
    if target is int:
        try:
            return int(raw.replace("_", ""))
        except ValueError:
            raise OptionError("expected an integer") from None
    if target is float:
        try:
            return float(raw)
        except ValueError:
            raise OptionError("expected a number") from None
    if target in (tuple, list):
        parts = [p.strip() for p in raw.strip("()[]").split(",") if p.strip()]
        ref = list(default_value) if isinstance(default_value, (tuple, list)) else []
        values = [_convert(p, None, ref[i] if i < len(ref) else (ref[-1] if ref else 0.0)) for i, p in
                  enumerate(parts)]
        if ref and len(values) != len(ref):
            raise OptionError(f"expected {len(ref)} comma-separated values like {','.join(map(str, ref))}")
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


def ppl_given(**programs: str | None) -> tuple[str, str] | None:
    """``(flag, spec)`` of the one program given, None when none is; several are refused.

    Parameters
    ----------
    **programs : str or None
        The value of each language's flag (``numpyro=``, ``pymc=``, ...: the keys of
        :data:`bdmc.ppl.registry.PPLS`).
    """
    for flag in programs:
        ppl(flag)  # an unknown language is refused
    given = {flag: programs[flag] for flag in PPLS if programs.get(flag)}
    if len(given) > 1:
        raise CLIError(f"give one of {', '.join('--' + f for f in PPLS)}, not {' and '.join('--' + g for g in given)}")
    return next(iter(given.items())) if given else None


def program_flags() -> str:
    """The program flags as a command's message lists them: ``--numpyro PATH.py:FN, ... or --webppl PATH.wppl``."""
    flags = [f"--{p.flag} {p.metavar}" for p in PPLS.values()]
    return ", ".join(flags[:-1]) + " or " + flags[-1]


def ppl_label(flag: str, spec: str) -> str:
    """The model's name in settings and default output paths: the file's stem and, for a program that names an
    object in its file, that object (two models of one file are told apart), e.g. ``numpyro:coal:trend``."""
    path, _, attr = spec.partition(":")
    return f"{flag}:{Path(path).stem}" + (f":{attr}" if attr else "")


def load_ppl_model(flag: str, spec: str, *, data: Path | None, observed: str | None, simulator: str | None):
    """``(model, settings)`` for a program in one of the languages of :data:`bdmc.ppl.registry.PPLS`."""
    language = ppl(flag)
    if not observed:
        raise CLIError("--observed: name the program's observed data variable(s), comma-separated, e.g. "
                       "--observed y")
    arrays = load_npz(data)
    names = [n.strip() for n in observed.split(",") if n.strip()]
    if not language.names_an_object:
        if not Path(spec).is_file():
            raise CLIError(f"--{flag}: no {language.name} program at {spec}; give the path of a "
                           f"{language.suffixes[0]} file")
        if language.simulator == "required" and not simulator:
            raise CLIError(f"--simulator: a {language.name} program needs a Python simulator, --simulator path.py:fn: "
                           "bdmc cannot draw from its prior, and every run starts from prior draws (forward AIS, "
                           "--real-data too), besides the simulated data of a sandwich")
    build = language.loader()
    if flag == "numpyro":
        fn = _load_attr(spec, "--numpyro")
        kwargs = {k: v for k, v in arrays.items() if k not in names}
        try:
            model = build(fn, observed=names, **kwargs)
        except UserProgramError as err:
            hint = _call_hint(err.error, fn, flag=flag, data=data, observed=names)
            raise err.renamed(f"--numpyro {spec}", hint=hint) from err.error
    elif flag == "pymc":
        obj = _load_attr(spec, "--pymc")
        kwargs = {k: v for k, v in arrays.items() if k not in names}
        pm_model = _build_pymc(obj, spec, kwargs, data=data, observed=names) if callable(obj) else obj
        model = build(pm_model, observed=names)
    elif flag == "webppl":
        missing = [n for n in names if n not in arrays]
        if missing:
            raise CLIError(f"--data: a WebPPL program reads its observations' shapes from the data; "
                           f"{data or 'no file'} lacks {missing}")
        model = build(Path(spec).read_text(), arrays, observed=names,
                      simulate=_load_attr(simulator, "--simulator") if simulator else None)
    else:
        model = build(Path(spec).read_text(), data=arrays, observed=names,
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


def _build_pymc(builder, spec: str, kwargs: dict, *, data: Path | None, observed: list[str]):
    """The PyMC model a ``--pymc`` function builds from the ``--data`` arrays; its failure names the program."""
    try:
        return builder(**kwargs)
    except Exception as err:  # noqa: BLE001  the program's own failure, chained
        raise UserProgramError(f"--pymc {spec}", err, called_with=describe_arguments((), kwargs),
                               where=program_line(err, spec.rpartition(":")[0]),
                               hint=_call_hint(err, builder, flag="pymc", data=data, observed=observed)) from err


def _call_hint(err: BaseException, fn, *, flag: str, data: Path | None, observed: list[str]) -> str:
    """What to do when calling the program with the ``--data`` arrays failed on its arguments ("" otherwise)."""
    text = str(err) if isinstance(err, TypeError) else ""
    unexpected = re.search(r"unexpected keyword argument '(\w+)'", text)
    if unexpected:
        return (f"--data {data} holds the array {unexpected[1]!r}, which is not an argument of the program; rename "
                f"it to one of {_parameters(fn)}")
    missing = re.search(r"missing \d+ required .*?arguments?: (.*)", text)
    if not missing:
        return ""
    names = re.findall(r"'(\w+)'", missing[1])
    simulated = [n for n in names if n in observed]
    if simulated:
        placeholder = ("" if flag == "numpyro" else
                       ", and give the observed variable a placeholder of its shape when it is None "
                       "(observed=numpy.zeros(n))")
        return (f"the --observed array(s) {simulated} are not passed to the program (bdmc sets them itself: the "
                f"--data values under --real-data, simulated ones otherwise): give "
                f"{simulated[0]} a default, e.g. {simulated[0]}=None{placeholder}")
    where = f"--data {data}" if data is not None else "a --data FILE.npz (none was given)"
    return f"give {', '.join(names)} as {'an array' if len(names) == 1 else 'arrays'} in {where}"


def _parameters(fn) -> list[str]:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # a builtin or a callable object without a signature
        return []


def load_npz(path: Path | None, *, option: str = "--data") -> dict:
    """The arrays of a ``--data`` (or ``option``) file (``.npz``), by name, each checked: numbers, every one finite.

    Parameters
    ----------
    path : Path or None
        The file; None gives no arrays.
    option : str
        The option that named the file, in errors.

    Returns
    -------
    dict
        Name -> numpy array.

    Raises
    ------
    CLIError
        When the file is missing, is not an ``.npz`` (it says what the file is instead: one ``.npy`` array, text),
        holds Python objects or strings, or an array has a NaN or an infinity (named with its first index).
    """
    if path is None:
        return {}
    path = Path(path)
    if not path.is_file():
        raise CLIError(f"{option}: no such file {path}; give a .npz file"
                       + (" of the program's arguments" if option == "--data" else ""))
    _refuse_other_formats(path, option=option)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: _read_array(npz, name, path, option) for name in npz.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise CLIError(f"{option} {path}: a damaged .npz file ({type(err).__name__}: {err}); write it again with "
                       "numpy.savez") from None
    for name, array in arrays.items():
        check_array(array, name=name, source=f"{option} {path}")
    return arrays


_NOT_NUMBERS = {"O": "Python objects", "U": "strings", "S": "bytes", "V": "records", "M": "dates", "m": "time spans",
                "c": "complex numbers"}


def check_array(array: np.ndarray, *, name: str, source: str) -> None:
    """Refuse an array that is not numbers, or has a NaN or an infinity (naming the first one's index).

    Parameters
    ----------
    array : numpy.ndarray
    name : str
        The array's name in its file.
    source : str
        Where it came from, e.g. ``--data file.npz``.

    Raises
    ------
    CLIError
    """
    kind = array.dtype.kind
    if kind not in "biuf":
        raise CLIError(f"{source}: array {name!r} holds {_NOT_NUMBERS.get(kind, 'values')} (dtype {array.dtype}); "
                       "bdmc needs numbers (bool, integer or float): save it with a numeric dtype")
    if kind != "f":
        return
    bad = ~np.isfinite(array)
    count = int(bad.sum())
    if count:
        first = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), array.shape))
        value = array[first]
        what = "NaN" if np.isnan(value) else ("+inf" if value > 0 else "-inf")
        raise CLIError(f"{source}: array {name!r} has {what} at index {first} ({count} non-finite "
                       f"value{'s' if count > 1 else ''}); replace or drop those entries: bdmc needs finite data")


def _refuse_other_formats(path: Path, *, option: str = "--data") -> None:
    """Say what a ``--data`` file is when it is not an ``.npz`` (a zip archive, as numpy.savez writes)."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError as err:
        raise CLIError(f"{option} {path}: cannot read it ({err.strerror or err}); check its permissions") from None
    if head.startswith(b"PK"):
        return
    example = f"numpy.savez('{path.with_suffix('.npz')}', NAME=...)"
    if head.startswith(b"\x93NUMPY"):
        raise CLIError(f"{option} {path}: a single NumPy array (.npy{_npy_shape(path)}), not an .npz of named arrays; "
                       f"wrap it in one, named as the program's argument or observed site: "
                       f"numpy.savez('{path.with_suffix('.npz')}', NAME=numpy.load('{path}'))")
    if not head:
        raise CLIError(f"{option} {path}: an empty file, not an .npz; write the arrays by name with {example}")
    if _is_text(head):
        raise CLIError(f"{option} {path}: a text file, not an .npz; read it (e.g. numpy.loadtxt) and write the arrays "
                       f"by name with {example}")
    raise CLIError(f"{option} {path}: not an .npz file (not the zip archive numpy.savez writes); write the arrays by "
                   f"name with {example}")


def _npy_shape(path: Path) -> str:
    """``, shape (10, 3) float64`` from a ``.npy`` header (nothing when it cannot be read)."""
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return ""
    return f", shape {tuple(array.shape)} {array.dtype}"


def _is_text(head: bytes) -> bool:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:  # perhaps cut inside a character: judge by the bytes
        text = head[:-4].decode("utf-8", errors="replace")
    return "\x00" not in text and all(c.isprintable() or c in "\t\r\n" for c in text)


def _read_array(npz, name: str, path: Path, option: str = "--data") -> np.ndarray:
    try:
        return np.asarray(npz[name])
    except ValueError as err:
        if "allow_pickle" not in str(err) and "Object arrays" not in str(err):
            raise
    # Object arrays are pickled in an .npz: reading them would run whatever code the file holds.
    raise CLIError(f"{option} {path}: array {name!r} holds Python objects (dtype object), which bdmc does not read "
                   "(unpickling can run code); save it as numbers, e.g. numpy.asarray(x, dtype=float)")


def load_object(spec: str, flag: str):
    """The object ``NAME`` defined in the Python file of ``PATH:NAME`` (e.g. a user's prior transform)."""
    return _load_attr(spec, flag)


def _load_attr(spec: str, flag: str):
    """The object ``NAME`` defined in the Python file of ``PATH:NAME``; its failures to load name the file."""
    path, sep, name = spec.rpartition(":")
    if not sep or not name or not path:
        raise CLIError(f"{flag}: expected PATH.py:NAME, got {spec!r}")
    if not Path(path).is_file():
        raise CLIError(f"{flag}: no such file {path}")
    module_spec = importlib.util.spec_from_file_location(f"bdmc_user_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    register_user_file(path)
    try:
        module_spec.loader.exec_module(module)
    except Exception as err:  # noqa: BLE001  the program's own failure: named with its file and line
        raise CLIError(f"{flag} {path}: {_load_failure(err, module_spec.origin)}") from err
    if not hasattr(module, name):
        defined = sorted(n for n in vars(module) if not n.startswith("_"))
        raise CLIError(f"{flag}: {path} defines no {name!r}; it defines {defined}")
    return getattr(module, name)


def _load_failure(err: Exception, origin: str) -> str:
    """What went wrong loading the program file (``origin``, as its code objects name it), and what to do."""
    if isinstance(err, SyntaxError):
        text = f" ({err.text.strip()!r})" if err.text and err.text.strip() else ""
        return f"syntax error at line {err.lineno}: {err.msg}{text}; fix the program"
    line = program_line(err, origin)
    at = f" at {line}" if line else ""
    if isinstance(err, ModuleNotFoundError):
        return (f"the program imports {err.name!r}{at}, which is not installed ({err}); install it or fix the "
                "import")
    if isinstance(err, ImportError):
        return f"an import failed{at}: {err}; fix the import or install the package"
    return f"loading the program raised {type(err).__name__}{at}: {err}; fix the program"
