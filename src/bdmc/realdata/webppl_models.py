"""Collapsed and uncollapsed matrix factorization in WebPPL (BREAD paper, Sec. 5.2.1), beside the NumPyro,
PyMC and Stan programs of :mod:`bdmc.realdata.factorization`.

Same model, sizes and hyperparameters (all 1): ``U`` (``N x K``) and ``V`` (``K x D``) standard normal, rows
``y_i ~ N(u_i V, I)``; collapsed, ``U`` integrated out and ``y_i ~ N(0, V^T V + I)``. Each program scores one
likelihood term per row of ``Y``, as the NumPyro programs do, so the terms agree one by one.

- Each factor is one tensor ``sample`` (``TensorGaussian``), row-major, ``U`` before ``V``: the latent
  vector is ``concat(U.ravel(), V.ravel())`` (``V.ravel()`` collapsed), the order of NumPyro's flattened
  latent (``ravel_pytree`` of ``{"U", "V"}``). The priors live on the real line, so no transform is involved.
  A tensor site costs far less to run in WebPPL than ``N K + K D`` scalar ``sample`` statements; bdmc's
  :class:`~bdmc.kernels.SingleSiteMH` updates coordinates of the latent whatever the sites' granularity.
- The collapsed program inverts ``V^T V + I`` once per run and scores each row with ``factor``: written with
  one ``observe(MultivariateGaussian(...))`` per row, WebPPL inverts the 25 x 25 covariance and takes its
  determinant once per row, about 13 times the cost (41 against 3 ms per evaluation, measured on the shared
  machine). Because ``factor`` cannot be run forward, the model simulates its data with a numpy simulator.
"""

from __future__ import annotations

import numpy as np

from ..errors import BDMCError

OBSERVED = "Y"

UNCOLLAPSED_WEBPPL = """
var model = function(data) {
  var N = data.N, D = data.D, K = data.K;
  var U = sample(TensorGaussian({mu: 0, sigma: 1, dims: [N, K]}));
  var V = sample(TensorGaussian({mu: 0, sigma: 1, dims: [K, D]}));
  var M = T.reshape(T.dot(U, V), [N * D, 1]);
  var sigma = ones([D, 1]);
  mapData({data: _.range(N)}, function(i) {
    observe(DiagCovGaussian({mu: T.reshape(T.range(M, i * D, (i + 1) * D), [D, 1]), sigma: sigma}),
            Vector(data.Y[i]));
  });
};
model
"""

COLLAPSED_WEBPPL = """
var model = function(data) {
  var D = data.D, K = data.K;
  var V = sample(TensorGaussian({mu: 0, sigma: 1, dims: [K, D]}));
  var cov = T.add(T.dot(T.transpose(V), V), idMatrix(D));
  var prec = T.inverse(cov);
  var norm = -0.5 * (D * Math.log(2 * Math.PI) + Math.log(T.determinant(cov)));
  mapData({data: data.Y}, function(y) {
    var v = Vector(y);
    factor(norm - 0.5 * T.get(T.dot(T.transpose(v), T.dot(prec, v)), 0));
  });
};
model
"""


def _collapsed_simulator(num_rows, latent_dim):
    """``simulate(rng, values)`` for the collapsed program: ``y_i = u_i V + e_i`` with fresh ``u_i``."""

    def simulate(rng, values):
        V = np.asarray(values[0])
        U = rng.normal(size=(num_rows, latent_dim))
        return {OBSERVED: U @ V + rng.normal(size=(num_rows, V.shape[1]))}

    return simulate


def webppl_factorization(representation: str, *, num_rows: int = 50, num_cols: int = 25, latent_dim: int = 5):
    """Matrix factorization in WebPPL, as a bdmc Model (:func:`bdmc.ppl.from_webppl`).

    Parameters
    ----------
    representation : {"collapsed", "uncollapsed"}
    num_rows, num_cols, latent_dim : int
        ``N``, ``D`` and ``K`` (50, 25 and 5 in the paper).

    Returns
    -------
    bdmc.ppl.WebPPLModel
        Data ``{"Y": (N, D)}``; latent ``concat(U.ravel(), V.ravel())`` (uncollapsed) or ``V.ravel()``
        (collapsed), see :func:`webppl_latent`; one likelihood term per row. The uncollapsed model's data
        are simulated by WebPPL, the collapsed model's by numpy (its rows are scored with ``factor``).

    Raises
    ------
    bdmc.BDMCError
        For an unknown representation; WebPPL's own errors when node or WebPPL is missing.
    """
    from ..ppl import from_webppl
    from .factorization import REPRESENTATIONS

    if representation not in REPRESENTATIONS:
        raise BDMCError(f"unknown representation {representation!r}; choose one of {list(REPRESENTATIONS)}")
    N, D, K = int(num_rows), int(num_cols), int(latent_dim)
    data = {"N": N, "D": D, "K": K, OBSERVED: np.zeros((N, D))}
    if representation == "uncollapsed":
        return from_webppl(UNCOLLAPSED_WEBPPL, data, observed=OBSERVED, name="factorization-uncollapsed")
    return from_webppl(COLLAPSED_WEBPPL, data, observed=OBSERVED, simulate=_collapsed_simulator(N, K),
                       name="factorization-collapsed")


def webppl_latent(representation: str, U, V) -> np.ndarray:
    """The WebPPL program's latent holding the factors: ``concat(U.ravel(), V.ravel())`` or ``V.ravel()``."""
    parts = ([np.asarray(U).ravel()] if representation == "uncollapsed" else []) + [np.asarray(V).ravel()]
    return np.concatenate(parts)
