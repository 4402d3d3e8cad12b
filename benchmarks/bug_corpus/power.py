"""How often the audit's checks see each bug of the corpus, and how often they fire on the correct twins.

For every program of ``corpus.BUGS`` and its correct twin, at each seed, the audit's checks that need no
posterior sampler run exactly as ``bdmc.audit`` runs them (same keys, ``Budget.quick()``, each at its share of
the audit's level 0.01: 0.01 / 4 for a program audited under its PPL's NUTS, 0.01 / 5 with a user's kernel,
which adds Geweke): the simulator-vs-density check and prior normalization on every program, and SBC and Geweke
of the user's kernel where the bug is in the kernel. A program the PPL adapter refuses on loading (a structural
check, before any statistical one) counts as seen by ``adapter``. The audit's SBC of the PPL's own NUTS and its
BDMC check are run per seed only with ``--set with-nuts`` (their cost: Stan's NUTS is called once per SBC data
set), on the programs named with ``--only``; ``benchmarks/audit_calibration.py`` measures their false alarms.

Each (program, variant, seed) appends one JSON row to ``rows.jsonl``; a rerun skips rows already there.

    python benchmarks/bug_corpus/power.py --seeds 20            # everything (resumes)
    python benchmarks/bug_corpus/power.py --seeds 2 --only numpyro/mixture stan/half-normal
    python benchmarks/bug_corpus/power.py --render
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import jax

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from corpus import ADAPTER, BDMC, BUGS, GEWEKE, PRIOR, SBC, SIM  # noqa: E402
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, load_rows, tree_state  # noqa: E402

import bdmc  # noqa: E402
from bdmc.auditing import Budget, checks_bdmc, checks_geweke, checks_prior, checks_sbc, checks_simulator  # noqa: E402
from bdmc.auditing.run import resolve_sampler  # noqa: E402
from bdmc.errors import BDMCError  # noqa: E402

bdmc.enable_x64()

LEVEL = 0.01
OUT = HERE.parent / "results" / "bug_corpus"
BUDGET = Budget.quick()
CHECKS = (ADAPTER, SIM, PRIOR, SBC, GEWEKE, BDMC)


def programs() -> list[tuple[str, str, object]]:
    """(key, variant, Bug) of every program: each bug, then each correct twin once."""
    out = [(b.key, "bug", b) for b in BUGS]
    twins = {}
    for b in BUGS:
        twins.setdefault(b.twin, b)
    return out + [(key, "correct", b) for key, b in twins.items()]


def run_checks(seed: int, model, sampler) -> dict:
    """The audit's sampler-free checks (and, with a user's kernel, its SBC and Geweke), keyed as the audit keys
    them, at the audit's per-check level."""
    key = jax.random.key(seed)
    statistical = 4 + (sampler is not None)  # sbc, bdmc, simulator, prior (+ geweke with a kernel)
    each = LEVEL / statistical
    outcomes = [checks_simulator.simulator_outcome(
                    jax.random.fold_in(key, 1), model, num_triples=BUDGET.triples, num_latents=BUDGET.simulator_latents,
                    num_data=BUDGET.simulator_data, num_prior=BUDGET.simulator_prior, level=each),
                checks_prior.prior_outcome(jax.random.fold_in(key, 8), model, num_steps=BUDGET.prior_steps,
                                           num_runs=BUDGET.prior_runs, level=each)]
    if sampler is not None:
        resolved = resolve_sampler(jax.random.fold_in(key, 100), model, sampler, warmup=BUDGET.sbc_warmup,
                                   thin=BUDGET.sbc_thin, num_draws=BUDGET.sbc_draws)
        outcomes.append(checks_sbc.sbc_outcome(
            jax.random.fold_in(key, 2), model, resolved.sampler, label=resolved.label, level=each,
            num_replications=BUDGET.sbc_replications, num_draws=BUDGET.sbc_draws,
            thinning=resolved.settings.get("thinning")))
        outcomes.append(checks_geweke.geweke_outcome(jax.random.fold_in(key, 3), model, resolved.kernel, level=each,
                                                     num_samples=BUDGET.geweke_samples, num_steps=BUDGET.geweke_steps,
                                                     sampler=resolved.label))
    return {o.name: {"verdict": o.verdict, "statistic": o.statistic, "level": o.level} for o in outcomes}


def run_sampler_checks(seed: int, model) -> dict:
    """The audit's checks that run the program's own PPL NUTS (``--set with-nuts``): SBC of that sampler and the
    BDMC check, keyed and levelled as the audit does."""
    key = jax.random.key(seed)
    each = LEVEL / 4  # sbc, bdmc, simulator, prior
    resolved = resolve_sampler(jax.random.fold_in(key, 100), model, "auto", warmup=BUDGET.sbc_warmup,
                               thin=BUDGET.sbc_thin, num_draws=BUDGET.sbc_draws)
    sbc = checks_sbc.sbc_outcome(jax.random.fold_in(key, 2), model, resolved.sampler, label=resolved.label,
                                 level=each, num_replications=BUDGET.sbc_replications, num_draws=BUDGET.sbc_draws,
                                 thinning=resolved.settings.get("thinning"))
    sandwich, _ = checks_bdmc.bdmc_outcome(jax.random.fold_in(key, 4), model, kernel=resolved.kernel,
                                           steps=BUDGET.sandwich_steps, num_runs=BUDGET.sandwich_runs, level=each)
    return {o.name: {"verdict": o.verdict, "statistic": o.statistic, "level": o.level} for o in (sbc, sandwich)}


def run(path: Path, seeds: int, only, shard: str = "0/1", checks_set: str = "sampler-free") -> None:
    commit, clean = tree_state()
    done = {(r["program"], r["variant"], r["seed"]) for r in load_rows(path)
            if r.get("set", "sampler-free") == checks_set}
    built = {}
    todo = [(key, variant, bug) for key, variant, bug in programs() if not only or key in only]
    index, count = (int(x) for x in shard.split("/"))
    # Worker i keeps to program i mod P (one program to compile) and every k-th seed, k the workers sharing it.
    mine = todo[index % len(todo)::count] if count < len(todo) else [todo[index % len(todo)]]
    sharing = max(1, len(range(index % len(todo), count, len(todo)))) if count >= len(todo) else 1
    offset = index // len(todo) if count >= len(todo) else 0
    for seed in range(offset, seeds, sharing):
        for key, variant, bug in mine:
            if (key, variant, seed) in done:
                continue
            if (key, variant) not in built:
                try:
                    built[key, variant] = bug.build(variant == "bug")
                    model, _ = built[key, variant]
                    jax.eval_shape(model.sample_prior, jax.random.key(0))  # a Stan program is built here
                except BDMCError as err:  # the adapter refuses the program: the bug is seen before any check
                    built[key, variant] = err
            load_before, began = os.getloadavg()[0], time.perf_counter()
            if isinstance(built[key, variant], BDMCError):
                checks = {ADAPTER: {"verdict": "fail", "statistic": str(built[key, variant]), "level": None}}
            else:
                model, sampler = built[key, variant]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if checks_set == "with-nuts":
                        checks = run_sampler_checks(seed, model)
                    else:
                        checks = {ADAPTER: {"verdict": "pass", "statistic": "loaded", "level": None},
                                  **run_checks(seed, model, sampler)}
            row = {"program": key, "variant": variant, "ppl": bug.ppl, "seed": seed, "set": checks_set,
                   "checks": checks,
                   "seconds": time.perf_counter() - began, "quick": True, "commit": commit, "clean_tree": clean,
                   "time": time.time(), "load_before": load_before, "load_after": os.getloadavg()[0],
                   "machine": f"{platform.node()} ({os.cpu_count()} cores)"}
            append_row(path, row)
            fired = [n for n, c in checks.items() if c["verdict"] == "fail"]
            print(f"{key:28s} {variant:8s} seed {seed:3d} {row['seconds']:6.1f}s  fired: {', '.join(fired) or '-'}",
                  flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--only", nargs="+", default=None, help="program keys (e.g. stan/half-normal)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--workers", type=int, default=1, help="processes (fresh interpreters), one shard each")
    parser.add_argument("--shard", default="0/1", help="i/N: this process's share (set by --workers)")
    parser.add_argument("--set", dest="checks_set", default="sampler-free", choices=("sampler-free", "with-nuts"),
                        help="the sampler-free checks (default), or SBC of the PPL's own NUTS and the BDMC check")
    parser.add_argument("--render", "--table-only", dest="render", action="store_true",
                        help="re-render the pages from the stored rows and stop")
    args = parser.parse_args(argv)
    if args.render:
        write_folder("bug_corpus")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "rows.jsonl"
    if args.workers > 1:
        argv = list(sys.argv[1:] if argv is None else argv)
        i = argv.index("--workers")
        del argv[i:i + 2]
        env = {**os.environ, "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
               "OMP_NUM_THREADS": "1", "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
        procs = [subprocess.Popen([sys.executable, __file__, *argv, "--shard", f"{i}/{args.workers}"], env=env)
                 for i in range(args.workers)]
        for proc in procs:
            proc.wait()
    else:
        run(path, args.seeds, args.only, args.shard, args.checks_set)
    write_folder("bug_corpus", written_to=args.out)  # renders table.md (a trial --out elsewhere: none)
    if args.shard == "0/1" and (args.out / "table.md").exists():
        print((args.out / "table.md").read_text())


if __name__ == "__main__":
    main()
