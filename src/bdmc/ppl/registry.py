"""The one table of the probabilistic programming languages bdmc reads: what each adapter, the command line and
the audit need to know about a language, in one place.

Naming a language imports nothing: an entry names its adapter's module, :meth:`PPL.loader` is the public
``bdmc.ppl.from_<flag>`` that imports it when called, and :func:`ppl_of` recognises a program by the module of
its model's class.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import OptionError


@dataclass(frozen=True)
class PPL:
    """One language.

    Attributes
    ----------
    name : str
        Its name in reports and messages (``"NumPyro"``).
    flag : str
        Its command-line flag without the dashes (``--numpyro``), also its key in :data:`PPLS`.
    suffixes : tuple of str
        The suffixes of its program files (a Python file holds a NumPyro function or a PyMC model).
    extra : str or None
        The pip extra that installs it (``pip install -e '.[numpyro]'`` in bdmc's checkout); None where it is no
        Python package (WebPPL runs in node and installs itself into bdmc's cache).
    module : str
        The adapter's module, where its model class and ``from_<flag>`` live (``bdmc.ppl.from_<flag>`` calls it).
    metavar : str
        How the command line's help shows the program (``PATH.py:FN``: a name inside a Python file).
    help : str
        The command line's help of the flag.
    simulator : "none", "optional" or "required"
        Whether the program needs a Python simulator (``--simulator``): Stan has no exact prior sampler of its
        own, WebPPL may take one for speed.
    own_sampler : str or None
        The audit's name of the language's own NUTS (``"numpyro-nuts"``), which ``sampler="auto"`` audits for
        its programs; None where it has none.
    sampler_label : str or None
        How the audit names that sampler.
    audit_note : str
        What the audit's command says before it runs a program in this language ("" for nothing).
    """

    name: str
    flag: str
    suffixes: tuple[str, ...]
    extra: str | None
    module: str
    metavar: str
    help: str
    simulator: Literal["none", "optional", "required"] = "none"
    own_sampler: str | None = None
    sampler_label: str | None = None
    audit_note: str = ""

    @property
    def names_an_object(self) -> bool:
        """Whether its program is an object in a Python file, given as ``PATH:NAME``."""
        return self.metavar.endswith((":FN", ":NAME"))

    def loader(self):
        """``bdmc.ppl.from_<flag>``, which imports the adapter (and with it the language) when called."""
        return getattr(importlib.import_module(__package__), f"from_{self.flag}")


PPLS: dict[str, PPL] = {p.flag: p for p in (
    PPL("NumPyro", "numpyro", (".py",), "numpyro", "bdmc.ppl.numpyro", "PATH.py:FN",
        "A NumPyro model function instead of a built-in model.",
        own_sampler="numpyro-nuts", sampler_label="NumPyro's NUTS"),
    PPL("PyMC", "pymc", (".py",), "pymc", "bdmc.ppl.pymc", "PATH.py:NAME",
        "A PyMC model, or a function of the --data arrays returning one.",
        own_sampler="pymc-nuts", sampler_label="PyMC's NUTS"),
    PPL("Stan", "stan", (".stan",), "stan", "bdmc.ppl.stan", "PATH.stan",
        "A Stan program whose likelihood is multiplied by data bdmc_lambda.", simulator="required",
        own_sampler="stan-nuts", sampler_label="Stan's NUTS"),
    PPL("WebPPL", "webppl", (".wppl",), None, "bdmc.ppl.webppl", "PATH.wppl",
        "A WebPPL program whose value is the model function of the --data fields.", simulator="optional",
        audit_note="a WebPPL audit runs the program in node for every density: eight schools took about 2 "
                   "minutes at --quick on 2 cores under bdmc's HMC, about 4 under NUTS "
                   "(benchmarks/results/audit_quick_timing)"),
)}

_BY_MODULE = {p.module: p for p in PPLS.values()}


def ppl(flag: str) -> PPL:
    """The entry of ``flag`` (``"numpyro"``, ``"pymc"``, ``"stan"``, ``"webppl"``)."""
    if flag not in PPLS:
        raise OptionError(f"unknown language {flag!r}; bdmc reads {', '.join(PPLS)}")
    return PPLS[flag]


def ppl_of(model: Any) -> PPL | None:
    """The language of a program wrapped by an adapter, None for any other model (by the module of the model's
    class, so that asking imports no PPL)."""
    return _BY_MODULE.get(type(model).__module__)


def by_sampler(name: str) -> PPL | None:
    """The language whose own NUTS the audit calls ``name`` (``"pymc-nuts"``), None for any other sampler."""
    return next((p for p in PPLS.values() if p.own_sampler == name), None)


__all__ = ["PPL", "PPLS", "by_sampler", "ppl", "ppl_of"]
