"""Upgrading a stack deployed before the sharded journey-changes index (docs/DEPLOY.md, "Upgrade"). A
GSI's key cannot be changed in place, and CloudFormation creates or deletes one index per table update: the
old index (keyed by `type`) is deleted by a deploy with `-c journeyChangesIndex=false`, and the next plain
deploy creates the new one. These synthesize the data construct alone (fast), and app.py's flag reaches it."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from infra.data import DataTables
from shared import tables
from tests.infra.template import by_logical_prefix


def loans_table(table: str = "DataLoansTable", **kwargs: Any) -> dict[str, Any]:
    app = cdk.App()
    stack = cdk.Stack(app, "Upgrade")
    DataTables(stack, "Data", removal=cdk.RemovalPolicy.RETAIN, **kwargs)
    resources = dict(Template.from_stack(stack).to_json()["Resources"])
    found: dict[str, Any] = by_logical_prefix(resources, "AWS::DynamoDB::Table", table)
    return found


def test_the_first_deploy_also_leaves_out_the_customer_index_whose_sort_key_and_name_changed():
    # A stack deployed with `customer-journeys` (by journeyId) cannot swap it for the index by creation time in
    # one update (that deletes one index and creates another): the first deploy deletes it, the next creates
    # the new one, as for the journey-changes index
    journeys = loans_table("DataJourneysTable", changes_index=False)
    assert "GlobalSecondaryIndexes" not in journeys, f"indexes: {journeys.get('GlobalSecondaryIndexes')}"
    indexes = loans_table("DataJourneysTable")["GlobalSecondaryIndexes"]
    assert [i["IndexName"] for i in indexes] == [tables.CUSTOMER_INDEX], indexes


def test_without_the_changes_index_the_loans_table_has_no_index_and_no_index_attribute():
    loans = loans_table(changes_index=False)
    assert "GlobalSecondaryIndexes" not in loans, f"indexes: {loans.get('GlobalSecondaryIndexes')}"
    defined = {a["AttributeName"] for a in loans["AttributeDefinitions"]}
    assert defined == {"pk", "sk"}, f"attribute definitions: {defined}"


def test_by_default_the_loans_table_has_the_sharded_changes_index():
    loans = loans_table()
    assert [i["IndexName"] for i in loans["GlobalSecondaryIndexes"]] == [tables.CHANGES_INDEX]


def test_cdk_deploy_with_journey_changes_index_false_deploys_the_loans_table_without_it():
    from app import build_app

    _, stack = build_app(cdk.App(context={"skipBundling": "true", "journeyChangesIndex": "false"}))
    resources = dict(Template.from_stack(stack).to_json()["Resources"])
    loans = by_logical_prefix(resources, "AWS::DynamoDB::Table", "DataLoansTable")
    assert "GlobalSecondaryIndexes" not in loans, f"indexes: {loans.get('GlobalSecondaryIndexes')}"
