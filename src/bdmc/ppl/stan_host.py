"""The host side of the Stan adapter (:mod:`bdmc.ppl.stan`): the helper process and the JAX bridge.

- ``_StanProcess`` runs the compiled program in a helper process that serves pickled calls over a pipe (Stan's
  autodiff stack cannot be used from the threads JAX runs callbacks in);
- ``_make_log_density`` reaches it from JAX through ``jax.pure_callback`` with a custom JVP, so gradient
  kernels work under ``jit`` and ``vmap``;
- ``_stanc_info`` reads a program's variables with ``stanc --info``, and ``_outside_event_loop`` lets pystan's
  ``asyncio.run`` work where an event loop already runs (Jupyter).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.resources
import json
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from ..errors import BDMCError, require

if TYPE_CHECKING:
    from .stan import StanModel


class _Built:
    """The compiled program (in its helper process), the parameter shapes and the unconstrained size."""

    def __init__(self, *, stan: "_StanProcess", shapes: dict, dim: int):
        self.stan, self.shapes, self.dim = stan, shapes, dim


class _StanError(RuntimeError):
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


def log_prob_batch(varying, xs, with_grad):
    values, grads = np.empty(len(xs)), np.zeros_like(xs)
    for i, (changes, x) in enumerate(zip(varying, xs)):
        data, params = {**fixed_data, **changes}, x.tolist()
        try:
            values[i] = module.log_prob(data, params, True)
            if with_grad:
                grads[i] = module.log_prob_grad(data, params, True)
        except (RuntimeError, ValueError):  # Stan rejects the point (a domain error): zero density there
            values[i], grads[i] = -np.inf, 0.0
    return values, grads


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
    raise RuntimeError("could not determine the number of unconstrained parameters")


FUNCTIONS = {
    "set_fixed_data": set_fixed_data,
    "log_prob": lambda data, x: module.log_prob(data, x, True),
    "write_array": lambda data, xs: [module.write_array(data, x, False, False) for x in xs],
    "transform_inits": lambda data, many: [module.transform_inits(data, params) for params in many],
    "log_prob_batch": log_prob_batch,
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


def _make_log_density(model: StanModel):
    """``(x, lam, *observations) -> log f(x; lam)`` through host callbacks, differentiable in x and lam."""

    def value(x, lam, *obs):
        out = jax.ShapeDtypeStruct(x.shape[:-1], x.dtype)  # the host computes in float64 and casts to x's dtype
        return jax.pure_callback(lambda *a: model._host_log_density(*a, with_grad=False), out, x, lam, *obs,
                                 vmap_method="broadcast_all")

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
            out = (jax.ShapeDtypeStruct(x.shape[:-1], x.dtype), jax.ShapeDtypeStruct(x.shape, x.dtype))
            lp, grad = jax.pure_callback(lambda *a: model._host_log_density(*a, with_grad=True), out, x, lam,
                                         *obs, vmap_method="broadcast_all")
            tangent = jnp.sum(grad * dx, axis=-1)
        if not isinstance(dlam, SymbolicZero):  # d log f / d lam is the log-likelihood (f is affine in lam)
            likelihood = value(x, jnp.ones_like(lam), *obs) - value(x, jnp.zeros_like(lam), *obs)
            tangent = tangent + likelihood * dlam
        return lp, tangent

    log_density.defjvp(jvp, symbolic_zeros=True)
    return log_density


def _key_words(key):
    """The raw words of a PRNG key (typed or legacy), for seeding numpy on the host."""
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return key


def _rng(words) -> np.random.Generator:
    return np.random.default_rng([int(w) for w in np.asarray(words).ravel()])


def _stanc_info(program_code: str) -> dict:
    """The program's data variables, parameters and distributions, from ``stanc --info`` (no C++ compile)."""
    require("httpstan", extra="stan")
    stanc = importlib.resources.files("httpstan") / "stanc"
    with tempfile.TemporaryDirectory(prefix="bdmc_stan_") as tmp:
        path = Path(tmp) / "program.stan"
        path.write_text(program_code)
        done = subprocess.run([str(stanc), "--info", str(path)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise BDMCError(f"the Stan program does not compile:\n{done.stderr.strip()}")
    return json.loads(done.stdout)


def _outside_event_loop(fn, *args, **kwargs):
    """Run ``fn`` (which calls ``asyncio.run``) in a worker thread when this thread already runs an event loop.

    pystan drives httpstan with ``asyncio.run``, which refuses to start inside a running loop (Jupyter).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn(*args, **kwargs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn, *args, **kwargs).result()
