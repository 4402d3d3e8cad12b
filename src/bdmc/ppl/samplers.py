"""Each PPL's own NUTS as a posterior sampler that :func:`bdmc.checks.sbc` and :func:`bdmc.audit` can audit.

- :class:`PyMCNUTS`: ``pymc.sample`` (PyMC's NUTS, its default ``jitter+adapt_diag`` initialization and warm-up)
  on a program from :func:`bdmc.ppl.from_pymc`;
- :class:`StanNUTS`: Stan's ``hmc_nuts_diag_e_adapt`` through pystan on a program from
  :func:`bdmc.ppl.from_stan`.

Both leave JAX (``traceable = False``), so SBC calls them once per simulated data set. Each returns its draws
on the adapter's own unconstrained space, the latent format of the model it samples, so SBC ranks them against
the latent that simulated the data. NumPyro's NUTS, which is pure JAX, is
:class:`bdmc.checks.samplers.NumPyroNUTS`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import io
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import threading

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BDMCError, RunError

# A new interpreter runs one pickled call and writes (ok, result or exception) to the file named by argv[1].
_CHILD = """
import pickle, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as httpstan's own workers
call = pickle.load(sys.stdin.buffer)
try:
    out = (True, call())
except BaseException as err:
    out = (False, err)
try:
    data = pickle.dumps(out)
except Exception:
    data = pickle.dumps((False, RuntimeError(repr(out[1]))))
with open(sys.argv[1], "wb") as f:
    f.write(data)
"""


class FreshInterpreter(concurrent.futures.Executor):
    """Runs each call in a new Python interpreter started with ``subprocess``, never a fork of this process.

    httpstan runs Stan's sampler in a module-level ``ProcessPoolExecutor`` that forks this process, where JAX
    has started its threads: the child may deadlock on a lock some thread held (Python 3.12+ warns). A
    multiprocessing "spawn" pool would re-import the caller's ``__main__`` in the child (re-running a script
    without a ``__main__`` guard); this runs only httpstan's picklable call (about 0.3 s to start).
    """

    def submit(self, fn, /, *args, **kwargs):
        future = concurrent.futures.Future()
        call = pickle.dumps(functools.partial(fn, *args, **kwargs))

        def run():
            try:
                with tempfile.TemporaryDirectory(prefix="bdmc_stan_") as tmp:
                    path = os.path.join(tmp, "result.pickle")
                    done = subprocess.run([sys.executable, "-c", _CHILD, path], input=call)
                    if not os.path.exists(path):
                        raise RunError(f"Stan's worker process exited with status {done.returncode}")
                    with open(path, "rb") as f:
                        ok, value = pickle.load(f)
            except Exception as err:  # noqa: BLE001 - the caller waits on the future: it must hear of any failure
                ok, value = False, err
            (future.set_result if ok else future.set_exception)(value)

        threading.Thread(target=run, name="bdmc-stan-worker", daemon=True).start()
        return future


def unforked_stan_workers() -> None:
    """Make httpstan (pystan's server) sample in a new interpreter rather than in a fork of this process.

    Call it before ``stan.build(...).sample(...)`` in a process where JAX runs (see :class:`FreshInterpreter`);
    bdmc's Stan sampler calls it itself.
    """
    from httpstan import services_stub

    if not isinstance(services_stub.executor, FreshInterpreter):
        services_stub.executor = FreshInterpreter()


def _seed(key) -> int:
    """A 31-bit integer seed for a sampler outside JAX, from ``key`` (host side)."""
    return int(jax.random.randint(key, (), 0, 2**31 - 1))


def _check_options(name: str, num_warmup: int, thin: int) -> None:
    if not isinstance(num_warmup, int) or not isinstance(thin, int) or num_warmup < 0 or thin < 1:
        raise BDMCError(f"{name} needs num_warmup >= 0 and thin >= 1 (integers), got num_warmup={num_warmup!r}, "
                        f"thin={thin!r}")


class PyMCNUTS:
    """PyMC's own NUTS (``pymc.sample``) on a PyMC program, one chain per data set.

    The observed variables of the program are replaced once by shared variables (``pymc.observe``, which
    re-observes an observed variable in the PyMC the extras require), so each data set only sets their
    values; PyMC then runs its usual initialization and warm-up on every data set,
    and bdmc keeps every ``thin``-th draw on PyMC's transformed space (the adapter's latent).

    Parameters
    ----------
    model : bdmc.ppl.pymc.PyMCModel
        From :func:`bdmc.ppl.from_pymc`.
    num_warmup : int
        PyMC's tuning draws (``tune``).
    thin : int
        Draws between kept draws.
    target_accept : float
        As for ``pymc.sample``.
    init : str
        PyMC's initialization (``pymc.sample(init=...)``).
    """

    traceable = False

    def __init__(self, model, *, num_warmup: int = 500, thin: int = 1, target_accept: float = 0.8,
                 init: str = "jitter+adapt_diag"):
        from .pymc import PyMCModel

        if not isinstance(model, PyMCModel):
            raise BDMCError(f"PyMCNUTS needs a PyMC program (bdmc.ppl.from_pymc), got {model!r}")
        _check_options("PyMCNUTS", num_warmup, thin)
        if not 0 < target_accept < 1:
            raise BDMCError(f"PyMCNUTS: target_accept must lie in (0, 1), got {target_accept}")
        self.model, self.num_warmup, self.thin = model, num_warmup, thin
        self.target_accept, self.init = float(target_accept), init
        self._observed = None  # (the program with shared observations, those shared variables), built on first use

    def _program(self, data):
        """The program with shared variables for its observations (built on the first data set)."""
        if self._observed is None:
            import pymc as pm
            import pytensor

            program = self.model.model
            shared = {name: pytensor.shared(np.asarray(data[name], program[name].type.dtype), name=f"{name}_observed")
                      for name in self.model.observed}
            self._observed = (pm.observe(program, shared), shared)
        return self._observed

    def draws(self, key, data, *, num_draws: int):
        return self.diagnosed_draws(key, data, num_draws=num_draws)[0]

    def diagnosed_draws(self, key, data, *, num_draws: int):
        """``draws`` with the chain's divergences: ``(draws, {"divergences": int, "transitions": int})``, counted
        over every draw after tuning (the thinned-away ones too)."""
        import pymc as pm

        program, shared = self._program(data)
        for name, variable in shared.items():
            variable.set_value(np.asarray(data[name], variable.type.dtype))
        logger = logging.getLogger("pymc")
        level = logger.level
        logger.setLevel(logging.ERROR)  # "Auto-assigning NUTS sampler...", once per data set
        try:
            trace = pm.sample(draws=int(num_draws) * self.thin, tune=self.num_warmup, chains=1, cores=1,
                              model=program, random_seed=_seed(key), target_accept=self.target_accept,
                              init=self.init, progressbar=False, compute_convergence_checks=False,
                              return_inferencedata=False, discard_tuned_samples=True)
        finally:
            logger.setLevel(level)
        dtype = jnp.result_type(float)
        diverging = np.asarray(trace.get_sampler_stats("diverging"))
        return ({name: jnp.asarray(trace.get_values(name)[::self.thin], dtype) for name in self.model.latent_names},
                {"divergences": int(diverging.sum()), "transitions": int(diverging.size)})

    def settings(self) -> dict:
        return {"sampler": "pymc-nuts", "num_warmup": self.num_warmup, "thin": self.thin,
                "target_accept": self.target_accept, "init": self.init}

    def __repr__(self) -> str:
        return f"PyMCNUTS(num_warmup={self.num_warmup}, thin={self.thin}, target_accept={self.target_accept})"


class StanNUTS:
    """Stan's own NUTS (``hmc_nuts_diag_e_adapt``, through pystan) on a Stan program, one chain per data set.

    pystan compiles the program once (httpstan caches it by its text) and runs Stan's sampler, with its
    warm-up, on each data set with ``bdmc_lambda = 1``; bdmc maps the kept draws to Stan's unconstrained space
    (the adapter's latent) with the program's own transform.

    Parameters
    ----------
    model : bdmc.ppl.stan.StanModel
        From :func:`bdmc.ppl.from_stan`.
    num_warmup : int
        Stan's warm-up iterations.
    thin : int
        Iterations between kept draws (Stan's ``num_thin``).
    delta : float
        Target acceptance statistic of the step-size adaptation (Stan's ``adapt_delta``).
    max_depth : int
        Largest tree depth.
    """

    traceable = False

    def __init__(self, model, *, num_warmup: int = 1000, thin: int = 1, delta: float = 0.8, max_depth: int = 10):
        from .stan import StanModel

        if not isinstance(model, StanModel):
            raise BDMCError(f"StanNUTS needs a Stan program (bdmc.ppl.from_stan), got {model!r}")
        _check_options("StanNUTS", num_warmup, thin)
        if not 0 < delta < 1 or not isinstance(max_depth, int) or max_depth < 1:
            raise BDMCError(f"StanNUTS needs 0 < delta < 1 and max_depth >= 1, got delta={delta}, "
                            f"max_depth={max_depth!r}")
        self.model, self.num_warmup, self.thin = model, num_warmup, thin
        self.delta, self.max_depth = float(delta), max_depth

    def draws(self, key, data, *, num_draws: int):
        return self.diagnosed_draws(key, data, num_draws=num_draws)[0]

    def diagnosed_draws(self, key, data, *, num_draws: int):
        """``draws`` with the chain's divergences: ``(draws, {"divergences": int, "transitions": int})``, counted
        over the kept iterations (Stan reports the thinned ones only)."""
        import stan

        from .stan_host import outside_event_loop

        unforked_stan_workers()  # not httpstan's pool, which forks this process (JAX's threads running)
        model, num_draws = self.model, int(num_draws)
        stan_data = model._stan_data([np.asarray(data[name]) for name in model.observed], 1.0)
        _announce_stan_build()
        quiet = io.StringIO()  # pystan's build and progress lines, once per data set
        with quiet_stderr_fd(), contextlib.redirect_stderr(quiet), contextlib.redirect_stdout(quiet):
            posterior = outside_event_loop(stan.build, model.program_code, data=stan_data, random_seed=_seed(key))
            fit = outside_event_loop(posterior.sample, num_chains=1, num_samples=num_draws * self.thin,
                                      num_warmup=self.num_warmup, num_thin=self.thin, delta=self.delta,
                                      max_depth=self.max_depth)
        shapes = model._ensure_built().shapes
        columns = {name: np.moveaxis(np.asarray(fit[name]), -1, 0).reshape((-1,) + tuple(shape))
                   for name, shape in shapes.items()}
        kept = next(iter(columns.values())).shape[0]
        if kept != num_draws:
            raise BDMCError(f"Stan returned {kept} draws, expected {num_draws}")
        unconstrained = model._unconstrain_many([{name: c[i] for name, c in columns.items()} for i in range(kept)])
        divergent = np.asarray(fit["divergent__"]).ravel()
        return (jnp.asarray(unconstrained, jnp.result_type(float)),
                {"divergences": int(divergent.sum()), "transitions": int(divergent.size)})

    def settings(self) -> dict:
        return {"sampler": "stan-nuts", "num_warmup": self.num_warmup, "thin": self.thin, "delta": self.delta,
                "max_depth": self.max_depth}

    def __repr__(self) -> str:
        return f"StanNUTS(num_warmup={self.num_warmup}, thin={self.thin}, delta={self.delta})"


_STAN_BUILD_ANNOUNCED = threading.Event()


def _announce_stan_build() -> None:
    """Say once per process that pystan builds the program (its compiler runs quietly behind this line)."""
    if not _STAN_BUILD_ANNOUNCED.is_set():
        _STAN_BUILD_ANNOUNCED.set()
        print("bdmc: building the program for Stan's NUTS (pystan; a minute or two the first time, then cached) ...",
              file=sys.stderr, flush=True)


@contextlib.contextmanager
def quiet_stderr_fd():
    """Send file descriptor 2 to a temporary file for the block: a compiler that a build runs as a subprocess
    writes its warnings there, not to the user's terminal. When the block raises, the captured tail (the
    compiler's errors) is written back to stderr before the exception propagates."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            sink.seek(0)
            tail = sink.read()[-4000:].decode(errors="replace")
            if tail.strip():
                print(tail, file=sys.stderr, flush=True)
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)

