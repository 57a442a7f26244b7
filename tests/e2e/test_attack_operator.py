"""Adversarial review of the operator tools over a real `saga local` (issue 27): `saga status --check`,
`saga dlq list` and `saga dlq redrive` as an operator meets them when someone else is looking at the DLQ
too, or when it holds more than one receive's worth of messages. One runtime, road 2 stopped at the queue
(`--disable consumer`), so nothing but the test moves a message."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from shared import aws, tables
from tests.e2e.test_operator import Answer, run_saga
from tests.system import free_port, read_log, start_local, stop_local

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


@dataclass(frozen=True)
class Local:
    aws_url: str
    state_file: Path

    def saga(self, *args: str) -> Answer:
        return run_saga(*args, state_file=self.state_file)

    def sqs(self) -> SQSClient:
        return aws.client("sqs", "us-east-1", self.aws_url)

    def dlq(self) -> str:
        return str(self.sqs().get_queue_url(QueueName=tables.EVENTS_DLQ.local_name)["QueueUrl"])

    def fill_dlq(self, count: int) -> list[str]:
        """A DLQ holding exactly `count` unreadable messages (what another test left there is deleted: SQS
        takes one PurgeQueue a minute)."""
        sqs, url = self.sqs(), self.dlq()
        while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30).get("Messages"):
            for message in batch:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return [
            sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"poison": str(uuid.uuid4())}))["MessageId"]
            for _ in range(count)
        ]


@pytest.fixture(scope="module")
def local(tmp_path_factory) -> Iterator[Local]:
    folder = tmp_path_factory.mktemp("attack-operator")
    state_file, log_path = folder / "local.json", str(folder / "local.log")
    aws_port = free_port()
    extra = ("--disable", "consumer", "--state-file", str(state_file))
    process, _ = start_local(free_port(), free_port(), aws_port, extra=extra, log_path=log_path)
    try:
        yield Local(f"http://127.0.0.1:{aws_port}", state_file)
    finally:
        exit_code = stop_local(process)
    assert exit_code == 0, read_log(log_path)[-3000:]


def test_status_check_fails_on_a_dlq_message_someone_else_is_looking_at(local):
    # Given a DLQ holding one message, received a moment ago by another reader (a second operator's
    # `saga dlq list`, the console's "poll for messages", a DLQ processor): in flight, not visible
    local.fill_dlq(1)
    [seen] = local.sqs().receive_message(QueueUrl=local.dlq(), VisibilityTimeout=120)["Messages"]
    # When the operator checks
    checked = local.saga("status", "--check", "--json")
    local.sqs().delete_message(QueueUrl=local.dlq(), ReceiptHandle=seen["ReceiptHandle"])
    # Then the check fails on the DLQ: the message is still there (ok would say "the DLQ is empty")
    assert checked.code == 1, checked.stdout
    assert "dlq" in [p["check"] for p in checked.json()["problems"]]


def test_dlq_list_does_not_call_a_dlq_empty_while_another_reader_holds_its_message(local):
    # Given a DLQ holding one message that another reader received a moment ago (a second operator's
    # `saga dlq list` hides what it read for 30 s; the console's poll, for its own timeout)
    local.fill_dlq(1)
    [seen] = local.sqs().receive_message(QueueUrl=local.dlq(), VisibilityTimeout=120)["Messages"]
    # When the operator lists the DLQ
    listed = local.saga("dlq", "list")
    local.sqs().delete_message(QueueUrl=local.dlq(), ReceiptHandle=seen["ReceiptHandle"])
    # Then it does not say the DLQ is empty: it says a message is there that it could not read now
    # (ApproximateNumberOfMessagesNotVisible), so the operator waits instead of closing the incident
    assert listed.code == 0, listed.stderr
    assert listed.stdout.strip() != "the DLQ is empty"
    assert "in flight" in listed.stdout, listed.stdout


def test_dlq_redrive_dry_run_lists_every_message_a_redrive_would_move(local):
    # Given a DLQ of 15 messages (more than one receive returns)
    sent = set(local.fill_dlq(15))
    # When the operator asks what a redrive would move
    dry = local.saga("dlq", "redrive", "--dry-run", "--json")
    # Then it names all 15 (the redrive itself, without --dry-run, moves all 15: up to --max 100)
    assert dry.code == 0, dry.stderr
    assert {entry["messageId"] for entry in dry.json()["moved"]} == sent


@pytest.mark.parametrize("journey_id", ["", "01a231a5 913a"], ids=["empty", "refused-by-the-apis-pattern"])
def test_a_journey_id_the_api_refuses_is_not_reported_as_a_system_that_answered_wrongly(local, journey_id):
    # Given a script that passes an unset variable (`saga journey show "$J"`, J empty), or an id pasted with
    # a space, which the orchestrator refuses (405 on /journeys/, 422 on its path pattern)
    # (`saga audit --journey ""` already answers 3, unknown)
    answer = local.saga("journey", "show", journey_id, "--json")
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
    state = ["--state-file", str(tmp_path / "local.json")]
    done = subprocess.run(
        [sys.executable, "-m", "saga.cli", "local", *flags, *state],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    code, said = done.returncode, done.stdout + done.stderr
    # Then it cannot start (1), and the one line says the two flags name the same port, not "stop what
    # listens there" (the operator would hunt for a process that is saga local's own loans-api)
    assert code == 1, said[-2000:]
    assert "stop what listens there" not in said, said[-2000:]
    assert "--loans-port" in said, said[-2000:]


def test_a_second_dlq_listing_counts_the_first_listings_receive_as_it_says(local):
    # Given a DLQ message no consumer ever received (sent there directly), listed once already
    [sent] = local.fill_dlq(1)
    assert local.saga("dlq", "list", "--json").code == 0
    # When the operator lists it again
    [entry] = local.saga("dlq", "list", "--json").json()
    # Then `receiveCountBeforeListing` is every receive before this listing, the earlier listing's included
    # (SQS keeps one ApproximateReceiveCount whoever received; saga/ops/road2.py dlq_list says so), and
    # receiveCount adds this listing's own: it is not presented as the consumer's count
    assert entry["messageId"] == sent
    assert (entry["receiveCountBeforeListing"], entry["receiveCount"]) == (1, 2), entry


def test_dlq_list_of_a_dlq_over_its_limit_does_not_understate_how_many_are_there(local):
    # Given a DLQ of 105 messages (an outage's worth; the listing reads at most 100)
    local.fill_dlq(105)
    # When the operator lists it
    listed = local.saga("dlq", "list")
    # Then its first line does not claim 100 are there: it says 105 (the queue's count), or that it shows
    # the first 100 of more
    assert listed.code == 0, listed.stderr
    first = listed.stdout.splitlines()[0]
    assert not first.startswith("100 message(s) in the DLQ;"), first
