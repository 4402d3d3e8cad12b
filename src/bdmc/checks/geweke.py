"""The Geweke joint-distribution test for a model's kernel at any intermediate distribution."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as st

from ..caching import RUN_COMPILE, jit_static
from ..contracts.capabilities import TemperedSimulation, require, supports
from ..contracts.kernel import join_kernel, split_kernel


@dataclass(frozen=True)
class GewekeResult:
    """Forward-simulated and successive-conditional samples of summary statistics, and their comparison.

    ``z[j]`` is the two-sample z-score of statistic ``names[j]`` (difference of means over its standard
    error); ``p_values`` are two-sided; ``passed`` when every |z| is below ``threshold`` (Bonferroni at
    level ``alpha`` over the statistics). ``forward`` and ``successive`` are (num_samples, num_stats).
    :func:`bdmc.plotting.plot_geweke` draws their P-P plots.
    """

    names: tuple
    z: np.ndarray
    p_values: np.ndarray
    forward: np.ndarray
    successive: np.ndarray
    threshold: float

    @property
    def passed(self) -> bool:
        return bool(np.all(np.abs(self.z) < self.threshold))

    @property
    def worst(self) -> tuple[str, float]:
        """The statistic with the largest |z| and that z."""
        j = int(np.argmax(np.abs(self.z)))
        return self.names[j], float(self.z[j])

    def pp_points(self, j: int, num: int = 101):
        """P-P plot coordinates of statistic ``j``: forward CDF against successive-conditional CDF."""
        grid = np.quantile(np.concatenate([self.forward[:, j], self.successive[:, j]]), np.linspace(0, 1, num))
        f = np.searchsorted(np.sort(self.forward[:, j]), grid, side="right") / self.forward.shape[0]
        s = np.searchsorted(np.sort(self.successive[:, j]), grid, side="right") / self.successive.shape[0]
        return f, s


@dataclass(frozen=True)
class DefaultStatistics:
    """First and second moments of every latent leaf and of the data, and the log-likelihood."""

    model: object

    def __call__(self, latent, data):
        out = {}
        for path, leaf in jax.tree_util.tree_leaves_with_path(latent):
            name = jax.tree_util.keystr(path)
            v = jnp.asarray(leaf, jnp.result_type(float))
            out[f"mean {name}"] = jnp.mean(v)
            out[f"mean square {name}"] = jnp.mean(v**2)
        d = jnp.concatenate([jnp.ravel(jnp.asarray(x, jnp.result_type(float))) for x in jax.tree.leaves(data)])
        out["mean data"] = jnp.mean(d)
        out["mean square data"] = jnp.mean(d**2)
        out["log-likelihood"] = jnp.sum(self.model.log_likelihood(latent, data))
        return out


def default_statistics(model) -> Callable:
    """The default summary statistics (a hashable callable, so repeated tests reuse their compilation)."""
    return DefaultStatistics(model)


def geweke(
    key,
    model,
    kernel,
    *,
    lam=1.0,
    num_samples: int = 2000,
    num_steps: int = 50,
    statistics: Callable[..., Mapping] | None = None,
    sample_data: Callable | None = None,
    alpha: float = 1e-3,
) -> GewekeResult:
    """Compare forward simulation of (latent, data) with successive-conditional simulation.

    Forward: ``x ~ p(x)``, ``y ~ p_lam(y | x)``. Successive-conditional: start at an independent forward
    draw and alternate ``x <- kernel(x, y, lam)`` and ``y <- p_lam(y | x)`` for ``num_steps`` steps. If the
    kernel leaves ``f(.; lam)`` invariant both give the same joint distribution, so every statistic must
    agree in distribution; data resampling amplifies small biases (BDMC paper, Appendix B.2). Chains run in
    parallel and only final states are kept, so the two samples are independent and the test is exact.

    Parameters
    ----------
    key : PRNG key
    model : Model
    kernel : callable
        ``kernel(key, latent, data, lam) -> (latent, info)``.
    lam : float or array
        The intermediate distribution. For lam other than 1, ``p_lam(y|x)`` is the tempered likelihood
        normalized in y: the model must provide ``sample_data_tempered(key, latent, lam)`` (for a Gaussian
        likelihood, noise variance sigma^2 / lam), or pass ``sample_data``. This joint has ``f(x; lam)`` as
        its conditional only when the normalizer of ``p(y|x)^lam`` does not depend on x. With a latent noise
        variance it does (it scales as ``sigma^(1 - lam)`` per case), and a correct kernel fails; simulate
        the forward draws from the prior tilted by that factor instead (for an inverse-gamma prior on
        sigma^2: shape reduced by ``sum_i (1 - lam_i) D / 2``) through ``sample_data`` and a model whose
        ``sample_prior`` draws from the tilted prior.
    num_samples, num_steps : int
        Parallel chains, and kernel/data alternations per chain.
    statistics : callable, optional
        ``statistics(latent, data) -> {name: scalar}``; defaults to moments of every latent leaf and the
        data and the log-likelihood.
    sample_data : callable, optional
        ``sample_data(key, latent, lam) -> data``.
    alpha : float
        Family-wise false-alarm rate of ``passed`` (Bonferroni over statistics).
    """
    sample_data = _data_sampler(model, lam) if sample_data is None else sample_data
    statistics = default_statistics(model) if statistics is None else statistics
    lam = jnp.asarray(lam, jnp.result_type(float))

    k_fwd, k_sc = jax.random.split(key)
    kernel_def, params = split_kernel(kernel)  # a pilot's new step-size table reuses the compiled test
    fwd, sc = _simulate(jax.random.split(k_fwd, num_samples), jax.random.split(k_sc, num_samples), lam, params,
                        model=model, kernel_def=kernel_def, statistics=statistics, sample_data=sample_data,
                        num_steps=int(num_steps))
    names = tuple(fwd)
    F = np.stack([np.asarray(fwd[n], np.float64) for n in names], axis=1)
    S = np.stack([np.asarray(sc[n], np.float64) for n in names], axis=1)
    se = np.sqrt(F.var(0, ddof=1) / F.shape[0] + S.var(0, ddof=1) / S.shape[0])
    z = np.where(se > 0, (F.mean(0) - S.mean(0)) / np.where(se > 0, se, 1.0), 0.0)
    p = 2 * st.norm.sf(np.abs(z))
    threshold = float(st.norm.isf(alpha / (2 * len(names))))
    return GewekeResult(names=names, z=z, p_values=p, forward=F, successive=S, threshold=threshold)


@jit_static(static=("model", "kernel_def", "statistics", "sample_data", "num_steps"), options=RUN_COMPILE)
def _simulate(keys_fwd, keys_sc, lam, params, *, model, kernel_def, statistics, sample_data, num_steps):
    """Forward and successive-conditional statistics; compiled once per (model, kernel structure, ..., shapes)."""
    kernel = join_kernel(kernel_def, params)

    def forward(k):
        k1, k2 = jax.random.split(k)
        latent = model.sample_prior(k1)
        return latent, sample_data(k2, latent, lam)

    def successive(k):
        k0, k1 = jax.random.split(k)

        def body(carry, kk):
            latent, data = carry
            ka, kb = jax.random.split(kk)
            latent, _ = kernel(ka, latent, data, lam)
            return (latent, sample_data(kb, latent, lam)), None

        return jax.lax.scan(body, forward(k0), jax.random.split(k1, num_steps))[0]

    fwd = jax.vmap(lambda k: statistics(*forward(k)))(keys_fwd)
    sc = jax.vmap(lambda k: statistics(*successive(k)))(keys_sc)
    return fwd, sc


@dataclass(frozen=True)
class DataAtOne:
    """``sample_data(key, latent, lam)`` at lambda = 1 for a model without tempered simulation: a value (equal for
    equal models), not a fresh lambda, so the next Geweke test of the same model finds its compiled program."""

    model: object

    def __call__(self, key, latent, lam):
        return self.model.sample_data(key, latent)


def _data_sampler(model, lam):
    if supports(model, TemperedSimulation):
        return model.sample_data_tempered
    if np.all(np.asarray(lam) == 1.0):
        return DataAtOne(model)
    require(model, TemperedSimulation, purpose="a Geweke test at lam != 1 (or pass sample_data=...)")
