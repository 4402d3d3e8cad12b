"""The two checks of the real-data protocol, as statistics with a verdict.

**Forward consistency** (BREAD paper, Sec. 5.1.1). Real and simulated data have different log-MLs, so each
forward curve is measured from its own end: ``g(T) = median(T) - median(T_max)``, the climb still to come at
chain length T. Simulated data stand in for real data when the two climbs agree. At each T the statistic is
``|g_real(T) - g_sim(T)|`` as a fraction of the larger climb (at least 1 nat), with a bootstrap z-score
(chains resampled within each run). The curves are *not consistent* when at some T the fraction exceeds
``tolerance`` (0.5: one climb more than twice the other) and the z-score rejects at level 0.01,
Bonferroni-corrected over T: differences that noise explains are not held against the data.

**Reverse agreement** (Sec. 5.1.2). The reverse curves started from approximate posterior samples after S
MCMC steps should not depend on S. At each T the statistic is the spread (max - min over S) of the reverse
medians, as a fraction of that T's forward-reverse gap on the simulated data (the BREAD bound's scale; at
least 1 nat, so that a closed gap does not turn noise into a verdict). The curves *depend on S* when that
fraction exceeds ``tolerance`` at some T where a Kruskal-Wallis test across S also rejects at level
0.01 (Bonferroni-corrected over T): a large spread that chance explains is not held against S.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import OptionError

FORWARD_TOLERANCE = 0.5
REVERSE_TOLERANCE = 0.25


@dataclass(frozen=True)
class ForwardConsistency:
    """Agreement of the real and simulated forward AIS curves.

    Attributes
    ----------
    table : pandas.DataFrame
        Per T below the longest: ``climb_real``, ``climb_simulated`` (median minus the median at the longest
        T), their difference ``delta``, its bootstrap ``delta_stderr`` and ``z``, ``relative`` =
        ``|delta| / max(|climb_real|, |climb_simulated|, 1)``, ``significant`` (``|z|`` beyond the corrected
        critical value) and the interquartile ranges ``iqr_real``, ``iqr_simulated``.
    tolerance : float
    """

    table: pd.DataFrame
    tolerance: float

    @property
    def discrepancy(self) -> float:
        """``max_T |delta|`` in nats."""
        return float(np.max(np.abs(self.table["delta"])))

    @property
    def relative(self) -> float:
        """The largest relative difference among the statistically significant ones (0 if none)."""
        sig = self.table[self.table["significant"]]
        return float(sig["relative"].max()) if len(sig) else 0.0

    @property
    def consistent(self) -> bool:
        return bool(self.relative <= self.tolerance)

    def summary(self) -> str:
        verdict = "consistent" if self.consistent else "NOT consistent"
        t = self.table
        worst = t.iloc[int(np.argmax(t["relative"].where(t["significant"], -1.0).to_numpy()))
                       if t["significant"].any() else int(np.argmax(t["relative"].to_numpy()))]
        larger = max(abs(worst["climb_real"]), abs(worst["climb_simulated"]))
        return (f"real and simulated forward curves are {verdict}: at T = {int(worst['num_steps'])} the real data "
                f"climb {abs(worst['climb_real']):.1f} nats to the longest run and the simulated "
                f"{abs(worst['climb_simulated']):.1f}, a difference of {100 * worst['relative']:.0f}% of {larger:.1f} "
                f"nats at {worst['z']:+.1f} standard errors "
                f"(not consistent beyond {100 * self.tolerance:.0f}% and {self.critical_z(len(t)):.1f} s.e.)")

    @staticmethod
    def critical_z(num_tests: int) -> float:
        return float(stats.norm.isf(0.005 / max(num_tests, 1)))


@dataclass(frozen=True)
class ReverseAgreement:
    """Dependence of the reverse AIS curves on the MCMC steps S behind their start.

    Attributes
    ----------
    table : pandas.DataFrame
        Per T: ``spread`` (max - min over S of the reverse medians), ``gap`` (median reverse of the largest S
        minus median forward, simulated data), ``relative`` = spread / max(gap, 1 nat), ``kruskal_p``.
    tolerance : float
    """

    table: pd.DataFrame
    tolerance: float

    @property
    def relative(self) -> float:
        return float(self.table["relative"].max()) if len(self.table) else float("nan")

    @property
    def agree(self) -> bool:
        if not len(self.table):
            return False
        level = 0.01 / len(self.table)
        bad = (self.table["relative"] > self.tolerance) & (self.table["kruskal_p"] < level)
        return not bool(bad.any())

    def summary(self) -> str:
        if not len(self.table):
            return "no reverse runs to compare"
        verdict = "do not depend on S" if self.agree else "DEPEND on S"
        # relative is spread / max(gap, 1 nat)
        worst = self.table.iloc[int(np.argmax(self.table["relative"].to_numpy()))]
        return (f"reverse curves {verdict}: the medians over S spread by at most {100 * self.relative:.0f}% of the "
                f"forward-reverse gap (worst at T = {int(worst['num_steps'])}: {worst['spread']:.2f} of "
                f"{worst['gap']:.2f} nats; Kruskal-Wallis p = {worst['kruskal_p']:.2g}; tolerance "
                f"{100 * self.tolerance:.0f}%)")


def forward_consistency(runs: pd.DataFrame, *, tolerance: float = FORWARD_TOLERANCE, num_bootstrap: int = 2000,
                        seed: int = 0) -> ForwardConsistency:
    """Compare the climbs of the real and simulated forward curves (see the module docstring)."""
    rng = np.random.default_rng(seed)
    curves = {}
    for name, condition in (("real", "forward-real"), ("simulated", "forward-simulated")):
        by_T = {int(T): g.to_numpy() for T, g in runs[runs["condition"] == condition].groupby("num_steps")["log_ml"]}
        curves[name] = by_T
    Ts = sorted(set(curves["real"]) & set(curves["simulated"]))
    if len(Ts) < 2:
        raise OptionError("forward consistency needs both forward conditions at two or more chain lengths")
    T_max = Ts[-1]
    rows, boot = [], {}
    for name, by_T in curves.items():
        # Bootstrap medians of every run, drawn once, so each climb's error includes its end point's.
        boot[name] = {T: np.median(rng.choice(x, size=(num_bootstrap, x.size)), axis=1) for T, x in by_T.items()}
    for T in Ts[:-1]:
        climb = {n: np.median(curves[n][T]) - np.median(curves[n][T_max]) for n in curves}
        climb_boot = {n: boot[n][T] - boot[n][T_max] for n in curves}
        delta_boot = climb_boot["real"] - climb_boot["simulated"]
        delta, stderr = climb["real"] - climb["simulated"], float(np.std(delta_boot))
        rows.append({"num_steps": T, "climb_real": climb["real"], "climb_simulated": climb["simulated"],
                     "delta": delta, "delta_stderr": stderr,
                     "z": delta / stderr if stderr > 0 else (0.0 if delta == 0 else np.copysign(np.inf, delta)),
                     "relative": abs(delta) / max(abs(climb["real"]), abs(climb["simulated"]), 1.0),
                     "iqr_real": float(stats.iqr(curves["real"][T])),
                     "iqr_simulated": float(stats.iqr(curves["simulated"][T]))})
    table = pd.DataFrame(rows)
    table["significant"] = np.abs(table["z"]) > ForwardConsistency.critical_z(len(table))
    return ForwardConsistency(table=table, tolerance=tolerance)


def reverse_agreement(runs: pd.DataFrame, *, tolerance: float = REVERSE_TOLERANCE) -> ReverseAgreement:
    """Compare the reverse curves across S (see the module docstring)."""
    reverse = runs[runs["condition"].str.startswith("reverse-S")]
    forward = runs[runs["condition"] == "forward-simulated"]
    rows = []
    for T, at_T in reverse.groupby("num_steps"):
        groups = {int(c.removeprefix("reverse-S")): g.to_numpy() for c, g in at_T.groupby("condition")["log_ml"]}
        fwd = forward.loc[forward["num_steps"] == T, "log_ml"].to_numpy()
        if len(groups) < 2 or fwd.size == 0:
            continue
        medians = {S: float(np.median(x)) for S, x in groups.items()}
        spread = max(medians.values()) - min(medians.values())
        gap = medians[max(groups)] - float(np.median(fwd))
        distinct = len({tuple(x) for x in groups.values()}) > 1
        p = float(stats.kruskal(*groups.values()).pvalue) if distinct else 1.0
        rows.append({"num_steps": int(T), "spread": spread, "gap": gap, "relative": spread / max(gap, 1.0),
                     "kruskal_p": p})
    return ReverseAgreement(table=pd.DataFrame(rows, columns=["num_steps", "spread", "gap", "relative", "kruskal_p"]),
                            tolerance=tolerance)
