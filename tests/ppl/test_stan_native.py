"""The in-process Stan path (``backend="native"``): the C++ shim, its build cache and the batched JAX bridge.

Fast tests need no C++ compile: the cache keys and the build's file handling, and the bridge against a
stand-in program with a closed-form density. Tests on compiled programs are slow (a cold cache compiles the
shim and a program, about a minute each on one core; CI runs no slow tests); they share one compiled
program per module, found in the user's cache on later runs.
"""

import fcntl
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdmc

pytest.importorskip("stan")

from bdmc.ppl import from_stan, stan_host, stan_native_build  # noqa: E402
from bdmc.ppl.stan_native import StanProgramError  # noqa: E402
from bdmc.ppl.stan_native_build import StanBuildError  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from test_ppl_stan import DATA, PROGRAM, make_simulator  # noqa: E402

sys.path.remove(os.path.dirname(__file__))

# A second program: `~` statements (propto drops constants), a rejection (a domain error) and an index out of
# range (another exception).
REJECTING = """
data { int<lower=1> N; vector[N] y; real<lower=0, upper=1> bdmc_lambda; }
parameters { real mu; real<lower=0> s; }
model {
  mu ~ normal(0, 1);
  s ~ lognormal(0, 1);
  if (mu > 3) reject("mu is above 3");
  if (mu < -3) target += y[N + 1];
  target += bdmc_lambda * normal_lpdf(y | mu, s);
}
"""


# ------------------------------------------------------------------------------ fast: no C++ compile


def test_cache_keys_follow_program_toolchain_and_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("BDMC_CACHE_DIR", str(tmp_path))
    lib = stan_native_build.library_path(PROGRAM)
    assert lib.is_relative_to(tmp_path / "stan") and lib.suffix == ".so"
    assert stan_native_build.library_path(PROGRAM) == lib  # deterministic
    changed = stan_native_build.library_path(PROGRAM + "\n// one comment more\n")
    assert changed.parent != lib.parent and changed.name == lib.name  # new program, same shim
    monkeypatch.setattr(stan_native_build, "FLAGS", stan_native_build.FLAGS + ("-g",))
    assert stan_native_build.library_path(PROGRAM).parent != lib.parent  # other flags: other objects
    monkeypatch.setattr(stan_native_build.importlib.metadata, "version", lambda name: "0.0-other")
    assert stan_native_build.library_path(PROGRAM).name != lib.name


def test_a_failed_step_leaves_nothing_and_a_good_one_renames_into_place(tmp_path):
    target = tmp_path / "out.o"
    with pytest.raises(StanBuildError, match="compiling thing failed:\n.*no such flag"):
        stan_native_build._step("compiling thing (slow)", False,
                                lambda tmp: ["sh", "-c", f"echo partial > {tmp}; echo no such flag >&2; exit 1"],
                                target)
    assert list(tmp_path.iterdir()) == []  # neither the target nor the temporary file
    stan_native_build._step("compiling thing", False, lambda tmp: ["sh", "-c", f"echo whole > {tmp}"], target)
    assert target.read_text() == "whole\n" and list(tmp_path.iterdir()) == [target]


def test_the_build_lock_excludes_a_second_holder(tmp_path):
    path = tmp_path / "build.lock"
    with stan_native_build._locked(path), open(path, "a") as other, pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(path, "a") as other:  # released
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_missing_compiler_is_named_and_from_stan_falls_back_with_a_warning(monkeypatch, tmp_path):
    monkeypatch.setenv("BDMC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    with pytest.raises(StanBuildError, match="'no-such-compiler-here' is not on PATH"):
        stan_native_build.build_library(PROGRAM)

    def httpstan_reached(*args, **kwargs):
        raise RuntimeError("the httpstan path was taken")

    monkeypatch.setattr(stan_host, "outside_event_loop", httpstan_reached)
    model = from_stan(PROGRAM, data=DATA, observed="y")
    assert model.backend == "native"
    with pytest.warns(UserWarning, match="no-such-compiler-here.*falling back to backend='httpstan'"), \
            pytest.raises(RuntimeError, match="httpstan path was taken"):
        _ = model.dim
    with pytest.raises(bdmc.BDMCError, match="backend must be one of"):
        from_stan(PROGRAM, data=DATA, observed="y", backend="cmdstan")
    with pytest.raises(bdmc.BDMCError, match="num_threads"):
        from_stan(PROGRAM, data=DATA, observed="y", num_threads=0)


class _Gaussian:
    """Stands in for a compiled program: log f = -|x|^2 / 2 - lam * sum((y - x_0)^2) / 2, with its gradient."""

    def __init__(self):
        self.calls = []

    def __call__(self, request, changes, xs, with_grad):
        assert request == "log_prob_group"
        y, lam = np.asarray(changes["y"]), changes["bdmc_lambda"]
        self.calls.append((xs.shape, y.shape, lam))
        resid = y[None, :] - xs[:, :1]
        values = -0.5 * np.sum(xs**2, axis=1) - 0.5 * lam * np.sum(resid**2, axis=1)
        grads = -xs.copy()
        grads[:, 0] += lam * resid.sum(axis=1)
        return values, grads if with_grad else None


def _exact(x, y, lam):
    return -0.5 * jnp.sum(x**2) - 0.5 * lam * jnp.sum((y - x[0]) ** 2)


@pytest.fixture
def stand_in():
    model = from_stan(PROGRAM, data=DATA, observed="y")
    fake = _Gaussian()
    model._built = stan_host.BuiltProgram(stan=fake, shapes={"beta": (4,), "s2": ()}, dim=5)
    return model, fake


def test_one_callback_serves_all_chains_without_copying_the_data(stand_in, monkeypatch):
    model, fake = stand_in
    seen = []
    original = stan_host._host_log_density

    def spy(m, x, lam, *obs, with_grad):
        seen.append((x.shape, np.shape(lam), [o.shape for o in obs]))
        return original(m, x, lam, *obs, with_grad=with_grad)

    monkeypatch.setattr(stan_host, "_host_log_density", spy)
    xs = jnp.asarray(np.random.default_rng(0).normal(size=(7, 5)))
    y = jnp.linspace(-1.0, 1.0, 20)
    values, grads = jax.jit(jax.vmap(jax.value_and_grad(model.log_density), in_axes=(0, None, None)))(
        xs, {"y": y}, 0.3)
    assert seen == [((7, 5), (1,), [(1, 20)])]  # one callback; data and lambda not broadcast to the chains
    assert fake.calls == [((7, 5), (20,), pytest.approx(0.3))]  # one model (one data set, one lambda)
    ref_v, ref_g = jax.vmap(jax.value_and_grad(_exact), in_axes=(0, None, None))(xs, y, 0.3)
    np.testing.assert_allclose(values, ref_v, rtol=1e-12)
    np.testing.assert_allclose(grads, ref_g, rtol=1e-12, atol=1e-14)


def test_chains_are_grouped_by_their_lambda_and_their_data(stand_in):
    model, fake = stand_in
    xs = jnp.asarray(np.random.default_rng(1).normal(size=(6, 5)))
    lams = jnp.asarray([0.0, 0.5, 0.0, 1.0, 0.5, 0.0])
    ys = jnp.asarray(np.random.default_rng(2).normal(size=(6, 20)))
    ys = ys.at[3].set(ys[0])  # chains 0 and 3 share a data set
    got = jax.vmap(lambda x, y, lam: model.log_density(x, {"y": y}, lam))(xs, ys, lams)
    np.testing.assert_allclose(got, jax.vmap(_exact)(xs, ys, lams), rtol=1e-12)
    assert sorted(c[0][0] for c in fake.calls) == [1, 1, 1, 1, 1, 1]  # six distinct (data, lambda) pairs
    fake.calls.clear()
    shared = jax.vmap(lambda x, lam: model.log_density(x, {"y": ys[0]}, lam))(xs, lams)
    np.testing.assert_allclose(shared, jax.vmap(_exact, in_axes=(0, None, 0))(xs, ys[0], lams), rtol=1e-12)
    assert sorted(c[0][0] for c in fake.calls) == [1, 2, 3]  # one call per lambda value
    # d log f / d lambda is the log-likelihood, from the same callbacks.
    dlam = jax.grad(lambda lam: model.log_density(xs[0], {"y": ys[0]}, lam))(0.4)
    np.testing.assert_allclose(dlam, -0.5 * jnp.sum((ys[0] - xs[0, 0]) ** 2), rtol=1e-12)


def test_release_keeps_the_built_program_a_users_compiled_density_calls_into(stand_in):
    """``release`` (an audit's end) drops the traced density, not the built program: a density the user compiled
    calls into that program (freeing it was a use-after-free in the native library), and gives the same value.
    The real native library's twin is the slow tests/ppl/test_ppl_stan.py test of the same name."""
    model, fake = stand_in
    built = model._built
    xs, y = jnp.asarray(np.random.default_rng(3).normal(size=(5,))), jnp.linspace(-1.0, 1.0, 20)
    density = jax.jit(lambda x: model.log_density(x, {"y": y}, 1.0))
    before = float(density(xs))
    model.release()
    assert model._built is built
    assert float(density(xs)) == pytest.approx(before, rel=1e-12) == float(_exact(xs, y, 1.0))
    assert len(fake.calls) == 2  # the compiled density called the kept program again


# ------------------------------------------------------------------------------ slow: compiled programs


@pytest.fixture(scope="module")
def native():
    model = from_stan(PROGRAM, data=DATA, observed="y", simulate=make_simulator())
    _ = model.dim  # builds (or loads from the cache)
    assert model.backend == "native"
    return model


@pytest.fixture(scope="module")
def via_httpstan():
    model = from_stan(PROGRAM, data=DATA, observed="y", simulate=make_simulator(), backend="httpstan")
    _ = model.dim  # builds through pystan (or finds httpstan's cached module)
    return model


def _points(n, seed):
    return np.random.default_rng(seed).normal(scale=1.5, size=(n, 5))


@pytest.mark.slow
def test_values_and_gradients_equal_httpstans(native, via_httpstan):
    data, _ = bdmc.simulate(jax.random.key(0), native)
    xs = _points(8, 1)
    y = np.asarray(data["y"])
    value_and_grad = jax.jit(jax.vmap(jax.value_and_grad(native.log_density), in_axes=(0, None, None)))
    for lam in (0.0, 0.3, 1.0):
        changes = {"y": y, "bdmc_lambda": lam}
        ref_v, ref_g = via_httpstan._built.stan("log_prob_group", changes, xs, True)  # httpstan's module
        got_v, got_g = native._built.stan("log_prob_group", changes, xs, True)
        np.testing.assert_allclose(got_v, ref_v, rtol=1e-10)
        np.testing.assert_allclose(got_g, ref_g, rtol=1e-10, atol=1e-10)
        values, grads = value_and_grad(xs, data, lam)
        np.testing.assert_allclose(values, ref_v, rtol=1e-10)
        np.testing.assert_allclose(grads, ref_g, rtol=1e-10, atol=1e-10)
        # The terms bdmc splits the density into sum back to it (Stan reports one likelihood term).
        split = jax.vmap(lambda x, lam=lam: native.log_prior(x) + lam * native.log_likelihood(x, data).sum())(xs)
        np.testing.assert_allclose(split, ref_v, rtol=1e-10)
    # One FFI call per batch: the observations reach it once (a leading axis of one), not once per chain.
    text = str(jax.make_jaxpr(jax.vmap(jax.value_and_grad(native.log_density), in_axes=(0, None, None)))(
        xs, data, 0.3))
    assert "ffi_call" in text and "f64[1,20]" in text and "f64[8,20]" not in text
    # Chains with their own lambda and data: the C++ handler groups them by (data, lambda).
    lams = np.array([0.0, 0.3, 1.0, 0.3, 0.0, 1.0, 0.3, 0.0])
    ys = np.stack([y, y + 1.0, y, y + 1.0, y, y, y - 2.0, y])
    values, grads = jax.jit(jax.vmap(jax.value_and_grad(lambda x, yy, lam: native.log_density(x, {"y": yy}, lam))))(
        xs, ys, lams)
    for i in range(len(xs)):
        ref_v, ref_g = via_httpstan._built.stan("log_prob_group", {"y": ys[i], "bdmc_lambda": lams[i]}, xs[i:i + 1],
                                                True)
        np.testing.assert_allclose(values[i], ref_v[0], rtol=1e-10)
        np.testing.assert_allclose(grads[i], ref_g[0], rtol=1e-10, atol=1e-10)
    for x in xs[:2]:
        np.testing.assert_allclose(native.constrain(x)["s2"], via_httpstan.constrain(x)["s2"], rtol=1e-14)
        np.testing.assert_allclose(native.unconstrain(native.constrain(x)), x, rtol=1e-12, atol=1e-14)


@pytest.mark.slow
def test_threads_give_the_same_numbers(native):
    threaded = from_stan(PROGRAM, data=DATA, observed="y", num_threads=3)
    changes = {"y": np.linspace(-1.0, 2.0, 20), "bdmc_lambda": 0.7}
    xs = _points(11, 2)
    one = native._built.stan("log_prob_group", changes, xs, True)
    _ = threaded.dim
    three = threaded._built.stan("log_prob_group", changes, xs, True)
    np.testing.assert_array_equal(one[0], three[0])
    np.testing.assert_array_equal(one[1], three[1])
    # The worker pool is shared and kept between calls: fewer, more and again fewer workers than last time, and
    # batches smaller than the pool, each give the same numbers.
    for threads, size in ((2, 11), (4, 11), (2, 3), (4, 1)):
        other = from_stan(PROGRAM, data=DATA, observed="y", num_threads=threads)
        _ = other.dim
        got = other._built.stan("log_prob_group", changes, xs[:size], True)
        np.testing.assert_array_equal(got[0], one[0][:size])
        np.testing.assert_array_equal(got[1], one[1][:size])


@pytest.mark.slow
def test_a_second_process_loads_the_cached_library_without_compiling(native):
    lib = stan_native_build.library_path(PROGRAM)
    before = os.stat(lib)
    code = (f"import sys, time; sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
            "from test_ppl_stan import DATA, PROGRAM\nfrom bdmc.ppl import from_stan\n"
            "start = time.perf_counter(); m = from_stan(PROGRAM, data=DATA, observed='y'); m.dim\n"
            "print(time.perf_counter() - start, m.backend)")
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    seconds, backend = done.stdout.split()
    print(f"\nsecond process: built and loaded in {float(seconds):.2f} s")
    assert backend == "native" and "compiling" not in done.stderr and float(seconds) < 10
    after = os.stat(lib)
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)


@pytest.mark.slow
def test_a_changed_program_is_rebuilt(native, capfd):
    changed = PROGRAM.replace("inv_gamma_lpdf(s2 | 1, 1)", "inv_gamma_lpdf(s2 | 2, 1)")
    assert stan_native_build.library_path(changed) != stan_native_build.library_path(PROGRAM)
    model = from_stan(changed, data=DATA, observed="y")
    start = time.perf_counter()
    _ = model.dim
    err = capfd.readouterr().err
    print(f"\nrebuild after a change: {time.perf_counter() - start:.1f} s")
    assert stan_native_build.library_path(changed).exists()
    if "compiling the Stan program" not in err:  # an earlier run of this test may have cached it
        assert "compiling" not in err
    x = _points(1, 3)[0]
    data = {"y": jnp.linspace(-1.0, 2.0, 20)}
    # The new prior IG(2, 1) against the old IG(1, 1) at s2 = exp(x[4]): log(s2) - log Gamma(2) + log Gamma(1).
    diff = model.log_density(x, data, 0.0) - native.log_density(x, data, 0.0)
    np.testing.assert_allclose(diff, -x[4], rtol=1e-10)


@pytest.mark.slow
def test_float32_is_within_float32_precision_of_float64(native):
    from helpers import float32

    data, _ = bdmc.simulate(jax.random.key(3), native)
    xs = _points(4, 4)
    value_and_grad = jax.vmap(jax.value_and_grad(native.log_density), in_axes=(0, None, None))
    v64, g64 = value_and_grad(xs, data, 0.6)
    with float32():
        x32 = jnp.asarray(xs, jnp.float32)
        v32, g32 = jax.jit(value_and_grad)(x32, {"y": jnp.asarray(data["y"], jnp.float32)}, 0.6)
        assert v32.dtype == g32.dtype == jnp.float32
        draw = native.sample_prior(jax.random.key(5))
        assert draw.dtype == jnp.float32
    # Inputs rounded to float32 move the density by about |grad| * |x| * 2^-24; the result is rounded once more.
    eps32 = np.finfo(np.float32).eps
    tol = 4 * eps32 * (np.abs(v64) + np.sum(np.abs(g64 * xs), axis=1))
    assert np.all(np.abs(np.asarray(v32, np.float64) - v64) < tol)
    np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-3 * np.abs(g64).max())


@pytest.fixture(scope="module")
def rejecting():
    data = {"N": 5, "y": np.linspace(-1.0, 1.0, 5)}
    with pytest.warns(UserWarning, match="unnormalized"):
        native_model = from_stan(REJECTING, data=data, observed="y", name="rejecting")
        ref = from_stan(REJECTING, data=data, observed="y", backend="httpstan")
    _ = native_model.dim, ref.dim  # build both
    return native_model, ref


@pytest.mark.slow
def test_a_rejected_point_has_zero_density_and_other_errors_name_the_program(rejecting):
    model, ref = rejecting
    y = np.linspace(-1.0, 1.0, 5)
    xs = np.array([[0.2, -0.3], [3.5, 0.1], [-1.0, 0.4]])  # the second is rejected
    values, grads = jax.vmap(jax.value_and_grad(model.log_density), in_axes=(0, None, None))(xs, {"y": y}, 0.5)
    assert values[1] == -np.inf and np.all(grads[1] == 0.0)
    assert np.all(np.isfinite(values[np.array([0, 2])]))
    # `~` drops constants: the values equal httpstan's (propto) and not the normalized density.
    ref_v, ref_g = ref._built.stan("log_prob_group", {"y": y, "bdmc_lambda": 0.5}, xs, True)
    np.testing.assert_allclose(values, ref_v, rtol=1e-10)
    np.testing.assert_allclose(grads, ref_g, rtol=1e-10, atol=1e-12)
    bad = np.array([[-3.5, 0.0]])  # indexes y[N + 1]: not a rejection, an error in the program
    with pytest.raises(StanProgramError, match=r"Stan program rejecting failed: .*index 6 out of range"):
        model._built.stan("log_prob_group", {"y": y, "bdmc_lambda": 0.5}, bad, False)
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"Stan program rejecting failed: .*index 6 out of range"):
        model.log_density(bad[0], {"y": y}, 0.5)  # through JAX's callback, which wraps it
