"""``bdmc cache``: what bdmc keeps on disk between processes, its size, and emptying it."""

from __future__ import annotations

import shutil
from pathlib import Path

import jax
import typer
from rich.table import Table

from ..config import cache_dir
from ..errors import OptionError
from ._common import command, console

# What each folder under the cache directory holds (a folder not named here is listed as it is).
PARTS = {
    "jax": "compiled programs (JAX's persistent compilation cache): a later process on the same model and sizes "
           "loads them instead of compiling",
    "pilots": "frozen pilots' choices (bdmc.core.pilot_store): a later process's call on the same model, "
              "data and options skips its pilot",
    "prior_checks": "prior checks passed (bdmc.core.prior_check): a later process's call on the same model and "
                    "data does not check them again",
    "stan": "Stan programs compiled to shared libraries (bdmc.ppl.stan, native backend)",
    "webppl": "WebPPL, installed by npm on first use (bdmc.ppl.webppl)",
}


@command
def cache_command(
    clear: list[str] = typer.Option(
        [], "--clear", metavar="PART",
        help="Empty this part of the cache (repeatable): one of the folders listed, or 'all'. The next run that "
             "needs it compiles, pilots or installs again."),
) -> None:
    """Show what bdmc keeps on disk between processes ($BDMC_CACHE_DIR, else ~/.cache/bdmc) and its size;
    --clear empties parts of it."""
    root = cache_dir()
    present = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if clear:
        names = present if "all" in clear else list(dict.fromkeys(clear))
        unknown = [name for name in names if name not in present]
        if unknown:
            raise OptionError(f"--clear {', '.join(unknown)}: no such part of the cache at {root}; its parts: "
                              f"{', '.join(present) or 'none'} (or 'all')")
        for name in names:
            size, files = folder_size(root / name)
            shutil.rmtree(root / name)
            console().print(f"cleared {name}: {files:,} files, {human(size)}", soft_wrap=True)
        return
    table = Table(title=f"bdmc's cache: {root}", title_justify="left")
    for column in ("part", "files", "size", "what it holds"):
        table.add_column(column, no_wrap=column != "what it holds")
    for name in present:
        size, files = folder_size(root / name)
        table.add_row(name, f"{files:,}", human(size), PARTS.get(name, ""))
    if present:
        console().print(table)
    else:  # soft_wrap: a path is never broken across lines, so it can be copied
        console().print(f"bdmc's cache at {root} is empty", soft_wrap=True)
    active = jax.config.jax_compilation_cache_dir
    if active and Path(active).expanduser().resolve() != (root / "jax").resolve():
        console().print(f"JAX's compilation cache in this process is {active} (chosen by the user), not bdmc's",
                        soft_wrap=True)


def folder_size(folder: Path) -> tuple[int, int]:
    """Bytes and files under ``folder``, links not followed."""
    files = [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]
    return sum(p.stat().st_size for p in files), len(files)


def human(size: int) -> str:
    """``size`` bytes in the largest unit that keeps it at 1 or more."""
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
