"""The output store of every command: atomic settings, appended rows, damaged-row recovery, settings diffs."""

import json
import math

import numpy as np
import pytest

from bdmc.experiments.generative_store import RowStore
from bdmc.experiments.store import DamagedRowWarning, RunStore, StoreError, prepare_output_dir, read_jsonl

DTYPES = {"name": str, "knob": int, "value": float, "flag": bool}
SETTINGS = {"seed": 0, "chains": 4, "version": "a"}


def open_store(out, settings=SETTINGS, **kwargs):
    return RunStore(out, csv_name="rows.csv", dtypes=DTYPES, key=("name", "knob"), settings=settings,
                    compare=("seed", "chains"), **kwargs)


def rows(n):
    return [{"name": "x", "knob": k, "value": -16.415 + k / 3, "flag": k % 2 == 0} for k in range(1, n + 1)]


def test_rows_round_trip_exactly_and_the_settings_file_states_the_contents(tmp_path):
    store = open_store(tmp_path)
    odd = [{"name": "a,b \"q\"", "knob": 1, "value": math.nan, "flag": True},
           {"name": "c", "knob": 2, "value": 1e-310, "flag": False},
           {"name": "c", "knob": 3, "value": -math.inf, "flag": False}, *rows(3)]
    store.append(*odd[:2])
    store.append(*odd[2:])
    saved = json.loads((tmp_path / "settings.json").read_text())
    assert saved["settings"] == SETTINGS and saved["contents"]["rows"] == 6
    assert saved["contents"]["keys"][:2] == [["a,b \"q\"", 1], ["c", 2]]
    again = open_store(tmp_path)
    assert again.resumed == 6
    for got, want in zip(again.rows, odd, strict=False):
        assert got.keys() == want.keys()
        assert all(got[k] == want[k] or (k == "value" and math.isnan(got[k]) and math.isnan(want[k])) for k in got)
    assert not list(tmp_path.glob(".*tmp"))  # atomic writes leave no temporary files behind


def test_a_rewrite_replaces_the_rows_and_saves_its_records_with_them(tmp_path):
    store = open_store(tmp_path)
    store.append(*rows(3))
    with pytest.raises(StoreError, match="'contents' is reserved"):
        store.rewrite(rows(1), records={"contents": 1})
    assert len(open_store(tmp_path).rows) == 3  # a refused rewrite writes nothing
    store.rewrite([{**r, "value": 0.5} for r in rows(2)], records={"verdict": {"fired": False}})
    saved = json.loads((tmp_path / "settings.json").read_text())
    assert saved["verdict"] == {"fired": False} and saved["contents"]["rows"] == 2
    again = open_store(tmp_path)
    assert [r["value"] for r in again.rows] == [0.5, 0.5] and again.records == {"verdict": {"fired": False}}

@pytest.mark.parametrize("cut", ["inside-a-number", "inside-the-header"])
def test_a_cut_last_row_is_dropped_with_a_warning(tmp_path, cut):
    open_store(tmp_path).append(*rows(3))
    text = (tmp_path / "rows.csv").read_text()
    if cut == "inside-a-number":
        start = text.rstrip("\n").rindex("\n") + 1
        damaged = text[:start + 8]  # the last row cut to "x,3,-15." without the rest or its newline
        expect = 2
    else:
        damaged = text[:6]
        expect = 0
    (tmp_path / "rows.csv").write_text(damaged)
    with pytest.warns(DamagedRowWarning, match="cut off"):
        store = open_store(tmp_path)
    assert [r["knob"] for r in store.rows] == [1, 2][:expect]
    store.append(*rows(3)[expect:])  # the recomputed rows follow on clean lines
    assert [r["knob"] for r in open_store(tmp_path).rows] == [1, 2, 3]


def test_a_last_row_that_does_not_parse_is_dropped_but_damage_elsewhere_is_refused(tmp_path):
    open_store(tmp_path).append(*rows(3))
    lines = (tmp_path / "rows.csv").read_text().splitlines(keepends=True)
    (tmp_path / "rows.csv").write_text("".join(lines[:-1]) + "x,3,-1.5\n")  # a field missing
    with pytest.warns(DamagedRowWarning, match="3 fields, expected 4"):
        assert len(open_store(tmp_path).rows) == 2
    (tmp_path / "rows.csv").write_text(lines[0] + "x,1,abc,True\n" + "".join(lines[2:]))
    with pytest.raises(StoreError, match="line 2 is damaged"):
        open_store(tmp_path)


def test_changed_settings_are_listed_and_overwrite_discards(tmp_path):
    open_store(tmp_path).append(*rows(2))
    (tmp_path / "figure.png").write_bytes(b"old")
    with pytest.raises(StoreError, match=r"seed: 0 -> 1; chains: 4 -> 8.*--overwrite"):
        open_store(tmp_path, {**SETTINGS, "seed": 1, "chains": 8})
    informational = open_store(tmp_path, {**SETTINGS, "version": "b"})  # not compared: resumed, updated
    assert informational.resumed == 2
    assert json.loads((tmp_path / "settings.json").read_text())["settings"]["version"] == "b"
    fresh = open_store(tmp_path, {**SETTINGS, "seed": 1}, overwrite=True, discard=("figure.png",))
    assert fresh.rows == [] and not (tmp_path / "rows.csv").exists() and not (tmp_path / "figure.png").exists()
    assert json.loads((tmp_path / "settings.json").read_text())["settings"]["seed"] == 1


def test_rows_without_settings_and_settings_of_older_versions(tmp_path):
    open_store(tmp_path).append(*rows(1))
    (tmp_path / "settings.json").unlink()
    with pytest.raises(StoreError, match="without settings.json"):
        open_store(tmp_path)
    (tmp_path / "settings.json").write_text(json.dumps(SETTINGS))  # the flat layout of older versions
    assert open_store(tmp_path).resumed == 1


def test_an_unusable_output_directory_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(StoreError, match="is a file"):
        prepare_output_dir(tmp_path / "f")
    with pytest.raises(StoreError, match="cannot create"):
        prepare_output_dir(tmp_path / "f" / "sub")
    assert prepare_output_dir(tmp_path / "new" / "dir").is_dir()


def test_read_jsonl_reports_and_drops_a_torn_last_line_and_refuses_a_damaged_middle(tmp_path):
    path = tmp_path / "rows.jsonl"
    assert read_jsonl(path) == []
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b"')  # interrupted while writing the third row
    with pytest.warns(DamagedRowWarning, match=r"rows\.jsonl, line 3: its last row is cut off"):
        assert read_jsonl(path) == [{"a": 1}, {"a": 2}]
    assert path.read_text().endswith('"b"')  # a reader reports; only a store repairs
    path.write_text('{"a": 1}\nnot json\n{"a": 3}\n')
    with pytest.raises(StoreError, match="line 2"):
        read_jsonl(path)


# ------------------------------------------------------------------ the same store for CSV and JSON-lines rows

FORMATS = {
    "csv": dict(csv_name="rows.csv", dtypes=DTYPES),
    "jsonl": dict(jsonl_name="rows.jsonl"),
}


def open_either(out, fmt, settings=SETTINGS, **kwargs):
    return RunStore(out, **FORMATS[fmt], key=("name", "knob"), settings=settings, compare=("seed", "chains"),
                    **kwargs)


def rows_file(out, fmt):
    return out / ("rows.csv" if fmt == "csv" else "rows.jsonl")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_cut_off_last_row_is_reported_dropped_recomputed_and_the_file_repaired_in_either_format(tmp_path, fmt):
    open_either(tmp_path, fmt).append(*rows(3))
    path = rows_file(tmp_path, fmt)
    whole = path.read_text()
    path.write_text(whole[:-9])  # a crash in the middle of the third row's line
    with pytest.warns(DamagedRowWarning) as caught:
        store = open_either(tmp_path, fmt)
    (warning,) = caught
    line = 4 if fmt == "csv" else 3  # CSV has a header line
    assert f"{path}, line {line}: its last row is cut off" in str(warning.message)
    assert "recomputed" in str(warning.message)
    assert [r["knob"] for r in store.rows] == [1, 2] and store.resumed == 2
    assert not store.has(("x", 3))  # so the caller recomputes it
    assert path.read_text().endswith("\n")  # repaired before anything is appended
    store.append(*rows(3)[2:])
    assert path.read_text() == whole  # whole lines, as if never interrupted
    again = open_either(tmp_path, fmt)
    assert again.rows == store.rows == [dict(r) for r in rows(3)]
    assert json.loads((tmp_path / "settings.json").read_text())["contents"]["rows"] == 3


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_last_line_without_its_newline_is_cut_off_even_if_it_parses(tmp_path, fmt):
    open_either(tmp_path, fmt).append(*rows(2))
    path = rows_file(tmp_path, fmt)
    path.write_text(path.read_text()[:-1])  # only the newline is missing: the write was not finished
    with pytest.warns(DamagedRowWarning, match="cut off"):
        assert [r["knob"] for r in open_either(tmp_path, fmt).rows] == [1]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_damage_before_the_last_line_and_changed_settings_are_refused_alike(tmp_path, fmt):
    open_either(tmp_path, fmt).append(*rows(3))
    with pytest.raises(StoreError, match=r"seed: 0 -> 1.*--overwrite"):
        open_either(tmp_path, fmt, {**SETTINGS, "seed": 1})
    assert open_either(tmp_path, fmt, {**SETTINGS, "version": "b"}).resumed == 3  # informational
    path = rows_file(tmp_path, fmt)
    lines = path.read_text().splitlines(keepends=True)
    lines[-2] = lines[-2][:5] + "\n"
    path.write_text("".join(lines))
    with pytest.raises(StoreError, match=f"line {len(lines) - 1} is damaged"):
        open_either(tmp_path, fmt)
    assert open_either(tmp_path, fmt, overwrite=True).rows == []


def test_json_rows_keep_nested_values_and_need_their_key(tmp_path):
    store = open_either(tmp_path, "jsonl")
    (stored,) = store.append({"name": "x", "knob": np.int64(1), "per_image": np.array([1.5, math.nan]),
                              "shape": (2, 3)})
    assert stored == {"name": "x", "knob": 1, "per_image": [1.5, stored["per_image"][1]], "shape": [2, 3]}
    got = open_either(tmp_path, "jsonl").find(("x", 1))
    assert got["shape"] == [2, 3] and math.isnan(got["per_image"][1])
    with pytest.raises(StoreError, match="lacks its key"):
        store.append({"name": "y"})


def test_the_generative_row_store_is_the_same_store(tmp_path):
    settings = {"seed": 0, "steps": (10, 100), "models": ["vae"]}
    store = RowStore(tmp_path, settings=settings, compare=("seed",))
    row = store.append({"model": "vae", "split": "test", "estimator": "ais", "budget": np.int64(10), "mean": -1.0})
    assert store.get("vae", "test", "ais", 10) == row and row["budget"] == 10
    (tmp_path / "rows.jsonl").write_text((tmp_path / "rows.jsonl").read_text() + '{"model": "vae", "spl')
    with pytest.warns(DamagedRowWarning, match=r"rows\.jsonl, line 2: its last row is cut off"):
        again = RowStore(tmp_path, settings={**settings, "models": ["vae", "gan"]}, compare=("seed",))
    assert again.resumed == 1 and again.rows == [row]
    with pytest.raises(StoreError, match="seed: 0 -> 1"):
        RowStore(tmp_path, settings={**settings, "seed": 1}, compare=("seed",))
