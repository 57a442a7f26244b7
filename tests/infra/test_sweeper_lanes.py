"""The sweeper's lanes as deployed (infra/event_sources.py, docs/ARCHITECTURE.md D7), synthesized at 20 (the
default), 1,000, 10,000 (the variant) and 100,000 journeys/s: a schedule per lane, each naming its lane
once; the lane count the sweeper is told is the schedules'; only the lanes' role may invoke it, on its ARN
alone; the silence alarm counts every lane; cdk-nag stays clean (each synthesis runs it)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Template

from shared.capacity import derive
from tests.infra.conftest import synth
from tests.infra.template import of_type

# CloudFormation declares at most 500 resources in a stack's template (its quotas page).
MAX_RESOURCES = 500


@pytest.fixture(scope="module")
def at_rate(tmp_path_factory, resources, variant) -> dict[int, dict[str, Any]]:
    """The stack's resources at each target: the session's two syntheses, and two more."""
    found = {20: resources, 10_000: variant}
    for rate in (1_000, 100_000):
        _, stack = synth(tmp_path_factory.mktemp(f"cdk.out.{rate}"), targetJourneysPerSecond=str(rate))
        found[rate] = dict(Template.from_stack(stack).to_json()["Resources"])
    return found


def sweeper_id(resources: dict[str, Any]) -> str:
    [logical_id] = [k for k in of_type(resources, "AWS::Lambda::Function") if k.startswith("FunctionsSweeper")]
    return logical_id


@pytest.mark.parametrize("rate", [20, 1_000, 10_000, 100_000])
def test_each_lane_has_one_schedule_naming_it_and_the_sweeper_is_told_the_count(at_rate, rate):
    # Given the stack sized for `rate`
    resources, lanes = at_rate[rate], derive(rate).sweeper_lanes
    schedules = [s["Properties"] for s in of_type(resources, "AWS::Scheduler::Schedule").values()]
    # Then each lane 0 .. n-1 is named by exactly one schedule, every minute, never retried
    named = sorted(json.loads(s["Target"]["Input"])["lane"] for s in schedules)
    assert named == list(range(lanes)), f"at {rate}/s, {lanes} lanes: the schedules name {named}"
    for schedule in schedules:
        assert schedule["ScheduleExpression"] == "rate(1 minute)", schedule
        assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}, schedule
        assert schedule["Target"]["RetryPolicy"] == {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60}
        assert schedule["Target"]["Arn"] == {"Fn::GetAtt": [sweeper_id(resources), "Arn"]}, schedule
    # And the sweeper walks its partitions with that lane count (and the shards loans-api writes)
    env = of_type(resources, "AWS::Lambda::Function")[sweeper_id(resources)]["Properties"]["Environment"]["Variables"]
    assert (env["SWEEP_LANES"], env["CHANGES_INDEX_SHARDS"]) == (str(lanes), str(derive(rate).changes_index_shards))
    # And no EventBridge rule drives the sweeper any more (a bus holds 300 rules: fewer than 100,000's lanes)
    rules = [r for r in of_type(resources, "AWS::Events::Rule").values()
             if r["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [sweeper_id(resources), "Arn"]}]  # fmt: skip
    assert rules == [], rules
    # And the template stays within CloudFormation's resources per stack
    assert len(resources) < MAX_RESOURCES, f"{len(resources)} resources at {rate}/s ({lanes} lanes)"


@pytest.mark.parametrize("rate", [20, 100_000])
def test_only_the_lanes_role_may_invoke_the_sweeper_and_only_it(at_rate, rate):
    resources = at_rate[rate]
    schedules = [s["Properties"] for s in of_type(resources, "AWS::Scheduler::Schedule").values()]
    [role_id] = {s["Target"]["RoleArn"]["Fn::GetAtt"][0] for s in schedules}
    role = of_type(resources, "AWS::IAM::Role")[role_id]["Properties"]
    # The role is Scheduler's, from this account only (a confused deputy cannot borrow it)
    [trust] = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}, trust
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}, trust
    # And it may do one thing: invoke the sweeper, by its ARN (no version wildcard)
    statements = [st for p in of_type(resources, "AWS::IAM::Policy").values()
                  if {"Ref": role_id} in p["Properties"]["Roles"]
                  for st in p["Properties"]["PolicyDocument"]["Statement"]]  # fmt: skip
    assert statements == [{"Action": "lambda:InvokeFunction", "Effect": "Allow",
                           "Resource": {"Fn::GetAtt": [sweeper_id(resources), "Arn"]}}], statements  # fmt: skip
    assert "ManagedPolicyArns" not in role, role


@pytest.mark.parametrize("rate", [20, 1_000, 100_000])
def test_every_lane_is_in_the_group_whose_attempts_the_silence_alarm_counts(at_rate, rate):
    resources = at_rate[rate]
    [group] = [g["Properties"]["Name"] for g in of_type(resources, "AWS::Scheduler::ScheduleGroup").values()]
    groups = {s["Properties"]["GroupName"] for s in of_type(resources, "AWS::Scheduler::Schedule").values()}
    assert groups == {group}, f"lanes in {groups}, the alarm counts {group}"
    [silent] = [a["Properties"] for k, a in of_type(resources, "AWS::CloudWatch::Alarm").items()
                if k.startswith("ObservabilitySweeperSilent")]  # fmt: skip
    [fired] = [m["MetricStat"]["Metric"] for m in silent["Metrics"] if m["Id"] == "fired"]
    assert fired["Dimensions"] == [{"Name": "ScheduleGroup", "Value": group}], fired
