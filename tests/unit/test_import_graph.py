"""The cold start's import graph: a handler module imports neither boto3's s3transfer nor the
X-Ray SDK, and the tracer still records the handler and its AWS calls when tracing is on. Nor does it
import the typed clients' stubs: those are dev dependencies, for the type checker only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.support import PROCESS_PATIENCE

HANDLERS = [f"functions.{name}.handler" for name in ("orchestrator", "loans_api", "relay", "consumer", "auditor")]
# Powertools' parser models too: no function parses with them, and the batch utility imports them (the relay's
# cold start paid for them) whenever pydantic is loaded before it.
# And uuid6: the ids are minted with it only where the standard library has no uuid7 (shared/event_ids.py), at
# the first id, not at init. Nor the stack's table and queue specs: a function needs only the keys (shared/keys.py).
KEPT_OUT = ("boto3", "s3transfer", "aws_xray_sdk", "aws_lambda_powertools.utilities.parser", "uuid6", "shared.tables")
STUBS_PREFIX = "mypy_boto3"  # mypy-boto3-dynamodb & co. (botocore-stubs is stubs only: nothing to import)


def _run(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("LAMBDA_TASK_ROOT", "POWERTOOLS_TRACE_DISABLED")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**clean, "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", **env},
        capture_output=True,
        text=True,
        timeout=PROCESS_PATIENCE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _kept_out_loaded(module: str) -> list[str]:
    """What a fresh interpreter has loaded, of what a handler must not load, once it imported `module`."""
    code = (
        f"import sys, json, {module}; print(json.dumps(sorted(m for m in sys.modules"
        f" if m in {KEPT_OUT!r} or m.startswith({STUBS_PREFIX!r}))))"
    )
    loaded: list[str] = json.loads(_run(code))
    return loaded


def test_the_guard_sees_a_module_that_imports_boto3_or_a_stub() -> None:
    # Given the check the handlers go through, When a module that imports boto3 (or a typed client's
    # stub module) is checked, Then it is reported (so an empty answer below means the modules are
    # clean, not a blind check)
    assert _kept_out_loaded("boto3.dynamodb.types") == ["boto3", "s3transfer"]
    assert STUBS_PREFIX + "_dynamodb" in _kept_out_loaded("mypy_boto3_dynamodb")


@pytest.mark.parametrize("module", HANDLERS)
def test_a_handler_module_imports_neither_boto3_s3transfer_the_xray_sdk_nor_a_stub(module: str) -> None:
    # Given a fresh interpreter, When it imports the handler module (as Lambda's init does),
    # Then none of boto3, s3transfer, aws_xray_sdk, nor any typed-client stub module is loaded
    assert _kept_out_loaded(module) == []


def test_tracing_on_records_the_handler_and_its_dynamodb_call_with_the_sdk_imported_at_first_call() -> None:
    # Given Lambda's environment with active tracing (a sampled trace header) and a traced handler
    # that makes one DynamoDB call (answered by botocore's Stubber)
    out = _run(
        """
        import json, sys
        from botocore.stub import Stubber
        from shared import aws
        from shared.tracing import LazyTracer

        tracer = LazyTracer()
        client = aws.client("dynamodb", "us-east-1", None)
        stub = Stubber(client)
        stub.add_response("get_item", {})
        stub.activate()

        @tracer.capture_lambda_handler
        def handler(event, context):
            client.get_item(TableName="journeys", Key={"pk": {"S": "j1"}})
            return {"ok": True}

        before = "aws_xray_sdk" in sys.modules
        from aws_xray_sdk.core import xray_recorder

        class CapturingEmitter:
            daemon_address = "127.0.0.1:2000"
            sent = []
            def send_entity(self, entity):
                self.sent.append(json.loads(entity.serialize()))
            def set_daemon_address(self, address):
                pass

        emitter = CapturingEmitter()
        xray_recorder.configure(emitter=emitter)
        handler({}, None)
        names = [(e["name"], e.get("namespace")) for e in emitter.sent]
        names += [(s["name"], s.get("namespace")) for e in emitter.sent for s in e.get("subsegments", [])]
        print(json.dumps({"before": before, "names": names}))
        """,
        LAMBDA_TASK_ROOT="/var/task",
        POWERTOOLS_TRACE_DISABLED="false",
        _X_AMZN_TRACE_ID="Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
    )
    seen = json.loads(out.strip().splitlines()[-1])
    # Then the SDK was not imported by the module, and the emitter got the handler's subsegment and
    # the DynamoDB call's AWS subsegment
    assert seen["before"] is False
    names = {tuple(n) for n in seen["names"]}
    assert ("## handler", "local") in names, names
    assert any(name.lower() == "dynamodb" and ns == "aws" for name, ns in names), names
