"""A PyMC model as a bdmc Model.

The latent state is the value variable of every free random variable, on PyMC's own transformed
(unconstrained) space: ``s2_log__`` for a positive ``s2``, ``p_logodds__`` for a probability, and so on. The
log density splits as

- ``log_prior(u)``: the free variables' log densities with the log-Jacobians of their transforms (the terms
  PyMC's own samplers use);
- ``log_likelihood(u, data)``: one term per data case from the observed variables' elementwise log densities,
  summed over every axis but the leading one (several observed variables must agree on the number of cases;
  their terms add up).

Both are PyMC's log-density graphs translated to JAX (``pymc.sampling.jax.get_jaxified_graph``), with each
observed variable's data replaced by a symbolic input, so they are pure JAX functions of the latent and of the
(simulated) data that run under ``jit``, ``vmap`` and ``grad``.

Prior and data simulation compile PyMC's forward-sampling graph once and call it from JAX through
``jax.pure_callback`` with a NumPy seed derived from the key: it draws from exactly the distributions PyMC's
``pm.draw`` draws from. It runs once per chain when a run starts, never inside the annealing loop.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError, DataError, UserProgramError, require
from .host_calls import host_call
from .registry import PPLS


class PyMCModel:
    """A PyMC model with its observed variables singled out (build one with :func:`from_pymc`).

    Instances are hashed by identity: they are static arguments of compiled functions, and the PyMC model
    they hold is not hashable by value.

    Attributes
    ----------
    model : pymc.Model
        The model as given; it is not modified.
    observed : tuple of str
        Names of the observed variables, the keys of ``data``.
    latent_names : tuple of str
        Names of the free variables' value variables (transformed space), the keys of ``latent``.
    """

    # Prior draws come from PyMC's forward graph, called from JAX: nothing to compile, so draw only what is asked.
    samples_on_host = True

    def __init__(self, model, *, observed: Sequence[Any] | None = None):
        pm = require("pymc", extra=PPLS["pymc"].extra)
        from pymc.logprob.basic import transformed_conditional_logp
        from pymc.logprob.utils import replace_rvs_by_values

        get_jaxified_graph = _import_jaxify()

        try:
            from pytensor.graph.traversal import ancestors
        except ImportError:  # pytensor < 2.31
            from pytensor.graph.basic import ancestors

        if not isinstance(model, pm.Model):
            raise BDMCError(f"from_pymc expects a pymc.Model, got {type(model).__name__}")
        self.model = model
        name = model.name or "pymc.Model"
        obs_rvs = self._observed_rvs(model, observed, name)
        self.observed = tuple(rv.name for rv in obs_rvs)
        unlisted = [rv.name for rv in model.observed_RVs if rv not in obs_rvs]
        if unlisted:
            raise BDMCError(
                f"{name} observes {unlisted} but observed={list(self.observed)} leaves them out: bdmc simulates "
                "every observed variable from the model, so list them in `observed` too")
        if model.potentials:
            raise BDMCError(
                f"{name} has pm.Potential term(s) {[p.name for p in model.potentials]}: forward simulation (pm.draw) "
                "ignores them, so simulated data would not come from the model's density. Write them as "
                "distributions, or use pm.CustomDist with a random method.")
        free = list(model.free_RVs)
        if not free:
            raise BDMCError(f"{name} has no free random variables besides the observed {list(self.observed)}")
        discrete = [rv.name for rv in free if rv.type.dtype not in pm.pytensorf.continuous_types]
        if discrete:
            raise BDMCError(
                f"{name} has discrete free variable(s) {discrete}: gradient kernels cannot move them. Marginalize "
                "them in the model (write the likelihood with pm.Mixture, or use pymc_extras' "
                "marginalize), or use a built-in bdmc model with a Gibbs kernel.")
        values = [model.rvs_to_values[rv] for rv in free]
        self.latent_names = tuple(v.name for v in values)
        self._free_names = tuple(rv.name for rv in free)

        # Fresh symbolic inputs stand in for the observed data, which PyMC stores as constants in the graph.
        data_values = [model.rvs_to_values[rv] for rv in obs_rvs]
        data_inputs = [v.type(name=rv.name) for v, rv in zip(data_values, obs_rvs, strict=False)]

        prior_terms = [t.sum() for t in model.logp(vars=free, jacobian=True, sum=False)]
        baked = [rv.name for rv, v in zip(obs_rvs, data_values, strict=False) if v in set(ancestors(prior_terms))]
        if baked:
            raise BDMCError(f"the free variables' log density in {name} depends on the observed data of {baked}; "
                            "bdmc needs a prior that is free of the data")
        log_prior = sum(prior_terms[1:], prior_terms[0])
        # The observed variables' log densities written directly on the fresh inputs: substituting them into
        # model.logp's graph afterwards would fail when two observed variables hold equal data, whose constants
        # that graph's rewrites merge into one.
        case_terms = transformed_conditional_logp(
            rvs=obs_rvs, rvs_to_values={**model.rvs_to_values, **dict(zip(obs_rvs, data_inputs, strict=False))},
            rvs_to_transforms=model.rvs_to_transforms, jacobian=True)
        for rv, term in zip(obs_rvs, case_terms, strict=False):
            if term.ndim == 0:
                raise BDMCError(f"observed variable {rv.name!r} of {name} is a scalar; bdmc needs a leading axis "
                                "that indexes the data cases (give it shape (1,) for a single case)")
        case_terms = [t.reshape((t.shape[0], -1)).sum(axis=1) for t in case_terms]

        self._log_prior_jax = get_jaxified_graph(inputs=values, outputs=[log_prior])
        self._log_lik_jax = get_jaxified_graph(inputs=values + data_inputs, outputs=case_terms)
        # Natural-space values of the free variables (a transform's backward map) for reporting.
        natural = replace_rvs_by_values(free, rvs_to_values=model.rvs_to_values,
                                        rvs_to_transforms=model.rvs_to_transforms)
        self._constrain_jax = get_jaxified_graph(inputs=values, outputs=natural)

        # Forward simulation graphs (NumPy side): free variables mapped to their transformed values, and the
        # observed variables with the free ones replaced by (the backward transform of) their values.
        transformed = []
        for rv in free:
            transform = model.rvs_to_transforms.get(rv)
            transformed.append(rv if transform is None else transform.forward(rv, *rv.owner.inputs))
        free_values = {rv: v for rv, v in zip(free, values, strict=False)}
        free_transforms = {rv: model.rvs_to_transforms.get(rv) for rv in free}
        data_graph = replace_rvs_by_values(obs_rvs, rvs_to_values=free_values, rvs_to_transforms=free_transforms)
        self._prior_fn = _Sampler(pm, [], transformed)
        self._data_fn = _Sampler(pm, values, data_graph)
        self._pm, self._free_rvs, self._transformed = pm, tuple(free), tuple(transformed)
        self._given_fns = {}  # conditional prior samplers of sample_prior_given, by the names held fixed

        # Shapes and dtypes for the callbacks, from one draw (they are fixed by the model).
        try:  # the model's own forward graph: a failure is the model's mistake (shapes that do not broadcast)
            latent0 = self._prior_fn(np.zeros(4, np.uint32))
            data0 = self._data_fn(np.zeros(4, np.uint32), *latent0)
        except Exception as err:  # noqa: BLE001  any exception of the user's model, chained
            raise UserProgramError(f"the forward simulation of {name}", err,
                                   hint="check the shapes of its variables") from err
        self._latent_spec = tuple(jax.ShapeDtypeStruct(np.shape(x), _jax_dtype(x)) for x in latent0)
        self._data_spec = tuple(jax.ShapeDtypeStruct(np.shape(x), _jax_dtype(x)) for x in data0)
        cases = {s.shape[0] for s in self._data_spec}
        if len(cases) != 1:
            raise BDMCError(f"observed variables {list(self.observed)} of {name} disagree on the number of data "
                            f"cases (leading axes {sorted(cases)})")

    @staticmethod
    def _observed_rvs(model, observed, name):
        if observed is None:
            rvs = list(model.observed_RVs)
            if not rvs:
                raise BDMCError(f"{name} has no observed variables; pass observed=[...] naming the data")
            return rvs
        observed = [observed] if isinstance(observed, str) else list(observed)
        by_name = {rv.name: rv for rv in model.observed_RVs}
        rvs, unknown = [], []
        for item in observed:
            rv = by_name.get(item if isinstance(item, str) else getattr(item, "name", None))
            (unknown if rv is None else rvs).append(item if rv is None else rv)
        if unknown:
            free = [rv.name for rv in model.free_RVs if rv.name in {getattr(u, "name", u) for u in unknown}]
            hint = (f"; {free} are free variables: give them observed= data (any placeholder of the right "
                    "shape, e.g. via pm.observe) to make them data" if free else "")
            raise BDMCError(f"{[getattr(u, 'name', u) for u in unknown]} are not observed variables of {name}; "
                            f"its observed variables are {list(by_name)}{hint}")
        return rvs

    # ---------------------------------------------------------------------------------------- contract

    def sample_prior(self, key):
        """An exact prior draw of every free variable, on PyMC's transformed space."""
        out = host_call(self._prior_fn, self._latent_spec, _seed(key))
        return dict(zip(self.latent_names, out, strict=False))

    def sample_prior_given(self, key, fixed: Mapping[str, Any]):
        """A prior draw of the free variables with those named in ``fixed`` held at the given values.

        Parameters
        ----------
        key : jax.random.key
            Seeds the draw (host side: call it eagerly, not under ``jit`` or ``vmap``).
        fixed : dict
            Free-variable names (``"s2"``, not the value variable ``"s2_log__"``) mapped to values on their
            natural (constrained) space, e.g. fitted hyperparameters ``{"s2": 0.8}``.

        Returns
        -------
        dict
            The latent in the ``latent_names`` format (PyMC's transformed space): the fixed variables at the
            transform of their values, every other free variable drawn by PyMC's forward sampler with the fixed
            ones substituted into its graph, an exact draw from ``p(others | fixed)``.

        Raises
        ------
        bdmc.BDMCError
            When a name is not a free variable, a value has the wrong shape or lies outside the variable's
            support, or a variable left free is an ancestor of a fixed one (a forward draw would then ignore
            what the fixed value says about it, and would not be the conditional).
        """
        name = self.model.name or "pymc.Model"
        if not isinstance(fixed, Mapping):
            raise BDMCError(f"fixed must be a dict of free-variable values, got {type(fixed).__name__}")
        unknown = sorted(set(fixed) - set(self._free_names))
        if unknown:
            values = sorted(set(unknown) & set(self.latent_names))
            hint = (f"; {values} are value-variable names: fix variables by their own names on the natural space"
                    if values else "")
            raise BDMCError(f"cannot fix {unknown}: not free variables of {name}; its free variables are "
                            f"{list(self._free_names)}{hint}")
        names = tuple(n for n in self._free_names if n in fixed)
        sampler = self._given_fns.get(names) or self._given_sampler(names, name)
        self._given_fns[names] = sampler
        shapes = self._natural_shapes()
        args = []
        for n in names:
            rv = self._free_rvs[self._free_names.index(n)]
            value = np.asarray(fixed[n], dtype=rv.type.dtype)
            if value.shape != shapes[n]:
                raise BDMCError(f"fixed value of {n!r} must have shape {shapes[n]}, got {value.shape}")
            args.append(value)
        try:
            draw = sampler(np.asarray(_seed(key)), *args)
        except (ValueError, RuntimeError) as err:  # e.g. a negative scale reaching NumPy's generator
            raise BDMCError(f"PyMC cannot draw {name}'s free variables given {dict(fixed)}: {err}") from err
        latent = {n: jnp.asarray(x) for n, x in zip(self.latent_names, draw, strict=False)}
        bad = [n for n in names if not np.all(np.isfinite(latent[self.latent_names[self._free_names.index(n)]]))]
        if bad:
            raise BDMCError(f"fixed value(s) of {bad} lie outside the support of {name}'s distribution for them")
        return latent

    def _given_sampler(self, names, model_name) -> _Sampler:
        """PyMC's forward-sampling graph of the transformed free variables with ``names`` made inputs."""
        from pytensor.graph.replace import clone_replace

        try:
            from pytensor.graph.traversal import ancestors
        except ImportError:  # pytensor < 2.31
            from pytensor.graph.basic import ancestors

        rvs = [self._free_rvs[self._free_names.index(n)] for n in names]
        upstream = set(ancestors(rvs))
        parents = [rv.name for rv in self._free_rvs if rv.name not in names and rv in upstream]
        if parents:
            raise BDMCError(
                f"cannot fix {list(names)} of {model_name} while {parents} stay free: they are ancestors of the "
                f"fixed variable(s), so drawing them forward would ignore the fixed values; fix them too")
        inputs = [rv.type(name=rv.name) for rv in rvs]
        outputs = clone_replace(list(self._transformed), replace=dict(zip(rvs, inputs, strict=False)))  # all at once
        return _Sampler(self._pm, inputs, outputs)

    def _natural_shapes(self) -> dict:
        """Shapes of the free variables on their natural space (fixed by the model)."""
        if not hasattr(self, "_natural"):
            zeros = [jnp.zeros(s.shape, s.dtype) for s in self._latent_spec]
            with _float64_graph():
                natural = self._constrain_jax(*zeros)
            self._natural = {n: tuple(np.shape(v)) for n, v in zip(self._free_names, natural, strict=False)}
        return self._natural

    def sample_data(self, key, latent):
        """The observed variables drawn from the model given the free variables."""
        args = [jnp.asarray(latent[n], s.dtype) for n, s in zip(self.latent_names, self._latent_spec, strict=False)]
        out = host_call(self._data_fn, self._data_spec, _seed(key), *args)
        return dict(zip(self.observed, out, strict=False))

    def log_prior(self, latent):
        """Log prior density of the transformed latent (log-Jacobians and potentials included)."""
        with _float64_graph():
            (out,) = self._log_prior_jax(*self._latent_args(latent))
        return jnp.asarray(out)

    def log_likelihood(self, latent, data):
        """``log p(y_i | latent)`` for each data case ``i`` (leading axis of the observed variables)."""
        data_args = [jnp.asarray(data[n], s.dtype) for n, s in zip(self.observed, self._data_spec, strict=False)]
        with _float64_graph():
            terms = self._log_lik_jax(*self._latent_args(latent), *data_args)
        return sum(terms[1:], terms[0])

    def check_data(self, data):
        """Raise a DataError unless ``data`` is ``{observed name: array}`` with the model's shapes."""
        if not isinstance(data, Mapping) or set(data) != set(self.observed):
            got = sorted(data) if isinstance(data, Mapping) else type(data).__name__
            raise DataError(f"data must be a dict with the observed variable(s) {list(self.observed)}, got {got}")
        for name, spec in zip(self.observed, self._data_spec, strict=False):
            if tuple(np.shape(data[name])) != spec.shape:
                raise DataError(f"observed variable {name!r} must have shape {spec.shape}, "
                                f"got {tuple(np.shape(data[name]))}")

    def constrain(self, latent) -> dict:
        """The free variables on their natural (constrained) space, keyed by variable name (``s2``)."""
        with _float64_graph():
            return dict(zip(self._free_names, self._constrain_jax(*self._latent_args(latent)), strict=False))

    def unconstrain(self, values: Mapping[str, Any]) -> dict:
        """The latent (PyMC's transformed space) of free-variable values given on their natural space.

        The inverse of :meth:`constrain`: ``values`` maps every free variable (``"s2"``, not the value variable
        ``"s2_log__"``) to its natural value, and the result is what :meth:`sample_prior` returns, keyed by the
        value variables. Each transform's forward map runs with the other variables at the given values (a
        support that depends on them, as ``Uniform(0, a)``'s, follows them). Pure JAX: it runs under ``jit`` and
        ``vmap``; a value outside its variable's support gives a non-finite latent.
        """
        missing = [n for n in self._free_names if n not in values]
        if missing:
            raise DataError(f"unconstrain needs every free variable of {self.model.name or 'pymc.Model'}; missing "
                            f"{missing} (its free variables are {list(self._free_names)})")
        if not hasattr(self, "_unconstrain_jax"):
            from pytensor.graph.replace import clone_replace

            inputs = [rv.type(name=rv.name) for rv in self._free_rvs]
            outputs = clone_replace(list(self._transformed), replace=dict(zip(self._free_rvs, inputs, strict=True)))
            self._unconstrain_jax = _import_jaxify()(inputs=inputs, outputs=outputs)
        args = [jnp.asarray(values[n], _jax_dtype(np.zeros((), rv.type.dtype)))
                for n, rv in zip(self._free_names, self._free_rvs, strict=True)]
        with _float64_graph():
            out = self._unconstrain_jax(*args)
        return {n: jnp.asarray(x, s.dtype) for n, x, s in zip(self.latent_names, out, self._latent_spec, strict=True)}

    # ---------------------------------------------------------------------------------------- internals

    def _latent_args(self, latent):
        missing = [n for n in self.latent_names if n not in latent]
        if missing:
            raise BDMCError(f"latent is missing {missing}; its keys must be {list(self.latent_names)}")
        return [jnp.asarray(latent[n], s.dtype) for n, s in zip(self.latent_names, self._latent_spec, strict=False)]

    def release(self) -> None:
        """Drop the compiled forward samplers (compiled again when next used): an audit's end. A program that
        holds them (a user's ``jit``) keeps working."""
        for sampler in (self._prior_fn, self._data_fn, *self._given_fns.values()):
            sampler.release()

    def __repr__(self) -> str:
        return f"PyMCModel({self.model.name or 'pymc.Model'}, observed={list(self.observed)})"


class _Sampler:
    """A compiled PyMC forward-sampling function whose random generators are reseeded on every call."""

    def __init__(self, pm, inputs, outputs):
        from pymc.pytensorf import find_rng_nodes

        self._compile = getattr(pm.pytensorf, "compile", None) or pm.pytensorf.compile_pymc  # pymc < 5.19
        self._inputs, self._outputs, self._fn = list(inputs), list(outputs), None
        self._rngs = find_rng_nodes(outputs)
        self._shapes = None  # of one draw, known after the first call
        self._lock = threading.Lock()  # the generators are shared state

    def release(self) -> None:
        """Drop the compiled function; compiled again when next called."""
        with self._lock:
            self._fn = None

    def _compiled(self):
        if self._fn is None:
            # Runs once per chain at initialization: a fast-compiling Python linker is plenty.
            # A free variable need not feed the data (a hyperparameter only feeds other free variables).
            self._fn = self._compile(inputs=self._inputs, outputs=self._outputs, mode="FAST_COMPILE",
                                     on_unused_input="ignore")
        return self._fn

    def __call__(self, seed, *args):
        """One draw per seed; ``seed`` is ``batch + (4,)`` and the ``args`` share its batch shape."""
        seed = np.asarray(seed)
        batch = seed.shape[:-1]
        args = [np.asarray(a) for a in args]
        draws = []
        with self._lock:
            fn = self._compiled()
            for index in np.ndindex(batch):
                if self._rngs:
                    _reseed(self._rngs, [int(s) for s in seed[index]])
                draws.append(fn(*[a[index] for a in args]))
        if draws:
            self._shapes = [(np.shape(x), _jax_dtype(x)) for x in draws[0]]
        return tuple(np.asarray([d[i] for d in draws], dtype).reshape(batch + shape)
                     for i, (shape, dtype) in enumerate(self._shapes))


def _reseed(rngs, seed):
    from pymc.pytensorf import reseed_rngs

    reseed_rngs(rngs, seed)


def _seed(key):
    """128 bits from the key (typed or raw) as the NumPy seed of one forward simulation."""
    return jax.random.bits(key, (4,), jnp.uint32)


def _import_jaxify():
    """PyMC's ``get_jaxified_graph``, imported without changing JAX's dtype setting.

    PyTensor's JAX backend switches ``jax_enable_x64`` to match its ``floatX`` when first imported (on by
    default); the user's setting is put back, so the model computes in whatever dtype was active. It is the
    process-wide setting that is saved and restored (a ``jax.enable_x64`` context only overrides it locally).
    """
    holder = getattr(jax.config, "_value_holders", {}).get("jax_enable_x64")
    x64 = holder.get_global() if hasattr(holder, "get_global") else jax.config.jax_enable_x64
    try:
        from pymc.sampling.jax import get_jaxified_graph
    finally:
        jax.config.update("jax_enable_x64", x64)
    return get_jaxified_graph


@contextmanager
def _float64_graph():
    """Run a jaxified PyTensor graph quietly in JAX's active dtype.

    PyTensor's graphs are float64 (its ``floatX``) and cast to it explicitly; with x64 off JAX truncates each
    such cast to float32 and warns. Computing in the active dtype is what the user asked for, so those
    warnings are dropped here.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Explicitly requested dtype float64", category=UserWarning)
        yield


def _jax_dtype(x):
    """The dtype JAX will hold ``x`` in (float64 stays float64 only when x64 is on)."""
    return jnp.asarray(np.zeros((), np.asarray(x).dtype)).dtype


def from_pymc(model, *, observed: str | Sequence[Any] | None = None) -> PyMCModel:
    """Wrap a PyMC model as a bdmc Model.

    Parameters
    ----------
    model : pymc.Model
        The model. Its observed variables' data only fix their shapes and dtypes: bdmc scores and simulates
        its own data.
    observed : str or sequence of str or random variables, optional
        The observed variables holding the data (default: all of ``model.observed_RVs``); their leading axis
        indexes the data cases. Every observed variable of the model must be listed.

    Returns
    -------
    PyMCModel
        Data are a dict ``{observed name: array}``; latents a dict ``{value-variable name: array}`` on PyMC's
        transformed space (``"s2_log__"`` for a positive ``s2``); ``constrain`` and ``unconstrain`` map them to
        and from the free variables' natural values.

    Raises
    ------
    bdmc.MissingExtraError
        When PyMC is not installed (``pip install -e '.[pymc]'``).
    bdmc.BDMCError
        When an observed variable is unknown or left out, a free variable is discrete, or the model has
        ``pm.Potential`` terms (forward simulation cannot honor them).
    bdmc.errors.UserProgramError
        When the model's forward simulation fails (chained to PyMC's exception).

    Examples
    --------
    >>> X = np.asarray(bdmc.models.LinearRegression().design)
    >>> with pm.Model() as regression:
    ...     s2 = pm.InverseGamma("s2", alpha=1.0, beta=1.0)
    ...     beta = pm.Normal("beta", 0.0, pm.math.sqrt(0.1 * s2), shape=X.shape[1])
    ...     pm.Normal("y", X @ beta, pm.math.sqrt(s2), observed=np.zeros(X.shape[0]))
    >>> model = bdmc.ppl.from_pymc(regression)
    >>> data, latent = bdmc.simulate(jax.random.key(0), model)
    >>> sorted(latent)
    ['beta', 's2_log__']
    >>> result = bdmc.sandwich(jax.random.key(1), model, data, latent, steps=[100, 1000])
    """
    return PyMCModel(model, observed=observed)
