"""loans-api's routes: parse, call the service once, map the reply. No AWS and no environment here."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Header, Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from functions.loans_api.models import (
    AcceptanceRequest,
    AcceptanceResponse,
    CancellationResponse,
    DisbursementRequest,
    DisbursementResponse,
    JourneyTruth,
    LedgerResponse,
    SimulationRequest,
    SimulationResponse,
)
from functions.loans_api.service import KeyedRequest, LoansService
from shared import openapi
from shared.idempotency import EXPECTED_SEQ_HEADER, HEADER, MAX_KEY_LENGTH, ORIGIN_HEADER, read_origin, require_key
from shared.loan_terms import ID_PATTERN
from shared.resolver import new_resolver, respond

PathId = Annotated[str, Path(alias="journeyId", pattern=ID_PATTERN, description="The journey's id.")]
IdempotencyKey = Annotated[
    str,
    Header(
        alias=HEADER,
        min_length=1,
        max_length=MAX_KEY_LENGTH,
        description="Required on every write. A repeat with the same key and body returns the recorded "
        "answer (header Idempotent-Replayed: true); the same key with another body is 422.",
    ),
]
ExpectedSeq = Annotated[
    int | None,
    Header(
        alias=EXPECTED_SEQ_HEADER,
        ge=0,
        description="Optional precondition: the ledger position (seq) the caller decided this command on. If "
        "the journey's ledger has moved since, the command is refused with 412 (after the key's receipt is "
        "checked: a repeat is still answered from it), so an abandoned attempt cannot commit after later "
        "commands.",
    ),
]
Origin = Annotated[
    str | None,
    Header(
        alias=ORIGIN_HEADER,
        # Documented, and checked by read_origin (400 origin-request-id-invalid, not a 422 of the framework's).
        json_schema_extra={"pattern": ID_PATTERN},
        description="Optional: the caller's id of the request this attempt belongs to (the same on each retry): "
        "1..64 letters, digits and dashes, else 400 origin-request-id-invalid. "
        "The receipt records it, and a replay answers it back in the same header, so the caller can tell its own "
        "earlier attempt from an earlier request.",
    ),
]
_WRITE_ERRORS = openapi.problem_responses(404, 409, 412, 503)
_ANSWER = "Committed, or the recorded answer of an earlier request with this key (header Idempotent-Replayed)."


def _written(status: int, model: type[BaseModel]) -> dict[int, OpenAPIResponse]:
    return {status: openapi.success(_ANSWER, model), **_WRITE_ERRORS}


def create_app(service: LoansService) -> APIGatewayRestResolver:
    app = new_resolver()

    def keyed(key: str, expected_seq: int | None, origin: str | None, body: BaseModel | None = None) -> KeyedRequest:
        event = app.current_event
        validated = None if body is None else body.model_dump()
        return KeyedRequest(
            require_key(key), event.http_method, event.path, validated, expected_seq, read_origin(origin)
        )

    @app.post(
        "/simulations",
        operation_id="createSimulation",
        responses=_written(201, SimulationResponse),
        summary="Price a loan and make it the journey's active simulation",
        description="Called by the orchestrator's simulateLoan. "
        "In one transaction: the new simulation becomes ACTIVE, the previous one SUPERSEDED, and an "
        "ACTIVE acceptance (if any) CANCELLED. 409 once the journey is cancelled or disbursed, or has had its quotes "
        "(`quotes-exhausted`: at most `max_simulations_per_journey`, 100 by default; the event's snapshot says "
        "`simulationsLeft`).",
    )
    def create_simulation(
        body: SimulationRequest,
        idempotency_key: IdempotencyKey,
        expected_seq: ExpectedSeq = None,
        origin: Origin = None,
    ) -> Response[str]:
        request = keyed(idempotency_key, expected_seq, origin, body)
        return respond(service.create_simulation(request, body.journeyId, body.amount, body.termMonths))

    @app.post(
        "/acceptances",
        operation_id="createAcceptance",
        responses=_written(201, AcceptanceResponse),
        summary="Accept the journey's active simulation",
        description="Called by the orchestrator's acceptSimulation, with the simulation it shows. "
        "409 unless `simulationId` is the ACTIVE simulation and no acceptance is ACTIVE.",
    )
    def create_acceptance(
        body: AcceptanceRequest,
        idempotency_key: IdempotencyKey,
        expected_seq: ExpectedSeq = None,
        origin: Origin = None,
    ) -> Response[str]:
        request = keyed(idempotency_key, expected_seq, origin, body)
        return respond(service.create_acceptance(request, body.journeyId, body.simulationId))

    @app.post(
        "/disbursements",
        operation_id="createDisbursement",
        responses=_written(201, DisbursementResponse),
        summary="Disburse the journey's active acceptance. One disbursement per journey, ever.",
        description="Called by the orchestrator's disburseLoan. "
        "409 unless `acceptanceId` is the ACTIVE acceptance; a second disbursement is refused by a "
        "domain condition, whatever key it carries.",
    )
    def create_disbursement(
        body: DisbursementRequest,
        idempotency_key: IdempotencyKey,
        expected_seq: ExpectedSeq = None,
        origin: Origin = None,
    ) -> Response[str]:
        request = keyed(idempotency_key, expected_seq, origin, body)
        return respond(service.create_disbursement(request, body.journeyId, body.acceptanceId))

    @app.post(
        "/journeys/<journeyId>/cancel",
        operation_id="cancelJourney",
        responses=_written(200, CancellationResponse),
        summary="Cancel the journey and everything active in it",
        description="Called by the orchestrator's cancelJourney. "
        "In one transaction: the ledger says `cancelled` (created if the journey had no command yet) "
        "and the ACTIVE acceptance and simulation are CANCELLED. Every later write for the journey is 409. "
        "409 if the journey was disbursed or is already cancelled (a repeat with the same key replays instead).",
    )
    def cancel_journey(
        journey_id: PathId, idempotency_key: IdempotencyKey, expected_seq: ExpectedSeq = None, origin: Origin = None
    ) -> Response[str]:
        return respond(service.cancel_journey(keyed(idempotency_key, expected_seq, origin), journey_id))

    @app.get(
        "/journeys/<journeyId>/ledger",
        operation_id="getJourneyLedger",
        summary="Where the journey stands: its ledger's newest event",
        description="Read by the orchestrator before it refuses a command or answers a repeat (its catch-up). "
        "One read, whatever the journey's history: `seq`, `state` and `lastEvent`, the event whose "
        "snapshot is the journey's state. Applying `lastEvent` brings any Control Record up to date. 404 while "
        "the journey has had no command.",
        responses={200: openapi.success("The ledger.", LedgerResponse), **openapi.problem_responses(404)},
    )
    def get_ledger(journey_id: PathId) -> Response[str]:
        last = service.ledger(journey_id)
        body = LedgerResponse(journeyId=journey_id, seq=last.seq, state=last.snapshot.state, lastEvent=last)
        return Response(status_code=200, content_type="application/json", body=body.model_dump_json())

    @app.get(
        "/journeys/<journeyId>",
        operation_id="getJourneyTruth",
        summary="The journey's truth",
        description="Read by operators (`saga journey show`): the journey's newest history, at most 50 simulations, "
        "acceptances and events each (`olderOmitted` names the lists that leave older ones out), at most three reads "
        "(the journey's item and its newest events; the statuses are derived from the events). "
        "`state` (in the Control Record's vocabulary) and `lastEvent` come from the ledger: applying "
        "`lastEvent` brings any Control Record up to date. 404 while the journey has had no command.",
        responses={200: openapi.success("The journey's truth.", JourneyTruth), **openapi.problem_responses(404)},
    )
    def get_journey(journey_id: PathId) -> Response[str]:
        body = service.journey(journey_id).model_dump_json()
        return Response(status_code=200, content_type="application/json", body=body)

    @app.get(
        "/health",
        operation_id="health",
        summary="Liveness",
        description="For monitoring: 200 while the API answers.",
        responses={200: openapi.success("Up.", openapi.Health), **openapi.problem_responses()},
    )
    def health() -> dict[str, str]:
        return {"status": "ok"}

    openapi.serve_openapi(app, title="loans-api", description="The system of record for loan journeys.")
    return app
