"""What every command shares: consoles, the one error path, option checks and number formatting.

Every expected failure ends a command with one red line on stderr that names the culprit and a fix, and exit
code 1; usage errors found by the parser exit 2; ``bdmc --debug COMMAND`` shows the traceback instead.
"""

from __future__ import annotations

import functools
import math
import os
import traceback
import warnings
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from ..errors import BDMCError, RunHealthWarning, UserProgramError
from ..experiments.store import DamagedRowWarning, prepare_output_dir
from ..files import write_atomic
from ..ppl.registry import PPLS


class CLIError(BDMCError):
    """An expected failure: the command ends with this message as one red line and exit code 1."""


class _State:
    debug = False  # set by ``bdmc --debug``: errors show their traceback


STATE = _State()


def console() -> Console:
    """The stdout console; wide enough for tables when the output is a file or a pipe."""
    out = Console(highlight=False)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out = Console(highlight=False, width=120)
    return out


def error_console() -> Console:
    return Console(stderr=True, highlight=False)


def command(fn):
    """Run a command body under the one error path (see the module docstring).

    Interrupts exit 130 after saying that finished rows are saved; warnings about damaged result rows and about
    a run's health (divergences, an untrusted ±) print as one yellow line each, in bdmc's words, without a source
    line.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("always", DamagedRowWarning)
            default_show = warnings.showwarning

            def show(message, category, filename, lineno, file=None, line=None):
                if issubclass(category, (DamagedRowWarning, RunHealthWarning)):
                    error_console().print(f"[yellow]warning:[/] {escape(_one_line(str(message)))}", soft_wrap=True)
                else:
                    default_show(message, category, filename, lineno, file, line)

            warnings.showwarning = show
            try:
                return fn(*args, **kwargs)
            except (typer.Exit, typer.Abort, typer.BadParameter):
                raise
            except KeyboardInterrupt:
                error_console().print("[yellow]interrupted; finished rows are saved in the output directory, "
                                      "rerun the same command to resume[/]", soft_wrap=True)
                raise typer.Exit(130) from None
            except Exception as err:  # noqa: BLE001  the one place every failure becomes one line
                if STATE.debug:
                    raise
                error_console().print(f"[bold red]error:[/] {escape(describe(err))}", soft_wrap=True)
                raise typer.Exit(1) from None

    return wrapper


def describe(err: Exception) -> str:
    """One line naming what failed and what to do.

    Only a failure in bdmc itself asks for a bug report: the user's program (an exception it raised, or one
    whose traceback passes through a program file :func:`register_user_file` recorded) and memory running out
    are named as such.
    """
    if isinstance(err, CLIError):
        return _one_line(str(err))
    if isinstance(err, UserProgramError):  # the program and its arguments are named in the message
        todo = "" if err.hint else "; fix the program or the arguments it was given"
        return _one_line(f"{err}{todo} (`bdmc --debug ...` shows the traceback)")
    if isinstance(err, BDMCError):
        return _one_line(f"{type(err).__name__}: {err}")
    if _out_of_memory(err):
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return _one_line(f"out of memory: {first}; reduce --runs (or --particles) or the model's size (--option n=..., "
                         "the --data arrays)")
    frame = _user_frame(err)
    if frame is not None:
        where = os.path.relpath(frame.filename)
        where = frame.filename if where.startswith("..") else where
        return _one_line(f"error in your program {where}:{frame.lineno} ({frame.name}): {type(err).__name__}: "
                         f"{err}; fix the program (`bdmc --debug ...` shows the traceback)")
    if isinstance(err, OSError):
        where = f"{err.filename}: " if err.filename else ""
        return _one_line(f"{where}{err.strerror or err}; check the path, its permissions and free disk space")
    return _one_line(f"{type(err).__name__}: {err} (unexpected; rerun as `bdmc --debug ...` to see the traceback "
                     "and report it)")


def _out_of_memory(err: BaseException) -> bool:
    """A host allocation that failed, or XLA's RESOURCE_EXHAUSTED (jaxlib's runtime error)."""
    return isinstance(err, MemoryError) or (type(err).__name__ in ("XlaRuntimeError", "JaxRuntimeError")
                                            and "RESOURCE_EXHAUSTED" in str(err))


# The Python files of the user's programs loaded in this process (resolved paths): a traceback through one of them
# is the program's failure, not bdmc's.
_USER_FILES: set[str] = set()


def register_user_file(path: str | Path) -> None:
    """Record a Python file of the user's program, so that errors raised in it are attributed to it.

    Parameters
    ----------
    path : str or Path
        The file, as given on the command line.
    """
    _USER_FILES.add(str(Path(path).resolve()))


def _user_frame(err: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame in a user's program file of ``err``'s traceback or of the exceptions it chains."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        inside = [f for f in traceback.extract_tb(err.__traceback__) if _is_user_file(f.filename)]
        if inside:
            return inside[-1]
        err = err.__cause__ or err.__context__
    return None


def _is_user_file(filename: str) -> bool:
    try:
        return bool(_USER_FILES) and str(Path(filename).resolve()) in _USER_FILES
    except (OSError, ValueError):  # a frame of generated code ("<string>") or an unresolvable path
        return False


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------- options


def model_option_option(help: str = "Model option KEY=VALUE (repeatable).") -> Any:
    """The repeatable ``--option KEY=VALUE`` declaration of a command that builds a built-in model."""
    return typer.Option(None, "--option", help=help, metavar="KEY=VALUE")


# The --numpyro, --pymc, --stan, --webppl (one per language of bdmc.ppl.registry) and --simulator declarations of
# the commands that take a program.
PPL_OPTIONS: dict[str, Any] = {
    **{p.flag: typer.Option(None, f"--{p.flag}", metavar=p.metavar, help=p.help) for p in PPLS.values()},
    "simulator": typer.Option(None, "--simulator", metavar="PATH.py:FN",
        help="Python simulator of a Stan program, fn(rng, params=None) -> (params, data); optional for WebPPL, "
             "fn(rng, values) -> data."),
}


def out_option(show_default: str, help: str = "Output directory.") -> Any:
    """The ``--out`` / ``-o`` declaration; ``show_default`` names the directory used when it is not given."""
    return typer.Option(None, "--out", "-o", help=help, show_default=show_default)


def overwrite_option() -> Any:
    """The ``--overwrite`` declaration of a command that writes through a run store."""
    return typer.Option(False, "--overwrite", help="Discard results in --out made with other settings.")


def seed_option(help: str | None = None) -> Any:
    """The ``--seed`` declaration (default 0, the seed of ``jax.random.key``); ``help`` says what it drives.

    The command refuses a negative seed with ``at_least(seed, "--seed", 0, "0")``.
    """
    return typer.Option(0, "--seed", help=help)


def output_dir(out: Path | None, default: str) -> Path:
    """The output directory (``default`` under ``out/`` when not given), checked writable before any work."""
    path = Path(out) if out is not None else Path("out") / default
    return prepare_output_dir(path)


def at_least(value: int | None, option: str, minimum: int, example: str) -> None:
    """Refuse an integer option below ``minimum``."""
    if value is not None and value < minimum:
        raise CLIError(f"{option} must be >= {minimum}, got {value}; e.g. {option} {example}")


def positive_number(value: float | None, option: str, unit: str, example: str) -> None:
    """Refuse a number option that is not positive and finite."""
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise CLIError(f"{option} must be a positive number of {unit}, got {value}; e.g. {option} {example}")


def refuse_together(given: dict[str, bool], reason: str) -> None:
    """Refuse options given together that contradict each other (``given``: option name -> was it given)."""
    names = [name for name, on in given.items() if on]
    if len(names) > 1:
        raise CLIError(f"{' and '.join(names)} cannot be combined: {reason}")


def parse_steps(text: str, *, option: str = "--steps", smallest: int = 2) -> list[int]:
    """``"10,100,1000"`` -> ``[10, 100, 1000]`` (duplicates dropped, order kept).

    ``option`` names the option in messages; an option with several flags is named by all of them
    (``"--steps/--T"``), the example by the first. An empty item (``10,,100``, a trailing comma) is refused.
    """
    example = f"{option.split('/')[0]} 10,100,1000"
    parts = [p.strip() for p in text.split(",")]
    if not any(parts):
        raise CLIError(f"{option} needs at least one number, e.g. {example}")
    if not all(parts):
        raise CLIError(f"{option} {text!r}: an empty item between commas; use e.g. {example}")
    values: list[int] = []
    for p in parts:
        try:
            value = int(p.replace("_", ""))
        except ValueError:
            raise CLIError(f"{option}: {p!r} is not an integer; use e.g. {example}") from None
        if value < smallest:
            what = ("every T must be >= 2 (prior and posterior)" if smallest == 2 else
                    f"every value must be >= {smallest}")
            raise CLIError(f"{option}: {what}, got {value}; use e.g. {example}")
        if value not in values:
            values.append(value)
    return values


def command_line(ctx: typer.Context) -> str:
    """The running command as a shell line, from its parsed options (the ones given or changed from their
    defaults), e.g. ``bdmc audit --numpyro model.py:fn --observed y --quick``: what a report says was run."""
    import shlex

    words = ["bdmc", ctx.info_name or ""]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if param.param_type_name != "option" or value is None or value == param.default or value == []:
            continue
        flag = param.opts[0]
        if param.is_flag:
            words.append(flag if value else (param.secondary_opts or [flag])[0])
        else:
            words += [w for v in (value if param.multiple else [value]) for w in (flag, str(v))]
    return shlex.join(words)


# --------------------------------------------------------------------------------------------- formatting


def num(x, fmt: str) -> str:
    """``x`` formatted, or ``-`` when missing or not finite."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "-"
    return format(x, fmt) if math.isfinite(x) else "-"


def count(n) -> str:
    """A count, shortened above 10,000 (12.3k, 4.5M)."""
    n = int(n)
    if n < 10_000:
        return f"{n:,}"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.3g}{suffix}"
    return str(n)  # pragma: no cover


def seconds(x) -> str:
    return num(x, ".3f" if float(x) < 10 else ".1f")


def fmt_options(options: dict) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in options.items()) + ")"


def wrote(out: Console, *paths: Path, note: str = "") -> None:
    """The closing line listing the files written."""
    out.print(f"[dim]wrote {escape(', '.join(str(p) for p in paths))}{escape(note)}[/]", soft_wrap=True)


def print_verdict(out: Console, verdict, *, prefix: str = "bug alarm") -> None:
    """A run-level bug alarm verdict (a ``BugAlarm`` or its saved ``to_dict()``): a red banner when it fires,
    its warnings on the following lines."""
    fired, message = ((verdict["fired"], verdict["message"]) if isinstance(verdict, dict) else
                      (verdict.fired, verdict.message()))
    text = escape(message)
    if fired:
        text = "[bold white on red] BUG ALARM [/]" + text[len("BUG ALARM"):]
    else:
        text = f"{prefix}: [green]silent[/]; " + text
    out.print(text, soft_wrap=True)


def write_table(frame, path: Path) -> None:
    """Replace a derived table (summary, quartiles) atomically, so that a reader never sees half of it."""
    write_atomic(path, frame.to_csv(index=False))
