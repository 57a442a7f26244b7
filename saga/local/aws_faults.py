"""AWS-side faults for the local moto endpoint: the errors real AWS answers and moto never does.

A WSGI layer in front of moto's server. Each rule names a service (dynamodb, dynamodbstreams, sns,
sqs), an operation (or `*`), a fault kind and the fraction of matching calls it hits (optionally only
calls whose body contains `match`, e.g. a table name, and at most `limit` times). A hit answers with
the error shape the real service uses, so botocore parses and retries it exactly as it would in AWS:

| kind | answer |
|---|---|
| TransactionConflict | TransactWriteItems: 400 TransactionCanceledException, one reason `TransactionConflict` |
| TransactionConflict | PutItem, UpdateItem, DeleteItem: 400 TransactionConflictException (a transaction holds it) |
| ThrottlingException, ProvisionedThroughputExceededException | DynamoDB: 400 (botocore retries: throttling) |
| InternalServerError, ServiceUnavailable | DynamoDB: 500 / 503 (botocore retries: transient) |
| PublishBatchFailed | SNS PublishBatch: 200 with every entry in `Failed` (nothing published) |
| Throttled | SNS: 429 `Throttled` (not retried by botocore) |
| RequestThrottled, InternalError | SQS: 400 / 500 |
| ReplyLost | any operation: moto executes the call (a write commits), then the connection is closed before the reply |

Rules are set by `saga local --aws-faults` and at run time through a small control API on the same
endpoint (the fault proxy's style): `GET /_saga/faults` (rules and what was injected), `POST` one
rule (JSON), `DELETE` to clear them. This module decides which calls get a fault; `aws_errors`
spells each answer as its service would."""

from __future__ import annotations

import contextlib
import io
import json
import random
import socket
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from werkzeug import Request

from saga.local import aws_errors
from saga.local.aws_errors import ERRORS, KINDS, SINGLE_ITEM_WRITES, Call

CONTROL_PATH = "/_saga/faults"
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


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
        if self.kind not in ERRORS:
            raise ValueError(f"unknown AWS fault kind {self.kind!r}; known: {', '.join(KINDS)}")
        if self.service not in ERRORS[self.kind][0]:
            raise ValueError(f"{self.kind} is not a fault of {self.service!r}")
        if self.kind == "TransactionConflict" and self.operation not in {"TransactWriteItems", *SINGLE_ITEM_WRITES}:
            raise ValueError("TransactionConflict is a fault of TransactWriteItems and of single-item writes")
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

    def _pick(self, call: Call) -> FaultRule | None:
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
            return self._control(environ, start_response)  # a HEAD as a GET: its server sends the head alone
        body = Request(environ).get_data()
        environ["wsgi.input"] = io.BytesIO(body)  # read once here, again by moto
        call = aws_errors.identify(environ, body)
        rule = None if call is None else self._pick(call)
        if call is None or rule is None:
            return self._app(environ, start_response)
        if rule.kind == "ReplyLost":
            return self._reply_lost(environ, start_response)
        return aws_errors.answer(call, rule.kind, self._random, start_response)

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
                self.add(FaultRule(**json.loads(Request(environ).get_data() or b"{}")))
            elif method == "DELETE":
                self.clear()
            elif method not in ("GET", "HEAD"):
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
