"""Building a Stan program for the in-process path (:mod:`bdmc.ppl.stan_native`), cached on disk.

The program is translated by httpstan's own ``stanc`` and compiled with httpstan's headers (Stan, Eigen,
Boost, Sundials, TBB), macros and flags, then linked with bdmc's C++ shim (``stan_native/shim.cpp``) into one
shared library loaded with ``ctypes``. Under :func:`bdmc.config.cache_dir` ``/ "stan"``:

- ``shim-<key>.o``: the shim's object, compiled once per (httpstan version, compiler, flags, shim source);
- ``ffi-<key>.o``: the XLA FFI handlers (``stan_native/ffi.cpp``, C++17 against jaxlib's FFI headers, no Stan
  headers: seconds), once per (jaxlib version, compiler, source);
- ``<program key>/program.o``: the program's object, once per (program text, httpstan version, compiler,
  flags);
- ``<program key>/program-<shim and ffi key>.so``: the three linked (a second or so).

Each step runs under a file lock (two processes wait for one build rather than both compiling) and writes to
a temporary name first, renamed into place when complete, so a reader never sees a half-written file.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.resources
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..caching import cached
from ..config import cache_dir
from ..errors import BDMCError
from ..files import replacing

# httpstan's own macros and flags for its model extension modules (httpstan/models.py), plus -fPIC.
MACROS = ("-DBOOST_DISABLE_ASSERTS", "-DBOOST_PHOENIX_NO_VARIADIC_EXPRESSION", "-DSTAN_THREADS", "-D_REENTRANT",
          "-D_GLIBCXX_USE_CXX11_ABI=0")
FLAGS = ("-O3", "-std=c++14", "-Wno-sign-compare", "-fPIC")
LIBRARIES = ("-lsundials_cvodes", "-lsundials_idas", "-lsundials_nvecserial", "-ltbb")


class StanBuildError(BDMCError):
    """The in-process Stan library could not be built (no compiler, no httpstan, a compile error)."""


def httpstan_dir() -> Path:
    try:
        return Path(str(importlib.resources.files("httpstan")))
    except ModuleNotFoundError as err:
        raise StanBuildError("httpstan is not installed (pip install 'pystan>=3.9', or pip install -e '.[stan]' "
                              "in bdmc's checkout)") from err


def compiler() -> str:
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        raise StanBuildError(f"no C++ compiler: {cxx!r} is not on PATH (install g++ or set $CXX)")
    return cxx


@cached(maxsize=8)
def _compiler_version(cxx: str) -> str:
    return subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]


def shim_source() -> Path:
    return Path(str(importlib.resources.files("bdmc.ppl") / "stan_native" / "shim.cpp"))


def ffi_source() -> Path:
    return Path(str(importlib.resources.files("bdmc.ppl") / "stan_native" / "ffi.cpp"))


def _jax_include() -> str:
    import jax.ffi

    return str(jax.ffi.include_dir())


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def toolchain_key() -> str:
    """What every object depends on: httpstan's version and headers' place, the compiler and the flags."""
    cxx = compiler()
    return _digest(importlib.metadata.version("httpstan"), str(httpstan_dir()), cxx, _compiler_version(cxx),
                   *MACROS, *FLAGS)


def program_key(program_code: str) -> str:
    return _digest(toolchain_key(), program_code)


def shim_key() -> str:
    return _digest(toolchain_key(), shim_source().read_text())


def ffi_key() -> str:
    return _digest(toolchain_key(), importlib.metadata.version("jaxlib"), _jax_include(), ffi_source().read_text())


def library_path(program_code: str) -> Path:
    """Where the program's library lives once built (it may not exist yet)."""
    return cache_dir() / "stan" / program_key(program_code) / f"program-{_digest(shim_key(), ffi_key())}.so"


def build_library(program_code: str, *, name: str = "bdmc_program", progress: bool = True) -> Path:
    """The path of the program's shared library, compiled (or found in the cache) and linked with the shim."""
    lib = library_path(program_code)
    if lib.exists():
        return lib
    root = cache_dir() / "stan"
    shim, ffi = root / f"shim-{shim_key()}.o", root / f"ffi-{ffi_key()}.o"
    folder = lib.parent
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{shim.name}.lock"):
        if not shim.exists():
            _step("compiling bdmc's Stan shim (once per httpstan version; about a minute)", progress,
                  lambda tmp: _compile(shim_source(), tmp), shim)
    with _locked(root / f"{ffi.name}.lock"):
        if not ffi.exists():
            _step("compiling bdmc's XLA FFI handlers for Stan (once per jaxlib version; seconds)", progress,
                  lambda tmp: [compiler(), "-c", "-fPIC", "-O3", "-std=c++17", "-w", "-D_GLIBCXX_USE_CXX11_ABI=0",
                               f"-I{_jax_include()}", "-o", str(tmp), str(ffi_source())], ffi)
    with _locked(folder / "build.lock"):
        if lib.exists():  # another process built it while we waited
            return lib
        obj = folder / "program.o"
        if not obj.exists():
            cpp, source = folder / "program.cpp", folder / "program.stan"
            source.write_text(program_code)
            _stanc(source, cpp)
            _step(f"compiling the Stan program {name!r} (once per program; a minute or two)", progress,
                  lambda tmp: _compile(cpp, tmp), obj)
        _step("linking", False, lambda tmp: _link([obj, shim, ffi], tmp), lib)
    return lib


def _stanc(source: Path, cpp: Path) -> None:
    """Translate ``source`` (the cached copy of the program, so Stan's messages name it) to C++."""
    with replacing(cpp) as tmp:
        done = subprocess.run([str(httpstan_dir() / "stanc"), "--name", "bdmc_program_model", "--o", str(tmp),
                               str(source)], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise StanBuildError(f"stanc cannot translate the Stan program:\n{done.stderr.strip()}")


def _compile(source: Path, out: Path) -> list:
    include = httpstan_dir() / "include"
    return [compiler(), "-c", *FLAGS, *MACROS, f"-I{include}", f"-I{source.parent}", "-o", str(out), str(source)]


def _link(objects, out: Path) -> list:
    lib = httpstan_dir() / "lib"
    return [compiler(), "-shared", "-o", str(out), *map(str, objects), f"-L{lib}", *LIBRARIES,
            f"-Wl,-rpath,{lib}"]


def _step(message: str, progress: bool, command, target: Path) -> None:
    """Run ``command(tmp)`` writing to a temporary file beside ``target``, then rename it into place."""
    start = time.perf_counter()
    if progress:
        print(f"bdmc: {message} ...", file=sys.stderr, flush=True)
    with replacing(target) as tmp:
        done = subprocess.run(command(tmp), capture_output=True, text=True)
        if done.returncode != 0:
            raise StanBuildError(f"{message.split(' (')[0]} failed:\n{done.stderr.strip()[-4000:]}")
    if progress:
        print(f"bdmc: {message.split(' (')[0]}: done in {time.perf_counter() - start:.1f} s", file=sys.stderr,
              flush=True)


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive advisory lock on ``path`` (a no-op where ``fcntl`` is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
