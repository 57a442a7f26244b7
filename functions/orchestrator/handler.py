"""Lambda entries for the orchestrator (API Gateway's, and Bedrock Agents' action-group executor: the same
operations, in Bedrock's event format): its composition roots behind the shell every entry wears."""

from __future__ import annotations

from aws_lambda_powertools.logging import correlation_paths

from functions.orchestrator import bootstrap
from functions.orchestrator.settings import OrchestratorSettings
from shared.lambda_entry import LambdaEntry

lambda_handler = LambdaEntry(OrchestratorSettings, bootstrap.build, correlation_paths.API_GATEWAY_REST)
bedrock_handler = LambdaEntry(OrchestratorSettings, bootstrap.build_bedrock, "sessionId", name="bedrock_handler")
