"""A WebPPL program as a bdmc Model.

The program is WebPPL source whose value (its last expression) is the model function of one argument,
``data``: an object holding every field of the ``data`` given to :func:`from_webppl`, with the observed ones
replaced by the data bdmc scores::

    var model = function(data) {
      var mu = sample(Gaussian({mu: 0, sigma: 1}));
      mapData({data: data.y}, function(y) { observe(Gaussian({mu: mu, sigma: 0.5}), y); });
    };
    model

A persistent ``node`` process (:mod:`bdmc.ppl.webppl_host`) compiles the program once and replays a given
vector of latents at its ``sample`` statements, in program order:

- ``log_prior(u)``: the scores of the ``sample`` statements at the replayed values, plus the log-Jacobians of
  the maps from the unconstrained latent ``u`` (chosen from each distribution's support: the real line as is,
  ``(a, inf)`` by ``a + exp(u)``, ``(-inf, b)`` by ``b - exp(u)``, ``(a, b)`` by a scaled logistic);
- ``log_likelihood(u, data)``: one term per ``observe`` / ``factor`` statement, in the order the program visits
  them, so the data path of SMC / SHME sees per-observation terms (a vectorized ``observe`` is one term).

Gradients come from WebPPL's own reverse-mode autodiff (``ad.js``): the pull-back of a cotangent over
``(log_prior, terms)`` is one program run on a lifted latent, so HMC, MALA and NUTS work; each density costs one
program run per chain and each gradient one more, batched over chains in one request. Prior draws and data
simulation run the program forward in WebPPL (``observe`` statements draw their values), so BDMC checks
WebPPL's own samplers. The latent vector is the concatenation of the sites, each flattened (tensors in
WebPPL's row-major order); :meth:`WebPPLModel.constrain` and :meth:`WebPPLModel.unconstrain` map it to and
from the sites' natural values.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError, DataError
from ..files import to_jsonable
from .host_calls import host_call
from .webppl_host import WebPPLProcess, decode, locate


class WebPPLModel:
    """A WebPPL program with its observed data fields singled out (build one with :func:`from_webppl`).

    Latents are flat arrays of the unconstrained sites in JAX's active float dtype (WebPPL computes in float64
    and results are cast); data are dicts ``{observed name: array}``. Instances are hashed by identity.

    Attributes
    ----------
    sites : list of dict
        One entry per ``sample`` statement of the first run: its WebPPL address, distribution and size.
    num_terms : int
        The number of ``observe`` / ``factor`` statements, the length of ``log_likelihood``.
    """

    # Prior draws come from the WebPPL program run forward in node: nothing to compile, so draw only what is asked.
    samples_on_host = True
    # Every density is a request to node: SBC batches its NUTS chains too (one request per step, not per chain).
    densities_on_host = True

    def __init__(self, program: str, *, data: Mapping[str, Any], observed: Sequence[str],
                 simulate: Callable | None = None, install: bool = True, name: str | None = None):
        if not isinstance(program, str):
            raise BDMCError(f"program must be WebPPL source as a string, got {type(program).__name__}")
        if not isinstance(data, Mapping):
            raise BDMCError(f"data must be a dict of the program's data fields, got {type(data).__name__}")
        self.observed = tuple(observed)
        if not self.observed:
            raise BDMCError("observed must name at least one field of data")
        missing = [n for n in self.observed if n not in data]
        if missing:
            raise BDMCError(f"observed field(s) {missing} are not in data, whose fields are {sorted(data)}")
        if simulate is not None and not callable(simulate):
            raise BDMCError(f"simulate must be a function simulate(rng, values), got {type(simulate).__name__}")
        self.program, self.simulate_fn = program, simulate
        self.name = name or f"program {hashlib.sha256(program.encode()).hexdigest()[:10]}"
        self._obs = {n: np.asarray(data[n]) for n in self.observed}
        for n, v in self._obs.items():
            if v.dtype == object or not np.issubdtype(v.dtype, np.number):
                raise BDMCError(f"observed field {n!r} must be numeric, got dtype {v.dtype}")
        fixed = {n: to_jsonable(v) for n, v in data.items()}
        self._process = WebPPLProcess(program, fixed=fixed, name=self.name, package=locate(auto_install=install))
        self.sites, self.num_terms = self._process.sites, self._process.num_terms
        if not self.sites:
            raise BDMCError(f"WebPPL {self.name} has no sample statements: there is nothing to infer")
        self.dim = sum(int(s["size"]) for s in self.sites)
        self._lock = threading.Lock()
        self._evaluate = _make_evaluate(self)

    # ---------------------------------------------------------------------------------------- contract

    def sample_prior(self, key):
        """A prior draw by running the program forward in WebPPL, in the unconstrained space."""
        out = jax.ShapeDtypeStruct((self.dim,), jnp.result_type(float))
        return host_call(self._prior_on_host, out, _key_words(key))  # eager: on the host, nothing compiled

    def _prior_on_host(self, words):
        words = np.asarray(words)
        seeds = [_seed(w) for w in words.reshape(-1, words.shape[-1])]
        values = decode(self._process({"op": "forward", "data": "init", "seeds": seeds})["values"])
        return values.reshape(words.shape[:-1] + (self.dim,)).astype(jnp.result_type(float))

    def sample_data(self, key, latent):
        """The observed fields drawn given the latent: WebPPL runs the program with every ``observe`` drawing
        its value (or ``simulate(rng, values)`` when given); the draws fill the observed fields in order."""
        out = tuple(jax.ShapeDtypeStruct(self._obs[n].shape, self._active_dtype(n)) for n in self.observed)
        values = host_call(self._data_on_host, out, _key_words(key), jnp.asarray(latent, jnp.result_type(float)))
        return dict(zip(self.observed, values, strict=False))

    def _active_dtype(self, name):
        return jnp.result_type(int if np.issubdtype(self._obs[name].dtype, np.integer) else float)

    def _data_on_host(self, words, u):
        words, u = np.asarray(words), np.asarray(u, np.float64)
        batch = u.shape[:-1]
        words = np.broadcast_to(words, batch + words.shape[-1:]).reshape(-1, words.shape[-1])
        draws = self._host_simulate(words, u.reshape(-1, self.dim))
        return tuple(np.stack([d[n] for d in draws]).reshape(batch + self._obs[n].shape).astype(self._active_dtype(n))
                     for n in self.observed)

    def log_prior(self, latent):
        """The scores of the sample statements at the replayed latent, with the log-Jacobians."""
        return self._evaluate(jnp.asarray(latent, jnp.result_type(float)),
                              *[jnp.asarray(v) for v in self._obs.values()])[0]

    def log_likelihood(self, latent, data):
        """One term per observe / factor statement, in the order the program visits them."""
        return self._evaluate(jnp.asarray(latent, jnp.result_type(float)), *self._observations(data))[1]

    def prior_and_terms(self, latent, data):
        """``(log_prior, log_likelihood)`` from one run of the program per chain (the JointTerms capability)."""
        return self._evaluate(jnp.asarray(latent, jnp.result_type(float)), *self._observations(data))

    def check_data(self, data):
        """Check that ``data`` holds every observed field with the shape given to :func:`from_webppl`."""
        if not isinstance(data, Mapping) or set(data) != set(self.observed):
            got = sorted(data) if isinstance(data, Mapping) else type(data).__name__
            raise DataError(f"data must be a dict with the observed field(s) {list(self.observed)}, got {got}")
        for name, value in self._obs.items():
            if tuple(np.shape(data[name])) != value.shape:
                raise DataError(f"observed field {name!r} must have shape {value.shape}, got {np.shape(data[name])}")

    # ---------------------------------------------------------------------------------------- host side

    def constrain(self, latent) -> list:
        """Each site's natural value at an unconstrained latent: floats, or arrays of a tensor's shape."""
        values = self._process({"op": "constrain", "data": "init",
                                "u": [np.asarray(latent, np.float64).tolist()]})["values"][0]
        return [self._site_value(site, decode(v)) for site, v in zip(self.sites, values, strict=False)]

    def unconstrain(self, values: Sequence[Any]) -> np.ndarray:
        """The unconstrained latent of the sites' natural values (one per site, in program order)."""
        if len(values) != len(self.sites):
            raise BDMCError(f"unconstrain needs one value per sample site ({len(self.sites)}), got {len(values)}")
        flat = [np.asarray(v, np.float64).ravel().tolist() for v in values]
        return decode(self._process({"op": "unconstrain", "data": "init", "x": [flat]})["values"][0])

    def _site_value(self, site, flat):
        return float(flat[0]) if not site["tensor"] else flat.reshape(site["dims"])

    def _observations(self, data):
        if not isinstance(data, Mapping) or any(n not in data for n in self.observed):
            raise DataError(f"data must be a dict with the observed field(s) {list(self.observed)}")
        return [jnp.asarray(data[n]) for n in self.observed]

    def _host_simulate(self, words, us) -> list:
        seeds = [_seed(w) for w in words]
        if self.simulate_fn is not None:
            out = []
            for seed, u in zip(seeds, us, strict=False):
                drawn = self.simulate_fn(np.random.default_rng(seed), self.constrain(u))
                if not isinstance(drawn, Mapping) or set(drawn) != set(self.observed):
                    raise BDMCError(f"simulate(rng, values) must return a dict over {list(self.observed)}")
                out.append({n: np.asarray(drawn[n]).reshape(self._obs[n].shape) for n in self.observed})
            return out
        runs = self._process({"op": "simulate", "data": "init", "seeds": seeds, "u": us.tolist()})["values"]
        sizes = [self._obs[n].size for n in self.observed]
        out = []
        for run in runs:
            run = decode(run)
            if run.size != sum(sizes):
                raise BDMCError(
                    f"running WebPPL {self.name} forward drew {run.size} observed value(s), but the observed "
                    f"field(s) {list(self.observed)} hold {sum(sizes)}: every observed value must be scored by "
                    "exactly one observe statement, visited in the order of the fields (row-major)")
            parts = np.split(run, np.cumsum(sizes)[:-1])
            out.append({n: p.reshape(self._obs[n].shape) for n, p in zip(self.observed, parts, strict=False)})
        return out

    def _host_evaluate(self, u, *obs, cot=None, grads=False):
        """Densities of a batch; with ``grads`` also the gradients of the prior and of the terms' sum, from the same
        runs; with cotangents ``(c_prior, c_terms)`` instead their pull-back. Leading batch axes broadcast."""
        dtype = np.asarray(u).dtype
        u = np.asarray(u, np.float64)
        shapes = [v.shape for v in self._obs.values()]
        obs = [np.asarray(o) for o in obs]
        obs_batch = [o.shape[:o.ndim - len(s)] for o, s in zip(obs, shapes, strict=False)]
        extra = [] if cot is None else [np.asarray(c, np.float64) for c in cot]
        batch = np.broadcast_shapes(u.shape[:-1], *obs_batch,
                                    *(c.shape[:c.ndim - k] for c, k in zip(extra, (0, 1), strict=False)))
        size = int(np.prod(batch))
        us = np.broadcast_to(u, batch + (self.dim,)).reshape(size, self.dim)
        # Each chain's data set (usually one for all: every chain scores the same data). The driver keeps the data
        # sets it was sent, so a batch whose chains each score their own (SBC, Geweke) is still one request.
        if all(int(np.prod(b)) == 1 for b in obs_batch):
            datasets = [dict(zip(self.observed, (o.reshape(s) for o, s in zip(obs, shapes, strict=False)),
                                 strict=False))]
            rows = None
        else:
            flat = [np.broadcast_to(o, batch + s).reshape((size,) + s) for o, s in zip(obs, shapes, strict=False)]
            first: dict = {}
            rows = np.array([first.setdefault(b"".join(f[i].tobytes() for f in flat), len(first))
                             for i in range(size)], dtype=int)
            starts = np.unique(rows, return_index=True)[1]
            datasets = [{n: f[i] for n, f in zip(self.observed, flat, strict=False)} for i in starts]
        # A latent off to infinity (an HMC trajectory that overflowed) has zero density, as where a distribution
        # refuses its parameters: prior -inf, terms 0 (no weight makes them NaN), gradient 0; node is not asked.
        off = ~np.isfinite(us).all(axis=1)
        request = {"op": "eval", "u": np.where(off[:, None], 0.0, us).tolist()}
        if cot is not None:
            request["cot"] = np.concatenate([np.broadcast_to(extra[0], batch).reshape(size, 1),
                                             np.broadcast_to(extra[1], batch + (self.num_terms,)).reshape(size, -1)],
                                            axis=1).tolist()
            reply = self._process.on_datasets(datasets, rows, request)
            grad = decode(reply["grad"]).reshape(size, self.dim)
            grad[off] = 0.0
            return grad.reshape(batch + (self.dim,)).astype(dtype)
        reply = self._process.on_datasets(datasets, rows, {**request, "grads": True} if grads else request)
        out = [decode(reply["prior"]), decode(reply["terms"]).reshape(size, self.num_terms)]
        if grads:
            out += [decode(reply[k]).reshape(size, self.dim) for k in ("gradPrior", "gradTerms")]
        out[0][off] = -np.inf
        for v in out[1:]:
            v[off] = 0.0
        return tuple(v.reshape(batch + v.shape[1:]).astype(dtype) for v in out)

    def _host_pullback(self, u, c_prior, c_terms, grad_prior, grad_terms, *obs):
        """The pull-back of cotangents ``(c_prior, c_terms)`` at ``u``: from the forward pass's gradients where a
        row's terms share one weight (annealing, posterior sampling: no program run), from a run in node where
        they do not (a data path's per-case weights)."""
        dtype = np.asarray(u).dtype
        c_prior, c_terms = np.asarray(c_prior, np.float64), np.asarray(c_terms, np.float64)
        grad_prior, grad_terms = np.asarray(grad_prior, np.float64), np.asarray(grad_terms, np.float64)
        batch = np.broadcast_shapes(c_prior.shape, c_terms.shape[:-1], grad_prior.shape[:-1], grad_terms.shape[:-1],
                                    np.shape(u)[:-1])
        c_prior = np.broadcast_to(c_prior, batch)[..., None]
        c_terms = np.broadcast_to(c_terms, batch + (self.num_terms,))
        weight = c_terms[..., :1] if self.num_terms else np.zeros(batch + (1,))
        shared = np.all(c_terms == weight, axis=-1)
        # A zero weight adds nothing, even where the gradient is not finite (as weighted_sum reads 0 * -inf).
        grad = (np.where(c_prior == 0, 0.0, c_prior * grad_prior)
                + np.where(weight == 0, 0.0, weight * grad_terms))
        if not shared.all():
            size, rows = int(np.prod(batch)), np.flatnonzero(~shared.ravel())
            pick = [np.broadcast_to(o, batch + v.shape).reshape((size,) + v.shape)[rows]
                    for o, v in zip(obs, self._obs.values(), strict=False)]
            slow = self._host_evaluate(np.broadcast_to(u, batch + (self.dim,)).reshape(size, self.dim)[rows], *pick,
                                       cot=(c_prior.reshape(size)[rows], c_terms.reshape(size, -1)[rows]))
            grad = np.array(np.broadcast_to(grad, batch + (self.dim,))).reshape(size, self.dim)
            grad[rows] = slow
            grad = grad.reshape(batch + (self.dim,))
        return np.broadcast_to(grad, batch + (self.dim,)).astype(dtype)

    def __repr__(self) -> str:
        return f"WebPPLModel({self.name}, observed={list(self.observed)}, sites={len(self.sites)})"


def _make_evaluate(model: WebPPLModel):
    """``(u, *observations) -> (log_prior, terms)`` through host callbacks, differentiable in u.

    A custom VJP. Its forward pass, taken only where a gradient follows, runs the program once per chain with
    WebPPL's autodiff and returns the gradients of the prior and of the terms' sum with the values; the pull-back
    of cotangents ``(c_prior, c_terms)`` then costs no program run where each chain's terms share one weight (a
    tempered or posterior density: ``c_prior * grad_prior + c * grad_terms``) and one run, of the weighted sum,
    for per-case weights. A gradient-based kernel's step is thus one request to node, not two.
    """

    def values(u):  # the shapes of (log_prior, terms)
        return (jax.ShapeDtypeStruct(u.shape[:-1], u.dtype),
                jax.ShapeDtypeStruct(u.shape[:-1] + (model.num_terms,), u.dtype))

    def call(u, *obs):
        return jax.pure_callback(model._host_evaluate, values(u), u, *obs, vmap_method="expand_dims")

    @jax.custom_vjp
    def evaluate(u, *obs):
        return call(u, *obs)

    def fwd(u, *obs):
        out = values(u) + (jax.ShapeDtypeStruct(u.shape, u.dtype), jax.ShapeDtypeStruct(u.shape, u.dtype))
        prior, terms, grad_prior, grad_terms = jax.pure_callback(
            lambda u, *o: model._host_evaluate(u, *o, grads=True), out, u, *obs, vmap_method="expand_dims")
        return (prior, terms), (u, obs, grad_prior, grad_terms)

    def bwd(residuals, cotangents):
        u, obs, grad_prior, grad_terms = residuals
        c_prior, c_terms = cotangents
        grad = jax.pure_callback(model._host_pullback, jax.ShapeDtypeStruct(u.shape, u.dtype), u,
                                 c_prior.astype(u.dtype), c_terms.astype(u.dtype), grad_prior, grad_terms, *obs,
                                 vmap_method="expand_dims")
        return (grad, *(None for _ in obs))

    evaluate.defvjp(fwd, bwd)
    return evaluate


def _key_words(key):
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    return jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key


def _seed(words) -> int:
    """A WebPPL seed (a 31-bit integer) from a JAX key's words."""
    return int(np.random.default_rng([int(w) for w in np.asarray(words).ravel()]).integers(2**31))


def from_webppl(program: str, data: Mapping[str, Any], *, observed: str | Sequence[str],
                simulate: Callable | None = None, install: bool = True, name: str | None = None) -> WebPPLModel:
    """Wrap a WebPPL program as a bdmc Model.

    Parameters
    ----------
    program : str
        WebPPL source whose value (its last expression) is the model function of ``data``. Its ``sample``
        statements are the latents (continuous, and the same sites in the same order at every run); each
        ``observe`` / ``factor`` statement is one likelihood term.
    data : dict
        The fields of the ``data`` object the model function receives (numbers, arrays), including the observed
        ones: their values fix the shapes; the data bdmc scores replace them.
    observed : str or sequence of str
        Name(s) of the fields that hold the observations.
    simulate : callable, optional
        ``simulate(rng, values) -> {observed name: array}`` with ``rng`` a ``numpy.random.Generator`` and
        ``values`` the sites' natural values (:meth:`WebPPLModel.constrain`). By default data are simulated by
        WebPPL itself, each ``observe`` drawing its value; pass this for programs that score data with
        ``factor``, which cannot be run forward.
    install : bool
        Install WebPPL into bdmc's cache on first use when it is missing (default); else raise.
    name : str, optional
        The program's name in messages (default: ``"program <hash>"``).

    Returns
    -------
    WebPPLModel
        Latents are flat arrays of unconstrained site values; data are dicts ``{observed name: array}``.

    Raises
    ------
    bdmc.ppl.webppl_host.WebPPLNotFoundError
        When ``node`` (or, to install, ``npm``) is not on the PATH, or WebPPL is missing and ``install=False``.
    bdmc.ppl.webppl_host.WebPPLProgramError
        When the program does not compile or run, its value is not a function, or a latent is discrete; its
        subclass ``WebPPLStructureError`` when an evaluation visits other sample sites than the first run.

    Examples
    --------
    >>> program = '''var model = function(data) {
    ...   var mu = sample(Gaussian({mu: 0, sigma: 1}));
    ...   mapData({data: data.y}, function(y) { observe(Gaussian({mu: mu, sigma: 0.5}), y); });
    ... };
    ... model'''
    >>> model = bdmc.ppl.from_webppl(program, {"y": np.zeros(10)}, observed="y")
    >>> data, latent = bdmc.simulate(jax.random.key(0), model)
    >>> bdmc.sandwich(jax.random.key(1), model, data, latent, steps=[100, 1000], num_runs=16)
    """
    return WebPPLModel(program, data=data, observed=[observed] if isinstance(observed, str) else list(observed),
                       simulate=simulate, install=install, name=name)


def install(*, quiet: bool = False):
    """Install WebPPL into bdmc's cache directory (see :func:`bdmc.ppl.webppl_host.install`)."""
    from .webppl_host import install as run

    return run(quiet=quiet)
