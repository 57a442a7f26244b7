"""`saga verify` reads the deployed stack, not a list of its own: what it expects must be what the
synthesized template builds (from the session's synthesis, tests/infra/conftest.py). The dashboard body
it parses (in CloudWatch's format, as CDK writes it) charts every metric an alarm reads; the relay's
filter is the one it asks for; the layer and the functions are on the architecture it checks; the
outputs it reads are there."""

from __future__ import annotations

import json
from typing import Any

from saga.verify import configuration, signals
from shared import metric_names as names
from shared import stack_outputs
from tests.infra.template import of_type


def _resolved(value: Any) -> str:
    """A template value as a string, each CloudFormation token replaced by a name of its own."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::GetAtt" in value:
        return f"<{'.'.join(value['Fn::GetAtt'])}>"
    separator, parts = value["Fn::Join"]
    return str(separator).join(_resolved(part) for part in parts)


def _alarm_metrics(alarm: dict[str, Any]) -> list[signals.Metric]:
    """The metrics an alarm reads: its own, or its math expression's inputs."""
    stats = (
        [alarm] if "MetricName" in alarm else [m["MetricStat"]["Metric"] for m in alarm["Metrics"] if "MetricStat" in m]
    )
    return [(m["Namespace"], m["MetricName"],
             tuple(sorted((d["Name"], _resolved(d["Value"])) for d in m.get("Dimensions", []))))
            for m in stats]  # fmt: skip


def test_the_dashboard_verify_parses_charts_every_metric_an_alarm_reads(resources):
    # Given the dashboard body as deployed (its tokens named) and the alarms
    [dashboard] = of_type(resources, "AWS::CloudWatch::Dashboard").values()
    body = json.loads(_resolved(dashboard["Properties"]["DashboardBody"]))
    # When verify reads the metrics off the body
    charted = set(signals.dashboard_metrics(body))
    # Then each metric any alarm reads is among them, with the same dimensions
    alarmed = {m for alarm in of_type(resources, "AWS::CloudWatch::Alarm").values()
               for m in _alarm_metrics(alarm["Properties"])}  # fmt: skip
    assert len(alarmed) > 20, alarmed
    assert alarmed <= charted, alarmed - charted
    # and the saga's own metrics are charted per service (the dimension its functions write)
    saga = {(name, dimensions) for namespace, name, dimensions in charted
            if namespace == names.stack_namespace("LoanSaga")}  # fmt: skip
    assert (names.PUBLISH_FAILURES, (("service", names.SWEEPER),)) in saga  # a math expression's input
    assert all(len(dimensions) == 1 and dimensions[0][0] == "service" for _, dimensions in saga)


def test_the_relay_mapping_has_the_filter_verify_asks_for_and_the_consumer_none(resources):
    mappings = of_type(resources, "AWS::Lambda::EventSourceMapping").values()
    filtered = [m["Properties"] for m in mappings if "FilterCriteria" in m["Properties"]]
    assert len(list(mappings)) == 2
    assert len(filtered) == 1
    assert configuration._outbox_inserts_only(filtered[0])


def test_the_layer_and_every_function_are_on_the_architecture_verify_checks(resources):
    [layer] = of_type(resources, "AWS::Lambda::LayerVersion").values()
    assert layer["Properties"]["CompatibleArchitectures"] == [configuration.ARCHITECTURE]
    assert len(layer["Properties"]["CompatibleRuntimes"]) == 1
    every = [f["Properties"] for f in of_type(resources, "AWS::Lambda::Function").values()]
    functions = [f for f in every if f.get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME")]
    assert len(functions) == 6
    for fn in functions:
        assert fn["Architectures"] == [configuration.ARCHITECTURE]
        assert fn["Runtime"] == layer["Properties"]["CompatibleRuntimes"][0]


def test_the_outputs_verify_reads_are_there(template):
    outputs = template.to_json()["Outputs"]
    assert {stack_outputs.OUTPUT_DASHBOARD, stack_outputs.OUTPUT_ALARM_TOPIC} <= set(outputs)


def _custom_metrics_read(resources: dict[str, Any]) -> set[signals.Metric]:
    """Every metric outside AWS's namespaces that the stack's alarms or dashboard widgets read."""
    [dashboard] = of_type(resources, "AWS::CloudWatch::Dashboard").values()
    read = set(signals.dashboard_metrics(json.loads(_resolved(dashboard["Properties"]["DashboardBody"]))))
    read |= {m for alarm in of_type(resources, "AWS::CloudWatch::Alarm").values()
             for m in _alarm_metrics(alarm["Properties"])}  # fmt: skip
    return {m for m in read if not m[0].startswith("AWS/")}


def _custom_metrics_written(resources: dict[str, Any]) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """(namespace, dimensions) of every metric the stack's functions may write: Powertools writes each in
    the function's POWERTOOLS_METRICS_NAMESPACE with its POWERTOOLS_SERVICE_NAME as `service`."""
    written: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for function in of_type(resources, "AWS::Lambda::Function").values():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        if "POWERTOOLS_METRICS_NAMESPACE" in variables:
            service = (("service", variables["POWERTOOLS_SERVICE_NAME"]),)
            written.add((variables["POWERTOOLS_METRICS_NAMESPACE"], service))
    return written


def test_two_stacks_in_one_account_read_no_custom_metric_the_other_writes(resources, variant):
    # Given two stacks of one account (LoanSaga, and LoanSagaDev with every flag flipped)
    stacks = {"LoanSaga": resources, "LoanSagaDev": variant}
    read = {name: _custom_metrics_read(found) for name, found in stacks.items()}
    written = {name: _custom_metrics_written(found) for name, found in stacks.items()}
    for name, other in (("LoanSaga", "LoanSagaDev"), ("LoanSagaDev", "LoanSaga")):
        # Then each reads custom metrics, every one in its own namespace, written by one of its own functions
        assert len(read[name]) > 10, (name, read[name])
        own = {(namespace, dimensions) for namespace, _, dimensions in read[name]}
        assert own <= written[name], (name, sorted(own - written[name]))
        # and none that the other stack's functions write (same namespace and dimensions)
        crossing = sorted(m for m in read[name] if (m[0], m[2]) in written[other])
        assert not crossing, (f"{name} reads what {other} writes", crossing)
