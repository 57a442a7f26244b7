"""A connection the deployment misconfigured (a refused certificate, a refused proxy) is not transient: no
retry clears it, so it is not answered as a retryable outage (shared/aws.py is_transient)."""

from __future__ import annotations

import ssl

import pytest
from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ProxyConnectionError, SSLError

from shared import aws

ENDPOINT = "https://dynamodb.us-east-1.amazonaws.com/"


@pytest.mark.parametrize(
    "error",
    [
        SSLError(endpoint_url=ENDPOINT, error=ssl.SSLCertVerificationError("certificate verify failed")),
        ProxyConnectionError(proxy_url="http://proxy.invalid:3128", error=ConnectionRefusedError("Connection refused")),
    ],
    ids=["certificate-refused", "proxy-refused"],
)
def test_a_misconfigured_connection_is_not_called_transient(error):
    assert not aws.is_transient(error)


@pytest.mark.parametrize(
    "error",
    [ConnectTimeoutError(endpoint_url=ENDPOINT), EndpointConnectionError(endpoint_url=ENDPOINT)],
    ids=["connect-timeout", "connection-refused"],
)
def test_what_the_change_meant_to_make_transient_still_is(error):
    assert aws.is_transient(error)
