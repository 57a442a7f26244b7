"""What one call to the local AWS endpoint costs: the client's CPU and the endpoint's (moto's) CPU per call for
GetItem, BatchGetItem of 10 keys and UpdateItem, and how many connections the client opened for them.

Run it (`PYTHONPATH=. .venv/bin/python -m bench.endpoint_calls`) before and after a change to the endpoint's
server (saga/threaded_http.py, saga/local/moto_server.py): both figures are CPU time (bench/cpu.py), so a
busy machine barely moves them; the connections are counted from the kernel's table (connections_to)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cpu import process_cpu_seconds
from saga.local.moto_server import MotoProcess
from shared import aws

CALLS = 300
TABLE = "bench-endpoint-calls"


def connections_to(port: int) -> int:
    """The TCP connections to `port` open or closed within the last minute: each one ever opened is either still
    established (its client's end is listed) or in TIME_WAIT on the side that closed it first (Linux's
    /proc/net/tcp; a TIME_WAIT lasts 60 s, longer than one figure takes)."""
    found = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, remote, state = line.split()[1:4]
        ports = (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16))
        if (state == "06" and port in ports) or (state == "01" and ports[1] == port):
            found += 1
    return found


def measure(moto: MotoProcess, call: Callable[[int], Any]) -> tuple[float, float, int]:
    """(client ms per call, endpoint ms per call, connections opened) over CALLS calls."""
    call(0)  # the first call's connection and lazy imports are not the figure
    port = int(moto.url.rsplit(":", 1)[1])
    before = (time.process_time(), process_cpu_seconds(moto.pid), connections_to(port))
    for index in range(CALLS):
        call(index)
    client = (time.process_time() - before[0]) * 1000 / CALLS
    endpoint = (process_cpu_seconds(moto.pid) - before[1]) * 1000 / CALLS
    return client, endpoint, connections_to(port) - before[2]


def main() -> None:
    for name, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench")):
        os.environ.setdefault(name, value)
    moto = MotoProcess().start()
    try:
        dynamodb = aws.client("dynamodb", "us-east-1", moto.url)
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        for index in range(10):
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"k{index}"}, "n": {"N": "0"}, "s": {"S": "x" * 200}})
        calls: dict[str, Callable[[int], Any]] = {
            "GetItem": lambda i: dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"k{i % 10}"}}),
            "BatchGetItem(10)": lambda _i: dynamodb.batch_get_item(
                RequestItems={TABLE: {"Keys": [{"pk": {"S": f"k{k}"}} for k in range(10)]}}
            ),
            "UpdateItem": lambda i: dynamodb.update_item(
                TableName=TABLE,
                Key={"pk": {"S": f"k{i % 10}"}},
                UpdateExpression="SET n = n + :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            ),
        }
        print(f"{CALLS} calls each, one client; CPU ms per call")
        print(f"{'call':<18}{'endpoint':>10}{'client':>10}{'connections opened':>20}")
        for name, call in calls.items():
            client, endpoint, connections = measure(moto, call)
            print(f"{name:<18}{endpoint:>10.2f}{client:>10.2f}{connections:>20}")
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
