"""A census of every posterior of posteriordb: what it is, and whether its log evidence log p(y) exists here.

One record per posterior (all 147 of posteriordb's commit ``28f8d3d``): its model and data, whether posteriordb
holds reference draws under its own name (``has_reference_draws``; ``reference_posterior`` is the name
posteriordb points to, the noncentered one for ``eight_schools_centered``), whether ``posteriordb_models.py``
ports it (``ported``), the number of scalars its Stan program's parameters block declares (``num_parameters``,
as in the shipped ports' ``info.json``) and the dimension of their support (``num_free``: a ``simplex[K]`` has
K - 1), both from the data where this evaluator can compute the sizes, else None, and ``reason``: None when
log p(y) exists and can be computed here in principle, else why not

- ``"improper prior: a, b"``: parameters with no proper prior, that is no density statement (``~`` or a
  ``target +=`` density call, ``_lupdf`` and user-defined densities included) whose left side is the parameter,
  and a support unbounded on at least one side (a flat prior on a bounded support is uniform, proper);
- ``"prior unclear: ..."``: a parameter whose only density terms are not on the parameter itself (a statement on
  a transformed parameter or an expression of it, a hand-written ``target +=`` term), or whose bound depends on
  another parameter: for a human to read;
- ``"ODE: <solver>"``, ``"algebraic solver"``, ``"discrete parameter"``, ``"no data"``.

Several reasons are joined by ``"; "`` (the list is ``reasons``). The Stan programs are read by a small parser
(:func:`parse_program`): comments stripped, tokens, top-level blocks, statements flattened out of loops and
conditionals, and user-defined functions read with their formal arguments bound to the caller's expressions. A
density statement's first index (a literal, a range, or an enclosing loop's variable) gives the elements it
covers, so ``for (t in 12:n) s[t] ~ ...`` leaves ``s[1:11]`` flat; where the evaluator cannot tell, every element
counts as covered. Each record's ``parameters`` gives, per parameter, its sizes, support and how its prior was
classified.

Usage::

    python3 benchmarks/posteriordb_census.py --pdb /path/to/posteriordb   # git dir (checkout or bare)

writes ``benchmarks/data/posteriordb/census.json`` and prints the counts by reason.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import re
import subprocess
import zipfile
from collections import Counter
from pathlib import Path

from harness.store import write_text

from bdmc.errors import DataError, OptionError

DATA_DIR = Path(__file__).resolve().parent / "data" / "posteriordb"
OUT = DATA_DIR / "census.json"

# ------------------------------------------------------------------------------------------- tokens and blocks

_COMMENT = re.compile(r'"[^"\n]*"|//[^\n]*|#[^\n]*|/\*.*?\*/', re.S)
_TOKEN = re.compile(r"\s*(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|[A-Za-z_]\w*|\"[^\"]*\"|"
                    r"<-|\+=|-=|\*=|/=|==|!=|<=|>=|&&|\|\||\.\*|\./|%/%|\S)")
BLOCKS = ("functions", "data", "transformed data", "parameters", "transformed parameters", "model",
          "generated quantities")
TYPES = {"int", "real", "complex", "vector", "row_vector", "matrix", "simplex", "unit_vector", "sum_to_zero_vector",
         "sum_to_zero_matrix", "ordered", "positive_ordered", "cholesky_factor_corr", "cholesky_factor_cov",
         "corr_matrix", "cov_matrix", "array", "complex_vector", "complex_row_vector", "complex_matrix",
         "column_stochastic_matrix", "row_stochastic_matrix", "tuple"}
SQUARE = {"cholesky_factor_corr", "cholesky_factor_cov", "corr_matrix", "cov_matrix"}
COMPACT = {"simplex", "unit_vector", "cholesky_factor_corr", "corr_matrix", "column_stochastic_matrix",
           "row_stochastic_matrix"}
DENSITY_SUFFIXES = ("_lpdf", "_lpmf", "_lupdf", "_lupmf", "_log")
# Functions whose value holds its (first / every) argument's elements unchanged: a density on their value is a
# density on the argument's elements.
SELECTORS = {"to_vector", "to_row_vector", "to_array_1d", "to_array_2d", "to_matrix", "col", "row", "head", "tail",
             "segment", "block", "sub_col", "sub_row", "transpose"}
CONCATENATORS = {"append_row", "append_col"}
ODE = re.compile(r"\b(integrate_ode_\w+|ode_\w+)\s*\(")
ALGEBRAIC = re.compile(r"\b(algebra_solver\w*|solve_newton\w*|solve_powell\w*)\s*\(")


def tokenize(code: str) -> list[str]:
    """The tokens of a Stan program, comments dropped (strings kept as one token)."""
    code = _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", code)
    return [t for t in _TOKEN.findall(code) if t]


def text(tokens: list[str]) -> str:
    """Tokens back as readable Stan: ``sum(phi[1:N])``, ``-1 * x``."""
    out = " ".join(tokens)
    out = re.sub(r"(?<=[(\[{]) | (?=[)\]},:])|(?<=:) |(?<=\w) (?=[(\[])", "", out)
    return re.sub(r"(^|[(\[{,=] ?)- ", r"\1-", out)


def _close(tokens: list[str], i: int) -> int:
    """The index of the bracket closing the one at ``tokens[i]``."""
    pairs, depth = {"(": ")", "[": "]", "{": "}"}, 0
    opening, closing = tokens[i], pairs[tokens[i]]
    for j in range(i, len(tokens)):
        depth += (tokens[j] == opening) - (tokens[j] == closing)
        if depth == 0:
            return j
    raise DataError(f"unbalanced {opening!r} in a Stan program")


def blocks(tokens: list[str]) -> dict[str, list[str]]:
    """The program's top-level blocks, by name, as token lists (without their braces)."""
    out, i, head = {}, 0, []
    while i < len(tokens):
        if tokens[i] == "{":
            end = _close(tokens, i)
            name = " ".join(head)
            if name not in BLOCKS:
                raise DataError(f"unknown Stan block {name!r}")
            out[name], head, i = tokens[i + 1:end], [], end + 1
        else:
            head.append(tokens[i])
            i += 1
    return out


def statements(tokens: list[str]) -> list[list[str]]:
    """The simple statements of a block, flattened out of braces, loops and conditionals."""
    return [stmt for stmt, _ in looped_statements(tokens)]


def looped_statements(tokens: list[str], loops: tuple = ()) -> list[tuple[list[str], tuple]]:
    """Each simple statement of a block with its enclosing loops and conditionals, innermost last: a ``for``
    loop as ``(variable, start, end)`` token lists, anything else (a loop over an array's elements, ``while``,
    ``if``) as ``(keyword, None, None)``."""
    out, i = [], 0
    while i < len(tokens):
        t = tokens[i]
        if t == "{":
            end = _close(tokens, i)
            out += looped_statements(tokens[i + 1:end], loops)
            i = end + 1
        elif t in ("}", "else", ";"):
            i += 1
        elif t in ("for", "while", "if") and i + 1 < len(tokens) and tokens[i + 1] == "(":
            head_end = _close(tokens, i + 1)
            inner = (*loops, (t, None, None))
            if t == "for" and tokens[i + 3] == "in":
                bounds = split_top(tokens[i + 4:head_end], ":")
                inner = (*loops, (tokens[i + 2], *(bounds if len(bounds) == 2 else (None, None))))
            end = _statement_end(tokens, head_end + 1)
            out += looped_statements(tokens[head_end + 1:end + 1], inner)
            i = end + 1
        else:
            end = _statement_end(tokens, i)
            out.append((tokens[i:end], loops))
            i = end + 1
    return out


def _statement_end(tokens: list[str], i: int) -> int:
    """The index of the last token of the statement starting at ``tokens[i]`` (its ``;`` or ``}``)."""
    if i >= len(tokens):
        return len(tokens)
    if tokens[i] == "{":
        return _close(tokens, i)
    if tokens[i] in ("for", "while", "if") and i + 1 < len(tokens) and tokens[i + 1] == "(":
        end = _statement_end(tokens, _close(tokens, i + 1) + 1)
        if tokens[i] == "if" and end + 1 < len(tokens) and tokens[end + 1] == "else":
            end = _statement_end(tokens, end + 2)
        return end
    depth = 0
    while i < len(tokens) and not (depth == 0 and tokens[i] == ";"):
        depth += (tokens[i] in "([{") - (tokens[i] in ")]}")
        i += 1
    return i


def split_top(tokens: list[str], sep: str = ",") -> list[list[str]]:
    """``tokens`` split at ``sep`` outside brackets."""
    parts, depth, cur = [], 0, []
    for t in tokens:
        if depth == 0 and t == sep:
            parts.append(cur)
            cur = []
            continue
        depth += (t in "([{") - (t in ")]}")
        cur.append(t)
    return [*parts, cur]


# ------------------------------------------------------------------------------------------- declarations


def declaration(stmt: list[str]) -> dict | None:
    """A variable declaration's parts, or None when ``stmt`` declares nothing. Both array syntaxes:
    ``array[N] vector<lower=0>[K] x`` and ``vector<lower=0>[K] x[N]``."""
    i, array_dims = 0, []
    while i < len(stmt) and stmt[i] in ("data", "const"):
        i += 1
    if i >= len(stmt) or stmt[i] not in TYPES or (i + 1 < len(stmt) and stmt[i + 1] == "("):
        return None
    if stmt[i] == "array":
        end = _close(stmt, i + 1)
        array_dims, i = split_top(stmt[i + 2:end]), end + 1
    kind, i, bounds, dims = stmt[i], i + 1, {}, []
    if i < len(stmt) and stmt[i] == "<":
        depth, j = 0, i + 1
        while not (depth == 0 and stmt[j] == ">"):
            depth += (stmt[j] in "([{") - (stmt[j] in ")]}")
            j += 1
        for part in split_top(stmt[i + 1:j]):
            bounds[part[0]] = part[2:]
        i = j + 1
    if i < len(stmt) and stmt[i] == "[":
        end = _close(stmt, i)
        dims, i = split_top(stmt[i + 1:end]), end + 1
    if i >= len(stmt) or not re.fullmatch(r"[A-Za-z_]\w*", stmt[i]):
        return None
    name, i = stmt[i], i + 1
    if i < len(stmt) and stmt[i] == "[":
        end = _close(stmt, i)
        array_dims, i = split_top(stmt[i + 1:end]), end + 1
    init = stmt[i + 1:] if i < len(stmt) and stmt[i] == "=" else None
    return {"name": name, "kind": kind, "bounds": bounds, "dims": dims, "array_dims": array_dims, "init": init}


def free_size(decl: dict, sizes: list[int]) -> int:
    """The dimension of a declared variable's support: ``sizes`` are its type's sizes ([K] or [M, N])."""
    kind, k = decl["kind"], sizes[0] if sizes else 1
    if kind in ("simplex", "sum_to_zero_vector", "unit_vector"):
        return k - 1
    if kind in ("cholesky_factor_corr", "corr_matrix"):
        return k * (k - 1) // 2
    if kind == "cov_matrix":
        return k * (k + 1) // 2
    if kind == "cholesky_factor_cov":
        n = sizes[1] if len(sizes) > 1 else k
        return n * (n + 1) // 2 + (k - n) * n
    return math.prod(sizes)


def evaluate(tokens: list[str], env: dict):
    """The value of an integer size expression, from the data and transformed data in ``env``; None if this
    small evaluator cannot compute it."""
    funcs = {"size": len, "num_elements": lambda x: len(_flat(x)), "rows": len, "cols": lambda x: len(x[0]),
             "max": lambda *a: max(_flat(list(a))), "min": lambda *a: min(_flat(list(a))),
             "sum": lambda x: sum(_flat(x)), "floor": math.floor, "ceil": math.ceil}
    out = []
    for t in tokens:
        if t in env:
            out.append(f"_env[{t!r}]")
        elif t in funcs:
            out.append(t)
        elif re.fullmatch(r"[A-Za-z_]\w*", t) or t in ("{", "}", "'", "|", ":"):
            return None  # an unknown name, or a range or several indices: beyond this evaluator
        else:
            out.append({"/": "//", "^": "**", "%/%": "//", "[": "[(", "]": ")-1]"}.get(t, t))
    try:
        value = eval("".join(out), {"__builtins__": {}, "_env": env, **funcs})  # numbers, operators, data only
    except Exception:  # any failure of this small evaluator means "size unknown"
        return None
    return int(value) if isinstance(value, (int, float)) and float(value).is_integer() else None


def _flat(x) -> list:
    return [v for item in x for v in _flat(item)] if isinstance(x, list) else [x]


# ------------------------------------------------------------------------------------------- the program


def parse_program(code: str) -> dict:
    """A Stan program's blocks, statements, parameter declarations and user-defined functions.

    Returns
    -------
    dict
        ``blocks`` (name: tokens), ``stmts`` (name: statements), ``params`` (name: declaration),
        ``data_names`` (data and transformed data), ``functions`` (name: (formal names, body statements)),
        ``model_loops`` (the model block's statements with their loops).
    """
    parts = blocks(tokenize(code))
    stmts = {name: statements(body) for name, body in parts.items() if name != "functions"}
    params = {d["name"]: d for d in map(declaration, stmts.get("parameters", [])) if d}
    data_names = {d["name"] for b in ("data", "transformed data") for d in map(declaration, stmts.get(b, [])) if d}
    return {"blocks": parts, "stmts": stmts, "params": params, "data_names": data_names,
            "functions": functions(parts.get("functions", [])),
            "model_loops": looped_statements(parts.get("model", []))}


def functions(tokens: list[str]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """User-defined functions: name -> (formal argument names, body statements). Forward declarations skipped."""
    out, i = {}, 0
    while i < len(tokens):
        j = tokens.index("(", i)
        name, end = tokens[j - 1], _close(tokens, j)
        formals = [arg[-1] for arg in split_top(tokens[j + 1:end]) if arg]
        if end + 1 < len(tokens) and tokens[end + 1] == "{":
            body_end = _close(tokens, end + 1)
            out[name] = (formals, statements(tokens[end + 2:body_end]))
            i = body_end + 1
        else:
            i = end + 2
    return out


class Analysis:
    """Which density terms each parameter of a program gets: on itself (``direct``), on an expression of it
    (``indirect``: where), or only through a hand-written ``target +=`` term (``raw``: where).

    Every variable computed in the transformed parameters and model blocks (and in a called function) is tracked
    as an entry ``(kind, value, likelihood)``: kind ``"param"`` for a parameter itself, ``"copy"`` for a variable
    whose every assignment copies elements of parameters (``uv[i, 1] = uv1[i]``: a density on it is one on
    them), ``"derived"`` otherwise. ``value`` holds the parameters its value depends on, ``likelihood`` those that
    reach it only through the arguments of a density of data (``normal_lpdf(y[t] | mu[k], sigma)``): a
    ``target +=`` term built from those is a likelihood, not a prior.
    """

    def __init__(self, program: dict):
        self.program, self.params = program, program["params"]
        self.direct, self.indirect, self.raw = set(), {}, {}
        # parameter -> [(first index tokens or None, loops)]: which elements its density statements cover
        self.cover = {}
        self.env = {p: ("param", {p}, set()) for p in self.params}
        for block in ("transformed parameters", "model"):
            for _ in range(2):  # twice: a variable may be used before the statement that assigns it (loops)
                for stmt in program["stmts"].get(block, []):
                    self._assign(stmt, self.env)
        for stmt, loops in program["model_loops"]:
            self._statement(stmt, self.env, depth=0, loops=loops)

    # --- dependencies
    def depends(self, tokens: list[str], env: dict) -> tuple[set[str], set[str]]:
        """The parameters an expression's value depends on, and those it depends on only through the
        arguments of densities of data."""
        value, lik, i = set(), set(), 0
        while i < len(tokens):
            t = tokens[i]
            if t.endswith(DENSITY_SUFFIXES) and i + 1 < len(tokens) and tokens[i + 1] == "(" and (
                    t not in self.program["functions"]):
                end = _close(tokens, i + 1)
                v, w = self.depends(tokens[i + 2:end], env)
                lik |= v | w
                i = end + 1
                continue
            _, v, w = env.get(t, (None, set(), set()))
            value, lik, i = value | v, lik | w, i + 1
        return value, lik - value

    def _assign(self, stmt: list[str], env: dict) -> None:
        decl = declaration(stmt)
        if decl is not None:
            name, rhs, target = decl["name"], decl["init"] or [], []
        else:
            ops = [k for k, t in enumerate(stmt) if t in ("=", "<-", "+=", "-=", "*=", "/=")]
            if not ops or stmt[0] == "target" or not re.fullmatch(r"[A-Za-z_]\w*", stmt[0]) or stmt[0] in self.params:
                return
            name, rhs, target = stmt[0], stmt[ops[0] + 1:], stmt[1:ops[0]]
            if stmt[ops[0]] != "=" and stmt[ops[0]] != "<-":
                rhs = [name, "+", *rhs]  # a compound assignment reads the variable
        if not rhs:  # declared, not yet assigned
            env.setdefault(name, ("copy", set(), set()))
            return
        kind, value, lik = env.get(name, ("copy", set(), set()))
        leaves = _leaves(rhs)
        copied = [env.get(leaf[0]) for leaf in leaves if len(leaf) == 1]
        if rhs and len(copied) == len(leaves) and all(c is not None and c[0] in ("param", "copy") for c in copied):
            value = value.union(*(c[1] for c in copied))
        else:
            v, w = self.depends(rhs + target, env)
            kind, value, lik = "derived", value | v, (lik | w) - v - value
        env[name] = (kind, value, lik - value)

    # --- density statements
    def _statement(self, stmt: list[str], env: dict, depth: int, loops: tuple | None = None) -> None:
        if _top_index(stmt, "~") > 0:
            k = _top_index(stmt, "~")
            lhs, rhs = stmt[:k], stmt[k + 1:]
            dist, args = rhs[0], _call_args(rhs, 1)
            user = next((dist + s for s in DENSITY_SUFFIXES if dist + s in self.program["functions"]), None)
            if user is not None:
                self._call(user, [lhs, *args], env, depth)
            else:
                self._density(lhs, env, loops)
                self._expression(sum(args, []), env, depth, count_raw=False)
        elif stmt[:2] == ["target", "+="]:
            self._expression(stmt[2:], env, depth, count_raw=True, loops=loops)
        elif stmt and stmt[0] in self.program["functions"] and len(stmt) > 1 and stmt[1] == "(":
            self._call(stmt[0], _call_args(stmt, 1), env, depth)
        else:
            self._expression(stmt, env, depth, count_raw=False, loops=loops)

    def _expression(self, tokens: list[str], env: dict, depth: int, *, count_raw: bool,
                    loops: tuple | None = None) -> None:
        """Density calls in an expression count for their left side; with ``count_raw`` (a ``target +=``
        expression or a returned log density), the parameters the rest's value depends on are raw terms."""
        outside, i = [], 0
        while i < len(tokens):
            t = tokens[i]
            if i + 1 < len(tokens) and tokens[i + 1] == "(" and re.fullmatch(r"[A-Za-z_]\w*", t):
                end = _close(tokens, i + 1)
                args = _call_args(tokens, i + 1)
                if t in self.program["functions"]:
                    bar = [a for a in args if "|" in a]
                    if bar and t.endswith(DENSITY_SUFFIXES):  # foo_lpdf(y | theta): the first formal is y
                        k = bar[0].index("|")
                        args = [bar[0][:k], bar[0][k + 1:], *args[1:]]
                    self._call(t, args, env, depth)
                    i = end + 1
                    continue
                if t.endswith(DENSITY_SUFFIXES) and "|" in tokens[i + 2:end]:
                    k = tokens.index("|", i + 2)
                    self._density(tokens[i + 2:k], env, loops)
                    self._expression(tokens[k + 1:end], env, depth, count_raw=False)
                    i = end + 1
                    continue
            outside.append(t)
            i += 1
        if count_raw:
            where = text(tokens)
            for p in self.depends(outside, env)[0]:
                self.raw.setdefault(p, where)

    def _call(self, name: str, args: list[list[str]], env: dict, depth: int) -> None:
        """A user-defined function's density statements, its formal arguments bound to ``args``."""
        if depth > 5:
            return
        formals, body = self.program["functions"][name]
        local = {}
        for formal, arg in zip(formals, args, strict=False):
            leaves = _leaves(arg)
            entry = env.get(leaves[0][0]) if len(leaves) == 1 and len(leaves[0]) == 1 else None
            if entry is not None and entry[0] in ("param", "copy"):
                local[formal] = ("copy", entry[1], set())
            else:
                local[formal] = ("derived", *self.depends(arg, env))
        for _ in range(2):
            for stmt in body:
                self._assign(stmt, local)
        for stmt in body:
            if stmt and stmt[0] == "return":
                self._expression(stmt[1:], local, depth + 1, count_raw=True)
            else:
                self._statement(stmt, local, depth + 1)

    def _density(self, lhs: list[str], env: dict, loops: tuple | None) -> None:
        """A density on ``lhs``; ``loops`` None where the statement's loops are unknown (in a function)."""
        where = text(lhs)
        for leaf, index in _indexed_leaves(lhs):
            entry = env.get(leaf[0]) if len(leaf) == 1 else None
            if entry is not None and entry[0] in ("param", "copy"):
                self.direct |= entry[1]
                for p in entry[1]:
                    whole = entry[0] == "copy" or loops is None or index is None
                    self.cover.setdefault(p, []).append((None, ()) if whole else (index, loops))
            else:
                v, w = self.depends(leaf, env)
                for p in v | w:
                    self.indirect.setdefault(p, where)


def _top_index(tokens: list[str], sep: str) -> int:
    depth = 0
    for k, t in enumerate(tokens):
        if depth == 0 and t == sep:
            return k
        depth += (t in "([{") - (t in ")]}")
    return -1


def _call_args(tokens: list[str], i: int) -> list[list[str]]:
    """The arguments of the call whose ``(`` is at ``tokens[i]``."""
    inner = tokens[i + 1:_close(tokens, i)]
    return [a for a in split_top(inner) if a]


def _leaves(tokens: list[str]) -> list[list[str]]:
    """The parts of a density's left side after peeling what keeps elements unchanged: indexing, transposes,
    parentheses, selectors (``to_vector(x)``, ``col(x, j)``), concatenations and array/row-vector literals.
    A leaf of one token is a variable; a longer leaf is an expression of something."""
    return [leaf for leaf, _ in _indexed_leaves(tokens)]


def _indexed_leaves(tokens: list[str]) -> list[tuple[list[str], list[str] | None]]:
    """:func:`_leaves`, each with the contents of its first index (``i`` of ``x[i, j]`` or ``x[i][j]``), None
    where it has none or passed through a selector."""
    index = None
    while tokens and tokens[-1] in ("'", "]"):
        if tokens[-1] == "'":
            tokens = tokens[:-1]
            continue
        depth, k = 0, len(tokens) - 1
        while True:
            depth += (tokens[k] == "]") - (tokens[k] == "[")
            if depth == 0:
                break
            k -= 1
        if k == 0:  # a row-vector literal [a, b]
            return [pair for part in split_top(tokens[1:-1]) for pair in _indexed_leaves(part)]
        index, tokens = split_top(tokens[k + 1:-1])[0], tokens[:k]
    if len(tokens) > 2 and tokens[0] in ("(", "{") and _close(tokens, 0) == len(tokens) - 1:
        return [pair for part in split_top(tokens[1:-1]) for pair in _indexed_leaves(part)]
    if len(tokens) > 2 and tokens[1] == "(" and _close(tokens, 1) == len(tokens) - 1:
        if tokens[0] in SELECTORS:
            return [(leaf, None) for leaf in _leaves(_call_args(tokens, 1)[0])]
        if tokens[0] in CONCATENATORS:
            return [(leaf, None) for arg in _call_args(tokens, 1) for leaf in _leaves(arg)]
    return [(tokens, index)]


# ------------------------------------------------------------------------------------------- classification


def support(decl: dict) -> tuple[str, bool]:
    """A parameter's support in words, and whether it is bounded (a flat density on it is proper)."""
    kind, bounds = decl["kind"], decl["bounds"]
    if kind in COMPACT:
        return kind, True
    lower = text(bounds["lower"]) if "lower" in bounds else ("0" if kind == "positive_ordered" else None)
    upper = text(bounds["upper"]) if "upper" in bounds else None
    if lower is None and upper is None:
        return f"{kind}, unbounded", False
    return f"{kind} in ({lower or '-inf'}, {upper or 'inf'})", lower is not None and upper is not None


def bounded_region(limit: list[str], program: dict) -> bool:
    """Whether a bound stays bounded: a sum and difference of numbers, data and bounded parameters (as
    ``upper = 1 - alpha1`` with ``alpha1`` in (0, 1)), so a flat density under it has finite mass."""
    for t in limit:
        if t in program["params"]:
            if not support(program["params"][t])[1]:
                return False
        elif not (t in program["data_names"] or t in ("+", "-", "(", ")") or re.fullmatch(r"[\d.eE]+", t)):
            return False
    return True


def data_env(program: dict, data: dict) -> dict:
    """The data, with the transformed data's integers that this evaluator can compute: those set by
    statements outside loops and conditionals (one assigned inside any is unknown)."""
    env, ints = dict(data), set()
    for stmt, loops in looped_statements(program["blocks"].get("transformed data", [])):
        decl = declaration(stmt)
        if decl is not None and decl["kind"] == "int" and not decl["array_dims"]:
            ints.add(decl["name"])
            name, rhs = decl["name"], decl["init"]
        elif len(stmt) > 2 and stmt[1] in ("=", "+=", "-=", "*=", "/=") and stmt[0] in ints:
            name, rhs = stmt[0], stmt[2:] if stmt[1] == "=" else [stmt[0], stmt[1][0], "(", *stmt[2:], ")"]
        else:
            continue
        value = evaluate(rhs, env) if rhs and not loops else None
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def size_of(decl: dict, env: dict) -> tuple[int | None, int | None]:
    """A parameter's number of scalars as declared (a ``simplex[K]`` has K, a ``cholesky_factor_corr[K]`` K^2)
    and of free dimensions (K - 1, K (K - 1) / 2); None where a size is beyond the evaluator."""
    sizes = [evaluate(d, env) for d in decl["dims"]]
    arrays = [evaluate(d, env) for d in decl["array_dims"]]
    if None in sizes or None in arrays:
        return None, None
    declared = sizes * 2 if len(sizes) == 1 and decl["kind"] in SQUARE else sizes
    return math.prod(declared) * math.prod(arrays), free_size(decl, sizes) * math.prod(arrays)


def index_set(index: list[str] | None, loops: tuple, env: dict, n: int) -> set[int] | None:
    """The elements (1-based) that one density statement's first index covers, from a literal, a range or the
    range of an enclosing loop's variable; None for all of them or where this evaluator cannot tell."""
    if index is None or index in ([], [":"]):
        return None
    ends = split_top(index, ":")
    if len(ends) == 2:
        lo, hi = (evaluate(ends[0], env) if ends[0] else 1), (evaluate(ends[1], env) if ends[1] else n)
        return None if lo is None or hi is None else set(range(lo, hi + 1))
    if len(index) == 1 and index[0].isdigit():
        return {int(index[0])}
    if index[0] == "{" and index[-1] == "}" and all(t.isdigit() for t in index[1:-1:2]):
        return {int(t) for t in index[1:-1:2]}
    loop = [lp for lp in loops if [lp[0]] == index]
    if loop and loop[-1][1] is not None:
        lo, hi = evaluate(loop[-1][1], env), evaluate(loop[-1][2], env)
        return None if lo is None or hi is None else set(range(lo, hi + 1))
    return None


def uncovered(decl: dict, cover: list, env: dict) -> list[int]:
    """The elements of a parameter's first dimension that none of its density statements covers."""
    first = (decl["array_dims"] or decl["dims"] or [None])[0]
    n = evaluate(first, env) if first is not None else None
    if n is None:
        return []
    covered = set()
    for index, loops in cover:
        found = index_set(index, loops, env, n)
        if found is None:
            return []
        covered |= found
    return sorted(set(range(1, n + 1)) - covered)


def _ranges(elements: list[int]) -> str:
    """``[1, 2, 3, 7]`` as ``"1:3, 7"``."""
    runs = []
    for e in elements:
        if runs and e == runs[-1][1] + 1:
            runs[-1][1] = e
        else:
            runs.append([e, e])
    return ", ".join(f"{a}:{b}" if b > a else f"{a}" for a, b in runs)


def classify(code: str, data: dict | None, *, has_data: bool | None = None) -> dict:
    """Reasons and per-parameter findings for one Stan program and its data.

    ``has_data`` says whether the posterior has data where ``data`` is None because its file could not be read
    (sizes are then unknown); by default, whether ``data`` is given.

    Returns
    -------
    dict
        ``reasons`` (list of str, empty when log p(y) exists and is computable here in principle),
        ``num_parameters`` (int or None) and ``parameters`` (name: size, support, prior).
    """
    program = parse_program(code)
    analysis = Analysis(program)
    env = data_env(program, data or {})
    info, improper, unclear, discrete = {}, [], [], False
    for name, decl in program["params"].items():
        words, bounded = support(decl)
        limits = [decl["bounds"][k] for k in ("lower", "upper") if k in decl["bounds"]]
        on_bounds = analysis.depends(sum(limits, []), analysis.env)[0] - {name}
        if decl["kind"] == "int":
            discrete, prior = True, "discrete"
        elif name in analysis.direct:
            missing = uncovered(decl, analysis.cover[name], env)
            prior = "density statement"
            if missing and not bounded:
                prior = f"none on elements {_ranges(missing)} (improper: flat on an unbounded support)"
                name = f"{name}[{_ranges(missing)}]"
            elif missing:
                prior = f"density statement; elements {_ranges(missing)} uniform on the bounded support"
        elif on_bounds and bounded and all(bounded_region(b, program) for b in limits):
            prior = f"uniform (no statement) on a bounded region: bounds linear in bounded {', '.join(on_bounds)}"
        elif on_bounds:
            prior = f"unclear: its bounds depend on {', '.join(sorted(on_bounds))}"
        elif bounded and name in analysis.indirect:
            prior = f"bounded support, a density only on an expression of it ({analysis.indirect[name]})"
        elif bounded:
            prior = "uniform (no statement, bounded support)"
        elif name in analysis.indirect:
            prior = f"unclear: a density only on an expression of it ({analysis.indirect[name]})"
        elif name in analysis.raw:
            prior = f"unclear: only a hand-written target term ({_shorten(analysis.raw[name])})"
        else:
            prior = "none (improper: flat on an unbounded support)"
        (improper if prior.startswith("none") else unclear if prior.startswith("unclear") else []).append(name)
        size, free = size_of(decl, env)
        info[decl["name"]] = {"size": size, "free": free, "support": words, "prior": prior}
    reasons = []
    if not (data if has_data is None else has_data):
        reasons.append("no data")
    if improper:
        reasons.append(f"improper prior: {', '.join(improper)}")
    if unclear:
        reasons.append("prior unclear: " + "; ".join(
            f"{p}: {info[p]['prior'][len('unclear: '):]}" for p in unclear))
    if discrete:
        reasons.append("discrete parameter")
    solvers = sorted(set(ODE.findall(_COMMENT.sub(" ", code))))
    if solvers:
        reasons.append(f"ODE: {', '.join(solvers)}")
    if ALGEBRAIC.search(_COMMENT.sub(" ", code)):
        reasons.append("algebraic solver")
    sizes, free = [v["size"] for v in info.values()], [v["free"] for v in info.values()]
    return {"reasons": reasons, "num_parameters": None if None in sizes else sum(sizes),
            "num_free": None if None in free else sum(free), "parameters": info}


def _shorten(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."


# ------------------------------------------------------------------------------------------- posteriordb


def _git(pdb: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(pdb), *args], check=True, capture_output=True).stdout


def _data(pdb: Path, name: str) -> dict | None:
    """A data set of posteriordb, or None where its blob is absent from the snapshot (read as unknown sizes)."""
    try:
        raw = _git(pdb, "show", f"HEAD:posterior_database/data/data/{name}.json.zip")
        z = zipfile.ZipFile(io.BytesIO(raw))
        return json.loads(z.read(z.namelist()[0]))
    except (subprocess.CalledProcessError, zipfile.BadZipFile):
        return None


def census(pdb: Path, ported: set[str]) -> list[dict]:
    """One record per posterior of the posteriordb git directory ``pdb``."""
    base = "posterior_database"
    listing = _git(pdb, "ls-tree", "-r", "--name-only", "HEAD", base).decode().splitlines()
    names = sorted(Path(p).name[:-5] for p in listing if p.startswith(f"{base}/posteriors/") and p.endswith(".json"))
    drawn = {Path(p).name[:-9] for p in listing if p.startswith(f"{base}/reference_posteriors/draws/draws/")}
    datas = {Path(p).name[:-9] for p in listing if p.startswith(f"{base}/data/data/")}
    records = []
    for name in names:
        post = json.loads(_git(pdb, "show", f"HEAD:{base}/posteriors/{name}.json"))
        model, data_name = post["model_name"], post.get("data_name")
        code = _git(pdb, "show", f"HEAD:{base}/models/stan/{model}.stan").decode()
        data = _data(pdb, data_name) if data_name else None
        found = classify(code, data, has_data=data_name in datas)
        records.append({"posterior": name, "model": model, "data": data_name, "has_reference_draws": name in drawn,
                        "reference_posterior": post.get("reference_posterior_name"), "ported": name in ported,
                        "num_parameters": found["num_parameters"], "num_free": found["num_free"],
                        "reason": "; ".join(found["reasons"]) or None, "reasons": found["reasons"],
                        "parameters": found["parameters"]})
    return records


def category(reason: str) -> str:
    """A reason's kind: the text before its first colon (``"improper prior"``, ``"ODE"``, ...)."""
    return reason.split(":")[0]


def counts(records: list[dict]) -> dict[str, int]:
    """Posteriors by reason kind (a posterior with several reasons counts under each), and ``"none"``."""
    c = Counter(category(r) for rec in records for r in rec["reasons"])
    c["none"] = sum(not rec["reasons"] for rec in records)
    return dict(sorted(c.items()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdb", type=Path, required=True, help="posteriordb git directory (checkout or bare)")
    parser.add_argument("--out", type=Path, default=OUT, help="census file (default data/posteriordb/census.json)")
    a = parser.parse_args(argv)
    if not (a.pdb / "HEAD").exists() and not (a.pdb / ".git").exists():
        raise OptionError(f"--pdb {a.pdb} is not a git directory")
    from posteriordb_models import POSTERIORS  # JAX and NumPyro: only for the list of ports

    records = census(a.pdb, set(POSTERIORS))
    commit = _git(a.pdb, "rev-parse", "HEAD").decode().strip()
    drawn = [r for r in records if r["has_reference_draws"]]
    summary = {"all": counts(records), "with_reference_draws": counts(drawn)}
    write_text(a.out, json.dumps({"source": {"repository": "stan-dev/posteriordb", "commit": commit},
                                  "counts": summary, "posteriors": records}, indent=1) + "\n")
    print(f"{len(records)} posteriors, {len(drawn)} with reference draws (posteriordb {commit[:7]})")
    for label, c in summary.items():
        print(f"{label}: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    for r in records:
        if any(category(x) == "prior unclear" for x in r["reasons"]):
            print(f"  {r['posterior']}: {r['reason']}")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
