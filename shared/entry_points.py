"""Each function's Lambda entry point (the `Handler` of its deployed function), in one place: infra
deploys them, and the local runtime invokes the very same ones in its containers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# The shape of every entry point: Lambda's event and context in, the function's answer out.
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

LOANS_API = "functions.loans_api.handler.lambda_handler"
ORCHESTRATOR = "functions.orchestrator.handler.lambda_handler"
BEDROCK_EXECUTOR = "functions.orchestrator.handler.bedrock_handler"
RELAY = "functions.relay.handler.lambda_handler"
SWEEPER = "functions.relay.handler.sweeper_handler"
CONSUMER = "functions.consumer.handler.lambda_handler"
AUDITOR = "functions.auditor.handler.lambda_handler"
