"""Why a message failed, as the consumer saw it, kept by message id: the record `saga dlq list` reads to say
why a DLQ message is there (the message itself cannot carry it: SQS moves it to the DLQ as it was sent).
In AWS the consumer's log line for each failure is that record; the local runtime also appends each to a
JSON Lines file (`JsonLinesFailureNotes`), which its state file names."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from shared.clock import utc_now

# A cause longer than this is cut: one line per failure, whatever an error's text holds.
MAX_CAUSE_CHARS = 500
# The notes file turns over past this (a note is at most about 3 KB: some 2,700 of them).
MAX_NOTES_BYTES = 8 * 1024 * 1024


class FailureNotes(Protocol):
    def note(self, message_id: str, receive_count: int, cause: str) -> None:
        """Record why one receive of a message failed."""
        ...


class JsonLinesFailureNotes:
    """Appends one JSON line per failure to `path`. Each line is one write to a file opened for appending, so
    the consumer's containers (processes) writing at once never interleave within a line. Bounded for a long
    `saga local`: once the file passes `max_bytes` it becomes the one before (`older`, replacing the last
    such) and notes go on in a new one, so at most about twice `max_bytes` is kept and `saga dlq list` reads
    no more; a message whose note made way is listed as one whose cause is in the consumer's log."""

    def __init__(self, path: str | Path, max_bytes: int = MAX_NOTES_BYTES) -> None:
        self._path = Path(path)
        self._max_bytes = max_bytes

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
            if os.fstat(descriptor).st_size > self._max_bytes:
                self._turn_over(os.fstat(descriptor))
        finally:
            os.close(descriptor)

    def _turn_over(self, written: os.stat_result) -> None:
        """Make the file just written to the older one, unless another process already did (under a lock, so
        two that both saw it full do not turn it over twice, the second replacing the older with a new one)."""
        lock = os.open(_lock_file(self._path), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                current = self._path.stat()
            except FileNotFoundError:
                return
            if (current.st_dev, current.st_ino) == (written.st_dev, written.st_ino):
                os.replace(self._path, older(self._path))
        finally:
            os.close(lock)  # and with it the lock


def older(path: str | Path) -> Path:
    """Where the notes before the current file's are."""
    return Path(f"{path}.1")


def _lock_file(path: str | Path) -> Path:
    return Path(f"{path}.lock")


def remove_notes(path: str | Path) -> None:
    """Remove the notes and every file they made (`saga local`'s stop)."""
    for file in (Path(path), older(path), _lock_file(path)):
        file.unlink(missing_ok=True)


def read_notes(path: str | Path) -> Mapping[str, dict[str, object]]:
    """The newest note of each message id (its last failure), the older file's first; {} when there is none.
    A line that does not read (a write cut short by a kill) is skipped."""
    found: dict[str, dict[str, object]] = {}
    for file in (older(path), Path(path)):
        try:
            text = file.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            try:
                note = json.loads(line)
            except ValueError:
                continue
            if isinstance(note, dict) and isinstance(note.get("messageId"), str):
                found[note["messageId"]] = note
    return found
