"""Why a message failed, as the consumer saw it, kept by message id: the record `saga dlq list` reads to say
why a DLQ message is there (the message itself cannot carry it: SQS moves it to the DLQ as it was sent).
In AWS the consumer's log line for each failure is that record; the local runtime also appends each to a
JSON Lines file (`JsonLinesFailureNotes`), which its state file names."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from shared.clock import utc_now

# A cause longer than this is cut: one line per failure, whatever an error's text holds.
MAX_CAUSE_CHARS = 500


class FailureNotes(Protocol):
    def note(self, message_id: str, receive_count: int, cause: str) -> None:
        """Record why one receive of a message failed."""
        ...


class JsonLinesFailureNotes:
    """Appends one JSON line per failure to `path`. Each line is one write to a file opened for appending, so
    the consumer's containers (processes) writing at once never interleave within a line."""

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)

    def note(self, message_id: str, receive_count: int, cause: str) -> None:
        line = json.dumps({
            "messageId": message_id,
            "receiveCount": receive_count,
            "cause": cause[:MAX_CAUSE_CHARS],
            "at": utc_now().isoformat(),
        }) + "\n"  # fmt: skip
        descriptor = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, line.encode())
        finally:
            os.close(descriptor)


def read_notes(path: str | Path) -> Mapping[str, dict[str, object]]:
    """The newest note of each message id in the file (its last failure); {} when there is none. A line that
    does not read (a write cut short by a kill) is skipped."""
    found: dict[str, dict[str, object]] = {}
    try:
        text = Path(path).read_text()
    except OSError:
        return found
    for line in text.splitlines():
        try:
            note = json.loads(line)
        except ValueError:
            continue
        if isinstance(note, dict) and isinstance(note.get("messageId"), str):
            found[note["messageId"]] = note
    return found
