"""Reading the synthesized template (CloudFormation JSON) in the infra tests."""

from __future__ import annotations

from typing import Any


def of_type(resources: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in resources.items() if v["Type"] == kind}


def by_logical_prefix(resources: dict[str, Any], kind: str, prefix: str) -> dict[str, Any]:
    """The properties of the one resource of `kind` whose logical id starts with `prefix`."""
    [(_, found)] = [(k, v) for k, v in of_type(resources, kind).items() if k.startswith(prefix)]
    return dict(found["Properties"])


def stage_of(resources: dict[str, Any], api_prefix: str) -> dict[str, Any]:
    return by_logical_prefix(resources, "AWS::ApiGateway::Stage", api_prefix)


def scheduled_targets(resources: dict[str, Any]) -> list[dict[str, Any]]:
    """What the stack's schedules invoke, EventBridge rules' and EventBridge Scheduler's alike: each target's
    function (logical id), schedule expression, retry policy and input (None: the rule's scheduled event)."""
    found = [
        {
            "function": target["Arn"]["Fn::GetAtt"][0],
            "expression": rule["Properties"]["ScheduleExpression"],
            "retry": target["RetryPolicy"],
            "input": None,
        }
        for rule in of_type(resources, "AWS::Events::Rule").values()
        for target in rule["Properties"]["Targets"]
    ]
    for schedule in (s["Properties"] for s in of_type(resources, "AWS::Scheduler::Schedule").values()):
        target = schedule["Target"]
        found.append(
            {
                "function": target["Arn"]["Fn::GetAtt"][0],
                "expression": schedule["ScheduleExpression"],
                "retry": target["RetryPolicy"],
                "input": target["Input"],
            }
        )
    return found  # fmt: skip
