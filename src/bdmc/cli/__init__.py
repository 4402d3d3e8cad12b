"""The ``bdmc`` command line: one module per command over shared helpers (``_common``, ``_models``).

Exit codes: 0 success, 1 an expected failure (one red line on stderr naming the culprit and a fix), 2 a usage
error found by the parser, 130 interrupted. ``bdmc --debug COMMAND ...`` shows tracebacks instead.
"""

from __future__ import annotations

import typer

from ..config import enable_compilation_cache, enable_x64
from ._common import STATE
from .audit import audit_command
from .bench import bench_command
from .bread import bread_command
from .bread_real import bread_real_command
from .cache import cache_command
from .calibrate import calibrate_command
from .check_estimate import check_estimate_command
from .compare import compare_command
from .evidence import evidence_command
from .generative import generative_command
from .models import models_command
from .sandwich import sandwich_command

app = typer.Typer(
    name="bdmc",
    help="Bidirectional Monte Carlo: sandwich log marginal likelihoods between forward and reverse AIS.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from ..version import __version__

        typer.echo(f"bdmc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(debug: bool = typer.Option(False, "--debug", help="Show the traceback of any error (for bug reports)."),
          x64: bool = typer.Option(True, "--x64/--float32",
                                   help="Compute in float64 (the default, as the paper) or in JAX's float32."),
          version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                       help="Print bdmc's version and exit."),
          compile_cache: bool = typer.Option(
              True, "--compile-cache/--no-compile-cache",
              help="Keep compiled programs in the user's cache directory ($BDMC_CACHE_DIR, else "
                   "~/.cache/bdmc/jax), so the next command on the same model and sizes starts at once.")):
    """Bidirectional Monte Carlo: sandwich log marginal likelihoods between forward and reverse AIS."""
    STATE.debug = debug
    enable_x64(x64)
    if compile_cache:
        enable_compilation_cache()


app.command(name="sandwich")(sandwich_command)
app.command(name="evidence")(evidence_command)
app.command(name="calibrate")(calibrate_command)
app.command(name="compare")(compare_command)
app.command(name="models")(models_command)
app.command(name="bread")(bread_command)
app.command(name="bread-real")(bread_real_command)
app.command(name="bench")(bench_command)
app.command(name="generative")(generative_command)
app.command(name="audit")(audit_command)
app.command(name="check-estimate")(check_estimate_command)
app.command(name="cache")(cache_command)


def main() -> None:
    """Console entry point of ``bdmc``."""
    app()


__all__ = ["app", "main"]
