"""Where a run failed: each chain's first NaN or +inf density (where one must be finite) or weight increment,
recorded on the device and explained on the host (the term, step, lambda and chain) after the run stopped;
and the prior check's failure (a NaN or +inf density term at an exact prior draw)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..contracts.nonfinite import describe_nonfinite, recording
from ..errors import NonFiniteLogDensityError, NonFiniteLogWeightError

PHASES = ("weight", "refresh", "accepted")
ACCEPTED = PHASES.index("accepted")


def checked(fn, like=None):
    """``fn(*args) -> out`` as ``(failed, latent, out)``: whether a density check failed in it, and where first.

    Applied per chain (inside the ``vmap``). ``like`` is a latent of the model (its structure is what is
    recorded); by default the last argument is the chain's latent. Checks on a state of another structure
    (none of the built-in kernels makes one) only set the flag.
    """

    def wrapped(*args):
        leaves, treedef = jax.tree.flatten(args[-1] if like is None else like)
        failed = jax.new_ref(jnp.zeros((), bool))
        at = [jax.new_ref(x) for x in leaves]

        def sink(ok, latent):
            values = jax.tree.leaves(latent)
            first = ~failed[...] & ~ok
            if [(jnp.shape(v), jnp.result_type(v)) for v in values] == [(x.shape, x.dtype) for x in leaves]:
                for ref, v in zip(at, values, strict=False):
                    ref[...] = jnp.where(first, jax.lax.stop_gradient(v), ref[...])
            failed[...] = failed[...] | ~ok

        with recording(sink):
            out = fn(*args)
        return failed[...], jax.tree.unflatten(treedef, [ref[...] for ref in at]), out

    return wrapped


def flagged(fn):
    """``fn(*args) -> out`` as ``(failed, out)``: whether a density check failed in it, without recording where.

    For a kernel's move, where a NaN or +inf density (at a proposal) is a divergence, not an error: the state
    is not needed, and recording it at every evaluation of a trajectory costs a select of the whole latent
    per leapfrog step (about a tenth of a run's time, ``benchmarks/engine_overhead.py``)."""

    def wrapped(*args):
        failed = jax.new_ref(jnp.zeros((), bool))

        def sink(ok, latent):
            failed[...] = failed[...] | ~ok

        with recording(sink):
            out = fn(*args)
        return failed[...], out

    return wrapped


def expand(mask, like):
    return jnp.reshape(mask, mask.shape + (1,) * (jnp.ndim(like) - 1))


def raise_if_failed(failures, *, lams, model, data, rule, description):
    """Raise the run's first failure (a NaN or +inf density, else a NaN or +inf increment), if any.

    ``failures`` is the engine's per-chain record (``core.engine.Failures``); ``rule`` a StepRule, whose
    ``culprit`` names the term behind a failed weight.
    """
    first_bad, dens_step, dens_phase = (np.asarray(x) for x in (failures.weight_step, failures.density_step,
                                                                failures.density_phase))
    weight_step = int(first_bad[first_bad >= 0].min()) if np.any(first_bad >= 0) else None
    if np.any(dens_step >= 0):
        steps = np.where(dens_step >= 0, dens_step, np.iinfo(np.int32).max)
        t = int(steps.min())
        if weight_step is None or t <= weight_step:
            chain = int(np.argmin(steps))
            phase = PHASES[int(dens_phase[chain])]
            latent = jax.tree.map(lambda a: a[chain], failures.density_at)
            lam_from, lam_to = lams[t], lams[t + 1]
            if phase == "weight":
                found = rule.culprit(model, latent, data, lam_from, lam_to)
            else:
                found = describe_nonfinite(model, latent, data, lam_to)
            # The host re-evaluation can only miss when the device computed differently (a different backend).
            term, case, value = found if found is not None else ("log density", None, "NaN or +inf")
            raise NonFiniteLogDensityError(
                term=term, value=value, case=case, step=t + 1, lam=_lam_at(lams, t + 1), chain=chain,
                n_bad=int(np.sum(dens_step >= 0)), evaluated_by=phase, direction=description,
            )
    if weight_step is not None:
        chain = int(np.argmax(first_bad == weight_step))
        step = weight_step + 1
        raise NonFiniteLogWeightError(step=step, lam=_lam_at(lams, step), chain=chain,
                                      n_bad=int(np.sum(first_bad >= 0)), direction=description)


def raise_batch_failure(failures, batch_axes, batch_label, *, lams, model, data, rule, description):
    """Raise the run's first failure (:func:`raise_if_failed`); in a batch (``batch_axes``: the ``vmap`` axes of
    ``data``), that of the first data set that failed, named."""
    if batch_axes is None:
        raise_if_failed(failures, lams=lams, model=model, data=data, rule=rule, description=description)
        return
    failed = np.asarray((failures.weight_step >= 0).any(axis=1) | (failures.density_step >= 0).any(axis=1))
    if not failed.any():
        return
    b = int(np.argmax(failed))
    member = jax.tree.map(lambda ax, x: x if ax is None else jnp.take(x, b, axis=ax), batch_axes, data,
                          is_leaf=lambda x: x is None)
    others = f"; {int(failed.sum()) - 1} other {batch_label}(s) failed too" if failed.sum() > 1 else ""
    raise_if_failed(jax.tree.map(lambda a: a[b], failures), lams=lams, model=model, data=member, rule=rule,
                    description=f"{description}, {batch_label} {b}{others}")


def raise_prior_failure(model, latent, data, lams, *, draw: int, n_bad: int, n_draws: int, description: str):
    """Raise the prior check's failure at ``latent`` (exact prior draw ``draw`` of ``n_draws``), naming the term."""
    lam_end = lams[-1] if np.ndim(lams) == 1 else lams[np.argmax(np.mean(lams, axis=-1))]
    found = describe_nonfinite(model, latent, data, np.ones_like(np.asarray(lam_end)))
    term, case, value = found if found is not None else ("log density", None, "NaN or +inf")
    raise NonFiniteLogDensityError(term=term, value=value, case=case, evaluated_by="prior draw",
                                   prior_draws=(draw, n_bad, n_draws), direction=description)


def _lam_at(lams, step):
    lam = lams[step]
    return lam.tolist() if lam.ndim else float(lam)


