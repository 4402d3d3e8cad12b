"""How the data-path pilot of SMC chooses its path (:mod:`bdmc.core.smc_pilot` has the pilot itself)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..errors import BDMCError

# num_particles="auto": the run's particles within these bounds. The tables (preconditioner, step sizes, moves)
# are fitted from the pilot's resampled particles; on sblrc a 32-particle pilot left single SHME runs of 1,024
# particles up to 2.1 nats off, a 256-particle one within 0.7 (benchmarks/results/smc_data_path/).
PILOT_PARTICLES_MIN, PILOT_PARTICLES_MAX = 32, 256


@dataclass(frozen=True)
class DataPathPilot:
    """How the pilot chooses the data path.

    Parameters
    ----------
    num_particles : int or "auto"
        Pilot particles (one run); the variance of each step's increment is taken across them, and the tables
        are fitted from them. "auto": the run's particles, at least 32 and at most 256.
    target_variance : float
        Variance of the log-weight increment per step the chosen path aims at (0.1: a conditional ESS of
        about 90% per step for log-normal weights; with one case per step and sub-steps only, 0.5 left the
        regression of the module docstring 1.2 nats low with 64 particles, 0.1 0.5 nats, 0.02 0.4 nats at
        twice the cost).
    max_substeps : int
        No step raises a case's weight by less than ``1 / max_substeps``. A case under a broad prior in natural
        units can vary across prior draws by 10^12 (posteriordb's sblrc): its first step must be about 10^-7 of
        it, and the next ones grow geometrically as the particles concentrate.
    max_steps : int
        Steps the pilot takes at most; past them it switches every remaining case on in one last step (the
        path stays valid; ``settings["data_path"]`` says so).
    mass : {"auto", "diagonal", "dense", "identity"}
        The preconditioner fitted at each step for a kernel with an ``inverse_mass`` left None (module
        docstring); "auto" is dense up to ``min(16, num_particles // 2)`` coordinates, else diagonal;
        "identity" fits none.
    steer : bool
        Steer the step size of a kernel with a ``step_size`` field toward ``target_acceptance``.
    target_acceptance : float
        The acceptance the step size is steered toward.
    warmup : int
        Rounds of moves at the prior that steer the first step size before the path starts.
    moves_target : float or None
        Where the run's ``num_moves`` moves leave a particle more correlated with where the step began than
        this (the pilot's measured lag-one correlation of one move, in the slowest coordinate), the run takes
        more moves at that step: ``ceil(log(moves_target) / log(rho))``, at most ``max_moves``. A reverse run
        (SHME) needs them where the path widens fastest: resampling cannot widen its particles, only moves can.
        None: ``num_moves`` at every step.
    max_moves : int
        The most moves at any step.
    reuse : bool
        Reuse the frozen choice of an earlier pilot on the same model, data (by value), kernel, order, moves and
        pilot settings (``settings["data_pilot_reused"]``), as :class:`bdmc.core.pilot.Pilot` does; the pilot's
        keys are never a run's, so no guarantee changes. False forces a new pilot.
    seed : int
        The pilot's own seed (:func:`bdmc.core.pilot.pilot_key`): SMC's pilot draws on it, never on the caller's
        key, so its choice depends on the model, data and options alone (another seed, another pilot).
    """

    num_particles: int | str = "auto"
    target_variance: float = 0.1
    max_substeps: int = 10**9
    max_steps: int = 4096
    mass: str = "auto"
    steer: bool = True
    target_acceptance: float = 0.8
    warmup: int = 8
    moves_target: float | None = 0.2
    max_moves: int = 32
    reuse: bool = True
    seed: int = 0

    @property
    def num_chains(self) -> int:
        """The pilot's particles (the name :func:`bdmc.core.pilot.mass_kind` reads)."""
        return int(self.num_particles)

    def for_run(self, run_particles: int | None) -> DataPathPilot:
        """These settings with "auto" particles resolved for a run of ``run_particles`` particles: as many, at
        least :data:`PILOT_PARTICLES_MIN` and at most :data:`PILOT_PARTICLES_MAX`."""
        if not (isinstance(self.num_particles, str) and self.num_particles == "auto"):
            return self
        count = PILOT_PARTICLES_MIN if run_particles is None else int(run_particles)
        return dataclasses.replace(self, num_particles=min(max(count, PILOT_PARTICLES_MIN), PILOT_PARTICLES_MAX))

    def __post_init__(self):
        auto = isinstance(self.num_particles, str) and self.num_particles == "auto"
        if not auto and (isinstance(self.num_particles, (bool, str)) or int(self.num_particles) != self.num_particles
                         or self.num_particles < 2):
            raise BDMCError(f'DataPathPilot.num_particles must be an integer >= 2 or "auto", got '
                            f"{self.num_particles!r}")
        if not (self.target_variance > 0 and math.isfinite(self.target_variance)):
            raise BDMCError(f"DataPathPilot.target_variance must be positive, got {self.target_variance}")
        if int(self.max_substeps) != self.max_substeps or self.max_substeps < 1:
            raise BDMCError(f"DataPathPilot.max_substeps must be a positive integer, got {self.max_substeps}")
        if int(self.max_steps) != self.max_steps or self.max_steps < 1:
            raise BDMCError(f"DataPathPilot.max_steps must be a positive integer, got {self.max_steps}")
        if self.mass not in ("auto", "diagonal", "dense", "identity"):
            raise BDMCError(f"DataPathPilot.mass must be 'auto', 'diagonal', 'dense' or 'identity', got "
                            f"{self.mass!r}")
        if not 0.0 < self.target_acceptance < 1.0:
            raise BDMCError(f"DataPathPilot.target_acceptance must lie in (0, 1), got {self.target_acceptance}")
        if int(self.warmup) != self.warmup or self.warmup < 0:
            raise BDMCError(f"DataPathPilot.warmup must be a non-negative integer, got {self.warmup}")
        if self.moves_target is not None and not 0.0 < self.moves_target < 1.0:
            raise BDMCError(f"DataPathPilot.moves_target must lie in (0, 1) or be None, got {self.moves_target}")
        if int(self.max_moves) != self.max_moves or self.max_moves < 1:
            raise BDMCError(f"DataPathPilot.max_moves must be a positive integer, got {self.max_moves}")
        if isinstance(self.seed, bool) or int(self.seed) != self.seed or self.seed < 0:
            raise BDMCError(f"DataPathPilot.seed must be a non-negative integer, got {self.seed!r}")
