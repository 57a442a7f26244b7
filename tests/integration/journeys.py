"""An agent's calls on the orchestrator in-process (tests/support.py ApiClient), and loans-api's truth."""

from __future__ import annotations

import uuid
from typing import Any

from saga.links import naming
from tests.support import ApiClient, json_of
from tools.inprocess import InProcessHttp


def new_journey(orchestrator: ApiClient, customer: str = "c-1") -> Any:
    response = orchestrator.post("/journeys", {"customerId": customer}, key=str(uuid.uuid4()))
    assert response.status == 201
    return json_of(response)


def command(orchestrator: ApiClient, journey: dict, name: str, body: dict | None = None, **kwargs):
    """The agent's command `name`; accept and disburse without a `body` name what the record shows now,
    as an agent that reads the journey first would (the body its link carries)."""
    if body is None and name in ("accept", "disburse"):
        body = naming(json_of(orchestrator.get(f"/journeys/{journey['journeyId']}")), name)
    return orchestrator.post(f"/journeys/{journey['journeyId']}/{name}", body, **kwargs)


def truth_names(loans_http: InProcessHttp, journey_id: str, name: str) -> dict:
    """The body naming what loans-api's ledger holds now (an agent that learned of it some other way)."""
    return naming(truth(loans_http, journey_id)["lastEvent"], name)


def simulate(orchestrator: ApiClient, journey: dict, amount: int = 10000, term: int = 36, **kwargs):
    return command(orchestrator, journey, "simulate", {"amount": amount, "termMonths": term}, **kwargs)


def truth(loans_http: InProcessHttp, journey_id: str) -> Any:
    return json_of(ApiClient(loans_http.handler).get(f"/journeys/{journey_id}"))


def action_names(record: dict) -> list[str]:
    return [action["name"] for action in record["availableActions"]]


STEPS_TO = {
    "created": (),
    "simulated": ("simulate",),
    "accepted": ("simulate", "accept"),
    "disbursed": ("simulate", "accept", "disburse"),
    "cancelled": ("cancel",),
}


def journey_in(orchestrator: ApiClient, state: str) -> Any:
    """A new journey the agent's commands brought to `state`, each answered 200."""
    journey = new_journey(orchestrator)
    for step in STEPS_TO[state]:
        response = simulate(orchestrator, journey) if step == "simulate" else command(orchestrator, journey, step)
        assert response.status == 200, response.body
    return journey


# loans-api called directly (its own tests), on one journey unless told otherwise
LOANS_JOURNEY = "j-0001"


def simulate_at_loans_api(api: ApiClient, key: str, amount: int = 10000, term: int = 36, journey: str = LOANS_JOURNEY):
    return api.post("/simulations", {"journeyId": journey, "amount": amount, "termMonths": term}, key=key)


def accepted_at_loans_api(api: ApiClient) -> tuple[dict, dict]:
    """loans-api's journey LOANS_JOURNEY with a simulation and its acceptance: (simulation, acceptance)."""
    simulation = json_of(simulate_at_loans_api(api, "k-sim"))
    acceptance = json_of(
        api.post("/acceptances", {"journeyId": LOANS_JOURNEY, "simulationId": simulation["simulationId"]}, key="k-acc")
    )
    return simulation, acceptance
