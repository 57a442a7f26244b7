"""Adversary's tests for road 2's confirmation against the ledger (D15), with the consumer's fakes: each names
a defect found by attack and fails until it is fixed."""

from __future__ import annotations

from typing import Any, cast

import pytest

from functions.consumer.service import Batch, EventRejected
from functions.consumer.settings import ConsumerSettings
from functions.orchestrator.settings import OrchestratorSettings
from saga.ops.road2 import diagnose
from tests.unit.test_consumer import (
    ACCEPTED,
    DISBURSED,
    SIMULATED,
    CountingLedger,
    CountingRecords,
    forged,
    fresh,
    system,
)


def test_dlq_list_never_calls_a_forged_message_committed_by_loans_api():
    # Given a record that applied the simulation, loans-api at the disbursement (seq 3), and in the DLQ a
    # message claiming seq 2 with content loans-api never committed (another acceptance, another time)
    record = fresh().model_copy(update={"lastAppliedSeq": SIMULATED.seq})
    records, ledger = CountingRecords(record), CountingLedger(DISBURSED)
    body = forged(ACCEPTED, eventId="forged-event-id", occurredAt=DISBURSED.occurredAt)
    # When `saga dlq list` diagnoses it (the consumer's own confirmation decides)
    reason = diagnose(body, cast(Any, records), ledger)["reason"]
    # Then it does not tell the operator the forgery is loans-api's and to redrive it: `confirmed` only
    # checks a claim's content at the ledger's own seq, so every claim below it passes as committed
    assert not reason.startswith("committed by loans-api"), reason


def test_a_confirmation_that_meets_a_cold_loans_api_is_not_cut_off():
    # Given the orchestrator's per-attempt read timeout, sized to outlast a cold loans-api as it
    # may deploy (import + init 1.58 s from sources, BENCHMARKS.md section 5)
    sized_for_a_cold_start = OrchestratorSettings.model_fields["loans_read_timeout"].default
    # When the consumer confirms an event (D15) against the same loans-api, with its one attempt
    consumer = ConsumerSettings.model_fields["loans_read_timeout"].default
    # Then it waits as long: at 1.2 s a cold loans-api times out every confirmation it meets, and the
    # message (the one road 1 did not apply) waits the queue's 120 s visibility timeout, up to 3 times, on
    # a quiet stack where every loans-api start is cold (the batch-fits-the-timeout rule in
    # tests/unit/test_consumer.py then needs a smaller batch or a longer function timeout)
    assert consumer >= sized_for_a_cold_start, (consumer, sized_for_a_cold_start)


def test_a_batch_of_forged_messages_for_one_journey_costs_one_ledger_read():
    # Given a record at the simulation and loans-api at the simulation too
    record = fresh().model_copy(update={"lastAppliedSeq": SIMULATED.seq, "currentState": "simulated"})
    consumer, _, ledger, _ = system(record, SIMULATED)
    batch = Batch(records={record.journeyId: record})  # what the batch handler keeps for one batch
    # When one batch (10 messages, the consumer's batch size) brings 10 claims beyond the ledger for it
    for seq in range(2, 12):
        with pytest.raises(EventRejected):
            consumer.consume(forged(ACCEPTED, seq=seq), batch)
    # Then loans-api is asked once for that journey in the batch: the answer cannot change what the next
    # claim beyond it is (today: 10 reads per batch, 30 per batch over its 3 receives, each one a loans-api
    # execution, from anyone who can publish a message)
    assert ledger.reads == 1, ledger.reads
