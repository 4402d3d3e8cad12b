"""The BREAD paper's five real-data cases: a data set, a model in each PPL that writes it, and its hyperparameters.

``CASES[name].build(ppl=...)`` loads the data set offline and returns ``(model, real_data)``, ready for
:func:`bdmc.realdata.bread_real`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import BDMCError


@dataclass(frozen=True)
class RealDataCase:
    """One model of Appendix C with its data set.

    Attributes
    ----------
    name : str
    dataset : str
        Loader in :mod:`bdmc.datasets`.
    hyperparameters : tuple of str
        The sites the appendix's Stan code samples under "Sampling hyperparameters".
    builders : dict
        PPL name -> ``builder(**options) -> (model, real_data)``.
    """

    name: str
    dataset: str
    hyperparameters: tuple
    builders: dict = field(default_factory=dict)

    @property
    def ppls(self) -> tuple:
        return tuple(self.builders)

    def build(self, *, ppl: str = "numpyro", **options):
        """The model written in ``ppl`` and the real data, as ``(model, data)``."""
        if ppl not in self.builders:
            raise BDMCError(f"{self.name} is written in {', '.join(self.ppls)}, not {ppl!r}")
        return self.builders[ppl](**options)


def _regression(kind: str, ppl: str) -> Callable:
    def build():
        from ..datasets import load_nhefs, load_pima

        real = (load_nhefs if kind == "linear_regression" else load_pima)()
        if ppl == "numpyro":
            from . import models as module
        elif ppl == "pymc":
            from . import pymc_models as module
        else:
            from . import stan_models as module
        return getattr(module, kind)(real["x"]), {"y": real["y"]}

    return build


def _module(ppl: str):
    if ppl == "stan":
        from . import stan_models as module
    else:
        from . import models as module
    return module


def _matrix_factorization(ppl: str = "numpyro") -> Callable:
    def build(*, centre: bool = True):
        from ..datasets import load_movielens

        m = load_movielens(centre=centre)
        model = _module(ppl).matrix_factorization(m["rows"], m["cols"], shape=m["Y"].shape)
        return model, {"ratings": m["ratings"]}

    return build


def _ar1(ppl: str = "numpyro") -> Callable:
    def build():
        from ..datasets import load_goog
        from .models import ar1_data

        y = load_goog()["y"]
        return _module(ppl).ar1(y), ar1_data(y)

    return build


def _mixture(ppl: str = "numpyro") -> Callable:
    def build():
        from ..datasets import load_old_faithful

        y = load_old_faithful()["y"]
        return _module(ppl).gaussian_mixture(y.shape[0], dim=y.shape[1], num_components=2), {"y": y}

    return build


CASES = {
    "linear-regression": RealDataCase(
        "linear-regression", "load_nhefs", ("sigma_sq", "scale_sq"),
        {p: _regression("linear_regression", p) for p in ("numpyro", "pymc", "stan")}),
    "logistic-regression": RealDataCase(
        "logistic-regression", "load_pima", ("scale_sq",),
        {p: _regression("logistic_regression", p) for p in ("numpyro", "pymc", "stan")}),
    "matrix-factorization": RealDataCase(
        "matrix-factorization", "load_movielens", ("scale_u_sq", "scale_v_sq", "sigma_sq"),
        {p: _matrix_factorization(p) for p in ("numpyro", "stan")}),
    "ar1": RealDataCase("ar1", "load_goog", ("alpha", "beta", "sigma_sq"), {p: _ar1(p) for p in ("numpyro", "stan")}),
    "mixture": RealDataCase("mixture", "load_old_faithful", ("scale_sq", "sigma_sq"),
                            {p: _mixture(p) for p in ("numpyro", "stan")}),
}
