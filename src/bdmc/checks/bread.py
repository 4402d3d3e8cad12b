"""BREAD: bound the Jeffreys divergence between AIS samples and the posterior (Grosse, Ancha, Roy 2016, Sec. 3.1).

For paired forward and reverse AIS runs at chain length T, ``B-hat = (reverse upper bound) - (forward lower
bound)`` of single runs satisfies ``E[B-hat] >= J``, the Jeffreys divergence between the distribution of the
forward chain's final state and the true posterior. With an external lower bound ``L`` or upper bound ``U``
on ``log p(y)``, one direction alone bounds a one-sided KL divergence (end of Sec. 3.1):

    E[U - log R-hat_fwd] >= KL(q_fwd || p)      E[log R-hat_rev^-1 - L] >= KL(p || q_fwd).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .sandwich import sandwich

BREAD_COLUMNS = ["num_steps", "b_hat", "b_hat_stderr", "kl_q_p_bound", "kl_p_q_bound", "alarm", "alarm_p",
                 "seconds", "n_evals"]


@dataclass(frozen=True)
class BreadResult:
    """The Jeffreys-divergence bound against chain length, and the sandwich it came from.

    ``table`` has one row per chain length: ``b_hat`` (mean single-run gap, an upper bound in expectation on
    the Jeffreys divergence) and its standard error, the one-sided KL bounds when an external bound was
    given (else NaN), the bug alarm, seconds for both directions and likelihood evaluations. Draw it with
    :func:`bdmc.plotting.plot_bread`.
    """

    table: pd.DataFrame
    sandwich: Any

    @property
    def verdict(self):
        """The run-level bug alarm of the sandwich (every forward against every reverse run)."""
        return self.sandwich.verdict


def bread(key, model, data=None, exact_latent=None, *, schedule: str = "sigmoidal", lower_bound: float | None = None,
          upper_bound: float | None = None, **options) -> BreadResult:
    """Estimate the BREAD bound on the Jeffreys divergence of AIS samples at several chain lengths.

    BREAD is the forward and reverse AIS sandwich (:func:`bdmc.sandwich` with ``method="ais"``) read as a
    divergence: each chain length's mean single-run gap, and with an external bound, one direction alone.

    Parameters
    ----------
    key : PRNG key
    model : Model
    data, exact_latent : optional
        Simulated data and the latent that generated it (both simulated from ``key`` when omitted).
    schedule : str
        The AIS schedule (sigmoidal, the paper's, unless told).
    lower_bound, upper_bound : float, optional
        An external stochastic lower / upper bound on ``log p(y)`` (e.g. from a longer run); each yields a
        one-sided KL bound from one direction alone.
    **options
        The options of :func:`bdmc.sandwich` (``steps``, ``num_runs``, ``kernel``, ``alpha``, ``progress``, ...).

    Returns
    -------
    BreadResult
    """
    res = sandwich(key, model, data, exact_latent, schedule=schedule, method="ais", **options)
    return BreadResult(table=bread_table(res.table, lower_bound=lower_bound, upper_bound=upper_bound), sandwich=res)


def bread_table(table: pd.DataFrame, *, lower_bound: float | None = None,
                upper_bound: float | None = None) -> pd.DataFrame:
    """The BREAD table (:data:`BREAD_COLUMNS`) of a sandwich table, one row per chain length with both directions.

    Parameters
    ----------
    table : pandas.DataFrame
        A sandwich table (``SandwichResult.table``, or its CSV read back) of forward and reverse AIS.
    lower_bound, upper_bound : float, optional
        External bounds on ``log p(y)``, as for :func:`bread`.

    Returns
    -------
    pandas.DataFrame
    """
    t = table
    fwd = t[t["direction"] == "forward"].set_index("num_steps").sort_index()
    rev = t[t["direction"] == "reverse"].set_index("num_steps").sort_index()
    both = fwd.index.intersection(rev.index)
    fwd, rev = fwd.loc[both], rev.loc[both]
    return pd.DataFrame({
        "num_steps": fwd.index.to_numpy(),
        "b_hat": fwd["gap_single"].to_numpy(),
        "b_hat_stderr": fwd["gap_single_stderr"].to_numpy(),
        "kl_q_p_bound": (upper_bound - fwd["mean_single"]).to_numpy() if upper_bound is not None else np.nan,
        "kl_p_q_bound": (rev["mean_single"] - lower_bound).to_numpy() if lower_bound is not None else np.nan,
        "alarm": fwd["alarm"].to_numpy(dtype=bool),
        "alarm_p": fwd["alarm_p"].to_numpy(),
        "seconds": (fwd["seconds"] + rev["seconds"]).to_numpy(),
        "n_evals": (fwd["n_evals"] + rev["n_evals"]).to_numpy(),
    }, columns=BREAD_COLUMNS)
