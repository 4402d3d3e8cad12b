"""The AIS step rule, the engine's default: weight each chain by the ratio of consecutive distributions at its
current state, and leave the state as it is (BDMC paper, Alg. 1). SMC's rules live in ``core/smc.py``."""

from ..contracts.model import log_density_increment
from ..contracts.nonfinite import describe_nonfinite


class AISRule:
    """The AIS step: weight by ``f(x; lam_to) / f(x; lam_from)`` at the current state, no refresh."""

    def __hash__(self):
        return hash(AISRule)

    def __eq__(self, other):
        return type(other) is AISRule

    @staticmethod
    def increment(model, latent, data, lam_from, lam_to):
        return log_density_increment(model, latent, data, lam_from, lam_to)

    @staticmethod
    def refresh(key, model, latent, data, lam_from, lam_to):
        return latent

    @staticmethod
    def culprit(model, latent, data, lam_from, lam_to):
        """Name the NaN or +inf term behind a failed increment check (on the host, after the run stopped)."""
        found = describe_nonfinite(model, latent, data, lam_to)
        return found if found is not None else describe_nonfinite(model, latent, data, lam_from)
