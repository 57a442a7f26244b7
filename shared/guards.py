"""The guards in front of both APIs' resolvers: what a request must be before anything parses it.

A body over 64 KiB (413), one sent as anything but `application/json` (415), one that is not UTF-8
text, or JSON these APIs do not read exactly (too deep, NaN, malformed: 400) is answered here as a
problem document, never by a parser that would raise into a 500. `guarded` puts them in front of a
resolver: the handler every API Gateway function of this system runs. The body is parsed here, once:
the resolver reads back the value (`shared/json_input.py` `body`).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from shared import json_input
from shared.entry_points import Handler
from shared.problems import PROBLEM_CONTENT_TYPE, problem_body

JSON_MEDIA_TYPE = "application/json"
MAX_BODY_BYTES = 64 * 1024


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


def _proxy_problem(status: int, slug: str, title: str, detail: str) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": PROBLEM_CONTENT_TYPE},
        "body": problem_body(status, slug, title, detail, False),
        "isBase64Encoded": False,
    }


def read(event: Mapping[str, Any]) -> tuple[dict[str, Any] | None, json_input.Parsed | None]:
    """The first guard's answer that refuses `event` (body size, media type, a body that is not UTF-8
    text, JSON that cannot be read exactly: `json_input.loads`), or None and the body as parsed (None: no
    body). Each guard takes time linear in the body's size (bench/input_guard.py); the body is decoded
    and parsed here only."""
    refused = too_large(event) or not_json(event)
    body = event.get("body")
    if refused is not None or not body:
        return refused, None
    try:
        text = base64.b64decode(body).decode("utf-8") if event.get("isBase64Encoded") else str(body)
    except (ValueError, UnicodeDecodeError):
        return _proxy_problem(400, "malformed-json", "Malformed JSON", "the request body is not UTF-8 text"), None
    try:
        return None, json_input.Parsed(text, json_input.loads(text))
    except json_input.UnreadableJson as error:
        return _proxy_problem(400, "malformed-json", "Malformed JSON", error.detail), None


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


def refusal(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first guard's answer that refuses `event`, else None (`read`)."""
    return read(event)[0]


def guarded(app: APIGatewayRestResolver) -> Handler:
    """The app's resolve, behind the guards (`read`), which answer before the resolver runs and parse
    the body once: the resolver reads back the value they parsed (`json_input.body`)."""

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        refused, body = read(event)
        if refused is not None:
            return refused
        with json_input.parsed(body):
            return app.resolve(with_canonical_media_type(event), context)

    return handle
