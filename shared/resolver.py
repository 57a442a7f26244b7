"""The resolver both APIs are built on: Powertools' REST resolver, keeping its own list of the routes
registered on it, so a path that no route answers is a 404 problem, and a path that exists for other
methods a 405 with `Allow`, without reading Powertools' private route tables."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError

from shared import json_input, problems
from shared.idempotency import ORIGIN_HEADER, REPLAYED_HEADER, Answer

_Route = TypeVar("_Route", bound=Callable[..., Any])
# A rule's `<name>` matches one path segment of these characters, as Powertools' REST resolver
# matches it (RFC 3986's unreserved and sub-delims, and what API Gateway passes on unescaped); like
# Powertools, the rest of the rule is a regular expression, and trailing slashes are ignored.
_PARAMETER = re.compile(r"<\w+>")
_SEGMENT = r"[-._~()'!*:@,;=+&$%<> \[\]{}|^\w]+"


class Resolver(APIGatewayRestResolver):
    """APIGatewayRestResolver that answers an unrouted request with a problem: 405 (and `Allow`) when
    the path has routes for other methods, else 404."""

    def __init__(self, **options: Any) -> None:
        self._rules: list[tuple[re.Pattern[str], str]] = []
        super().__init__(**options)
        self.not_found(self._unrouted)

    def route(
        self, rule: str, method: str | list[str] | tuple[str], *args: Any, **kwargs: Any
    ) -> Callable[[_Route], _Route]:
        """Powertools' `route` (every `get`, `post`, ... goes through it), remembering the rule."""
        pattern = re.compile("^" + _PARAMETER.sub(lambda _: _SEGMENT, rule.rstrip("/")) + "/*$")
        methods = (method,) if isinstance(method, str) else method
        self._rules += [(pattern, name.upper()) for name in methods]
        return super().route(rule, method, *args, **kwargs)

    def allowed_methods(self, path: str) -> list[str]:
        """The methods that have a route for `path`."""
        return sorted({method for pattern, method in self._rules if pattern.match(path)})

    def _unrouted(self, _: NotFoundError) -> Response[str]:
        event = self.current_event
        allowed = self.allowed_methods(event.path)
        if not allowed:
            return problems.problem(
                404, "no-route", "No such route", f"{event.http_method} {event.path} is not a route"
            )
        detail = f"{event.path} answers {', '.join(allowed)}, not {event.http_method}"
        response = problems.problem(405, "method-not-allowed", "Method not allowed", detail)
        response.headers["Allow"] = ", ".join(allowed)
        return response


def respond(answer: Answer) -> Response[str]:
    """A command's answer as the route's response: JSON, with `Idempotent-Replayed: true` on a replay."""
    headers = {REPLAYED_HEADER: "true"} if answer.replayed else {}
    if answer.replayed and answer.origin is not None:
        headers[ORIGIN_HEADER] = answer.origin
    return Response(status_code=answer.status, content_type="application/json", body=answer.body, headers=headers)


def new_resolver() -> Resolver:
    """A resolver for either API: request validation on, bodies read by `json_input.body` (the guard's
    parse, exact decimals: `shared/guards.py`), problem+json for every error."""
    app = Resolver(enable_validation=True, json_body_deserializer=json_input.body)
    problems.install(app)
    return app
