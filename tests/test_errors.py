"""Bad input gets a clear error naming the culprit."""

import ast
import builtins
import dataclasses
import importlib
import typing
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import typer

import bdmc
from bdmc import BDMCError, DataError, MissingExtraError, NonFiniteLogWeightError, ScheduleError, schedules
from bdmc.errors import require
from bdmc.models import GaussianMean, LinearRegression


@pytest.fixture
def problem(key):
    model = GaussianMean(n=10, dim=2)
    data, latent = bdmc.simulate(key, model)
    return model, data, latent


def test_nan_data_is_named(problem, key):
    model, data, _ = problem
    bad = np.array(data).copy()
    bad[3, 1] = np.nan
    with pytest.raises(DataError, match=r"non-finite.*\(3, 1\)"):
        bdmc.forward_ais(key, model, bad, num_steps=5)


def test_wrong_shape_is_named(problem, key):
    model, data, latent = problem
    with pytest.raises(DataError, match=r"shape \(10, 2\), got \(10, 3\)"):
        bdmc.reverse_ais(key, model, np.zeros((10, 3)), exact_latent=latent, num_steps=5)
    with pytest.raises(DataError, match="non-numeric"):
        bdmc.forward_ais(key, model, np.array([["a"] * 2] * 10), num_steps=5)


def test_bad_schedules_are_refused(problem, key):
    model, data, _ = problem
    with pytest.raises(ScheduleError, match="decreases"):
        bdmc.forward_ais(key, model, data, schedule=[0.0, 0.5, 0.2, 1.0])
    with pytest.raises(ScheduleError, match="at least 2"):
        bdmc.forward_ais(key, model, data, num_steps=1)
    with pytest.raises(BDMCError, match="unknown schedule"):
        bdmc.forward_ais(key, model, data, schedule="cosine")
    with pytest.raises(ScheduleError, match="columns"):
        bdmc.forward_ais(key, model, data, schedule=schedules.data_path(4))


def test_bad_exact_latent_is_refused(problem, key):
    model, data, latent = problem
    with pytest.raises(BDMCError, match="shape"):
        bdmc.reverse_ais(key, model, data, exact_latent={"mu": jnp.zeros(3)}, num_steps=5)
    with pytest.raises(BDMCError, match="structure"):
        bdmc.reverse_ais(key, model, data, exact_latent={"nu": jnp.zeros(2)}, num_steps=5)
    with pytest.raises(BDMCError, match="without exact_latent"):
        bdmc.sandwich(key, model, data, steps=[5])


@dataclasses.dataclass(frozen=True)
class BlowsUp(LinearRegression):
    """A model whose density turns NaN once lambda exceeds one half, for chains with beta_0 > 0."""

    def log_density(self, latent, data, lam):
        base = self.log_prior(latent) + jnp.sum(lam * self.log_likelihood(latent, data))
        return jnp.where((jnp.max(lam) > 0.5) & (latent["beta"][0] > 0), jnp.nan, base)


def test_nan_log_weight_names_step_lambda_and_chain(key):
    model = BlowsUp()
    data, _ = bdmc.simulate(key, model)
    init = jax.vmap(model.sample_prior)(jax.random.split(key, 16))
    first_bad_chain = int(np.argmax(np.asarray(init["beta"][:, 0]) > 0))
    path = schedules.linear(11)
    with pytest.raises(NonFiniteLogWeightError) as err:
        bdmc.anneal(key, model, data, bdmc.kernels.RandomWalkMH(model, scale=1e-9), path, init, progress=False)
    assert err.value.step == 6 and err.value.lam == pytest.approx(0.6)
    assert err.value.chain == first_bad_chain
    assert "step 6" in str(err.value) and "lambda = 0.6" in str(err.value)
    # The NaN is the model's own log density, met first by the weight at that step.
    assert isinstance(err.value, bdmc.NonFiniteLogDensityError)
    assert (err.value.term, err.value.evaluated_by) == ("log_density", "weight")


def test_missing_extra_names_the_extra():
    with pytest.raises(MissingExtraError, match=r"pip install 'numpyro>=0\.15' \(or pip install -e '\.\[numpyro\]'"):
        require("surely_not_an_installed_module", extra="numpyro")


def test_estimate_combinations():
    runs = np.array([-1.0, -2.0, -np.inf, -3.0])
    lme = bdmc.log_mean_exp(runs)
    assert lme == pytest.approx(np.log(np.mean(np.exp(runs))))
    assert bdmc.log_harmonic_mean(runs[:2]) == pytest.approx(-np.log(np.mean(np.exp(-runs[:2]))))
    big = np.array([1000.0, 1001.0])  # no overflow in log space
    assert bdmc.log_mean_exp(big) == pytest.approx(1001.0 + np.log((1 + np.exp(-1)) / 2))
    est = bdmc.Estimate.from_runs([-1.0, -2.0], bound="lower", seconds=0.0, compile_seconds=0.0, n_evals=1)
    with pytest.raises(ValueError):
        est.runs[0] = 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.value = 0.0
    with pytest.raises(ValueError, match="only a stochastic bound"):
        bdmc.Estimate.from_runs([1.0], bound=None, seconds=0, compile_seconds=0, n_evals=0).certified()


# Every raise in bdmc raises a BDMCError subclass, so one `except bdmc.BDMCError` catches whatever bdmc refuses;
# the subclasses that also subclass ValueError, TypeError, ... keep callers that catch those working.

SRC = Path(bdmc.__file__).parent
# Not errors: the ways a program stops or a generator ends (a command's exit status is typer's Exit).
NOT_ERRORS = (SystemExit, KeyboardInterrupt, GeneratorExit, StopIteration, StopAsyncIteration, typer.Exit)


def raise_offenders(source: str, namespace: dict | None = None, *, filename: str = "<source>",
                    package: str | None = None) -> list[str]:
    """``FILE:LINE: what`` for each ``raise`` in ``source`` of an exception that is not a BDMCError subclass.

    A name resolves through the names bound in the raising function (``except ... as name``, ``name = ...``, its
    imports), ``namespace`` (the module's globals), the module's imports and the builtins; a call of a function
    raises what its return annotation names. Fine: a bare ``raise``, re-raising a caught name, an AttributeError from
    a ``__getattr__`` (Python's protocol) and ``NOT_ERRORS``; a raise whose exception cannot be resolved is an
    offender.
    """
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def enclosing_function(node):
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                return node
        return None

    def imported(node):  # {name: object} of the imports in a module or a function
        names = {}
        for n in ast.walk(node):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a name moved with a deprecation warning is still that name
                    if isinstance(n, ast.ImportFrom):
                        module = importlib.import_module("." * n.level + (n.module or ""), package)
                        for alias in n.names:
                            names[alias.asname or alias.name] = getattr(module, alias.name)
                    elif isinstance(n, ast.Import):
                        for alias in n.names:
                            names[alias.asname or alias.name.split(".")[0]] = importlib.import_module(
                                alias.name if alias.asname else alias.name.split(".")[0])
            except (ImportError, AttributeError):  # an optional dependency: its names stay unknown
                continue
        return names

    namespace = {**vars(builtins), **imported(tree), **(namespace or {})}

    def values(expr, scope):
        """What ``expr`` may evaluate to: ``("object", x)`` or ``("instance", cls)``; None when unknown."""
        if isinstance(expr, ast.Name):
            caught = [h.type for h in scope["handlers"] if h.name == expr.id]
            if caught:
                out = []
                for t in caught:
                    for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        found = values(e, scope)
                        if found is None:
                            return None
                        out += [("instance", v) for kind, v in found if kind == "object"]
                return out
            assigned = scope["assigned"].get(expr.id)
            if assigned:
                found = [values(v, scope) for v in assigned]
                return None if None in found else [v for f in found for v in f]
            for names in (scope["imports"], namespace):
                if expr.id in names:
                    return [("object", names[expr.id])]
            return None
        if isinstance(expr, ast.Attribute):
            base = values(expr.value, scope)
            if base is None or not all(hasattr(v, expr.attr) for _, v in base):
                return None
            return [("object", getattr(v, expr.attr)) for _, v in base]
        if isinstance(expr, ast.IfExp):
            body, orelse = values(expr.body, scope), values(expr.orelse, scope)
            return None if body is None or orelse is None else body + orelse
        if isinstance(expr, ast.Call):
            called = values(expr.func, scope)
            if called is None:
                return None
            out = []
            for _, fn in called:
                if isinstance(fn, type):
                    out.append(("instance", fn))
                    continue
                try:
                    returns = typing.get_type_hints(fn).get("return")
                except Exception:  # an annotation that does not resolve: unknown
                    returns = None
                if not isinstance(returns, type):
                    return None
                out.append(("instance", returns))
            return out
        return None

    offenders = []
    for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Raise)), key=lambda n: n.lineno):
        if node.exc is None:
            continue
        function = enclosing_function(node)
        body = function or tree
        scope = {
            "handlers": [n for n in ast.walk(body) if isinstance(n, ast.ExceptHandler)],
            "assigned": {},
            "imports": imported(function) if function else {},
        }
        for n in ast.walk(body):
            if function and isinstance(n, ast.Assign):
                for target in n.targets:
                    if isinstance(target, ast.Name):
                        scope["assigned"].setdefault(target.id, []).append(n.value)
        where = f"{filename}:{node.lineno}: raise {ast.unparse(node.exc)}"
        if isinstance(node.exc, ast.Name) and any(h.name == node.exc.id for h in scope["handlers"]):
            continue  # re-raising what was caught
        found = values(node.exc, scope)
        if found is None:
            offenders.append(f"{where} (cannot tell what it raises)")
            continue
        protocol = (AttributeError,) if function is not None and function.name == "__getattr__" else ()
        for _, cls in found:
            if not isinstance(cls, type) or not issubclass(cls, BaseException):
                offenders.append(f"{where} ({cls!r} is not an exception)")
            elif not issubclass(cls, (BDMCError, *NOT_ERRORS, *protocol)):
                offenders.append(f"{where} ({cls.__module__}.{cls.__qualname__} is not a BDMCError)")
    return offenders


def source_modules():
    """(path, module name) of every module of bdmc."""
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        yield path, ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_raise_in_bdmc_is_a_bdmc_error():
    offenders = []
    for path, name in source_modules():
        module = importlib.import_module(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        offenders += raise_offenders(path.read_text(), vars(module), filename=str(path.relative_to(SRC.parent)),
                                     package=package)
    assert not offenders, f"{len(offenders)} raises of an exception that is not a BDMCError:\n" + "\n".join(offenders)


def test_the_raise_checker_finds_builtin_errors():
    source = '''
import json
from bdmc.errors import DataError, OptionError, UserProgramError

def f(x):
    if x:
        raise ValueError("x")
    try:
        json.loads(x)
    except (KeyError, json.JSONDecodeError) as err:
        if x:
            raise
        if x:
            raise err
        if x:
            raise DataError("bad") from err
        raise RuntimeError from err

def g(x):
    error = OptionError if x else TypeError
    raise error("y")

def h(x):
    try:
        x()
    except UserProgramError as err:
        raise err.renamed("--flag") from err.error
    raise json.JSONDecodeError("z", "", 0)

def __getattr__(name):
    raise AttributeError(name)

def unknown(x):
    raise x.error()
'''
    assert raise_offenders(source, filename="f.py") == [
        "f.py:7: raise ValueError('x') (builtins.ValueError is not a BDMCError)",
        "f.py:17: raise RuntimeError (builtins.RuntimeError is not a BDMCError)",
        "f.py:21: raise error('y') (builtins.TypeError is not a BDMCError)",
        "f.py:28: raise json.JSONDecodeError('z', '', 0) (json.decoder.JSONDecodeError is not a BDMCError)",
        "f.py:34: raise x.error() (cannot tell what it raises)",
    ]
