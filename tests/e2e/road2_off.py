"""`saga local --disable consumer`, as the operator suites (tests/e2e/test_operator.py, test_attack_operator.py)
and the dashboard's browser test (tests/e2e/test_dashboard.py) meet it: road 2 stops at the events queue, so
nothing heals a journey but road 1, and nothing but a test moves a message. One runtime for the three modules
(tests/e2e/conftest.py; one xdist group, tests/conftest.py): each test makes its own journeys, and a test that
needs a queue empty or an AWS fault set does it itself and undoes it. The `saga` commands run as an operator
runs them, in a subprocess that finds the system by its state file."""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shared import aws, tables
from tests import saga_command
from tests.support import PATIENT_AWS
from tests.system import free_port, read_log, start_local, stop_local

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# The sweeper republishes what is PENDING after 1 s (not 60): the relay-failure test sees a failed relay's
# events republished within a sweep or two of the fault's end. A journey whose relay worked is NOTIFIED by
# then, or republished once more (a duplicate the consumer's check would drop: no consumer runs here).
SWEEP_THRESHOLD_SECONDS = "1"


@dataclass(frozen=True)
class Answer:
    code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


def run_saga(*args: str, state_file: Path | None = None, urls: tuple[str, ...] = ()) -> Answer:
    """`saga ARGS` in a subprocess; with `state_file` and no `urls`, it must find the system by itself."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_ENDPOINT_URL"))}
    if state_file is not None:
        env["SAGA_STATE_FILE"] = str(state_file)
    done = saga_command.run([*args, *urls], env)
    return Answer(done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class Road2Off:
    api_url: str
    loans_url: str
    aws_url: str
    state_file: Path

    def saga(self, *args: str) -> Answer:
        return run_saga(*args, state_file=self.state_file)

    def sqs(self) -> SQSClient:
        return aws.client("sqs", "us-east-1", self.aws_url, PATIENT_AWS)

    def queue(self, spec: tables.QueueSpec) -> str:
        return str(self.sqs().get_queue_url(QueueName=spec.local_name)["QueueUrl"])

    def dlq(self) -> str:
        return self.queue(tables.EVENTS_DLQ)

    def empty(self, spec: tables.QueueSpec) -> None:
        """Delete every message in the queue, one receive at a time (SQS takes one PurgeQueue a minute):
        what other tests left there is theirs."""
        sqs, url = self.sqs(), self.queue(spec)
        while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30).get("Messages"):
            for message in batch:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    def fill_dlq(self, count: int) -> list[str]:
        """A DLQ holding exactly `count` unreadable messages."""
        self.empty(tables.EVENTS_DLQ)
        sqs, url = self.sqs(), self.dlq()
        return [
            sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"poison": str(uuid.uuid4())}))["MessageId"]
            for _ in range(count)
        ]


@contextlib.contextmanager
def road2_off(folder: Path) -> Iterator[Road2Off]:
    """The runtime until the block ends; it must stop cleanly on SIGINT and remove its state file."""
    state_file, log_path = folder / "local.json", str(folder / "local.log")
    api_port, loans_port, aws_port = free_port(), free_port(), free_port()
    extra = ("--disable", "consumer", "--sweep-threshold", SWEEP_THRESHOLD_SECONDS, "--state-file", str(state_file))
    process, _ = start_local(api_port, loans_port, aws_port, extra=extra, log_path=log_path)
    try:
        yield Road2Off(
            f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{loans_port}", f"http://127.0.0.1:{aws_port}", state_file
        )
    finally:
        exit_code = stop_local(process)
    assert exit_code == 0, read_log(log_path)[-3000:]
    assert not state_file.exists(), "saga local must remove its state file when it stops"
