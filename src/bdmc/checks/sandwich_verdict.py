"""A sandwich against the exact ``log p(y)``: the bounds hold, hold within noise, or are VIOLATED.

Part of the sandwich (:mod:`bdmc.checks.sandwich`, kept apart for length): :attr:`SandwichResult.against_exact`
builds the :class:`ExactCheck` of a table, and the ``bdmc sandwich`` printer and the audit both state it
through :meth:`ExactCheck.lines`, so the verdict is worded in one place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

HOLDS, WITHIN_NOISE, VIOLATED = "holds", "holds within noise", "VIOLATED"
NOISE_STDERRS = 2.0  # a bound beyond the exact value by at most this many stderr is reported as noise


@dataclass(frozen=True)
class ExactCheck:
    """Where a sandwich's bounds lie against the exact ``log p(y)``, knob value by knob value.

    A bound *holds* when it is on its side of the exact value (the lower below, the upper above, up to
    rounding), *holds within noise* when it is beyond it by at most ``noise_stderrs`` of its standard error,
    and is *VIOLATED* otherwise. Standard errors of a few runs are themselves noisy: a violation is a reason
    to look, not a certified alarm (that is :attr:`SandwichResult.verdict`).

    Attributes
    ----------
    exact : float
    table : pandas.DataFrame
        One row per knob value with both bounds (forward only: every lower bound): ``num_steps``, ``lower``,
        ``lower_stderr``, ``upper``, ``upper_stderr`` (NaN when forward only), ``holds``, ``within_noise`` and
        ``state`` (:data:`HOLDS`, :data:`WITHIN_NOISE` or :data:`VIOLATED`).
    two_sided : bool
        Whether the table has upper bounds (False for real data: lower bounds only).
    noise_stderrs : float
    symbol : str
        How messages name the knob ("T", "moves").
    """

    exact: float
    table: pd.DataFrame
    two_sided: bool
    noise_stderrs: float = NOISE_STDERRS
    symbol: str = "T"

    @property
    def knob(self) -> int:
        """The largest knob value checked: the one :attr:`state` describes."""
        return int(self.table["num_steps"].iloc[-1])

    @property
    def state(self) -> str:
        """The verdict at the largest knob value: :data:`HOLDS`, :data:`WITHIN_NOISE` or :data:`VIOLATED`."""
        return str(self.table["state"].iloc[-1])

    @property
    def violated_at(self) -> list[int]:
        """Knob values at which a bound is beyond the exact value by more than the noise allows."""
        return [int(t) for t in self.table.loc[~self.table["within_noise"], "num_steps"]]

    def lines(self, *, mark: Callable[[str, str], str] | None = None) -> list[str]:
        """The verdict as sentences, the first naming the state at the largest knob value.

        ``mark(state, text)`` decorates the state's words (e.g. colours them in a terminal); plain by default.
        """
        mark = mark or (lambda state, text: text)
        last = self.table.iloc[-1]
        k, sym = f"{self.noise_stderrs:g}", self.symbol
        if not self.two_sided:
            detail = {HOLDS: "", WITHIN_NOISE: f" (above by <= {k} stderr)",
                      VIOLATED: f" (above by more than {k} stderr)"}[self.state]
            return [f"lower bound against the exact value at {sym}={self.knob}: {mark(self.state, self.state)}"
                    f"{detail}; {last['lower'] - self.exact:+.4f} nats from exact"]
        detail = {HOLDS: "", WITHIN_NOISE: f" (crossed by <= {k} stderr)",
                  VIOLATED: f" (by more than {k} stderr)"}[self.state]
        n = len(self.table)
        out = [f"sandwich around the exact value at {sym}={self.knob}: {mark(self.state, self.state)}{detail}; "
               f"lower {last['lower'] - self.exact:+.4f}, upper {last['upper'] - self.exact:+.4f} nats from exact",
               f"holds at {int(self.table['holds'].sum())}/{n} chain lengths, within {k} stderr at "
               f"{int(self.table['within_noise'].sum())}/{n}"]
        if self.table[["lower_stderr", "upper_stderr"]].isna().any().any():
            out.append("one run per direction: no standard errors, so 'within noise' means exactly")
        if self.violated_at:
            bad = ", ".join(map(str, self.violated_at))
            out.append(mark(VIOLATED, f"a bound is off by more than {k} stderr at {sym} = {bad}: unlikely by chance, "
                                      "though with few runs the stderr itself is unreliable"))
        return out

    def to_dict(self) -> dict:
        """A JSON-ready summary: the state at the largest knob value, where it is violated, and the sentences."""
        return {"exact": self.exact, "state": self.state, "knob": self.knob, "violated_at": self.violated_at,
                "noise_stderrs": self.noise_stderrs, "message": "\n".join(self.lines())}


def exact_check(table: pd.DataFrame, exact: float | None, *, noise_stderrs: float = NOISE_STDERRS,
                symbol: str = "T") -> ExactCheck | None:
    """The :class:`ExactCheck` of a sandwich table (``SandwichResult.table`` or its CSV).

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``num_steps``, ``direction``, ``value`` and ``stderr``. With any reverse row, the knob values
        that have both bounds are checked; otherwise (real data) every lower bound.
    exact : float or None
        The exact ``log p(y)``; None gives None.
    noise_stderrs : float
        How many standard errors beyond the exact value count as noise.
    symbol : str
        How messages name the knob.

    Returns
    -------
    ExactCheck or None
        None without an exact value or without a knob value to check.
    """
    if exact is None or not math.isfinite(exact):
        return None
    sides = {d: table[table["direction"] == d].set_index("num_steps")[["value", "stderr"]].astype(float)
             for d in ("forward", "reverse")}
    two_sided = len(sides["reverse"]) > 0
    lower = sides["forward"][sides["forward"]["value"].notna()]
    if two_sided:
        upper = sides["reverse"][sides["reverse"]["value"].notna()]
        both = lower.index.intersection(upper.index)
        lower, upper = lower.loc[both], upper.loc[both]
    else:
        upper = pd.DataFrame({"value": np.nan, "stderr": np.nan}, index=lower.index)
    if lower.empty:
        return None
    lower, upper = lower.sort_index(), upper.sort_index()
    slack = 1e-9 * max(1.0, abs(exact))  # rounding, e.g. when both bounds are exact
    # How far each bound lies on the wrong side of the exact value; an absent upper bound is on its side.
    excess = pd.DataFrame({"lower": lower["value"] - exact, "upper": (exact - upper["value"]).fillna(-np.inf)})
    allowed = pd.DataFrame({"lower": noise_stderrs * lower["stderr"].fillna(0.0),
                            "upper": noise_stderrs * upper["stderr"].fillna(0.0)}) + slack
    holds = (excess <= slack).all(axis=1)
    within = (excess <= allowed).all(axis=1)
    state = np.where(holds, HOLDS, np.where(within, WITHIN_NOISE, VIOLATED))
    rows = pd.DataFrame({"num_steps": lower.index.to_numpy(dtype=int), "lower": lower["value"].to_numpy(),
                         "lower_stderr": lower["stderr"].to_numpy(), "upper": upper["value"].to_numpy(),
                         "upper_stderr": upper["stderr"].to_numpy(), "holds": holds.to_numpy(dtype=bool),
                         "within_noise": within.to_numpy(dtype=bool), "state": state})
    return ExactCheck(exact=float(exact), table=rows, two_sided=two_sided, noise_stderrs=noise_stderrs,
                      symbol=symbol)
