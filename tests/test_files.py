"""Atomic, synced file writes and the one JSON normalizer (bdmc.files)."""

import json
import math
import os
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from bdmc import files
from bdmc.files import append_lines, json_default, replacing, to_jsonable, write_atomic, write_json_atomic


def test_write_atomic_replaces_text_bytes_or_a_writer_and_leaves_an_ordinary_file(tmp_path):
    path = tmp_path / "out.txt"
    write_atomic(path, "first\r\n")
    assert path.read_bytes() == b"first\r\n"  # newlines untranslated
    write_atomic(path, b"\x00second")
    assert path.read_bytes() == b"\x00second"
    write_atomic(tmp_path / "a.npz", lambda f: np.savez(f, x=np.arange(3)))
    with np.load(tmp_path / "a.npz") as z:
        assert z["x"].tolist() == [0, 1, 2]
    mask = os.umask(0o022)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "out.txt"]  # no temporary file left


@pytest.mark.parametrize("where", ["rename", "writer"])
def test_a_failed_write_leaves_the_old_content_and_no_temporary_file(tmp_path, monkeypatch, where):
    path = tmp_path / "settings.json"
    write_atomic(path, "old\n")

    def fail(*args):
        raise OSError("disk full")

    if where == "rename":
        monkeypatch.setattr(os, "replace", fail)
        content = "new\n"
    else:
        def content(handle):
            handle.write(b"half of the ne")
            fail()
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, content)
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]


def test_writes_are_synced_before_the_rename_and_the_folder_after(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: events.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: events.append("replace") or real_replace(a, b))
    write_atomic(tmp_path / "f", "x")
    assert events == ["fsync", "replace", "fsync"]  # the file's data, the rename, the folder's entry
    events.clear()
    append_lines(tmp_path / "rows", ["a"])
    assert events == ["fsync", "fsync"]  # a new file: its data and its folder entry
    events.clear()
    append_lines(tmp_path / "rows", ["b", "c"])
    assert events == ["fsync"]
    assert (tmp_path / "rows").read_text() == "a\nb\nc\n"
    events.clear()
    write_atomic(tmp_path / "cache", b"y", durable=False)  # a cache's file: atomic, not synced
    assert events == ["replace"] and (tmp_path / "cache").read_bytes() == b"y"


def test_replacing_hands_a_path_to_a_writer_and_cleans_up_on_failure(tmp_path):
    target = tmp_path / "table.csv"
    with replacing(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".table.csv.") and not tmp.exists()
        tmp.write_text("a,b\n")
    assert target.read_text() == "a,b\n"
    with pytest.raises(RuntimeError), replacing(target) as tmp:
        tmp.write_text("partial")
        raise RuntimeError
    assert target.read_text() == "a,b\n" and [p.name for p in tmp_path.iterdir()] == ["table.csv"]


def test_write_json_atomic_normalizes_values(tmp_path):
    write_json_atomic(tmp_path / "s.json", {"steps": (1, 2), "x": np.float32(0.5), "where": Path("/a/b")})
    assert json.loads((tmp_path / "s.json").read_text()) == {"steps": [1, 2], "x": 0.5, "where": "/a/b"}


VALUES = {"np_int": np.int64(3), "np_float": np.float32(0.25), "np_bool": np.bool_(True),
          "array": np.arange(4.0).reshape(2, 2), "jax": jnp.array([1.0, 2.0]), "jax_scalar": jnp.float32(1.5),
          "tuple": (1, (2, "a")), "path": Path("/tmp/x"), "nested": {1: [np.int32(7), None]},
          "nan": float("nan"), "inf": np.float64(-np.inf), "other": complex(1, 2)}


def test_to_jsonable_round_trips_numpy_and_jax_values_through_json():
    plain = to_jsonable(VALUES)
    assert json.loads(json.dumps(plain, allow_nan=True)).keys() == plain.keys()
    back = json.loads(json.dumps(plain))
    assert back["np_int"] == 3 and type(back["np_int"]) is int
    assert back["np_float"] == 0.25 and back["np_bool"] is True
    assert back["array"] == [[0.0, 1.0], [2.0, 3.0]] and back["jax"] == [1.0, 2.0] and back["jax_scalar"] == 1.5
    assert back["tuple"] == [1, [2, "a"]] and back["path"] == "/tmp/x" and back["nested"] == {"1": [7, None]}
    assert math.isnan(back["nan"]) and back["inf"] == -math.inf and back["other"] == "(1+2j)"
    assert np.asarray(back["array"]).tolist() == VALUES["array"].tolist()
    assert json.loads(json.dumps(VALUES, default=json_default)) == json.loads(json.dumps(to_jsonable(VALUES)))


def test_strict_json_writes_non_finite_numbers_as_strings():
    strict = to_jsonable({"v": [math.nan, np.inf, -math.inf, 1.0]}, nonfinite="string")
    assert strict == {"v": ["nan", "inf", "-inf", 1.0]}
    assert [float(x) for x in json.loads(json.dumps(strict, allow_nan=False))["v"]][1:] == [math.inf, -math.inf, 1.0]
    with pytest.raises(ValueError, match="nonfinite"):
        to_jsonable(1.0, nonfinite="drop")


def test_the_module_is_the_one_place_that_renames_files():
    src = Path(files.__file__).parent
    renames = sorted(f"{p.relative_to(src)}" for p in src.rglob("*.py") if "os.replace(" in p.read_text())
    assert renames == ["files.py", "ppl/webppl_host.py"]  # webppl_host moves a finished install folder
