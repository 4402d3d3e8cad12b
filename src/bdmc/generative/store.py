"""Trained networks on disk: ``.npz`` arrays and a JSON file of settings, written atomically, never pickled.

A directory holds two files: ``params.npz`` (every array, named ``decoder/0/w`` and so on) and
``trained.json`` (kind, sizes, sigma, settings, history, and the SHA-256 of ``params.npz``). Each is written
atomically (:func:`bdmc.files.write_atomic`), the JSON last, so a reader sees either the
old pair or the new one; the checksum catches a pair that does not belong together or an array file that
was damaged after writing.
"""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError
from ..files import write_atomic
from .train import Trained, training_settings

PARAMS_FILE = "params.npz"
SETTINGS_FILE = "trained.json"
NETWORKS = ("decoder_params", "encoder_params", "discriminator_params")
FORMAT = 1


class TrainedStoreError(BDMCError, ValueError):
    """A stored trained network is missing, damaged or unreadable; the message names the file."""


def save(trained: Trained, path) -> Path:
    """Write ``trained`` to the directory ``path`` (created if needed), replacing what was there.

    Returns
    -------
    pathlib.Path
        The directory.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for name in NETWORKS:
        layers = getattr(trained, name)
        for i, layer in enumerate(layers or ()):
            for part, value in layer.items():
                arrays[f"{name.removesuffix('_params')}/{i}/{part}"] = np.asarray(value)
    params_file = path / PARAMS_FILE
    write_atomic(params_file, lambda handle: np.savez(handle, **arrays))
    body = {"format": FORMAT, "kind": trained.kind, "sizes": list(trained.sizes), "sigma": trained.sigma,
            "settings": trained.settings, "history": trained.history, "params_sha256": _sha256(params_file)}
    text = json.dumps(body, indent=1, allow_nan=False)
    write_atomic(path / SETTINGS_FILE, text)
    return path


def load(path) -> Trained:
    """Read a :class:`Trained` written by :func:`save`; the arrays come back bit for bit.

    (Float64 arrays read while JAX runs in float32 come back as float32, as every JAX array does.)

    Raises
    ------
    TrainedStoreError
        When a file is missing, truncated or damaged, or the two files do not belong together.
    """
    path = Path(path)
    settings_file, params_file = path / SETTINGS_FILE, path / PARAMS_FILE
    for file in (settings_file, params_file):
        if not file.is_file():
            raise TrainedStoreError(f"no trained network in {str(path)!r}: {file.name} is missing")
    try:
        body = json.loads(settings_file.read_text())
        kind, sizes, expected = body["kind"], tuple(body["sizes"]), body["params_sha256"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as err:
        raise TrainedStoreError(f"{settings_file} is damaged or truncated ({type(err).__name__}: {err}); "
                                "delete the directory to retrain") from err
    if _sha256(params_file) != expected:
        raise TrainedStoreError(f"{params_file} does not match the checksum recorded in {settings_file.name} "
                                "(truncated, damaged or from another save); delete the directory to retrain")
    try:
        with np.load(params_file, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:
        raise TrainedStoreError(f"{params_file} cannot be read ({type(err).__name__}: {err})") from err
    networks = {name: _layers(arrays, name.removesuffix("_params")) for name in NETWORKS}
    if networks["decoder_params"] is None:
        raise TrainedStoreError(f"{params_file} holds no decoder")
    return Trained(kind, sizes, networks["decoder_params"], encoder_params=networks["encoder_params"],
                   discriminator_params=networks["discriminator_params"], sigma=body.get("sigma"),
                   settings=body.get("settings", {}), history=body.get("history", {}), loaded_from=str(path))


def load_or_train(path, train_fn: Callable, key, images, *, log: Callable[[str], None] | None = None,
                  **options) -> Trained:
    """Reload the network stored in ``path`` if it was trained with these settings; otherwise train and save.

    The settings compared are :func:`bdmc.generative.train.training_settings` of ``train_fn`` with this key,
    these images (by fingerprint) and these options, defaults filled in (``progress`` aside), and the bdmc
    version.

    Parameters
    ----------
    path : path-like
        The directory.
    train_fn : callable
        A trainer such as ``train_vae``.
    key, images, **options
        What ``train_fn`` is called with.
    log : callable, optional
        Receives one line saying whether the network was reloaded or (re)trained and why; stderr by default.

    Raises
    ------
    TrainedStoreError
        When the stored files are damaged (they are never silently overwritten).
    """
    path = Path(path)
    say = log or (lambda message: print(message, file=sys.stderr, flush=True))
    wanted = training_settings(train_fn, key, images, **options)
    if (path / SETTINGS_FILE).exists():
        stored = load(path)
        diff = [k for k in sorted(set(stored.settings) | set(wanted)) if stored.settings.get(k) != wanted.get(k)]
        if not diff:
            say(f"{train_fn.__name__}: reloaded the trained network from {path}")
            return stored
        changes = "; ".join(f"{k}: {stored.settings.get(k)!r} -> {wanted.get(k)!r}" for k in diff)
        say(f"{train_fn.__name__}: retraining, the settings stored in {path} differ ({_clip(changes)})")
    else:
        say(f"{train_fn.__name__}: training (nothing stored in {path} yet)")
    trained = train_fn(key, images, **options)
    save(trained, path)
    return trained


def _layers(arrays: dict, prefix: str):
    layers: dict[int, dict] = {}
    for name, value in arrays.items():
        network, index, part = name.split("/")
        if network == prefix:
            layers.setdefault(int(index), {})[part] = jnp.asarray(value)
    if not layers:
        return None
    if sorted(layers) != list(range(len(layers))):
        raise TrainedStoreError(f"the stored {prefix} has layers {sorted(layers)}, not 0..{len(layers) - 1}")
    return [layers[i] for i in range(len(layers))]


def _sha256(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


def _clip(text: str, width: int = 300) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
