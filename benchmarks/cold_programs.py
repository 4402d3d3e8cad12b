"""Where a cold first call's time goes: every program a fresh process compiles for its first call, with its seconds.

A first call in a fresh process traces each of its JAX programs, lowers it to StableHLO and compiles it (or, with
JAX's persistent compilation cache warm, loads the compiled program from disk). ``peers_cold.py`` times the whole
call; this script takes it apart. For each tool and problem (``peer_tools.make``, the tool's smallest budget, as
``peers_cold.py`` does) and each round it runs, in fresh processes:

- ``cold-cache``: a filler process first (another seed) fills the disk caches, as ``peers_cold.py``'s
  ``cold-cache`` kind; then the measured process makes its first call.
- ``cold-nocache``: the measured process with every disk cache empty and JAX's persistent cache off.

Inside the measured process JAX's own compile log (``jax_log_compiles``) names every program and the seconds of
its three stages: tracing, lowering to StableHLO, and XLA's compilation (a disk-cache load when the cache hits).
One more process per tool and problem, not timed, keeps every lowered module (``jax_dump_ir_to``), whose line
count is the program's size. Rows (``<out>/rows.jsonl``, one per measured process, its programs listed) are
written as each process ends, stamped with the load, time, commit and whether the tree was clean; a rerun skips
finished rows. Tools and problems are interleaved round-robin.

    python benchmarks/cold_programs.py                       # ~10 min
    python benchmarks/cold_programs.py --render              # the page from the stored rows
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "cold_programs"
TOOLS = ("bdmc-tsmc", "bdmc-ais", "blackjax", "tfp")
PROBLEMS = ("schools", "regression")
KINDS = ("cold-cache", "cold-nocache")
TRACED = re.compile(r"Finished tracing (?:\+ transforming )?(?P<name>\S+) for \w+ in (?P<s>[0-9.e-]+) sec")
COMPILING = re.compile(r"Compiling (?:jit|pjit)\((?P<name>[^)]*)\)")
LOWERED = re.compile(r"Finished jaxpr to MLIR module conversion \w+\((?P<name>[^)]*)\) in (?P<s>[0-9.e-]+) sec")
CACHE_HIT = re.compile(r"Persistent compilation cache hit for '(?P<name>[^']*)'")
COMPILED = re.compile(r"Finished XLA compilation of \w+\((?P<name>[^)]*)\) in (?P<s>[0-9.e-]+) sec")


def programs_from_log(lines: list[str]) -> tuple[list[dict], float]:
    """The programs a compile log names, in order: ``name``, ``trace_s``, ``lower_s``, ``compile_s`` and
    ``cache_hit``; and the seconds spent tracing functions that were never compiled (shape evaluations)."""
    programs, pending = [], {}
    for line in lines:
        if m := TRACED.search(line):
            pending[m["name"]] = pending.get(m["name"], 0.0) + float(m["s"])
        elif m := COMPILING.search(line):
            programs.append({"name": m["name"], "trace_s": pending.pop(m["name"], 0.0), "lower_s": 0.0,
                             "compile_s": 0.0, "cache_hit": False})
        elif programs and (m := LOWERED.search(line)):
            programs[-1]["lower_s"] = float(m["s"])
        elif programs and CACHE_HIT.search(line):
            programs[-1]["cache_hit"] = True
        elif programs and (m := COMPILED.search(line)):
            programs[-1]["compile_s"] = float(m["s"])
    return programs, sum(pending.values())


def child(problem: str, tool: str, budget: str, seed: int, cache: str | None, dump: str | None) -> None:
    """Inside the fresh process: import, build, call once with JAX's compile log on; print one JSON line."""
    sys.path.insert(0, str(HERE))
    import jax

    import bdmc

    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    jax.config.update("jax_log_compiles", True)
    for name in ("jax._src.interpreters.pxla", "jax._src.dispatch", "jax._src.compiler", "jax._src.pjit",
                 "jax._src.compilation_cache"):
        log = logging.getLogger(name)
        log.addHandler(Keep())
        log.setLevel(logging.DEBUG)
        log.propagate = False
    if dump is not None:
        jax.config.update("jax_dump_ir_to", dump)
        jax.config.update("jax_dump_ir_modes", "stablehlo")
    if cache is not None:
        bdmc.enable_compilation_cache(cache)
    bdmc.enable_x64()
    import peer_tools

    built = time.perf_counter()
    run = peer_tools.make_named(tool, problem, budget)
    lines.clear()  # the call's programs only
    earlier = set(Path(dump).glob("*.mlir")) if dump is not None else set()
    began = time.perf_counter()
    run(seed)
    call = time.perf_counter() - began
    programs, shapes = programs_from_log(lines)
    modules = [] if dump is None else [
        {"module": f.name.split("_", 2)[2].removesuffix(".mlir").removesuffix("_compile"),
         "lines": sum(1 for _ in f.open())} for f in sorted(set(Path(dump).glob("*.mlir")) - earlier)]
    print(json.dumps({"call_seconds": call, "setup_seconds": began - built, "programs": programs,
                      "shape_trace_seconds": shapes, "modules": modules}))


def spawn(problem, tool, budget, seed, folder: Path, *, cache: bool, dump: Path | None = None) -> dict:
    """One fresh process's first call; ``folder`` holds its caches."""
    env = dict(os.environ, XDG_CACHE_HOME=str(folder / "xdg"), BDMC_CACHE_DIR=str(folder / "bdmc"),
               BDMC_PILOT_CACHE="1" if cache else "0", PYTENSOR_FLAGS=f"compiledir={folder / 'pytensor'}")
    args = [sys.executable, __file__, "--child", problem, tool, json.dumps(budget), str(seed)]
    if cache:
        args += ["--cache", str(folder / "jax")]
    if dump is not None:
        args += ["--dump", str(dump)]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} on {problem} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sizes(problem, tool, budget) -> list[dict]:
    """Every module a first call lowers (an untimed process with the IR dump on): its name and lines."""
    with tempfile.TemporaryDirectory(prefix="bdmc-cold-programs-") as folder:
        dump = Path(folder) / "ir"
        return spawn(problem, tool, budget, 7, Path(folder), cache=False, dump=dump)["modules"]


def measure(problems, tools, rounds: int, out: Path) -> None:
    """``rounds`` rounds, tools interleaved within each problem; each row appended as its process ends."""
    sys.path.insert(0, str(HERE))
    from harness.store import append_row, load_rows, tree_state
    from peer_tools import BUDGETS

    rows_path = out / "rows.jsonl"
    done = {(r["problem"], r["tool"], r["kind"], r["round"]) for r in load_rows(rows_path)}
    sized = {(r["problem"], r["tool"]) for r in load_rows(out / "sizes.jsonl")}
    commit, clean = tree_state()
    for problem in problems:
        for tool in tools:
            if (problem, tool) not in sized:
                append_row(out / "sizes.jsonl", {"problem": problem, "tool": tool,
                                                 "modules": sizes(problem, tool, BUDGETS[tool][0])})
        for round_ in range(rounds):
            for tool in tools:
                for kind in KINDS:
                    if (problem, tool, kind, round_) in done:
                        continue
                    budget = BUDGETS[tool][0]
                    with tempfile.TemporaryDirectory(prefix="bdmc-cold-programs-") as folder:
                        if kind == "cold-cache":  # another seed fills the caches first
                            spawn(problem, tool, budget, 1000 + round_, Path(folder), cache=True)
                        load_before, started = os.getloadavg()[0], time.time()
                        result = spawn(problem, tool, budget, round_, Path(folder), cache=kind == "cold-cache")
                    row = {"problem": problem, "tool": tool, "budget": budget, "kind": kind, "round": round_,
                           **result, "load_before": load_before, "load_after": os.getloadavg()[0],
                           "time": started, "commit": commit, "clean_tree": clean}
                    append_row(rows_path, row)
                    stages = sum(p["trace_s"] + p["lower_s"] + p["compile_s"] for p in result["programs"])
                    print(f"{problem:10s} {tool:10s} {kind:12s} round {round_} call {result['call_seconds']:6.2f}s "
                          f"programs {len(result['programs']):3d} stages {stages:6.2f}s load {load_before:.2f}",
                          flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", nargs=4, metavar=("PROBLEM", "TOOL", "BUDGET", "SEED"), help=argparse.SUPPRESS)
    ap.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--dump", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--rounds", type=int, default=3, help="measured processes per (problem, tool, kind)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--render", action="store_true", help="only re-render the page from the stored rows")
    args = ap.parse_args(argv)
    if args.child:
        problem, tool, budget, seed = args.child
        child(problem, tool, budget, int(seed), args.cache, args.dump)
        return
    sys.path.insert(0, str(HERE))
    from harness.pages import write_folder

    if not args.render:
        measure(args.problems.split(","), args.tools.split(","), args.rounds, args.out)
    write_folder("cold_programs", written_to=args.out)


if __name__ == "__main__":
    main()
