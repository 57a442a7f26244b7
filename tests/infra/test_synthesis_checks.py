"""What synthesis itself checks, and what it packages: every cdk-nag acknowledgement silences a real
finding and an unacknowledged one fails synthesis, cfn-lint passes, and the code asset holds the handlers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from infra import packaging
from shared import entry_points
from tests.infra.conftest import synth


def test_every_nag_acknowledgement_silences_a_finding_raised_on_the_construct_it_is_attached_to(tmp_path, monkeypatch):
    # Given the stack (with the account role: every acknowledgement is made) whose acknowledgements are
    # recorded instead of made
    acknowledged: set[tuple[str, str]] = set()
    real_of = cdk.Validations.of

    class Recorded:
        def __init__(self, scope: Any) -> None:
            self.scope, self.real = scope, real_of(scope)

        def acknowledge(self, *acknowledgments: Any) -> None:
            acknowledged.update((self.scope.node.path, a.id) for a in acknowledgments)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

    monkeypatch.setattr(cdk.Validations, "of", Recorded)
    # When it is synthesized
    with pytest.raises(Exception, match="ValidationFailed") as failed:
        synth(tmp_path, apiGatewayAccountRole="true")
    # Then what fails synthesis is exactly what the stack acknowledges: each acknowledgement silences a finding
    # on the construct it is attached to (its own resources: its path, or below it), and nothing else is found
    raised = findings(str(failed.value))
    assert acknowledged
    for path, rule in sorted(acknowledged):
        assert any(known == rule and within(found, path) for found, known in raised), (path, rule)
    for found, rule in sorted(raised):
        assert any(known == rule and within(found, path) for path, known in acknowledged), (found, rule)


def findings(failure: str) -> set[tuple[str, str]]:
    """(construct path, acknowledgement id) of every finding in the validation report a failed synthesis names."""
    [report_path] = re.findall(r"found in: (\S+)", failure)
    report = json.loads(Path(report_path).read_text())
    return {
        (construct["constructPath"], f"{plugin['pluginName']}::{violation['ruleName']}")
        for plugin in report["pluginReports"]
        for violation in plugin["violations"]
        for construct in violation["violatingConstructs"]
    }


def within(path: str, construct: str) -> bool:
    return path == construct or path.startswith(construct + "/")


def test_cfn_lint_finds_nothing_in_the_template(synthesized):
    _, out = synthesized
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    # Run from the project root, where .cfnlintrc.yaml lists (and explains) the ignored rules.
    done = subprocess.run([str(cfn_lint), str(out / "LoanSaga.template.json")], capture_output=True, text=True,
                          check=False, cwd=packaging.ROOT)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_asset_holds_every_handler_importable_from_it_and_no_bytecode(tmp_path):
    # Given the code asset as local bundling lays it out, and every function's entry point
    packaging.copy_app(tmp_path)
    assert not list(tmp_path.rglob("*.pyc"))
    handlers = sorted(value for name, value in vars(entry_points).items() if name.isupper())
    assert len(handlers) == 7  # the six functions, and the Bedrock executor (`-c bedrockAgent=true`)
    # When a fresh interpreter imports every handler from the asset alone (dependencies from the venv),
    # writing no bytecode into it
    code = (
        f"import importlib, sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
        f"for handler in {handlers!r}:\n"
        "    name, function = handler.rsplit('.', 1)\n"
        "    module = importlib.import_module(name)\n"
        f"    assert module.__file__.startswith({str(tmp_path)!r}), module.__file__\n"
        "    assert callable(getattr(module, function)), handler\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True, check=False, cwd="/")
    # Then each one imports, from the asset
    assert done.stdout.strip() == "ok", done.stderr


def test_cdk_nag_fails_synthesis_on_an_unacknowledged_finding(tmp_path):
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_sqs as sqs

    from app import build_app

    # Given the stack plus one queue that breaks the AWS Solutions rules (no DLQ, no SSL, no encryption)
    app, stack = build_app(cdk.App(outdir=str(tmp_path), context={"skipBundling": "true"}))
    sqs.Queue(stack, "Careless", encryption=sqs.QueueEncryption.UNENCRYPTED)
    # And one role with a wildcard resource (the finding the functions' roles acknowledge for X-Ray)
    careless_role = iam.Role(stack, "CarelessRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    careless_role.add_to_policy(iam.PolicyStatement(actions=["dynamodb:GetItem"], resources=["*"]))
    # When it is synthesized, Then synthesis fails and names the rules
    with pytest.raises(Exception, match="ValidationFailed") as failed:
        app.synth()
    # (an acknowledgement scoped to other constructs covers neither)
    for rule in ("AwsSolutions-SQS2", "AwsSolutions-SQS3", "AwsSolutions-SQS4", "AwsSolutions-IAM5"):
        assert rule in str(failed.value)
    assert "LoanSaga/Careless" in str(failed.value)
    assert "LoanSaga/CarelessRole" in str(failed.value)
