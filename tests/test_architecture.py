"""The layers of docs/architecture.md, enforced by parsing every import of src/bdmc."""

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).parents[1] / "src" / "bdmc"

# Lowest first. A module may import from its own layer and the layers below it, never from above.
LAYERS = (
    ("errors", "caching", "config", "version", "contracts", "files"),
    ("exact",),
    ("kernels",),
    ("models", "ppl", "datasets"),
    ("core", "bracketing"),
    ("checks",),
    ("estimators", "generative", "intervals"),
    ("plotting", "interop"),
    ("experiments", "realdata", "auditing", "calibration"),
    ("cli",),
    ("__init__",),
)
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        yield rel, (rel.parts[0] if len(rel.parts) > 1 else rel.stem)


def _imports(rel):
    """``(lineno, top-level bdmc package, imported names, module path)`` for every bdmc import in a module."""
    tree = ast.parse((SRC / rel).read_text())
    package = list(rel.parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "bdmc":
                target = node.module.split(".")[1:]
            else:
                continue
            names = [a.name for a in node.names]
            if not target:  # `from .. import x`: x is a top-level package or module, else a name of bdmc/__init__
                for name in names:
                    yield node.lineno, name if name in LEVEL else "__init__", [], [name]
            else:
                yield node.lineno, target[0], names, target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "bdmc" and len(parts) > 1:
                    yield node.lineno, parts[1], [], parts[1:]


def test_every_package_has_a_layer():
    assert {pkg for _, pkg in _modules()} <= set(LEVEL)


def test_nothing_imports_from_a_layer_above_it():
    bad = []
    for rel, pkg in _modules():
        for lineno, target, _, _ in _imports(rel):
            if target != pkg and LEVEL[target] > LEVEL[pkg]:
                bad.append(f"{rel}:{lineno} ({pkg}) imports {target}")
    assert not bad, "imports from a higher layer:\n" + "\n".join(bad)


def test_contracts_import_nothing_but_errors_and_caching():
    bad = [f"{rel}:{lineno} imports {target}" for rel, pkg in _modules() if pkg == "contracts"
           for lineno, target, _, _ in _imports(rel) if target not in ("contracts", "errors", "caching")]
    assert not bad, bad


def test_no_private_name_is_imported_across_packages():
    bad = []
    for rel, pkg in _modules():
        for lineno, target, names, path in _imports(rel):
            if target == pkg or pkg == "__init__":
                continue
            private = [p for p in path + names if p.startswith("_") and not p.endswith("__")]
            if private:
                bad.append(f"{rel}:{lineno} imports {'.'.join(path)} {private}")
    assert not bad, "private names used across packages:\n" + "\n".join(bad)


def _is_module(path):
    """Whether ``path`` (parts under src/bdmc) names a module or package rather than a name inside one."""
    where = SRC.joinpath(*path)
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def test_no_private_name_is_imported_from_another_module():
    """A leading underscore means "this module's own": a name shared by modules is public and documented.

    A private module of the importer's own package is not a private name (``from . import _common``,
    ``from ._common import CLIError``).
    """
    bad = []
    for rel, _ in _modules():
        for lineno, _, names, path in _imports(rel):
            private = [n for n in names if n.startswith("_") and not n.endswith("__")
                       and not (_is_module(path + [n]) and path == list(rel.parts[:-1]))]
            if private:
                bad.append(f"{rel}:{lineno} imports {private} from {'.'.join(path)}")
    assert not bad, "private names imported from another module:\n" + "\n".join(bad)


HOOK_HOLDERS = ("model", "sampler", "kernel", "rule")  # objects whose optional hooks are protocols of contracts/


def duck_typed_hooks(source: str, filename: str = "<source>") -> list[str]:
    """``FILE:LINE code`` for each hook of a model, sampler, kernel or step rule found by duck typing rather than
    by a protocol of bdmc.contracts (``supports(obj, Protocol)``): ``hasattr(x, name)``, ``getattr(x, name,
    default)``, any ``getattr`` on a kernel or a rule, or an attribute of one read inside ``try: ... except
    AttributeError``, where ``x``'s expression names a model, sampler, kernel or rule. Python's own dunder names
    (``__dataclass_fields__``) are not hooks."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr")
                and len(node.args) >= 2):
            holder, name = ast.unparse(node.args[0]), node.args[1]
            dunder = isinstance(name, ast.Constant) and str(name.value).startswith("__")
            strict = any(word in holder for word in ("kernel", "rule"))  # no getattr at all on these
            if (any(word in holder for word in HOOK_HOLDERS) and not dunder
                    and (node.func.id == "hasattr" or len(node.args) == 3 or strict)):
                bad.append((node.lineno, f"{filename}:{node.lineno} {ast.unparse(node)}"))
        elif isinstance(node, ast.Try) and any(_catches_attribute_error(h) for h in node.handlers):
            for stmt in node.body:
                for inner in ast.walk(stmt):
                    if (isinstance(inner, ast.Attribute)
                            and any(word in ast.unparse(inner.value) for word in HOOK_HOLDERS)):
                        bad.append((inner.lineno, f"{filename}:{inner.lineno} {ast.unparse(inner)} (read under except "
                                                  "AttributeError)"))
    return [text for _, text in sorted(bad)]


def _catches_attribute_error(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any(isinstance(n, ast.Name) and n.id == "AttributeError" for n in names)


def test_no_hook_is_discovered_by_duck_typing():
    """What a model, sampler, kernel or step rule provides beyond its contract is a protocol of bdmc.contracts
    (capabilities.py, sampler.py, kernel.py, step_rule.py), found with ``supports``; only contracts/ itself
    (which implements ``supports``) may look attributes up."""
    bad = []
    for rel, pkg in _modules():
        if pkg != "contracts":
            bad += duck_typed_hooks((SRC / rel).read_text(), str(rel))
    assert not bad, "hooks found by duck typing (declare a protocol in bdmc.contracts):\n" + "\n".join(bad)


def test_the_hook_checker_finds_duck_typing():
    """The negative control: each form of duck typing in a small source is found, and what is not a hook is not."""
    source = """
def f(model, sampler, kernel, rule, p):
    a = hasattr(model, "x")
    b = getattr(resolved.sampler, "thin", 1)
    c = getattr(kernel, "step_size")
    d = hasattr(rule, "culprit")
    try:
        e = model.coordinate_names
    except (KeyError, AttributeError):
        e = None
    fine = (hasattr(model, "__dataclass_fields__"), getattr(p, "key", None), getattr(model, "x"), hasattr(p, "x"))
"""
    assert duck_typed_hooks(source, "f.py") == [
        "f.py:3 hasattr(model, 'x')", "f.py:4 getattr(resolved.sampler, 'thin', 1)",
        "f.py:5 getattr(kernel, 'step_size')", "f.py:6 hasattr(rule, 'culprit')",
        "f.py:8 model.coordinate_names (read under except AttributeError)"]


def test_the_kernel_protocols_cover_what_the_engine_reads():
    """The engine and pilot read kernels only through the contracts' protocols: each attribute they use on a
    kernel is declared by a protocol of bdmc.contracts.kernel."""
    from bdmc.contracts import kernel as contracts_kernel
    from bdmc.contracts.capabilities import protocol_methods

    declared = set()
    for name in dir(contracts_kernel):
        obj = getattr(contracts_kernel, name)
        if isinstance(obj, type) and getattr(obj, "_is_protocol", False):
            declared |= set(protocol_methods(obj)) | set(getattr(obj, "__annotations__", {}))
    used = set()
    for rel in ("core/engine.py", "core/pilot.py", "core/failures.py"):
        for node in ast.walk(ast.parse((SRC / rel).read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in ("kernel", "rule")):
                used.add(node.attr)
    from bdmc.contracts.step_rule import StepRule

    declared |= set(protocol_methods(StepRule))
    assert used and used <= declared, sorted(used - declared)


@pytest.mark.parametrize("rel", [rel for rel, _ in _modules()], ids=str)
def test_no_module_is_over_500_lines(rel):
    lines = len((SRC / rel).read_text().splitlines())
    assert lines <= 500, f"{rel} has {lines} lines: split it by concern"
