"""The harness of tests/infra/test_entry_points.py: each function started from its definition in the
synthesized template (handler string, environment with the deploy-time references replaced by the local
resources that stand for them) in its own interpreter (tests/infra/lambda_container.py), against a moto
server; and the events its triggers send."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from functions.auditor.settings import AuditorSettings
from functions.consumer.settings import ConsumerSettings
from functions.loans_api.settings import LoansSettings
from functions.orchestrator.settings import OrchestratorSettings
from functions.relay.settings import RelaySettings
from infra import packaging
from saga.local.apigw import proxy_event
from saga.local.moto_server import MotoServer
from saga.local.resources import LocalResources
from shared.settings import BaseSettings
from shared.tables import JOURNEYS_TABLE, LOANS_TABLE
from tests.infra.lambda_container import STAGE_PATH
from tests.support import PROCESS_PATIENCE

REGION = "us-east-1"
SETTINGS: dict[str, type[BaseSettings]] = {
    "LoansApi": LoansSettings,
    "Orchestrator": OrchestratorSettings,
    "Relay": RelaySettings,
    "Sweeper": RelaySettings,
    "Consumer": ConsumerSettings,
    "Auditor": AuditorSettings,
}


def named(resources: dict[str, Any], kind: str, prefix: str) -> str:
    [name] = [k for k, v in resources.items() if v["Type"] == kind and k.startswith(prefix)]
    return name


def resolve(value: Any, refs: dict[str, str], resources: dict[str, Any]) -> str:
    """A template value with each reference replaced by the local stand-in of what it names."""
    if isinstance(value, str):
        return value
    if set(value) == {"Ref"}:
        return refs[value["Ref"]]
    parts = value["Fn::Join"][1]
    # The one composite value: an API's invoke URL, https://{api}.execute-api.{region}.{suffix}/{stage}
    assert [p if isinstance(p, str) else next(iter(p)) for p in parts] == [
        "https://", "Ref", ".execute-api.", "Ref", ".", "Ref", "/", "Ref"]  # fmt: skip
    api, stage = parts[1]["Ref"], parts[7]["Ref"]
    assert resources[stage]["Properties"]["RestApiId"] == {"Ref": api}
    assert f"/{resources[stage]['Properties']['StageName']}" == STAGE_PATH
    return refs[api]


def _as_lambda_json(value: object) -> float | str:
    """What Lambda's JSON events carry where boto3 gives objects: times as epoch seconds (a stream record's
    ApproximateCreationDateTime), binary attribute values base64-encoded (a receipt's compressed body)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    assert isinstance(value, datetime), value
    return value.timestamp()


@dataclass
class Container:
    """One function's interpreter; `invoke` has a handler's signature, so pollers can drive it."""

    name: str
    process: subprocess.Popen[str]
    calls_file: Path
    failures: list[str] = field(default_factory=list)
    # One interpreter serves one invocation at a time, as a Lambda container does: pollers that run batches
    # at once (the deployed concurrency) queue here.
    _serving: threading.Lock = field(default_factory=threading.Lock)

    def invoke(self, event: dict[str, Any], context: Any = None) -> Any:
        stdin, stdout = self._pipes()
        try:
            with self._serving:
                stdin.write(json.dumps(event, default=_as_lambda_json) + "\n")
                stdin.flush()
                answer = json.loads(stdout.readline())
        except (TypeError, ValueError, OSError, AssertionError) as error:  # a poller would swallow it: keep it
            self.failures.append(f"{type(error).__name__}: {error}")
            raise
        if "error" in answer:
            self.failures.append(answer["error"])
            raise RuntimeError(answer["error"])
        result = answer["result"]
        if isinstance(result, dict) and result.get("batchItemFailures"):
            self.failures.append(json.dumps(result))
        return result

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        return self.process.stdin, self.process.stdout

    def calls(self) -> list[dict[str, Any]]:
        if not self.calls_file.exists():
            return []
        return [json.loads(line) for line in self.calls_file.read_text().splitlines()]

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(timeout=PROCESS_PATIENCE)  # a hang guard (killed: it ends once the machine gets to it)


class Deployment:
    """Starts functions from the template's definitions, against one moto server."""

    def __init__(self, template: dict[str, Any], moto: MotoServer, local: LocalResources, tmp: Path) -> None:
        self.resources = template["Resources"]
        self.moto, self.local, self.tmp = moto, local, tmp
        self.refs = {
            named(self.resources, "AWS::DynamoDB::Table", f"Data{LOANS_TABLE.logical_id}"): local.loans_table,
            named(self.resources, "AWS::DynamoDB::Table", f"Data{JOURNEYS_TABLE.logical_id}"): local.journeys_table,
            named(self.resources, "AWS::SNS::Topic", "MessagingEventsTopic"): local.topic_arn,
        }
        self.settings: dict[str, BaseSettings] = {}

    def function(self, name: str) -> dict[str, Any]:
        return dict(self.resources[named(self.resources, "AWS::Lambda::Function", f"Functions{name}")]["Properties"])

    def environment(self, name: str) -> dict[str, str]:
        variables = self.function(name)["Environment"]["Variables"]
        return {key: resolve(value, self.refs, self.resources) for key, value in variables.items()}

    def start(self, name: str, serve: bool = False, overrides: dict[str, str] | None = None) -> Container:
        deployed = self.environment(name)
        environment = {
            **deployed,
            **(overrides or {}),
            # What the Lambda runtime sets, and the local endpoint in place of AWS's.
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ENDPOINT_URL": self.moto.url,
            "PATH": os.environ["PATH"],
            "PYTHONPATH": str(packaging.ROOT),
            "RECORD_CALLS_TO": str(self.tmp / f"{name}.calls"),
        }
        self.settings[name] = SETTINGS[name].from_env(environment)
        handler = self.function(name)["Handler"]
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.infra.lambda_container", handler, *(["--serve"] if serve else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=(self.tmp / f"{name}.log").open("w"),
            text=True, env=environment, cwd=packaging.ROOT,
        )  # fmt: skip
        return Container(name, process, self.tmp / f"{name}.calls")


def api_call(container: Container, method: str, path: str, body: Any = None, key: str | None = None) -> Any:
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    event = proxy_event(method, path, headers, None if body is None else json.dumps(body).encode(), stage="v1")
    return container.invoke(event)


def scheduled_event() -> dict[str, Any]:
    """What EventBridge's schedule sends a function."""
    return {"version": "0", "id": str(uuid.uuid4()), "detail-type": "Scheduled Event", "source": "aws.events",
            "account": "123456789012", "region": REGION, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "resources": [], "detail": {}}  # fmt: skip
