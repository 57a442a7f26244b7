"""The stack's CloudFormation output keys: infra/stack.py writes them, and the operator CLI (saga/ops/,
saga/verify/) finds a deployed system through them."""

from __future__ import annotations

OUTPUT_ORCHESTRATOR_URL = "OrchestratorApiUrl"
OUTPUT_LOANS_API_URL = "LoansApiUrl"
OUTPUT_LOANS_TABLE = "LoansTableName"
OUTPUT_JOURNEYS_TABLE = "JourneysTableName"
OUTPUT_EVENTS_TOPIC = "EventsTopicArn"
OUTPUT_EVENTS_QUEUE = "EventsQueueUrl"
OUTPUT_EVENTS_DLQ = "EventsDlqUrl"
OUTPUT_RELAY_FAILURES = "RelayFailuresQueueUrl"
OUTPUT_AGENT_POLICY = "AgentInvokePolicyArn"
OUTPUT_DLQ_REDRIVE_ROLE = "DlqRedriveRoleArn"
OUTPUT_DASHBOARD = "DashboardName"
OUTPUT_ALARM_TOPIC = "AlarmTopicArn"
# Only with `-c bedrockAgent=true` (infra/bedrock.py).
OUTPUT_EXECUTOR_ARN = "BedrockExecutorArn"
OUTPUT_AGENT_ROLE = "BedrockAgentRoleArn"
