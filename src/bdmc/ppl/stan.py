"""A Stan program as a bdmc Model (compiled in-process with httpstan's toolchain, or through pystan/httpstan).

The program marks its likelihood with a data variable ``bdmc_lambda`` that multiplies it::

    data { ...; real<lower=0, upper=1> bdmc_lambda; }
    model {
      target += inv_gamma_lpdf(s2 | 1, 1);                           // prior
      target += bdmc_lambda * normal_lpdf(y | X * beta, sqrt(s2));   // likelihood
    }

(a program that marks nothing is taken whole, :func:`from_stan`), so Stan's log density with
``bdmc_lambda = lam`` is ``log f(x; lam) = log_prior(x) + lam * log p(y | x)``. The latent state is Stan's
unconstrained parameter vector (in JAX's active float dtype; Stan computes in float64), the space its own
samplers move on; the log density includes the transforms' log-Jacobians. Because ``f`` is affine in ``lam``,

- ``log_prior(x)`` is Stan's ``log_prob`` at ``bdmc_lambda = 0``;
- ``log_likelihood(x, y)`` is ``log_prob(lam = 1) - log_prob(lam = 0)``, a single term: Stan reports no
  per-case terms, so the data path of SMC / SHME is not available (annealed importance sampling is);
- ``log_density(x, y, lam)`` is one evaluation of Stan's ``log_prob`` at ``bdmc_lambda = lam``.

Stan's ``~`` statements (``_lupdf``) drop constants: AIS and BDMC bounds are unaffected, but ``log_prior`` is
then unnormalized, which matters to estimators that score the joint (a warning says so).

By default (``backend="native"``) the program is compiled with httpstan's ``stanc``, headers and flags and
linked with bdmc's C++ shim once per program (cached on disk, :mod:`bdmc.ppl.stan_native_build`), and loaded with
``ctypes`` (:mod:`bdmc.ppl.stan_native`). ``backend="httpstan"``
calls the module pystan builds, in a helper process that rebuilds the model on every call. Either is reached
from JAX by one call per batch of chains (an XLA FFI call into the library in-process, a
``jax.pure_callback`` otherwise), with a custom JVP whose gradient is Stan's, so that gradient kernels such
as HMC work under ``jit`` and ``vmap`` (:mod:`bdmc.ppl.stan_host`).

Simulation (prior draws and data) comes from a user-supplied ``simulate(rng, params=None)`` (Stan has no exact
prior sampler): without ``params`` it draws every parameter from the prior; given some of them
(``StanModel.sample_prior_given``) it keeps those and draws the rest given them; it returns the full parameter
dict and the observations drawn given it.
"""

from __future__ import annotations

import hashlib
import math
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError, DataError, UserProgramError, require
from .host_calls import host_call
from .registry import PPLS
from .stan_host import LAMBDA, BuiltProgram, build_program, host_rng, key_words, make_log_density, stanc_info

BACKENDS = ("native", "httpstan")


class StanModel:
    """A Stan program with its likelihood weight ``bdmc_lambda`` (build one with :func:`from_stan`).

    Latents are flat arrays of Stan's unconstrained parameters in JAX's active float dtype; data are dicts
    ``{observed name: array}``. Instances are hashed by identity (static arguments of compiled functions).

    Attributes
    ----------
    parameter_names : tuple of str
        The program's parameters, in the order Stan lays them out in the unconstrained vector.
    normalized : bool
        False when the program uses ``~`` / ``_lupdf`` / ``_lupmf`` (``log_prior`` then lacks constants).
    """

    samples_on_host = True  # HostPrior: its draws come from the user's simulator; nothing to compile

    def _drawn_observations(self, data: Mapping[str, Any], simulate: Callable | None) -> dict:
        """The observed variables ``data`` lacks, drawn once by the simulator: they only fix the shapes (bdmc
        replaces them by the data it scores), so simulated-data runs need no placeholder from the user."""
        lacking = [n for n in self.observed if n not in data]
        if not lacking:
            return {}
        if simulate is None:
            raise BDMCError(f"data lacks the observed variable(s) {lacking}: give them in data (their values fix "
                            "the shapes) or pass simulate=... so that bdmc draws them")
        try:
            observations = simulate(np.random.default_rng(0))[1]
            return {n: np.asarray(observations[n]) for n in lacking}
        except Exception as err:
            raise UserProgramError(f"the simulator failed to draw the observed variable(s) {lacking} (called as "
                                   f"simulate(rng)): {type(err).__name__}: {err}") from err

    def __init__(self, program_code: str, *, data: Mapping[str, Any], observed: Sequence[str],
                 simulate: Callable | None = None, backend: str = "native", num_threads: int = 1,
                 name: str | None = None):
        require("stan", extra=PPLS["stan"].extra)
        if backend not in BACKENDS:
            raise BDMCError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if not isinstance(num_threads, int) or num_threads < 1:
            raise BDMCError(f"num_threads must be a positive integer, got {num_threads!r}")
        if not isinstance(program_code, str):
            raise BDMCError(f"program_code must be the Stan program as a string, got {type(program_code).__name__}")
        if not isinstance(data, Mapping):
            raise BDMCError(f"data must be a dict of the program's data variables, got {type(data).__name__}")
        if simulate is not None and not callable(simulate):
            raise BDMCError(f"simulate must be a function simulate(rng, params=None), got {type(simulate).__name__}")
        self.program_code = program_code
        self.observed = tuple(observed)
        self.simulate_fn = simulate
        self.backend, self.num_threads = backend, num_threads
        info = stanc_info(program_code)
        self.name = name or f"program {hashlib.sha256(program_code.encode()).hexdigest()[:10]}"
        inputs = self._inputs = info["inputs"]
        self.marks_likelihood = LAMBDA in inputs
        if self.marks_likelihood and (inputs[LAMBDA]["type"] != "real" or inputs[LAMBDA]["dimensions"] != 0):
            raise BDMCError(f"{LAMBDA!r} must be declared as a real scalar in the data block")
        if not self.observed:
            raise BDMCError("observed must name at least one data variable")
        for name in self.observed:
            if name == LAMBDA or name not in inputs:
                raise BDMCError(f"observed variable {name!r} is not a data variable of the Stan program; "
                                f"its data variables are {[n for n in inputs if n != LAMBDA]}")
        if self.marks_likelihood and LAMBDA in data:
            raise BDMCError(f"data must not contain {LAMBDA!r}: bdmc sets it along the annealing path")
        data = {**data, **self._drawn_observations(data, simulate)}
        missing = [n for n in inputs if n != LAMBDA and n not in data]
        if missing:
            raise BDMCError(f"data lacks the Stan program's data variable(s) {missing}")
        unknown = [n for n in data if n not in inputs]
        if unknown:
            raise BDMCError(f"data has variable(s) {unknown} that the Stan program does not declare")
        self.parameter_names = tuple(info["parameters"])
        if not self.parameter_names:
            raise BDMCError("the Stan program has no parameters to infer")
        self._obs_dtype, self._obs_shape = {}, {}
        for name in self.observed:
            dtype = np.int64 if inputs[name]["type"] == "int" else np.float64
            value = np.asarray(data[name])
            if value.ndim != inputs[name]["dimensions"]:
                raise BDMCError(f"observed variable {name!r} has {value.ndim} dimension(s) in data, "
                                f"the program declares {inputs[name]['dimensions']}")
            self._obs_dtype[name], self._obs_shape[name] = dtype, value.shape
        self._fixed = {n: np.asarray(v) for n, v in data.items() if n not in self.observed}
        self._placeholder = tuple(np.asarray(data[n], self._obs_dtype[n]) for n in self.observed)
        unnormalized = sorted(d for d in info.get("distributions", []) if d.endswith(("_lupdf", "_lupmf")))
        self.normalized = not unnormalized
        if unnormalized and not self.marks_likelihood:
            warnings.warn(
                f"the Stan program uses unnormalized densities ({', '.join(unnormalized)}; `~` statements are "
                "such) and marks no likelihood, so the normalizer of its density, which bounds on a reference "
                "path estimate, is p(y) times the constants `~` drops (log p(y) minus them); write every "
                "statement as `target += ..._lpdf(...)` for log p(y) itself.", stacklevel=3)
        elif unnormalized:
            warnings.warn(
                f"the Stan program uses unnormalized densities ({', '.join(unnormalized)}; `~` statements are "
                "such), so its log_prior is normalized only up to a constant. AIS and BDMC bounds on log p(y) are "
                "unaffected; write the prior with `target += ..._lpdf(...)` for estimators that score the joint.",
                stacklevel=3)
        self._lock = threading.RLock()  # the build's own checks call back into built methods
        self._built: BuiltProgram | None = None
        self._log_density = make_log_density(self)

    # ---------------------------------------------------------------------------------------- contract

    def sample_prior(self, key):
        """An exact prior draw from the user's simulator, mapped to Stan's unconstrained space."""
        self._require_simulator("sample_prior")
        built = self._ensure_built()
        out = jax.ShapeDtypeStruct((built.dim,), jnp.result_type(float))  # Stan computes in float64; cast
        return host_call(self._prior_on_host, out, key_words(key))  # eager: on the host, nothing compiled

    def _prior_on_host(self, words):
        return self._host_sample_prior(words).astype(jnp.result_type(float))

    def sample_prior_given(self, key, fixed: Mapping[str, Any]):
        """A prior draw of the parameters with those named in ``fixed`` held at the given values.

        Parameters
        ----------
        key : jax.random.key
            Seeds the simulator (host side: call it eagerly, not under ``jit`` or ``vmap``).
        fixed : dict
            Parameter names mapped to values on their natural (constrained) space, e.g. fitted
            hyperparameters ``{"sigma_sq": 0.8}``.

        Returns
        -------
        jax.Array
            Stan's unconstrained vector of ``simulate(rng, fixed)``'s parameters: the simulator keeps the fixed
            values and draws the other parameters from the prior given them, so the draw is exact as far as the
            simulator is.

        Raises
        ------
        bdmc.BDMCError
            When a name is not a parameter of the program, a value has the wrong shape, there is no simulator,
            or the simulator does not return the fixed values unchanged.
        """
        if not isinstance(fixed, Mapping):
            raise BDMCError(f"fixed must be a dict of parameter values, got {type(fixed).__name__}")
        unknown = sorted(set(fixed) - set(self.parameter_names))
        if unknown:
            raise BDMCError(f"cannot fix {unknown}: not parameters of the Stan program; its parameters are "
                            f"{list(self.parameter_names)}")
        self._require_simulator("sample_prior_given")
        built = self._ensure_built()
        given = {n: np.asarray(v, np.float64) for n, v in fixed.items()}
        for name, value in given.items():
            if value.shape != built.shapes[name]:
                raise BDMCError(f"fixed value of {name!r} must have shape {built.shapes[name]}, got {value.shape}")
        rng = host_rng(np.asarray(key_words(key)))
        params, _ = self._call_simulator(rng, {n: v.copy() for n, v in given.items()} if given else None)
        changed = [n for n, v in given.items()
                   if n not in params or not np.array_equal(np.asarray(params[n], np.float64), v)]
        if changed:
            raise BDMCError(f"the simulator changed the fixed parameter(s) {changed}: called with some parameters, "
                            "simulate(rng, params) must keep them and draw only the others (given them)")
        return jnp.asarray(self.unconstrain(params))

    def sample_data(self, key, latent):
        """The observations drawn by the user's simulator given the (constrained) latent parameters."""
        self._require_simulator("sample_data")
        self._ensure_built()
        out = tuple(jax.ShapeDtypeStruct(self._obs_shape[n], _active(self._obs_dtype[n])) for n in self.observed)
        values = host_call(self._data_on_host, out, key_words(key), jnp.asarray(latent, jnp.result_type(float)))
        return dict(zip(self.observed, values, strict=False))

    def _data_on_host(self, words, x):
        drawn = self._host_sample_data(words, x)
        return tuple(v.astype(_active(self._obs_dtype[n])) for v, n in zip(drawn, self.observed, strict=False))

    def log_prior(self, latent):
        """Stan's log density (with log-Jacobians) at ``bdmc_lambda = 0``."""
        self._require_marked("log_prior")
        return self.log_density(latent, dict(zip(self.observed, self._placeholder, strict=False)), 0.0)

    def log_likelihood(self, latent, data):
        """``log p(y | x)`` as one term (Stan reports no per-case terms): shape (1,)."""
        self._require_marked("log_likelihood")
        full = self.log_density(latent, data, 1.0)
        return (full - self.log_density(latent, data, 0.0))[None]

    def log_density(self, latent, data, lam):
        """``log f(x; lam)``: Stan's log density at ``bdmc_lambda = lam`` (a scalar weight); for a program that
        marks no likelihood, its whole log density, at ``lam = 1`` only."""
        if not self.marks_likelihood and not (isinstance(lam, (int, float)) and lam == 1):
            self._require_marked("log_density at lambda != 1")
        lam = jnp.asarray(lam)
        if lam.ndim != 0:
            raise BDMCError(
                f"a Stan model has a single likelihood term, so lambda must be a scalar, got shape {lam.shape}: "
                "per-case data paths (SMC, SHME) need one log-likelihood term per data case, which Stan does "
                "not report; use annealed importance sampling (method='ais')")
        self._ensure_built()
        dtype = jnp.result_type(float)  # JAX's active float; the host computes in float64 and casts back
        return self._log_density(jnp.asarray(latent, dtype), lam.astype(dtype), *self._observations(data))

    def check_data(self, data):
        """Check that ``data`` holds every observed variable with the shape given to :func:`from_stan`."""
        if not isinstance(data, Mapping) or set(data) != set(self.observed):
            got = sorted(data) if isinstance(data, Mapping) else type(data).__name__
            raise DataError(f"data must be a dict with the observed variable(s) {list(self.observed)}, got {got}")
        for name in self.observed:
            if tuple(np.shape(data[name])) != self._obs_shape[name]:
                raise DataError(f"observed variable {name!r} must have shape {self._obs_shape[name]}, "
                                f"got {tuple(np.shape(data[name]))}")
            if self._obs_dtype[name] == np.int64 and not jnp.issubdtype(jnp.asarray(data[name]).dtype, jnp.integer):
                raise DataError(f"observed variable {name!r} is declared int in the Stan program; "
                                f"got dtype {jnp.asarray(data[name]).dtype}")

    # ---------------------------------------------------------------------------------------- host side

    @property
    def dim(self) -> int:
        """Length of the unconstrained parameter vector (builds the program if needed)."""
        return self._ensure_built().dim

    @property
    def coordinate_names(self) -> tuple | None:
        """Names of the unconstrained coordinates, Stan-style (``mu[2,1]``, 1-based, column-major), where each
        parameter keeps its size when unconstrained; None when one does not (a simplex, a Cholesky factor).
        A coordinate is a monotone transform of its parameter (``sigma_sq`` holds ``log sigma_sq``)."""
        shapes = self._ensure_built().shapes
        if sum(math.prod(shape) for shape in shapes.values()) != self.dim:
            return None
        names = []
        for name, shape in shapes.items():
            indices = [tuple(reversed(i)) for i in np.ndindex(*reversed(shape))]  # column-major
            names += [name if not shape else f"{name}[{','.join(str(k + 1) for k in i)}]" for i in indices]
        return tuple(names)

    def constrain(self, latent) -> dict:
        """The parameters on their natural (constrained) space, as numpy arrays (host side, not traceable)."""
        return self._constrain_many(np.asarray(latent, np.float64)[None])[0]

    def _constrain_many(self, latents) -> list:
        built = self._ensure_built()
        flats = built.stan("write_array", self._stan_data(self._placeholder, 0.0), [x.tolist() for x in latents])
        out = []
        for flat in map(np.asarray, flats):
            params, start = {}, 0
            for name, shape in built.shapes.items():
                size = math.prod(shape)
                params[name] = flat[start:start + size].reshape(shape, order="F")  # Stan is column-major
                start += size
            out.append(params)
        return out

    def unconstrain(self, params: Mapping[str, Any]) -> np.ndarray:
        """Stan's unconstrained vector of a dict of constrained parameters (host side, not traceable)."""
        return self._unconstrain_many([params])[0]

    def _unconstrain_many(self, many) -> np.ndarray:
        built = self._ensure_built()
        for params in many:
            if not isinstance(params, Mapping) or set(params) != set(built.shapes):
                got = sorted(params) if isinstance(params, Mapping) else type(params).__name__
                raise BDMCError(f"parameters must be a dict with keys {list(built.shapes)}, got {got}")
            for name, shape in built.shapes.items():
                if np.shape(params[name]) != shape:
                    raise BDMCError(f"parameter {name!r} must have shape {shape}, got {np.shape(params[name])}")
        values = [{n: np.asarray(v, np.float64) for n, v in params.items()} for params in many]
        try:
            return np.asarray(built.stan("transform_inits", self._stan_data(self._placeholder, 0.0), values))
        except (RuntimeError, ValueError) as err:
            raise BDMCError(f"Stan cannot unconstrain the parameters: {err}") from err

    def release(self) -> None:
        """Drop the traced log density (made again on next use): an audit's end. The built program stays while the
        model lives: a program a user compiled calls into it."""
        with self._lock:
            self._log_density = make_log_density(self)

    def _ensure_built(self) -> BuiltProgram:
        with self._lock:
            if self._built is None:
                try:
                    self._built = build_program(self)
                except BaseException:
                    self._built = None  # a failed check must not leave a half-built program behind
                    raise
            return self._built

    def _stan_data(self, observations, lam) -> dict:
        data = dict(self._fixed)
        for name, value in zip(self.observed, observations, strict=False):
            data[name] = np.asarray(value, self._obs_dtype[name])
        if self.marks_likelihood:
            data[LAMBDA] = float(lam)
        return data

    def _stan_log_prob(self, data, x) -> float:
        return float(self._built.stan("log_prob", data, np.asarray(x, np.float64).tolist()))

    def _observations(self, data):
        if not isinstance(data, Mapping) or any(n not in data for n in self.observed):
            raise DataError(f"data must be a dict with the observed variable(s) {list(self.observed)}")
        return tuple(jnp.asarray(data[n], _active(self._obs_dtype[n])) for n in self.observed)

    def _require_marked(self, what):
        if not self.marks_likelihood:
            raise BDMCError(
                f"{what} needs the program to mark its likelihood, and {self.name} declares no data variable "
                f"{LAMBDA!r}: run it as written on a path from a fitted reference, "
                "`path = bdmc.reference_path(key, model, data)` (then any estimator on `path`), or declare "
                f"`real<lower=0, upper=1> {LAMBDA};` and write the likelihood `target += {LAMBDA} * ..._lpdf(...)`")

    def sample_initial(self, key):
        """A point drawn uniformly from (-2, 2) in every unconstrained coordinate, as Stan initializes its
        samplers: where a fit may start when there is no simulator (not an exact draw from anything bdmc
        scores)."""
        built = self._ensure_built()
        dtype = jnp.result_type(float)
        return jax.random.uniform(key, (built.dim,), dtype, -2.0, 2.0)

    def _require_simulator(self, what):
        if self.simulate_fn is None:
            raise BDMCError(f"{what} needs a simulator: pass simulate=... to from_stan (Stan has no exact prior "
                            "sampler of its own)")

    def _call_simulator(self, rng, params=None):
        out = self.simulate_fn(rng) if params is None else self.simulate_fn(rng, params)
        if not (isinstance(out, tuple) and len(out) == 2 and all(isinstance(o, Mapping) for o in out)):
            raise BDMCError("simulate(rng, params=None) must return a pair of dicts (parameters, observations)")
        return out

    def _check_observations(self, obs) -> None:
        for name in self.observed:
            if name not in obs:
                raise BDMCError(f"the simulator's observations lack the observed variable {name!r}")
            if np.shape(obs[name]) != self._obs_shape[name]:
                raise BDMCError(f"the simulator's observed variable {name!r} has shape {np.shape(obs[name])}, "
                                f"the data given to from_stan has {self._obs_shape[name]}")

    # Batched host callbacks: under vmap every argument arrives with the same leading batch axes.

    def _host_sample_prior(self, words):
        words = np.asarray(words)
        flat = words.reshape(-1, words.shape[-1])
        out = self._unconstrain_many([self._call_simulator(host_rng(w))[0] for w in flat])
        return out.reshape(words.shape[:-1] + (self._built.dim,))

    def _host_sample_data(self, words, latent):
        words, latent = np.asarray(words), np.asarray(latent)
        batch = latent.shape[:-1]
        words, latent = words.reshape(-1, words.shape[-1]), latent.reshape(-1, latent.shape[-1])
        draws = []
        for w, params in zip(words, self._constrain_many(latent), strict=False):
            obs = self._call_simulator(host_rng(w), params)[1]
            self._check_observations(obs)
            draws.append(obs)
        return tuple(np.stack([np.asarray(d[n], self._obs_dtype[n]) for d in draws]).reshape(
            batch + self._obs_shape[n]) for n in self.observed)

    def __repr__(self) -> str:
        return (f"StanModel(parameters={list(self.parameter_names)}, observed={list(self.observed)}, "
                f"backend={self.backend!r})")


def _active(dtype) -> np.dtype:
    """JAX's active dtype of ``dtype``'s kind: int64 / float64 stay so only when x64 is on."""
    return jnp.result_type(int if np.issubdtype(dtype, np.integer) else float)


def from_stan(program_code: str, *, data: Mapping[str, Any], observed: str | Sequence[str],
              simulate: Callable | None = None, backend: str = "native", num_threads: int = 1,
              name: str | None = None) -> StanModel:
    """Wrap a Stan program as a bdmc Model.

    Parameters
    ----------
    program_code : str
        A Stan program whose data block declares ``real<lower=0, upper=1> bdmc_lambda;`` and whose model
        block multiplies the log-likelihood by it: ``target += bdmc_lambda * normal_lpdf(y | mu, sigma);``.
        ``bdmc_lambda`` must not enter the program any other way, and the observed variables only through that
        likelihood. A program without ``bdmc_lambda`` is taken whole, as written: run it on
        ``bdmc.reference_path(key, model, data)`` (its ``log_prior`` and ``log_likelihood`` refuse).
    data : dict
        Every data variable of the program except ``bdmc_lambda``. The observed ones may be left out when
        ``simulate`` is given (one simulated data set fixes their shapes); given, their values fix the shapes.
        Either way the data bdmc scores replace them.
    observed : str or sequence of str
        Name(s) of the data variable(s) that are the observations.
    simulate : callable, optional
        ``simulate(rng, params=None) -> (params, observations)`` with ``rng`` a ``numpy.random.Generator``:
        called without ``params`` it draws the parameters from the prior, with ``params`` it keeps them, and
        with only some parameters it keeps those and draws the others from the prior given them (needed only
        by ``sample_prior_given``); in every case it returns all parameters and draws the observations given
        them. Parameters are a dict over the program's
        parameters on their natural (constrained) space, observations a dict over ``observed``. Needed for
        simulated data (``bdmc.simulate``, ``bdmc.sandwich``, forward AIS's prior draws).
    backend : {"native", "httpstan"}
        ``"native"`` (default): the program is compiled with httpstan's ``stanc``, headers and flags, linked
        with bdmc's C++ shim and called in-process through ``ctypes`` (cached under
        ``bdmc.config.cache_dir() / "stan"``, reused across processes). ``"httpstan"``: pystan builds the
        program and a helper process calls httpstan's module, rebuilding the model on every call (far slower;
        kept for comparison, and used with a warning when the native build fails, e.g. without a C++
        compiler).
    num_threads : int
        Native backend: threads that share the chains of one call (default 1, the calling thread).
    name : str, optional
        The program's name in messages (default: ``"program <hash>"``).

    Returns
    -------
    StanModel
        Latents are Stan's unconstrained parameter vectors (``model.constrain`` maps one back to a dict);
        data are dicts ``{observed name: array}``. The program is compiled (or found in the cache) on first
        use, which takes a minute or two the first time (progress is printed to stderr).

    Raises
    ------
    bdmc.MissingExtraError
        When pystan is not installed (``pip install -e '.[stan]'``).
    bdmc.BDMCError
        When ``bdmc_lambda`` is not a real scalar, an observed name is not a data variable, ``data`` misses or
        adds variables, or (on first use) the log density is not affine in ``bdmc_lambda``, or the simulator's
        output does not fit the program.

    Notes
    -----
    Stan reports the likelihood as one term, so per-case data paths (SMC, SHME) are refused; AIS works. Each
    HMC step makes about ``num_integration_steps + 3`` host callbacks, each serving all chains. In-process,
    a chain-step costs Stan's own gradient evaluations plus a few microseconds of callback overhead; through
    httpstan it costs two model constructions per gradient and a round trip to the helper.

    Examples
    --------
    >>> code = '''data { int N; vector[N] x; vector[N] y; real<lower=0, upper=1> bdmc_lambda; }
    ... parameters { real b; real<lower=0> s; }
    ... model { target += normal_lpdf(b | 0, 1) + exponential_lpdf(s | 1);
    ...         target += bdmc_lambda * normal_lpdf(y | b * x, s); }'''
    >>> def simulate(rng, params=None):
    ...     params = params or {"b": rng.normal(), "s": rng.exponential()}
    ...     return params, {"y": params["b"] * x + params["s"] * rng.normal(size=x.size)}
    >>> model = bdmc.ppl.from_stan(code, data={"N": 20, "x": x, "y": np.zeros(20)}, observed="y",
    ...                            simulate=simulate)
    >>> bdmc.sandwich(jax.random.key(0), model, steps=[100, 1000], kernel=bdmc.kernels.HMC(model))
    """
    return StanModel(program_code, data=data, observed=[observed] if isinstance(observed, str) else list(observed),
                     simulate=simulate, backend=backend, num_threads=num_threads, name=name)
