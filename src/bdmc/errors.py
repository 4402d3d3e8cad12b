"""Errors that name the culprit."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import shlex


class BDMCError(Exception):
    """Base class of every error raised by bdmc."""


class UserProgramError(BDMCError):
    """The user's program (a NumPyro, PyMC, Stan or WebPPL model, a simulator) or its data raised: the message
    names the program and the arrays it was called with; the original exception is the ``__cause__``.

    ``UserProgramError(message)``, or ``UserProgramError(program, error, called_with=..., where=..., hint=...)``,
    which writes the message from its parts: ``program`` names the program, ``error`` is the exception it raised,
    ``called_with`` describes its arguments (:func:`describe_arguments`), ``where`` is the program's line that
    raised (FILE:LINE, :func:`program_line`) and ``hint`` what to do; each None or empty when unknown.
    """

    def __init__(self, program: str, error: BaseException | None = None, *, called_with: str | None = None,
                 where: str | None = None, hint: str = ""):
        self.program, self.error, self.called_with, self.where, self.hint = program, error, called_with, where, hint
        if error is None:  # the whole message
            super().__init__(program)
            return
        message = f"{program} raised {type(error).__name__}: {error}"
        if where:
            message += f" (at {where})"
        if called_with is not None:
            message += f"; it was called with {called_with}"
        super().__init__(message + (f"; {hint}" if hint else ""))

    def renamed(self, program: str, *, hint: str = "") -> UserProgramError:
        """The same error under another name of the program (e.g. the command-line flag that gave it)."""
        if self.error is None:
            return UserProgramError(f"{program}: {self}" + (f"; {hint}" if hint else ""))
        return UserProgramError(program, self.error, called_with=self.called_with, where=self.where,
                                hint=hint or self.hint)


class OptionError(BDMCError, ValueError):
    """An argument of a bdmc function has a value it cannot take (out of range, an unknown name, options that
    exclude each other); the message names the argument, what it got and what it accepts."""


class ParticlesError(OptionError):
    """Particles per run were asked of an estimator pair that runs single chains (``method="auto"`` may pick one)."""


class OptionTypeError(BDMCError, TypeError):
    """An argument of a bdmc function is of a kind it cannot take (a model where a kernel is wanted, say)."""


class RunError(BDMCError, RuntimeError):
    """A run could not go on (a child process died, an external tool failed, a state that cannot occur did)."""


class MissingFileError(BDMCError, FileNotFoundError):
    """A file or folder bdmc was pointed at does not exist."""


class ScheduleError(BDMCError, ValueError):
    """An annealing schedule or path is malformed."""


class DataError(BDMCError, ValueError):
    """Observed data has the wrong shape, dtype or contains non-finite values."""


class ModelComparisonError(BDMCError, ValueError):
    """Two programs whose evidences cannot be compared: different likelihood terms, or a prior that does not
    integrate to one (:func:`bdmc.compare`)."""


class NonFiniteLogWeightError(BDMCError, FloatingPointError):
    """A log-weight or an estimate became NaN or +inf (a bug, never a result).

    Raised by the annealing engine with ``step``, ``lam``, ``chain`` and ``n_bad`` set, and by
    :meth:`bdmc.Estimate.from_runs` (with only a message) when an estimator's runs are not finite.
    """

    def __init__(self, message: str | None = None, *, step: int | None = None, lam=None, chain: int | None = None,
                 n_bad: int | None = None, direction: str = "annealing"):
        self.step, self.lam, self.chain, self.n_bad = step, lam, chain, n_bad
        if message is None:
            message = (
                f"{direction} produced a non-finite (NaN or +inf) log-weight increment at step {step} "
                f"(lambda = {lam}) in chain {chain}; {n_bad} chain(s) affected. This is a bug in the model's "
                "log density or the kernel, not a result."
            )
        super().__init__(message)


class NonFiniteLogDensityError(NonFiniteLogWeightError):
    """A log density evaluated during a run was NaN or +inf.

    Any density a kernel or a weight evaluates counts, rejected proposals and intermediate leapfrog or NUTS
    points included; -inf (zero density) is legal. Attributes name the culprit where it is known (None
    otherwise): ``term`` (``"log_prior"``, ``"log_likelihood"``, ``"log_density"``, ``"log_predictive"``, or a
    PPL site), ``case`` (the data case of a per-case term), ``value``, ``step`` (1-based, as in the
    engine's path), ``lam``, ``chain`` (the lowest-numbered chain that failed first), ``n_bad`` (chains that
    failed by the time the run stopped) and ``evaluated_by`` (``"weight"``, ``"refresh"``, ``"accepted"`` (a
    state a kernel moved a chain to), ``"exact latent"`` or ``"prior draw"`` (the check at exact prior draws
    before a run; ``prior_draws`` is then ``(draw, draws that failed, draws checked)``)). A NaN or +inf at a
    proposal a kernel rejects is not an error but a divergence.
    """

    def __init__(self, *, term: str, value: float | str, case: int | None = None, step: int | None = None, lam=None,
                 chain: int | None = None, n_bad: int | None = None, evaluated_by: str | None = None,
                 prior_draws: tuple | None = None, direction: str = "annealing"):
        self.term, self.case, self.value, self.evaluated_by = term, case, value, evaluated_by
        what = f"{term} case {case}" if case is not None else term
        where = [f"at step {step}"] if step is not None else []
        if lam is not None:
            where.append(f"(lambda = {lam})")
        if chain is not None:
            where.append(f"in chain {chain}")
        if evaluated_by == "accepted":
            where.append("at the state the kernel moved the chain to")
        elif evaluated_by == "prior draw" and prior_draws is not None:
            draw, bad, total = prior_draws
            where.append(f"at an exact prior draw (draw {draw}; {bad} of the {total} prior draws checked before the "
                         f"run are NaN or +inf, a region of about {bad / total:.2%} of the prior's mass)")
        elif evaluated_by == "weight":
            where.append("while weighting the chain")
        elif evaluated_by == "refresh":
            where.append("while the SMC proposal redrew a data case's latents")
        elif evaluated_by == "exact latent":
            where.append("at the exact latent, where the reverse run starts")
        if n_bad is not None and n_bad > 1:
            where.append(f"({n_bad} chains had failed when the run stopped)")
        message = (
            f"{direction}: the model's {what} is {_show(value)} " + " ".join(where) + ". A log density may be -inf "
            "(zero density) but never NaN or +inf: this is a bug in the model, not a result."
        )
        super().__init__(message, step=step, lam=lam, chain=chain, n_bad=n_bad, direction=direction)


def _show(value) -> str:
    return {"nan": "NaN", "inf": "+inf", "-inf": "-inf"}.get(str(value), str(value))


class RunHealthWarning(UserWarning):
    """A run finished, but its numbers need care: see :class:`DivergenceWarning` and :class:`UntrustedStderrWarning`."""


class DivergenceWarning(RunHealthWarning):
    """Many of a run's proposals diverged (each was rejected, so the chains moved less than the kernel intends)."""


class UntrustedStderrWarning(RunHealthWarning):
    """An estimate's ± is not to be trusted: a few runs carry the weight (low weight ESS, or Pareto k-hat > 0.7)."""


class MissingCapabilityError(BDMCError, TypeError):
    """A model (or kernel) lacks methods a computation needs; ``missing`` names them."""

    def __init__(self, message: str, *, missing: tuple[str, ...] = ()):
        super().__init__(message)
        self.missing = missing


def describe_arguments(args: tuple = (), kwargs: dict | None = None) -> str:
    """The arguments a program was called with, e.g. ``x (100, 3) float64, n () int64``.

    Parameters
    ----------
    args : tuple
        Positional arguments.
    kwargs : dict, optional
        Keyword arguments.

    Returns
    -------
    str
        Each argument with its shape and dtype (arrays) or its type; ``no arguments`` when there are none.
    """
    items = [(f"argument {i}", v) for i, v in enumerate(args)] + list((kwargs or {}).items())
    if not items:
        return "no arguments"
    return ", ".join(f"{name} {_shape_of(value)}" for name, value in items)


def _shape_of(value) -> str:
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return f"({type(value).__name__})"
    return f"{tuple(int(s) for s in shape)} {dtype}"


def program_line(error: BaseException, filename: str | None) -> str | None:
    """``FILE:LINE`` of the innermost frame of ``error``'s traceback in the file ``filename``, None if none is.

    Parameters
    ----------
    error : BaseException
        An exception with its traceback.
    filename : str or None
        The program's file, as its code objects name it (``fn.__code__.co_filename``).

    Returns
    -------
    str or None
    """
    if not filename:
        return None
    tb, line = error.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = f"{_near(filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return line


def _near(filename: str) -> str:
    """A file under the working directory by its relative path (as the user would have typed it)."""
    relative = os.path.relpath(filename)
    return filename if relative.startswith("..") else relative


class MissingExtraError(BDMCError, ImportError):
    """An optional dependency is not installed."""


def require(module: str, *, extra: str):
    """Import an optional dependency, or fail naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError(
            f"'{module}' is required for this feature but is not installed; install it with: {install_line(extra)}"
        ) from err


def install_line(extra: str) -> str:
    """How to install bdmc's extra ``extra``: its packages as pinned in the installed distribution's metadata,
    and the extra itself from bdmc's checkout; never the package index's "bdmc", which is another project."""
    from .version import DISTRIBUTION

    try:
        requirements = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        requirements = []
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    packages = [r.split(";")[0].replace(" ", "") for r in requirements if marker.search(r)]
    checkout = f"pip install -e '.[{extra}]' in bdmc's checkout"
    return f"pip install {' '.join(shlex.quote(p) for p in packages)} (or {checkout})" if packages else checkout
