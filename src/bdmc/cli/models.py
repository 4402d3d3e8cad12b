"""``bdmc models``: the built-in models, their options and their capabilities."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from .. import models as builtin_models
from ..contracts.capabilities import CAPABILITIES, capability_table
from ._common import command, console
from ._models import default, init_fields


@command
def models_command(
    capabilities: bool = typer.Option(False, "--capabilities", "-c",
                                      help="Show which capability protocols each model supports."),
) -> None:
    """List the built-in models with their default options (or, with --capabilities, what each supports)."""
    if capabilities:
        console().print(_capability_table())
        return
    table = Table(title="bdmc built-in models", title_justify="left", show_lines=True)
    table.add_column("name", style="bold cyan", no_wrap=True)
    table.add_column("description")
    table.add_column("default options (--option KEY=VALUE)", style="green")
    for name, cls in builtin_models.REGISTRY.items():
        doc = (cls.__doc__ or "").replace("``", "").strip().splitlines()
        fields = ", ".join(f"{f.name}={default(f)!r}" for f in init_fields(cls))
        table.add_row(name, escape(doc[0] if doc else ""), fields or "-")
    console().print(table)


def _capability_table() -> Table:
    rows = capability_table({name: cls() for name, cls in builtin_models.REGISTRY.items()})
    shown = [c for c in CAPABILITIES if any(row[c.name] for row in rows)]
    table = Table(title="capabilities of the built-in models (bdmc.contracts.capabilities)", title_justify="left")
    table.add_column("model", style="bold cyan", no_wrap=True)
    for cap in shown:
        table.add_column(cap.name, justify="center")
    for row in rows:
        table.add_row(row["model"], *("yes" if row[c.name] else "-" for c in shown))
    table.caption = "; ".join(f"{c.name}: {c.enables}" for c in shown)
    return table
