"""How AWS answers an error, service by service, for the local endpoint's fault injection
(saga/local/aws_faults.py says when): which service a call is for, and the error each fault kind
answers in that service's own wire format (JSON for DynamoDB and SQS, XML for SNS), so botocore
parses and retries it exactly as it would in AWS."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

_DYNAMO_PREFIX = "com.amazonaws.dynamodb.v20120810#"


@dataclass(frozen=True)
class ErrorShape:
    """An AWS error: its HTTP status, its code and its message."""

    status: int
    code: str
    message: str


# Each kind: the services it applies to, and the error it answers (None: a behaviour, not an error).
ERRORS: dict[str, tuple[frozenset[str], ErrorShape | None]] = {
    "TransactionConflict": (frozenset({"dynamodb"}), None),
    "ThrottlingException": (
        frozenset({"dynamodb", "dynamodbstreams"}),
        ErrorShape(400, "ThrottlingException", "Rate of requests exceeds the allowed throughput."),
    ),
    "ProvisionedThroughputExceededException": (
        frozenset({"dynamodb"}),
        ErrorShape(
            400,
            "ProvisionedThroughputExceededException",
            "The level of configured provisioned throughput for the table was exceeded.",
        ),
    ),
    "InternalServerError": (
        frozenset({"dynamodb", "dynamodbstreams"}),
        ErrorShape(500, "InternalServerError", "Internal server error"),
    ),
    "ServiceUnavailable": (
        frozenset({"dynamodb", "dynamodbstreams"}),
        ErrorShape(503, "ServiceUnavailable", "Service is unavailable. Please try again."),
    ),
    "PublishBatchFailed": (frozenset({"sns"}), None),
    "Throttled": (frozenset({"sns"}), ErrorShape(429, "Throttled", "Rate exceeded")),
    "RequestThrottled": (frozenset({"sqs"}), ErrorShape(400, "RequestThrottled", "Rate exceeded")),
    "InternalError": (frozenset({"sqs", "sns"}), ErrorShape(500, "InternalError", "An internal error occurred.")),
    "ReplyLost": (frozenset({"dynamodb", "dynamodbstreams", "sns", "sqs"}), None),
}
KINDS = tuple(ERRORS)
# What DynamoDB answers a single-item write (PutItem, UpdateItem, DeleteItem) whose item a transaction holds.
_ITEM_IN_A_TRANSACTION = ErrorShape(400, "TransactionConflictException", "Transaction is ongoing for the item")
SINGLE_ITEM_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})


@dataclass(frozen=True)
class Call:
    """One AWS API call: the service, the operation, its protocol (JSON or query/XML) and its body."""

    service: str
    operation: str
    json_protocol: bool
    body: bytes


def identify(environ: dict[str, Any], body: bytes) -> Call | None:
    """The AWS call a WSGI request makes (by its X-Amz-Target, else its signature and Action), or None."""
    target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
    if target:
        prefix, _, operation = target.partition(".")
        service = {"DynamoDB_20120810": "dynamodb", "DynamoDBStreams_20120810": "dynamodbstreams",
                   "AmazonSQS": "sqs"}.get(prefix)  # fmt: skip
        return None if service is None else Call(service, operation, True, body)
    authorization = str(environ.get("HTTP_AUTHORIZATION", ""))
    action = parse_qs(body.decode(errors="replace")).get("Action", [""])[0]
    for service in ("sns", "sqs"):
        if f"/{service}/aws4_request" in authorization and action:
            return Call(service, action, False, body)
    return None


def answer(call: Call, kind: str, rng: random.Random, start_response: Callable[..., Any]) -> list[bytes]:
    """The fault `kind` (one of KINDS, not ReplyLost: that one is no answer) as `call`'s service answers it."""
    if kind == "TransactionConflict" and call.operation != "TransactWriteItems":
        return _error(call, _ITEM_IN_A_TRANSACTION, start_response)
    if kind == "TransactionConflict":
        return _transaction_conflict(call, rng, start_response)
    if kind == "PublishBatchFailed":
        return _publish_batch_failed(call, start_response)
    shape = ERRORS[kind][1]
    assert shape is not None
    return _error(call, shape, start_response)


def _respond(start_response: Callable[..., Any], status: int, content_type: str, data: bytes) -> list[bytes]:
    headers = [
        ("Content-Type", content_type),
        ("Content-Length", str(len(data))),
        ("x-amzn-RequestId", str(uuid.uuid4())),
    ]
    start_response(f"{status} X", headers)
    return [data]


def _error(call: Call, shape: ErrorShape, start_response: Callable[..., Any]) -> list[bytes]:
    if call.json_protocol:
        code = _DYNAMO_PREFIX + shape.code if call.service.startswith("dynamodb") else shape.code
        data = json.dumps({"__type": code, "message": shape.message}).encode()
        return _respond(start_response, shape.status, "application/x-amz-json-1.0", data)
    fault = "Sender" if shape.status < 500 else "Receiver"
    xml = (
        f"<ErrorResponse><Error><Type>{fault}</Type><Code>{shape.code}</Code><Message>{shape.message}</Message>"
        f"</Error><RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>"
    )
    return _respond(start_response, shape.status, "text/xml", xml.encode())


def _transaction_conflict(call: Call, rng: random.Random, start_response: Callable[..., Any]) -> list[bytes]:
    """What DynamoDB answers when another transaction holds one of the items: the whole transaction is
    cancelled, the reason on that item is TransactionConflict and the others' `None`."""
    count = len(json.loads(call.body or b"{}").get("TransactItems", [])) or 1
    conflicted = rng.randrange(count)
    reasons = [
        {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
        if index == conflicted
        else {"Code": "None"}
        for index in range(count)
    ]
    codes = ", ".join(reason["Code"] for reason in reasons)
    payload = {
        "__type": _DYNAMO_PREFIX + "TransactionCanceledException",
        "message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        "CancellationReasons": reasons,
    }
    return _respond(start_response, 400, "application/x-amz-json-1.0", json.dumps(payload).encode())


def _publish_batch_failed(call: Call, start_response: Callable[..., Any]) -> list[bytes]:
    """SNS accepted the call and failed every entry (nothing published): the relay must retry them."""
    form = parse_qs(call.body.decode(errors="replace"))
    ids = [values[0] for name, values in sorted(form.items()) if name.endswith(".Id")]
    failed = "".join(
        f"<member><Id>{entry_id}</Id><Code>InternalError</Code><SenderFault>false</SenderFault>"
        "<Message>Internal error</Message></member>"
        for entry_id in ids
    )
    xml = (
        '<PublishBatchResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishBatchResult>'
        f"<Successful></Successful><Failed>{failed}</Failed></PublishBatchResult>"
        f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata></PublishBatchResponse>"
    )
    return _respond(start_response, 200, "text/xml", xml.encode())
