"""A NumPyro model function as a bdmc Model.

The latent state is every unobserved sample site, on NumPyro's unconstrained space (``biject_to`` of each
site's support), so gradient kernels need no bounds. The log density splits as

- ``log_prior(u)``: every latent site's log density at its constrained value, plus the log-Jacobian of each
  transform (the same reparametrization NumPyro's own HMC uses), plus any ``numpyro.factor`` terms;
- ``log_likelihood(u, data)``: one term per data case from the observed sites, whose leading axis indexes the
  cases (several observed sites must agree on the number of cases; their terms add up).

Prior and data simulation run the program itself under NumPyro's ``seed`` / ``substitute`` handlers, so they
draw from exactly the distributions the log density scores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError, DataError, UserProgramError, describe_arguments, program_line, require
from .registry import PPLS


class NumPyroModel:
    """A NumPyro program with its observed sites singled out (build one with :func:`from_numpyro`).

    Instances are hashed by identity: they are static arguments of compiled functions, and the arrays they
    hold (the program's arguments) are not hashable.
    """

    def __init__(self, model_fn: Callable, *, observed: Sequence[str], args: tuple = (),
                 kwargs: Mapping[str, Any] | None = None):
        self._numpyro = require("numpyro", extra=PPLS["numpyro"].extra)
        self.model_fn, self.observed = model_fn, tuple(observed)
        self.args, self.kwargs = tuple(args), dict(kwargs or {})
        trace = self._first_trace()
        missing = [name for name in self.observed if name not in trace or trace[name]["type"] != "sample"]
        if missing:
            sample_sites = [n for n, s in trace.items() if s["type"] == "sample"]
            raise BDMCError(f"observed site(s) {missing} are not sample sites of {_name(model_fn)}; "
                            f"its sample sites are {sample_sites}")
        self.latent_sites = tuple(n for n, s in trace.items() if s["type"] == "sample" and not s["is_observed"]
                                  and n not in self.observed)
        discrete = [n for n in self.latent_sites if trace[n]["fn"].is_discrete]
        if discrete:
            raise BDMCError(
                f"{_name(model_fn)} has discrete latent site(s) {discrete}: gradient kernels cannot move them. "
                "Sum them out in the program (for example with numpyro.contrib.funsor's enumeration, or by "
                "writing the marginal likelihood with a mixture distribution), or use a built-in bdmc model with "
                "a Gibbs kernel.")
        if not self.latent_sites:
            raise BDMCError(f"{_name(model_fn)} has no latent sample sites besides the observed {self.observed}")
        self._data_shapes = {n: tuple(np.shape(trace[n]["value"])) for n in self.observed}

    # ---------------------------------------------------------------------------------------- contract

    def sample_prior(self, key):
        """An exact prior draw of every latent site, mapped to the unconstrained space."""
        transforms = self._numpyro.distributions.transforms
        trace = self._trace(key)
        return {n: transforms.biject_to(trace[n]["fn"].support).inv(trace[n]["value"]) for n in self.latent_sites}

    def sample_prior_given(self, key, fixed: Mapping[str, Any]):
        """A prior draw of the latent sites with the sites named in ``fixed`` held at the given values.

        ``fixed`` maps site names to values on their natural (constrained) space, e.g. fitted hyperparameters
        ``{"sigma_sq": 0.8}``; every other latent site is drawn from the program given them, so the result is
        an exact draw from ``p(latent | fixed)`` when the fixed sites come first in the program.
        """
        unknown = sorted(set(fixed) - set(self.latent_sites))
        if unknown:
            raise BDMCError(f"cannot fix {unknown}: not latent sites of {_name(self.model_fn)}; "
                            f"its latent sites are {list(self.latent_sites)}")
        handlers, transforms = self._numpyro.handlers, self._numpyro.distributions.transforms
        values = {n: jnp.asarray(v, jnp.result_type(float)) for n, v in fixed.items()}
        program = handlers.condition(handlers.seed(self.model_fn, key), data=values)
        trace = handlers.trace(program).get_trace(*self.args, **self.kwargs)
        return {n: transforms.biject_to(trace[n]["fn"].support).inv(trace[n]["value"]) for n in self.latent_sites}

    def sample_data(self, key, latent):
        """The observed sites drawn from the program given the latent sites."""
        handlers = self._numpyro.handlers
        program = handlers.substitute(handlers.seed(self.model_fn, key),
                                      substitute_fn=partial(_constrain, latent))
        trace = handlers.trace(program).get_trace(*self.args, **self.kwargs)
        return {n: trace[n]["value"] for n in self.observed}

    def log_prior(self, latent):
        return self._split(latent, None)[0]

    def log_likelihood(self, latent, data):
        return self._split(latent, data)[1]

    def check_data(self, data):
        if not isinstance(data, Mapping) or set(data) != set(self.observed):
            got = sorted(data) if isinstance(data, Mapping) else type(data).__name__
            raise DataError(f"data must be a dict with the observed site(s) {list(self.observed)}, got {got}")
        for name, shape in self._data_shapes.items():
            if tuple(np.shape(data[name])) != shape:
                raise DataError(f"observed site {name!r} must have shape {shape}, got {tuple(np.shape(data[name]))}")

    def constrain(self, latent) -> dict:
        """The latent sites on their natural (constrained) space, as NumPyro reports them."""
        handlers = self._numpyro.handlers
        program = handlers.substitute(handlers.seed(self.model_fn, jax.random.key(0)),
                                      substitute_fn=partial(_constrain, latent))
        trace = handlers.trace(program).get_trace(*self.args, **self.kwargs)
        return {n: trace[n]["value"] for n in self.latent_sites}

    def unconstrain(self, values: Mapping[str, Any]) -> dict:
        """The latent (unconstrained) representation of site values given on their natural space.

        The inverse of :meth:`constrain`: ``values`` maps every latent site to a constrained value (e.g.
        ``{"s2": 0.8, "beta": ...}``), and the result is what :meth:`sample_prior` returns, e.g. the start of a
        reverse run from a latent drawn elsewhere (:func:`bdmc.checks.compare_models`).
        """
        missing = sorted(set(self.latent_sites) - set(values))
        if missing:
            raise BDMCError(f"unconstrain needs every latent site of {_name(self.model_fn)}; missing {missing}")
        handlers, transforms = self._numpyro.handlers, self._numpyro.distributions.transforms
        # Substituted values fix the supports that depend on other sites (e.g. Uniform(0, a)).
        program = handlers.substitute(handlers.seed(self.model_fn, jax.random.key(0)),
                                      data={n: jnp.asarray(values[n]) for n in self.latent_sites})
        trace = handlers.trace(program).get_trace(*self.args, **self.kwargs)
        return {n: transforms.biject_to(trace[n]["fn"].support).inv(trace[n]["value"]) for n in self.latent_sites}

    def describe_nonfinite_term(self, latent, data, term: str, case: int | None) -> str:
        """``term`` with the NumPyro site behind a NaN or +inf value (on the host, after a run stopped).

        The first site, in program order, whose log density (or ``factor``, or log-Jacobian) has a NaN or
        +inf entry; for a per-case term only the observed sites at ``case`` count.
        """
        handlers = self._numpyro.handlers
        names = []

        def site_terms(latent, data):
            program = self.model_fn if term == "log_prior" else handlers.condition(self.model_fn, data)
            program = handlers.substitute(handlers.seed(program, jax.random.key(0)),
                                          substitute_fn=partial(_constrain, latent))
            trace = handlers.trace(program).get_trace(*self.args, **self.kwargs)
            names.clear()
            values = []
            for name, site in trace.items():
                if site["type"] == "sample" and (name in self.observed) == (term == "log_likelihood"):
                    names.append(name)
                    values.append(site["fn"].log_prob(site["value"]))
            return values

        # Compiled, as in the run (NumPyro validates distribution arguments only in eager code).
        values = jax.jit(site_terms)(latent, data)
        for name, value in zip(names, values, strict=False):
            value = np.asarray(value, dtype=np.float64)
            if term == "log_likelihood" and case is not None and value.ndim:
                value = value[case]
            if np.any(np.isnan(value) | (value == np.inf)):
                return f"{term} (NumPyro site {name!r})"
        return term

    # ---------------------------------------------------------------------------------------- internals

    def _first_trace(self):
        """The program's first run: whatever it raises is the program's mistake (or its arguments'), named so."""
        try:
            return self._trace(jax.random.key(0))
        except Exception as err:  # noqa: BLE001  any exception of the user's program, chained
            code = getattr(self.model_fn, "__code__", None)
            raise UserProgramError(_name(self.model_fn), err, called_with=describe_arguments(self.args, self.kwargs),
                                   where=program_line(err, code.co_filename if code else None)) from err

    def _trace(self, key):
        handlers = self._numpyro.handlers
        return handlers.trace(handlers.seed(self.model_fn, key)).get_trace(*self.args, **self.kwargs)

    def _split(self, latent, data):
        """(log prior with Jacobians, per-case log-likelihood) at an unconstrained latent."""
        handlers = self._numpyro.handlers
        program = self.model_fn if data is None else handlers.condition(self.model_fn, data)
        # The seed only feeds observed sites when data is None; their terms are then discarded.
        program = handlers.substitute(handlers.seed(program, jax.random.key(0)),
                                      substitute_fn=partial(_constrain, latent))
        trace = handlers.trace(program).get_trace(*self.args, **self.kwargs)
        prior, cases = jnp.zeros(()), []
        for name, site in trace.items():
            if site["type"] != "sample":
                continue
            term = site["fn"].log_prob(site["value"])
            if site.get("scale") is not None:
                term = site["scale"] * term
            if name in self.observed:
                cases.append(jnp.reshape(term, (term.shape[0], -1)).sum(-1) if term.ndim else term[None])
            else:  # latent sites, their log-Jacobian factors and the program's own factors
                prior = prior + jnp.sum(term)
        if data is None:
            return prior, None
        counts = {c.shape[0] for c in cases}
        if len(counts) != 1:
            raise BDMCError(f"observed sites {list(self.observed)} disagree on the number of data cases "
                            f"(leading axes {sorted(counts)})")
        return prior, sum(cases)

    def __repr__(self) -> str:
        return f"NumPyroModel({_name(self.model_fn)}, observed={list(self.observed)})"


def _constrain(latent, site):
    """NumPyro's own unconstrained reparametrization: constrained value in, log-Jacobian as a factor site."""
    from numpyro.infer.util import _unconstrain_reparam

    return _unconstrain_reparam(latent, site)


def _name(fn) -> str:
    return getattr(fn, "__qualname__", repr(fn))


def from_numpyro(model_fn: Callable, *args, observed: str | Sequence[str], **kwargs) -> NumPyroModel:
    """Wrap a NumPyro model function as a bdmc Model.

    Parameters
    ----------
    model_fn : callable
        A NumPyro program. Its observed sites may be written with ``obs=None`` defaults: bdmc conditions
        them on the data itself.
    *args, **kwargs
        Arguments the program is always called with (covariates, sizes).
    observed : str or sequence of str
        Name(s) of the sample site(s) holding the data; their leading axis indexes the data cases.

    Returns
    -------
    NumPyroModel
        Data are a dict ``{site: array}``; latents a dict of unconstrained site values.

    Raises
    ------
    bdmc.MissingExtraError
        When NumPyro is not installed (``pip install -e '.[numpyro]'``).
    bdmc.BDMCError
        When an observed site is missing, or a latent site is discrete.
    bdmc.errors.UserProgramError
        When the program raises on its first run (with the arguments given), chained to its exception.

    Examples
    --------
    >>> def regression(x, y=None):
    ...     s2 = numpyro.sample("s2", dist.InverseGamma(1.0, 1.0))
    ...     beta = numpyro.sample("beta", dist.Normal(0.0, jnp.sqrt(0.1 * s2)).expand([x.shape[1]]).to_event(1))
    ...     with numpyro.plate("cases", x.shape[0]):
    ...         numpyro.sample("y", dist.Normal(x @ beta, jnp.sqrt(s2)), obs=y)
    >>> model = bdmc.ppl.from_numpyro(regression, x, observed="y")
    >>> data, latent = bdmc.simulate(jax.random.key(0), model)
    >>> bdmc.sandwich(jax.random.key(1), model, data, latent, steps=[100, 1000])
    """
    return NumPyroModel(model_fn, observed=[observed] if isinstance(observed, str) else list(observed),
                        args=args, kwargs=kwargs)
