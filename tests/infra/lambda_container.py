"""One Lambda function in its own interpreter, as a Lambda container holds it: only the environment it is
given, the handler named by its `module.function` string, invoked with one event at a time.

Run as `python -m tests.infra.lambda_container HANDLER [--serve]`. Without --serve it reads one JSON event
per line on stdin and answers one JSON line on stdout ({"result": ...} or {"error": ...}); with --serve it
is the function behind an API Gateway REST proxy on 127.0.0.1 (it prints the port first), as the stage
`STAGE_PATH` of the invoke URL. Every AWS call the function makes is appended to $RECORD_CALLS_TO."""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, TextIO

from saga.local.apigw import LambdaContextStub, http_response, proxy_event
from shared import aws

Handler = Callable[[dict[str, Any], Any], Any]
STAGE_PATH = "/v1"


def _what(params: dict[str, Any]) -> dict[str, Any]:
    """The parts of a request that name what it acts on (what an IAM policy's resources match)."""
    seen: dict[str, Any] = {key: params[key] for key in ("TableName", "IndexName", "TopicArn") if key in params}
    if "RequestItems" in params:
        seen["RequestItems"] = sorted(params["RequestItems"])
    if "TransactItems" in params:
        seen["TransactItems"] = [
            [kind, body["TableName"]] for item in params["TransactItems"] for kind, body in item.items()
        ]
    return seen


def record_calls(path: str) -> None:
    """Append every AWS call of the clients made from now on to `path`, through botocore's event hooks on
    the one session the functions' clients come from (shared/aws.py)."""

    def recording(**event: Any) -> None:  # botocore passes params=, model=, context=...
        params, model = event["params"], event["model"]
        with open(path, "a") as calls:
            service = model.service_model.service_name
            calls.write(json.dumps({"service": service, "operation": model.name, **_what(params)}) + "\n")

    aws.session().register("provide-client-params", recording)


def load(handler: str) -> Handler:
    module, function = handler.rsplit(".", 1)
    found: Handler = getattr(importlib.import_module(module), function)
    return found


def invoke_lines(handler: Handler, name: str, lines: TextIO, answers: TextIO) -> None:
    for line in lines:
        try:
            answer = {"result": handler(json.loads(line), LambdaContextStub(name))}
        except Exception as error:  # the invoker sees a function error, as Lambda's would
            answer = {"error": f"{type(error).__name__}: {error}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def serve(handler: Handler, name: str, answers: TextIO) -> None:
    class ProxyIntegration(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            path = self.path.removeprefix(STAGE_PATH) or "/"
            event = proxy_event(self.command, path, dict(self.headers.items()), body, stage=STAGE_PATH.strip("/"))
            response = http_response(handler(event, LambdaContextStub(name)))
            self.send_response(response.status)
            for header, value in response.headers.items():
                self.send_header(header, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)

        do_GET = do_POST = do_PUT = do_DELETE = _any

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads this process's stdout."""

    # One request at a time, as one Lambda container serves them.
    server = HTTPServer(("127.0.0.1", 0), ProxyIntegration)
    answers.write(f"{server.server_port}\n")
    answers.flush()
    server.serve_forever()


def main(argv: list[str]) -> None:
    handler_name, *flags = argv
    # The protocol owns stdout; what the function prints (logs, EMF metrics) goes to stderr.
    answers, sys.stdout = sys.stdout, sys.stderr
    record_calls(os.environ["RECORD_CALLS_TO"])
    handler = load(handler_name)
    name = os.environ["POWERTOOLS_SERVICE_NAME"]
    if "--serve" in flags:
        serve(handler, name, answers)
    else:
        invoke_lines(handler, name, sys.stdin, answers)


if __name__ == "__main__":
    main(sys.argv[1:])
