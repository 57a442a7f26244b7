"""What each marked block of the docs shows: the commands a reader types, in the order they type them,
and the waits between them (a state of the system the next output depends on, e.g. road 2 has
delivered: a reader who types slower sees the same). One shell runs every page in order, so a variable
set in the README's tour is there for docs/OPERATIONS.md, as in one terminal."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from shared import aws, tables
from shared.dynamo import from_item, to_item
from shared.keys import EVENT_PREFIX, journey_pk
from tools.docs.session import Runtime, Shell

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


@dataclass(frozen=True)
class Run:
    """A command as the reader types it (continuation lines shown with `> `), and what it prints."""

    command: str


@dataclass(frozen=True)
class Wait:
    """Not shown: wait until `condition` holds on the runtime, the shell's variables at hand."""

    what: str
    condition: Callable[[Runtime, Shell], bool]


@dataclass(frozen=True)
class Output:
    """Not a shell command: text a program produced against the runtime (e.g. an MCP session)."""

    produce: Callable[[Runtime, Shell], str]


Step = Run | Wait | Output


@dataclass(frozen=True)
class Block:
    """A marked block: `console` shows `$ command` then its output; `script` shows the commands as they are
    and each output line as a `# ` comment, so the whole block can be pasted into a terminal."""

    name: str
    steps: tuple[Step, ...]
    style: str = "console"


@dataclass(frozen=True)
class Page:
    path: str
    blocks: tuple[Block, ...]


# -- waits ------------------------------------------------------------------------------------------


def _sqs(runtime: Runtime) -> SQSClient:
    return aws.client("sqs", "us-east-1", runtime.urls["aws"])


def _depth(runtime: Runtime, queue: tables.QueueSpec) -> int:
    sqs = _sqs(runtime)
    url = sqs.get_queue_url(QueueName=queue.local_name)["QueueUrl"]
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])


def road_two_done(variable: str) -> Callable[[Runtime, Shell], bool]:
    """Every event of the journey in `$variable` published by the relay, and the events queue empty."""

    def done(runtime: Runtime, shell: Shell) -> bool:
        journey_id = shell.run(f'echo "${variable}"').strip()
        items = aws.client("dynamodb", "us-east-1", runtime.urls["aws"]).query(
            TableName=tables.LOANS_TABLE.local_name,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :events)",
            ExpressionAttributeValues=to_item({":pk": journey_pk(journey_id), ":events": EVENT_PREFIX}),
            ConsistentRead=True,
        )["Items"]
        published = all(from_item(item).get("status") == "NOTIFIED" for item in items)
        return bool(items) and published and _depth(runtime, tables.EVENTS_QUEUE) == 0

    return done


def dlq_holds(count: int) -> Callable[[Runtime, Shell], bool]:
    return lambda runtime, _: _depth(runtime, tables.EVENTS_DLQ) == count


# -- the MCP session of docs/AGENTS.md ---------------------------------------------------------------


# How long the scene repeats a call refused as retryable before it gives up: a hang guard, not a count of
# tries (how many it takes depends on the machine's load).
RETRY_SECONDS = 600.0


def mcp_session(runtime: Runtime, _: Shell) -> str:
    """One journey driven with the `mcp` SDK's ClientSession over stdio: each call, the first line of
    its result and its `_meta`; the full record once; the journey as a resource at the end."""
    return anyio.run(_mcp_session, runtime.urls["orchestrator"])


async def _mcp_session(api_url: str) -> str:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from saga.openapi_tools import KEY_ARGUMENT

    lines: list[str] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_ENDPOINT_URL"))}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "saga.cli", "mcp", "--api-url", api_url], env=env
    )
    with tempfile.TemporaryFile("w+") as errors:
        async with stdio_client(params, errlog=errors) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            lines.append("tools: " + ", ".join(tool.name for tool in tools))

            async def call(name: str, arguments: dict[str, Any], refused: bool = False) -> Any:
                """One tool call as the transcript shows it. A retryable error (the machine too loaded for an
                answer in time) is repeated with the key it names, as its guidance tells the model, and only
                the answer is shown; an answer the scene does not expect (`refused`: an error) fails it."""
                sent, deadline = arguments, time.monotonic() + RETRY_SECONDS
                while True:
                    result = await session.call_tool(name, sent)
                    content = result.structured_content or {}
                    if not (result.is_error and content.get("retryable")) or time.monotonic() > deadline:
                        break
                    sent = {**arguments, KEY_ARGUMENT: content.get(KEY_ARGUMENT) or sent.get(KEY_ARGUMENT)}
                    print(f"scene: {name} was refused as retryable; again: {json.dumps(content)}", file=sys.stderr)
                    await anyio.sleep(1)
                if result.is_error != refused:
                    raise AssertionError(f"{name} {json.dumps(sent)} answered: {json.dumps(result.structured_content)}")
                lines.append(f"> {name} {json.dumps(arguments)}")
                text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                lines.append(f"< {text.splitlines()[0] if text else ''}{'  [isError]' if result.is_error else ''}")
                lines.append(f"  _meta: {json.dumps(result.meta)}")
                return result.structured_content

            created = await call("createJourney", {"customerId": "c-42"})
            journey = created["record"]["journeyId"]
            lines.append(json.dumps(created["record"], indent=2))
            await call("disburseLoan", {"journeyId": journey}, refused=True)
            # The model's own key for this quote (a fresh one per run: keys are the caller's, across journeys).
            quote = {"journeyId": journey, "amount": 10000, "termMonths": 36, "idempotencyKey": f"quote-{uuid.uuid4()}"}
            simulated = await call("simulateLoan", quote)
            await call("simulateLoan", quote)
            accept = _link_body(simulated["record"], "accept")
            accepted = await call("acceptSimulation", {"journeyId": journey, **accept})
            await call("disburseLoan", {"journeyId": journey, **_link_body(accepted["record"], "disburse")})
            await call("cancelJourney", {"journeyId": journey}, refused=True)
            resource = await session.read_resource(f"journey://{journey}")
            record = json.loads(resource.contents[0].text)  # type: ignore[union-attr]
            lines.append(
                f"resource journey://{journey}: currentState={record['currentState']}, "
                f"disbursement={json.dumps(record['disbursement'])}"
            )
    return "\n".join(lines)


def _link_body(record: dict[str, Any], name: str) -> dict[str, Any]:
    return dict(next(action.get("body") or {} for action in record["availableActions"] if action["name"] == name))


# -- the pages ----------------------------------------------------------------------------------------

NEW_KEY = "$(python3 -c 'import uuid; print(uuid.uuid4())')"

README = Page(
    "README.md",
    (
        Block(
            "tour",
            (
                Run("API=http://127.0.0.1:3000"),
                Run(
                    """post() { curl -s -X POST "$API$1" -H 'Content-Type: application/json' """
                    """-d "$2" "${@:3}"; echo; }"""
                ),
                Run(
                    """get() { python3 -c "import json,sys; v=json.load(sys.stdin)$1; """
                    """print(v if isinstance(v, str) else json.dumps(v))"; }"""
                ),
                Run(
                    """link() { python3 -c "import json,sys; r=json.load(sys.stdin); """
                    """print(json.dumps(next(a['body'] for a in r['availableActions'] if a['name'] == '$1')))"; }"""
                ),
                Run(f"KEY={NEW_KEY}   # a fresh Idempotency-Key: the tour can be run again"),
                Run(
                    """J=$(post /journeys '{"customerId": "c-42"}' -H "Idempotency-Key: $KEY" """
                    """| get '["journeyId"]')"""
                ),
                Run(
                    """R=$(post /journeys/$J/simulate '{"amount": 10000, "termMonths": 36}' """
                    """-H "Idempotency-Key: $KEY")"""
                ),
                Run("""echo "$R" | python3 -m json.tool"""),
                Run("""R=$(post /journeys/$J/accept "$(echo "$R" | link accept)"); echo "$R" | get '["acceptance"]'"""),
                Run("""post /journeys/$J/disburse "$(echo "$R" | link disburse)" | get '["disbursement"]'"""),
                Run(
                    """post /journeys/$J/disburse "$(echo "$R" | link disburse)" -o /dev/null """
                    """-w 'HTTP %{http_code}, Idempotent-Replayed: %header{idempotent-replayed}'"""
                ),
                Run("""post /journeys/$J/cancel '{}' | python3 -m json.tool"""),
            ),
            style="script",
        ),
        Block(
            "tour-operator",
            (
                Wait("road 2 delivered the tour's events", road_two_done("J")),
                Run("saga journey show $J; echo $?"),
            ),
        ),
    ),
)

# A write road 2 cannot make: the consumer's compare-and-swap on the journeys table fails (a real AWS
# error from the local endpoint), so its message lands in the DLQ after 3 receives.
_BREAK_ROAD_TWO = (
    "curl -s -X POST http://127.0.0.1:4566/_saga/faults "
    """-d '{"service": "dynamodb", "operation": "PutItem", "kind": "InternalServerError", "match": "journeys"}'"""
)

# A record no event explains: written straight to the journeys table, ahead of anything loans-api committed.
_FORGE_RECORD = (
    'AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local python -c "from shared import aws, control_store; '
    "aws.client('dynamodb', 'us-east-1', 'http://127.0.0.1:4566').update_item(TableName='journeys', "
    "Key=control_store.control_key('$J2'), UpdateExpression='SET lastAppliedSeq = :n', "
    "ExpressionAttributeValues={':n': {'N': '1000000000'}})\""
)

OPERATIONS = Page(
    "docs/OPERATIONS.md",
    (
        Block(
            "ops-break",
            (
                Run(
                    f"""J2=$(post /journeys '{{"customerId": "c-7"}}' -H "Idempotency-Key: {NEW_KEY}" """
                    """| get '["journeyId"]')"""
                ),
                Run(_BREAK_ROAD_TWO),
                Run(
                    "curl -s -X POST http://127.0.0.1:3001/simulations -H 'Content-Type: application/json' "
                    f"""-H "Idempotency-Key: {NEW_KEY}" """
                    """-d '{"journeyId": "'$J2'", "amount": 5000, "termMonths": 12}' | get '["event"]["type"]'"""
                ),
            ),
        ),
        Block(
            "ops-journey-show",
            (
                Wait("the consumer's message in the DLQ", dlq_holds(1)),
                Run("saga journey show $J2; echo $?"),
                Run("saga journey show no-such-journey; echo $?"),
            ),
        ),
        Block("ops-audit", (Run("saga audit; echo $?"), Run("saga audit --grace 0; echo $?"))),
        Block("ops-status", (Run("saga status --check; echo $?"), Run("saga dlq list"))),
        Block(
            "ops-repair",
            (
                Run("""curl -s -X DELETE http://127.0.0.1:4566/_saga/faults | get '["rules"]'"""),
                Run("saga audit --grace 0 --repair; echo $?"),
                Run("saga dlq redrive"),
                Wait("road 2 delivered the redriven message", road_two_done("J2")),
                Run("saga journey show $J2; echo $?"),
                Run("saga status --check; echo $?"),
            ),
        ),
        Block(
            "ops-rebuild",
            (
                Run(_FORGE_RECORD),
                Run("saga audit --grace 0 --journey $J2; echo $?"),
                Run("saga audit --grace 0 --repair --rebuild --journey $J2; echo $?"),
            ),
        ),
    ),
)

AGENTS = Page("docs/AGENTS.md", (Block("mcp-session", (Output(mcp_session),)),))

PAGES = (README, OPERATIONS, AGENTS)
