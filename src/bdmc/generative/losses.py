"""The training objectives: the VAE's evidence lower bound, the GAN's losses, the GMMN's MMD.

Each works on one image (ELBO) or one minibatch (GAN, MMD) and takes the decoder and encoder as functions
``decoder(params, z)`` (one latent ``(k,)``) and ``encoder(params, x) -> (mean, log_std)`` (one image), so the
tests can pass linear networks whose objectives have closed forms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp

# Li et al. (2015) train GMMNs on MNIST with a sum of Gaussian kernels of these bandwidths.
GMMN_BANDWIDTHS = (2.0, 5.0, 10.0, 20.0, 40.0, 80.0)


def gaussian_log_likelihood(x, mean, log_sigma):
    """``log N(x; mean, sigma^2 I)`` summed over the last axis (the spherical observation model)."""
    d = x.shape[-1]
    resid = jnp.sum((x - mean) ** 2, axis=-1)
    return -0.5 * resid * jnp.exp(-2.0 * log_sigma) - d * log_sigma - 0.5 * d * math.log(2.0 * math.pi)


def diag_gaussian_log_density(z, mean, log_std):
    """``log N(z; mean, diag(exp(2 log_std)))`` summed over the last axis."""
    u = (z - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * u**2 - log_std - 0.5 * math.log(2.0 * math.pi), axis=-1)


def standard_normal_log_density(z):
    """``log N(z; 0, I)`` summed over the last axis."""
    return jnp.sum(-0.5 * z**2 - 0.5 * math.log(2.0 * math.pi), axis=-1)


def kl_to_standard_normal(mean, log_std):
    """``KL(N(mean, diag(exp(2 log_std))) || N(0, I))`` in closed form, summed over the last axis."""
    return 0.5 * jnp.sum(jnp.exp(2.0 * log_std) + mean**2 - 1.0 - 2.0 * log_std, axis=-1)


def vae_elbo(key, decoder, dec_params, encoder, enc_params, x, *, log_sigma, num_samples: int = 1):
    """Reparameterized estimate of one image's evidence lower bound under a Gaussian observation model.

    ``E_q[log N(x; f(z), sigma^2 I)] - KL(q(z | x) || N(0, I))``: the expected reconstruction term averaged
    over ``num_samples`` draws ``z = mean + exp(log_std) * eps``, the KL term in closed form. Unbiased for the
    ELBO for every ``num_samples``.

    Parameters
    ----------
    key : jax.random key
    decoder, encoder : callable
        ``decoder(dec_params, z)`` for one latent ``(k,)``; ``encoder(enc_params, x) -> (mean, log_std)``.
    x : array (D,)
        One image.
    log_sigma : scalar
        Log standard deviation of the observation noise.
    num_samples : int
        Latent draws averaged in the reconstruction term.

    Returns
    -------
    scalar
    """
    mean, log_std = encoder(enc_params, x)
    eps = jax.random.normal(key, (num_samples, mean.shape[-1]), mean.dtype)
    z = mean + jnp.exp(log_std) * eps
    recon = jax.vmap(lambda zi: decoder(dec_params, zi))(z)
    return jnp.mean(gaussian_log_likelihood(x, recon, log_sigma)) - kl_to_standard_normal(mean, log_std)


def gan_losses(real_logits, fake_logits, *, real_target=1.0):
    """The discriminator's loss and the generator's non-saturating loss, each a minibatch mean.

    ``d_loss = -mean [t log D(x) + (1 - t) log(1 - D(x))] - mean log(1 - D(f(z)))`` and
    ``g_loss = -mean log D(f(z))``, with ``D = sigmoid(logit)`` evaluated in log space
    (``-log sigmoid(a) = softplus(-a)``, ``-log(1 - sigmoid(a)) = softplus(a)``). ``real_target`` ``t`` is the
    label of data images: 1 gives the standard loss; ``1 - eps`` is one-sided label smoothing (Salimans et al.,
    2016), which stops the discriminator's optimum on data at ``D = t`` instead of pushing its logits to
    infinity. Fake images keep the label 0 (smoothing them too would reward the generator's mistakes).
    """
    d_loss = (jnp.mean(real_target * jax.nn.softplus(-real_logits) + (1.0 - real_target) * jax.nn.softplus(real_logits))
              + jnp.mean(jax.nn.softplus(fake_logits)))
    g_loss = jnp.mean(jax.nn.softplus(-fake_logits))
    return d_loss, g_loss


def squared_distances(x, y):
    """``||x_i - y_j||^2`` for rows of ``x`` (n, D) and ``y`` (m, D), as an (n, m) array (clipped at 0)."""
    d2 = jnp.sum(x**2, -1)[:, None] + jnp.sum(y**2, -1)[None, :] - 2.0 * x @ y.T
    return jnp.maximum(d2, 0.0)


def mixture_kernel(x, y, *, bandwidths: Sequence[float] = GMMN_BANDWIDTHS):
    """``sum_s exp(-||x_i - y_j||^2 / (2 s^2))`` over the bandwidths ``s``: an (n, m) Gram matrix."""
    d2 = squared_distances(x, y)
    return sum(jnp.exp(-d2 / (2.0 * s * s)) for s in bandwidths)


def mmd2(x, y, *, bandwidths: Sequence[float] = GMMN_BANDWIDTHS):
    """Squared maximum mean discrepancy between the samples ``x`` (n, D) and ``y`` (m, D).

    The biased (V-statistic) estimate ``mean k(x, x') + mean k(y, y') - 2 mean k(x, y)`` with the mixture
    kernel of :func:`mixture_kernel`; it is never negative, so its square root (the GMMN loss of Li et al.,
    2015) is defined.
    """
    def k(a, b):
        return jnp.mean(mixture_kernel(a, b, bandwidths=bandwidths))

    return k(x, x) + k(y, y) - 2.0 * k(x, y)
