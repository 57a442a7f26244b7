"""A request no route answers: 405 with `Allow` when the path has routes for other methods, else 404.
The resolver keeps its own list of routes for that; these tests hold it to what Powertools itself
routes, so a Powertools upgrade that matches paths differently fails here, not in production."""

from __future__ import annotations

import json

import pytest

from saga.local.apigw import LambdaContextStub, http_response, proxy_event
from shared.resolver import Resolver

METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")
PROBES = (
    "/journeys",
    "/journeys/",
    "/journeys//",
    "/journeys/j-1",
    "/journeys/j-1/",
    "/journeys/j-1/cancel",
    "/journeys/j-1/cancel/extra",
    "/journeys/a b/cancel",
    "/journeys/a%2Fb/cancel",
    '/journeys/a"b',
    "/journeys/a#b",
    "/journeys/a?b",
    "/openapi.json",
    "/openapi-json",
    "/",
    "/nowhere",
)


def routed(**_: str) -> dict[str, bool]:
    return {"routed": True}


def app() -> Resolver:
    resolver = Resolver()
    resolver.post("/journeys")(routed)
    resolver.get("/journeys/<journeyId>")(routed)
    resolver.route("/journeys/<journeyId>/cancel", ["POST", "DELETE"])(routed)
    resolver.get("/openapi.json")(routed)
    return resolver


def answer(resolver: Resolver, method: str, path: str) -> tuple[int, dict[str, str], dict]:
    event = proxy_event(method, "/", {}, None)
    event["path"] = path  # as API Gateway passes it, not parsed as a URL here
    response = http_response(resolver.resolve(event, LambdaContextStub("t")))  # type: ignore[arg-type]
    return response.status, response.headers, json.loads(response.body)


@pytest.mark.parametrize("path", PROBES)
def test_a_path_is_405_with_the_methods_powertools_routes_else_404(path):
    resolver = app()
    answers = {method: answer(resolver, method, path) for method in METHODS}
    routed = sorted(method for method, (_, _, body) in answers.items() if body.get("routed"))
    for method, (status, headers, body) in answers.items():
        if method in routed:
            continue
        if routed:
            assert (status, headers.get("Allow"), body["type"]) == (
                405,
                ", ".join(routed),
                "urn:loan-saga:problem:method-not-allowed",
            ), (method, path)
        else:
            assert (status, body["type"]) == (404, "urn:loan-saga:problem:no-route"), (method, path)
        assert body["retryable"] is False


def test_the_405_names_the_path_and_the_methods_it_answers():
    status, headers, body = answer(app(), "PUT", "/journeys/j-1/cancel")
    assert (status, headers["Allow"]) == (405, "DELETE, POST")
    assert body["detail"] == "/journeys/j-1/cancel answers DELETE, POST, not PUT"
