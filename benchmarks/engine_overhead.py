"""The annealing engine's overhead over a hand-written JAX scan of the same kernel, measured side by side.

Three ways to run forward AIS with the same HMC transition (``bdmc.kernels.HMC`` through its cached-state
interface, ``init_state`` / ``step``: the engine's own lean path), on ``bdmc.models.LinearRegression()``:

* hand     -- one ``jax.jit`` of a ``lax.scan`` over the T - 1 transitions, chains under ``vmap``: the weight
              increment from the cached likelihood terms, then one ``kernel.step``. Nothing else.
* hand-run-options -- the same scan compiled with the XLA options the engine gives a run's steps
              (``bdmc.caching.RUN_COMPILE``): the engine's overhead net of the compiler's settings.
* anneal   -- ``bdmc.anneal`` on the same start, path and key (the engine: failure and divergence bookkeeping,
              ESS and acceptance records, chunked compiled calls, the finish program).
* estimator -- ``bdmc.forward_ais(tune="off")`` (the engine plus the prior draws, the prior check at 1,024
              exact prior draws, weight health and the Estimate).
* hand-ais -- a whole forward AIS written by hand, like for like with the estimator: the caller's key split as
              the engine splits it, the prior draws, the hand scan and the log-mean-exp of the weights, in one
              ``jax.jit``.
* anneal-1chunk, anneal-unrecorded -- the engine in one chunk of T steps, and the engine with its recording of
              each chain's first NaN or +inf density replaced by nothing: what chunking and the recording cost.

Warm seconds are the median of ``--repeats`` calls, the three interleaved round-robin so that load hits all
alike; every row carries the load average and a timestamp. Cold (first call, compilation included) is shown
too, in the order hand, anneal, estimator: the estimator's first call reuses the engine programs ``anneal``
compiled, so only hand against anneal is like for like cold. The numbers agree: ``anneal``'s and the
estimator's log-weights equal the hand scan's to 1e-9 (checked on every run of the script).

    python benchmarks/engine_overhead.py                 # T = 1000 (7 repeats) and T = 10 (41), 16 and 256 chains
    python benchmarks/engine_overhead.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import bdmc
from bdmc.caching import compile_run
from bdmc.core import schedules
from bdmc.core.prior import EXACT_AFTER, draw_prior, prior_draws
from bdmc.kernels import HMC
from bdmc.models import LinearRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.pages import write_folder  # noqa: E402
from harness.store import append_row, write_text  # noqa: E402

bdmc.enable_x64()
# A T = 10 estimate's ± is untrusted on every call; the timing, not the warning, is measured here.
warnings.filterwarnings("ignore", category=bdmc.UntrustedStderrWarning)
OUT = Path(__file__).resolve().parent / "results" / "engine_overhead"


def hand_scan(kernel, model):
    """The bare AIS scan: nothing but the weight increments and the kernel's transitions."""
    like = jax.eval_shape(model.sample_prior, jax.random.key(0))

    def run(key, latents, data, lams):
        states = jax.vmap(lambda x: kernel.init_state(x, data))(latents)
        chains = jax.tree.leaves(latents)[0].shape[0]

        def body(carry, t):
            states, log_w = carry
            log_w = log_w + (lams[t + 1] - lams[t]) * jax.vmap(lambda s: jnp.sum(kernel.state_terms(s)))(states)
            move = jax.random.split(jax.random.fold_in(key, t), 3)[2]  # the engine's key convention
            keys = jax.random.split(move, chains)
            states, info = jax.vmap(lambda k, s: kernel.step(k, s, data, lams[t + 1], like=like))(keys, states)
            return (states, log_w), jnp.mean(info.acceptance)

        (_, log_w), acceptance = jax.lax.scan(body, (states, jnp.zeros(chains, lams.dtype)),
                                              jnp.arange(lams.shape[0] - 1))
        return log_w, acceptance

    return jax.jit(run)


def hand_ais(kernel, model, chains: int):
    """A hand-written forward AIS: the key split and prior draws of ``bdmc.core.prior.draw_prior``, the hand scan and
    the log-mean-exp of the weights, one compiled call from the caller's key to the estimate."""
    scan = hand_scan(kernel, model)

    def run(key, data, lams):
        latents, key_run = draw_prior(key, model, chains)
        log_w, _ = scan(key_run, latents, data, lams)
        return log_w, jax.scipy.special.logsumexp(log_w) - jnp.log(chains)

    return jax.jit(run)


def unrecorded(fn):
    """``fn`` run with the engine's failure recording replaced by nothing (its own compiled programs): what the
    recording of each chain's first NaN or +inf density costs. A measurement only: such a run would miss bugs."""
    from bdmc.caching import CompiledCache
    from bdmc.core import engine

    cache = CompiledCache("engine without failure recording")

    def checked(f, like=None):
        def wrapped(*args):
            return jnp.zeros((), bool), (args[-1] if like is None else like), f(*args)
        return wrapped

    def flagged(f):
        return lambda *args: (jnp.zeros((), bool), f(*args))

    def run():
        saved = engine.checked, engine.flagged, engine._COMPILED
        engine.checked, engine.flagged, engine._COMPILED = checked, flagged, cache
        try:
            return fn()
        finally:
            engine.checked, engine.flagged, engine._COMPILED = saved
    return run


def timed(fn):
    began = time.perf_counter()
    out = fn()
    jax.block_until_ready(out)
    return time.perf_counter() - began, out


def measure(num_steps: int, chains: int, repeats: int, *, rows_path: Path | None = None) -> list[dict]:
    model = LinearRegression()
    data, _ = bdmc.simulate(jax.random.key(0), model)
    kernel = HMC(model, step_size=0.05, num_integration_steps=10)
    lams = jnp.asarray(schedules.linear(num_steps))
    latents, key_run = prior_draws(jax.random.key(1), model, chains)
    hand = hand_scan(kernel, model)
    # The same scan compiled with the options the engine compiles a run's steps with (bdmc.caching.RUN_COMPILE):
    # the engine's overhead net of the compiler's settings.
    hand_run = compile_run(hand.lower(key_run, latents, data, lams))
    whole = hand_ais(kernel, model, chains)
    contenders = {
        "hand": lambda: hand(key_run, latents, data, lams)[0],
        "hand-run-options": lambda: hand_run(key_run, latents, data, lams)[0],
        "anneal": lambda: bdmc.anneal(key_run, model, data, kernel, np.asarray(lams), latents,
                                      progress=False).log_weights,
        # Apportioning: the engine in one chunk (no chunking), and without its failure recording.
        "anneal-1chunk": lambda: bdmc.anneal(key_run, model, data, kernel, np.asarray(lams), latents,
                                             chunk_size=num_steps, progress=False).log_weights,
        "anneal-unrecorded": unrecorded(lambda: bdmc.anneal(key_run, model, data, kernel, np.asarray(lams),
                                                            latents, progress=False).log_weights),
        "hand-ais": lambda: whole(jax.random.key(1), data, lams)[0],
        "estimator": lambda: bdmc.forward_ais(jax.random.key(1), model, data, num_steps=num_steps, num_runs=chains,
                                              kernel=kernel, schedule="linear", tune="off", progress=False).runs,
    }
    cold, outs = {}, {}
    for name, fn in contenders.items():
        cold[name], outs[name] = timed(fn)
    # The same computation: the engine's weights are the hand scan's (same keys, same start).
    np.testing.assert_allclose(np.asarray(outs["anneal"]), np.asarray(outs["hand"]), rtol=1e-9, atol=1e-9)
    for name in contenders:
        np.testing.assert_allclose(np.asarray(outs[name]), np.asarray(outs["hand"]), rtol=1e-9, atol=1e-9)
    warm = {name: [] for name in contenders}
    rows = []
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    for r in range(repeats):
        for name, fn in contenders.items():  # round-robin: load drifts hit every contender alike
            seconds, _ = timed(fn)
            warm[name].append(seconds)
            rows.append({"num_steps": num_steps, "chains": chains, "contender": name, "repeat": r,
                         "seconds": seconds, "load": os.getloadavg()[0], "commit": commit,
                         "time": datetime.now(UTC).isoformat(timespec="seconds"),
                         "prior_pool_calls": EXACT_AFTER - 1})
            if rows_path is not None:
                append_row(rows_path, rows[-1])  # stamped with its provenance, as it finishes
    summary = []
    base = statistics.median(warm["hand"])
    for name in contenders:
        med = statistics.median(warm[name])
        summary.append({"num_steps": num_steps, "chains": chains, "contender": name, "warm_median_s": med,
                        "warm_ratio_to_hand": med / base, "cold_s": cold[name],
                        "us_per_chain_step": 1e6 * med / (chains * (num_steps - 1)), "commit": commit})
    return rows, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--chains", default="16,256")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--short-steps", type=int, default=10, help="T of the short runs (a call's fixed cost)")
    parser.add_argument("--short-repeats", type=int, default=41)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--render", action="store_true", help="re-render the pages from the stored rows and stop")
    args = parser.parse_args()
    if args.render:
        write_folder("engine_overhead")
        return
    if args.quick:
        args.steps, args.chains, args.repeats = 200, "16", 3
    OUT.mkdir(parents=True, exist_ok=True)
    all_rows, all_summary = [], []
    rows_path = None if args.quick else OUT / "rows.jsonl"
    if rows_path is not None:
        write_text(rows_path, "")  # a full run replaces the last one's rows (nothing here resumes)
    for chains in map(int, args.chains.split(",")):
        rows, summary = measure(args.steps, chains, args.repeats, rows_path=rows_path)
        all_rows += rows
        all_summary += summary
        for s in summary:
            print(f"T={s['num_steps']} chains={s['chains']:4d} {s['contender']:9s} warm {s['warm_median_s']:.4f} s "
                  f"({s['warm_ratio_to_hand']:.3f}x hand, {s['us_per_chain_step']:.2f} us/chain-step), "
                  f"cold {s['cold_s']:.2f} s", flush=True)
    if not args.quick:
        write_text(OUT / "summary.json", json.dumps(all_summary, indent=1) + "\n")
        # Short runs, where a call's fixed cost (dispatches, checks, the Estimate) is most of its time.
        short_path, short_summary = OUT / "short_rows.jsonl", []
        write_text(short_path, "")
        for chains in map(int, args.chains.split(",")):
            _, summary = measure(args.short_steps, chains, args.short_repeats, rows_path=short_path)
            short_summary += summary
            for s in summary:
                print(f"T={s['num_steps']} chains={s['chains']:4d} {s['contender']:9s} warm "
                      f"{1e3 * s['warm_median_s']:.3f} ms ({s['warm_ratio_to_hand']:.3f}x hand)", flush=True)
        write_text(OUT / "short_summary.json", json.dumps(short_summary, indent=1) + "\n")
    write_folder("engine_overhead")


if __name__ == "__main__":
    main()
