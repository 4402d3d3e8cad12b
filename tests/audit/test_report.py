"""The audit's report: a self-contained page, escaped text, JSON and CSV that read back, atomic writes."""

import base64
import json
import math
import os
import re
from html.parser import HTMLParser

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from bdmc.auditing import AuditResult, CheckOutcome, Figure  # noqa: E402
from bdmc.auditing import report as report_module  # noqa: E402
from bdmc.auditing.report import REPORT_FILES, REPORT_VERSION, render_html, write_report  # noqa: E402
from bdmc.version import __version__  # noqa: E402

EVIL = '<script>alert("x")</script> & "quoted"'


def png_figure(caption, *, seed=0, size=(4.0, 3.0)):
    rng = np.random.default_rng(seed)
    fig, ax = plt.subplots(figsize=size)
    ax.hist(rng.uniform(size=200), bins=10)
    ax.set_xlabel("rank / (L + 1)")
    return Figure.from_matplotlib(fig, caption, dpi=50)


def make_result(*, title=EVIL):
    sbc = CheckOutcome(
        name="sbc", title=title, verdict="fail", statistic="min p = 0.0004 over 2 parameters (Bonferroni)",
        level=0.01, summary="The ranks of beta[0] are not uniform: the sampler's posterior is too wide.",
        meaning="Ranks of each true parameter among the sampler's draws are uniform when the sampler is right.",
        remedy="Lengthen the warm-up, lower the step size & rerun.",
        figures=(png_figure("Rank histogram of beta[0] <b>with</b> 99% band", seed=1),
                 png_figure("ECDF difference of beta[1]", seed=2)),
        table=tuple({"parameter": f"beta[{i}]", "p": p, "chi2": c, "draws": 100}
                    for i, (p, c) in enumerate([(0.0004, 31.5), (0.41, 9.2)])),
        details={"datasets": 200, "thinning": np.int64(4), "ess": np.float32(87.5), "bad": float("nan")})
    geweke = CheckOutcome(
        name="geweke", title="Geweke: successive-conditional vs forward simulation", verdict="pass",
        statistic="max |z| = 2.1 over 6 statistics", level=0.001, summary="Kernel and simulator agree.",
        figures=(png_figure("z-scores by statistic", seed=3),),
        table=tuple({"statistic": f"m{i}", "z": z} for i, z in enumerate([0.3, -2.1, 1.0])))
    conditional = CheckOutcome(
        name="simulator-density", title="Simulator vs density", verdict="not run", statistic="",
        level=None, summary="The program has no Gibbs conditionals; the forward-simulation checks ran instead.")
    return AuditResult(model="logistic regression (Pima)", ppl="NumPyro", sampler="NumPyro NUTS",
                       data="simulated", checks=(sbc, geweke, conditional),
                       settings={"quick": True, "num_datasets": 200, "steps": [10, 100]}, seconds=93.4)


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text inside <script> elements."""

    def __init__(self):
        super().__init__()
        self.tags, self.scripts, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def parse(page):
    tags = Tags()
    tags.feed(page)
    return tags


@pytest.fixture(scope="module")
def result():
    return make_result()


@pytest.fixture(scope="module")
def page(result):
    return render_html(result)


def test_page_has_every_section_and_every_figure_as_a_data_uri(result, page):
    tags = parse(page)
    ids = [a["id"] for _, a in tags.tags if "id" in a]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for sid in ("verdicts", "settings", "footer", "check-sbc", "check-geweke", "check-simulator-density"):
        assert sid in ids
    # The verdict table links every section, in the audit's order.
    links = [a["href"] for t, a in tags.tags if t == "a" and a.get("href", "").startswith("#check-")]
    assert links == ["#check-sbc", "#check-geweke", "#check-simulator-density"]
    imgs = [a for t, a in tags.tags if t == "img"]
    figures = [f for c in result.checks for f in c.figures]
    assert len(imgs) == len(figures) == 3
    for img, fig in zip(imgs, figures, strict=False):
        assert img["src"] == "data:image/png;base64," + base64.b64encode(fig.png).decode()
        assert (int(img["width"]), int(img["height"])) == fig.size
        assert img["alt"] == fig.caption  # the parser unescapes: the caption survives escaping intact


def test_page_references_nothing_outside_itself(page):
    tags = parse(page)
    assert "http://" not in page and "https://" not in page
    assert not [t for t, _ in tags.tags if t in ("link", "iframe", "object", "embed")]
    for tag, attrs in tags.tags:
        assert attrs.get("src") is None or attrs["src"].startswith("data:image/png;base64,"), tag
        assert attrs.get("href") is None or attrs["href"].startswith("#"), tag
    assert [a for t, a in tags.tags if t == "script"] == [{}]  # one inline script, no src


def test_every_text_is_escaped(result, page):
    assert EVIL not in page and "<b>with</b>" not in page
    assert html_escaped(EVIL) in page
    tags = parse(page)
    assert len(tags.scripts) == 1 and "alert" not in tags.scripts[0]
    assert "b" not in [t for t, _ in tags.tags]
    # Negative control: the same title unescaped would have added a script element.
    assert len(parse(page.replace(html_escaped(EVIL), EVIL)).scripts) > 1


def html_escaped(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def test_header_and_verdict_table_state_the_verdicts(result, page):
    assert result.verdict == "fail"
    head = page[page.index('<header'):page.index('</header>')]
    for text in ("logistic regression (Pima)", "NumPyro", "NumPyro NUTS", "simulated", "v-fail"):
        assert text in head
    table = page[page.index('<table class="verdicts">'):]
    table = table[:table.index("</table>")]
    rows = table.split("<tr>")[2:]
    assert ["v-fail" in rows[0], "v-pass" in rows[1], "v-not-run" in rows[2]] == [True, True, True]
    assert "0.01" in rows[0] and "0.001" in rows[1] and "\u2014" in rows[2]
    assert "1 of 2 checks that ran failed: " + html_escaped(EVIL) in head
    assert "1 passed." in head and "1 not run" in head
    assert f"bdmc {__version__}" in page and "1 min 33 s" in page


def test_long_tables_are_cut_with_a_note():
    rows = tuple({"i": i, "x": i / 7} for i in range(40))
    check = CheckOutcome(name="many", title="many rows", verdict="pass", statistic="s", level=0.05, summary="s",
                         table=rows)
    page = render_html(AuditResult(model="m", ppl="p", sampler="s", data="d", checks=(check,)), max_rows=10)
    body = page[page.index('<table class="numbers">'):]
    assert body[:body.index("</table>")].count("<tr>") == 11  # header and 10 rows
    assert "Showing 10 of 40 rows" in page


def test_report_files_round_trip(tmp_path, result):
    paths = write_report(result, tmp_path / "out")
    assert set(paths) == set(REPORT_FILES) and all(p.is_file() for p in paths.values())
    assert paths["html"].read_text(encoding="utf-8") == render_html(result)

    # JSON: strict (no NaN token), the result's dict plus the versions.
    doc = json.loads(paths["json"].read_text(), parse_constant=lambda c: pytest.fail(f"non-strict JSON: {c}"))
    assert doc["report_version"] == REPORT_VERSION and doc["bdmc_version"] == __version__
    expected = result.to_dict()
    assert doc["verdict"] == "fail" and doc["model"] == expected["model"] and doc["seconds"] == 93.4
    assert [c["name"] for c in doc["checks"]] == ["sbc", "geweke", "simulator-density"]
    sbc = doc["checks"][0]
    assert sbc["details"] == {"datasets": 200, "thinning": 4, "ess": 87.5, "bad": "nan"}
    assert math.isnan(float(sbc["details"]["bad"]))
    assert sbc["table"] == [dict(r) for r in result.checks[0].table]
    assert sbc["figures"] == [f.caption for f in result.checks[0].figures]
    assert doc["settings"] == {"quick": True, "num_datasets": 200, "steps": [10, 100]}

    # CSV: one row per check.
    checks = pd.read_csv(paths["csv"], keep_default_na=False, na_values={"level": [""]})
    assert list(checks.columns) == ["name", "title", "verdict", "statistic", "level", "summary"]
    assert list(checks["name"]) == ["sbc", "geweke", "simulator-density"]
    assert list(checks["verdict"]) == ["fail", "pass", "not run"]
    assert checks["title"][0] == EVIL
    assert checks["level"][:2].tolist() == [0.01, 0.001] and math.isnan(checks["level"][2])
    assert checks["statistic"][0] == result.checks[0].statistic and checks["statistic"][2] == ""

    # The long CSV: every table row, with its check.
    tables = pd.read_csv(paths["tables_csv"])
    assert list(tables.columns) == ["check", "parameter", "p", "chi2", "draws", "statistic", "z"]
    assert tables["check"].tolist() == ["sbc", "sbc", "geweke", "geweke", "geweke"]
    assert tables["p"][:2].tolist() == [0.0004, 0.41] and tables["z"][2:].tolist() == [0.3, -2.1, 1.0]
    assert tables["p"][2:].isna().all()


def test_writes_are_atomic_and_leave_no_temporary_files(tmp_path, result, monkeypatch):
    out = tmp_path / "out"
    write_report(result, out, title="first")
    write_report(result, out, title="second")
    assert sorted(p.name for p in out.iterdir()) == sorted(REPORT_FILES.values())
    mask = os.umask(0o022)
    os.umask(mask)
    assert {p.stat().st_mode & 0o777 for p in out.iterdir()} == {0o666 & ~mask}  # not mkstemp's private 0600
    assert "<h1>second</h1>" in (out / "report.html").read_text()

    # A write that fails at the rename leaves the previous files whole and no temporary file behind.
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(report_module.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_report(result, out, title="third")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_out_dir_that_is_a_file_is_refused(tmp_path, result):
    target = tmp_path / "a-file"
    target.write_text("")
    with pytest.raises(NotADirectoryError, match="a-file"):
        write_report(result, target)


@pytest.mark.parametrize("verdict", ["passed", "FAIL", "", None])
def test_a_bad_verdict_is_refused_naming_the_check(verdict):
    with pytest.raises(ValueError, match="check 'sbc': verdict must be one of"):
        CheckOutcome(name="sbc", title="t", verdict=verdict, statistic="s", level=0.01, summary="s")


@pytest.mark.parametrize("level", [0, 0.0, 1.0, 1.5, -0.01, float("nan"), "0.01", True])
def test_a_bad_level_is_refused_naming_the_check(level):
    with pytest.raises(ValueError, match="check 'sbc': level"):
        CheckOutcome(name="sbc", title="t", verdict="pass", statistic="s", level=level, summary="s")


def test_good_levels_are_accepted():
    for level in (None, 1e-6, 0.01, np.float64(0.05), np.float32(0.5)):
        CheckOutcome(name="sbc", title="t", verdict="pass", statistic="s", level=level, summary="s")


def test_repeated_check_names_and_bad_figures_are_refused():
    check = CheckOutcome(name="sbc", title="t", verdict="pass", statistic="s", level=0.01, summary="s")
    with pytest.raises(ValueError, match=r"repeated: \['sbc'\]"):
        AuditResult(model="m", ppl="p", sampler="s", data="d", checks=(check, check))
    with pytest.raises(ValueError, match="figure 'ranks': png must be the bytes of a PNG file"):
        Figure(png=b"GIF89a...", caption="ranks")
    with pytest.raises(ValueError, match="figures must be Figure objects"):
        CheckOutcome(name="sbc", title="t", verdict="pass", statistic="s", level=0.01, summary="s",
                     figures=(b"\x89PNG",))


def test_figure_size_is_read_from_the_png():
    fig, _ = plt.subplots(figsize=(3.0, 2.0))
    figure = Figure.from_matplotlib(fig, "blank", dpi=40)
    width, height = figure.size
    # A tight bounding box trims a little; the size is that of the bytes actually written.
    image = plt.imread(__import__("io").BytesIO(figure.png))
    assert (width, height) == (image.shape[1], image.shape[0])
    assert 0 < width <= 3.0 * 40 + 2 and 0 < height <= 2.0 * 40 + 2
    assert not plt.get_fignums()  # from_matplotlib closed it


def test_render_refuses_what_is_not_an_audit_result(tmp_path):
    with pytest.raises(TypeError, match="AuditResult"):
        render_html({"model": "m"})
    with pytest.raises(TypeError, match="AuditResult"):
        write_report({"model": "m"}, tmp_path)
    assert not os.listdir(tmp_path)


def test_every_verdict_has_its_badge_and_the_overall_sentence_counts_them():
    checks = tuple(CheckOutcome(name=f"c{i}", title=f"check {i}", verdict=v, statistic="s", level=0.01, summary="s")
                   for i, v in enumerate(["pass", "inconclusive", "not run", "pass"]))
    result = AuditResult(model="m", ppl="p", sampler="s", data="d", checks=checks)
    page = render_html(result)
    assert result.verdict == "inconclusive"
    assert 'class="badge big v-inconclusive"' in page
    for verdict in ("pass", "inconclusive", "not-run"):
        assert f'class="badge v-{verdict}"' in page
    assert "1 could not decide: check 1. 2 passed. 1 not run" in page


def contrast(fg, bg):
    """WCAG 2 contrast ratio of two #rrggbb colours."""
    def luminance(colour):
        c = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        c = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    hi, lo = sorted([luminance(fg), luminance(bg)], reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_verdict_colours_are_readable():
    """Each verdict's text colour on its background meets WCAG AA for normal text (4.5:1)."""
    from bdmc.auditing.report_html import CSS
    colours = dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-f]{6})", CSS))
    for v in ("pass", "fail", "inc", "nr"):
        assert contrast(colours[f"{v}-fg"], colours[f"{v}-bg"]) >= 4.5, v
    assert contrast(colours["muted"], colours["band"]) >= 4.5
    assert contrast("#777777", "#ffffff") < 4.5  # the measure can fail


def test_results_json_rebuilds_the_audit_and_its_page(tmp_path, result):
    """results.json plus the figures' PNG bytes give back the same audit, hence the same page."""
    finite = AuditResult(**{**result.__dict__, "checks": tuple(
        CheckOutcome(**{**c.__dict__, "details": {k: v for k, v in c.details.items() if k != "bad"}})
        for c in result.checks)})
    doc = json.loads(write_report(finite, tmp_path)["json"].read_text())
    pngs = {c.name: tuple(f.png for f in c.figures) for c in finite.checks}
    rebuilt = AuditResult.from_dict(doc, pngs=pngs)
    assert rebuilt.to_dict() == json.loads(json.dumps(finite.to_dict(), default=lambda v: v.tolist()))
    assert render_html(rebuilt) == render_html(finite)
    assert [len(c.figures) for c in AuditResult.from_dict(doc).checks] == [0, 0, 0]
    with pytest.raises(ValueError, match="check 'sbc': 2 figure captions but 1 PNGs"):
        AuditResult.from_dict(doc, pngs={"sbc": pngs["sbc"][:1]})


def test_details_name_their_records_and_long_models_get_a_short_title():
    check = CheckOutcome(name="sbc", title="t", verdict="pass", statistic="s", level=0.01, summary="s",
                         details={"quantities": [{"q": "beta", "p": 0.3}, {"q": "s2", "p": 0.5}],
                                  "settings": {"sampler": {"warmup": 150}}})
    model = "LinearRegression(n=20, degree=3, tau=0.1, h0=1.0, k0=1.0, x_range=(-2.0, 2.0))"
    page = render_html(AuditResult(model=model, ppl="p", sampler="s", data="d", checks=(check,)))
    assert "2 records (in results.json)" in page and "settings.sampler.warmup" in page
    assert "<h1>bdmc audit</h1>" in page and f"<dd>{model}</dd>" in page
