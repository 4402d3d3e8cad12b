"""``bdmc cache``: lists what bdmc keeps on disk with its size, and empties the parts named."""

from typer.testing import CliRunner

from bdmc.cli import app
from bdmc.config import cache_dir
from bdmc.core import pilot_store

runner = CliRunner()


def test_cache_lists_its_parts_with_their_sizes_and_clears_the_ones_named(tmp_path, monkeypatch):
    monkeypatch.setenv("BDMC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(pilot_store.PILOT_CACHE_SWITCH, "1")
    assert pilot_store.store_dir() == cache_dir() / "pilots"  # the folder the command lists is the store's
    (tmp_path / "pilots").mkdir()
    for i in range(3):
        (tmp_path / "pilots" / f"{i}.pkl").write_bytes(b"x" * 100)
    (tmp_path / "jax" / "sub").mkdir(parents=True)
    (tmp_path / "jax" / "sub" / "program").write_bytes(b"y" * 3000)
    shown = runner.invoke(app, ["--no-compile-cache", "cache"], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    lines = {line.split("│")[1].strip(): line for line in shown.output.splitlines() if line.count("│") > 2}
    assert "300 B" in lines["pilots"] and " 3 " in lines["pilots"]
    assert "2.9 KB" in lines["jax"] and "compiled programs" in lines["jax"]

    unknown = runner.invoke(app, ["--no-compile-cache", "cache", "--clear", "pilot"])
    assert unknown.exit_code == 1
    assert "--clear pilot: no such part" in unknown.output and "jax, pilots" in unknown.output
    assert (tmp_path / "pilots").is_dir()  # nothing cleared when one name is wrong

    cleared = runner.invoke(app, ["--no-compile-cache", "cache", "--clear", "pilots"])
    assert cleared.exit_code == 0 and "cleared pilots: 3 files, 300 B" in cleared.output
    assert not (tmp_path / "pilots").exists() and (tmp_path / "jax").is_dir()
    runner.invoke(app, ["--no-compile-cache", "cache", "--clear", "all"])
    assert list(tmp_path.iterdir()) == []
    empty = runner.invoke(app, ["--no-compile-cache", "cache"])
    assert empty.exit_code == 0 and "is empty" in empty.output
