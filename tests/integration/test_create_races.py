"""createJourney with an agent key, raced (moto, two orchestrator instances on one table, the real loans-api
in-process). The journeyId is derived from the key's scope and the create is ONE conditional PutItem
(docs/ARCHITECTURE.md D2): whichever put lands first makes the journey, every other replays it, whenever it
lands; a late put never resets the journey it finds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from functions.auditor import bootstrap as auditor_bootstrap
from functions.auditor.settings import AuditorSettings
from functions.orchestrator import bootstrap as orchestrator_bootstrap
from functions.orchestrator.settings import OrchestratorSettings
from functions.orchestrator.store import DynamoJourneyStore
from shared import aws
from shared.control_record import ControlRecord
from shared.control_store import DynamoControlRecordStore, control_item
from tests.integration.aws_calls import scan
from tests.support import ApiClient, json_of, quiet_metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from saga.local.apigw import HttpResponse


class LateStore(DynamoJourneyStore):
    """The journeys table, whose next create runs `meanwhile` before its put reaches DynamoDB: another
    request lands between the id's derivation and the write (a concurrent create, a retry after a timeout)."""

    meanwhile: Callable[[], Any] | None = None

    def create(self, record: ControlRecord) -> ControlRecord | None:
        if (run := self.meanwhile) is not None:
            self.meanwhile = None
            run()
        return super().create(record)


@pytest.fixture
def late(orchestrator_settings: OrchestratorSettings, loans_http) -> tuple[ApiClient, LateStore]:
    """A second orchestrator instance (another Lambda container) on the same table, with a late store."""
    client = aws.client("dynamodb", orchestrator_settings.region, orchestrator_settings.aws_endpoint_url)
    store = LateStore(client, orchestrator_settings.journeys_table_name)
    ports = orchestrator_bootstrap.Ports(store=store, http=loans_http, sleep=lambda _: None)
    handler = orchestrator_bootstrap.build(orchestrator_settings, quiet_metrics("orchestrator"), ports)
    return ApiClient(handler, name="late-orchestrator"), store


def control_records(dynamodb: DynamoDBClient, table: str) -> list[dict[str, Any]]:
    return [item for item in scan(dynamodb, table) if item["sk"] == "CONTROL"]


def create(api: ApiClient, customer: str, key: str) -> HttpResponse:
    return api.post("/journeys", {"customerId": customer}, key=key)


def test_two_creates_with_one_key_at_once_make_one_journey_and_the_later_put_replays_it(
    orchestrator, late, dynamodb: DynamoDBClient, resources
):
    # Given a create whose put is overtaken by another create with the same key and body
    api, store = late
    first: list[HttpResponse] = []
    store.meanwhile = lambda: first.append(create(orchestrator, "c-1", "k-1"))
    # When both go on
    second = create(api, "c-1", "k-1")
    # Then the first put made the journey, and the later one answers that journey, replayed
    (made,) = first
    assert (made.status, made.headers.get("Idempotent-Replayed")) == (201, None), made.body
    assert (second.status, second.headers.get("Idempotent-Replayed")) == (201, "true"), second.body
    assert json_of(second) == json_of(made), f"the replay {second.body!r} is not the journey made {made.body!r}"
    records = control_records(dynamodb, resources.journeys_table)
    assert len(records) == 1, f"{len(records)} Control Records for one key: {records}"
    # And no receipt item: the record is all the create wrote
    assert len(scan(dynamodb, resources.journeys_table)) == 1, scan(dynamodb, resources.journeys_table)


def test_a_create_whose_put_lands_after_the_journey_moved_on_replays_it_as_it_stands_and_resets_nothing(
    orchestrator, late, dynamodb: DynamoDBClient, resources
):
    # Given a create's first attempt that stalls before its put (the agent timed out), while its retry
    # creates the journey and the agent prices a loan on it
    api, store = late
    moved: list[dict[str, Any]] = []

    def retry_then_simulate() -> None:
        journey = json_of(create(orchestrator, "c-1", "k-1"))["journeyId"]
        quoted = orchestrator.post(f"/journeys/{journey}/simulate", {"amount": 5000, "termMonths": 12})
        assert quoted.status == 200, quoted.body
        moved.append(json_of(quoted))

    store.meanwhile = retry_then_simulate
    # When the first attempt's put lands at last
    late_answer = create(api, "c-1", "k-1")
    # Then it changed nothing: the journey is still simulated, at the version the simulate made
    (simulated,) = moved
    journey = json_of(orchestrator.get(f"/journeys/{simulated['journeyId']}"))
    assert (journey["currentState"], journey["version"]) == ("simulated", simulated["version"]), journey
    # And it answers the journey as it stands (replayed), not a new record in `created`
    assert (late_answer.status, late_answer.headers.get("Idempotent-Replayed")) == (201, "true"), late_answer.body
    assert json_of(late_answer) == journey, f"the late attempt answered {late_answer.body!r}, not {journey}"
    assert len(control_records(dynamodb, resources.journeys_table)) == 1


def test_one_key_two_bodies_at_once_make_one_journey_and_a_422(orchestrator, late, dynamodb: DynamoDBClient, resources):
    # Given a create for c-2 overtaken by a create for c-1 with the same key
    api, store = late
    first: list[HttpResponse] = []
    store.meanwhile = lambda: first.append(create(orchestrator, "c-1", "k-1"))
    reused = create(api, "c-2", "k-1")
    # Then c-1's journey stands alone, and the other body is told its key was used for another request
    (made,) = first
    assert made.status == 201, made.body
    problem = json_of(reused)
    assert (reused.status, problem.get("retryable")) == (422, False), problem
    assert "different request" in problem["detail"], problem
    records = control_records(dynamodb, resources.journeys_table)
    assert [r["customerId"] for r in records] == ["c-1"], records


def test_one_key_from_two_callers_makes_two_journeys_with_ids_of_their_own(orchestrator):
    alice = {"X-Saga-Caller": "arn:aws:iam::111111111111:user/alice"}
    bob = {"X-Saga-Caller": "arn:aws:iam::111111111111:user/bob"}
    made = [orchestrator.post("/journeys", {"customerId": "c-1"}, key="k-1", headers=who) for who in (alice, bob)]
    assert [m.status for m in made] == [201, 201], [m.body for m in made]
    ids = {json_of(m)["journeyId"] for m in made}
    assert len(ids) == 2, f"two callers' creates with one key made {ids}"
    assert [m.headers.get("Idempotent-Replayed") for m in made] == [None, None], [m.headers for m in made]


def test_a_journey_the_audit_rebuilt_still_answers_its_keys_create_and_is_still_listed(
    orchestrator, dynamodb: DynamoDBClient, resources
):
    # Given a keyed journey, priced, whose record was then forged ahead of loans-api (a restore of one table)
    made = json_of(create(orchestrator, "c-1", "k-1"))
    journey = made["journeyId"]
    assert orchestrator.post(f"/journeys/{journey}/simulate", {"amount": 5000, "termMonths": 12}).status == 200
    records = DynamoControlRecordStore(dynamodb, resources.journeys_table)
    record = records.get(journey)
    assert record is not None
    forged = record.model_copy(update={"lastAppliedSeq": 10**9})
    dynamodb.put_item(TableName=resources.journeys_table, Item=control_item(forged))
    # When `saga audit --repair --rebuild` re-projects it from loans-api's ledger
    settings = AuditorSettings(aws_endpoint_url=resources.endpoint_url, loans_table_name=resources.loans_table,
                               journeys_table_name=resources.journeys_table, grace_seconds=60)  # fmt: skip
    later = datetime.now(UTC) + timedelta(seconds=120)
    auditor, _ = auditor_bootstrap.build_auditor(dynamodb, dynamodb, settings, clock=lambda: later)
    report = auditor.audit([journey], repair=True, rebuild=True)
    assert [r.journeyId for r in report.rebuilt] == [journey], report
    # Then the key's create still answers that journey as it stands (not 422: the rebuilt record kept the
    # create's fingerprint), and the customer's list still has it (it kept its listing)
    again = create(orchestrator, "c-1", "k-1")
    assert (again.status, again.headers.get("Idempotent-Replayed")) == (201, "true"), again.body
    assert (json_of(again)["journeyId"], json_of(again)["currentState"]) == (journey, "simulated"), again.body
    listed = json_of(orchestrator.get("/journeys?customerId=c-1"))
    assert [j["journeyId"] for j in listed["journeys"]] == [journey], listed


def test_a_create_replayed_while_its_record_is_behind_loans_api_answers_the_journey_as_loans_api_holds_it(
    orchestrator, loans_api
):
    # Given a keyed journey cancelled at loans-api whose reply never reached the record (still `created`)
    journey = json_of(create(orchestrator, "c-1", "k-1"))["journeyId"]
    cancelled = loans_api.post(f"/journeys/{journey}/cancel", None, key=f"{journey}:cancel")
    assert cancelled.status in (200, 201), cancelled.body
    assert json_of(orchestrator.get(f"/journeys/{journey}"))["currentState"] == "created"
    # When the create is repeated with its key
    again = create(orchestrator, "c-1", "k-1")
    # Then it answers the journey caught up with loans-api: cancelled, offering nothing
    answered = json_of(again)
    assert (again.status, again.headers.get("Idempotent-Replayed")) == (201, "true"), again.body
    assert (answered["currentState"], answered["availableActions"]) == ("cancelled", []), answered
