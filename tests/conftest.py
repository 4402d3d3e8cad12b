import os
import re
import sys
import threading
import traceback


def _suite_xla_flags() -> None:
    """Compilation is most of the default suite's time, and XLA's backend most of compilation: the default suite
    compiles without backend optimizations and with XLA CPU's loop emitters (``FAST_XLA_FLAGS``). Only the
    generated code's speed and rounding change, and no test pins bits (DESIGN, testing doctrine). The slow
    suite (``-m slow``) keeps XLA's defaults, as `bdmc` itself does: it is the heavier validation, run as users
    run (under optimization level 0 one slow audit test, WebPPL under bdmc's NUTS, met NaN bracketing terms
    that it does not meet with XLA's defaults; recorded in issue 30's closing note). The choice is made once,
    in the controlling process, before JAX starts its backend; test workers inherit it; ``BDMC_TEST_XLA_OPT``
    (``fast`` or ``default``) overrides it; flags the caller gave are kept."""
    choice = os.environ.get("BDMC_TEST_XLA_OPT")
    if choice is None:
        args = sys.argv[1:]
        expr = " ".join(args[i + 1] for i, a in enumerate(args[:-1]) if a == "-m")
        expr += " ".join(a[2:] for a in args if a.startswith("-m") and len(a) > 2)
        choice = "default" if re.search(r"(?<!not )\bslow\b", expr) else "fast"
        os.environ["BDMC_TEST_XLA_OPT"] = choice
    if choice == "fast" and "BDMC_TEST_XLA_ADDED" not in os.environ:
        given = os.environ.get("XLA_FLAGS", "")
        fast = [flag for flag in FAST_XLA_FLAGS if flag.split("=")[0] not in given]
        os.environ["XLA_FLAGS"] = " ".join(filter(None, [given, *fast]))
        os.environ["BDMC_TEST_XLA_ADDED"] = " ".join(fast)  # for the workers: which flags are the suite's


# No backend optimization, and XLA CPU's older loop emitters instead of its fusion emitters: backend compilation
# is most of the suite's time, and the fusion emitters took 43 s where the loop emitters take 24 s on the same
# tests (tests/models/test_conformance.py, conditionals and core methods, empty compilation cache).
# Code generation in one piece: the suite's two workers keep both cores busy, and splitting a program's code
# generation across threads cost them 4% (six of its heavier test files, in two processes side by side,
# empty caches: 184 s and 167 s in one piece, 192 s and 175 s split as by default).
FAST_XLA_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false",
                  "--xla_cpu_parallel_codegen_split_count=1")


_suite_xla_flags()


def _suite_backend_level() -> str | None:
    """The optimization-level flag the suite added to ``XLA_FLAGS`` (none if the caller set one)."""
    added = os.environ.get("BDMC_TEST_XLA_ADDED", "").split()
    return next((flag for flag in added if flag.startswith("--xla_backend_optimization_level")), None)


# No test loads a pilot another run of the suite stored (bdmc.core.pilot_store): a test's first call always runs
# its pilot. tests/core/test_pilot_store.py turns the store on, in a folder of its own.
os.environ["BDMC_PILOT_CACHE"] = "0"

import jax  # noqa: E402
import pytest  # noqa: E402

import bdmc  # noqa: E402
from bdmc.config import enable_compilation_cache  # noqa: E402

# The suite runs in float64 (the closed forms and pinned values are float64) unless BDMC_TEST_DTYPE=float32,
# which CI uses for one pass over the core tests.
FLOAT32 = os.environ.get("BDMC_TEST_DTYPE", "float64") == "float32"
bdmc.enable_x64(not FLOAT32)


def _share_compiled_programs():
    """Compilation dominates the suite's cost. JAX's persistent compilation cache (the `bdmc` command's, under the
    user's cache directory) lets a program compiled by one test module, or by the other worker, be loaded by the
    next rather than compiled again (each module forgets its in-memory programs, below); a later run starts warm.
    Small programs too (the command keeps those over 0.5 s): eager operations recompile in every module."""
    enable_compilation_cache()
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


_share_compiled_programs()


def pytest_configure(config):
    """In the controlling process, before the workers start: import ArviZ once. Its import writes a
    once-a-day stamp file under the user's cache directory (temporary file, then rename), and two workers
    importing it at once on a fresh machine race on that rename (FileNotFoundError at collection)."""
    if not hasattr(config, "workerinput"):
        import arviz  # noqa: F401


def pytest_collection_modifyitems(config, items):
    """Under float32, skip the tests marked ``float64`` (pinned float64 numbers), saying why."""
    if not FLOAT32:
        return
    skip = pytest.mark.skip(reason="needs float64 (marked float64); this run is BDMC_TEST_DTYPE=float32")
    for item in items:
        if item.get_closest_marker("float64") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def arviz_without_numba():
    """ArviZ's ECDF bands in plain NumPy for a module: numba's first compilation (~10 s) costs more than the small
    bands of SBC's tests (use with ``pytestmark = pytest.mark.usefixtures("arviz_without_numba")``)."""
    import arviz as az

    was = az.Numba.numba_flag
    az.Numba.disable_numba()
    yield
    if was:
        az.Numba.enable_numba()


@pytest.fixture
def key():
    return jax.random.key(20261122)


@pytest.fixture(autouse=True)
def _optimized_runs(request, monkeypatch):
    """A test marked ``optimized_runs`` executes for seconds: its runs (and Geweke's and SBC's chains) compile with
    bdmc's own options, as users' do (``bdmc.caching.RUN_COMPILE``: LLVM at level 1), rather than under the suite's
    level 0, at which such a test runs several times slower (SHME from one latent: 3.0 s a call against 0.6 s).
    bdmc reads ``XLA_FLAGS`` as it compiles and leaves out the options that it names (a user's setting wins), so
    hiding the suite's level flag there, for this test only, is enough; the process's own flags, which every
    other program compiles under, were read when the backend started and do not change."""
    level = _suite_backend_level()
    if level is None or request.node.get_closest_marker("optimized_runs") is None:
        return
    monkeypatch.setenv("XLA_FLAGS", " ".join(f for f in os.environ["XLA_FLAGS"].split() if f != level))


@pytest.fixture(scope="module", autouse=True)
def _compiled_programs_per_module():
    """Forget compiled programs after each test module, through the public ``bdmc.clear_caches()``.

    bdmc's own caches are bounded, but JAX keeps an executable for every distinct (function, static model,
    shapes) it has compiled; one process running hundreds of models grew past 3 GB without this.
    """
    yield
    bdmc.clear_caches()
    _share_compiled_programs()  # as set above, should a test of the command have changed it


# No fork after JAX has started its threads: a forked child gets copies of locks that other threads held, and
# can deadlock (Python 3.12+ warns "This process ... is multi-threaded, use of fork() may lead to deadlocks";
# 3.11 is silent). Every os.fork() (multiprocessing's "fork" start method included; subprocess does not call it)
# in a process with more than one thread is recorded here and fails the test that made it, on any version.
_FORKS_WITH_THREADS = []


def _thread_count():
    try:
        return len(os.listdir("/proc/self/task"))  # OS threads, JAX's and XLA's included (Linux)
    except OSError:
        return threading.active_count()


def _before_fork():
    threads = _thread_count()
    if threads > 1:
        _FORKS_WITH_THREADS.append(f"os.fork() with {threads} threads running, from:\n"
                                   + "".join(traceback.format_stack(limit=12)[:-1]))


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork)


@pytest.fixture(autouse=True)
def _no_fork_with_threads():
    del _FORKS_WITH_THREADS[:]
    yield
    if _FORKS_WITH_THREADS:
        forks = list(_FORKS_WITH_THREADS)
        del _FORKS_WITH_THREADS[:]
        pytest.fail("fork after threads started (may deadlock; use spawn):\n" + forks[0], pytrace=False)
