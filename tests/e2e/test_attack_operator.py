"""Adversarial review of the operator tools over a real `saga local` (issue 27): `saga status --check`,
`saga dlq list` and `saga dlq redrive` as an operator meets them when someone else is looking at the DLQ
too, or when it holds more than one receive's worth of messages. On the runtime with road 2 stopped at the
queue (`--disable consumer`) this module shares with test_operator.py (tests/e2e/road2_off.py), so nothing
but the test moves a message; each test fills the DLQ with exactly what it needs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from shared import tables
from tests.support import PROCESS_PATIENCE
from tests.system import free_port

# How long the other reader holds its message: until the test deletes it, however long a busy machine takes to
# run the `saga` command in between (SQS's longest visibility timeout, 12 h; it was 120 s, a budget).
HELD = 43_200


def test_status_check_fails_on_a_dlq_message_someone_else_is_looking_at(road2_off):
    # Given a DLQ holding one message, received a moment ago by another reader (a second operator's
    # `saga dlq list`, the console's "poll for messages", a DLQ processor): in flight, not visible
    road2_off.fill_dlq(1)
    [seen] = road2_off.sqs().receive_message(QueueUrl=road2_off.dlq(), VisibilityTimeout=HELD)["Messages"]
    # When the operator checks
    try:
        checked = road2_off.saga("status", "--check", "--json")
    finally:  # the runtime is shared: no message of this test stays hidden there
        road2_off.sqs().delete_message(QueueUrl=road2_off.dlq(), ReceiptHandle=seen["ReceiptHandle"])
    # Then the check fails on the DLQ: the message is still there (ok would say "the DLQ is empty")
    assert checked.code == 1, checked.stdout
    assert "dlq" in [p["check"] for p in checked.json()["problems"]]


def test_dlq_list_does_not_call_a_dlq_empty_while_another_reader_holds_its_message(road2_off):
    # Given a DLQ holding one message that another reader received a moment ago (a second operator's
    # `saga dlq list` hides what it read for 30 s; the console's poll, for its own timeout)
    road2_off.fill_dlq(1)
    [seen] = road2_off.sqs().receive_message(QueueUrl=road2_off.dlq(), VisibilityTimeout=HELD)["Messages"]
    # When the operator lists the DLQ
    try:
        listed = road2_off.saga("dlq", "list")
    finally:  # the runtime is shared: no message of this test stays hidden there
        road2_off.sqs().delete_message(QueueUrl=road2_off.dlq(), ReceiptHandle=seen["ReceiptHandle"])
    # Then it does not say the DLQ is empty: it says a message is there that it could not read now
    # (ApproximateNumberOfMessagesNotVisible), so the operator waits instead of closing the incident
    assert listed.code == 0, listed.stderr
    assert listed.stdout.strip() != "the DLQ is empty"
    assert "in flight" in listed.stdout, listed.stdout


def test_dlq_redrive_dry_run_lists_every_message_a_redrive_would_move(road2_off):
    # Given a DLQ of 15 messages (more than one receive returns)
    sent = set(road2_off.fill_dlq(15))
    # When the operator asks what a redrive would move
    dry = road2_off.saga("dlq", "redrive", "--dry-run", "--json")
    # Then it names all 15 (the redrive itself, without --dry-run, moves all 15: up to --max 100)
    assert dry.code == 0, dry.stderr
    assert {entry["messageId"] for entry in dry.json()["moved"]} == sent


@pytest.mark.parametrize("journey_id", ["", "01a231a5 913a"], ids=["empty", "refused-by-the-apis-pattern"])
def test_a_journey_id_the_api_refuses_is_not_reported_as_a_system_that_answered_wrongly(road2_off, journey_id):
    # Given a script that passes an unset variable (`saga journey show "$J"`, J empty), or an id pasted with
    # a space, which the orchestrator refuses (405 on /journeys/, 422 on its path pattern)
    # (`saga audit --journey ""` already answers 3, unknown)
    answer = road2_off.saga("journey", "show", journey_id, "--json")
    # Then saga says the journey is unknown (3) or the command line is wrong, never that the system is
    # broken: exit 2 with "the system did not answer as it should" sends the operator to check a healthy system
    assert "did not answer as it should" not in answer.stderr, answer.stderr
    assert answer.code in (2, 3), answer.stderr
    assert answer.json()["title"] != "the system did not answer as it should"


def test_saga_local_given_one_port_for_both_apis_says_so_instead_of_blaming_another_program(tmp_path):
    # Given a user who moves the orchestrator onto loans-api's port (`saga local --port 3001`, 3001 being
    # loans-api's default): nothing else listens there
    port = free_port()
    flags = ["--port", str(port), "--loans-port", str(port), "--aws-port", str(free_port())]
    state = ["--state-file", str(tmp_path / "road2_off.json")]
    done = subprocess.run(
        [sys.executable, "-m", "saga.cli", "local", *flags, *state],
        capture_output=True,
        text=True,
        check=False,
        timeout=PROCESS_PATIENCE,
    )
    code, said = done.returncode, done.stdout + done.stderr
    # Then it cannot start (1), and the one line says the two flags name the same port, not "stop what
    # listens there" (the operator would hunt for a process that is saga local's own loans-api)
    assert code == 1, said[-2000:]
    assert "stop what listens there" not in said, said[-2000:]
    assert "--loans-port" in said, said[-2000:]


def test_a_second_dlq_listing_counts_the_first_listings_receive_as_it_says(road2_off):
    # Given a DLQ message no consumer ever received (sent there directly), listed once already
    [sent] = road2_off.fill_dlq(1)
    assert road2_off.saga("dlq", "list", "--json").code == 0
    # When the operator lists it again
    [entry] = road2_off.saga("dlq", "list", "--json").json()
    # Then `receiveCountBeforeListing` is every receive before this listing, the earlier listing's included
    # (SQS keeps one ApproximateReceiveCount whoever received; saga/ops/road2.py dlq_list says so), and
    # receiveCount adds this listing's own: it is not presented as the consumer's count
    assert entry["messageId"] == sent
    assert (entry["receiveCountBeforeListing"], entry["receiveCount"]) == (1, 2), entry


def test_dlq_list_of_a_dlq_over_its_limit_does_not_understate_how_many_are_there(road2_off):
    # Given a DLQ of 105 messages (an outage's worth; the listing reads at most 100)
    road2_off.fill_dlq(105)
    # When the operator lists it
    try:
        listed = road2_off.saga("dlq", "list")
    finally:
        road2_off.empty(tables.EVENTS_DLQ)  # the other tests on this runtime list a DLQ of their own making
    # Then its first line does not claim 100 are there: it says 105 (the queue's count), or that it shows
    # the first 100 of more
    assert listed.code == 0, listed.stderr
    first = listed.stdout.splitlines()[0]
    assert not first.startswith("100 message(s) in the DLQ;"), first
