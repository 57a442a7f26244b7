"""One synthesis of the stack per session (and one of its variant), shared by every infra test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template


def synth(tmp: Path, **context: str) -> tuple[cdk.App, Any]:
    from app import build_app

    app = cdk.App(outdir=str(tmp), context={"skipBundling": "true", **context})
    app, stack = build_app(app)
    app.synth()  # runs cdk-nag: raises on any unacknowledged finding
    return app, stack


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory) -> tuple[Template, Path]:
    out = tmp_path_factory.mktemp("cdk.out")
    _, stack = synth(out)
    return Template.from_stack(stack), out


@pytest.fixture(scope="session")
def variant_template(tmp_path_factory) -> dict[str, Any]:
    """The second (and last) synthesis: every context flag set the other way."""
    _, stack = synth(tmp_path_factory.mktemp("cdk.out.variant"), dev="true", stackName="LoanSagaDev",
                     apiGatewayAccountRole="false", alarmEmail="ops@example.com",
                     targetJourneysPerSecond="10000", bedrockAgent="true")  # fmt: skip
    return dict(Template.from_stack(stack).to_json())


@pytest.fixture(scope="session")
def variant(variant_template) -> dict[str, Any]:
    return dict(variant_template["Resources"])


@pytest.fixture(scope="session")
def template(synthesized) -> Template:
    found: Template = synthesized[0]
    return found


@pytest.fixture(scope="session")
def resources(template) -> dict[str, Any]:
    return dict(template.to_json()["Resources"])
