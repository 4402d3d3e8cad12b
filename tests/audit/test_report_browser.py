"""The audit's report opened in a real browser (Debian's headless Chromium): it loads without errors, every
section is there and every figure decodes; a screenshot is rendered (``BDMC_REPORT_SCREENS`` keeps it).

Skipped only when no Chromium binary exists and ``BDMC_REQUIRE_BROWSER`` is unset; CI sets it, so there a
missing browser fails the test instead.
"""

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from bdmc.auditing import AuditResult, CheckOutcome, Figure  # noqa: E402
from bdmc.auditing.report import render_html, write_report  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("BDMC_REQUIRE_BROWSER", "") not in ("", "0")
# Any host name resolves to nothing, so a page that needed the network would show a failed load.
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--hide-scrollbars", "--disable-dev-shm-usage",
         "--host-resolver-rules=MAP * ~NOTFOUND"]


@pytest.fixture(scope="module")
def chromium():
    if CHROMIUM is None:
        message = ("no Chromium binary on PATH (Debian: apt-get install -y chromium); the report's browser test "
                   "needs one")
        if REQUIRED:
            pytest.fail(message + " and BDMC_REQUIRE_BROWSER is set")
        pytest.skip(message + "; set BDMC_REQUIRE_BROWSER=1 to fail instead of skipping")
    return CHROMIUM


def run_chromium(binary, profile, *args):
    proc = subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, f"chromium exited with {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout


def dump_dom(binary, profile, page: Path) -> str:
    return run_chromium(binary, profile, "--dump-dom", page.resolve().as_uri())


class BodyAndIds(HTMLParser):
    def __init__(self):
        super().__init__()
        self.body, self.ids = {}, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "body":
            self.body = attrs
        if "id" in attrs:
            self.ids.append(attrs["id"])


def parse_dom(dom):
    parser = BodyAndIds()
    parser.feed(dom)
    return parser


def plot(kind, caption, *, seed, size=(7.0, 3.6)):
    """Figures the size the audit's plots are (7 inches wide, 100 dpi)."""
    rng = np.random.default_rng(seed)
    fig, axes = plt.subplots(1, 2 if kind == "ranks" else 1, figsize=size, squeeze=False)
    for ax in axes.ravel():
        if kind == "ranks":
            ax.hist(rng.integers(0, 100, 300), bins=20, color="#4c72b0")
            ax.axhspan(6, 24, color="0.85", zorder=0)
            ax.set_xlabel("rank of the true value among 99 draws")
        elif kind == "sandwich":
            steps = np.array([10, 30, 100, 300, 1000])
            ax.semilogx(steps, -120 - 40 / np.sqrt(steps), "o-", label="forward (lower)")
            ax.semilogx(steps, -120 + 35 / np.sqrt(steps), "s-", label="reverse (upper)")
            ax.set_xlabel("chain length T")
            ax.set_ylabel("log p(y) (nats)")
            ax.legend()
        else:
            ax.plot(np.cumsum(rng.normal(size=400)))
            ax.set_xlabel("iteration")
    fig.tight_layout()
    return Figure.from_matplotlib(fig, caption, dpi=100)


def realistic_result():
    """An audit as a user would see one: five checks, long sentences, a few figures and tables."""
    checks = (
        CheckOutcome(
            name="simulator-density", title="Simulator vs density (conditional vs joint)", verdict="pass",
            statistic="max violation 3.1e-13 nats over 4 conditionals x 3 lambdas", level=None,
            summary="Every Gibbs conditional agrees with the joint density to rounding.",
            meaning="For random triples (x, x', u) the ratio p(x|u)/p(x'|u) must equal f(x,u)/f(x',u) exactly; "
                    "constants cancel, so this sees variances and shapes, not normalizers.",
            remedy="Compare the failing conditional's formula with the joint density term by term.",
            figures=(plot("trace", "Largest violation per conditional and lambda", seed=1, size=(7.0, 2.6)),),
            table=tuple({"conditional": f"beta[{i}]", "lam": lam, "violation": 10.0 ** -(12 + i)}
                        for i in range(4) for lam in (0.0, 0.5, 1.0))),
        CheckOutcome(
            name="sbc", title="Simulation-based calibration of NumPyro's NUTS", verdict="fail",
            statistic="min p = 0.0004 over 9 parameters (Bonferroni)", level=0.01,
            summary="The ranks of sigma pile up at the ends: the sampler's posterior for sigma is too narrow.",
            meaning="If the sampler draws from the exact posterior, the rank of each parameter's true value "
                    "among its draws is uniform over 0..L; a U shape means too narrow, a hump too wide.",
            remedy="Lengthen the warm-up (num_warmup), lower target_accept's step size, or reparameterize "
                   "sigma on the log scale; rerun with --quick off for more data sets.",
            figures=(plot("ranks", "Rank histograms of beta[0] and sigma with the 99% band of uniform ranks",
                          seed=2),
                     plot("trace", "ECDF difference of the ranks of sigma", seed=3, size=(5.0, 3.2))),
            table=tuple({"parameter": p, "chi2": c, "p": pv, "ess_min": e}
                        for p, c, pv, e in [("beta[0]", 22.1, 0.28, 412), ("beta[1]", 17.4, 0.56, 398),
                                            ("sigma", 55.0, 0.00004, 61)])),
        CheckOutcome(
            name="geweke", title="Geweke test of NumPyro's NUTS", verdict="not run", statistic="-", level=None,
            summary="Not run: NumPyro's NUTS adapts during warm-up, so it is not a fixed kernel that can be "
                    "started from a given state."),
        CheckOutcome(
            name="bdmc", title="BDMC on simulated data: sandwich, BREAD and the bug alarm", verdict="pass",
            statistic="alarm silent; gap 0.8 nats at T = 1000", level=0.01,
            summary="Forward and reverse AIS close to within 0.8 nats; B-hat falls with chain length.",
            meaning="Forward AIS is a stochastic lower bound and reverse AIS an upper bound on log p(y); their "
                    "gap bounds the sampler's KL divergence from the posterior.",
            remedy="A firing alarm means a simulator or kernel bug; a wide gap means more steps are needed.",
            figures=(plot("sandwich", "Forward and reverse AIS on simulated data", seed=4),
                     plot("sandwich", "B-hat against chain length (BREAD)", seed=5, size=(5.0, 3.6))),
            table=tuple({"steps": t, "lower": -120 - 40 / t ** 0.5, "upper": -120 + 35 / t ** 0.5, "runs": 16}
                        for t in (10, 30, 100, 300, 1000)),
            details={"num_chains": 16, "alarm": {"fired": False, "level": 0.01, "margin": 5.3}}),
        CheckOutcome(
            name="evidence", title="Evidence: log p(y) of the Pima data", verdict="pass",
            statistic="log p(y) >= -362.4 (certified lower bound)", level=None,
            summary="With probability at least 0.99, log p(y) >= -362.4 - 4.6 nats.",
            figures=(plot("sandwich", "Bounds on log p(y) by chain length", seed=6),),
            table=({"bound": "lower", "value": -362.4}, {"bound": "upper (bracketing)", "value": -358.9})),
    )
    return AuditResult(model="logistic regression", ppl="NumPyro", sampler="NumPyro NUTS (500 warm-up, 500 draws)",
                       data="Pima Indians diabetes (bdmc.datasets), 768 cases x 8 predictors", checks=checks,
                       settings={"quick": True, "sbc_datasets": 200, "steps": [10, 100, 1000], "seed": 0},
                       seconds=104.2)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("report_browser")


@pytest.fixture(scope="module")
def report(workdir):
    result = realistic_result()
    return result, write_report(result, workdir / "report")["html"]


@pytest.fixture(scope="module")
def dom(chromium, workdir, report):
    return parse_dom(dump_dom(chromium, workdir / "profile", report[1]))


def test_page_loads_without_errors(dom):
    assert dom.body.get("data-loaded") == "true", f"the load handler never ran: {dom.body}"
    assert json.loads(dom.body["data-errors"]) == []


def test_every_section_is_present(dom, report):
    result, _ = report
    expected = ["verdicts", "settings", "footer", "overall"] + [f"check-{c.name}" for c in result.checks]
    assert set(expected) <= set(dom.ids), sorted(set(expected) - set(dom.ids))


def test_every_figure_decodes(dom, report):
    result, _ = report
    count = sum(len(c.figures) for c in result.checks)
    assert int(dom.body["data-images"]) == count == 6
    assert int(dom.body["data-figures"]) == count


def test_broken_figures_scripts_and_network_references_are_caught(chromium, workdir, report):
    """Negative control: the same page with one figure's bytes corrupted, a script error and an image from the
    network reports all three."""
    page = report[1].read_text()
    first = re.search(r'src="data:image/png;base64,([^"]+)"', page)
    broken = page.replace(first.group(1), "AAAA" + first.group(1)[4:], 1)
    broken = broken.replace("</body>", '<img src="https://example.invalid/x.png" alt="remote">'
                                       "<script>notDefinedAnywhere();</script></body>")
    path = workdir / "broken.html"
    path.write_text(broken)
    body = parse_dom(dump_dom(chromium, workdir / "profile-broken", path)).body
    errors = json.loads(body["data-errors"])
    assert any("notDefinedAnywhere" in e for e in errors), errors
    assert any("remote" in e for e in errors), errors
    assert int(body["data-images"]) == 7 and int(body["data-figures"]) == 5


def test_screenshot_renders_the_verdict_colours(chromium, workdir, report):
    keep = os.environ.get("BDMC_REPORT_SCREENS")
    out = Path(keep) if keep else workdir
    out.mkdir(parents=True, exist_ok=True)
    shot = out / "report_1280x2400.png"
    run_chromium(chromium, workdir / "profile-shot", f"--screenshot={shot}", "--window-size=1280,2400",
                 report[1].resolve().as_uri())
    image = plt.imread(shot)[..., :3]
    assert image.shape[:2] == (2400, 1280)
    rgb = np.round(image * 255).astype(int).reshape(-1, 3)
    colours = {tuple(c) for c in np.unique(rgb[:: 7], axis=0)}
    assert len(colours) > 50, "the screenshot is nearly blank"
    # The fail badge's and the pass badge's backgrounds (CSS --fail-bg, --pass-bg) are on screen.
    for name, colour in (("fail", (0xFF, 0xEB, 0xE9)), ("pass", (0xDA, 0xFB, 0xE1))):
        assert (np.abs(rgb - colour).sum(1) <= 3).sum() > 200, f"no {name} badge colour in the screenshot"


def test_render_is_what_was_written(report):
    result, path = report
    assert path.read_text() == render_html(result)
