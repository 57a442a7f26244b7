"""loans-api's routes: parse, call the service once, map the reply. No AWS and no environment here."""

from __future__ import annotations

import json
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Header, Path

from functions.loans_api.models import (
    AcceptanceRequest,
    DisbursementRequest,
    JourneyTruthResponse,
    SimulationRequest,
)
from functions.loans_api.service import KeyedRequest, LoansService, Reply
from shared import problems
from shared.idempotency import HEADER, MAX_KEY_LENGTH, REPLAYED_HEADER, require_key
from shared.loan_terms import ID_PATTERN

PathId = Annotated[str, Path(pattern=ID_PATTERN)]
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
_WRITE_ERRORS = problems.problem_responses(404, 409, 503)
_CREATED = {
    201: problems.success("Committed, or replayed from the key's receipt (header Idempotent-Replayed)."),
    **_WRITE_ERRORS,
}
_UPDATED = {
    200: problems.success("Committed, or replayed from the key's receipt (header Idempotent-Replayed)."),
    **_WRITE_ERRORS,
}


def create_app(service: LoansService) -> APIGatewayRestResolver:
    app = APIGatewayRestResolver(enable_validation=True)
    problems.install(app)

    def keyed(key: str) -> KeyedRequest:
        event = app.current_event
        return KeyedRequest(key=require_key(key), method=event.http_method, path=event.path, body=event.json_body)

    def reply(result: Reply) -> Response[str]:
        headers = {REPLAYED_HEADER: "true"} if result.replayed else {}
        return Response(status_code=result.status, content_type="application/json", body=result.body, headers=headers)

    @app.post(
        "/simulations",
        operation_id="createSimulation",
        responses=_CREATED,
        summary="Price a loan and make it the journey's active simulation (supersedes the previous one).",
    )
    def create_simulation(body: SimulationRequest, idempotency_key: IdempotencyKey) -> Response[str]:
        return reply(service.create_simulation(keyed(idempotency_key), body.journeyId, body.amount, body.termMonths))

    @app.post("/simulations/<simulation_id>/cancel", operation_id="cancelSimulation", responses=_UPDATED)
    def cancel_simulation(simulation_id: PathId, idempotency_key: IdempotencyKey) -> Response[str]:
        return reply(service.cancel_simulation(keyed(idempotency_key), simulation_id))

    @app.post("/acceptances", operation_id="createAcceptance", responses=_CREATED)
    def create_acceptance(body: AcceptanceRequest, idempotency_key: IdempotencyKey) -> Response[str]:
        return reply(service.create_acceptance(keyed(idempotency_key), body.journeyId, body.simulationId))

    @app.post("/acceptances/<acceptance_id>/cancel", operation_id="cancelAcceptance", responses=_UPDATED)
    def cancel_acceptance(acceptance_id: PathId, idempotency_key: IdempotencyKey) -> Response[str]:
        return reply(service.cancel_acceptance(keyed(idempotency_key), acceptance_id))

    @app.post(
        "/disbursements",
        operation_id="createDisbursement",
        responses=_CREATED,
        summary="Disburse the journey's active acceptance. One disbursement per journey, ever.",
    )
    def create_disbursement(body: DisbursementRequest, idempotency_key: IdempotencyKey) -> Response[str]:
        return reply(service.create_disbursement(keyed(idempotency_key), body.journeyId, body.acceptanceId))

    @app.get(
        "/journeys/<journey_id>",
        operation_id="getJourneyTruth",
        responses={
            200: {
                "description": "The journey's truth.",
                "content": {"application/json": {"model": JourneyTruthResponse}},
            },
            **problems.problem_responses(404),
        },
    )
    def get_journey(journey_id: PathId) -> Response[str]:
        truth = service.journey(journey_id)
        body: dict[str, Any] = {
            "journeyId": truth.journey_id,
            "seq": truth.seq,
            "state": truth.snapshot.state,
            "simulations": truth.simulations,
            "acceptances": truth.acceptances,
            "disbursement": truth.disbursement,
            "events": truth.events,
        }
        return Response(status_code=200, content_type="application/json", body=json.dumps(body))

    @app.get("/health", operation_id="health", responses={200: problems.success("Up."), **problems.problem_responses()})
    def health() -> dict[str, str]:
        return {"status": "ok"}

    problems.serve_openapi(app, title="loans-api", description="The system of record for loan journeys.")
    return app
