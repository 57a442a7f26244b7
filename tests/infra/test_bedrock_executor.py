"""Amazon Bedrock Agents' action-group executor in the template: absent by default, and with
`-c bedrockAgent=true` (the variant synthesis) a function running the orchestrator's code under the
orchestrator's own role, invocable by Bedrock for this account's agents only, with its outputs. Both
syntheses pass cdk-nag (tests/infra/conftest.py `synth` raises on any finding)."""

from __future__ import annotations

import json
from typing import Any

from shared import entry_points
from shared.stack_outputs import OUTPUT_AGENT_ROLE, OUTPUT_EXECUTOR_ARN
from tests.infra.template import of_type


def executors(resources: dict[str, Any]) -> dict[str, Any]:
    return {
        name: fn
        for name, fn in of_type(resources, "AWS::Lambda::Function").items()
        if fn["Properties"]["Handler"] == entry_points.BEDROCK_EXECUTOR
    }


def orchestrator_of(resources: dict[str, Any]) -> Any:
    [fn] = [
        fn
        for fn in of_type(resources, "AWS::Lambda::Function").values()
        if fn["Properties"]["Handler"] == entry_points.ORCHESTRATOR
    ]
    return fn


def test_by_default_there_is_no_bedrock_executor(template, resources):
    # Given the default synthesis
    # Then no function runs the executor, nothing may be invoked by Bedrock, and no output names one
    assert executors(resources) == {}
    principals = [p["Properties"]["Principal"] for p in of_type(resources, "AWS::Lambda::Permission").values()]
    assert "bedrock.amazonaws.com" not in principals
    outputs = template.to_json()["Outputs"]
    assert OUTPUT_EXECUTOR_ARN not in outputs
    assert OUTPUT_AGENT_ROLE not in outputs


def test_with_the_flag_the_executor_is_the_orchestrators_code_under_its_role(variant, variant_template):
    # Given `-c bedrockAgent=true`
    [(name, executor)] = executors(variant).items()
    orchestrator = orchestrator_of(variant)["Properties"]
    props = executor["Properties"]
    # Then it runs with the orchestrator's role (its table calls, loans-api's invoke; nothing else) and
    # the orchestrator's settings
    assert props["Role"] == orchestrator["Role"]
    env, orchestrator_env = props["Environment"]["Variables"], orchestrator["Environment"]["Variables"]
    for setting in ("JOURNEYS_TABLE_NAME", "LOANS_API_URL", "SIGN_LOANS_REQUESTS"):
        assert env[setting] == orchestrator_env[setting]
    assert (props["Timeout"], props["MemorySize"], props["Code"]) == (
        orchestrator["Timeout"],
        orchestrator["MemorySize"],
        orchestrator["Code"],
    )
    assert props["TracingConfig"] == {"Mode": "Active"}
    # and only Bedrock may invoke it, for an agent of this account
    [permission] = [
        p["Properties"]
        for p in of_type(variant, "AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "bedrock.amazonaws.com"
    ]
    assert permission["FunctionName"] == {"Fn::GetAtt": [name, "Arn"]}
    assert permission["Action"] == "lambda:InvokeFunction"
    assert permission["SourceAccount"] == {"Ref": "AWS::AccountId"}
    assert ":agent/*" in str(permission["SourceArn"])
    # and the stack's outputs name it and the agent's service role
    outputs = variant_template["Outputs"]
    assert outputs[OUTPUT_EXECUTOR_ARN]["Value"] == {"Fn::GetAtt": [name, "Arn"]}
    assert OUTPUT_AGENT_ROLE in outputs


def test_the_agents_role_may_only_invoke_models_and_only_bedrock_may_assume_it(variant):
    # Given the agent's service role
    [role] = [
        r["Properties"]
        for r in of_type(variant, "AWS::IAM::Role").values()
        if r["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"].get("Service")
        == "bedrock.amazonaws.com"
    ]
    [trust] = role["AssumeRolePolicyDocument"]["Statement"]
    # Then Bedrock assumes it for this account's agents only
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert ":agent/*" in str(trust["Condition"]["ArnLike"]["aws:SourceArn"])
    # and it may invoke a model directly or through a system or application inference profile, and read a
    # profile, as AWS's inference-profile prerequisites list (and nothing else)
    [policy] = [
        p["Properties"]["PolicyDocument"]
        for p in of_type(variant, "AWS::IAM::Policy").values()
        if any("bedrock:InvokeModel" in str(s["Action"]) for s in p["Properties"]["PolicyDocument"]["Statement"])
    ]
    granted = {statement["Action"]: json.dumps(statement["Resource"]) for statement in policy["Statement"]}
    assert set(granted) == {"bedrock:InvokeModel*", "bedrock:GetInferenceProfile"}, granted
    invoke, read = granted["bedrock:InvokeModel*"], granted["bedrock:GetInferenceProfile"]
    for kind in (":inference-profile/*", ":application-inference-profile/*"):
        assert kind in invoke, (kind, invoke)
        assert kind in read, (kind, read)
    assert "::foundation-model/*" in invoke, invoke
    assert "foundation-model" not in read, read
