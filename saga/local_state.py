"""Where a running `saga local` listens: it writes a small JSON file when ready and removes it when it
stops; the other `saga` commands read it when no URL is given. Default `.saga/local.json` in the
working directory (each checkout its own system), or $SAGA_STATE_FILE."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path(".saga") / "local.json"
ENVIRONMENT_VARIABLE = "SAGA_STATE_FILE"


def path() -> Path:
    return Path(os.environ.get(ENVIRONMENT_VARIABLE) or DEFAULT_PATH)


def write(
    urls: dict[str, str],
    where: Path | None = None,
    pollers: dict[str, bool] | None = None,
    failure_notes: Path | None = None,
) -> Path:
    """Record `urls` (orchestrator, loans-api, aws) with this process's id, which of its pollers run
    (`pollers`: relay, consumer, sweeper -> True while it runs), and where its consumer notes why each failed
    message failed (`failure_notes`); returns the file."""
    target = where or path()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".tmp")
    recorded: dict[str, Any] = {"pid": os.getpid(), **urls}
    if pollers is not None:
        recorded["pollers"] = dict(pollers)
    if failure_notes is not None:
        recorded["consumerFailureNotes"] = str(failure_notes)
    partial.write_text(json.dumps(recorded, indent=2) + "\n")
    partial.replace(target)  # readers never see half a file
    return target


def read(where: Path | None = None) -> dict[str, Any]:
    """The recorded URLs, if a `saga local` that is still alive wrote them; else {}."""
    try:
        values = json.loads((where or path()).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(values, dict) or not _alive(values.get("pid")):
        return {}
    return values


def pollers(values: dict[str, Any] | None = None) -> dict[str, bool] | None:
    """Which pollers the running `saga local` runs (name -> True while it runs; False: off, `--disable`),
    from `values` (what `read` returned) or the state file; None when no running `saga local` recorded them.
    `saga status` reads it, and so may any other tool that shows the local runtime."""
    recorded = (read() if values is None else values).get("pollers")
    if not isinstance(recorded, dict):
        return None
    return {str(name): running is True for name, running in recorded.items()}


def failure_notes(values: dict[str, Any]) -> Path | None:
    """Where the running `saga local`'s consumer notes why each failed message failed, from what `read` returned."""
    recorded = values.get("consumerFailureNotes")
    return Path(recorded) if isinstance(recorded, str) and recorded else None


def stale(where: Path | None = None) -> str | None:
    """What a state file left by a `saga local` that no longer runs says (a `kill -9` leaves it behind), in
    words for an error; None when there is no such file (none, or its writer still runs)."""
    target = where or path()
    try:
        values = json.loads(target.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(values, dict) or _alive(values.get("pid")):
        return None
    return (
        f"{target} is stale: the saga local that wrote it (pid {values.get('pid')}) no longer runs (killed?), so "
        "its URLs were not used; start `saga local` again (it replaces the file), or delete the file"
    )


def remove(where: Path | None = None) -> None:
    """Remove the file if this process wrote it (another `saga local` may have replaced it since)."""
    target = where or path()
    if read(target).get("pid") == os.getpid():
        target.unlink(missing_ok=True)


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
