"""The host side of the WebPPL adapter (:mod:`bdmc.ppl.webppl`): installing WebPPL and its node process.

- :func:`install` runs ``npm install webppl@0.9.15`` into bdmc's cache directory, once, under a file lock;
- ``WebPPLProcess`` is one persistent ``node`` process per program, running the driver shipped in the package
  (``bdmc/ppl/webppl_driver/driver.js``): it compiles the program once and answers JSON-line requests, one
  batch of latents per request.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.resources
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..config import cache_dir
from ..errors import BDMCError

WEBPPL_VERSION = "0.9.15"
INSTALL_COMMAND = 'python -c "import bdmc.ppl.webppl as w; w.install()"'
# Observed values the driver keeps between requests (numbers, over all data sets; least recently used go first).
# SBC and Geweke score one data set per chain: a batch's data sets travel once, then each step names them.
MAX_KEPT_VALUES = 1 << 20


class WebPPLNotFoundError(BDMCError):
    """node, npm or the WebPPL package is missing (the message names the command that fixes it)."""


class WebPPLProgramError(BDMCError):
    """The WebPPL program failed to compile or to run (WebPPL's message is kept)."""


class WebPPLStructureError(WebPPLProgramError):
    """The program visited different sample sites (or observe/factor statements) than on its first run."""


def webppl_dir() -> Path:
    """Where :func:`install` puts WebPPL: ``bdmc.config.cache_dir() / "webppl" / <version>``."""
    return cache_dir() / "webppl" / WEBPPL_VERSION


def _package_dir(root: Path) -> Path:
    return root / "node_modules" / "webppl"


def find_node() -> str:
    """The ``node`` executable on the PATH, or a :class:`WebPPLNotFoundError` naming how to get it."""
    node = shutil.which("node")
    if node is None:
        raise WebPPLNotFoundError(
            "the WebPPL adapter needs Node.js, but `node` is not on the PATH: install it (for example "
            "`apt-get install nodejs npm`, or from https://nodejs.org), then run " + INSTALL_COMMAND)
    return node


def install(*, quiet: bool = False) -> Path:
    """Install WebPPL (``npm install webppl@0.9.15``) into bdmc's cache directory, once.

    Parameters
    ----------
    quiet : bool
        Do not print progress to stderr.

    Returns
    -------
    pathlib.Path
        The installed package's directory (``.../node_modules/webppl``). A later call, from any process, finds
        it there and returns at once; concurrent calls wait on a file lock, and the install is renamed into
        place only when complete.

    Raises
    ------
    WebPPLNotFoundError
        When ``node`` or ``npm`` is not on the PATH, or ``npm install`` fails (its output is kept).
    """
    root = webppl_dir()
    if (_package_dir(root) / "package.json").exists():
        return _package_dir(root)
    find_node()
    npm = shutil.which("npm")
    if npm is None:
        raise WebPPLNotFoundError(
            f"installing WebPPL needs npm, which is not on the PATH: install it (for example `apt-get install npm`), "
            f"then run {INSTALL_COMMAND} (it runs `npm install webppl@{WEBPPL_VERSION}` into {root})")
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{WEBPPL_VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (_package_dir(root) / "package.json").exists():  # another process finished it meanwhile
            return _package_dir(root)
        if not quiet:
            print(f"bdmc: installing WebPPL {WEBPPL_VERSION} into {root} (npm install, once)", file=sys.stderr)
        staging = Path(tempfile.mkdtemp(prefix=f".{WEBPPL_VERSION}-", dir=root.parent))
        try:
            done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(staging),
                                   f"webppl@{WEBPPL_VERSION}"], capture_output=True, text=True, timeout=900)
            if done.returncode != 0 or not (_package_dir(staging) / "package.json").exists():
                raise WebPPLNotFoundError(f"`npm install webppl@{WEBPPL_VERSION}` failed (exit code "
                                          f"{done.returncode}):\n{(done.stderr or done.stdout).strip()[-2000:]}")
            if root.exists():
                shutil.rmtree(root)  # an incomplete earlier install
            os.replace(staging, root)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    if not quiet:
        print("bdmc: WebPPL installed", file=sys.stderr)
    return _package_dir(root)


def locate(*, auto_install: bool) -> Path:
    """The WebPPL package directory, installing it first when ``auto_install`` (else a clear error)."""
    find_node()
    package = _package_dir(webppl_dir())
    if (package / "package.json").exists():
        return package
    if auto_install:
        return install()
    raise WebPPLNotFoundError(f"WebPPL {WEBPPL_VERSION} is not installed under {webppl_dir()}: run "
                              f"{INSTALL_COMMAND} (or pass install=True to from_webppl)")


class WebPPLProcess:
    """One ``node`` process running bdmc's driver on one compiled program; requests are serialized by a lock."""

    def __init__(self, program: str, *, fixed: dict, name: str, package: Path):
        driver = importlib.resources.files("bdmc.ppl") / "webppl_driver" / "driver.js"
        self.name = name
        self._proc = subprocess.Popen([find_node(), str(driver), str(package)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1 << 20)
        self._lock = threading.Lock()
        self._kept: OrderedDict = OrderedDict()  # id -> number of values, the driver's data sets by last use
        self._kept_values = 0
        weakref.finalize(self, _close, self._proc)  # also at interpreter exit
        info = self({"op": "init", "program": program, "data": fixed, "name": name})
        self.sites, self.num_terms = info["sites"], int(info["terms"])

    def __call__(self, request: dict) -> dict:
        with self._lock:
            return self._request(request)

    def _request(self, request: dict) -> dict:
        try:
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            code = self._proc.poll()
            stderr = self._proc.stderr.read() if code is not None else ""
            raise WebPPLProgramError(f"the node process of WebPPL {self.name} died (exit code {code}): "
                                     f"{stderr.strip()[-2000:]}")
        reply = json.loads(line)
        if not reply.get("ok"):
            error = WebPPLStructureError if reply.get("kind") == "structure" else WebPPLProgramError
            raise error(f"WebPPL {self.name}: {reply.get('error')}")
        return reply

    def on_datasets(self, datasets: list, rows, request: dict) -> dict:
        """``request`` run with row ``i`` of its latents scoring ``datasets[rows[i]]`` (``rows=None``: one data set).

        Data sets the driver does not keep yet travel first, all in one request, under the same lock as
        ``request``; the least recently used others are dropped beyond ``MAX_KEPT_VALUES`` numbers (never one
        this request scores), so a batch of chains each with its own data costs two requests at most.
        """
        ids = [_digest(values) for values in datasets]
        with self._lock:
            add = {}
            for key, values in zip(ids, datasets, strict=True):
                if key in self._kept:
                    self._kept.move_to_end(key)
                elif key not in add:
                    add[key] = {n: np.asarray(v).tolist() for n, v in values.items()}
                    self._kept[key] = sum(int(np.size(v)) for v in values.values())
                    self._kept_values += self._kept[key]
            drop, excess, needed = [], self._kept_values - MAX_KEPT_VALUES, set(ids)
            for key, size in self._kept.items():  # least recently used first
                if excess <= 0:
                    break
                if key not in needed:
                    drop.append(key)
                    excess -= size
            for key in drop:
                self._kept_values -= self._kept.pop(key)
            if add or drop:
                self._request({"op": "data", "add": add, "drop": drop})
            data = ids[0] if rows is None else [ids[r] for r in np.asarray(rows).tolist()]
            return self._request({**request, "data": data})


def _digest(values: dict) -> str:
    digest = hashlib.sha1()
    for name, value in values.items():
        value = np.ascontiguousarray(value)
        digest.update(f"{name}:{value.dtype}:{value.shape}".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()[:16]


def _close(proc) -> None:
    try:
        proc.stdin.close()  # the driver exits at end of input
        proc.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()


def decode(values) -> np.ndarray:
    """Numbers from the driver as float64 (non-finite ones travel as strings)."""
    return np.asarray(values, dtype=np.float64)
