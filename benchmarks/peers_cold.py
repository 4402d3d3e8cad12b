"""Cold first calls, measured two ways for every tool of ``peers.py``: no disk caches, and everyone's disk caches warm.

A cold call is a fresh Python process that imports the tool, builds its run (the model, the jitted function)
and makes one call on one problem: what a user's first call costs. Each is timed inside its own process
(``setup_seconds`` to build, ``call_seconds`` for the call, their sum ``seconds``; the import of bdmc, JAX and
the tool is ``import_seconds``, reported apart because every tool pays about the same).

- ``cold-nocache``: every disk cache empty. JAX's persistent compilation cache is off and the process's cache
  folders (``XDG_CACHE_HOME``, PyTensor's ``compiledir``) are new, empty folders.
- ``cold-cache``: the same call again in a new process whose caches a previous process filled: JAX's
  persistent compilation cache on (``bdmc.enable_compilation_cache``, which every JAX tool then shares) and
  PyTensor's compiled C kept. The process that filled them ran another seed. bdmc's store of frozen pilots
  (``bdmc.core.pilot_store``, on) is one of those caches: a pilot draws on its own seed (``Pilot.seed``), not
  the caller's key, so the other seed's call stored the very choice this call's pilot would make, and it is
  loaded (rows before that change, at c89aea3 and earlier, ran their pilot here).
- ``cold-rerun``: the very same call once more (a script run again): every cache warm.

Tools are interleaved round-robin (problem by problem, every tool once per round, no-cache then cache), and
every row records the load before and after, the time, the commit and whether the tree was clean. Rows go to
``<out>/cold.jsonl`` as each call finishes; a rerun skips finished rows.

A fresh process also imports its tool before its first call. ``--imports N`` measures that alone: N fresh
processes per package (bdmc, BlackJAX, PyMC, TensorFlow Probability's JAX substrate, and JAX, which all of them
import), interleaved round-robin, each timing ``import <package>`` inside itself (the interpreter's start left
out); ``--before REV`` adds bdmc as it was at commit REV (its ``src/`` exported to a temporary folder and put first
on ``PYTHONPATH``) to the same rounds. Rows go to ``<out>/imports.jsonl``.

    python benchmarks/peers_cold.py --repeats 2
    python benchmarks/peers_cold.py --problems schools --tools bdmc-tsmc,blackjax --repeats 1
    python benchmarks/peers_cold.py --imports 7 --before 3be7c5b
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "peers"
KINDS = ("cold-nocache", "cold-cache", "cold-rerun")
PACKAGES = {"bdmc": "bdmc", "blackjax": "blackjax", "pymc": "pymc", "tfp": "tensorflow_probability.substrates.jax",
            "jax": "jax"}
IMPORT_PROBE = ("import importlib, json, sys, time; began = time.perf_counter(); importlib.import_module(sys.argv[1]); "
                "print(json.dumps({'import_seconds': time.perf_counter() - began}))")


def child(problem: str, tool: str, budget: str, seed: int, cache: str | None) -> None:
    """Inside the fresh process: import, build, call once, print one JSON line."""
    began = time.perf_counter()
    sys.path.insert(0, str(HERE))
    import jax  # noqa: F401

    import bdmc

    if cache is not None:
        bdmc.enable_compilation_cache(cache)
    bdmc.enable_x64()
    import peer_tools

    imported = time.perf_counter()
    run = peer_tools.make_named(tool, problem, budget)
    built = time.perf_counter()
    out = run(seed)
    done = time.perf_counter()
    print(json.dumps({"log_z": out["log_z"], "import_seconds": imported - began, "setup_seconds": built - imported,
                      "call_seconds": done - built, "seconds": done - imported}))


def tree_state() -> tuple[str, bool]:
    """:func:`harness.store.tree_state` (imported here, not at the top: a child process must not pay for the
    store's imports)."""
    sys.path.insert(0, str(HERE))
    from harness.store import tree_state as state

    return state()


def measure(problem, tool, budget, seed, kind, folder: Path) -> dict:
    """One cold call in a new process; ``folder`` holds its caches (fresh for no-cache, kept for cache)."""
    env = dict(os.environ, XDG_CACHE_HOME=str(folder / "xdg"), PYTENSOR_FLAGS=f"compiledir={folder / 'pytensor'}",
               BDMC_CACHE_DIR=str(folder / "bdmc"), BDMC_PILOT_CACHE="0" if kind == "cold-nocache" else "1")
    cache = str(folder / "jax") if kind != "cold-nocache" else None
    args = [sys.executable, __file__, "--child", problem, tool, json.dumps(budget), str(seed)]
    if cache is not None:
        args += ["--cache", cache]
    load_before, started = os.getloadavg()[0], time.time()
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} on {problem} failed:\n{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"problem": problem, "tool": tool, "budget": budget, "seed": seed, "kind": kind, **out,
            "load_before": load_before, "load_after": os.getloadavg()[0], "time": started,
            **dict(zip(("commit", "clean_tree"), tree_state(), strict=False))}


def measure_imports(repeats: int, before: str | None, out: Path) -> None:
    """``repeats`` rounds of one fresh process per package (and bdmc at ``before``), each timing its own import."""
    from harness.store import append_row

    contenders = [(name, module, None) for name, module in PACKAGES.items()]
    with tempfile.TemporaryDirectory(prefix="bdmc-before-") as old:
        if before is not None:
            archive = subprocess.run(["git", "archive", before, "src"], cwd=HERE.parent, capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
            contenders.insert(1, (f"bdmc@{before}", "bdmc", str(Path(old) / "src")))
        commit, clean = tree_state()
        for round_ in range(repeats):
            for name, module, path in contenders:
                env = dict(os.environ, **({"PYTHONPATH": path} if path else {}))
                load_before, started = os.getloadavg()[0], time.time()
                proc = subprocess.run([sys.executable, "-c", IMPORT_PROBE, module], capture_output=True, text=True,
                                      env=env, timeout=600, check=True)
                row = {"package": name, "module": module, "round": round_,
                       **json.loads(proc.stdout.strip().splitlines()[-1]), "load_before": load_before,
                       "load_after": os.getloadavg()[0], "time": started, "commit": commit, "clean_tree": clean}
                append_row(out / "imports.jsonl", row)
                print(f"import {name:16s} round {round_} {row['import_seconds']:6.2f}s load {load_before:.2f}",
                      flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", nargs=4, metavar=("PROBLEM", "TOOL", "BUDGET", "SEED"), help=argparse.SUPPRESS)
    ap.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--problems", default="schools,regression,correlated,pima,narrow")
    ap.add_argument("--tools", default="bdmc-ais,bdmc-smc,bdmc-tsmc,blackjax,pymc,tfp")
    ap.add_argument("--repeats", type=int, default=2, help="cold calls per (problem, tool, kind) (default 2)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--imports", type=int, default=0, metavar="N",
                    help="only time each package's import, N fresh processes each (the module docstring)")
    ap.add_argument("--before", default=None, metavar="REV", help="with --imports: also bdmc as it was at REV")
    ap.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = ap.parse_args(argv)
    if args.render:
        from harness.pages import write_folder

        write_folder("peers")
        return
    if args.child:
        problem, tool, budget, seed = args.child
        child(problem, tool, budget, int(seed), args.cache)
        return
    sys.path.insert(0, str(HERE))
    from harness.pages import write_folder
    from harness.store import append_row
    from peer_tools import BUDGETS

    if args.imports:
        args.out.mkdir(parents=True, exist_ok=True)
        measure_imports(args.imports, args.before, args.out)
        write_folder("peers", written_to=args.out)
        return

    from bdmc.experiments.store import read_jsonl

    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "cold.jsonl"
    done = {(r["problem"], r["tool"], r["kind"], r["seed"]) for r in read_jsonl(path)} if path.exists() else set()
    tools = args.tools.split(",")
    for problem in args.problems.split(","):
        for seed in range(args.repeats):
            folders = {tool: Path(tempfile.mkdtemp(prefix=f"cold-{tool}-")) for tool in tools}
            try:
                for kind in KINDS:
                    for tool in tools:  # round-robin: every tool once per kind and repeat
                        if (problem, tool, kind, seed) in done:
                            continue
                        budget = BUDGETS[tool][0]
                        if kind == "cold-cache" and not (folders[tool] / "jax").exists():
                            measure(problem, tool, budget, seed + 1000, "prime", folders[tool])  # fill the caches
                        row = measure(problem, tool, budget, seed, kind, folders[tool])
                        append_row(path, row)
                        print(f"{problem:11s} {tool:10s} {kind:13s} seed {seed} {row['seconds']:7.2f}s "
                              f"(import {row['import_seconds']:.2f}s) load {row['load_before']:.2f}", flush=True)
            finally:
                for folder in folders.values():
                    shutil.rmtree(folder, ignore_errors=True)
    write_folder("peers", written_to=args.out)


if __name__ == "__main__":
    main()
