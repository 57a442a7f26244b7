"""Adversarial review of the topology test (issue 28: "the local runtime no longer runs what deploys"):
event source settings the synthesized stack sets and the local runtime's pollers do not take from
shared/topology.py, so they can drift with every test in tests/infra/test_topology.py still green."""

from __future__ import annotations

from saga.local.runtime import events_poller, relay_stream_poller
from shared import topology
from tests.infra.test_topology import _mapping


def test_the_local_consumer_applies_as_many_batches_at_once_as_the_deployed_mapping_allows(resources):
    # Given the consumer's deployed event source mapping: up to MaximumConcurrency batches at once (so two
    # batches of one journey race on its Control Record's compare-and-swap in AWS)
    deployed = _mapping(resources, topology.CONSUMER)["ScalingConfig"]["MaximumConcurrency"]
    # When the local runtime builds its queue poller (one loop, one batch at a time, one container)
    local = events_poller(None, "url", "arn:queue", lambda event, context: {}, None)  # type: ignore[arg-type]
    # Then it runs as many at once as the deployed mapping, or the topology declares the difference
    assert getattr(local, "max_concurrency", 1) == deployed


def test_the_local_stream_poller_drops_records_as_old_as_the_deployed_mapping_does(resources):
    # Given the relay's deployed mapping, which discards records older than MaximumRecordAgeInSeconds
    # (the sweeper republishes what stays PENDING: topology.StreamSource)
    deployed = _mapping(resources, topology.RELAY)["MaximumRecordAgeInSeconds"]
    # When the local runtime builds its stream poller
    local = relay_stream_poller(None, "arn:stream", lambda event, context: {}, lambda failure: None)  # type: ignore[arg-type]
    # Then it has the same bound (today it has none: a record of any age is retried, never dropped), and the
    # topology test compares it (it compares the deployed value with the topology only)
    assert getattr(local, "max_record_age_seconds", None) == deployed


def test_the_local_stream_poller_runs_as_many_batches_per_shard_as_the_deployed_parallelization_factor(resources):
    # Given the relay's deployed mapping: ParallelizationFactor batches of one shard at once (in order per
    # partition key, https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html)
    deployed = _mapping(resources, topology.RELAY)["ParallelizationFactor"]
    # When the local runtime builds its stream poller (one batch per shard at a time)
    local = relay_stream_poller(None, "arn:stream", lambda event, context: {}, lambda failure: None)  # type: ignore[arg-type]
    # Then it runs the same number at once (two relays publishing one shard's journeys concurrently is what
    # deploys), or the topology declares that the local runtime runs one
    assert getattr(local, "parallelization_factor", 1) == deployed
