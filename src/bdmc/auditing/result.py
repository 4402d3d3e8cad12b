"""What an audit returns: one outcome per check, each with its verdict, statistic and false-alarm level.

The report (:mod:`bdmc.auditing.report`) only lays these out: every number and every figure is made before it
is called, so a report can be rebuilt from ``results.json`` plus the saved figures without rerunning.
"""

from __future__ import annotations

import io
import numbers
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..errors import OptionError

Verdict = Literal["pass", "fail", "inconclusive", "informative", "error", "not run"]
VERDICTS = ("pass", "fail", "inconclusive", "informative", "error", "not run")
# The audit's overall verdict, most severe first: a fail found stands even while other checks are pending.
OVERALL_ORDER = ("fail", "error", "incomplete", "inconclusive", "pass", "informative")


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Figure:
    """A rendered figure: PNG bytes and the caption a reader sees under it.

    The caption is also the image's alternative text. ``Figure.from_matplotlib`` renders a matplotlib figure.
    """

    png: bytes
    caption: str

    def __post_init__(self):
        if not isinstance(self.png, (bytes, bytearray)) or self.png[:8] != PNG_SIGNATURE or self.png[12:16] != b"IHDR":
            head = bytes(self.png[:16]) if isinstance(self.png, (bytes, bytearray)) else type(self.png).__name__
            raise OptionError(f"figure {self.caption!r}: png must be the bytes of a PNG file (signature and IHDR "
                             f"header), got {head!r}")
        if not isinstance(self.caption, str):
            raise OptionError(f"figure caption must be a string, got {type(self.caption).__name__}")

    @property
    def size(self) -> tuple[int, int]:
        """Width and height in pixels, read from the PNG header."""
        return int.from_bytes(self.png[16:20], "big"), int.from_bytes(self.png[20:24], "big")

    @classmethod
    def from_matplotlib(cls, fig, caption: str, *, dpi: float = 120) -> Figure:
        """Render a matplotlib figure to PNG (tight bounding box, white background) and close it."""
        import matplotlib.pyplot as plt

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", facecolor="white")
        plt.close(fig)
        return cls(png=buf.getvalue(), caption=caption)

    def __repr__(self) -> str:
        width, height = self.size
        return f"Figure({width}x{height} PNG, caption={self.caption[:60]!r}{'...' if len(self.caption) > 60 else ''})"


@dataclass(frozen=True)
class CheckOutcome:
    """The result of one check of an audit.

    Parameters
    ----------
    name : str
        Short machine name, e.g. ``"sbc"``, ``"geweke"``, ``"simulator-density"``, ``"bdmc"``, ``"evidence"``.
    title : str
        The heading a reader sees, e.g. ``"Simulation-based calibration of NumPyro's NUTS"``.
    verdict : {"pass", "fail", "inconclusive", "informative", "error", "not run"}
        ``"fail"`` only when the check's test rejects at ``level``; ``"informative"`` for an outcome that is
        no test (the evidence bound); ``"error"`` when the check raised (its message in ``summary``, what to
        try in ``remedy``; the other checks still run); ``"not run"`` with the reason in ``summary`` when the
        check does not apply (no conditionals, a sampler that cannot start from a state).
    statistic : str
        The number the verdict rests on, in words (``"min p = 0.003 over 4 parameters (Bonferroni)"``).
    level : float or None
        The false-alarm level of the verdict: the probability that it says ``"fail"`` on a correct model and
        sampler (None for purely informative outcomes, such as the evidence bound).
    summary : str
        One sentence for the verdict table.
    meaning : str
        What the check looks at and what its verdict means.
    remedy : str
        What to try when it fails.
    figures : tuple of Figure
    table : list of dict
        Rows of numbers behind the figures (go to the CSV).
    details : mapping
        Further JSON-able numbers (settings, seconds, counts).
    """

    name: str
    title: str
    verdict: Verdict
    statistic: str
    level: float | None
    summary: str
    meaning: str = ""
    remedy: str = ""
    figures: tuple[Figure, ...] = ()
    table: tuple[Mapping[str, Any], ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise OptionError(f"check {self.name!r}: verdict must be one of {VERDICTS}, got {self.verdict!r}")
        level = self.level
        if level is not None and (isinstance(level, bool) or not isinstance(level, numbers.Real)
                                  or not 0.0 < float(level) < 1.0):
            raise OptionError(f"check {self.name!r}: level (the false-alarm probability) must be a number in (0, 1) "
                             f"or None, got {level!r}")
        if not isinstance(self.name, str) or not self.name.strip():
            raise OptionError(f"a check needs a non-empty name, got {self.name!r}")
        bad = [f for f in self.figures if not isinstance(f, Figure)]
        if bad:
            raise OptionError(f"check {self.name!r}: figures must be Figure objects, got {type(bad[0]).__name__}")

    def __repr__(self) -> str:
        return f"CheckOutcome({self.name!r}, verdict={self.verdict!r}, statistic={self.statistic!r})"

    def to_dict(self) -> dict:
        """JSON-able dict (figures as their captions only)."""
        out = asdict(self)
        out["figures"] = [f.caption for f in self.figures]
        out["table"] = [dict(r) for r in self.table]
        out["details"] = dict(self.details)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, pngs: tuple[bytes, ...] | None = None) -> CheckOutcome:
        """Rebuild an outcome from :meth:`to_dict` (or ``results.json``).

        ``pngs`` are the figures' PNG bytes, in order, one per caption in ``d["figures"]``; without them the
        outcome has no figures.
        """
        captions = list(d.get("figures", ()))
        if pngs is not None and len(pngs) != len(captions):
            raise OptionError(f"check {d.get('name')!r}: {len(captions)} figure captions but {len(pngs)} PNGs")
        figures = (tuple(Figure(png=p, caption=c) for p, c in zip(pngs, captions, strict=False))
                   if pngs is not None else ())
        return cls(name=d["name"], title=d["title"], verdict=d["verdict"], statistic=d["statistic"],
                   level=d["level"], summary=d["summary"], meaning=d.get("meaning", ""),
                   remedy=d.get("remedy", ""), figures=figures, table=tuple(dict(r) for r in d.get("table", ())),
                   details=dict(d.get("details", {})))


@dataclass(frozen=True)
class AuditResult:
    """Every check of one audit, and what it ran on.

    ``model``, ``ppl``, ``sampler`` and ``data`` name what was audited (``data`` is ``"simulated"`` or a
    description of the user's data); ``settings`` holds the budgets; ``seconds`` the wall time;
    ``provenance`` what was run (command line, date, bdmc version, files, function, observed names, data file,
    budget name, seed); ``pending`` the checks not yet finished (a report written while the audit runs, or
    left by an interrupted one).
    """

    model: str
    ppl: str
    sampler: str
    data: str
    checks: tuple[CheckOutcome, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    provenance: Mapping[str, Any] = field(default_factory=dict)
    pending: tuple[str, ...] = ()

    def __post_init__(self):
        names = [c.name for c in self.checks]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise OptionError(f"check names must be unique within an audit (they key the report's sections and "
                             f"CSV rows); repeated: {repeated}")

    @property
    def verdict(self) -> str:
        """The most severe of: ``"fail"`` (a check failed), ``"error"`` (a check raised), ``"incomplete"``
        (checks pending), ``"inconclusive"``, ``"pass"``, ``"informative"``; ``"not run"`` when none ran."""
        verdicts = {c.verdict for c in self.checks} | ({"incomplete"} if self.pending else set())
        return next((v for v in OVERALL_ORDER if v in verdicts), "not run")

    @property
    def quick(self) -> bool:
        """Whether the audit ran at the quick budget (``Budget.quick()``)."""
        return self.provenance.get("budget") == "quick"

    @property
    def caveat(self) -> str:
        """What the overall verdict does not say: a quick audit's pass is a first look with little power."""
        if self.quick and self.verdict in ("pass", "inconclusive", "informative"):
            return ("quick budget: a first look with little power, not a clean bill; rerun without --quick "
                    "(quick=False) before trusting a pass")
        return ""

    def __repr__(self) -> str:
        checks = ", ".join(f"{c.name}: {c.verdict}" for c in self.checks)
        pending = f", pending {list(self.pending)}" if self.pending else ""
        return (f"AuditResult(model={self.model!r}, sampler={self.sampler!r}, verdict={self.verdict!r}, "
                f"checks={{{checks}}}{pending}, {self.seconds:.0f} s)")

    def to_dict(self) -> dict:
        return {"model": self.model, "ppl": self.ppl, "sampler": self.sampler, "data": self.data,
                "verdict": self.verdict, "caveat": self.caveat, "provenance": dict(self.provenance),
                "pending": list(self.pending), "settings": dict(self.settings), "seconds": self.seconds,
                "checks": [c.to_dict() for c in self.checks]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, pngs: Mapping[str, tuple[bytes, ...]] | None = None
                  ) -> AuditResult:
        """Rebuild an audit from :meth:`to_dict` (or ``results.json``), without rerunning anything.

        ``pngs`` maps a check's name to its figures' PNG bytes; checks not in it come back without figures.
        Extra keys (``verdict``, which is derived, and the report's versions) are ignored.
        """
        pngs = pngs or {}
        checks = tuple(CheckOutcome.from_dict(c, pngs=pngs.get(c["name"])) for c in d["checks"])
        return cls(model=d["model"], ppl=d["ppl"], sampler=d["sampler"], data=d["data"], checks=checks,
                   settings=dict(d.get("settings", {})), seconds=float(d.get("seconds", 0.0)),
                   provenance=dict(d.get("provenance", {})), pending=tuple(d.get("pending", ())))
