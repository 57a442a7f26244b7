"""The agent-facing API: parse, call the journey service once, map the result. The OpenAPI document
it serves is written for an LLM tool-calling agent: operation ids, what each call does, and how to
recover from each error."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Annotated, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from pydantic import BaseModel, ValidationError, WithJsonSchema

from functions.orchestrator import keys
from functions.orchestrator.models import (
    AcceptRequest,
    CancelRequest,
    ControlRecordView,
    CreateJourneyRequest,
    DisburseRequest,
    JourneyList,
    SimulateRequest,
)
from functions.orchestrator.service import AgentKey, JourneyService, NotListed
from functions.orchestrator.views import render, render_json
from shared import openapi
from shared.errors import InvalidRequest
from shared.idempotency import HEADER, MAX_KEY_LENGTH, fingerprint, read_key, require_key
from shared.loan_terms import ID_PATTERN
from shared.resolver import new_resolver, respond

# The URL's `{journeyId}`, spelled as in every body; the function parameter keeps Python's spelling.
JourneyId = Annotated[
    str, Path(alias="journeyId", pattern=ID_PATTERN, description="The journeyId returned by createJourney.")
]
_KEY_LIMITS = {"alias": HEADER, "min_length": 1, "max_length": MAX_KEY_LENGTH}
RequiredKey = Annotated[
    str,
    Header(
        **_KEY_LIMITS,
        description="Required: a value you choose for this request (a UUID, say). Send the same value when you "
        "repeat the call (after a timeout, say): the repeat returns the first call's journey, as it stands now, and "
        "creates nothing, however long after. A key names one journey for good: use a new key for each new journey "
        "(the same key with another customerId is 422). "
        "Keys are yours alone: another caller's identical key is another key.",
    ),
]
# Optional, yet a plain string in the document (not `string | null`): a generated client then types it
# `str | Unset`, never None, which its HTTP library cannot send.
OptionalKey = Annotated[
    str | None,
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH}),
    Header(
        **_KEY_LIMITS,
        description="Optional. Send the same value when you repeat this call (for example after a timeout): the "
        "repeat returns the first call's result and changes nothing. Use a new value for a new request.",
    ),
]

# A page of listJourneys: at most MAX_PAGE records (each 1-2 KB rendered, with its trail and links), PAGE
# by default: a full page stays well under the 25 KB a Bedrock action group's answer may hold.
PAGE = 5
MAX_PAGE = 10
CustomerId = Annotated[
    str,
    Query(alias="customerId", min_length=1, max_length=128, description="The customerId you created the journeys for."),
]
Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description=f"How many journeys at most in this page (1..{MAX_PAGE}).")]
# A cursor is the journeyId the next page starts after, base64url-encoded: opaque to the agent; one naming a
# journey that is not in the caller's list is refused like one that does not decode (`not_a_cursor`).
_CURSOR_CHARACTERS = re.compile(r"^[A-Za-z0-9_-]{1,88}$")
_ID = re.compile(ID_PATTERN)
Cursor = Annotated[
    str | None,
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 88}),
    Query(
        min_length=1,
        max_length=88,
        description="Omit for the newest journeys; for the next page, the `nextCursor` of the previous page.",
    ),
]


def cursor_of(journey_id: str) -> str:
    """The opaque cursor of the page that starts after `journey_id`."""
    return base64.urlsafe_b64encode(journey_id.encode()).decode().rstrip("=")


def journey_after(cursor: str) -> str:
    """The journeyId a cursor starts after; InvalidRequest (422) when no page of this API gave it."""
    try:
        if _CURSOR_CHARACTERS.match(cursor) is None:
            raise ValueError
        journey_id = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if _ID.match(journey_id) is None:
            raise ValueError
    except (ValueError, binascii.Error):
        raise not_a_cursor() from None
    return journey_id


def not_a_cursor() -> InvalidRequest:
    """The 422 of a cursor no page gave: one that does not decode, and one naming a journey that is not in
    the caller's list of that customer (JourneyService.journeys_of), in the same words, so a forged cursor
    learns nothing of other lists."""
    # A value_error in our own words (shared/field_rules.py says a value_error's "must ..." as it is).
    rule = "must be a page's nextCursor, sent as it was given (omit it for the newest journeys)"
    found = [{"type": "value_error", "loc": ("query", "cursor"), "msg": rule, "ctx": {"error": rule}}]
    return InvalidRequest("the cursor is not one this API gave", found)


_Body = TypeVar("_Body", bound=BaseModel)
# The bodies the service validates itself (after the state check), declared in the document by hand.
DEFERRED_BODIES: dict[str, tuple[type[BaseModel], bool]] = {
    "acceptSimulation": (AcceptRequest, True),
    "disburseLoan": (DisburseRequest, True),
    "cancelJourney": (CancelRequest, False),
}
_RECORD = openapi.success("The journey's Control Record.", ControlRecordView)
_READ_ERRORS = openapi.problem_responses()
_COMMAND_ERRORS = openapi.problem_responses(400, 404, 409, 413, 415, 422, 502, 503)

DESCRIPTION = """Drive a loan journey for a customer: create a journey, simulate (price) a loan, accept the
simulation, disburse the money, or cancel. Every response that succeeds is the journey's Control Record:
`currentState` says where the journey is and `availableActions` lists exactly the calls that are legal next
(follow their `href`, and send their `body` when they carry one). accept and disburse name exactly what they
act on (the quote's `simulationId`, the acceptance's `acceptanceId`): nothing the agent did not name is ever
accepted or paid. Every call is safe to repeat but a simulate sent without an Idempotency-Key (its repeat is a
new quote): a repeated accept, disburse or cancel returns the record unchanged; a repeated createJourney or
simulate with the same Idempotency-Key header creates nothing (header `Idempotent-Replayed: true`).
Errors are RFC 9457 problem+json with `retryable`: when it is true, repeat the same call (for a simulate sent
without an Idempotency-Key, read `detail` first: a repeat may price a second quote); when false, read `detail`
and, on 409, pick one of the `availableActions` it carries."""


def create_app(service: JourneyService) -> APIGatewayRestResolver:
    app = new_resolver()

    def caller() -> str:
        """Who is calling: the IAM principal API Gateway reports (keys.principal)."""
        identity = app.current_event.request_context.identity
        return keys.principal(identity.user_arn, identity.caller)

    def agent_key(key: str | None, operation: str, body: BaseModel, journey_id: str = "") -> AgentKey | None:
        """The agent's key, scoped by its caller, the operation and the journey (never by the raw path:
        `/x` and `/x/` are one route), fingerprinted over the VALIDATED request: `10000`, `10000.0` and
        `1e4` are one amount, so a repeat spelled differently is still the same request."""
        key = read_key(key)
        if key is None:
            return None
        return AgentKey(
            scope=keys.agent_scope(caller(), operation, journey_id, key),
            request_hash=fingerprint(operation, journey_id, body.model_dump()),
        )

    @app.post(
        "/journeys",
        operation_id="createJourney",
        summary="Start a loan journey for a customer",
        description="Call first: creates a journey in state `created` and answers its Control Record, whose "
        "`availableActions` say what to call next (simulateLoan or cancelJourney). The Idempotency-Key header is "
        "required (400 without): repeating the call with the same key and body returns 201 with the same journey as it "
        "stands now, whatever it did since (header `Idempotent-Replayed: true`; its `availableActions` are the ones "
        "legal now), so a retry can never create a second journey. The journeyId is derived from your key: the same "
        "key (with the same body) names the same journey for as long as the journey exists.",
        responses={201: _RECORD, **_COMMAND_ERRORS},
        tags=["journeys"],
    )
    def create_journey(body: CreateJourneyRequest, idempotency_key: RequiredKey) -> Response[str]:
        key = agent_key(require_key(idempotency_key), "createJourney", body)
        return respond(service.create(body.customerId, key, caller()))

    @app.get(
        "/journeys",
        operation_id="listJourneys",
        summary="Find a customer's journeys",
        description="The journeys you created for `customerId`, newest first, each as getJourney answers it: call it "
        "when you do not have the journeyId (a conversation that restarted, a customer who came back), then follow "
        "the `availableActions` of the journey you mean. Only journeys created by the same caller are listed. A "
        "journey created a moment ago may take a second to appear. When `nextCursor` is present, older journeys "
        "follow: repeat the call with `cursor` set to it.",
        responses={200: openapi.success("A page of the customer's journeys.", JourneyList), **_READ_ERRORS},
        tags=["journeys"],
    )
    def list_journeys(customer_id: CustomerId, limit: Limit = PAGE, cursor: Cursor = None) -> Response[str]:
        after = None if cursor is None else journey_after(cursor)
        try:
            page = service.journeys_of(caller(), customer_id, limit, after)
        except NotListed:
            raise not_a_cursor() from None
        body: dict[str, object] = {"journeys": [render(record) for record in page.records]}
        if page.next_after is not None:
            body["nextCursor"] = cursor_of(page.next_after)
        return Response(status_code=200, content_type="application/json", body=json.dumps(body, separators=(",", ":")))

    @app.get(
        "/journeys/<journeyId>",
        operation_id="getJourney",
        summary="Read a journey's Control Record",
        description="Where the journey is (`currentState`) and what may be done next (`availableActions`). Call it "
        "when unsure where a journey stands (after a timeout or a 503, say), then follow one of `availableActions`.",
        responses={200: _RECORD, **openapi.problem_responses(404)},
        tags=["journeys"],
    )
    def get_journey(journey_id: JourneyId) -> Response[str]:
        return Response(status_code=200, content_type="application/json", body=render_json(service.get(journey_id)))

    @app.post(
        "/journeys/<journeyId>/simulate",
        operation_id="simulateLoan",
        summary="Price a loan (or re-price it)",
        description="Quotes a loan of `amount` over `termMonths` and makes it the journey's simulation. Legal in "
        "`created`, `simulated` and `accepted`: in one step the previous quote is superseded and an existing "
        "acceptance is cancelled. Without an Idempotency-Key each call is a new quote. With one, a repeat (same key, "
        "same amount and term) creates nothing and returns the journey's record with header "
        "`Idempotent-Replayed: true`, even if the journey has moved on since; the same key with another amount or "
        "term is 422. Next: acceptSimulation once the customer agrees to the quote in `simulation`, simulateLoan "
        "again for another quote, or cancelJourney.",
        responses={200: _RECORD, **_COMMAND_ERRORS},
        tags=["journeys"],
    )
    def simulate(journey_id: JourneyId, body: SimulateRequest, idempotency_key: OptionalKey = None) -> Response[str]:
        key = agent_key(idempotency_key, "simulateLoan", body, journey_id)
        return respond(service.simulate(journey_id, body.amount, body.termMonths, key))

    def deferred(model: type[_Body]) -> Callable[[], _Body]:
        """The request's body as `model`, validated when the service asks (after the command's state
        check: an illegal command is 409 whatever its body); no body reads as `{}`. The JSON is read now:
        the resolver's current event is the one request this process serves only until the service runs."""
        raw = app.current_event.json_body

        def parse() -> _Body:
            try:
                return model.model_validate({} if raw is None else raw)
            except ValidationError as error:
                found = [{**e, "loc": ("body", *e["loc"])} for e in error.errors(include_url=False)]
                raise InvalidRequest("the request body is not what this operation takes", found) from None

        return parse

    @app.post(
        "/journeys/<journeyId>/accept",
        operation_id="acceptSimulation",
        summary="Accept the quote the customer agreed to",
        description="The customer accepts the quote whose `simulationId` you send: copy it from the record's "
        "`simulation` (the acceptSimulation link in `availableActions` carries the exact body). Legal in "
        "`simulated`. loans-api accepts it only if it is still the journey's current quote: if the journey was "
        "re-priced meanwhile, nothing is accepted and the answer is 409 `stale-simulation` with the current quote "
        "(`simulation`), which you accept only if the customer agrees to it. Repeating the accept of the same quote "
        "returns the record unchanged (header `Idempotent-Replayed: true`). Next: disburseLoan (or simulateLoan to "
        "re-price, which cancels this acceptance, or cancelJourney).",
        responses={200: _RECORD, **_COMMAND_ERRORS},
        tags=["journeys"],
    )
    def accept(journey_id: JourneyId) -> Response[str]:
        body = deferred(AcceptRequest)
        return respond(service.accept(journey_id, lambda: body().simulationId))

    @app.post(
        "/journeys/<journeyId>/disburse",
        operation_id="disburseLoan",
        summary="Pay out the accepted loan (exactly once, ever)",
        description="Moves the money: pays the acceptance whose `acceptanceId` you send (copy it from the record's "
        "`acceptance`; the disburseLoan link in `availableActions` carries the exact body), for the amount of the "
        "quote it accepted. Legal in `accepted`. If that acceptance is no longer the journey's current one (a "
        "re-price cancelled it), nothing is paid: 409 `stale-acceptance`. A journey is disbursed at most once, "
        "whatever is repeated; repeating it in `disbursed` returns the record unchanged. `disbursed` is final: "
        "nothing, not even cancel, is legal afterwards. Call it only when the customer has confirmed the payout.",
        responses={200: _RECORD, **_COMMAND_ERRORS},
        tags=["journeys"],
    )
    def disburse(journey_id: JourneyId) -> Response[str]:
        body = deferred(DisburseRequest)
        return respond(service.disburse(journey_id, lambda: body().acceptanceId))

    @app.post(
        "/journeys/<journeyId>/cancel",
        operation_id="cancelJourney",
        summary="Abandon the journey",
        description="Cancels the journey and, in the same step, its acceptance and simulation; after that every "
        "command on the journey is refused. Send no body (or `{}`). Legal in `created`, `simulated` and `accepted`; "
        "repeating it (or racing another cancel) returns the cancelled record. After `disbursed`: 409 with no "
        "availableActions. Nothing follows: the journey is over.",
        responses={200: _RECORD, **_COMMAND_ERRORS},
        tags=["journeys"],
    )
    def cancel(journey_id: JourneyId) -> Response[str]:
        return respond(service.cancel(journey_id, deferred(CancelRequest)))

    @app.get(
        "/health",
        operation_id="health",
        summary="Liveness",
        description="For monitoring, not for agents: 200 while the API answers. It says nothing of a journey.",
        tags=["ops"],
        responses={200: openapi.success("Up.", openapi.Health), **openapi.problem_responses()},
    )
    def health() -> dict[str, str]:
        return {"status": "ok"}

    openapi.serve_openapi(app, title="Loan journey orchestrator", description=DESCRIPTION, bodies=DEFERRED_BODIES)
    return app
