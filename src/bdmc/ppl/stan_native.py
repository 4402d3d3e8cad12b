"""A compiled Stan program called in-process through ``ctypes`` (the default path of :func:`bdmc.ppl.from_stan`).

:class:`NativeProgram` loads the library built by :mod:`bdmc.ppl.stan_native_build` (the program linked with
bdmc's C++ shim). The fixed data cross to C++ once; a model object is built per (observations, bdmc_lambda)
and kept in a small cache, so the many calls of one annealing step (all chains, every leapfrog step) reuse
one object and only the unconstrained points cross. Each call evaluates a whole batch, optionally across
threads; the shim gives every calling thread its own autodiff tape, so JAX's callback threads can call it.

It answers the same requests as the helper process of the httpstan path (``program(name, *args)``), so the
adapter (:mod:`bdmc.ppl.stan`) drives either the same way. For the log density under JAX it also registers
two XLA FFI targets (``stan_native/ffi.cpp``): XLA then calls the shim from its own thread with the batch's
buffers, and no Python runs per call.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

import jax
import numpy as np

from ..errors import BDMCError

_ERR = 4096
_CACHED_MODELS = 8  # (observations, lambda) pairs kept built: one annealing step needs one
_REGISTERED: set = set()
_REGISTERED_LOCK = threading.Lock()


class StanProgramError(BDMCError, RuntimeError):
    """The compiled Stan program raised an error other than rejecting a point (which gives -inf)."""


def _signatures(lib) -> None:
    p, size, c, dbl = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double)
    sizes = ctypes.POINTER(ctypes.c_size_t)
    table = {
        "bdmc_shim_abi": ([], ctypes.c_int),
        "bdmc_data_new": ([], p),
        "bdmc_data_free": ([p], None),
        "bdmc_data_add_real": ([p, c, dbl, size, sizes, ctypes.c_int], None),
        "bdmc_data_add_int": ([p, c, ctypes.POINTER(ctypes.c_longlong), size, sizes, ctypes.c_int], None),
        "bdmc_model_new": ([p, p, c, size], p),
        "bdmc_model_free": ([p], None),
        "bdmc_num_params_r": ([p], size),
        "bdmc_param_info": ([p, c, size], ctypes.c_int),
        "bdmc_log_density": ([p, size, size, dbl, dbl, dbl, ctypes.c_int, ctypes.c_int, c, size], ctypes.c_int),
        "bdmc_write_array": ([p, size, size, dbl, dbl, size, c, size], ctypes.c_int),
        "bdmc_transform_inits": ([p, p, dbl, size, c, size], ctypes.c_int),
        "bdmc_ffi_program_new": ([p, c, c, ctypes.c_int, ctypes.POINTER(c), ctypes.POINTER(ctypes.c_int),
                                  ctypes.POINTER(ctypes.c_int), sizes, ctypes.c_int, ctypes.c_int], p),
        "bdmc_ffi_program_free": ([p], None),
    }
    for name, (args, result) in table.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result


def _ptr(array, ctype=ctypes.c_double):
    return array.ctypes.data_as(ctypes.POINTER(ctype))


class NativeProgram:
    """A Stan program's library with its fixed data; call it as ``program(request, *args)``.

    Parameters
    ----------
    library : Path
        The shared library from :func:`bdmc.ppl.stan_native_build.build_library`.
    fixed_data : dict
        The data variables that never change (everything but the observations and ``bdmc_lambda``).
    observed : dict
        The observed variables' names and shapes, in the order the JAX calls pass them.
    int_names : set of str
        The data variables the program declares ``int`` (passed to Stan as integers).
    name : str
        The program's name in error messages.
    num_threads : int
        Threads that share the points of one call (1: the calling thread alone).
    normalized : bool
        True when the program has no ``~`` / ``_lupdf`` / ``_lupmf`` (so dropping constants changes nothing):
        values without gradients are then computed in plain doubles, without an autodiff tape.
    """

    def __init__(self, library: Path, *, fixed_data: Mapping, observed: Mapping, int_names, name: str,
                 num_threads: int = 1, normalized: bool = False):
        self.lib = ctypes.CDLL(str(library))
        _signatures(self.lib)
        if self.lib.bdmc_shim_abi() != 1:
            raise BDMCError(f"the Stan library {library} was built with another version of bdmc's shim")
        self.name, self.num_threads, self.int_names = name, int(num_threads), frozenset(int_names)
        self.normalized = bool(normalized)
        self.fixed_names = frozenset(fixed_data)
        self._base = self._data(fixed_data)
        self._models: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.ffi_program = self._ffi_program(dict(observed))
        weakref.finalize(self, _free, self.lib, self._base, self._models, self.ffi_program)
        # XLA calls the handlers directly (no Python per call); targets are named per library.
        tag = hashlib.sha256(str(library).encode()).hexdigest()[:16]
        self.ffi_targets = {False: f"bdmc_stan_value_{tag}", True: f"bdmc_stan_value_grad_{tag}"}
        with _REGISTERED_LOCK:
            for with_grad, target in self.ffi_targets.items():
                if target not in _REGISTERED:
                    symbol = getattr(self.lib, "bdmc_ffi_value_grad" if with_grad else "bdmc_ffi_value")
                    jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(symbol), platform="cpu")
                    _REGISTERED.add(target)

    def _ffi_program(self, observed):
        names = [n.encode() for n in observed]
        dims = [int(d) for shape in observed.values() for d in shape]
        return self.lib.bdmc_ffi_program_new(
            self._base, self.name.encode(), b"bdmc_lambda", len(names), (ctypes.c_char_p * len(names))(*names),
            (ctypes.c_int * len(names))(*[int(n in self.int_names) for n in observed]),
            (ctypes.c_int * len(names))(*[len(s) for s in observed.values()]),
            (ctypes.c_size_t * max(1, len(dims)))(*dims), int(self.normalized), self.num_threads)

    # ------------------------------------------------------------------------------------------ requests

    def __call__(self, request: str, *args):
        return getattr(self, "_" + request)(*args)

    def _log_prob(self, data, x):
        return float(self._log_prob_group(self._changes(data), np.asarray(x, np.float64)[None], False)[0][0])

    def _log_prob_group(self, changes, xs, with_grad):
        """Log densities (and gradients) of the points ``xs[n, dim]`` on the data ``changes`` override."""
        xs = np.ascontiguousarray(xs, np.float64)
        values = np.empty(xs.shape[0])
        grads = np.empty_like(xs) if with_grad else None
        err = ctypes.create_string_buffer(_ERR)
        with self._lock:
            model = self._model(changes)
            status = self.lib.bdmc_log_density(model, xs.shape[0], xs.shape[1], _ptr(xs), _ptr(values),
                                               _ptr(grads) if with_grad else None, int(self.normalized),
                                               self.num_threads, err, _ERR)
        if status != 0:
            raise StanProgramError(f"the Stan program {self.name} failed: {err.value.decode(errors='replace')}")
        return values, grads

    def _count_unconstrained(self, data, upper=None):
        with self._lock:
            return int(self.lib.bdmc_num_params_r(self._model(self._changes(data))))

    def _write_array(self, data, xs):
        xs = np.ascontiguousarray(np.atleast_2d(np.asarray(xs, np.float64)))
        size = sum(math.prod(s) for s in self.param_shapes(data).values())
        out = np.empty((xs.shape[0], size))
        err = ctypes.create_string_buffer(_ERR)
        with self._lock:
            status = self.lib.bdmc_write_array(self._model(self._changes(data)), xs.shape[0], xs.shape[1],
                                               _ptr(xs), _ptr(out), size, err, _ERR)
        if status != 0:
            raise StanProgramError(f"the Stan program {self.name} cannot constrain: {err.value.decode()}")
        return list(out)

    def _transform_inits(self, data, many):
        out = []
        with self._lock:
            model = self._model(self._changes(data))
            dim = int(self.lib.bdmc_num_params_r(model))
            for params in many:
                handle = self._data({n: np.asarray(v, np.float64) for n, v in params.items()}, ints=False)
                x, err = np.empty(dim), ctypes.create_string_buffer(_ERR)
                try:
                    status = self.lib.bdmc_transform_inits(model, handle, _ptr(x), dim, err, _ERR)
                finally:
                    self.lib.bdmc_data_free(handle)
                if status != 0:
                    raise StanProgramError(err.value.decode(errors="replace"))
                out.append(x)
        return out

    def param_shapes(self, data) -> dict:
        """The program's parameters and their shapes, in Stan's order."""
        buffer = ctypes.create_string_buffer(_ERR)
        with self._lock:
            model = self._model(self._changes(data))
            need = self.lib.bdmc_param_info(model, buffer, _ERR)
            if need:
                buffer = ctypes.create_string_buffer(need)
                self.lib.bdmc_param_info(model, buffer, need)
        shapes = {}
        for item in filter(None, buffer.value.decode().split(";")):
            name, dims = item.split(":")
            shapes[name] = tuple(int(d) for d in dims.split(",") if d)
        return shapes

    # ------------------------------------------------------------------------------------------ C++ side

    def _changes(self, data) -> dict:
        return {n: v for n, v in data.items() if n not in self.fixed_names}

    def _model(self, changes):
        """The model built on the fixed data with ``changes`` (cached; call under the lock)."""
        arrays = {n: np.asarray(v, np.int64 if n in self.int_names else np.float64) for n, v in changes.items()}
        key = tuple((n, a.shape, a.tobytes()) for n, a in sorted(arrays.items()))
        model = self._models.get(key)
        if model is not None:
            self._models.move_to_end(key)
            return model
        handle, err = self._data(arrays), ctypes.create_string_buffer(_ERR)
        try:
            model = self.lib.bdmc_model_new(self._base, handle, err, _ERR)
        finally:
            self.lib.bdmc_data_free(handle)
        if not model:
            raise StanProgramError(f"the Stan program {self.name} rejects its data: "
                                   f"{err.value.decode(errors='replace')}")
        self._models[key] = model
        while len(self._models) > _CACHED_MODELS:
            self.lib.bdmc_model_free(self._models.popitem(last=False)[1])
        return model

    def _data(self, values: Mapping, *, ints: bool = True):
        handle = self.lib.bdmc_data_new()
        for name, value in values.items():
            is_int = ints and name in self.int_names
            array = np.asarray(value, np.int64 if is_int else np.float64)
            flat = np.ascontiguousarray(array.ravel(order="F"))  # Stan reads column-major
            dims = np.asarray(array.shape, np.uintp)
            if is_int:
                self.lib.bdmc_data_add_int(handle, name.encode(), _ptr(flat, ctypes.c_longlong), flat.size,
                                           _ptr(dims, ctypes.c_size_t), array.ndim)
            else:
                self.lib.bdmc_data_add_real(handle, name.encode(), _ptr(flat), flat.size,
                                            _ptr(dims, ctypes.c_size_t), array.ndim)
        return handle


def _free(lib, base, models, ffi_program) -> None:
    lib.bdmc_ffi_program_free(ffi_program)  # frees its own models; it reads the base data, freed after it
    for model in models.values():
        lib.bdmc_model_free(model)
    models.clear()
    lib.bdmc_data_free(base)
