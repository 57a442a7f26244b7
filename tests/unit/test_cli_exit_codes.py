"""What the ops commands' exit codes promise (saga --help, README): silence is "cannot reach" (2), an
answer the system would not give is 2 with what it was, and a bug in saga is its traceback and 70, never
taken for a state of the system; and when a relay failure is over."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from saga import cli
from saga.ops.road2 import relay_failure_resolved


@pytest.fixture
def status_raising(monkeypatch):
    """`saga status` against a target that is found, whose operation raises what the test gives."""

    def install(error: BaseException) -> None:
        def operation(args, target):
            raise error

        monkeypatch.setattr(cli, "_target", lambda args: object())
        monkeypatch.setitem(cli._OPERATIONS, "status", operation)

    return install


def test_a_bug_in_the_cli_is_its_traceback_and_exit_70_not_cannot_reach(status_raising, capsys):
    # Given a command with a bug (a KeyError in saga's own code)
    status_raising(KeyError("oldestPendingAgeSeconds"))
    # When it runs
    code = cli.main(["status", "--json"])
    # Then it exits 70 with the traceback on stderr, and says nothing of reaching the system
    out, err = capsys.readouterr()
    assert code == cli.EXIT_BUG == 70
    assert "Traceback (most recent call last)" in err
    assert "KeyError: 'oldestPendingAgeSeconds'" in err
    assert "cannot reach" not in out + err


def test_nothing_answering_is_cannot_reach_with_what_to_start(status_raising, capsys):
    # Given an endpoint nothing listens on
    status_raising(EndpointConnectionError(endpoint_url="http://127.0.0.1:4566/"))
    # When a command runs, Then it exits 2: cannot reach, start it with make run / saga local
    assert cli.main(["status", "--json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["title"] == "cannot reach the system"
    assert "make run" in err
    assert "--stack" in err


def test_an_answer_the_system_would_not_give_exits_2_naming_it_not_cannot_reach(status_raising, capsys):
    # Given an endpoint that answers, without this system's queues (e.g. another tool on 4566)
    status_raising(ClientError({"Error": {"Code": "AWS.SimpleQueueService.NonExistentQueue"}}, "GetQueueUrl"))
    # When a command runs, Then it exits 2, says what answered, and does not call it unreachable
    assert cli.main(["status"]) == 2
    _, err = capsys.readouterr()
    assert "the system did not answer as it should" in err
    assert "NonExistentQueue" in err
    assert "cannot reach" not in err


def _failure(last_arrival: datetime) -> str:
    arrived = last_arrival.strftime("%Y-%m-%dT%H:%M:%SZ")
    return json.dumps({"DDBStreamBatchInfo": {"approximateArrivalOfFirstRecord": arrived,
                                              "approximateArrivalOfLastRecord": arrived, "batchSize": 1}})  # fmt: skip


@pytest.mark.parametrize(
    ("oldest_pending_after_arrival", "over"),
    [
        (None, True),  # nothing PENDING: every event of the batch was published
        (timedelta(seconds=-30), False),  # an event from before the batch's last record is still PENDING
        (timedelta(seconds=1), False),  # within the arrival's margin (AWS gives it to the second)
        (timedelta(seconds=30), True),  # what is PENDING came after the batch
    ],
)
def test_a_relay_failure_is_over_once_no_event_at_or_before_its_batch_is_pending(oldest_pending_after_arrival, over):
    arrival = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
    oldest = None if oldest_pending_after_arrival is None else arrival + oldest_pending_after_arrival
    assert relay_failure_resolved(_failure(arrival), oldest) is over


def test_an_unreadable_relay_failure_is_over_only_when_nothing_is_pending():
    assert relay_failure_resolved("not json", None) is True
    assert relay_failure_resolved("not json", datetime.now(UTC)) is False


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "--grace", "-5"],
        ["audit", "--grace", "nan"],
        ["audit", "--since", "0"],
        ["audit", "--since", "-1"],
        ["dlq", "redrive", "--max", "0"],
        ["dlq", "redrive", "--max", "-3"],
        ["status", "--max-outbox-age", "-1"],
        ["status", "--max-queue-age", "inf"],
        ["local", "--port", "70000"],
        ["local", "--sweep-threshold", "-1"],
        ["mcp", "--http", "-1"],
        ["proxy", "--control-port", "65536"],
        ["verify", "--stack", "s", "--wait", "-1"],
    ],
    ids=" ".join,
)
def test_a_flag_out_of_its_range_is_a_usage_error(argv, monkeypatch, capsys):
    # Given a command that would act on the system if it ran
    monkeypatch.setattr(cli, "_target", lambda args: pytest.fail(f"{argv} reached the system"))
    # When its flag is out of range, Then it is a usage error (exit 2) naming the flag, before anything runs
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2, f"{argv} exited {exited.value.code}"
    assert argv[-2] in capsys.readouterr().err


def test_a_stale_state_file_is_named_when_nothing_answers(status_raising, tmp_path, monkeypatch, capsys):
    # Given the state file a killed `saga local` left behind (its pid no longer runs)
    state = tmp_path / "local.json"
    state.write_text(json.dumps({"pid": 2**22 + 7, "orchestrator": "http://127.0.0.1:3999"}))
    monkeypatch.setenv("SAGA_STATE_FILE", str(state))
    status_raising(EndpointConnectionError(endpoint_url="http://127.0.0.1:4566/"))
    # When a command finds nothing answering at the default ports
    assert cli.main(["status"]) == 2
    # Then its error names the stale file, and that the defaults were tried instead
    err = capsys.readouterr().err
    assert f"{state} is stale" in err, err
    assert "pid 4194311" in err, err
    assert "default local ports" in err, err


def test_an_audit_of_only_unknown_journeys_says_only_that(monkeypatch, capsys):
    # Given a journey neither API knows
    from saga.ops import journeys

    report = {"audited": 0, "scope": "journeys named", "graceSeconds": 60.0, "repaired": [], "rebuilt": [],
              "notRebuilt": [], "outOfSync": [], "withinGrace": [], "unreadable": [], "unknown": ["no-such"],
              "agree": True}  # fmt: skip
    monkeypatch.setattr(cli, "_target", lambda args: object())
    monkeypatch.setattr(journeys, "audit", lambda *args, **kwargs: report)
    # When it is audited
    assert cli.main(["audit", "--journey", "no-such"]) == 3
    # Then the output says only that it is unknown, no verdict on the nothing audited
    out = capsys.readouterr().out.strip()
    assert out == f"unknown ({journeys.UNKNOWN}): no-such", out
