"""RFC 9457 problem+json for both APIs: the one place where errors become problem documents.

Every error an API returns is `application/problem+json` with `type`, `title`, `status`, `detail`
and `retryable`, so an agent can decide by itself whether calling again can help. Here: the document
(`problem_body`, and its schema `ProblemDetails`), which error is which status and whether it is
retryable, and the resolver's exception handlers. The guards in front of the resolver are
`shared.guards`; the 404/405 of a path no route answers is `shared.resolver`'s.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from pydantic import BaseModel, ConfigDict, Field

from shared import aws, errors, field_rules, json_input
from shared.control_record import ActionView
from shared.events import AcceptanceSummary, SimulationSummary

PROBLEM_CONTENT_TYPE = "application/problem+json"
# A 422 lists at most this many invalid fields and counts the rest (`errorsOmitted`).
MAX_LISTED_ERRORS = 20
_TYPE_PREFIX = "urn:loan-saga:problem:"

logger = Logger(child=True)

# DomainError -> (status, slug, title, retryable). Order matters: the first isinstance match wins.
_DOMAIN_ERRORS: tuple[tuple[type[errors.DomainError], int, str, str, bool], ...] = (
    (errors.NotFound, 404, "not-found", "Not found", False),
    (errors.StaleSimulation, 409, "stale-simulation", "The named quote is not the journey's current one", False),
    (errors.StaleAcceptance, 409, "stale-acceptance", "The named acceptance is not the journey's current one", False),
    (errors.QuotesExhausted, 409, "quotes-exhausted", "The journey has had all its quotes", False),
    (errors.IllegalTransition, 409, "illegal-transition", "Command not allowed in the current state", False),
    (errors.SimulationLimitReached, 409, "quotes-exhausted", "The journey has had all its quotes", False),
    (errors.BusinessRuleViolated, 409, "business-rule-violated", "Business rule violated", False),
    (errors.InvalidRequest, 422, "validation", "Invalid request", False),
    (errors.LedgerMoved, 412, "ledger-moved", "The journey moved since the command was decided", False),
    (errors.MissingIdempotencyKey, 400, "idempotency-key-missing", "Idempotency-Key header required", False),
    (errors.InvalidIdempotencyKey, 400, "idempotency-key-invalid", "Idempotency-Key header invalid", False),
    (errors.InvalidOriginRequestId, 400, "origin-request-id-invalid", "Origin-Request-Id header invalid", False),
    (errors.IdempotencyKeyReused, 422, "idempotency-key-reused", "Idempotency-Key reused", False),
    (errors.StoreContention, 503, "contention", "Too much concurrent activity", True),
    (errors.UpstreamUnavailable, 503, "upstream-unavailable", "Dependency unavailable", True),
    (errors.UpstreamRejected, 502, "upstream-rejected", "Dependency rejected the request", False),
    (errors.InvariantBroken, 500, "invariant-broken", "Internal inconsistency", False),
    (errors.JourneyNeedsRepair, 500, "journey-needs-repair", "An operator must repair this journey", False),
    (errors.OutcomeUnknown, 500, "outcome-unknown", "Unexpected error; the outcome is unknown", False),
)


def problem_body(status: int, slug: str, title: str, detail: str, retryable: bool, **extensions: Any) -> str:
    """The problem document as JSON text; its `type` is `urn:loan-saga:problem:{slug}`."""
    return json.dumps(
        {
            "type": _TYPE_PREFIX + slug,
            "title": title,
            "status": status,
            "detail": detail,
            "retryable": retryable,
            **extensions,
        }
    )


def problem(
    status: int, slug: str, title: str, detail: str, retryable: bool = False, **extensions: Any
) -> Response[str]:
    """The problem document as the resolver's response."""
    return Response(
        status_code=status,
        content_type=PROBLEM_CONTENT_TYPE,
        body=problem_body(status, slug, title, detail, retryable, **extensions),
    )


def domain_problem(error: errors.DomainError) -> Response[str]:
    """The answer to a DomainError: its status and whether it is retryable, from the table above."""
    for error_type, status, slug, title, retryable in _DOMAIN_ERRORS:
        if isinstance(error, error_type):
            extensions: dict[str, Any] = {}
            if isinstance(error, errors.IllegalTransition):
                extensions = {**error.context, "availableActions": error.available_actions}
            if isinstance(error, errors.InvalidRequest):
                return invalid_fields(error.errors)
            return problem(status, slug, title, error.detail, retryable, **extensions)
    return problem(500, "internal", "Internal error", "unexpected domain error", retryable=True)


def _is_retryable(error: errors.DomainError) -> bool:
    return next((retryable for kind, *_, retryable in _DOMAIN_ERRORS if isinstance(error, kind)), True)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(validation_errors: list[Any]) -> list[dict[str, str]]:
    """Each error as `{field, message}`, the message in words (`shared.field_rules`), clipped: a field
    name is whatever key the client sent."""
    described = []
    for error in validation_errors:
        location = ".".join(str(part) for part in error.get("loc", ()))
        described.append({"field": _clip(location, 80), "message": _clip(field_rules.in_words(error), 200)})
    return described


def validation_problem(error: RequestValidationError) -> Response[str]:
    """The answer to invalid input: malformed JSON or a bad header is 400, anything else 422 with the
    invalid fields (the first `MAX_LISTED_ERRORS`)."""
    found = list(error.errors())
    if any(item.get("type") == "json_invalid" for item in found):
        return problem(400, "malformed-json", "Malformed JSON", "the request body is not valid JSON")
    bad_headers = [item for item in found if tuple(item.get("loc", ()))[:1] == ("header",)]
    if bad_headers:
        # A missing or malformed header (Idempotency-Key) is a bad request, not invalid content.
        described = _describe(bad_headers[:MAX_LISTED_ERRORS])
        detail = "; ".join(d["message"] for d in described)
        return problem(400, "bad-header", "Missing or invalid header", detail)
    return invalid_fields(found)


def invalid_fields(found: list[Any]) -> Response[str]:
    """422 listing the invalid fields (pydantic's error dicts). A body with thousands of unknown keys has
    thousands of errors: list the first few, count the rest, so no error response grows with the input."""
    described = _describe(found[:MAX_LISTED_ERRORS])
    omitted = len(found) - len(described)
    detail = "; ".join(d["message"] for d in described[:3]) or "invalid request"
    if len(found) > 3:
        detail += f" (and {len(found) - 3} more)"
    extensions: dict[str, Any] = {"errors": described}
    if omitted:
        extensions["errorsOmitted"] = omitted
    return problem(422, "validation", "Invalid request", detail, **extensions)


def install(app: APIGatewayRestResolver) -> None:
    """Register the problem+json handlers on a resolver. Call once per app."""

    @app.exception_handler(errors.DomainError)
    def _domain(error: errors.DomainError) -> Response[str]:
        answer = domain_problem(error)
        fields = {"error": type(error).__name__, "detail": error.detail}
        if answer.status_code >= 500 and not _is_retryable(error):  # ours to fix: a bug or corrupt data
            logger.error("domain error", extra=fields, exc_info=error)
        elif answer.status_code >= 500:  # a dependency that did not answer in time: the caller retries
            logger.warning("domain error", extra=fields)
        else:
            logger.info("domain error", extra=fields)
        return answer

    @app.exception_handler(RequestValidationError)
    def _validation(error: RequestValidationError) -> Response[str]:
        return validation_problem(error)

    # The guards answer these before the resolver runs (`shared.guards`); these handlers keep a resolver
    # called without them from answering 500 for the client's input.
    @app.exception_handler(RequestUnsupportedContentType)
    def _media_type(_: RequestUnsupportedContentType) -> Response[str]:
        return problem(415, "unsupported-media-type", "Unsupported media type", "send the body as application/json")

    @app.exception_handler(json_input.UnreadableJson)
    def _unreadable(error: json_input.UnreadableJson) -> Response[str]:
        return problem(400, "malformed-json", "Malformed JSON", error.detail)

    @app.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response[str]:
        if aws.is_transient(error):
            logger.warning("AWS call failed transiently", extra={"error": f"{type(error).__name__}: {error}"})
            return problem(
                503,
                "dependency-unavailable",
                "Dependency unavailable",
                "a storage call failed after its retries (timeout, throttling or an AWS-side error); nothing was "
                "left half done, and repeating the same request is safe",
                retryable=True,
            )
        logger.exception("unhandled error")
        return problem(500, "internal", "Internal error", "an unexpected error occurred", retryable=True)


# The problem's schema, for the OpenAPI documents only (shared/openapi.py): the bodies are written by
# `problem_body`, so the models' validators are built only if GET /openapi.json asks for them.
class FieldError(BaseModel):
    model_config = ConfigDict(defer_build=True)

    field: str = Field(description="Where: `body.amount`, `header.idempotency-key`, ...")
    message: str


class ProblemDetails(BaseModel):
    """RFC 9457 problem details, as every error response of both APIs carries them."""

    model_config = ConfigDict(defer_build=True)

    type: str = Field(description="A URI naming the kind of problem.")
    title: str
    status: int
    detail: str = Field(description="What went wrong with this request, in words.")
    retryable: bool = Field(
        description="True when the same request may succeed later; retrying is safe (never applied twice), except "
        "for a simulate sent without an Idempotency-Key, whose repeat is a new quote (its detail says so)."
    )
    availableActions: list[ActionView] = Field(
        default_factory=list, description="On 409 from the orchestrator: the commands that are legal now."
    )
    simulation: SimulationSummary | None = Field(
        default=None,
        description="On 409 stale-simulation: the journey's current quote (null if it has none): accept it by "
        "naming its simulationId, or re-price.",
    )
    acceptance: AcceptanceSummary | None = Field(
        default=None,
        description="On 409 stale-acceptance: the journey's current acceptance (null if it has none).",
    )
    errors: list[FieldError] = Field(
        default_factory=list, description=f"On 422: each invalid field (the first {MAX_LISTED_ERRORS})."
    )
    errorsOmitted: int = Field(default=0, description="On 422: how many invalid fields `errors` leaves out.")
