"""Numbers quoted by README.md, recomputed from nhefs_cost.json and stan_program_forms.json
(tests/test_results_pages.py checks them)."""

import json
from pathlib import Path


def _cost(folder: Path, implementation: str) -> float:
    rows = json.loads((folder / "nhefs_cost.json").read_text())["rows"]
    return next(r["seconds_per_1000_chain_steps"] for r in rows if r["implementation"] == implementation)


def _ratio(folder: Path, implementation: str) -> float:
    return _cost(folder, implementation) / _cost(folder, "NumPyro")


def _form(folder: Path, model: str) -> dict:
    forms = json.loads((folder / "stan_program_forms.json").read_text())
    return next(f for f in forms if f["model"].startswith(model))


def numpyro_s(folder):
    """NHEFS: NumPyro's seconds per 1,000 chain-steps."""
    return _cost(folder, "NumPyro")


def stan_s(folder):
    """NHEFS: Stan in-process (the shipped program, one thread), seconds per 1,000 chain-steps."""
    return _cost(folder, "Stan in-process")


def stan_x(folder):
    """... over NumPyro's."""
    return _ratio(folder, "Stan in-process")


def httpstan_x(folder):
    """NHEFS: Stan through httpstan over NumPyro."""
    return _ratio(folder, "Stan via httpstan")


def webppl_x(folder):
    """NHEFS: WebPPL over NumPyro."""
    return _ratio(folder, "WebPPL")


def appendix_s(folder):
    """NHEFS: Stan in-process with the appendix's likelihood, seconds per 1,000 chain-steps."""
    return _cost(folder, "Stan in-process, the appendix's likelihood")


def appendix_x(folder):
    """... over NumPyro's."""
    return _ratio(folder, "Stan in-process, the appendix's likelihood")


def threads_s(folder):
    """NHEFS: Stan in-process on 2 threads, seconds per 1,000 chain-steps."""
    return _cost(folder, "Stan in-process, 2 threads")


def threads_x(folder):
    """... over NumPyro's."""
    return _ratio(folder, "Stan in-process, 2 threads")


def same_estimate_gap(folder):
    """Largest difference between the in-process Stan rows' forward AIS estimates (nats)."""
    rows = json.loads((folder / "nhefs_cost.json").read_text())["rows"]
    values = [r["log_ml_lower"] for r in rows if r["implementation"].startswith("Stan in-process")]
    return max(values) - min(values)


def nhefs_shipped_us(folder):
    """stan_program_forms: microseconds per chain of a value and gradient, NHEFS, the shipped (GLM) form."""
    return _form(folder, "linear")["shipped_us"]


def nhefs_appendix_us(folder):
    """... the appendix's form."""
    return _form(folder, "linear")["appendix_us"]


def speedup_linear(folder):
    """stan_program_forms: the shipped form's speed-up over the appendix's, NHEFS linear regression."""
    return _form(folder, "linear")["speedup"]


def speedup_logistic(folder):
    """... Pima logistic regression."""
    return _form(folder, "logistic")["speedup"]


def speedup_mixture(folder):
    """... Old Faithful mixture."""
    return _form(folder, "mixture")["speedup"]


def value_gap(folder):
    """stan_program_forms: the largest relative gap between the two forms' values, over the three models."""
    return max(f["max_relative_value_gap"] for f in json.loads((folder / "stan_program_forms.json").read_text()))


def gradient_gap(folder):
    """... between their gradients."""
    return max(f["max_relative_gradient_gap"] for f in json.loads((folder / "stan_program_forms.json").read_text()))


QUOTES = ("numpyro_s", "stan_s", "stan_x", "httpstan_x", "webppl_x", "appendix_s", "appendix_x", "threads_s",
          "threads_x", "same_estimate_gap", "nhefs_shipped_us", "nhefs_appendix_us", "speedup_linear",
          "speedup_logistic", "speedup_mixture", "value_gap", "gradient_gap")


def values(folder: Path) -> dict:
    """Every number the pages of this folder quote (``QUOTES``), computed from the rows stored in ``folder``.

    Parameters
    ----------
    folder : Path
        The results folder (``benchmarks/results/ppl_adapters`` or a copy of it).

    Returns
    -------
    dict
        Each quote's name and value.
    """
    return {name: globals()[name](folder) for name in QUOTES}
