"""The account and the stack as configured: API Gateway's logging role, Lambda's concurrency, each
function (state, runtime, architecture, layer, cold start from its logs), the two event source
mappings and the log groups' retention."""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING, Any

from saga.verify.checks import SERVICES, Check, Deployment, Failed
from shared import metric_names as names
from shared.keys import EVENT_PREFIX

if TYPE_CHECKING:
    from mypy_boto3_lambda.type_defs import (
        EventSourceMappingConfigurationTypeDef,
        FunctionConfigurationResponseTypeDef,
    )

# How far back a function's logs are searched for its cold starts.
INIT_LOOKBACK_SECONDS = 24 * 3600
# The layer's wheels are manylinux aarch64 (infra/packaging.py): Graviton only.
ARCHITECTURE = "arm64"
_INIT = re.compile(r'(?:"initDurationMs"\s*:\s*|Init Duration: )([0-9.]+)')


APIGATEWAY = "apigateway.amazonaws.com"


def logging_role(deployment: Deployment) -> str:
    """Both stages log: API Gateway refuses stage logging until the account names a CloudWatch role
    (docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html), and logs nothing through
    a role it cannot assume. So IAM is asked: the role the account names exists, and its trust policy
    lets API Gateway assume it (an ARN left behind by a deleted role logs nothing)."""
    arn = deployment.apigateway.get_account().get("cloudwatchRoleArn")
    if not arn:
        raise Failed("the account's API Gateway settings name no CloudWatch Logs role (cloudwatchRoleArn)")
    name = arn.rsplit("/", 1)[-1]
    try:
        role = deployment.iam.get_role(RoleName=name)["Role"]
    except deployment.iam.exceptions.NoSuchEntityException:
        raise Failed(f"API Gateway's CloudWatch Logs role {arn} does not exist (deleted since it was set)") from None
    # botocore decodes the (URL-encoded JSON) document into a dict; an endpoint may leave it a string
    trust: Any = role.get("AssumeRolePolicyDocument", {})
    if not api_gateway_may_assume(trust if isinstance(trust, dict) else json.loads(trust)):
        raise Failed(f"API Gateway's CloudWatch Logs role {arn} does not let {APIGATEWAY} assume it: {trust}")
    return f"API Gateway logs through {arn} (it exists, and API Gateway may assume it)"


def api_gateway_may_assume(trust: dict[str, Any]) -> bool:
    """A trust policy allows sts:AssumeRole to API Gateway's service principal, and denies it no statement."""

    def listed(value: Any) -> list[Any]:
        return value if isinstance(value, list) else [value]

    def matches(statement: dict[str, Any]) -> bool:
        actions = listed(statement.get("Action", []))
        principal = statement.get("Principal", {})
        services = listed(principal.get("Service", [])) if isinstance(principal, dict) else []
        everyone = principal == "*" or (isinstance(principal, dict) and "*" in listed(principal.get("AWS", [])))
        return bool({"sts:AssumeRole", "sts:*", "*"} & set(actions)) and (APIGATEWAY in services or everyone)

    statements = listed(trust.get("Statement", []))
    if any(s.get("Effect") == "Deny" and matches(s) for s in statements):
        return False
    return any(s.get("Effect") == "Allow" and matches(s) for s in statements)


def concurrency(deployment: Deployment) -> str:
    """What the account leaves unreserved runs the stack: one of each function at once, or the deployment
    cannot work at all. The consumer scales as far as its mapping lets it (MaximumConcurrency:
    docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html); an account too small for that peak
    (a new account's quota of 10) still runs the stack, and Lambda throttles at a full backlog: said, not
    failed (the stack is built to deploy and run in such an account, tests/infra/test_deploy_rules.py)."""
    limit = deployment.lambda_.get_account_settings()["AccountLimit"]
    total, unreserved = limit["ConcurrentExecutions"], limit["UnreservedConcurrentExecutions"]
    mappings = _mappings(deployment, names.CONSUMER)
    scale = max((m.get("ScalingConfig", {}).get("MaximumConcurrency", 1) for m in mappings), default=1)
    least, peak = len(SERVICES), scale + len(SERVICES) - 1
    seen = f"account limit {total}, unreserved {unreserved}"
    if unreserved < least:
        raise Failed(f"{seen}: the stack needs at least {least} at once, one for each function "
                     "(reservations elsewhere in the account take the rest)")  # fmt: skip
    if unreserved < peak:
        return (f"{seen}: enough to run; at a full backlog the stack may ask for {peak} (the consumer's mapping "
                f"scales to {scale}) and Lambda throttles the rest: raise the quota before production "
                "traffic")  # fmt: skip
    return f"{seen}; the stack needs up to {peak}"


def _mappings(deployment: Deployment, service: str) -> list[EventSourceMappingConfigurationTypeDef]:
    """The event source mappings of the stack's function for `service` (none when it has no such function)."""
    fn = deployment.functions.get(service)
    if fn is None:
        return []
    pages = deployment.lambda_.get_paginator("list_event_source_mappings").paginate(FunctionName=fn["FunctionName"])
    return [mapping for page in pages for mapping in page["EventSourceMappings"]]


def _layer_build(deployment: Deployment) -> tuple[set[str], str, str]:
    """The stack's dependencies layer(s), and the runtime and architecture its wheels are built for
    (infra/functions.py: the functions must run on exactly those)."""
    layers = {r.physical_id for r in deployment.of_type("AWS::Lambda::LayerVersion")}
    if not layers:
        raise Failed("the stack has no dependencies layer")
    name, version = sorted(layers)[0].rsplit(":", 2)[-2:]  # arn:aws:lambda:REGION:ACCOUNT:layer:NAME:VERSION
    layer = deployment.lambda_.get_layer_version(LayerName=name, VersionNumber=int(version))
    runtimes, architectures = layer.get("CompatibleRuntimes", []), layer.get("CompatibleArchitectures", [])
    if len(runtimes) != 1 or architectures != [ARCHITECTURE]:
        raise Failed(f"the layer is built for {runtimes} on {architectures}, not one runtime on {ARCHITECTURE}")
    return layers, runtimes[0], ARCHITECTURE


def functions(deployment: Deployment) -> str:
    """Each function Active and last updated successfully, on the runtime and architecture its layer
    is built for, with that layer; its cold starts (REPORT lines' Init Duration) read from its logs."""
    layers, runtime, architecture = _layer_build(deployment)
    found = deployment.functions
    problems = [f"{service}: not in the stack" for service in SERVICES if service not in found]
    seen = []
    for service, fn in found.items():
        wrong = []
        if fn.get("State") != "Active" or fn.get("LastUpdateStatus") != "Successful":
            wrong.append(f"state {fn.get('State')}, last update {fn.get('LastUpdateStatus')}")
        if fn.get("Runtime") != runtime:
            wrong.append(f"runtime {fn.get('Runtime')} (expected {runtime})")
        if fn.get("Architectures", ["x86_64"]) != [architecture]:
            wrong.append(f"architecture {','.join(fn.get('Architectures', ['x86_64']))} (expected {architecture})")
        if not layers & {layer["Arn"] for layer in fn.get("Layers", [])}:
            wrong.append("not on the stack's dependencies layer")
        problems += [f"{service}: {', '.join(wrong)}"] if wrong else []
        seen.append(f"{service} {_cold_starts(deployment, fn)}")
    if problems:
        raise Failed("; ".join(problems))
    return f"{len(found)} functions Active on {runtime} {architecture} with the layer; init " + ", ".join(seen)


def _cold_starts(deployment: Deployment, fn: FunctionConfigurationResponseTypeDef) -> str:
    """The slowest Init Duration the function's REPORT lines show over the lookback, and how many: a
    text REPORT line's `Init Duration: N ms`, or a JSON platform.report's `initDurationMs`
    (docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-advanced.html)."""
    logging = fn.get("LoggingConfig", {})
    group = logging.get("LogGroup") or f"/aws/lambda/{fn['FunctionName']}"
    pattern = '"initDurationMs"' if logging.get("LogFormat") == "JSON" else '"Init Duration"'
    start = int((time.time() - INIT_LOOKBACK_SECONDS) * 1000)
    pages = deployment.logs.get_paginator("filter_log_events").paginate(
        logGroupName=group, startTime=start, filterPattern=pattern, PaginationConfig={"MaxItems": 100}
    )
    messages = [event.get("message", "") for page in pages for event in page["events"]]
    durations = [float(m[1]) for message in messages if (m := _INIT.search(message))]
    return f"max {max(durations):.0f} ms of {len(durations)}" if durations else "(no cold start logged in 24 h)"


def event_sources(deployment: Deployment) -> str:
    """The stream feeds the relay through the outbox-inserts filter; the events queue feeds the consumer."""
    found = deployment.functions
    queue_arn = deployment.sqs.get_queue_attributes(
        QueueUrl=deployment.target.events_queue_url, AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    problems, seen = [], []
    for service, source, wanted in ((names.RELAY, "the loans table's stream", _is_stream),
                                    (names.CONSUMER, "the events queue", lambda arn: arn == queue_arn)):  # fmt: skip
        if service not in found:
            problems.append(f"{service}: no such function")
            continue
        mapping = next((m for m in _mappings(deployment, service) if wanted(m.get("EventSourceArn", ""))), None)
        if mapping is None:
            problems.append(f"{service}: no mapping from {source}")
        elif mapping.get("State") != "Enabled":
            problems.append(f"{service}: the mapping from {source} is {mapping.get('State')}")
        elif service == names.RELAY and not _outbox_inserts_only(mapping):
            problems.append(f"{service}: the mapping from {source} lacks the outbox-inserts filter")
        else:
            filters = len(mapping.get("FilterCriteria", {}).get("Filters", []))
            seen.append(f"{source} -> {service} Enabled ({filters} filter(s))")
    if problems:
        raise Failed("; ".join(problems))
    return "; ".join(seen)


def _is_stream(arn: str) -> bool:
    return ":dynamodb:" in arn and "/stream/" in arn


def _outbox_inserts_only(mapping: Any) -> bool:
    """The relay's filter (infra/event_sources.py): INSERTs of outbox event items only."""
    for item in mapping.get("FilterCriteria", {}).get("Filters", []):
        pattern = json.loads(item.get("Pattern", "{}"))
        keys = pattern.get("dynamodb", {}).get("Keys", {})
        if pattern.get("eventName") == ["INSERT"] and keys.get("sk", {}).get("S") == [{"prefix": EVENT_PREFIX}]:
            return True
    return False


def log_retention(deployment: Deployment) -> str:
    """Every log group of the stack and of its functions expires its events."""
    groups = {r.physical_id for r in deployment.of_type("AWS::Logs::LogGroup")}
    groups |= {fn.get("LoggingConfig", {}).get("LogGroup") or f"/aws/lambda/{fn['FunctionName']}"
               for fn in deployment.functions.values()}  # fmt: skip
    logs = deployment.logs
    problems = []
    for group in sorted(groups):
        described = logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]
        match = next((g for g in described if g["logGroupName"] == group), None)
        if match is None:
            problems.append(f"{group} does not exist")
        elif not match.get("retentionInDays"):
            problems.append(f"{group} keeps its events forever")
    if problems:
        raise Failed("; ".join(problems))
    return f"{len(groups)} log groups, each with a retention"


CHECKS = [
    Check("api-gateway-logging-role", logging_role,
          "deploy with the default account-role handling (not `-c apiGatewayAccountRole=false`), or set a role "
          "that exists and trusts apigateway.amazonaws.com (AmazonAPIGatewayPushToCloudWatchLogs attached): "
          "`aws apigateway update-account --patch-operations op=replace,path=/cloudwatchRoleArn,value=ROLE_ARN`"),
    Check("lambda-concurrency", concurrency,
          "free reserved concurrency in the account, ask for a higher quota (Service Quotas: Lambda, "
          "Concurrent executions), or deploy with a lower -c targetJourneysPerSecond (the consumer's scaling)"),
    Check("functions", functions,
          "redeploy with `npx cdk deploy` from this checkout; a function stuck Pending/Failed names why in "
          "`aws lambda get-function-configuration`"),
    Check("event-source-mappings", event_sources,
          "`aws lambda update-event-source-mapping --uuid UUID --enabled`, or redeploy to restore its filter"),
]  # fmt: skip
LOG_RETENTION = Check(
    "log-retention", log_retention,
    "redeploy (the stack sets every retention), or `aws logs put-retention-policy --log-group-name NAME "
    "--retention-in-days 90`",
)  # fmt: skip
