"""The host side of the Stan adapter (:mod:`bdmc.ppl.stan`): the helper process and the JAX bridge.

- ``build_program`` builds (or loads) a program on the model's backend, in-process or in a helper process
  (``_StanProcess``, which serves pickled calls over a pipe: Stan's autodiff stack cannot be used from the
  threads JAX runs callbacks in), as a ``BuiltProgram``;
- ``make_log_density`` reaches it from JAX through an XLA FFI call or ``jax.pure_callback`` with a custom JVP,
  so gradient kernels work under ``jit`` and ``vmap``;
- ``stanc_info`` reads a program's variables with ``stanc --info``, ``outside_event_loop`` lets pystan's
  ``asyncio.run`` work where an event loop already runs (Jupyter), and ``key_words`` / ``host_rng`` seed
  NumPy on the host from a JAX key.

These are shared by the Stan modules of :mod:`bdmc.ppl`; users call :func:`bdmc.ppl.stan.from_stan`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.resources
import json
import math
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import warnings
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from ..errors import BDMCError, RunError, require
from .registry import PPLS
from .stan_native import NativeProgram
from .stan_native_build import StanBuildError, build_library

LAMBDA = "bdmc_lambda"  # the data variable that weights the likelihood
_AFFINE_RTOL = 1e-9

if TYPE_CHECKING:
    from .stan import StanModel


class BuiltProgram:
    """A built program: its callable, the parameter shapes and the unconstrained size.

    Parameters
    ----------
    stan : callable
        ``stan(name, *args)`` calls the program's function ``name`` (``"log_prob_group"``, ``"write_array"``,
        ...): a ``NativeProgram`` in this process or a ``_StanProcess`` helper.
    shapes : dict
        Parameter name -> shape (Stan's order).
    dim : int
        Length of the unconstrained vector.
    """

    def __init__(self, *, stan: _StanProcess, shapes: dict, dim: int):
        self.stan, self.shapes, self.dim = stan, shapes, dim


class _StanError(RunError):
    """Stan refused a call (its message is kept)."""


class _StanProcess:
    """The compiled program, run in a helper process that serves calls over a pipe.

    Stan's autodiff stack is thread-local and is set up only in the thread that loads the compiled library,
    while JAX runs host callbacks in threads of its own: calling the library from them crashes the process.
    The helper process loads the library in its main thread and makes every call there; calls are batched
    over chains, so one round trip serves all chains of a step. Requests are serialized by a lock.
    """

    def __init__(self, model_name: str, *, fixed_data: dict):
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, model_name, str(to_child_r), str(from_child_w)],
            pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._send, self._recv = os.fdopen(to_child_w, "wb"), os.fdopen(from_child_r, "rb")
        self._lock = threading.Lock()
        weakref.finalize(self, _close, self._send, self._recv, self._proc)
        self("set_fixed_data", fixed_data)

    def __call__(self, name: str, *args):
        """The helper's function ``name`` applied to ``args``."""
        with self._lock:
            try:
                pickle.dump((name, args), self._send, protocol=pickle.HIGHEST_PROTOCOL)
                self._send.flush()
                status, result = pickle.load(self._recv)
            except (EOFError, OSError, pickle.UnpicklingError) as err:
                raise BDMCError(f"the Stan helper process died (exit code {self._proc.poll()})") from err
        if status != "ok":
            raise _StanError(result)
        return result


def _close(send, recv, proc):
    send.close()  # the helper exits at end of input
    recv.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()


# The helper process: loads the compiled program in its main thread and serves pickled requests.
_SERVER = r"""
import os, pickle, sys
import numpy as np
import httpstan.models

module = httpstan.models.import_services_extension_module(sys.argv[1])
requests, replies = os.fdopen(int(sys.argv[2]), "rb"), os.fdopen(int(sys.argv[3]), "wb")


fixed_data = {}


def set_fixed_data(data):
    fixed_data.update(data)


def log_prob_group(changes, xs, with_grad):
    data = {**fixed_data, **changes}
    values, grads = np.empty(len(xs)), np.zeros_like(xs)
    for i, x in enumerate(xs):
        params = x.tolist()
        try:
            values[i] = module.log_prob(data, params, True)
            if with_grad:
                grads[i] = module.log_prob_grad(data, params, True)
        except (RuntimeError, ValueError):  # Stan rejects the point (a domain error): zero density there
            values[i], grads[i] = -np.inf, 0.0
    return values, grads if with_grad else None


def count_unconstrained(data, upper):
    # The unconstrained vector is never longer than the constrained one: ask Stan which length it takes.
    for dim in range(upper, -1, -1):
        try:
            module.log_prob(data, [0.0] * dim, True)
            return dim
        except RuntimeError as err:
            if "number of parameters does not match" not in str(err):
                return dim
        except ValueError:
            return dim
    raise RunError("could not determine the number of unconstrained parameters")


FUNCTIONS = {
    "set_fixed_data": set_fixed_data,
    "log_prob": lambda data, x: module.log_prob(data, x, True),
    "write_array": lambda data, xs: [module.write_array(data, x, False, False) for x in xs],
    "transform_inits": lambda data, many: [module.transform_inits(data, params) for params in many],
    "log_prob_group": log_prob_group,
    "count_unconstrained": count_unconstrained,
}
while True:
    try:
        name, args = pickle.load(requests)
    except EOFError:
        break
    try:
        reply = ("ok", FUNCTIONS[name](*args))
    except Exception as err:
        reply = ("error", f"{type(err).__name__}: {err}")
    pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
    replies.flush()
"""


def make_log_density(model: StanModel):
    """``(x, lam, *observations) -> log f(x; lam)`` through host callbacks, differentiable in x and lam.

    Parameters
    ----------
    model : bdmc.ppl.stan.StanModel
        Read when the function is called, not when it is made: its ``_built`` program may come later.

    Returns
    -------
    callable
        A ``jax.custom_jvp`` function of the unconstrained latent ``x`` (..., D), lambda and the observations.

    Notes
    -----

    One call serves a whole batch of chains: under ``vmap`` (``vmap_method="expand_dims"``) the observations
    and lambda keep a leading axis of size one when they are shared, so they are not copied per chain, and
    every chain that shares them is evaluated on one Stan model object. In-process programs are called as
    XLA FFI targets (no Python per call); the helper-process path through ``jax.pure_callback``.
    """

    def call(with_grad, x, lam, *obs):
        out = jax.ShapeDtypeStruct(x.shape[:-1], x.dtype)  # the host computes in float64 and casts to x's dtype
        out = (out, jax.ShapeDtypeStruct(x.shape, x.dtype)) if with_grad else out
        program = model._built.stan if model._built is not None else None  # None: abstract evaluation only
        if isinstance(program, NativeProgram):  # in-process: XLA calls the C++ handler itself
            return jax.ffi.ffi_call(program.ffi_targets[with_grad], out, vmap_method="expand_dims")(
                x, lam, *obs, program=np.int64(program.ffi_program))
        return jax.pure_callback(lambda *a: _host_log_density(model, *a, with_grad=with_grad), out, x, lam, *obs,
                                 vmap_method="expand_dims")

    def value(x, lam, *obs):
        return call(False, x, lam, *obs)

    @jax.custom_jvp
    def log_density(x, lam, *obs):
        return value(x, lam, *obs)

    def jvp(primals, tangents):
        x, lam, *obs = primals
        dx, dlam, *dobs = tangents
        if any(not isinstance(t, SymbolicZero) for t in dobs):
            raise BDMCError("the Stan log density cannot be differentiated with respect to the observed data")
        if isinstance(dx, SymbolicZero):
            lp, tangent = value(x, lam, *obs), jnp.zeros(x.shape[:-1], x.dtype)
        else:
            lp, grad = call(True, x, lam, *obs)
            tangent = jnp.sum(grad * dx, axis=-1)
        if not isinstance(dlam, SymbolicZero):  # d log f / d lam is the log-likelihood (f is affine in lam)
            likelihood = value(x, jnp.ones_like(lam), *obs) - value(x, jnp.zeros_like(lam), *obs)
            tangent = tangent + likelihood * dlam
        return lp, tangent

    log_density.defjvp(jvp, symbolic_zeros=True)
    return log_density


def _host_log_density(model: StanModel, x, lam, *obs, with_grad: bool):
    """Log densities (and gradients) of a batch: arguments carry broadcastable leading batch axes."""
    dtype = np.asarray(x).dtype  # the caller's: results are cast back to it
    x, lam = np.asarray(x, np.float64), np.asarray(lam, np.float64)
    shapes = [model._obs_shape[n] for n in model.observed]
    obs = [np.asarray(o) for o in obs]
    obs_batch = [o.shape[:o.ndim - len(s)] for o, s in zip(obs, shapes, strict=False)]
    batch = np.broadcast_shapes(x.shape[:-1], lam.shape, *obs_batch)
    size, dim = math.prod(batch), x.shape[-1]
    xs = np.broadcast_to(x, batch + (dim,)).reshape(size, dim)
    lams = np.broadcast_to(lam, batch).reshape(size)
    if all(math.prod(b) == 1 for b in obs_batch):  # the usual case: every chain scores the same data
        data_sets, which = [tuple(o.reshape(s) for o, s in zip(obs, shapes, strict=False))], np.zeros(size)
    else:
        flat = [np.broadcast_to(o, batch + s).reshape((size,) + s) for o, s in zip(obs, shapes, strict=False)]
        index, data_sets, which = {}, [], np.empty(size)
        for i in range(size):
            which[i] = index.setdefault(b"".join(f[i].tobytes() for f in flat), len(index))
            if which[i] == len(data_sets):
                data_sets.append(tuple(f[i] for f in flat))
    values, grads = np.empty(size), np.empty((size, dim)) if with_grad else None
    if size and len(data_sets) == 1 and np.all(lams == lams[0]):  # one group: skip the sort
        groups, inverse = np.array([[0.0, lams[0]]]), np.zeros(size, int)
    else:
        groups, inverse = np.unique(np.column_stack([which, lams]), axis=0, return_inverse=True)
    for g, (w, lam_g) in enumerate(groups):
        members = np.flatnonzero(inverse.reshape(-1) == g) if len(groups) > 1 else slice(None)
        changes = {n: np.asarray(v, model._obs_dtype[n])
                   for n, v in zip(model.observed, data_sets[int(w)], strict=False)}
        if model.marks_likelihood:
            changes[LAMBDA] = float(lam_g)
        v, gr = model._built.stan("log_prob_group", changes, xs[members], with_grad)
        values[members] = v
        if with_grad:
            grads[members] = gr
    values = values.reshape(batch).astype(dtype)
    return (values, grads.reshape(batch + (dim,)).astype(dtype)) if with_grad else values


def build_program(model: StanModel) -> BuiltProgram:
    """Build (or load) the program on the model's backend and check it against the model's declarations.

    Parameters
    ----------
    model : bdmc.ppl.stan.StanModel
        Its ``backend`` falls back to ``"httpstan"`` (with a warning) when the in-process build fails; its
        ``_built`` is set to the result before the checks run (the caller holds the lock).

    Returns
    -------
    BuiltProgram

    Raises
    ------
    bdmc.BDMCError
        When the program cannot be loaded, or ``bdmc_lambda`` does not enter the density as a weight on the
        likelihood.
    """
    data = model._stan_data(model._placeholder, 0.0)
    program = None
    if model.backend == "native":
        try:
            program = NativeProgram(build_library(model.program_code, name=model.name), fixed_data=model._fixed,
                                    int_names={n for n, v in model._inputs.items() if v["type"] == "int"},
                                    observed=model._obs_shape, name=model.name, num_threads=model.num_threads,
                                    normalized=model.normalized)
        except (StanBuildError, OSError) as err:
            warnings.warn(f"cannot build the Stan {model.name} in-process ({err}); falling back to "
                          "backend='httpstan' (a helper process, far slower per step)", stacklevel=4)
            model.backend = "httpstan"
    if program is not None:
        shapes = {n: s for n, s in program.param_shapes(data).items()}
    else:
        stan = require("stan", extra=PPLS["stan"].extra)
        posterior = outside_event_loop(stan.build, model.program_code, data=data)
        try:
            program = _StanProcess(posterior.model_name, fixed_data=model._fixed)
        except Exception as err:  # noqa: BLE001 - whatever failed, the program cannot be evaluated
            raise BDMCError(f"cannot load the compiled Stan program {posterior.model_name}: {err}") from err
        dims = dict(zip(posterior.param_names, posterior.dims, strict=False))
        shapes = {n: tuple(int(d) for d in dims[n]) for n in model.parameter_names}
    built = BuiltProgram(stan=program, shapes=shapes, dim=0)
    model._built = built  # the checks below use it; the caller holds the lock and resets it on failure
    probe = None
    if model.simulate_fn is not None:
        probe = _checked_prior_draw(model)
        built.dim = probe[0].size
    else:
        built.dim = program("count_unconstrained", data, sum(math.prod(s) for s in shapes.values()))
    if model.marks_likelihood:
        _check_lambda_enters_affinely(model, built, probe)
    return built

def _checked_prior_draw(model: StanModel) -> tuple:
    """Run the user's simulator once, check what it returns against the program; (latent, observations)."""
    # Fixed seeds: these draws only check names, shapes and supports; no result depends on them.
    params, obs = model._call_simulator(np.random.default_rng(0))
    model._check_observations(obs)
    x = model.unconstrain(params)
    _, obs_again = model._call_simulator(np.random.default_rng(1), model.constrain(x))
    model._check_observations(obs_again)
    return x, tuple(np.asarray(obs[n], model._obs_dtype[n]) for n in model.observed)

def _check_lambda_enters_affinely(model: StanModel, built, probe) -> None:
    """bdmc_lambda must multiply a likelihood, and only that likelihood may involve the observations."""
    points = [np.zeros(built.dim)] + ([probe[0]] if probe is not None else [])
    checked = changed = False
    for x in points:
        lp = [model._stan_log_prob(model._stan_data(model._placeholder, lam), x) for lam in (0.0, 0.5, 1.0)]
        if not np.all(np.isfinite(lp)):
            continue
        checked = True
        scale = 1.0 + abs(lp[0]) + abs(lp[2])
        if abs(lp[1] - 0.5 * (lp[0] + lp[2])) > _AFFINE_RTOL * scale:
            raise BDMCError(
                f"the Stan log density is not affine in {LAMBDA} (at lambda = 0, 0.5, 1 it is {lp}): "
                f"{LAMBDA} must only multiply the likelihood, as in `target += {LAMBDA} * ..._lpdf(...)`")
        changed = changed or lp[2] != lp[0]
        if probe is not None:
            prior_other_data = model._stan_log_prob(model._stan_data(probe[1], 0.0), x)
            if abs(prior_other_data - lp[0]) > _AFFINE_RTOL * scale:
                raise BDMCError(
                    f"at {LAMBDA} = 0 the Stan log density changes with the observed variable(s) "
                    f"{list(model.observed)}: they may only enter the likelihood that {LAMBDA} multiplies")
    if checked and not changed:
        raise BDMCError(f"{LAMBDA} does not change the Stan log density: write the likelihood as "
                        f"`target += {LAMBDA} * ..._lpdf(...)` (not with `~`)")
    if not checked:
        warnings.warn(f"could not check that {LAMBDA} enters the Stan log density affinely: it is not finite "
                      "at the unconstrained origin (nor at a simulated draw)", stacklevel=4)


def key_words(key):
    """The raw words of a PRNG key (typed or legacy), for seeding numpy on the host.

    Parameters
    ----------
    key : jax.Array
        A typed key (``jax.random.key``) or a legacy uint32 key.

    Returns
    -------
    jax.Array
        The key's uint32 words, which a host callback can take as an argument.
    """
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return key


def host_rng(words) -> np.random.Generator:
    """A NumPy generator seeded by a key's words (:func:`key_words`, as a host callback receives them).

    Parameters
    ----------
    words : array of int

    Returns
    -------
    numpy.random.Generator
    """
    return np.random.default_rng([int(w) for w in np.asarray(words).ravel()])


def stanc_info(program_code: str) -> dict:
    """The program's data variables, parameters and distributions, from ``stanc --info`` (no C++ compile).

    Parameters
    ----------
    program_code : str

    Returns
    -------
    dict
        stanc's JSON: ``"inputs"``, ``"parameters"``, ``"distributions"``, ...

    Raises
    ------
    bdmc.MissingExtraError
        When httpstan is not installed.
    bdmc.BDMCError
        When the program does not compile.
    """
    require("httpstan", extra=PPLS["stan"].extra)
    stanc = importlib.resources.files("httpstan") / "stanc"
    with tempfile.TemporaryDirectory(prefix="bdmc_stan_") as tmp:
        path = Path(tmp) / "program.stan"
        path.write_text(program_code)
        done = subprocess.run([str(stanc), "--info", str(path)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise BDMCError(f"the Stan program does not compile:\n{done.stderr.strip()}")
    return json.loads(done.stdout)


def outside_event_loop(fn, *args, **kwargs):
    """Run ``fn`` (which calls ``asyncio.run``) in a worker thread when this thread already runs an event loop.

    pystan drives httpstan with ``asyncio.run``, which refuses to start inside a running loop (Jupyter).

    Parameters
    ----------
    fn : callable
    *args, **kwargs
        Passed to ``fn``.

    Returns
    -------
    object
        What ``fn`` returns.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn(*args, **kwargs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn, *args, **kwargs).result()
