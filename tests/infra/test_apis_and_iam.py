"""Who may call what: both APIs behind IAM, loans-api open to the orchestrator's role alone, agents given
the orchestrator's API only, roles without wildcards or managed policies, stages that log and throttle
(from the session's synthesis, tests/infra/conftest.py)."""

from __future__ import annotations

import json
from typing import Any

from functions.orchestrator.settings import OrchestratorSettings
from tests.infra.template import by_logical_prefix, of_type, stage_of


def test_every_api_method_requires_iam_and_no_gateway_validator_answers_before_the_function(resources):
    # (a gateway validator's errors would not be problem documents: the functions validate, tests/integration)
    methods = of_type(resources, "AWS::ApiGateway::Method")
    assert len(methods) == 4
    for method in methods.values():
        assert method["Properties"]["AuthorizationType"] == "AWS_IAM"
        assert "RequestValidatorId" not in method["Properties"]
    assert not of_type(resources, "AWS::ApiGateway::RequestValidator")


def test_stages_log_access_and_errors_throttle_and_trace(resources):
    stages = of_type(resources, "AWS::ApiGateway::Stage")
    assert len(stages) == 2
    for stage in stages.values():
        properties = stage["Properties"]
        assert "DestinationArn" in properties["AccessLogSetting"]
        assert properties["TracingEnabled"] is True
        [settings] = properties["MethodSettings"]
        assert settings["LoggingLevel"] == "ERROR"
        assert settings["DataTraceEnabled"] is False
        # API Gateway's own error-log group exists first, so it expires like every other log
        [execution_logs] = [name for name in stage["DependsOn"] if "ExecutionLogs" in name]
        group = resources[execution_logs]["Properties"]
        assert "API-Gateway-Execution-Logs_" in json.dumps(group["LogGroupName"])
        assert group["RetentionInDays"] > 0


def test_loans_api_admits_every_retry_of_every_orchestrator_request(resources):
    orchestrator = stage_of(resources, "OrchestratorApi")["MethodSettings"][0]
    loans = stage_of(resources, "LoansApi")["MethodSettings"][0]
    attempts = OrchestratorSettings.model_fields["retry_attempts"].default
    assert loans["ThrottlingRateLimit"] >= orchestrator["ThrottlingRateLimit"] * attempts
    assert loans["ThrottlingBurstLimit"] >= orchestrator["ThrottlingBurstLimit"] * attempts


def test_each_api_has_its_own_name_so_its_metrics_are_its_own(resources):
    names_by_api = {prefix: by_logical_prefix(resources, "AWS::ApiGateway::RestApi", prefix)["Name"]
                    for prefix in ("OrchestratorApi", "LoansApi")}  # fmt: skip
    assert names_by_api == {"OrchestratorApi": "LoanSaga-orchestrator", "LoansApi": "LoanSaga-loans"}
    alarms = of_type(resources, "AWS::CloudWatch::Alarm").values()
    api_alarm_names = {json.dumps(a["Properties"]["Dimensions"]) for a in alarms if "ApiName" in json.dumps(a)}
    assert len(api_alarm_names) == 2


def role_arn(resources, prefix: str) -> dict[str, Any]:
    """The CloudFormation reference to the ARN of the one role whose logical id starts with `prefix`."""
    [name] = [name for name in of_type(resources, "AWS::IAM::Role") if name.startswith(prefix)]
    return {"Fn::GetAtt": [name, "Arn"]}


def test_loans_api_lets_in_the_orchestrator_everywhere_and_the_consumer_on_the_ledger_read_only(resources):
    orchestrator_role, consumer_role = (
        role_arn(resources, "FunctionsOrchestratorRole"),
        role_arn(resources, "FunctionsConsumerRole"),
    )
    policy = by_logical_prefix(resources, "AWS::ApiGateway::RestApi", "LoansApi")["Policy"]
    ledger = "execute-api:/*/GET/journeys/*/ledger"
    allow_orchestrator, allow_consumer, deny_others, deny_consumer_elsewhere = policy["Statement"]
    assert allow_orchestrator == {"Effect": "Allow", "Principal": {"AWS": orchestrator_role},
                                  "Action": "execute-api:Invoke", "Resource": "execute-api:/*"}  # fmt: skip
    assert allow_consumer == {"Effect": "Allow", "Principal": {"AWS": consumer_role},
                              "Action": "execute-api:Invoke", "Resource": ledger}  # fmt: skip
    admitted = [orchestrator_role, consumer_role]
    assert deny_others == {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "execute-api:Invoke",
                           "Resource": "execute-api:/*",
                           "Condition": {"StringNotEquals": {"aws:PrincipalArn": admitted}}}  # fmt: skip
    assert deny_consumer_elsewhere == {"Effect": "Deny", "Principal": {"AWS": consumer_role},
                                       "Action": "execute-api:Invoke", "NotResource": ledger}  # fmt: skip
    # the agent-facing API is opened by the managed policy an agent's role attaches, not by a resource policy
    assert "Policy" not in by_logical_prefix(resources, "AWS::ApiGateway::RestApi", "OrchestratorApi")


def account_setting(resources) -> tuple[str, dict[str, Any]]:
    [(name, setting)] = of_type(resources, "Custom::ApiGatewayAccountCloudWatchRole").items()
    return name, setting


def test_by_default_the_account_gets_api_gatewayss_logging_role_before_any_stage(resources):
    # Given the default stack: a custom resource that sets the account's role where none is set
    name, setting = account_setting(resources)
    # Then it offers a role API Gateway assumes, which may write logs and nothing else
    role = resources[setting["Properties"]["RoleArn"]["Fn::GetAtt"][0]]
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "apigateway.amazonaws.com"
    }
    [policy] = role["Properties"]["Policies"]
    [statement] = policy["PolicyDocument"]["Statement"]
    assert all(action.startswith("logs:") for action in statement["Action"])
    # And the role is always kept, a failed first deploy's too: the account's setting may name it by then
    assert (role["DeletionPolicy"], role["UpdateReplacePolicy"]) == ("Retain", "Retain")
    # And no stage is created before the account has its role
    for stage in of_type(resources, "AWS::ApiGateway::Stage").values():
        assert name in stage["DependsOn"]
    # And the setter may read and patch the account setting and pass that one role, nothing else
    setter = resources[setting["Properties"]["ServiceToken"]["Fn::GetAtt"][0]]
    setter_role = setter["Properties"]["Role"]["Fn::GetAtt"][0]
    [policy] = [
        p for p in of_type(resources, "AWS::IAM::Policy").values() if p["Properties"]["Roles"] == [{"Ref": setter_role}]
    ]
    actions = {a for s in policy["Properties"]["PolicyDocument"]["Statement"]
               for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])}  # fmt: skip
    assert actions == {
        "apigateway:GET",
        "apigateway:PATCH",
        "iam:PassRole",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
    }
    assert not of_type(resources, "AWS::ApiGateway::Account")  # (a CfnAccount would overwrite any role set)


def test_the_account_role_can_be_left_to_the_account(variant):
    # Given -c apiGatewayAccountRole=false (the variant synthesis): nothing touches the account setting
    assert not of_type(variant, "Custom::ApiGatewayAccountCloudWatchRole")
    assert not of_type(variant, "AWS::ApiGateway::Account")


def statements(resources) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name, resource in resources.items():
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            found += [(name, s) for s in resource["Properties"]["PolicyDocument"]["Statement"]]
    return found


def test_no_policy_grants_wildcard_actions(resources):
    for name, statement in statements(resources):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert all(action != "*" and not action.endswith(":*") for action in actions), (name, actions)


def test_the_orchestrator_may_invoke_loans_api_the_consumer_its_ledger_read_and_agents_only_the_orchestrator(
    resources,
):
    invokers = {
        name.split("Role")[0]: s["Resource"]
        for name, s in statements(resources)
        if "execute-api:Invoke" in json.dumps(s["Action"]) and "LoansApi" in json.dumps(s["Resource"])
    }
    assert sorted(invokers) == ["FunctionsConsumer", "FunctionsOrchestrator"]
    consumer = invokers["FunctionsConsumer"]
    # the consumer's identity policy names the ledger read alone: GET /journeys/*/ledger of the stage
    assert json.dumps(consumer).endswith('"/v1/GET/journeys/*/ledger"]]}'), consumer
    agent = by_logical_prefix(resources, "AWS::IAM::ManagedPolicy", "AgentInvokePolicy")
    [statement] = agent["PolicyDocument"]["Statement"]
    assert statement["Action"] == "execute-api:Invoke"
    assert "OrchestratorApi" in json.dumps(statement["Resource"])


def test_the_consumer_is_given_loans_apis_url_and_signs_its_ledger_reads(resources):
    consumer = by_logical_prefix(resources, "AWS::Lambda::Function", "FunctionsConsumer")
    variables = consumer["Environment"]["Variables"]
    assert variables["SIGN_LOANS_REQUESTS"] == "true"
    assert "LoansApi" in json.dumps(variables["LOANS_API_URL"])


def test_roles_write_only_their_own_logs_without_managed_policies(resources):
    for role in of_type(resources, "AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role["Properties"]
