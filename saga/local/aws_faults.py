"""AWS-side faults for the local moto endpoint: the errors real AWS answers and moto never does.

A WSGI layer in front of moto's server. Each rule names a service (dynamodb, dynamodbstreams, sns,
sqs), an operation (or `*`), a fault kind and the fraction of matching calls it hits (optionally only
calls whose body contains `match`, e.g. a table name, and at most `limit` times). A hit answers with
the error shape the real service uses, so botocore parses and retries it exactly as it would in AWS:

| kind | answer |
|---|---|
| TransactionConflict | TransactWriteItems: 400 TransactionCanceledException, one reason `TransactionConflict` |
| ThrottlingException, ProvisionedThroughputExceededException | DynamoDB: 400 (botocore retries: throttling) |
| InternalServerError, ServiceUnavailable | DynamoDB: 500 / 503 (botocore retries: transient) |
| PublishBatchFailed | SNS PublishBatch: 200 with every entry in `Failed` (nothing published) |
| Throttled | SNS: 429 `Throttled` (not retried by botocore) |
| RequestThrottled, InternalError | SQS: 400 / 500 |
| ReplyLost | any operation: moto executes the call (a write commits), then the connection is closed before the reply |

Rules are set by `saga local --aws-faults` and at run time through a small control API on the same
endpoint (the fault proxy's style): `GET /_saga/faults` (rules and what was injected), `POST` one
rule (JSON), `DELETE` to clear them."""

from __future__ import annotations

import contextlib
import io
import json
import random
import socket
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import parse_qs

CONTROL_PATH = "/_saga/faults"
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

_DYNAMO_PREFIX = "com.amazonaws.dynamodb.v20120810#"


@dataclass(frozen=True)
class _ErrorShape:
    status: int
    code: str
    message: str


# Each kind: the services it applies to, and the error it answers (None: a behaviour, not an error).
_ERRORS: dict[str, tuple[frozenset[str], _ErrorShape | None]] = {
    "TransactionConflict": (frozenset({"dynamodb"}), None),
    "ThrottlingException": (
        frozenset({"dynamodb", "dynamodbstreams"}),
        _ErrorShape(400, "ThrottlingException", "Rate of requests exceeds the allowed throughput."),
    ),
    "ProvisionedThroughputExceededException": (
        frozenset({"dynamodb"}),
        _ErrorShape(
            400,
            "ProvisionedThroughputExceededException",
            "The level of configured provisioned throughput for the table was exceeded.",
        ),
    ),
    "InternalServerError": (
        frozenset({"dynamodb", "dynamodbstreams"}),
        _ErrorShape(500, "InternalServerError", "Internal server error"),
    ),
    "ServiceUnavailable": (
        frozenset({"dynamodb", "dynamodbstreams"}),
        _ErrorShape(503, "ServiceUnavailable", "Service is unavailable. Please try again."),
    ),
    "PublishBatchFailed": (frozenset({"sns"}), None),
    "Throttled": (frozenset({"sns"}), _ErrorShape(429, "Throttled", "Rate exceeded")),
    "RequestThrottled": (frozenset({"sqs"}), _ErrorShape(400, "RequestThrottled", "Rate exceeded")),
    "InternalError": (frozenset({"sqs", "sns"}), _ErrorShape(500, "InternalError", "An internal error occurred.")),
    "ReplyLost": (frozenset({"dynamodb", "dynamodbstreams", "sns", "sqs"}), None),
}
KINDS = tuple(_ERRORS)


@dataclass(frozen=True)
class FaultRule:
    """`rate` of the calls to `service`/`operation` (containing `match`, if set) get `kind`."""

    service: str
    operation: str
    kind: str
    rate: float = 1.0
    match: str = ""
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in _ERRORS:
            raise ValueError(f"unknown AWS fault kind {self.kind!r}; known: {', '.join(KINDS)}")
        if self.service not in _ERRORS[self.kind][0]:
            raise ValueError(f"{self.kind} is not a fault of {self.service!r}")
        if self.kind == "TransactionConflict" and self.operation != "TransactWriteItems":
            raise ValueError("TransactionConflict is a TransactWriteItems fault")
        if self.kind == "PublishBatchFailed" and self.operation != "PublishBatch":
            raise ValueError("PublishBatchFailed is a PublishBatch fault")
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate {self.rate} is not a fraction")

    @classmethod
    def parse(cls, spec: str) -> FaultRule:
        """`service:Operation:Kind[@rate]`, e.g. `dynamodb:TransactWriteItems:TransactionConflict@0.02`
        (`*` for every operation of the service)."""
        body, _, rate = spec.strip().partition("@")
        parts = body.split(":")
        if len(parts) != 3:
            raise ValueError(f"an AWS fault is service:Operation:Kind[@rate], not {spec!r}")
        return cls(parts[0], parts[1], parts[2], float(rate) if rate else 1.0)

    def matches(self, service: str, operation: str, body: bytes) -> bool:
        return (
            self.service == service
            and self.operation in ("*", operation)
            and (not self.match or self.match.encode() in body)
        )


@dataclass(frozen=True)
class _Call:
    service: str
    operation: str
    json_protocol: bool
    body: bytes


def _identify(environ: dict[str, Any], body: bytes) -> _Call | None:
    target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
    if target:
        prefix, _, operation = target.partition(".")
        service = {"DynamoDB_20120810": "dynamodb", "DynamoDBStreams_20120810": "dynamodbstreams",
                   "AmazonSQS": "sqs"}.get(prefix)  # fmt: skip
        return None if service is None else _Call(service, operation, True, body)
    authorization = str(environ.get("HTTP_AUTHORIZATION", ""))
    action = parse_qs(body.decode(errors="replace")).get("Action", [""])[0]
    for service in ("sns", "sqs"):
        if f"/{service}/aws4_request" in authorization and action:
            return _Call(service, action, False, body)
    return None


class AwsFaultInjector:
    """WSGI middleware: answers a chosen fraction of calls with a real AWS error shape."""

    def __init__(self, app: WsgiApp, rules: Iterable[FaultRule] = (), seed: int | None = None) -> None:
        self._app = app
        self._rules: list[FaultRule] = list(rules)
        self._hits: list[int] = [0] * len(self._rules)  # per rule added (equal rules count apart)
        self.injected: Counter[str] = Counter()  # "service:Operation:Kind" -> count
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    # -- rules ---------------------------------------------------------------------------------

    def add(self, rule: FaultRule) -> None:
        with self._lock:
            self._rules.append(rule)
            self._hits.append(0)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self._hits.clear()

    def _pick(self, call: _Call) -> FaultRule | None:
        with self._lock:
            for index, rule in enumerate(self._rules):
                if not rule.matches(call.service, call.operation, call.body):
                    continue
                if rule.limit is not None and self._hits[index] >= rule.limit:
                    continue
                if self._random.random() < rule.rate:
                    self._hits[index] += 1
                    self.injected[f"{call.service}:{call.operation}:{rule.kind}"] += 1
                    return rule
        return None

    # -- WSGI ----------------------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if str(environ.get("PATH_INFO", "")).startswith(CONTROL_PATH):
            return self._control(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        call = _identify(environ, body)
        rule = None if call is None else self._pick(call)
        if call is None or rule is None:
            return self._app(environ, start_response)
        if rule.kind == "ReplyLost":
            return self._reply_lost(environ, start_response)
        if rule.kind == "TransactionConflict":
            return _transaction_conflict(call, self._random, start_response)
        if rule.kind == "PublishBatchFailed":
            return _publish_batch_failed(call, start_response)
        shape = _ERRORS[rule.kind][1]
        assert shape is not None
        return _error(call, shape, start_response)

    def _reply_lost(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Let moto execute the call (a write commits), then close the connection before any reply."""
        list(self._app(environ, lambda *_args, **_kwargs: None))
        connection = environ.get("werkzeug.socket")
        if connection is not None:
            with contextlib.suppress(OSError):  # the client may already be gone
                connection.shutdown(socket.SHUT_RDWR)
        # werkzeug then fails to write this and treats the connection as dropped.
        start_response("500 Internal Server Error", [("Content-Length", "0")])
        return [b""]

    def _control(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        try:
            if method == "POST":
                length = int(environ.get("CONTENT_LENGTH") or 0)
                self.add(FaultRule(**json.loads(environ["wsgi.input"].read(length) or b"{}")))
            elif method == "DELETE":
                self.clear()
            elif method != "GET":
                return _json(start_response, 405, {"error": f"method {method} not allowed"})
        except (TypeError, ValueError) as error:
            return _json(start_response, 400, {"error": str(error)})
        with self._lock:
            state = {"rules": [asdict(rule) for rule in self._rules], "injected": dict(self.injected)}
        return _json(start_response, 200, state)


def _json(start_response: Callable[..., Any], status: int, payload: Any) -> list[bytes]:
    data = json.dumps(payload).encode()
    start_response(f"{status} X", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


def _respond(start_response: Callable[..., Any], status: int, content_type: str, data: bytes) -> list[bytes]:
    headers = [
        ("Content-Type", content_type),
        ("Content-Length", str(len(data))),
        ("x-amzn-RequestId", str(uuid.uuid4())),
    ]
    start_response(f"{status} X", headers)
    return [data]


def _error(call: _Call, shape: _ErrorShape, start_response: Callable[..., Any]) -> list[bytes]:
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


def _transaction_conflict(call: _Call, rng: random.Random, start_response: Callable[..., Any]) -> list[bytes]:
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


def _publish_batch_failed(call: _Call, start_response: Callable[..., Any]) -> list[bytes]:
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
