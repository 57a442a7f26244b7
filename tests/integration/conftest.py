"""Integration tests run against a moto server (one per session, reset before each test)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
import urllib3

from functions.auditor.settings import AuditorSettings
from functions.consumer import bootstrap as consumer_bootstrap
from functions.consumer.settings import ConsumerSettings
from functions.loans_api import bootstrap as loans_bootstrap
from functions.loans_api.settings import LoansSettings
from functions.orchestrator import bootstrap as orchestrator_bootstrap
from functions.orchestrator.settings import OrchestratorSettings
from functions.relay import bootstrap as relay_bootstrap
from functions.relay.settings import RelaySettings
from saga.local.moto_server import MotoServer
from saga.local.pollers import SqsPoller, StreamPoller
from saga.local.resources import LocalResources, ProvisionClients, provision
from shared import aws
from shared.settings import BaseSettings
from tests.support import PATIENT_AWS, ApiClient, quiet_metrics
from tools.inprocess import InProcessHttp

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

SettingsT = TypeVar("SettingsT", bound=BaseSettings)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    server = MotoServer().start()
    yield server
    server.stop()


def settings_on(resources: LocalResources, settings: type[SettingsT]) -> SettingsT:
    """`settings` pointed at the local endpoint's resources: each of their fields it has, the others left at
    their defaults; loans-api at an address nothing answers (the tests give each caller its transport)."""
    local = {
        "aws_endpoint_url": resources.endpoint_url,
        "loans_table_name": resources.loans_table,
        "journeys_table_name": resources.journeys_table,
        "events_topic_arn": resources.topic_arn,
        "loans_api_url": "http://loans-api.invalid",
    }
    return settings.model_validate({name: value for name, value in local.items() if name in settings.model_fields})


@pytest.fixture
def faults(moto_server: MotoServer) -> Iterator[Any]:
    """The endpoint's AWS faults (saga/local/aws_faults.py), none set, cleared again afterwards."""
    moto_server.faults.clear()
    moto_server.faults.injected.clear()
    yield moto_server.faults
    moto_server.faults.clear()


@pytest.fixture(scope="session")
def provision_clients(moto_server: MotoServer) -> ProvisionClients:
    """The clients every test's provisioning calls through: made once (each costs more than its calls)."""
    return ProvisionClients.of(moto_server.url, "us-east-1")


@pytest.fixture
def resources(moto_server: MotoServer, provision_clients: ProvisionClients) -> LocalResources:
    urllib3.request("POST", f"{moto_server.url}/moto-api/reset")
    return provision(moto_server.url, clients=provision_clients)


@pytest.fixture
def dynamodb(resources: LocalResources) -> DynamoDBClient:
    return aws.client("dynamodb", resources.region, resources.endpoint_url, PATIENT_AWS)


@pytest.fixture
def loans_settings(resources: LocalResources) -> LoansSettings:
    return settings_on(resources, LoansSettings)


@pytest.fixture
def loans_api(loans_settings: LoansSettings) -> ApiClient:
    return ApiClient(loans_bootstrap.build(loans_settings, quiet_metrics("loans-api")), name="loans-api")


@pytest.fixture
def loans_http(loans_settings: LoansSettings) -> InProcessHttp:
    """loans-api behind a fake transport that can lose responses (see InProcessHttp)."""
    return InProcessHttp(loans_bootstrap.build(loans_settings, quiet_metrics("loans-api")))


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def orchestrator_settings(resources: LocalResources) -> OrchestratorSettings:
    return settings_on(resources, OrchestratorSettings)


@pytest.fixture
def orchestrator(orchestrator_settings: OrchestratorSettings, loans_http: InProcessHttp, sleeps) -> ApiClient:
    ports = orchestrator_bootstrap.Ports(http=loans_http, sleep=sleeps.append)
    handler = orchestrator_bootstrap.build(orchestrator_settings, quiet_metrics("orchestrator"), ports)
    return ApiClient(handler, name="orchestrator")


@pytest.fixture
def relay_settings(resources: LocalResources) -> RelaySettings:
    return settings_on(resources, RelaySettings)


@pytest.fixture
def auditor_settings(resources: LocalResources) -> AuditorSettings:
    return settings_on(resources, AuditorSettings)


@pytest.fixture
def consumer_settings(resources: LocalResources) -> ConsumerSettings:
    return settings_on(resources, ConsumerSettings)


@pytest.fixture
def consumer_loans_http(loans_settings: LoansSettings) -> InProcessHttp:
    """loans-api as the consumer reaches it (its ledger read), apart from the orchestrator's transport."""
    return InProcessHttp(loans_bootstrap.build(loans_settings, quiet_metrics("loans-api")))


@pytest.fixture
def sqs(resources: LocalResources) -> SQSClient:
    return aws.client("sqs", resources.region, resources.endpoint_url, PATIENT_AWS)


@pytest.fixture
def stream_poller(resources: LocalResources, relay_settings: RelaySettings, sqs: SQSClient) -> StreamPoller:
    streams = aws.client("dynamodbstreams", resources.region, resources.endpoint_url, PATIENT_AWS)

    def on_failure(record: dict) -> None:
        sqs.send_message(QueueUrl=resources.relay_failures_url, MessageBody=json.dumps(record))

    handler = relay_bootstrap.build_stream_handler(relay_settings, quiet_metrics("relay"))
    return StreamPoller(streams, resources.loans_stream_arn, handler, on_failure=on_failure)


@pytest.fixture
def sqs_poller(
    resources: LocalResources, consumer_settings: ConsumerSettings, consumer_loans_http: InProcessHttp, sqs: SQSClient
) -> SqsPoller:
    arn = sqs.get_queue_attributes(QueueUrl=resources.events_queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    handler = consumer_bootstrap.build(consumer_settings, quiet_metrics("consumer"), http=consumer_loans_http)
    return SqsPoller(sqs, resources.events_queue_url, arn, handler, redelivery_seconds=0)
