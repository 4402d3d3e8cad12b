"""plot_sandwich draws what the table holds."""

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from bdmc.plotting import plot_sandwich


def make_table(exact=np.nan, steps=(10, 100, 1000)):
    rows = []
    for i, T in enumerate(steps):
        width = 2.0 / 10**i
        for direction, bound, value in (("forward", "lower", -10.0 - width), ("reverse", "upper", -10.0 + width)):
            rows.append({"num_steps": T, "direction": direction, "bound": bound, "value": value, "stderr": 0.1,
                         "num_runs": 4, "exact": exact})
    return pd.DataFrame(rows)


def exact_lines(ax):
    return [line for line in ax.lines if line.get_gid() == "exact"]


def test_returns_figure_with_bounds_and_exact_line():
    fig = plot_sandwich(make_table(), exact=-10.0)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    assert ax.get_xlabel() == "intermediate distributions T" and ax.get_ylabel() == "log p(y) (nats)"
    (line,) = exact_lines(ax)
    assert np.allclose(line.get_ydata(), -10.0)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("lower bound" in t for t in labels) and any("upper bound" in t for t in labels)
    assert any("exact" in t for t in labels)
    bars = {c.get_label(): c.lines[0] for c in ax.containers}  # errorbar containers: (data line, caps, bars)
    lower = next(v for k, v in bars.items() if "lower" in k)
    assert np.allclose(lower.get_xdata(), [10, 100, 1000])
    assert np.allclose(lower.get_ydata(), [-12.0, -10.2, -10.02])
    assert len(ax.collections) >= 1  # the shaded band (and error bars)


def test_exact_from_table_column_or_absent():
    (ax,) = plot_sandwich(make_table(exact=-10.0)).axes
    (line,) = exact_lines(ax)
    assert np.allclose(line.get_ydata(), -10.0)
    (ax,) = plot_sandwich(make_table()).axes
    assert exact_lines(ax) == []


def test_draws_into_given_axes_and_handles_partial_tables(tmp_path):
    fig = Figure()
    ax = fig.subplots()
    table = make_table().iloc[:5]  # the last length has only its forward run
    table = table.sample(frac=1.0, random_state=0)  # row order does not matter
    assert plot_sandwich(table, ax=ax, title="custom") is fig
    assert ax.get_title() == "custom"
    fig.savefig(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="stderr"):
        plot_sandwich(pd.DataFrame({"num_steps": [10], "direction": ["forward"], "value": [0.0]}))


def crossed_table():
    """Bounds in order at T = 10 and 1000, crossed (lower above upper) at T = 100."""
    values = {10: (-12.0, -8.0), 100: (-9.5, -10.5), 1000: (-10.1, -9.9)}
    return pd.DataFrame([{"num_steps": T, "direction": d, "value": v, "stderr": 0.1, "num_runs": 4}
                         for T, pair in values.items() for d, v in zip(("forward", "reverse"), pair, strict=False)])


def fills(ax, gid):
    """The x of every vertex of the fills with this gid (the band ``between``, the hatched ``crossed``)."""
    return [np.concatenate([path.vertices[:, 0] for path in c.get_paths()]) for c in ax.collections
            if c.get_gid() == gid]


def test_crossed_bounds_are_hatched_apart_from_the_band_between_them():
    (ax,) = plot_sandwich(crossed_table()).axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "bounds crossed (lower above upper)" in labels and "between the bounds" in labels
    (crossed,) = [c for c in ax.collections if c.get_gid() == "crossed"]
    assert crossed.get_hatch() == "///"
    # The crossed region runs from where the lines meet before T = 100 to where they meet after it; the lines
    # are straight in log T, so the first meeting is at 10^(1 + 4/5).
    (xs,) = fills(ax, "crossed")
    assert xs.min() == pytest.approx(10 ** 1.8, rel=1e-9) and 100 < xs.max() < 1000 and 100 in xs
    (band,) = fills(ax, "between")
    assert 100 not in band and not ((band > xs.min()) & (band < xs.max())).any()
    assert {10, 1000} <= set(band)


def test_bounds_in_order_have_one_band_and_no_crossed_region():
    (ax,) = plot_sandwich(make_table()).axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "between the bounds" in labels and not any("crossed" in t for t in labels)
    assert fills(ax, "crossed") == [] and {10, 100, 1000} <= set(fills(ax, "between")[0])
