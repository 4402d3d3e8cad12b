"""What a calibration of another tool's ``log p(y)`` found: its bias, spread and the honesty of its stated ±."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

MISCALIBRATED, CALIBRATED, UNDECIDED = "miscalibrated", "no miscalibration found", "undecided"
COVERAGES = {"68%": 1.0, "95%": 1.959963984540054}


@dataclass(frozen=True)
class Coverage:
    """How often the truth lay within ``multiple`` of the tool's stated ±: ``hits`` of ``n``, with the
    Clopper-Pearson 95% interval of the rate."""

    nominal: float
    multiple: float
    hits: int
    n: int
    interval: tuple[float, float]

    @property
    def rate(self) -> float:
        return self.hits / self.n if self.n else math.nan


def clopper_pearson(hits: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval of ``hits`` successes in ``n`` trials (NaNs for ``n = 0``)."""
    if n == 0:
        return math.nan, math.nan
    ci = stats.binomtest(int(hits), int(n)).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class Calibration:
    """A tool's ``log p(y)`` against bdmc's ground truth on data sets simulated from the model.

    Attributes
    ----------
    label : str
        The tool's name.
    rows : pandas.DataFrame
        One row per data set: ``seed``, the tool's ``log_z`` and ``stderr`` (NaN when it states none), the truth
        (``truth``, with ``truth_lower`` and ``truth_upper``: equal for a closed form, bdmc's forward and
        reverse estimates otherwise), ``error = log_z - truth``, seconds, and ``failed`` (the tool's error message,
        else empty).
    level : float
        The verdict's false-alarm level on a tool that is unbiased with an honest ±.
    """

    label: str
    rows: pd.DataFrame
    level: float
    settings: dict = field(default_factory=dict)

    # ------------------------------------------------------------------------------------------ subsets
    @property
    def ok(self) -> pd.DataFrame:
        """The data sets where the tool returned a finite value."""
        return self.rows[self.rows["failed"] == ""]

    @property
    def stated(self) -> pd.DataFrame:
        """The data sets where the tool also stated a finite, positive ±."""
        ok = self.ok
        return ok[np.isfinite(ok["stderr"]) & (ok["stderr"] > 0)]

    @property
    def num_failed(self) -> int:
        return int((self.rows["failed"] != "").sum())

    # ------------------------------------------------------------------------------------------ figures
    @property
    def bias(self) -> float:
        """Mean error in nats."""
        return float(self.ok["error"].mean()) if len(self.ok) else math.nan

    @property
    def bias_stderr(self) -> float:
        n = len(self.ok)
        return float(self.ok["error"].std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan

    @property
    def rmse(self) -> float:
        return float(np.sqrt(np.mean(self.ok["error"] ** 2))) if len(self.ok) else math.nan

    @property
    def median_abs_error(self) -> float:
        return float(np.median(np.abs(self.ok["error"]))) if len(self.ok) else math.nan

    @property
    def truth_halfwidth(self) -> float:
        """The median half-width of the truth's own interval (0 with a closed form)."""
        ok = self.ok
        return float(np.median((ok["truth_upper"] - ok["truth_lower"]).abs() / 2)) if len(ok) else math.nan

    @property
    def z_spread(self) -> float:
        """The standard deviation of ``error / stderr``: 1 for an honest ±, above 1 for an overconfident one."""
        s = self.stated
        return float(np.std(s["error"] / s["stderr"], ddof=1)) if len(s) > 1 else math.nan

    def coverage(self, nominal: str = "95%") -> Coverage:
        """How often the tool's ``log_z ± multiple x stderr`` (``nominal`` "68%" or "95%") meets the truth, over the
        data sets with a ±: with a closed form, ``|error| <= multiple x stderr``; with the sandwich's interval, the
        tool gets the benefit of the truth's own doubt (a hit when the two intervals meet)."""
        s = self.stated
        multiple = COVERAGES[nominal]
        hits = int(((s["log_z"] - multiple * s["stderr"] <= s["truth_upper"])
                    & (s["log_z"] + multiple * s["stderr"] >= s["truth_lower"])).sum())
        return Coverage(float(nominal.rstrip("%")) / 100, multiple, hits, len(s), clopper_pearson(hits, len(s)))

    def worst(self, count: int = 3) -> pd.DataFrame:
        """The data sets where the tool was furthest off: by ``|error| / stderr`` where it states a ±, else by
        ``|error|``; their seeds rerun them."""
        ok = self.ok.copy()
        stated = np.isfinite(ok["stderr"]) & (ok["stderr"] > 0)
        ok["z"] = np.where(stated, ok["error"] / ok["stderr"].where(stated, 1.0), np.nan)
        order = np.abs(ok["z"]) if stated.any() else np.abs(ok["error"])
        return ok.assign(order=order).sort_values("order", ascending=False).head(count).drop(columns="order")

    # ------------------------------------------------------------------------------------------ verdict
    def tests(self) -> dict[str, float]:
        """The p-values of the verdict's two tests, each at ``level / 2``.

        ``bias``: a Wilcoxon signed-rank test of the errors beyond the truth's interval (0 inside it): robust to the
        odd data set where a tool fails by tens of nats, and blind to errors within the truth's own doubt;
        ``overconfident``: the binomial tail of the data sets where the tool's ``log_z ± 1.96 stderr`` misses the
        truth's interval (at most 5% for an honest ±).
        """
        ok, out = self.ok, {}
        beyond = np.where(ok["log_z"] > ok["truth_upper"], ok["log_z"] - ok["truth_upper"],
                          np.where(ok["log_z"] < ok["truth_lower"], ok["log_z"] - ok["truth_lower"], 0.0))
        nonzero = beyond[beyond != 0]
        if len(ok) > 1:
            out["bias"] = float(stats.wilcoxon(nonzero).pvalue) if len(nonzero) >= 6 else 1.0
        s = self.stated
        if len(s):
            multiple = COVERAGES["95%"]
            misses = (s["log_z"] - multiple * s["stderr"] > s["truth_upper"]) | (
                s["log_z"] + multiple * s["stderr"] < s["truth_lower"])
            out["overconfident"] = float(stats.binom.sf(int(misses.sum()) - 1, len(s), 0.05))
        return out

    @property
    def verdict(self) -> str:
        """``miscalibrated`` when a test rejects at ``level / 2``; ``undecided`` with fewer than 2 values."""
        tests = self.tests()
        if not tests:
            return UNDECIDED
        return MISCALIBRATED if min(tests.values()) < self.level / 2 else CALIBRATED

    def summary(self) -> str:
        """A few lines a person reads."""
        n = len(self.rows)
        lines = [f"{self.label}: {self.verdict} at level {self.level:g} over {n} simulated data sets"
                 + (f" ({self.num_failed} failed)" if self.num_failed else ""),
                 f"bias {self.bias:+.3f} ± {self.bias_stderr:.3f} nats, RMSE {self.rmse:.3f}, median |error| "
                 f"{self.median_abs_error:.3f}; the truth's own half-width {self.truth_halfwidth:.3f} (median)"]
        if len(self.stated):
            parts = []
            for nominal in COVERAGES:
                c = self.coverage(nominal)
                parts.append(f"{nominal}: {c.hits}/{c.n} ({c.interval[0]:.2f}-{c.interval[1]:.2f})")
            lines.append(f"coverage of its stated ± {', '.join(parts)}; spread of error/± {self.z_spread:.2f} "
                         "(1 when honest)")
        else:
            lines.append("it states no ±: coverage cannot be judged")
        worst = self.worst()
        if len(worst):
            lines.append("worst data sets (seed: error): " + ", ".join(
                f"{int(r.seed)}: {r.error:+.3f}" for r in worst.itertuples()))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready figures (the rows as records)."""
        out = {"label": self.label, "verdict": self.verdict, "level": self.level, "num_datasets": len(self.rows),
               "num_failed": self.num_failed, "bias": self.bias, "bias_stderr": self.bias_stderr, "rmse": self.rmse,
               "median_abs_error": self.median_abs_error, "truth_halfwidth": self.truth_halfwidth,
               "z_spread": self.z_spread, "tests": self.tests(), "settings": self.settings,
               "rows": self.rows.to_dict("records")}
        for nominal in COVERAGES:
            c = self.coverage(nominal)
            out[f"coverage_{nominal.rstrip('%')}"] = {"hits": c.hits, "n": c.n, "interval": list(c.interval)}
        return out

    def plot(self, ax=None):
        """Error against the stated ±, with the 1 and 1.96 ± wedges (a tool with no ± at ± = 0)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 4))
        ok = self.ok
        stderr = np.where(np.isfinite(ok["stderr"]), ok["stderr"], 0.0)
        top = max(float(np.max(stderr, initial=0.0)), 1e-3) * 1.1
        grid = np.linspace(0, top, 50)
        for multiple, alpha in ((COVERAGES["95%"], 0.12), (COVERAGES["68%"], 0.22)):
            ax.fill_between(grid, -multiple * grid, multiple * grid, color="tab:green", alpha=alpha, lw=0)
        ax.errorbar(stderr, ok["error"], yerr=(ok["truth_upper"] - ok["truth_lower"]).abs() / 2, fmt="o", ms=3,
                    color="tab:blue", ecolor="0.6", lw=0.8)
        ax.axhline(0, color="0.3", lw=0.8)
        ax.set_xlabel("stated ± (nats)")
        ax.set_ylabel("error: log Z - truth (nats)")
        ax.set_title(f"{self.label}: {self.verdict}", fontsize=10)
        return ax
