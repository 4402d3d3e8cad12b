"""``bdmc cache``: lists what bdmc keeps on disk with its size, and empties the parts named."""

from typer.testing import CliRunner

from bdmc.cli import app
from bdmc.config import cache_dir
from bdmc.core import pilot_store

runner = CliRunner()


def _run(*args):
    """The command's result and its words: rich wraps at the terminal's width, which differs between machines."""
    result = runner.invoke(app, ["--no-compile-cache", "cache", *args], env={"COLUMNS": "200"})
    return result, " ".join(result.output.split())


def test_cache_lists_its_parts_with_their_sizes_and_clears_the_ones_named(tmp_path, monkeypatch):
    monkeypatch.setenv("BDMC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(pilot_store.PILOT_CACHE_SWITCH, "1")
    assert pilot_store.store_dir() == cache_dir() / "pilots"  # the folder the command lists is the store's
    (tmp_path / "pilots").mkdir()
    for i in range(3):
        (tmp_path / "pilots" / f"{i}.pkl").write_bytes(b"x" * 100)
    (tmp_path / "jax" / "sub").mkdir(parents=True)
    (tmp_path / "jax" / "sub" / "program").write_bytes(b"y" * 3000)
    shown, _ = _run()
    assert shown.exit_code == 0, shown.output
    lines = {line.split("│")[1].strip(): line for line in shown.output.splitlines() if line.count("│") > 2}
    assert "300 B" in lines["pilots"] and " 3 " in lines["pilots"]
    assert "2.9 KB" in lines["jax"] and "compiled" in lines["jax"]  # its description may wrap

    unknown, words = _run("--clear", "pilot")
    assert unknown.exit_code == 1
    assert "--clear pilot: no such part" in words and "jax, pilots" in words
    assert (tmp_path / "pilots").is_dir()  # nothing cleared when one name is wrong

    cleared, words = _run("--clear", "pilots")
    assert cleared.exit_code == 0 and "cleared pilots: 3 files, 300 B" in words
    assert not (tmp_path / "pilots").exists() and (tmp_path / "jax").is_dir()
    _run("--clear", "all")
    assert list(tmp_path.iterdir()) == []
    empty, words = _run()
    assert empty.exit_code == 0 and f"bdmc's cache at {tmp_path} is empty" in words
