"""The local runtime runs what deploys: the synthesized stack (the session's one synthesis) and the local
runtime's containers and pollers both equal shared/topology.py, function by function and event source
by event source, and the CLI's threshold is the alarm's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from saga import cli
from saga.local.containers import ContainerPool
from saga.local.runtime import events_poller, function_pool, relay_stream_poller
from shared import topology
from shared.keys import EVENT_PREFIX, event_sk
from shared.topology import Function
from tests.infra.template import of_type, scheduled_targets

PER_FUNCTION = sorted(topology.FUNCTIONS.values(), key=lambda f: f.service)


def _deployed_function(resources: dict[str, Any], declared: Function) -> tuple[str, dict[str, Any]]:
    [(logical_id, found)] = [
        (k, v)
        for k, v in of_type(resources, "AWS::Lambda::Function").items()
        if k.startswith(f"Functions{declared.construct_id}")
    ]
    return logical_id, dict(found["Properties"])


def _mapping(resources: dict[str, Any], declared: Function) -> dict[str, Any]:
    logical_id, _ = _deployed_function(resources, declared)
    [found] = [
        m["Properties"]
        for m in of_type(resources, "AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": logical_id}
    ]
    return dict(found)


@pytest.fixture
def local_pool(request: pytest.FixtureRequest) -> Iterator[ContainerPool]:
    declared: Function = request.param
    # (no container starts: a pool starts its processes at its first invocation)
    pool = function_pool(declared, declared.settings().model_construct(), max_containers=1)
    yield pool
    pool.stop()


@pytest.mark.parametrize("local_pool", PER_FUNCTION, ids=lambda f: f.service, indirect=True)
def test_each_local_container_runs_the_deployed_functions_entry_point_timeout_and_memory(resources, local_pool):
    # Given a function the topology declares, When infra deploys it and the local runtime starts its pool
    declared = topology.FUNCTIONS[local_pool.name]
    _, deployed = _deployed_function(resources, declared)
    # Then both run the same entry point within the same timeout, and the stack gives it the declared memory
    assert (deployed["Handler"], deployed["Timeout"]) == (declared.entry_point, declared.timeout_seconds)
    assert (local_pool.entry, local_pool.function_timeout) == (deployed["Handler"], deployed["Timeout"])
    assert deployed["MemorySize"] == declared.memory_mb


@pytest.mark.parametrize("declared", PER_FUNCTION, ids=lambda f: f.service)
def test_each_deployed_functions_environment_is_its_settings(resources, declared):
    # Given a deployed function, When its environment is read, Then every variable but Powertools' (and pydantic's) is a
    # field of the Settings class the topology names (what the local runtime builds the container's from)
    _, deployed = _deployed_function(resources, declared)
    variables = set(deployed["Environment"]["Variables"])
    fields = {name.upper() for name in declared.settings().model_fields}
    assert variables - set(topology.powertools_environment(declared.service)) <= fields
    assert variables - fields == set(topology.powertools_environment(declared.service))


def _matches(pattern: dict[str, Any], record: dict[str, Any]) -> bool:
    """An event source filter pattern (equality lists and `prefix`, what the relay's uses) on a record:
    https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html#filtering-syntax."""
    for key, wanted in pattern.items():
        value = record.get(key)
        if isinstance(wanted, dict):
            if not isinstance(value, dict) or not _matches(wanted, value):
                return False
        elif not any(
            (rule == value) if not isinstance(rule, dict) else str(value).startswith(rule["prefix"]) for rule in wanted
        ):
            return False
    return True


STREAM_RECORDS: list[dict[str, Any]] = [
    {"eventName": name, "dynamodb": {"Keys": {"pk": {"S": "JOURNEY#j"}, "sk": {"S": sk}}}}
    for name in ("INSERT", "MODIFY", "REMOVE")
    for sk in (event_sk(1), "LEDGER", "RECEIPT", "SIMULATION#s")
]


def test_the_local_stream_poller_batches_retries_bisects_and_filters_as_the_deployed_mapping(resources):
    # Given the relay's deployed event source mapping and the local runtime's stream poller
    deployed = _mapping(resources, topology.RELAY)
    local = relay_stream_poller(None, "arn:stream", lambda event, context: {}, lambda failure: None)  # type: ignore[arg-type]
    # Then they batch, retry and bisect alike (retries: the attempts after the first, on both sides)
    assert (deployed["BatchSize"], deployed["MaximumRetryAttempts"], deployed["BisectBatchOnFunctionError"]) == (
        local.batch_size,
        local.max_retries,
        local.bisect_on_error,
    )
    assert (local.batch_size, local.max_retries) == (topology.RELAY_STREAM.batch_size, topology.RELAY_STREAM.retries)
    # And they drop records of the same age, and run as many batches of a shard at once
    assert (deployed["MaximumRecordAgeInSeconds"], deployed["ParallelizationFactor"]) == (
        local.max_record_age_seconds,
        local.parallelization_factor,
    )
    assert (local.max_record_age_seconds, local.parallelization_factor) == (
        3600 * topology.RELAY_STREAM.max_record_age_hours,
        topology.RELAY_STREAM.parallelization_factor,
    )
    # And they pass the same records to the relay: outbox event INSERTs only
    [pattern] = [json.loads(f["Pattern"]) for f in deployed["FilterCriteria"]["Filters"]]
    assert local.admits is not None
    admitted = [r for r in STREAM_RECORDS if local.admits(r)]
    assert admitted == [r for r in STREAM_RECORDS if _matches(pattern, r)]
    assert [(r["eventName"], r["dynamodb"]["Keys"]["sk"]["S"]) for r in admitted] == [("INSERT", event_sk(1))]
    assert topology.RELAY_STREAM.sort_key_prefix == EVENT_PREFIX


def test_the_local_queue_poller_takes_the_deployed_mappings_batches(resources):
    # Given the consumer's deployed event source mapping and the local runtime's queue poller
    deployed = _mapping(resources, topology.CONSUMER)
    local = events_poller(None, "url", "arn:queue", lambda event, context: {}, None)  # type: ignore[arg-type]
    # Then they take the same batches, as many at once, and the deployed one reports partial batch failures
    # as the consumer does
    assert deployed["BatchSize"] == local.batch_size == topology.EVENTS_QUEUE_SOURCE.batch_size
    concurrency = deployed["ScalingConfig"]["MaximumConcurrency"]
    assert concurrency == local.max_concurrency == topology.EVENTS_QUEUE_SOURCE.max_concurrency
    assert deployed["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_the_events_queue_outlasts_six_consumer_timeouts(resources):
    # Given the deployed consumer and events queue (the local runtime provisions the same QueueSpec)
    _, consumer = _deployed_function(resources, topology.CONSUMER)
    queues = of_type(resources, "AWS::SQS::Queue").items()
    [queue] = [q["Properties"] for k, q in queues if k.startswith("MessagingEvents") and "Dlq" not in k]
    # Then a message is not received again while its batch may still be running
    assert queue["VisibilityTimeout"] == topology.EVENTS_QUEUE_VISIBILITY_SECONDS == 6 * consumer["Timeout"]


@pytest.mark.parametrize("declared", [topology.SWEEPER, topology.AUDITOR], ids=lambda f: f.service)
def test_each_scheduled_function_runs_on_its_declared_schedule(resources, declared):
    # Given a scheduled function, When the stack's rules are read, Then one invokes it at the declared rate
    logical_id, _ = _deployed_function(resources, declared)
    expressions = {t["expression"] for t in scheduled_targets(resources) if t["function"] == logical_id}
    minutes = declared.schedule_minutes
    assert expressions == {f"rate({minutes} minute{'s' if minutes != 1 else ''})"}, expressions


def test_saga_status_judges_the_outbox_by_the_alarms_threshold(resources):
    # Given the deployed outbox-age alarm, When `saga status` runs without --max-outbox-age
    [alarm] = [a["Properties"] for k, a in of_type(resources, "AWS::CloudWatch::Alarm").items() if "OutboxTooOld" in k]
    args = cli._parser().parse_args(["status"])
    # Then it calls an outbox too old at the alarm's threshold
    assert args.max_outbox_age == alarm["Threshold"] == topology.OUTBOX_AGE_ALARM_SECONDS
