"""The local runtime's file of the consumer's failure notes (functions/consumer/failure_notes.py): several
consumer processes append to it at once, for as long as `saga local` runs, and `saga dlq list` reads it whole."""

from __future__ import annotations

import json
import multiprocessing

from functions.consumer.failure_notes import JsonLinesFailureNotes, read_notes, remove_notes

LONG_CAUSE = "\u2603" * 500  # the longest cause kept, each character escaped to six bytes in the line


def _note_many(path: str, writer: int, count: int, max_bytes: int) -> None:
    notes = JsonLinesFailureNotes(path, max_bytes=max_bytes)
    for n in range(count):
        notes.note(f"m-{writer}-{n}", 1, LONG_CAUSE)


def test_the_notes_stay_within_their_bound_however_many_failures_and_keep_the_newest(tmp_path):
    # Given a notes file bounded to 64 KB (each note about 3 KB)
    path = tmp_path / "failures.jsonl"
    notes = JsonLinesFailureNotes(path, max_bytes=64 * 1024)
    # When a long run notes 500 failures
    for n in range(500):
        notes.note(f"m-{n}", n % 5 + 1, LONG_CAUSE)
    # Then what is kept on disk is at most twice the bound (the file and the one before it), not 1.5 MB
    kept = sum(file.stat().st_size for file in tmp_path.iterdir())
    assert kept <= 2 * 64 * 1024 + 4096, f"{kept} bytes kept for a bound of {64 * 1024}"
    # And the newest notes still read, each whole
    found = read_notes(path)
    assert "m-499" in found, sorted(found)[-3:]
    assert found["m-499"]["cause"] == LONG_CAUSE, found["m-499"]
    assert "m-0" not in found, "the oldest note should have made way"


def test_processes_noting_at_once_neither_interleave_lines_nor_lose_a_rotation(tmp_path):
    # Given four consumer processes noting at once into a small bound (the file turns over many times)
    path = tmp_path / "failures.jsonl"
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_note_many, args=(str(path), w, 300, 256 * 1024)) for w in range(4)]
    # When they have all noted their failures
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=300)  # a hang guard
    assert [writer.exitcode for writer in writers] == [0, 0, 0, 0]
    # Then every line kept reads whole, the bound holds, and at least a bound's worth of notes is kept (one
    # turn-over at a time: never the older file replaced by a nearly empty one)
    lines = [line for file in tmp_path.glob("failures.jsonl*") for line in file.read_text().splitlines()]
    garbled = [line[:80] for line in lines if not isinstance(json.loads(line), dict)]
    assert garbled == [], garbled
    kept = sum(file.stat().st_size for file in tmp_path.glob("failures.jsonl*"))
    assert kept <= 2 * 256 * 1024 + 4 * 4096, f"{kept} bytes kept for a bound of {256 * 1024}"
    assert kept >= 256 * 1024, f"{kept} bytes kept for a bound of {256 * 1024}: a turn-over lost notes"
    assert len(read_notes(path)) == len(lines), f"{len(read_notes(path))} notes read of {len(lines)} lines"


def test_removing_the_notes_removes_every_file_they_made(tmp_path):
    # Given notes that turned over once
    path = tmp_path / "failures.jsonl"
    notes = JsonLinesFailureNotes(path, max_bytes=4096)
    for n in range(4):
        notes.note(f"m-{n}", 1, LONG_CAUSE)
    # When `saga local` stops and removes them
    remove_notes(path)
    # Then nothing of them is left
    assert list(tmp_path.iterdir()) == []
