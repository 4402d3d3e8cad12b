"""The audit's error path: a check that raises becomes that check's ``"error"`` outcome, with its message and
what to try, so the other checks still run and the report keeps what was found."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from ..errors import BDMCError, UserProgramError
from .result import CheckOutcome


def guarded(name: str, title: str, check: Callable[[], CheckOutcome]) -> CheckOutcome:
    """``check()``, or, when it raises, an ``"error"`` outcome with its message: one check's failure to run is
    its verdict and the audit goes on (an interrupt still stops it)."""
    try:
        return check()
    except Exception as err:  # noqa: BLE001  every exception of a check becomes that check's verdict
        return error_outcome(name, title, err)


def guarded_with(name: str, title: str, check: Callable[[], tuple[CheckOutcome, Any]]) -> tuple[CheckOutcome, Any]:
    """:func:`guarded` for a check that also returns what a later check needs: ``check()``, or ``(the "error"
    outcome, None)`` when it raises."""
    try:
        return check()
    except Exception as err:  # noqa: BLE001  every exception of a check becomes that check's verdict
        return error_outcome(name, title, err), None


def error_outcome(name: str, title: str, err: BaseException, *, during: str = "") -> CheckOutcome:
    """The outcome of a check that raised ``err``: verdict ``"error"``, the message, and what to try."""
    message = " ".join(f"{type(err).__name__}: {err}".split())
    if len(message) > 600:
        message = message[:597] + "..."
    if isinstance(err, UserProgramError):
        remedy = ("The error arose in your program or its data (the message names them): fix it and rerun the "
                  "audit.")
    elif isinstance(err, BDMCError):
        remedy = ("bdmc stopped this check with the reason above (it names the culprit); fix it, or change the "
                  "budget, and rerun the audit.")
    else:
        remedy = ("The check raised instead of deciding. If the message names your program or data, fix them; "
                  "otherwise rerun with `bdmc --debug audit ...` to see the traceback and report it.")
    tail = traceback.format_exception(type(err), err, err.__traceback__)[-6:]
    return CheckOutcome(
        name=name, title=title, verdict="error", statistic="-", level=None,
        summary=f"error{' ' + during if during else ''}: {message}",
        meaning="The check could not run to a verdict; the other checks ran and their verdicts stand.",
        remedy=remedy, details={"error_type": type(err).__name__, "message": str(err),
                                "traceback": "".join(tail)[-4000:]})
