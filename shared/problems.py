"""RFC 9457 problem+json for both APIs: the one place where errors become HTTP responses.

Every error an API returns is `application/problem+json` with `type`, `title`, `status`, `detail`
and `retryable`, so an agent can decide by itself whether calling again can help.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel, Field

from shared import aws, errors, json_input, openapi
from shared.control_record import ActionView

PROBLEM_CONTENT_TYPE = "application/problem+json"
JSON_MEDIA_TYPE = "application/json"
MAX_BODY_BYTES = 64 * 1024
# A 422 lists at most this many invalid fields and counts the rest (`errorsOmitted`).
MAX_LISTED_ERRORS = 20
_TYPE_PREFIX = "urn:loan-saga:problem:"

logger = Logger(child=True)

# DomainError -> (status, slug, title, retryable). Order matters: the first isinstance match wins.
_DOMAIN_ERRORS: tuple[tuple[type[errors.DomainError], int, str, str, bool], ...] = (
    (errors.NotFound, 404, "not-found", "Not found", False),
    (errors.IllegalTransition, 409, "illegal-transition", "Command not allowed in the current state", False),
    (errors.BusinessRuleViolated, 409, "business-rule-violated", "Business rule violated", False),
    (errors.LedgerMoved, 412, "ledger-moved", "The journey moved since the command was decided", False),
    (errors.MissingIdempotencyKey, 400, "idempotency-key-missing", "Idempotency-Key header required", False),
    (errors.InvalidIdempotencyKey, 400, "idempotency-key-invalid", "Idempotency-Key header invalid", False),
    (errors.IdempotencyKeyReused, 422, "idempotency-key-reused", "Idempotency-Key reused", False),
    (errors.StoreContention, 503, "contention", "Too much concurrent activity", True),
    (errors.UpstreamUnavailable, 503, "upstream-unavailable", "Dependency unavailable", True),
    (errors.UpstreamRejected, 502, "upstream-rejected", "Dependency rejected the request", False),
)


def problem_body(status: int, slug: str, title: str, detail: str, retryable: bool, **extensions: Any) -> str:
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
    return Response(
        status_code=status,
        content_type=PROBLEM_CONTENT_TYPE,
        body=problem_body(status, slug, title, detail, retryable, **extensions),
    )


def domain_problem(error: errors.DomainError) -> Response[str]:
    for error_type, status, slug, title, retryable in _DOMAIN_ERRORS:
        if isinstance(error, error_type):
            extensions: dict[str, Any] = {}
            if isinstance(error, errors.IllegalTransition):
                extensions["availableActions"] = error.available_actions
            return problem(status, slug, title, error.detail, retryable, **extensions)
    return problem(500, "internal", "Internal error", "unexpected domain error", retryable=True)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(validation_errors: list[Any]) -> list[dict[str, str]]:
    """Each error as `{field, message}`, clipped: a field name is whatever key the client sent."""
    described = []
    for error in validation_errors:
        location = ".".join(str(part) for part in error.get("loc", ()))
        described.append({"field": _clip(location, 80), "message": _clip(str(error.get("msg", "invalid")), 200)})
    return described


def validation_problem(error: RequestValidationError) -> Response[str]:
    found = list(error.errors())
    if any(item.get("type") == "json_invalid" for item in found):
        return problem(400, "malformed-json", "Malformed JSON", "the request body is not valid JSON")
    bad_headers = [item for item in found if tuple(item.get("loc", ()))[:1] == ("header",)]
    if bad_headers:
        # A missing or malformed header (Idempotency-Key) is a bad request, not invalid content.
        described = _describe(bad_headers[:MAX_LISTED_ERRORS])
        detail = "; ".join(f"{d['field']}: {d['message']}" for d in described)
        return problem(400, "bad-header", "Missing or invalid header", detail)
    # A body with thousands of unknown keys has thousands of errors: list the first few, count the rest,
    # so no error response grows with the input.
    described = _describe(found[:MAX_LISTED_ERRORS])
    omitted = len(found) - len(described)
    detail = "; ".join(f"{d['field']}: {d['message']}" for d in described[:3]) or "invalid request"
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
        logger.info("domain error", extra={"error": type(error).__name__, "detail": error.detail})
        return domain_problem(error)

    @app.exception_handler(RequestValidationError)
    def _validation(error: RequestValidationError) -> Response[str]:
        return validation_problem(error)

    # The guards answer these before the resolver runs (`guarded`); these handlers keep a resolver
    # called without them from answering 500 for the client's input.
    @app.exception_handler(RequestUnsupportedContentType)
    def _media_type(_: RequestUnsupportedContentType) -> Response[str]:
        return problem(415, "unsupported-media-type", "Unsupported media type", "send the body as application/json")

    @app.exception_handler(json_input.UnreadableJson)
    def _unreadable(error: json_input.UnreadableJson) -> Response[str]:
        return problem(400, "malformed-json", "Malformed JSON", error.detail)

    @app.not_found
    def _route_not_found(_: NotFoundError) -> Response[str]:
        event = app.current_event
        allowed = allowed_methods(app, event.path)
        if allowed:
            response = problem(
                405,
                "method-not-allowed",
                "Method not allowed",
                f"{event.path} answers {', '.join(allowed)}, not {event.http_method}",
            )
            response.headers["Allow"] = ", ".join(allowed)
            return response
        return problem(404, "no-route", "No such route", f"{event.http_method} {event.path} is not a route")

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


def allowed_methods(app: APIGatewayRestResolver, path: str) -> list[str]:
    """The methods that have a route for `path` (for a 405). Powertools keeps its routes in private
    lists; if they move, this degrades to a 404, never to an error."""
    routes = [*getattr(app, "_static_routes", []), *getattr(app, "_dynamic_routes", [])]
    return sorted({route.method for route in routes if route.rule.match(path)})


def too_large(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ready API Gateway proxy response when the request body exceeds 64 KiB, else None."""
    body = event.get("body") or ""
    size = len(body.encode() if isinstance(body, str) else body)
    if event.get("isBase64Encoded"):
        size = size * 3 // 4
    if size <= MAX_BODY_BYTES:
        return None
    return _proxy_problem(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        "too-large",
        "Request body too large",
        f"the body is {size} bytes; the limit is {MAX_BODY_BYTES}",
    )


Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def media_type(event: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """The body's media type, lowercased, and its parameters (names lowercased): `APPLICATION/JSON;
    Charset=UTF-8` is `("application/json", {"charset": "UTF-8"})`. No Content-Type means JSON."""
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    kind, *parameters = headers.get("content-type", JSON_MEDIA_TYPE).split(";")
    named = (parameter.partition("=") for parameter in parameters)
    return kind.strip().lower(), {name.strip().lower(): value.strip().strip('"') for name, _, value in named}


def not_json(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ready 415 when a body comes as anything but `application/json` (any case, parameters allowed,
    a charset only if UTF-8), else None. `+json` types (problem+json, merge-patch+json, vnd.api+json)
    promise semantics these APIs do not implement, so they are refused, not guessed at."""
    if not event.get("body"):
        return None
    kind, parameters = media_type(event)
    charset = parameters.get("charset", "utf-8").lower()
    if kind == JSON_MEDIA_TYPE and charset in ("utf-8", "utf8"):
        return None
    what = f"charset {charset[:40]}" if kind == JSON_MEDIA_TYPE else kind[:100]
    return _proxy_problem(
        415, "unsupported-media-type", "Unsupported media type", f"send the body as application/json, not {what}"
    )


def not_utf8(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ready 400 when the body is not UTF-8 text (JSON must be), else None."""
    body = event.get("body")
    if not body or not event.get("isBase64Encoded"):
        return None
    try:
        base64.b64decode(body).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return _proxy_problem(400, "malformed-json", "Malformed JSON", "the request body is not UTF-8 text")
    return None


def _proxy_problem(status: int, slug: str, title: str, detail: str) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": PROBLEM_CONTENT_TYPE},
        "body": problem_body(status, slug, title, detail, False),
        "isBase64Encoded": False,
    }


def unreadable(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ready 400 when the body is not JSON these APIs read (malformed, nested deeper than
    `json_input.MAX_DEPTH`, NaN/Infinity), else None. Call after `not_utf8`."""
    body = event.get("body")
    if not body:
        return None
    text = base64.b64decode(body).decode("utf-8") if event.get("isBase64Encoded") else str(body)
    try:
        json_input.loads(text)
    except json_input.UnreadableJson as error:
        return _proxy_problem(400, "malformed-json", "Malformed JSON", error.detail)
    return None


def with_canonical_media_type(event: dict[str, Any]) -> dict[str, Any]:
    """The event with its Content-Type spelled `application/json`: the resolver compares it case-sensitively,
    and the guards have already accepted it as JSON."""
    if not event.get("body"):
        return event
    headers = {k: v for k, v in (event.get("headers") or {}).items() if str(k).lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if str(k).lower() != "content-type"}
    return {
        **event,
        "headers": {**headers, "Content-Type": JSON_MEDIA_TYPE},
        "multiValueHeaders": {**multi, "Content-Type": [JSON_MEDIA_TYPE]},
    }


def guarded(app: APIGatewayRestResolver) -> Handler:
    """The app's resolve, behind the guards that answer before any parsing: body size, media type,
    encoding, JSON that cannot be read exactly."""

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        refused = too_large(event) or not_json(event) or not_utf8(event) or unreadable(event)
        return refused or app.resolve(with_canonical_media_type(event), context)

    return handle


def new_resolver() -> APIGatewayRestResolver:
    """A resolver for either API: request validation on, bodies parsed by `json_input.loads` (exact
    decimals), problem+json for every error."""
    app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=json_input.loads)
    install(app)
    return app


class Health(BaseModel):
    status: str = Field(description="`ok`.")


class FieldError(BaseModel):
    field: str = Field(description="Where: `body.amount`, `header.idempotency-key`, ...")
    message: str


class ProblemDetails(BaseModel):
    """RFC 9457 problem details, as every error response of both APIs carries them."""

    type: str = Field(description="A URI naming the kind of problem.")
    title: str
    status: int
    detail: str = Field(description="What went wrong with this request, in words.")
    retryable: bool = Field(description="True when the same request may succeed later; retrying is safe.")
    availableActions: list[ActionView] = Field(
        default_factory=list, description="On 409 from the orchestrator: the commands that are legal now."
    )
    errors: list[FieldError] = Field(
        default_factory=list, description=f"On 422: each invalid field (the first {MAX_LISTED_ERRORS})."
    )
    errorsOmitted: int = Field(default=0, description="On 422: how many invalid fields `errors` leaves out.")


def success(description: str, model: Any) -> OpenAPIResponse:
    """An OpenAPI success response: JSON described by `model`."""
    return {"description": description, "content": {"application/json": {"model": model}}}


# Every operation can answer these: bad headers or JSON, wrong method, too large, not JSON, invalid,
# and (it is software) an unexpected error.
COMMON_ERRORS = (400, 405, 413, 415, 422, 500)


def problem_responses(*statuses: int) -> dict[int, OpenAPIResponse]:
    """OpenAPI `responses` entries for the given error statuses, plus the ones every operation has."""
    statuses = tuple(sorted({*statuses, *COMMON_ERRORS}))
    descriptions = {
        400: "Malformed JSON (or nested deeper than 32 levels), or a missing/invalid header. Fix the request.",
        404: "Not found.",
        405: "The path exists, but not for this method (see the Allow header).",
        409: "Not allowed in the current state.",
        412: "The journey's ledger moved since the command was decided (Expected-Ledger-Seq); nothing was done.",
        413: "Body larger than 64 KiB.",
        415: "Body sent with a content type other than application/json.",
        422: "Invalid input, or an Idempotency-Key reused with a different body.",
        500: "An unexpected error; `retryable` is true: repeating the same request (same Idempotency-Key) is safe.",
        502: "A dependency rejected the request unexpectedly.",
        503: "A dependency is unavailable; retrying the same request is safe.",
    }
    return {
        status: {
            "description": descriptions[status],
            "content": {PROBLEM_CONTENT_TYPE: {"model": ProblemDetails}},
        }
        for status in statuses
    }


def serve_openapi(app: APIGatewayRestResolver, title: str, description: str) -> None:
    """Serve the app's OpenAPI 3.1 document (shared/openapi.py) at GET /openapi.json."""

    @app.get("/openapi.json", include_in_schema=False)
    def openapi_document() -> Response[str]:
        body = json.dumps(openapi.document(app, title, description), separators=(",", ":"))
        return Response(status_code=200, content_type="application/json", body=body)
