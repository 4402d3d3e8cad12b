"""``bdmc models``: the built-in models and their options."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from .. import models as builtin_models
from ._common import command, console
from ._models import default, init_fields


@command
def models_command() -> None:
    """List the built-in models with their default options."""
    table = Table(title="bdmc built-in models", title_justify="left", show_lines=True)
    table.add_column("name", style="bold cyan", no_wrap=True)
    table.add_column("description")
    table.add_column("default options (--option KEY=VALUE)", style="green")
    for name, cls in builtin_models.REGISTRY.items():
        doc = (cls.__doc__ or "").replace("``", "").strip().splitlines()
        fields = ", ".join(f"{f.name}={default(f)!r}" for f in init_fields(cls))
        table.add_row(name, escape(doc[0] if doc else ""), fields or "-")
    console().print(table)
