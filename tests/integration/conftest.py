"""Integration tests run against a moto server (one per session, reset before each test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import urllib3

from functions.loans_api import bootstrap as loans_bootstrap
from functions.loans_api.settings import LoansSettings
from saga.local.moto_server import MotoServer
from saga.local.resources import LocalResources, provision
from shared import aws
from tests.support import ApiClient, quiet_metrics


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    server = MotoServer().start()
    yield server
    server.stop()


@pytest.fixture
def resources(moto_server: MotoServer) -> LocalResources:
    urllib3.request("POST", f"{moto_server.url}/moto-api/reset")
    return provision(moto_server.url)


@pytest.fixture
def dynamodb(resources: LocalResources):
    return aws.client("dynamodb", resources.region, resources.endpoint_url)


@pytest.fixture
def loans_settings(resources: LocalResources) -> LoansSettings:
    return LoansSettings(aws_endpoint_url=resources.endpoint_url, loans_table_name=resources.loans_table)


@pytest.fixture
def loans_api(loans_settings: LoansSettings) -> ApiClient:
    return ApiClient(loans_bootstrap.build(loans_settings, quiet_metrics("loans-api")), name="loans-api")
