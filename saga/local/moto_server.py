"""moto in server mode, in this process, as the local AWS endpoint.

moto's backends are not transactional under concurrent requests (a TransactWriteItems checks and
writes item by item, and rolls back by restoring a copy of the whole table), so every request is
served under one lock, and transactions are made all-or-nothing (moto_transactions): the endpoint
then behaves like DynamoDB's serializable transactions. Its CloudWatch reports the SQS queues' age
metric as AWS does (moto_metrics). In front of it, an AwsFaultInjector answers chosen calls with the
errors real AWS gives and moto never does (aws_faults). werkzeug serves it (saga/threaded_http.py), as it
serves moto's own server mode, with its connections kept alive: only our own botocore clients call it, and
each would otherwise open a connection per call."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import signal
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict
from multiprocessing.connection import Connection
from typing import Any

import urllib3
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

from saga.local import moto_deployment, moto_dispatch, moto_metrics, moto_queries, moto_transactions
from saga.local.aws_faults import CONTROL_PATH, AwsFaultInjector, FaultRule
from saga.threaded_http import ThreadedHttpServer


class _Serialized:
    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with self._lock:
            return list(self._app(environ, start_response))


class MotoServer(ThreadedHttpServer):
    """A moto server on host:port (port 0 picks a free one), served by a daemon thread."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: tuple[FaultRule, ...] = (),
        fault_seed: int | None = None,
    ) -> None:
        moto_dispatch.install()
        moto_transactions.install()
        moto_queries.install()
        moto_deployment.install()
        moto_metrics.install()
        moto = moto_deployment.AccountSettings(DomainDispatcherApplication(create_backend_app))
        self.faults = AwsFaultInjector(_Serialized(moto), faults, fault_seed)
        super().__init__(self.faults, host, port, "moto", keep_alive=True)

    def reset(self) -> None:
        """Forget every resource (moto's backends are shared by the whole process)."""
        # A hang guard, not urllib3's default 3 s: a reset of every backend took 3.6-4.9 s on a loaded machine.
        urllib3.request("POST", f"{self.url}/moto-api/reset", timeout=60)


class AwsFaultsClient:
    """The fault rules of an endpoint in another process, through its control API (CONTROL_PATH)."""

    def __init__(self, url: str) -> None:
        self._url = f"{url}{CONTROL_PATH}"

    def add(self, rule: FaultRule) -> None:
        self._call("POST", json.dumps(asdict(rule)).encode())

    def clear(self) -> None:
        self._call("DELETE")

    @property
    def injected(self) -> Counter[str]:
        """How many of each fault ("service:Operation:Kind") the endpoint has answered so far."""
        return Counter(self._call("GET")["injected"])

    def _call(self, method: str, body: bytes | None = None) -> dict[str, Any]:
        response = urllib3.request(method, self._url, body=body, timeout=10)
        if response.status != 200:
            raise RuntimeError(f"{method} {self._url}: {response.status} {response.data[:200]!r}")
        answer: dict[str, Any] = response.json()
        return answer


class MotoProcess:
    """The same endpoint (MotoServer, faults and all) in a child process of its own. The local runtime
    uses it so that the AWS calls of every function do not queue for one interpreter lock behind the
    pollers, the fault proxy and the callers in the parent: served in-process, a thousand-journey soak
    was bound by one core while the other idled. The child ends with its parent (it waits on a pipe)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, fault_seed: int | None = None) -> None:
        self._host, self._port, self._seed = host, port, fault_seed
        self._process: multiprocessing.process.BaseProcess | None = None
        self._pipe: Connection | None = None

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._port}"

    @property
    def faults(self) -> AwsFaultsClient:
        return AwsFaultsClient(self.url)

    @property
    def pid(self) -> int:
        """The endpoint's process (bench/ reads its CPU time)."""
        if self._process is None or self._process.pid is None:
            raise RuntimeError("the moto endpoint was not started")
        return self._process.pid

    def reset(self) -> None:
        """Forget every resource, as MotoServer.reset does."""
        urllib3.request("POST", f"{self.url}/moto-api/reset")

    def start(self, timeout: float = 60.0) -> MotoProcess:
        context = multiprocessing.get_context("spawn")
        self._pipe, child_end = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(self._host, self._port, self._seed, child_end), name="moto", daemon=True
        )
        self._process.start()
        child_end.close()
        try:
            if not self._pipe.poll(timeout):
                raise RuntimeError(f"the moto endpoint did not start within {timeout} s")
            answer = self._pipe.recv()
        except EOFError:  # the child died before it could serve
            answer = None
        if not isinstance(answer, int):
            self.stop()
            code, why = answer if isinstance(answer, tuple) else (None, "it exited")
            raise OSError(code, f"the moto endpoint could not serve on {self._host}:{self._port}: {why}")
        self._port = answer
        return self

    def stop(self) -> None:
        if self._pipe is not None:
            self._pipe.close()  # the child sees EOF and stops serving
        if self._process is not None:
            self._process.join(timeout=5)
            if self._process.is_alive():
                self._process.kill()  # it ignores SIGINT and SIGTERM (see _serve)
                self._process.join(timeout=5)


def _serve(host: str, port: int, seed: int | None, parent: Connection) -> None:
    """The child's whole life: serve until the parent closes the pipe or dies. Ctrl-C or a SIGTERM
    reaches the whole process group: the parent stops its pollers first, and this endpoint last
    (LocalRuntime.stop), so the child leaves both signals to its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        server = MotoServer(host, port, fault_seed=seed).start()
    except OSError as error:  # e.g. the port is in use: the parent raises it, errno and all
        parent.send((error.errno, error.strerror or str(error)))
        return
    parent.send(server.port)
    with contextlib.suppress(EOFError, OSError):
        parent.recv()
    server.stop()
