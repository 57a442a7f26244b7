"""Every AWS client in the repo has its service's type. `shared.aws.client` returns the typed
client of the service's mypy-boto3 stubs and mypy strict checks every call on it, up to the point where a
client is handed to something that takes `Any` (or `object`, or no annotation at all): from there on
nothing is checked. This guard finds such a hand-over by convention, reading the sources (no import, a
fraction of a second): a parameter or annotated variable named like a client (`client`, `dynamodb`,
`sqs`, `sns`, `streams`, `cloudformation`, `..._client`), and a function named like one or returning a
new client, must have a type that is neither Any nor object."""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("functions", "shared", "saga", "bench", "infra", "tests")
CLIENT_NAME = re.compile(r"^_*(client|dynamodb|sqs|sns|streams|cloudformation|\w+_client)$")
CLIENT_FACTORIES = {"client", "create_client"}  # shared.aws.client, botocore's Session.create_client
LOOSE = {"Any", "object"}


def _loose(annotation: ast.expr | None) -> bool:
    """No annotation, or one that lets anything through (Any or object anywhere in it)."""
    if annotation is None:
        return True
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a quoted annotation
        return _loose(ast.parse(annotation.value, mode="eval").body)
    return any(
        (isinstance(node, ast.Name) and node.id in LOOSE) or (isinstance(node, ast.Attribute) and node.attr == "Any")
        for node in ast.walk(annotation)
    )


def _returns_new_client(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            called = node.value.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", None)
            if name in CLIENT_FACTORIES:
                return True
    return False


def loosely_typed_clients(source: str, where: str) -> Iterator[str]:
    """`where:line what` for each client-like name in `source` typed as Any, object, or not at all."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                if CLIENT_NAME.match(argument.arg) and _loose(argument.annotation):
                    yield f"{where}:{argument.lineno} parameter {argument.arg!r} of {node.name}()"
            if (CLIENT_NAME.match(node.name) or _returns_new_client(node)) and _loose(node.returns):
                yield f"{where}:{node.lineno} what {node.name}() returns"
        elif isinstance(node, ast.AnnAssign):
            target = node.target
            name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
            if CLIENT_NAME.match(name) and _loose(node.annotation):
                yield f"{where}:{node.lineno} variable {name!r}"


def _modules() -> Iterator[Path]:
    yield ROOT / "app.py"
    for folder in SOURCES:
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_the_guard_sees_a_client_typed_as_any_object_or_not_at_all() -> None:
    # Given a module that hands clients over in each of the loose ways
    source = textwrap.dedent(
        """
        from typing import Any
        import typing

        class Store:
            def __init__(self, client: Any, sns: object, sqs, other: int) -> None:
                self._client: typing.Any = client

        def make(region: str) -> Any:
            return aws.client("dynamodb", region, None)

        def dynamodb(resources):
            ...

        def typed(dynamodb: DynamoDBClient, streams: "DynamoDBStreamsClient | None") -> SQSClient:
            return aws.client("sqs", "us-east-1", None)
        """
    )
    # When the guard reads it, Then it names every loose one and nothing typed
    assert list(loosely_typed_clients(source, "m.py")) == [
        "m.py:9 what make() returns",
        "m.py:12 what dynamodb() returns",
        "m.py:6 parameter 'client' of __init__()",
        "m.py:6 parameter 'sns' of __init__()",
        "m.py:6 parameter 'sqs' of __init__()",
        "m.py:7 variable '_client'",
    ]


def test_no_module_types_an_aws_client_as_any_object_or_nothing() -> None:
    # Given every module of the repo (the functions, shared, the CLI and local runtime, bench, infra, tests)
    # When the guard reads them, Then every client-like name has a real type (a mypy-boto3 client)
    found = [
        finding
        for path in _modules()
        for finding in loosely_typed_clients(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == [], "\n".join(found)
