"""Models written in the probabilistic programming languages people use, as bdmc Models.

Each adapter is an optional extra, imported only when used: ``from_numpyro`` (``.[numpyro]``),
``from_pymc`` (``.[pymc]``) and ``from_stan`` (``.[stan]``); ``from_webppl`` needs Node.js and installs
WebPPL into bdmc's cache on first use (``bdmc.ppl.webppl.install()``). The resulting models feed
``bdmc.sandwich``, ``bdmc.bread`` and every estimator exactly as built-in models do. The languages, with what
the command line and the audit need to know of each, are one table: :data:`bdmc.ppl.registry.PPLS`.
"""

from __future__ import annotations


def from_numpyro(model_fn, *args, observed, **kwargs):
    """Wrap a NumPyro model function (see :func:`bdmc.ppl.numpyro.from_numpyro`)."""
    from .numpyro import from_numpyro as build

    return build(model_fn, *args, observed=observed, **kwargs)


def from_pymc(model, **kwargs):
    """Wrap a PyMC model (see :func:`bdmc.ppl.pymc.from_pymc`)."""
    from .pymc import from_pymc as build

    return build(model, **kwargs)


def from_stan(program_code, **kwargs):
    """Wrap a Stan program (see :func:`bdmc.ppl.stan.from_stan`)."""
    from .stan import from_stan as build

    return build(program_code, **kwargs)


def from_webppl(program, data, **kwargs):
    """Wrap a WebPPL program (see :func:`bdmc.ppl.webppl.from_webppl`)."""
    from .webppl import from_webppl as build

    return build(program, data, **kwargs)


__all__ = ["from_numpyro", "from_pymc", "from_stan", "from_webppl"]
