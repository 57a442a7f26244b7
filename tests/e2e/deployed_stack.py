"""A "deployed stack" on this machine, for tests/e2e/test_verify.py: the local runtime (the real
functions, moto as AWS) behind API Gateway's IAM check, and a CloudFormation stack on the same moto
endpoint holding what `cdk deploy` would make around it: the layer and the six functions, the two
event source mappings, log groups, the alarm topic and an alarm, the dashboard; the outputs name the
runtime's APIs, tables and queues. `StackSpec` says how this stack differs from a sound one."""

from __future__ import annotations

import base64
import io
import json
import time
import zipfile
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import urllib3

from saga.local.resources import LocalResources
from shared import metric_names as names
from shared import stack_outputs as keys
from shared.capacity import DEFAULT_CAPACITY
from shared.keys import EVENT_PREFIX
from tests.e2e.fake_aws import _AUTHORIZATION

REGION = "us-east-1"
STAGE = "/v1"
SERVICES = (names.ORCHESTRATOR, names.LOANS_API, names.RELAY, names.SWEEPER, names.CONSUMER, names.AUDITOR)
# The orchestrator role's key: the only signer loans-api's resource policy lets in. Nobody here has it.
ORCHESTRATOR_KEY = "ORCHESTRATOR-ROLE-KEY"


class IamGateway(ThreadingHTTPServer):
    """API Gateway's IAM check in front of one local API: a request not signed with SigV4 for
    execute-api in this region, or by a key the API does not admit, is answered 403; the others
    reach the API (its stage prefix removed). `open` lets every request through (a broken stack)."""

    daemon_threads = True

    def __init__(self, upstream: str, admitted: set[str]) -> None:
        super().__init__(("127.0.0.1", 0), _GatewayRequest)
        self.upstream, self.admitted, self.open = upstream, admitted, False
        self.pool = urllib3.PoolManager(timeout=urllib3.Timeout(connect=2, read=60), retries=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{STAGE}/"


class _GatewayRequest(BaseHTTPRequestHandler):
    server: IamGateway

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _serve(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        scope = _AUTHORIZATION.match(self.headers.get("Authorization", ""))
        signed = scope is not None and (scope["service"], scope["region"]) == ("execute-api", REGION)
        if not self.server.open and not (signed and scope and scope["key"] in self.server.admitted):
            data, status, kind = b'{"message": "Forbidden"}', 403, "application/json"
        else:
            reply = self.server.pool.request(self.command, self.server.upstream + self.path.removeprefix(STAGE),
                                             body=body or None, headers=dict(self.headers))  # fmt: skip
            data, status, kind = reply.data, reply.status, reply.headers.get("Content-Type", "application/json")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _serve
    do_POST = _serve


@dataclass(frozen=True)
class StackSpec:
    """How the stack differs from a sound one."""

    name: str
    architecture: str = "arm64"
    relay_mapping_enabled: bool = True
    extra_metric_service: str | None = None  # a dashboard metric under a dimension nothing writes
    # A metric written only on occurrence (IdempotentReplays) that this service wrote: a command was retried
    replayed_by: str | None = None
    consumer_concurrency: int = DEFAULT_CAPACITY.consumer_max_concurrency
    bedrock_executor_architecture: str | None = None  # deployed with `-c bedrockAgent=true`, on this architecture


def _zip(text: str) -> str:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("python/placeholder.py", text)
    return base64.b64encode(buffer.getvalue()).decode()


def template(spec: StackSpec, resources: LocalResources, apis: dict[str, str], queue_arn: str) -> dict[str, Any]:
    """The stack's resources as CloudFormation declares them, and its outputs."""
    role = {"Type": "AWS::IAM::Role", "Properties": {"RoleName": f"{spec.name}-role", "AssumeRolePolicyDocument": {
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "lambda.amazonaws.com"}}]}}}  # fmt: skip
    body: dict[str, Any] = {
        "Role": role,
        "Dependencies": {"Type": "AWS::Lambda::LayerVersion", "Properties": {
            "Content": {"ZipFile": _zip("")}, "CompatibleRuntimes": ["python3.14"],
            "CompatibleArchitectures": ["arm64"]}},
        "AlarmTopic": {"Type": "AWS::SNS::Topic", "Properties": {}},
    }  # fmt: skip
    optional = (
        {names.BEDROCK_EXECUTOR: spec.bedrock_executor_architecture} if spec.bedrock_executor_architecture else {}
    )
    for service in (*SERVICES, *optional):
        logical = service.title().replace("-", "")
        function_name = f"{spec.name}-{service}"
        body[logical] = {"Type": "AWS::Lambda::Function", "Properties": {
            "FunctionName": function_name, "Runtime": "python3.14", "Handler": "index.handler",
            "Architectures": [optional.get(service) or (spec.architecture if service == names.RELAY else "arm64")],
            "Role": {"Fn::GetAtt": ["Role", "Arn"]}, "Code": {"ZipFile": "def handler(event, context):\n  pass\n"},
            "Layers": [{"Ref": "Dependencies"}],
            "Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": service}}}}  # fmt: skip
        body[f"{logical}Logs"] = {"Type": "AWS::Logs::LogGroup", "Properties": {
            "LogGroupName": f"/aws/lambda/{function_name}", "RetentionInDays": 90}}  # fmt: skip
    outbox_inserts = {"eventName": ["INSERT"], "dynamodb": {"Keys": {"sk": {"S": [{"prefix": EVENT_PREFIX}]}}}}
    body["RelayMapping"] = {"Type": "AWS::Lambda::EventSourceMapping", "DependsOn": "Relay", "Properties": {
        "FunctionName": f"{spec.name}-relay", "EventSourceArn": resources.loans_stream_arn,
        "StartingPosition": "TRIM_HORIZON", "Enabled": spec.relay_mapping_enabled,
        "FilterCriteria": {"Filters": [{"Pattern": json.dumps(outbox_inserts)}]}}}  # fmt: skip
    body["ConsumerMapping"] = {"Type": "AWS::Lambda::EventSourceMapping", "DependsOn": "Consumer", "Properties": {
        "FunctionName": f"{spec.name}-consumer", "EventSourceArn": queue_arn, "BatchSize": 10,
        "ScalingConfig": {"MaximumConcurrency": spec.consumer_concurrency}}}  # fmt: skip
    outputs = {
        keys.OUTPUT_ORCHESTRATOR_URL: apis["orchestrator"], keys.OUTPUT_LOANS_API_URL: apis["loans-api"],
        keys.OUTPUT_LOANS_TABLE: resources.loans_table, keys.OUTPUT_JOURNEYS_TABLE: resources.journeys_table,
        keys.OUTPUT_EVENTS_QUEUE: resources.events_queue_url, keys.OUTPUT_EVENTS_DLQ: resources.events_dlq_url,
        keys.OUTPUT_RELAY_FAILURES: resources.relay_failures_url, keys.OUTPUT_DASHBOARD: f"{spec.name}-dashboard",
    }  # fmt: skip
    return {
        "Resources": body,
        "Outputs": {
            **{key: {"Value": value} for key, value in outputs.items()},
            keys.OUTPUT_ALARM_TOPIC: {"Value": {"Ref": "AlarmTopic"}},
        },
    }


def dashboard(spec: StackSpec, resources: LocalResources) -> dict[str, Any]:
    """A dashboard in CloudWatch's body format: saga metrics, AWS metrics, a math expression's inputs,
    a "." row, and metrics written only on occurrence."""
    dlq = resources.events_dlq_url.rsplit("/", 1)[1]
    own = names.stack_namespace(spec.name)  # each stack's own namespace (infra/observability.py)
    rows: list[list[Any]] = [
        [own, names.OLDEST_PENDING_OUTBOX_AGE_SECONDS, "service", names.SWEEPER, {"stat": "Maximum"}],
        [own, names.EVENTS_APPLIED, "service", names.CONSUMER],
        [".", names.EVENTS_FAILED, ".", "."],
        [{"expression": "FILL(relay, 0) + FILL(sweeper, 0)", "label": "publish failures"}],
        [own, names.PUBLISH_FAILURES, "service", names.RELAY, {"id": "relay", "visible": False}],
        [own, names.IDEMPOTENT_REPLAYS, "service", names.LOANS_API],
        [own, names.IDEMPOTENT_REPLAYS, "service", names.ORCHESTRATOR],
        ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", dlq],
    ]
    rows += [["AWS/Lambda", metric, "FunctionName", f"{spec.name}-{service}"]
             for service in SERVICES for metric in ("Errors", "Throttles")]  # fmt: skip
    if spec.extra_metric_service:
        rows.append([own, names.EVENTS_PUBLISHED, "service", spec.extra_metric_service])
    return {"widgets": [{"type": "metric", "properties": {"metrics": rows, "region": REGION}}]}


def deploy(spec: StackSpec, resources: LocalResources, apis: dict[str, str]) -> None:
    """The stack on the local endpoint, its dashboard, its functions' cold starts in their logs, and the
    metrics CloudWatch would have from them (each written except those written only on occurrence)."""
    endpoint = resources.endpoint_url
    sqs = boto3.client("sqs", region_name=REGION, endpoint_url=endpoint)
    queue_arn = sqs.get_queue_attributes(QueueUrl=resources.events_queue_url, AttributeNames=["QueueArn"])
    cloudformation = boto3.client("cloudformation", region_name=REGION, endpoint_url=endpoint)
    body = template(spec, resources, apis, queue_arn["Attributes"]["QueueArn"])
    cloudformation.create_stack(StackName=spec.name, TemplateBody=json.dumps(body))
    cloudwatch = boto3.client("cloudwatch", region_name=REGION, endpoint_url=endpoint)
    topic = cloudformation.describe_stacks(StackName=spec.name)["Stacks"][0]["Outputs"]
    topic_arn = next(o["OutputValue"] for o in topic if o["OutputKey"] == keys.OUTPUT_ALARM_TOPIC)
    cloudwatch.put_metric_alarm(  # moto's CloudFormation has no alarms: named as CloudFormation names them
        AlarmName=f"{spec.name}-ObservabilityEventsDlqNotEmpty-1A2B3C", Namespace="AWS/SQS",
        MetricName="ApproximateNumberOfMessagesVisible", Statistic="Maximum", Period=60, EvaluationPeriods=1,
        Threshold=0, ComparisonOperator="GreaterThanThreshold", AlarmActions=[topic_arn], OKActions=[topic_arn],
    )  # fmt: skip
    board = dashboard(spec, resources)
    cloudwatch.put_dashboard(DashboardName=f"{spec.name}-dashboard", DashboardBody=json.dumps(board))
    for row in board["widgets"][0]["properties"]["metrics"]:
        values = [value for value in row if not isinstance(value, dict)]
        if (
            len(values) < 4
            or "." in values
            or values[1] in names.ON_OCCURRENCE
            or values[3] == spec.extra_metric_service
        ):
            continue
        cloudwatch.put_metric_data(Namespace=values[0], MetricData=[{
            "MetricName": values[1], "Value": 0, "Dimensions": [{"Name": values[2], "Value": values[3]}]}])  # fmt: skip
    if spec.replayed_by:
        cloudwatch.put_metric_data(Namespace=names.stack_namespace(spec.name), MetricData=[{
            "MetricName": names.IDEMPOTENT_REPLAYS, "Value": 1,
            "Dimensions": [{"Name": "service", "Value": spec.replayed_by}]}])  # fmt: skip
    logs = boto3.client("logs", region_name=REGION, endpoint_url=endpoint)
    for service in SERVICES:
        group = f"/aws/lambda/{spec.name}-{service}"
        logs.create_log_stream(logGroupName=group, logStreamName="cold")
        logs.put_log_events(logGroupName=group, logStreamName="cold", logEvents=[{
            "timestamp": int(time.time() * 1000),
            "message": "REPORT RequestId: 1 Duration: 12.00 ms Billed Duration: 13 ms Memory Size: 256 MB "
                       "Max Memory Used: 90 MB Init Duration: 512.34 ms"}])  # fmt: skip
