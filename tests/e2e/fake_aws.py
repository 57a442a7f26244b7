"""A "deployed stack" without an AWS account, for tests/e2e/test_mcp.py: CloudFormation's DescribeStacks
naming an orchestrator, and that orchestrator (the real app over fakes) behind API Gateway's IAM check."""

from __future__ import annotations

import os
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from shared import stack_outputs
from tests.fakes import InProcessOrchestrator

REGION = "eu-west-3"
STAGE = "/prod"
_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request, "
    r"SignedHeaders=(?P<signed>[^,]+), Signature=(?P<signature>[0-9a-f]{64})$"
)


class FakeAws(ThreadingHTTPServer):
    """CloudFormation's DescribeStacks (POST /) naming an orchestrator at /prod on this server, and that
    orchestrator (the real app over fakes) behind API Gateway's IAM check: a request whose SigV4
    Authorization is missing, or scoped to another service, region or key, is refused with 403."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _FakeAwsRequest)
        self.orchestrator = InProcessOrchestrator()
        self.api_requests: list[dict[str, Any]] = []  # what reached the API, with its parsed scope
        self.describe_stacks = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stacks_xml(self) -> str:
        outputs = {
            stack_outputs.OUTPUT_ORCHESTRATOR_URL: f"{self.url}{STAGE}/",
            stack_outputs.OUTPUT_LOANS_API_URL: f"{self.url}/loans/",
            stack_outputs.OUTPUT_LOANS_TABLE: "loans",
            stack_outputs.OUTPUT_JOURNEYS_TABLE: "journeys",
            stack_outputs.OUTPUT_EVENTS_QUEUE: f"{self.url}/q/events",
            stack_outputs.OUTPUT_EVENTS_DLQ: f"{self.url}/q/dlq",
            stack_outputs.OUTPUT_RELAY_FAILURES: f"{self.url}/q/relay",
        }
        members = "".join(
            f"<member><OutputKey>{key}</OutputKey><OutputValue>{value}</OutputValue></member>"
            for key, value in outputs.items()
        )
        return (
            '<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult>'
            "<Stacks><member><StackName>LoanSagaTest</StackName><StackStatus>CREATE_COMPLETE</StackStatus>"
            f"<CreationTime>2026-01-01T00:00:00Z</CreationTime><Outputs>{members}</Outputs></member></Stacks>"
            "</DescribeStacksResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>"
            "</DescribeStacksResponse>"
        )


class _FakeAwsRequest(BaseHTTPRequestHandler):
    server: FakeAws

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _answer(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _serve(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/" and parse_qs(body.decode()).get("Action") == ["DescribeStacks"]:
            self.server.describe_stacks += 1
            self._answer(200, self.server.stacks_xml().encode(), "text/xml")
            return
        scope = _AUTHORIZATION.match(self.headers.get("Authorization", ""))
        seen = {"path": self.path, "scope": scope.groupdict() if scope else None}
        seen["token"] = self.headers.get("X-Amz-Security-Token")
        self.server.api_requests.append(seen)
        if (
            scope is None
            or (scope["service"], scope["region"], scope["key"])
            != ("execute-api", REGION, os.environ["AWS_ACCESS_KEY_ID"])
            or not {"host", "x-amz-date"} <= set(scope["signed"].split(";"))
            or seen["token"] != os.environ["AWS_SESSION_TOKEN"]
            or not self.path.startswith(STAGE + "/")
        ):
            self._answer(403, b'{"message": "Missing Authentication Token"}', "application/json")
            return
        reply = self.server.orchestrator.wire.request(
            self.command, "http://api" + self.path.removeprefix(STAGE), body=body or None, headers=dict(self.headers)
        )
        headers = {k: v for k, v in reply.headers.items() if k.lower() not in ("content-type", "content-length")}
        self._answer(reply.status, reply.data, reply.headers.get("Content-Type", "application/json"), headers)

    do_GET = _serve
    do_POST = _serve
