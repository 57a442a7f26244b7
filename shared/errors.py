"""The small DomainError hierarchy. No HTTP here: `shared.problems` maps these to responses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class DomainError(Exception):
    """Base of every error the services raise on purpose."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class NotFound(DomainError):
    """The addressed entity does not exist."""


class JourneyNotFound(NotFound):
    def __init__(self, journey_id: str) -> None:
        super().__init__(f"journey {journey_id} does not exist")
        self.journey_id = journey_id


class BusinessRuleViolated(DomainError):
    """The command contradicts the current state of the domain (e.g. a second disbursement)."""


class SimulationLimitReached(BusinessRuleViolated):
    """The journey has had as many quotes as it may (loans-api's cap): no further simulate."""


class IllegalTransition(DomainError):
    """The agent's command is not legal from the journey's current state. `context` holds what the
    agent needs to decide again (e.g. the current quote), added to the problem document."""

    def __init__(
        self, detail: str, available_actions: Sequence[dict[str, Any]], context: dict[str, Any] | None = None
    ) -> None:
        super().__init__(detail)
        self.available_actions = list(available_actions)
        self.context = dict(context or {})


class StaleSimulation(IllegalTransition):
    """acceptSimulation named a quote that is not the journey's current one (re-priced, or another
    quote accepted): nothing was accepted; the problem carries the current quote."""


class StaleAcceptance(IllegalTransition):
    """disburseLoan named an acceptance that is not the journey's current one: nothing was paid; the
    problem carries the current acceptance."""


class QuotesExhausted(IllegalTransition):
    """simulateLoan on a journey that has had all its quotes: availableActions leaves simulate out."""


class InvalidRequest(DomainError):
    """A body that does not match its schema, found by the service after the command's state check
    (so an illegal command is 409 whatever its body). `errors` as RequestValidationError lists them."""

    def __init__(self, detail: str, errors: Sequence[dict[str, Any]]) -> None:
        super().__init__(detail)
        self.errors = list(errors)


class LedgerMoved(DomainError):
    """The journey's ledger is not at the position the command was decided on (a precondition, as
    HTTP's If-Match): an attempt abandoned by its caller must not commit after later commands."""


class MissingIdempotencyKey(DomainError):
    """A write arrived without its Idempotency-Key header."""


class InvalidIdempotencyKey(DomainError):
    """An Idempotency-Key header that is not 1..255 characters."""


class InvalidOriginRequestId(DomainError):
    """An Origin-Request-Id header that is not an id (1..64 letters, digits and dashes)."""


class IdempotencyKeyReused(DomainError):
    """The same Idempotency-Key was sent with a different request."""


class StoreContention(DomainError):
    """Optimistic concurrency kept losing; the caller may retry."""


class JourneyNeedsRepair(DomainError):
    """The journey's Control Record claims more than loans-api's ledger holds (ahead of it, or of a journey it
    has no ledger of): loans-api refuses every command decided on it, however often it is repeated, until an
    operator re-projects the record from the ledger (`saga audit --repair --rebuild`)."""


class UpstreamUnavailable(DomainError):
    """A dependency stayed unreachable (or kept failing) after every retry."""


class UpstreamRejected(DomainError):
    """A dependency refused a request in a way this service did not expect."""


class OutcomeUnknown(DomainError):
    """A command failed unexpectedly after it may have taken effect, and repeating it is not safe (a simulate
    sent without an Idempotency-Key): the detail says how to find out, and how to repeat safely."""


class InvariantBroken(DomainError):
    """The service's own state contradicts itself (a state that promises a part without it): a bug or
    corrupt data, which repeating the request cannot mend."""
