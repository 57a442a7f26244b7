"""The port to loans-api and its HTTP adapter, shared by the orchestrator (its commands and catch-up
read) and the consumer (road 2's ledger read, shared/loans_ledger.py). The port is one method, `send`,
so the orchestrator's retrying decorator (functions/orchestrator/retry.py) wraps every call the same way."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import NoCredentialsError

from shared import aws
from shared.idempotency import EXPECTED_SEQ_HEADER, HEADER, ORIGIN_HEADER, REPLAYED_HEADER
from shared.settings import BaseSettings

# How long a call to loans-api may take to connect (a new connection to API Gateway, TLS included).
CONNECT_TIMEOUT_SECONDS = 0.3
# How long the first attempt of a call (and the consumer's one ledger read) waits for the answer: at least
# 1.5x a cold loans-api with bytecode at its memory (shared/topology.py `cold_loans_api_seconds`, from the
# CPU bench/cold_start.py measures), so a call after idle is not cut off and retried into a second cold
# instance. tests/unit/test_cold_start.py holds it to that.
COLD_READ_TIMEOUT_SECONDS = 2.5
# How long a retry waits: as long as the first attempt. A retry follows a failure, and the attempt cut off
# still holds its loans-api instance until that instance's own timeout: the retry may meet a cold one (a
# scale-out) or a loans-api whose DynamoDB write is in botocore's own backoff (throttled, a transaction
# conflict), both longer than a warm answer's tens of milliseconds; a shorter wait would cut them off and
# retry into yet another instance. When every attempt times out, the orchestrator's deadline truncates the
# schedule (functions/orchestrator/retry.py starts no attempt that cannot end in time: four of the five
# fit); fast failures (a 5xx, a throttle) get all five (tests/unit/test_cold_start.py).
RETRY_READ_TIMEOUT_SECONDS = COLD_READ_TIMEOUT_SECONDS


@dataclass(frozen=True)
class LoansRequest:
    method: str
    path: str
    body: dict[str, Any] | None = None
    idempotency_key: str | None = None
    expected_seq: int | None = None  # the ledger position the command was decided on
    origin: str | None = None  # the agent request this call belongs to (the same on every retry)


@dataclass(frozen=True)
class LoansReply:
    """A non-5xx answer from loans-api. `replayed`: answered from the key's receipt; `origin`: then, the
    id of the request whose attempt made that receipt (ORIGIN_HEADER), if it recorded one."""

    status: int
    body: dict[str, Any]
    replayed: bool = False
    origin: str | None = None  # on a replay: the request that made the receipt


class TransientLoansError(Exception):
    """A failure a retry may clear: a 5xx, a 429 (throttled), or the transport failed (reset,
    timeout, cut body)."""


class LoansClient(Protocol):
    def send(self, request: LoansRequest) -> LoansReply:
        """Send one request; TransientLoansError for 5xx, 429 or transport failures."""
        ...


class HttpRequester(Protocol):
    """What HttpLoansClient needs of urllib3.PoolManager (tests may pass an in-process double)."""

    def request(
        self, method: str, url: str, body: bytes | None = ..., headers: dict[str, str] | None = ..., **kwargs: Any
    ) -> Any: ...


class SigV4Signer:
    """Signs requests for an IAM-authorized API Gateway (service `execute-api`)."""

    def __init__(self, credentials_provider: Callable[[], Credentials | None], region: str) -> None:
        self._credentials = credentials_provider
        self._region = region

    def sign(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        current = self._credentials()
        # One consistent snapshot (a refreshable set may change between reads); none at all, or a partial
        # one, is said as such rather than failing further in as an AttributeError or a bad signature.
        frozen = None if current is None else current.get_frozen_credentials()
        if frozen is None or frozen.access_key is None or frozen.secret_key is None:
            raise NoCredentialsError()
        credentials = Credentials(frozen.access_key, frozen.secret_key, frozen.token)
        request = AWSRequest(method=method, url=url, data=body or b"", headers=headers)
        SigV4Auth(credentials, "execute-api", self._region).add_auth(request)
        return dict(request.headers.items())


class JsonHttpEndpoint:
    """An HTTP(S) API at `base_url`: one attempt per request, a JSON body, signed when there is a signer,
    no hidden retries or redirects (the caller decides what to retry), a timeout per attempt."""

    def __init__(
        self, base_url: str, http: HttpRequester, timeout: urllib3.Timeout, signer: SigV4Signer | None = None
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._http = http
        self._timeout = timeout
        self._signer = signer

    def _request(self, method: str, path: str, body: dict[str, Any] | None, headers: dict[str, str]) -> Any:
        """The response; a transport failure raises urllib3's HTTPError."""
        url = self._base_url + path
        data = None if body is None else json.dumps(body).encode()
        if self._signer is not None:
            headers = self._signer.sign(method, url, data, headers)
        return self._http.request(
            method, url, body=data, headers=headers, timeout=self._timeout, retries=False, redirect=False
        )


class HttpLoansClient(JsonHttpEndpoint):
    """LoansClient over HTTP(S) with per-attempt timeouts and no hidden retries."""

    def send(self, request: LoansRequest) -> LoansReply:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if request.idempotency_key is not None:
            headers[HEADER] = request.idempotency_key
        if request.expected_seq is not None:
            headers[EXPECTED_SEQ_HEADER] = str(request.expected_seq)
        if request.origin is not None:
            headers[ORIGIN_HEADER] = request.origin
        try:
            response = self._request(request.method, request.path, request.body, headers)
        except urllib3.exceptions.HTTPError as error:
            raise TransientLoansError(f"transport failure: {type(error).__name__}: {error}") from error
        if response.status >= 500 or response.status == 429:
            raise TransientLoansError(f"loans-api answered {response.status}")
        try:
            payload = json.loads(response.data)
        except ValueError as error:
            # A cut or garbled body is a transport failure: the retry replays the recorded answer.
            raise TransientLoansError(f"unreadable body from loans-api ({response.status})") from error
        replayed = str(response.headers.get(REPLAYED_HEADER, "")).lower() == "true"
        origin = response.headers.get(ORIGIN_HEADER)
        return LoansReply(status=response.status, body=payload, replayed=replayed, origin=origin and str(origin))


class LoansApiSettings(BaseSettings):
    """What a function's settings say about reaching loans-api (the orchestrator's commands, the consumer's
    ledger reads): its URL, whether to sign, and how long one attempt may take."""

    loans_api_url: str
    # SigV4-sign calls to loans-api (an IAM-authorized API Gateway); off locally.
    sign_loans_requests: bool = False
    # How long one attempt may take to connect, and to be answered: sized for a cold loans-api (above).
    loans_connect_timeout: float = CONNECT_TIMEOUT_SECONDS
    loans_read_timeout: float = COLD_READ_TIMEOUT_SECONDS


def http_loans_client(
    settings: LoansApiSettings, timeout: urllib3.Timeout, pool_size: int, http: HttpRequester | None = None
) -> HttpLoansClient:
    """loans-api over HTTP as `settings` say (SigV4-signed with the function's credentials when asked), on
    `http` (tests pass an in-process double) or a connection pool of `pool_size`."""
    signer = SigV4Signer(aws.credentials, settings.region) if settings.sign_loans_requests else None
    requester = http or cast(HttpRequester, urllib3.PoolManager(maxsize=pool_size))
    return HttpLoansClient(settings.loans_api_url, requester, timeout, signer)
