"""Every results page is rendered from the rows stored beside it, and the stored page is that rendering.

A results folder ``benchmarks/results/<name>/`` holds rows (JSON lines, CSV, JSON) and pages (``.md``). Each page
has a template of the same path under ``benchmarks/pages/<name>/`` (Markdown with ``{{value:spec}}``
placeholders), and ``benchmarks/pages/<name>/values.py`` computes the values from the stored rows
(``benchmarks/harness/pages.py``). The test fails when a results folder has no templates, when a page has no
template, when a file lies loose at the top of ``benchmarks/results/``, and when a stored page differs from its
rendering byte for byte: a row changed without its page, or a page edited by hand. Rendering reads rows and
computes; it never runs a benchmark.
"""

import json
import shutil
from pathlib import Path

import pytest
from helpers import import_benchmark

from bdmc.errors import OptionError

pages = import_benchmark("harness.pages")
RESULTS, PAGES = pages.RESULTS, pages.PAGES


def folders(results: Path = RESULTS) -> list[str]:
    return sorted(p.name for p in results.iterdir() if p.is_dir() and not p.name.startswith((".", "__")))


def unrendered(results: Path = RESULTS, templates: Path = PAGES) -> list[str]:
    """What breaks the layout: loose files, results folders without templates, pages without a template."""
    problems = [f"loose file {p.name}" for p in results.iterdir() if p.is_file()]
    for name in folders(results):
        if not (templates / name).is_dir():
            problems.append(f"{name}: no benchmarks/pages/{name}/")
            continue
        for page in sorted((results / name).rglob("*.md")):
            relative = page.relative_to(results / name)
            if not (templates / name / relative).is_file():
                problems.append(f"{name}/{relative}: no template")
    return problems


def test_every_results_page_has_a_template():
    problems = unrendered()
    assert not problems, "results without a renderer:\n" + "\n".join(problems)


def test_every_template_folder_names_a_results_folder():
    stale = sorted(p.name for p in PAGES.iterdir() if p.is_dir() and not p.name.startswith("__")
                   and not (RESULTS / p.name).is_dir())
    assert not stale, f"benchmarks/pages/ folders with no results folder: {stale}"


@pytest.mark.parametrize("name", folders())
def test_stored_pages_are_their_rendering(name):
    if not (PAGES / name).is_dir():
        pytest.fail(f"benchmarks/results/{name}/ has no templates under benchmarks/pages/{name}/")
    rendered = pages.render_folder(name)
    for path, text in rendered.items():
        assert path.exists(), f"{path} is not stored: python3 -m harness.render {name} (from benchmarks/)"
        stored = path.read_text()
        assert stored == text, (f"{path} differs from its rendering from the stored rows (rerun "
                                f"`python3 benchmarks/harness/render.py {name}` and reread its sentences)")


def copy_folder(tmp_path: Path, name: str) -> Path:
    results = tmp_path / "results"
    shutil.copytree(RESULTS / name, results / name)
    return results


def test_a_changed_row_changes_the_page(tmp_path):
    """Negative control: one stored row changed in a copy renders differently; the unchanged copy does not."""
    name = "check_estimate"
    results = copy_folder(tmp_path, name)
    stored = {path.name: path.read_text() for path in (RESULTS / name).glob("*.md")}
    assert {p.name: t for p, t in pages.render_folder(name, results=results).items()} == stored
    rows_file = results / name / "rows.jsonl"
    lines = rows_file.read_text().splitlines()
    row = json.loads(lines[0])
    assert row["wrong_verdict"] is False
    lines[0] = json.dumps({**row, "wrong_verdict": True})
    rows_file.write_text("\n".join(lines) + "\n")
    changed = pages.render_folder(name, results=results)
    assert changed[results / name / "README.md"] != stored["README.md"]


def test_a_page_without_a_template_is_caught(tmp_path):
    """Negative control for the layout check: a new folder, a new page and a loose file are each reported."""
    results = copy_folder(tmp_path, "check_estimate")
    assert unrendered(results) == []
    (results / "new_study").mkdir()
    (results / "new_study" / "README.md").write_text("a page\n")
    (results / "check_estimate" / "notes.md").write_text("another page\n")
    (results / "loose.jsonl").write_text("{}\n")
    assert unrendered(results) == ["loose file loose.jsonl", "check_estimate/notes.md: no template",
                                   "new_study: no benchmarks/pages/new_study/"]


def test_render_formats_and_refuses_mismatches():
    render = pages.render
    values = {"p": 1.5e-4, "n": 4096, "d": -2128.9, "t": "| a |", "w": 10.0, "big": 2.5e12}
    text = "{{p:e1}} {{n:,.0f}} {{d:.2fu}} {{t}} {{w:+.1f}} {{big:e2}} {{p:.2e}}"
    assert render(text, values) == "1.5e-4 4,096 \u22122128.90 | a | +10.0 2.50e12 1.50e-04"
    with pytest.raises(OptionError, match="no value"):
        render("{{p:e1}} {{q}}", {"p": 1.0})
    with pytest.raises(OptionError, match="no placeholder uses"):
        render("{{p:e1}}", {"p": 1.0, "q": 2.0})
    with pytest.raises(OptionError, match="does not apply"):
        render("{{t:.2f}}", {"t": "text"})
