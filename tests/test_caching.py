"""Compile caches are bounded and clearable, results say whether compilation was paid, import is inert."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdmc
from bdmc.caching import CompiledCache, cache_info


def test_the_cache_keeps_the_most_recently_used_entries():
    cache = CompiledCache("test", maxsize=2)
    built = []

    def get(k):
        return cache.get_or_build(k, lambda: built.append(k) or k.upper())

    assert get("a") == ("A", True) and get("b") == ("B", True) and get("a") == ("A", False)
    get("c")  # evicts b, the least recently used
    assert len(cache) == 2 and get("a") == ("A", False) and get("b") == ("B", True)
    assert built == ["a", "b", "c", "b"]
    assert cache_info()["test"] == (2, 2)
    with pytest.raises(ValueError, match="maxsize"):
        CompiledCache("bad", maxsize=0)


def test_estimates_say_whether_they_compiled_and_clear_caches_forgets(key):
    model = bdmc.models.GaussianMean(n=4, dim=2)
    data, _ = bdmc.simulate(key, model)
    run = lambda k: bdmc.forward_ais(k, model, data, num_steps=7, num_runs=3, progress=False)  # noqa: E731
    bdmc.clear_caches()
    first, second = run(jax.random.key(1)), run(jax.random.key(2))
    assert first.compiled and first.compile_seconds > 0
    assert not second.compiled and second.compile_seconds == 0.0
    bdmc.clear_caches()
    third = run(jax.random.key(1))
    assert third.compiled and third.compile_seconds > 0
    np.testing.assert_array_equal(third.runs, first.runs)  # a recompiled program gives the same numbers


def test_importing_bdmc_changes_no_jax_setting():
    code = ("import jax; before = bool(jax.config.jax_enable_x64); import bdmc, bdmc.cli; "
            "assert bool(jax.config.jax_enable_x64) == before, 'import flipped x64'; print(before)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_enable_x64_switches_the_dtype_both_ways():
    was = bool(jax.config.jax_enable_x64)
    try:
        bdmc.enable_x64(False)
        assert jax.numpy.ones(()).dtype == np.float32
        bdmc.enable_x64(True)
        assert jax.numpy.ones(()).dtype == np.float64
    finally:
        bdmc.enable_x64(was)


# Every function cache in bdmc is made by bdmc.caching.cached, so clear_caches() reaches it: a bare
# functools.lru_cache would keep its entries (compiled functions among them) for the life of the process.

SRC = Path(bdmc.__file__).parent
UNREGISTERED = ("lru_cache", "cache")  # functools' caches; its cached_property dies with its instance


def cache_offenders(source: str, *, filename: str = "<source>") -> list[str]:
    """``FILE:LINE: what`` for each use of ``functools.lru_cache`` or ``functools.cache`` in ``source``, under
    whatever name it was imported."""
    tree = ast.parse(source)
    modules, names = set(), set()  # what functools and its caches are called here
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "functools"}
        elif isinstance(node, ast.ImportFrom) and node.module == "functools" and not node.level:
            names |= {a.asname or a.name for a in node.names if a.name in UNREGISTERED}
    offenders = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr in UNREGISTERED and isinstance(node.value, ast.Name)
                and node.value.id in modules) or (isinstance(node, ast.Name) and node.id in names):
            offenders.append((node.lineno, f"{filename}:{node.lineno}: {ast.unparse(node)}"))
    return [text for _, text in sorted(offenders)]


def test_every_function_cache_in_bdmc_is_registered():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path != SRC / "caching.py":  # where the registered cache wraps functools.lru_cache
            offenders += cache_offenders(path.read_text(), filename=str(path.relative_to(SRC.parent)))
    assert not offenders, (f"{len(offenders)} function caches that clear_caches() does not clear (use "
                           "bdmc.caching.cached(maxsize=...)):\n" + "\n".join(offenders))


def test_the_cache_checker_finds_functools_caches():
    source = '''
import functools
import functools as ft
from functools import cache, lru_cache as memo, partial
from bdmc.caching import cached

@functools.lru_cache(maxsize=8)
def a(x): return x

@ft.cache
def b(x): return x

@memo
def c(x): return x

@cache
def d(x): return x

@cached(maxsize=8)
def e(x): return partial(x)

class F:
    @functools.cached_property
    def g(self): return 1

h = functools.lru_cache(maxsize=2)(e)
'''
    assert cache_offenders(source, filename="f.py") == [
        "f.py:7: functools.lru_cache", "f.py:10: ft.cache", "f.py:13: memo", "f.py:16: cache",
        "f.py:26: functools.lru_cache",
    ]


def cached_functions() -> list[str]:
    """``module.qualname`` of every function of bdmc decorated with ``cached(...)`` (in a module or a class),
    importing its module (which registers the cache)."""
    names = []

    def visit(body, module, prefix=""):
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, module, f"{prefix}{node.name}.")
            elif isinstance(node, ast.FunctionDef) and any(
                    isinstance(d, ast.Call) and ast.unparse(d.func).rpartition(".")[2] == "cached"
                    for d in node.decorator_list):
                names.append(f"{module}.{prefix}{node.name}")

    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        before = len(names)
        visit(ast.parse(path.read_text()).body, module)
        if len(names) > before:
            importlib.import_module(module)
    return names


def test_clear_caches_empties_every_registered_cache(key):
    functions = cached_functions()
    assert len(functions) >= 2 and set(functions) <= set(cache_info()), (functions, sorted(cache_info()))
    bdmc.clear_caches()
    model = bdmc.models.CorrelatedGaussianMean(dim=3)
    np.testing.assert_allclose(model.eigenvectors @ model.eigenvectors.T, np.eye(3), atol=1e-12)
    bdmc.bracketing.log_permanent(np.zeros((3, 3)))
    data, _ = bdmc.simulate(key, model)
    bdmc.forward_ais(key, model, data, num_steps=3, num_runs=2, progress=False)
    filled = {name for name, (entries, _) in cache_info().items() if entries}
    assert {"engine", "bdmc.models.correlated_gaussian._rotation",
            "bdmc.bracketing.symmetry._subset_tables"} <= filled, filled
    bdmc.clear_caches()
    assert {name: entries for name, (entries, _) in cache_info().items() if entries} == {}
    assert set(functions) <= set(cache_info())  # still registered, now empty


def test_quick_and_run_compilation_keep_what_xla_flags_set(monkeypatch):
    """Options a process set in XLA_FLAGS win over the library's per-program ones; the numbers are the same."""
    import jax
    import jax.numpy as jnp

    from bdmc import caching

    seen = []

    class Lowered:
        def compile(self, compiler_options=None):
            seen.append(compiler_options)
            return "compiled"

    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
    assert caching.compile_run(Lowered()) == "compiled" and seen[-1] is None
    caching.compile_quickly(Lowered())
    assert seen[-1] == {"xla_cpu_use_fusion_emitters": False}
    monkeypatch.setenv("XLA_FLAGS", "")
    caching.compile_run(Lowered())
    assert seen[-1] == caching.RUN_COMPILE
    monkeypatch.undo()
    f = jax.jit(lambda x: jnp.sum(jnp.sin(x) * jnp.cos(x[::-1])))
    x = jnp.linspace(0.0, 3.0, 101)
    for compiled in (caching.compile_quickly(f.lower(x)), caching.compile_run(f.lower(x))):
        assert abs(float(compiled(x)) - float(f(x))) < 1e-6 * max(1.0, abs(float(f(x))))


def test_a_static_jit_compiles_with_its_options_less_what_xla_flags_set(monkeypatch):
    """``jit_static(options=...)`` hands its programs the options :func:`compiler_options` keeps, read when the
    program is built; the numbers are those of a plain jit."""
    from bdmc import caching

    seen = []
    plain_jit = jax.jit

    def spying_jit(fun, **kwargs):
        seen.append(kwargs.get("compiler_options"))
        return plain_jit(fun, **kwargs)

    @caching.jit_static(static=("power",), options=caching.RUN_COMPILE)
    def raised(x, *, power):
        return jnp.sum(x**power)

    monkeypatch.setattr(jax, "jit", spying_jit)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false")
    x = jnp.linspace(0.0, 2.0, 9)
    assert float(raised(x, power=3)) == pytest.approx(float(jnp.sum(x**3)), rel=1e-6)
    assert seen[-1] == caching.RUN_COMPILE
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
    assert float(raised(x, power=2)) == pytest.approx(float(jnp.sum(x**2)), rel=1e-6)
    assert seen[-1] is None  # the process's level wins: no options at all
    assert caching.compiler_options({}) == {}


def _kept_after_use(release: bool, noise_std: float) -> bool:
    """Whether anything still holds a model after a forward AIS run and a Geweke test compiled for it."""
    import gc
    import weakref

    from bdmc.caching import release_compiled
    from bdmc.checks import geweke
    from bdmc.models import GaussianMean

    model = GaussianMean(n=3, dim=2, noise_std=noise_std)  # a value no other test uses: a cache key of its own
    alive = weakref.ref(model)
    data = bdmc.simulate(jax.random.key(0), model).data
    bdmc.forward_ais(jax.random.key(1), model, data, num_steps=3, num_runs=2)
    geweke(jax.random.key(2), model, model.default_kernel(), num_samples=8, num_steps=2)
    if release:
        release_compiled()
    del model, data
    gc.collect()
    return alive() is not None


def test_release_compiled_lets_go_of_every_model_bdmc_compiled_for():
    """An audit ends with ``release_compiled``: a process that audits model after model keeps none of them (what
    ``benchmarks/audit_memory.py`` measures). Negative control: without it the compiled programs hold the model."""
    assert _kept_after_use(False, 0.8125)
    assert not _kept_after_use(True, 0.6875)


def test_array_memo_computes_once_per_jax_array_and_forgets_it_with_the_array():
    import gc

    from bdmc.caching import _ARRAY_MEMO, array_memo

    calls = []

    def digest(a):
        calls.append(1)
        return float(np.sum(a))

    x = jnp.arange(4.0)
    assert array_memo(x, "sum", digest) == array_memo(x, "sum", digest) == 6.0 and len(calls) == 1
    assert array_memo(x, "other", digest) == 6.0 and len(calls) == 2  # each question apart
    y = np.arange(4.0)  # a NumPy array can change in place: computed every time
    array_memo(y, "sum", digest)
    y[0] = 10.0
    assert array_memo(y, "sum", digest) == 16.0 and len(calls) == 4
    mine = {(id(x), "sum"), (id(x), "other")}
    assert mine <= set(_ARRAY_MEMO)
    del x
    gc.collect()
    assert not mine & set(_ARRAY_MEMO)  # the entries went with the array


def test_data_are_checked_once_per_jax_array_and_a_bad_value_is_never_remembered():
    from bdmc.contracts.model import validate_data
    from bdmc.core.fingerprint import data_fingerprint
    from bdmc.models import GaussianMean

    model = GaussianMean(n=3, dim=2)
    good = jnp.ones((3, 2))
    assert validate_data(model, good) is good  # passed on as it is: no copy
    assert data_fingerprint(good) == data_fingerprint(jnp.ones((3, 2)))  # the values decide, not the object
    assert data_fingerprint(good) != data_fingerprint(good.at[0, 0].set(2.0))
    bad = good.at[1, 1].set(jnp.nan)
    for _ in range(2):  # refused every time
        with pytest.raises(bdmc.DataError, match=r"data leaf 0 contains 1 non-finite value\(s\).*index \(1, 1\)"):
            validate_data(model, bad)
    host = np.ones((3, 2))
    validate_data(model, host)
    host[2, 0] = np.inf  # changed in place after a check: checked again
    with pytest.raises(bdmc.DataError, match="non-finite"):
        validate_data(model, host)


def test_a_build_runs_with_garbage_collection_paused_and_restores_it():
    """Tracing a program triggers many collections; a build pauses them and puts the collector back as it was."""
    import gc

    from bdmc.caching import CompiledCache, collection_paused

    cache = CompiledCache("test gc", maxsize=2)
    seen = []
    assert gc.isenabled()
    value, built = cache.get_or_build("k", lambda: seen.append(gc.isenabled()) or 1)
    assert (value, built, seen) == (1, True, [False])
    assert gc.isenabled()
    with collection_paused():  # nested: the inner block leaves the outer's pause alone
        with collection_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # a process that turned the collector off keeps it off
    try:
        cache.get_or_build("j", lambda: 2)
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ZeroDivisionError):  # a build that raises still restores the collector
        cache.get_or_build("raises", lambda: 1 / 0)
    assert gc.isenabled()
