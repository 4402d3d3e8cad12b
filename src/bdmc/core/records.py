"""The engine's named records: the scan's state and per-step output (on the device), and what a run returns.

As BlackJAX's State and Info: every field is read by name, never by position.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from ..errors import OptionError


class Failures(NamedTuple):
    """Per chain, where a run first failed (carried on the device, read on the host once per chunk).

    ``weight_step``: the first transition whose log-weight increment was NaN or +inf (-1: none);
    ``density_step``, ``density_phase``: the first transition with a NaN or +inf density where one must be
    finite, and where (0 weight, 1 refresh, 2 a state the kernel accepted; see ``failures.PHASES``);
    ``density_at``: the latent there. A NaN or +inf density at a proposal is not a failure but a divergence.
    """

    weight_step: jax.Array
    density_step: jax.Array
    density_phase: jax.Array
    density_at: Any


class AnnealState(NamedTuple):
    """The scan's carry: every chain's state (its latent, or on the lean path the kernel's cached state), its
    log-weight, each run's banked log-evidence (SMC's resampling), the failure record, each chain's count
    of divergent transitions and a step policy's carry (``contracts.step_policy``; empty without one)."""

    states: Any
    log_weights: jax.Array
    log_evidence: jax.Array
    failures: Failures
    divergences: jax.Array
    policy: Any = ()


class StepOutput(NamedTuple):
    """What one transition reports (the scan's per-step output): the chains' mean increment, the mean
    acceptance, the weights' ESS, the fraction of runs resampled, the fraction of chains whose move diverged,
    when recorded, every increment, and a step policy's record (empty without one)."""

    mean_increment: jax.Array
    acceptance: jax.Array
    ess: jax.Array
    resampled: jax.Array
    divergent: jax.Array
    increments: jax.Array
    record: Any = ()


class StepInfo(NamedTuple):
    """Per-step diagnostics over all chains, each of shape (T - 1,) (a batched run: (B, T - 1)).

    ``ess`` is the effective sample size of the chains' weights (with particles: the mean over runs of each
    run's particle ESS, before resampling); ``resampled`` is the fraction of runs resampled at the step;
    ``divergent`` the fraction of chains whose move diverged (a proposal of NaN or +inf density, or an energy
    error beyond the kernel's threshold: rejected, so the chain stayed where it was).
    """

    mean_increment: np.ndarray
    acceptance: np.ndarray
    ess: np.ndarray
    resampled: np.ndarray
    divergent: np.ndarray


class AnnealResult(NamedTuple):
    """What one annealing run returns.

    ``log_weights`` has one entry per chain (with particles: the weights since each run's last resampling);
    ``log_evidence`` has one entry per run: the chain's log-weight for AIS (one particle per run), the banked
    evidence plus the log-mean weight for SMC. ``latents`` are the final states (leading axis = chains);
    ``increments`` is (T - 1, chains) when requested, else None; ``divergences`` counts each chain's divergent
    transitions. A batched run puts the data set first on every array: ``log_weights`` (B, chains),
    ``latents`` (B, chains, ...), ``info`` fields (B, T - 1), ``increments`` (B, T - 1, chains),
    ``divergences`` (B, chains). ``seconds`` and ``n_evals`` are the whole call's. ``records`` stacks a step
    policy's per-step records (leading axis T - 1; None without a policy).
    """

    log_weights: np.ndarray
    log_evidence: np.ndarray
    latents: Any
    info: StepInfo
    increments: np.ndarray | None
    seconds: float
    compile_seconds: float
    n_evals: int
    compiled: bool = True
    divergences: np.ndarray | None = None
    records: Any = None

    @property
    def num_transitions(self) -> int:
        """Transitions each chain made (T - 1)."""
        return int(np.shape(self.info.acceptance)[-1])

    @property
    def divergence_rate(self) -> float:
        """Divergent transitions as a fraction of all transitions of all chains."""
        counts = np.asarray(self.divergences if self.divergences is not None else 0)
        return float(np.sum(counts) / max(counts.size * self.num_transitions, 1))


# The layout of a run's chains and path (read by the engine on the host).

def axes_signature(batch_axes):
    """A hashable form of a ``vmap`` in_axes prefix (None leaves kept), for the compile cache."""
    if batch_axes is None:
        return None
    leaves, treedef = jax.tree.flatten(batch_axes, is_leaf=lambda x: x is None)
    return str(treedef), tuple(leaves)


def pad_path(a, length):
    """A path's rows padded to ``length`` by repeating its last (the steps past a run's end are inactive)."""
    out = np.empty((length,) + a.shape[1:], dtype=np.float64)
    out[: a.shape[0]] = a
    out[a.shape[0] :] = a[-1]
    return out


def batch_and_chains(latents, batched: bool) -> tuple[int, int]:
    """``(data sets, chains)`` of a run's starting latents (1 data set when not batched)."""
    if not batched:
        return 1, num_chains(latents)
    sizes = {tuple(np.shape(x)[:2]) for x in jax.tree.leaves(latents)}
    if len(sizes) != 1 or len(next(iter(sizes))) != 2:
        raise OptionError(f"a batch's init_latents need leading axes (data sets, chains) on every leaf, got {sizes}")
    members, chains = sizes.pop()
    return int(members), int(chains)


def num_chains(latents) -> int:
    """The leading chain axis every leaf of ``latents`` shares."""
    leaves = jax.tree.leaves(latents)
    if not leaves:
        raise OptionError("init_latents is empty")
    sizes = {int(np.shape(x)[0]) if np.ndim(x) else -1 for x in leaves}
    if len(sizes) != 1 or -1 in sizes:
        raise OptionError(f"every leaf of init_latents needs the same leading chain axis, got sizes {sizes}")
    return sizes.pop()
