"""What a model can do beyond the four core methods, as named protocols.

Each capability is a structural protocol: a model has it when it defines the listed methods, with no base
class to inherit. Code that needs one calls :func:`require`, which raises a :class:`MissingCapabilityError`
naming the missing methods and what they enable, so no behaviour changes silently because a method is
absent. Where a documented default exists (SMC's ``proposal="auto"``, the default kernel, the nested-sampling
kernel) the choice is made with :func:`supports` and recorded in the result's settings.

``bdmc models`` prints :func:`capability_table` for the built-in models.
"""

from __future__ import annotations

import types
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ..caching import cached
from ..errors import MissingCapabilityError

PyTree = Any


@runtime_checkable
class CollapsedDensity(Protocol):
    """Evaluates ``log f(x; lam)`` itself (a collapsed latent state), normalized at ``lam = 0``."""

    def log_density(self, latent: PyTree, data: PyTree, lam) -> Any: ...


@runtime_checkable
class JointTerms(Protocol):
    """Evaluates its log prior and its likelihood terms together, as cheaply as either alone (a WebPPL program: one
    run of the program), ``prior_and_terms(latent, data) -> (log_prior, terms)``."""

    def prior_and_terms(self, latent: PyTree, data: PyTree) -> Any: ...


@runtime_checkable
class ChecksData(Protocol):
    """Validates the shapes of a data set, raising :class:`~bdmc.errors.DataError` with the culprit."""

    def check_data(self, data: PyTree) -> None: ...


@runtime_checkable
class NamesTerms(Protocol):
    """Names the site or term of a NaN/+inf log density (PPL adapters: the sample statement)."""

    def describe_nonfinite_term(self, latent: PyTree, data: PyTree, term: str, case: int | None) -> str: ...


@runtime_checkable
class ExactEvidence(Protocol):
    """Computes the exact ``log p(y)``: ground truth for the sandwich, the benchmark and the tests."""

    def exact_log_marginal(self, data: PyTree) -> float: ...


@runtime_checkable
class TemperedSimulation(Protocol):
    """Draws data from the tempered likelihood ``p(y | x)^lam`` (normalized): Geweke tests at ``lam < 1``."""

    def sample_data_tempered(self, key, latent: PyTree, lam) -> PyTree: ...


@runtime_checkable
class GibbsConditionals(Protocol):
    """Lists its exact conditional distributions: the conditional-vs-joint check and Gibbs moves."""

    def conditionals(self) -> list: ...


@runtime_checkable
class IndexedConditionals(Protocol):
    """Draws from the conditional of site ``j`` given a traced integer index: Gibbs moves as one compiled loop.

    ``update_site(key, j, latent, data, lam)`` does what ``conditionals()[j].update(key, latent, data, lam)``
    does, for the same key, so a loop over ``j in range(num_sites())`` compiles one site update instead of
    unrolling one per conditional.
    """

    def num_sites(self) -> int: ...

    def update_site(self, key, j, latent: PyTree, data: PyTree, lam) -> PyTree: ...


@runtime_checkable
class OwnKernel(Protocol):
    """Ships the transition operator AIS and SMC use when no kernel is given (else HMC on the latents)."""

    def default_kernel(self) -> Any: ...


@runtime_checkable
class CaseProposal(Protocol):
    """Proposes and scores one data case's latents: SMC's posterior proposal on the data path."""

    def log_predictive(self, latent: PyTree, data: PyTree, lam, i) -> Any: ...

    def sample_case(self, key, latent: PyTree, data: PyTree, lam, i) -> PyTree: ...


@runtime_checkable
class VariationalFamily(Protocol):
    """A mean-field family with coordinate-ascent updates: the variational Bayes estimator."""

    def vb_init(self, key, data: PyTree) -> PyTree: ...

    def vb_update(self, params: PyTree, data: PyTree) -> PyTree: ...

    def vb_bound(self, params: PyTree, data: PyTree) -> Any: ...


@runtime_checkable
class LabelSymmetry(Protocol):
    """The log number of equivalent relabelings of its latent state: the symmetry correction of ``vb+sym``."""

    @property
    def vb_log_symmetries(self) -> float: ...


@runtime_checkable
class BICFit(Protocol):
    """Maximum-likelihood fitting over its parameters: the BIC estimator."""

    def bic_sample_params(self, key) -> PyTree: ...

    def bic_log_likelihood(self, params: PyTree, data: PyTree) -> Any: ...


@runtime_checkable
class GaussianPriorBlocks(Protocol):
    """Lists latent blocks with zero-mean Gaussian priors: elliptical-slice moves for nested sampling."""

    def gaussian_prior_blocks(self) -> Any: ...


@runtime_checkable
class ConstrainedMoves(Protocol):
    """Ships its own move on the prior restricted to ``L > C``: the nested-sampling kernel for this model.

    ``constrained_kernel()`` returns ``kernel(key, latent, data, log_c) -> latent`` with ``evals_per_move``.
    """

    def constrained_kernel(self) -> Any: ...


@runtime_checkable
class ConditionalPrior(Protocol):
    """Draws latents from the prior with some of them held fixed: BREAD's real-data protocol."""

    def sample_prior_given(self, key, fixed: dict) -> PyTree: ...


@runtime_checkable
class HostPrior(Protocol):
    """Draws its prior outside JAX (a Stan, WebPPL or PyMC program): prior draws are not pooled in one compiled
    program, and only the draws asked for are made. A model declares it with ``samples_on_host = True``."""

    samples_on_host: bool


@runtime_checkable
class HostDensity(Protocol):
    """Evaluates its density outside JAX, a batch of chains per request (a WebPPL program in node): a call costs far
    more than its arithmetic, so SBC batches its chains with ``vmap`` even where their work differs (NUTS's trees).
    A model declares it with ``densities_on_host = True``."""

    densities_on_host: bool


@runtime_checkable
class InitialPoints(Protocol):
    """Draws starting points for an optimizer or a chain without a simulator (Stan's uniform on (-2, 2) in every
    unconstrained coordinate): where the fit of a reference path starts."""

    def sample_initial(self, key) -> PyTree: ...


@runtime_checkable
class NamedCoordinates(Protocol):
    """Names the coordinates of its flat latent vector (``mu``, ``beta[2]``), or None where it cannot."""

    @property
    def coordinate_names(self) -> tuple | None: ...


@runtime_checkable
class NamedValues(Protocol):
    """Maps its latent to and from named values on their natural (constrained) space: the PPL adapters
    (``constrain(latent) -> values``, ``unconstrain(values) -> latent``)."""

    def constrain(self, latent) -> Any: ...

    def unconstrain(self, values) -> Any: ...


@runtime_checkable
class ReleasesResources(Protocol):
    """Drops what it built to evaluate itself (a compiled library, functions JAX compiled for it), building them
    again when next used: what a process that audits many models calls when done with one."""

    def release(self) -> None: ...


class Capability(NamedTuple):
    """A row of the capability table: the protocol, its short name and what it enables."""

    protocol: type
    name: str
    enables: str


CAPABILITIES: tuple[Capability, ...] = (
    Capability(CollapsedDensity, "collapsed density", "its own f(x; lam) over a collapsed state"),
    Capability(ExactEvidence, "exact evidence", "exact log p(y): truth for sandwich, bench and tests"),
    Capability(GibbsConditionals, "Gibbs conditionals", "conditional-vs-joint check, Gibbs moves"),
    Capability(IndexedConditionals, "indexed conditionals", "Gibbs moves as a loop over a traced site index"),
    Capability(OwnKernel, "own kernel", "a model-specific default kernel (else HMC)"),
    Capability(TemperedSimulation, "tempered data", "Geweke tests at lam < 1"),
    Capability(CaseProposal, "case proposal", "SMC's posterior proposal (smc/shme default)"),
    Capability(VariationalFamily, "VB family", "the vb estimator"),
    Capability(LabelSymmetry, "label symmetry", "the vb+sym estimator"),
    Capability(BICFit, "BIC", "the bic estimator"),
    Capability(GaussianPriorBlocks, "Gaussian prior blocks", "elliptical-slice moves in nested sampling"),
    Capability(ConstrainedMoves, "constrained moves", "its own nested-sampling move"),
    Capability(ConditionalPrior, "conditional prior", "BREAD's real-data protocol"),
    Capability(ChecksData, "data check", "shape errors that name the culprit"),
    Capability(NamesTerms, "term names", "non-finite errors that name the site"),
    Capability(HostPrior, "host prior", "prior draws outside JAX, made only as asked (not pooled)"),
    Capability(JointTerms, "joint terms", "one evaluation per density and gradient, not two"),
    Capability(HostDensity, "host density", "SBC's NUTS chains batched: one host request per step, not per chain"),
    Capability(InitialPoints, "initial points", "starts of a reference path's fit without a simulator"),
    Capability(NamedCoordinates, "coordinate names", "SBC's names for a flat latent's coordinates"),
    Capability(ReleasesResources, "releases resources", "flat memory over many audits in one process"),
    Capability(NamedValues, "named values", "posterior draws by name; exchangeable components found by permuting"),
)
_BY_PROTOCOL = {c.protocol: c for c in CAPABILITIES}


def protocol_methods(protocol: type) -> tuple[str, ...]:
    """The method, property and attribute names a protocol asks for."""
    return tuple(sorted({n for n, v in protocol.__dict__.items()
                         if not n.startswith("_") and (callable(v) or isinstance(v, property))}
                        | {n for n in protocol.__dict__.get("__annotations__", {}) if not n.startswith("_")}))


def supports(obj, protocol: type) -> bool:
    """Whether ``obj`` defines every method of ``protocol``: ``isinstance(obj, protocol)``, decided from what the
    class holds where the class decides it. A runtime protocol's ``isinstance`` looks every member up on every
    call (microseconds on Python 3.11), and a warm estimator call asks several times."""
    view = _class_view(type(obj), protocol)
    own = getattr(obj, "__dict__", None)
    if view is None or own is None:  # attributes looked up another way, or held in slots
        return isinstance(obj, protocol)
    nominal, missing, methods = view
    if nominal:
        return True
    # An instance attribute can supply a member the class lacks (a dataclass field without a default); a method
    # supplied so must not be None.
    return all(m in own and (m not in methods or own[m] is not None) for m in missing)


@cached(maxsize=1024)
def _class_view(cls: type, protocol: type) -> tuple[bool, tuple[str, ...], tuple[str, ...]] | None:
    """``(nominal, missing, methods)``: whether ``cls`` subclasses ``protocol``, the members it lacks (a method
    set to None counts as lacking) and the protocol's methods; None when its instances look attributes up their
    own way (``__getattr__``, ``__getattribute__``)."""
    if getattr(cls, "__getattr__", None) is not None or cls.__getattribute__ is not object.__getattribute__:
        return None
    members = _protocol_members(protocol)
    methods = tuple(m for m in members if callable(getattr(protocol, m, None)))
    # Looked up in the class's own namespaces: ``getattr(cls, "__call__")`` would find the metaclass's.
    on_class = {m: next((vars(b)[m] for b in cls.__mro__ if m in vars(b)), _ABSENT) for m in members}
    if any(isinstance(v, types.MemberDescriptorType) for v in on_class.values()):
        return None  # a slot: present on the class, perhaps unset on an instance
    missing = tuple(m for m, v in on_class.items() if v is _ABSENT or (m in methods and v is None))
    return protocol in cls.__mro__, missing, methods


_ABSENT = object()
# What typing leaves out of a protocol's members (Python 3.11's list; 3.12 gives __protocol_attrs__).
_NOT_MEMBERS = frozenset({"__abstractmethods__", "__annotations__", "__dict__", "__doc__", "__init__", "__module__",
                          "__new__", "__slots__", "__subclasshook__", "__weakref__", "__class_getitem__",
                          "__parameters__", "__orig_bases__", "__orig_class__", "_is_protocol",
                          "_is_runtime_protocol", "__non_callable_proto_members__", "__type_params__",
                          "__protocol_attrs__", "__firstlineno__", "__static_attributes__", "__qualname__"})


def _protocol_members(protocol: type) -> tuple[str, ...]:
    """Every member ``isinstance`` checks on a runtime protocol, dunder methods such as ``__call__`` included."""
    given = getattr(protocol, "__protocol_attrs__", None)
    if given is not None:
        return tuple(sorted(given))
    names = set()
    for base in protocol.__mro__[:-1]:
        if base.__name__ in ("Protocol", "Generic"):
            continue
        names |= {n for n in (*base.__dict__, *base.__dict__.get("__annotations__", {}))
                  if n not in _NOT_MEMBERS and not n.startswith("_abc_")}
    return tuple(sorted(names))


def exact_log_marginal_or_none(model, data) -> float | None:
    """The model's exact log p(y) (:class:`ExactEvidence`) when it has one that is affordable for this data, else
    None (the model raises ``ValueError`` when the data are too large to enumerate or integrate: a sandwich is
    exactly what is needed then)."""
    if not supports(model, ExactEvidence):
        return None
    try:
        return float(model.exact_log_marginal(data))
    except ValueError:
        return None


def missing_methods(obj, protocol: type) -> list[str]:
    """The methods of ``protocol`` that ``obj`` lacks (empty when it supports it)."""
    return [m for m in protocol_methods(protocol) if not hasattr(obj, m)]


def require(obj, protocol: type, *, purpose: str) -> None:
    """Raise :class:`MissingCapabilityError` unless ``obj`` supports ``protocol``.

    The message names the object's type, the missing methods, what the capability enables and ``purpose``
    (what the caller was about to do).
    """
    missing = missing_methods(obj, protocol)
    if missing:
        cap = _BY_PROTOCOL.get(protocol)
        enables = f" ({cap.name}: {cap.enables})" if cap else ""
        methods = ", ".join(missing)
        raise MissingCapabilityError(
            f"{purpose} needs {type(obj).__name__} to define {methods}{enables}", missing=tuple(missing))


def capabilities(obj) -> dict[str, bool]:
    """``{capability name: supported}`` for every capability in :data:`CAPABILITIES`."""
    return {c.name: supports(obj, c.protocol) for c in CAPABILITIES}


def capability_table(models: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per named model: ``{"model": name, <capability name>: bool, ...}``."""
    return [{"model": name, **capabilities(model)} for name, model in models.items()]
