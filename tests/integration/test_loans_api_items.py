"""What every loans-api command writes, recorded from its TransactWriteItems call against the moto server:
exactly three items (the journey's item, the receipt, the event), each under 1 KB with the largest inputs
loans-api accepts, so a command is billed 3 x 2 write units. Sizes follow DynamoDB's documented rules
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html: names plus
values, numbers 1 byte per two digits plus 1, 3 bytes per map or list plus 1 per element), as bench/billing.py
implements them; a write is billed per started KB of the larger of its before and after images, twice in a
transaction."""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest

from bench.billing import KB, item_size, write_units
from functions.loans_api import bootstrap as loans_bootstrap
from functions.loans_api import domain
from functions.loans_api.domain import QUOTE_CAP, Requirements
from functions.loans_api.history import HISTORY_PAGE
from functions.loans_api.service import CommitStatus
from functions.loans_api.settings import LoansSettings
from functions.loans_api.store import DynamoLoanStore
from functions.relay.outbox_store import DynamoOutboxStore, StoredEvent, read_outbox_item
from shared import aws, outbox
from shared.events import LoanEvent
from shared.idempotency import MAX_KEY_LENGTH, Receipt
from shared.keys import event_sk, journey_pk
from shared.loan_terms import MAX_TERM_MONTHS
from tests.integration.aws_calls import scan
from tests.integration.journeys import LOANS_JOURNEY, simulate_at_loans_api
from tests.support import PATIENT_AWS, ApiClient, json_of, quiet_metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# The largest inputs loans-api accepts: ids of 64 characters, keys of 255, an Origin-Request-Id of 64, an
# amount of 7 significant digits and a 3-digit term. Drawn at random (seeded) so that compression (the
# receipt's body) gains nothing from repeats a real id would not have.
_RANDOM = random.Random(25)
_ID_CHARACTERS = string.ascii_letters + string.digits + "-"


def _longest(length: int) -> str:
    return "".join(_RANDOM.choice(_ID_CHARACTERS) for _ in range(length))


AMOUNT = 99999.99


@dataclass
class Recorded:
    """loans-api, and the DynamoDB calls of its client: every TransactWriteItems' items, every call's name."""

    api: ApiClient
    transactions: list[list[dict[str, Any]]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def reads_of(self, read: Callable[[], Any]) -> tuple[Any, list[str]]:
        """What `read` returns, and the DynamoDB calls it made."""
        before = len(self.calls)
        return read(), self.calls[before:]


@pytest.fixture
def recorded(loans_settings: LoansSettings) -> Iterator[Recorded]:
    """loans-api on the moto server, its client built after the hooks (a client copies its session's)."""
    transactions: list[list[dict[str, Any]]] = []
    calls: list[str] = []

    def transaction(params: dict[str, Any], **_: Any) -> None:
        transactions.append(params["TransactItems"])

    def call(model: Any, **_: Any) -> None:
        calls.append(model.name)

    events = aws.session().get_component("event_emitter")
    events.register("provide-client-params.dynamodb.TransactWriteItems", transaction)
    events.register("before-call.dynamodb", call)
    try:
        api = ApiClient(loans_bootstrap.build(loans_settings, quiet_metrics("loans-api")), name="loans-api")
        yield Recorded(api, transactions, calls)
    finally:
        events.unregister("provide-client-params.dynamodb.TransactWriteItems", transaction)
        events.unregister("before-call.dynamodb", call)


def _post(api: ApiClient, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    headers = {"Origin-Request-Id": _longest(64)}
    response = api.post(path, body, key=_longest(MAX_KEY_LENGTH), headers=headers)
    assert response.status in (200, 201), response.body
    return dict(json_of(response))


def _kind(operation: dict[str, Any]) -> str:
    ((_, write),) = operation.items()
    sort_key = str(write["Item"]["sk"]["S"])
    return sort_key.split("#", maxsplit=1)[0]


def _every_command(api: ApiClient) -> dict[str, dict[str, Any]]:
    """Every loans-api command at its largest: a first simulate (it creates the journey's item), an accept,
    a re-simulate over the acceptance (it supersedes the quote and cancels the acceptance), an accept again,
    the disburse, and cancels of a journey never seen (it creates the item) and of an accepted one."""
    journey, other, third = _longest(64), _longest(64), _longest(64)
    quote = {"journeyId": journey, "amount": AMOUNT, "termMonths": MAX_TERM_MONTHS}
    answers: dict[str, dict[str, Any]] = {"simulate": _post(api, "/simulations", quote)}
    first = answers["simulate"]["simulationId"]
    answers["accept"] = _post(api, "/acceptances", {"journeyId": journey, "simulationId": first})
    answers["re-simulate"] = _post(api, "/simulations", quote)
    again = answers["re-simulate"]["simulationId"]
    answers["accept again"] = _post(api, "/acceptances", {"journeyId": journey, "simulationId": again})
    acceptance = answers["accept again"]["acceptanceId"]
    answers["disburse"] = _post(api, "/disbursements", {"journeyId": journey, "acceptanceId": acceptance})
    answers["cancel a journey never seen"] = _post(api, f"/journeys/{other}/cancel")
    simulated = _post(api, "/simulations", {**quote, "journeyId": third})
    _post(api, "/acceptances", {"journeyId": third, "simulationId": simulated["simulationId"]})
    answers["cancel an accepted journey"] = _post(api, f"/journeys/{third}/cancel")
    return answers


def test_every_command_writes_exactly_the_journey_item_its_receipt_and_its_event_each_under_1_kb(recorded):
    # Given every command loans-api has, each with the largest inputs it accepts
    answers = _every_command(recorded.api)
    # Then each was one transaction of exactly three items: the receipt, the journey's item, the event
    assert len(recorded.transactions) == len(answers) + 2  # the third journey's simulate and accept
    for items in recorded.transactions:
        assert [_kind(op) for op in items] == ["RECEIPT", "LEDGER", "EVENT"]
        assert all(set(op) == {"Put"} for op in items), "no item is updated in place, none is deleted"
        # And each item is under 1 KB: one write unit, two in the transaction, six for the command
        sizes = [item_size(op["Put"]["Item"]) for op in items]
        assert max(sizes) < KB, sizes
        assert sum(write_units(size, transactional=True) for size in sizes) == 6


def test_the_relay_marks_the_largest_event_notified_and_it_stays_under_1_kb(recorded, resources):
    # Given the largest event (the disbursement's: its snapshot holds the quote, the acceptance and the payment)
    answers = _every_command(recorded.api)
    paid = LoanEvent.model_validate(answers["disburse"]["event"])
    dynamodb: DynamoDBClient = aws.client("dynamodb", resources.region, resources.endpoint_url, PATIENT_AWS)
    key = {"pk": {"S": journey_pk(paid.journeyId)}, "sk": {"S": event_sk(paid.seq)}}
    committed = dynamodb.get_item(TableName=resources.loans_table, Key=key, ConsistentRead=True)["Item"]
    stored = read_outbox_item(dict(committed))
    assert isinstance(stored, StoredEvent), stored
    # When the relay marks it NOTIFIED
    assert DynamoOutboxStore(dynamodb, resources.loans_table).mark_notified([stored], datetime.now(UTC)) == {}
    # Then it is still one write unit's worth, and it carries no expiry: it is the journey's history
    item = dynamodb.get_item(TableName=resources.loans_table, Key=key, ConsistentRead=True)["Item"]
    assert item["status"]["S"] == outbox.NOTIFIED
    assert "expiresAt" not in item
    assert item_size(item) < KB


def test_the_journey_truth_is_read_in_three_calls_at_the_quote_cap(recorded):
    # Given a journey at the cap of 100 quotes, each accepted but the last: the longest history one has
    journey = _longest(64)
    quote = {"journeyId": journey, "amount": AMOUNT, "termMonths": MAX_TERM_MONTHS}
    for n in range(QUOTE_CAP):
        simulation = _post(recorded.api, "/simulations", quote)
        if n < QUOTE_CAP - 1:
            _post(recorded.api, "/acceptances", {"journeyId": journey, "simulationId": simulation["simulationId"]})
    # When its truth is read
    response, reads = recorded.reads_of(lambda: json_of(recorded.api.get(f"/journeys/{journey}")))
    # Then three reads answered it: the journey's item and two pages of its newest events
    assert reads == ["GetItem", "Query", "Query"]
    # And it lists the newest 50 of each kind, with the statuses the old items held
    truth = dict(response)
    assert len(truth["simulations"]) == len(truth["acceptances"]) == len(truth["events"]) == HISTORY_PAGE
    assert sorted(truth["olderOmitted"]) == ["acceptances", "events", "simulations"]
    assert [s["status"] for s in truth["simulations"]] == ["SUPERSEDED"] * 49 + ["ACTIVE"]
    assert [a["status"] for a in truth["acceptances"]] == ["CANCELLED"] * 50
    assert truth["events"][-1]["seq"] == 2 * QUOTE_CAP - 1


def test_a_short_journey_is_read_in_two_calls(recorded):
    # Given a journey with one quote
    journey = _longest(64)
    _post(recorded.api, "/simulations", {"journeyId": journey, "amount": AMOUNT, "termMonths": MAX_TERM_MONTHS})
    # When its truth is read
    response, reads = recorded.reads_of(lambda: json_of(recorded.api.get(f"/journeys/{journey}")))
    # Then the journey's item and one page of events answered it, all of it listed
    assert reads == ["GetItem", "Query"]
    assert (len(response["simulations"]), response["olderOmitted"]) == (1, [])


@pytest.mark.parametrize(
    ("requires", "outcome"),
    [
        (Requirements(simulation_id="another-quote"), CommitStatus.VIOLATED),
        (Requirements(no_acceptance=True), CommitStatus.VIOLATED),
        (Requirements(acceptance_id="another-acceptance"), CommitStatus.VIOLATED),
        (Requirements(quotes_below=1), CommitStatus.VIOLATED),
        (None, CommitStatus.COMMITTED),  # what the journey's item does hold
    ],
    ids=["named-quote-not-active", "an-acceptance-is-active", "named-acceptance-not-active", "quotes-used", "holds"],
)
def test_the_journey_items_condition_refuses_a_change_whose_requirements_it_does_not_meet(
    loans_api, loans_settings: LoansSettings, dynamodb: DynamoDBClient, resources, requires, outcome
):
    # Given an accepted journey (one quote, its acceptance) and a change decided at its seq
    quote = json_of(simulate_at_loans_api(loans_api, "k-s"))
    body = {"journeyId": LOANS_JOURNEY, "simulationId": quote["simulationId"]}
    acceptance = json_of(loans_api.post("/acceptances", body, key="k-a"))
    store = DynamoLoanStore(dynamodb, loans_settings.loans_table_name)
    ledger = store.read_ledger(LOANS_JOURNEY)
    change = domain.create_simulation(ledger, Decimal(5000), 12, datetime.now(UTC))
    held = Requirements(quote["simulationId"], False, acceptance["acceptanceId"], quotes_below=2)
    before = scan(dynamodb, resources.loans_table)
    # When it commits with requirements the item does not meet (the in-code checks passed on another view)
    receipt = Receipt("k-late", "h", 201, "{}")
    result = store.commit(replace(change, requires=requires or held), receipt, expires_at=0)
    # Then the transaction's condition decides: refused with nothing written, or committed when they hold
    assert result.status is outcome
    if outcome is CommitStatus.VIOLATED:
        assert scan(dynamodb, resources.loans_table) == before
