"""The compile log of ``benchmarks/cold_programs.py`` read into programs: names, stages, cache hits, in order."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from cold_programs import programs_from_log  # noqa: E402

LOG = [
    "Finished tracing sample_prior for jit in 0.001 sec",  # a shape evaluation: traced, never compiled
    "Finished tracing prior_draws for jit in 0.02 sec",
    "Compiling jit(prior_draws) with global shapes and types (ShapedArray(key<fry>[]),).",
    "Finished jaxpr to MLIR module conversion jit(prior_draws) in 0.2 sec",
    "Persistent compilation cache hit for 'jit_prior_draws' with key 'jit_prior_draws-abc'",
    "Finished XLA compilation of jit(prior_draws) in 0.04 sec",
    "Finished tracing run for jit in 0.25 sec",
    "Compiling jit(run) with global shapes and types (ShapedArray(float64[124]),).",
    "Finished jaxpr to MLIR module conversion jit(run) in 0.21 sec",
    "Finished XLA compilation of jit(run) in 1.5 sec",
]


def test_each_compiled_program_gets_its_own_stages_in_order():
    programs, shapes = programs_from_log(LOG)
    assert [p["name"] for p in programs] == ["prior_draws", "run"]
    assert programs[0] == {"name": "prior_draws", "trace_s": 0.02, "lower_s": 0.2, "compile_s": 0.04,
                           "cache_hit": True}
    assert programs[1] == {"name": "run", "trace_s": 0.25, "lower_s": 0.21, "compile_s": 1.5, "cache_hit": False}
    assert shapes == 0.001


def test_a_program_compiled_twice_under_one_name_is_two_programs():
    twice = LOG[1:6] + [line.replace("0.02", "0.003").replace("0.2 sec", "0.05 sec") for line in LOG[1:6]]
    programs, shapes = programs_from_log(twice)
    assert [(p["name"], p["trace_s"], p["lower_s"]) for p in programs] == [("prior_draws", 0.02, 0.2),
                                                                         ("prior_draws", 0.003, 0.05)]
    assert shapes == 0.0
