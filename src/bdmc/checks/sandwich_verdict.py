"""A sandwich against the exact ``log p(y)``: the bounds hold, hold within noise, are VIOLATED, or do not hold.

Part of the sandwich (:mod:`bdmc.checks.sandwich`, kept apart for length): :attr:`SandwichResult.against_exact`
builds the :class:`ExactCheck` of a table, and the ``bdmc sandwich`` printer and the audit both state it
through :meth:`ExactCheck.lines`, so the verdict is worded in one place.

"Unlikely by chance" is a claim at level ``level`` (0.01) over all the ``m`` bounds checked (two per knob value),
each bound at ``level / m``. A bound past the exact value is judged by its standard error where that can be
believed: beyond the one-sided Student t quantile (``runs - 1`` degrees of freedom) at ``level / m``. Two standard
errors per bound, unadjusted (the rule before), called a correct model's sandwich "unlikely by chance" on 12 of
60 seeds of the README's quick start (32 runs, T = 10 to 10,000); this rule on none. A standard error is not
believed where the row's weight diagnostics flag it (``stderr_trusted``: the ESS and Pareto k-hat rule of
:mod:`bdmc.contracts.weight_health`; heavy-tailed log weights make the sample stderr too small) or where there is
none (one run). There the judge is Markov's inequality, which needs no standard error: the lower bound
(log-mean-exp of unbiased estimates of Z) exceeds ``log p(y)`` by ``c`` nats, and the upper bound
(log-harmonic-mean of unbiased estimates of 1/Z) falls short of it by ``c``, each with probability at most
``exp(-c)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ..contracts.pairs import PAIRS
from .alarm import ALPHA

HOLDS, WITHIN_NOISE, VIOLATED = "holds", "holds within noise", "VIOLATED"
NOT_HELD = "does not hold"  # a bound is past the exact value and nothing says whether by chance
NOISE_STDERRS = 2.0  # the least noise allowance, in stderr (the calibrated one is larger at level 0.01)
# How a bound beyond the noise was judged (the ``reason`` column): by a believable stderr, by Markov's inequality,
# or not at all, its stderr flagged by the weight diagnostics or missing (one run).
BY_STDERR, BY_MARKOV, UNRELIABLE, NO_STDERR = "stderr", "markov", "unreliable stderr", "no stderr"


@dataclass(frozen=True)
class ExactCheck:
    """Where a sandwich's bounds lie against the exact ``log p(y)``, knob value by knob value.

    A bound *holds* when it is on its side of the exact value (the lower below, the upper above, up to
    rounding), *holds within noise* when it is beyond it by at most ``noise_stderrs`` of its standard error
    (what chance allows over the bounds checked), and is *VIOLATED* when it is further out and that is unlikely
    by chance: judged by its standard error where the weights support it, else by Markov's inequality. It *does
    not hold* when it is further out and neither can say so (one run has no standard error; a flagged one is
    unreliable). A violation is a reason to look, not a certified alarm (that is :attr:`SandwichResult.verdict`).

    Attributes
    ----------
    exact : float
    table : pandas.DataFrame
        One row per knob value with both bounds (forward only: every lower bound): ``num_steps``, ``lower``,
        ``lower_stderr``, ``upper``, ``upper_stderr`` (NaN when forward only), ``lower_trusted`` and
        ``upper_trusted`` (the weight diagnostics' verdict on each stderr), ``holds``, ``within_noise``,
        ``stderrs`` (how many stderr the bound furthest out is past the exact value), ``p_bound`` (Markov's
        bound on the chance of the larger excess), ``reason`` (how a bound beyond the noise was judged:
        ``"stderr"``, ``"markov"``, ``"unreliable stderr"``, ``"no stderr"``; empty within noise) and ``state``
        (:data:`HOLDS`, :data:`WITHIN_NOISE`, :data:`VIOLATED` or :data:`NOT_HELD`).
    two_sided : bool
        Whether the table has upper bounds (False for real data: lower bounds only).
    noise_stderrs : float
        How many stderr past the exact value count as noise.
    symbol : str
        How messages name the knob ("T", "moves").
    knob_names : (str, str)
        The knob in sentences, singular and plural ("chain length", "chain lengths").
    level : float
        The level of "unlikely by chance" over all the bounds checked.
    """

    exact: float
    table: pd.DataFrame
    two_sided: bool
    noise_stderrs: float = NOISE_STDERRS
    symbol: str = "T"
    knob_names: tuple[str, str] = ("chain length", "chain lengths")
    level: float = ALPHA

    @property
    def knob(self) -> int:
        """The largest knob value checked: the one :attr:`state` describes."""
        return int(self.table["num_steps"].iloc[-1])

    @property
    def state(self) -> str:
        """The verdict at the largest knob value: :data:`HOLDS`, :data:`WITHIN_NOISE`, :data:`VIOLATED` or
        :data:`NOT_HELD`."""
        return str(self.table["state"].iloc[-1])

    @property
    def bounds_checked(self) -> int:
        """How many bounds the level is shared over: two per knob value, one for lower bounds only."""
        return len(self.table) * (2 if self.two_sided else 1)

    @property
    def violated_at(self) -> list[int]:
        """Knob values at which a bound is beyond the exact value by more than chance allows."""
        return self._knobs(self.table["state"] == VIOLATED)

    @property
    def unjudged_at(self) -> list[int]:
        """Knob values at which a bound is beyond the noise with no believable stderr to judge it by."""
        return self._knobs(self.table["state"] == NOT_HELD)

    def _knobs(self, mask) -> list[int]:
        return [int(t) for t in self.table.loc[mask, "num_steps"]]

    def lines(self, *, mark: Callable[[str, str], str] | None = None) -> list[str]:
        """The verdict as sentences, the first naming the state at the largest knob value.

        ``mark(state, text)`` decorates the state's words (e.g. colours them in a terminal); plain by default.
        """
        mark = mark or (lambda state, text: text)
        last = self.table.iloc[-1]
        head = f"{mark(self.state, self.state)}{self._detail(last)}"
        if not self.two_sided:  # one line: its parenthesis says how a bound past the exact value was judged
            return [f"lower bound against the exact value at {self.symbol}={self.knob}: {head}; "
                    f"{last['lower'] - self.exact:+.4f} nats from exact"]
        return [f"sandwich around the exact value at {self.symbol}={self.knob}: {head}; lower "
                f"{last['lower'] - self.exact:+.4f}, upper {last['upper'] - self.exact:+.4f} nats from exact",
                self._counts()] + self._beyond_lines(mark)

    def _detail(self, row) -> str:
        """The parenthesis after the state's words at one knob value."""
        k, side = f"{self.noise_stderrs:.2g}", "crossed" if self.two_sided else "above"
        if row["state"] == HOLDS:
            return ""
        if row["state"] == WITHIN_NOISE:
            return f" ({side} by {row['stderrs']:.2g} stderr, within the {k} that chance allows)"
        markov = "" if self.two_sided else f"; Markov p-bound {row['p_bound']:.2g}"
        return {BY_STDERR: f" ({side} by {row['stderrs']:.2g} stderr, more than the {k} that chance allows)",
                BY_MARKOV: f" ({_past(row, self.exact)}; Markov p-bound {row['p_bound']:.2g})",
                UNRELIABLE: f" ({_past(row, self.exact)} by more than {k} stderr, but that stderr is unreliable"
                            f"{markov})",
                NO_STDERR: f" ({_past(row, self.exact)}; one run gives no standard error{markov})"}[row["reason"]]

    def _counts(self) -> str:
        """How many knob values have the exact value between the bounds, and within noise of them."""
        holds, within, n = int(self.table["holds"].sum()), int(self.table["within_noise"].sum()), len(self.table)
        if n == 1:  # one knob value: a plain sentence, not a count
            text = (f"the exact value {'lies' if holds else 'does not lie'} between the bounds at the one "
                    f"{self.knob_names[0]}")
        else:
            text = f"the exact value lies between the bounds at {_of(holds, n, self.knob_names)}"
        if not np.isfinite(self.table[["lower_stderr", "upper_stderr"]].to_numpy(dtype=float)).any():
            return text + "; one run per direction gives no standard errors (they need 2 or more runs)"
        if within > holds:
            at = "" if n == 1 else f" at {_of(within, n)}"
            text += (f", but within noise of them ({self.noise_stderrs:.2g} standard errors, what chance allows "
                     f"over the {self.bounds_checked} bounds){at}") if n == 1 else (
                f", and within noise of them ({self.noise_stderrs:.2g} standard errors, what chance allows over the "
                f"{self.bounds_checked} bounds){at}")
        return text

    def _beyond_lines(self, mark) -> list[str]:
        """One sentence per way the bounds beyond the noise were judged, naming their knob values."""
        k, sym, out = f"{self.noise_stderrs:.2g}", self.symbol, []
        for reason in (BY_STDERR, BY_MARKOV, UNRELIABLE, NO_STDERR):
            rows = self.table[self.table["reason"] == reason]
            if rows.empty:
                continue
            at, p = ", ".join(str(int(t)) for t in rows["num_steps"]), float(rows["p_bound"].min())
            if reason == BY_STDERR:
                out.append(mark(VIOLATED, f"a bound is off by more than {k} stderr at {sym} = {at}: unlikely by "
                                          f"chance (a correct model and sampler puts any of the {self.bounds_checked} "
                                          f"bounds that far out with probability at most about {self.level:g}), though "
                                          "with few runs the stderr itself is rough"))
            elif reason == BY_MARKOV:
                out.append(mark(VIOLATED, f"a bound is past the exact value at {sym} = {at} by more than chance "
                                          "allows, whatever its stderr: by Markov's inequality a correct model and "
                                          f"sampler lands that far out with probability at most {p:.2g}"))
            elif reason == UNRELIABLE:
                out.append(f"a bound is past the exact value by more than {k} stderr at {sym} = {at}, but the "
                           "weights there make that stderr unreliable (a few runs carry the weight), so this is no "
                           "evidence of a bug; Markov's inequality, which needs no stderr, does not rule out chance "
                           f"either (p-bound {p:.2g})")
            else:
                out.append(f"a bound is past the exact value at {sym} = {at}; one run gives no standard error to "
                           "judge that by (it needs 2 or more runs), and Markov's inequality, which needs none, does "
                           f"not rule out chance (p-bound {p:.2g})")
        return out

    def to_dict(self) -> dict:
        """A JSON-ready summary: the state at the largest knob value, where it is violated, and the sentences."""
        return {"exact": self.exact, "state": self.state, "knob": self.knob, "violated_at": self.violated_at,
                "unjudged_at": self.unjudged_at, "noise_stderrs": self.noise_stderrs, "level": self.level,
                "message": "\n".join(self.lines())}


def _past(row, exact: float) -> str:
    """Which bound lies on the wrong side of the exact value, in words."""
    wrong = [text for text, beyond in (("the lower bound is above it", row["lower"] > exact),
                                       ("the upper bound is below it", row["upper"] < exact)) if beyond]
    return " and ".join(wrong)


def _of(k: int, n: int, names: tuple[str, str] | None = None) -> str:
    """``k`` of ``n`` knob values in words: "all 4 chain lengths", "both", "1 of the 4 chain lengths"."""
    noun = "" if names is None else " " + names[n != 1]
    if n == 1:
        return f"the one{noun}" if k else f"not the one{noun}"
    if k == n:
        return f"both{noun}" if n == 2 else f"all {n}{noun}"
    return f"{'none' if k == 0 else k} of the {n}{noun}"


def exact_check(table: pd.DataFrame, exact: float | None, *, noise_stderrs: float | None = None,
                symbol: str | None = None, level: float = ALPHA) -> ExactCheck | None:
    """The :class:`ExactCheck` of a sandwich table (``SandwichResult.table`` or its CSV).

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``num_steps``, ``direction``, ``value`` and ``stderr``; when present, ``stderr_trusted`` (the
        weight diagnostics' verdict; believed where absent), ``num_runs`` (the t quantile's degrees of freedom;
        the normal quantile without it) and ``method`` (the pair, :data:`bdmc.contracts.pairs.PAIRS`, names the
        knob; "ais" when absent). With any reverse row, the knob values
        that have both bounds are checked; otherwise (real data) every lower bound.
    exact : float or None
        The exact ``log p(y)``; None gives None.
    noise_stderrs : float, optional
        How many standard errors beyond the exact value count as noise. By default what chance allows: the
        one-sided t quantile at ``level`` over the bounds checked, at least :data:`NOISE_STDERRS`.
    symbol : str, optional
        How messages name the knob (default: the pair's symbol).
    level : float
        The level of "unlikely by chance" over all the bounds checked (stderr and Markov judgements alike).

    Returns
    -------
    ExactCheck or None
        None without an exact value or without a knob value to check.
    """
    if exact is None or not math.isfinite(exact):
        return None
    lower, upper, two_sided = _sides(table)
    if lower.empty:
        return None
    per_bound = level / (len(lower) * (2 if two_sided else 1))
    if noise_stderrs is None:
        noise_stderrs = max(NOISE_STDERRS, _quantile(1.0 - per_bound, table))
    rows = _judge(lower, upper, exact, noise_stderrs=noise_stderrs, per_bound=per_bound)
    method = str(table["method"].iloc[0]) if "method" in table.columns and len(table) else "ais"
    pair = PAIRS.get(method)
    symbol = symbol or (pair.symbol if pair is not None else "knob")
    names = pair.nouns if pair is not None else (f"value of {symbol}", f"values of {symbol}")
    return ExactCheck(exact=float(exact), table=rows, two_sided=two_sided, noise_stderrs=float(noise_stderrs),
                      symbol=symbol, knob_names=names, level=level)


def _quantile(q: float, table: pd.DataFrame) -> float:
    """The ``q`` quantile of a standard error's ratio: Student t on runs - 1 degrees of freedom, else normal."""
    runs = pd.to_numeric(table["num_runs"], errors="coerce").min() if "num_runs" in table.columns else math.nan
    return float(stats.t.ppf(q, runs - 1) if runs >= 2 else stats.norm.ppf(q))


def _sides(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """The lower and the upper bounds (value, stderr, trusted) by knob value, and whether there are upper ones."""
    trusted = table["stderr_trusted"] if "stderr_trusted" in table.columns else pd.Series(True, index=table.index)
    # A stderr is believed unless the weight diagnostics flagged it (no flag: a table of an older version).
    frame = table.assign(trusted=pd.Series(trusted, dtype=object).map(lambda v: v is not False and v != 0.0))
    sides = {d: frame[frame["direction"] == d].set_index("num_steps")[["value", "stderr", "trusted"]]
             for d in ("forward", "reverse")}
    two_sided = len(sides["reverse"]) > 0
    lower = sides["forward"][sides["forward"]["value"].notna()]
    if two_sided:
        upper = sides["reverse"][sides["reverse"]["value"].notna()]
        both = lower.index.intersection(upper.index)
        lower, upper = lower.loc[both], upper.loc[both]
    else:
        upper = pd.DataFrame({"value": np.nan, "stderr": np.nan, "trusted": True}, index=lower.index)
    return lower.sort_index(), upper.sort_index(), two_sided


def _judge(lower: pd.DataFrame, upper: pd.DataFrame, exact: float, *, noise_stderrs: float,
           per_bound: float) -> pd.DataFrame:
    """Per knob value: whether the bounds hold, hold within noise, and how a bound beyond the noise is judged."""
    slack = 1e-9 * max(1.0, abs(exact))  # rounding, e.g. when both bounds are exact
    # How far each bound lies on the wrong side of the exact value; an absent upper bound is on its side.
    excess = pd.DataFrame({"lower": lower["value"].astype(float) - exact,
                           "upper": (exact - upper["value"].astype(float)).fillna(-np.inf)})
    stderr = pd.DataFrame({"lower": lower["stderr"].astype(float), "upper": upper["stderr"].astype(float)})
    believed = pd.DataFrame({"lower": lower["trusted"].astype(bool), "upper": upper["trusted"].astype(bool)})
    beyond = excess > noise_stderrs * stderr.fillna(0.0) + slack  # past the exact value by more than the noise
    holds, within = (excess <= slack).all(axis=1), ~beyond.any(axis=1)
    p_bound = np.exp(-excess.clip(lower=0.0).max(axis=1))  # Markov, for the bound furthest out
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (excess.clip(lower=0.0) / stderr).max(axis=1)
    reason = np.select([within, (beyond & believed & np.isfinite(stderr)).any(axis=1), p_bound < per_bound,
                        (beyond & np.isfinite(stderr)).any(axis=1)], ["", BY_STDERR, BY_MARKOV, UNRELIABLE],
                       NO_STDERR)
    state = np.select([holds, within, np.isin(reason, [BY_STDERR, BY_MARKOV])], [HOLDS, WITHIN_NOISE, VIOLATED],
                      NOT_HELD)
    return pd.DataFrame({"num_steps": lower.index.to_numpy(dtype=int), "lower": lower["value"].to_numpy(float),
                         "lower_stderr": stderr["lower"].to_numpy(), "upper": upper["value"].to_numpy(float),
                         "upper_stderr": stderr["upper"].to_numpy(), "lower_trusted": believed["lower"].to_numpy(),
                         "upper_trusted": believed["upper"].to_numpy(), "holds": holds.to_numpy(dtype=bool),
                         "within_noise": within.to_numpy(dtype=bool), "stderrs": ratio.to_numpy(dtype=float),
                         "p_bound": p_bound.to_numpy(dtype=float), "reason": reason, "state": state})
