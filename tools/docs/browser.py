"""Headless Chromium (Debian's `chromium` package), as the dashboard's test and `make docs` drive it: the
page's DOM after its scripts ran, or a picture of it. Each run gets a fresh profile and nothing that
reaches the network on its own (updates, sync, QUIC), so it works offline and leaves nothing behind."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
)  # fmt: skip
# A hang guard, not a budget: a page load takes a few seconds, more on a loaded machine.
PATIENCE_SECONDS = 180.0


def executable() -> str | None:
    """Where Chromium is, if it is installed."""
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


def _run(url: str, *args: str) -> str:
    found = executable()
    if found is None:
        raise FileNotFoundError("no chromium: `apt-get install chromium` (Debian's package)")
    with tempfile.TemporaryDirectory(prefix="saga-chromium-") as profile:
        done = subprocess.run(  # noqa: S603 - our own arguments
            [found, *FLAGS, f"--user-data-dir={profile}", *args, url],
            capture_output=True,
            text=True,
            timeout=PATIENCE_SECONDS,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited {done.returncode} on {url}: {done.stderr[-2000:]}")
    return done.stdout


def dom(url: str, virtual_seconds: float = 0.0) -> str:
    """The page's DOM once it loaded and, given `virtual_seconds`, its timers ran that long (virtual time:
    as fast as the page's work allows, whatever the machine's load)."""
    budget = (f"--virtual-time-budget={int(virtual_seconds * 1000)}",) if virtual_seconds else ()
    return _run(url, *budget, "--dump-dom")


def screenshot(url: str, path: Path, width: int = 1280, height: int = 720, virtual_seconds: float = 0.0) -> None:
    """A PNG of the page's first `width` x `height` pixels."""
    budget = (f"--virtual-time-budget={int(virtual_seconds * 1000)}",) if virtual_seconds else ()
    _run(url, *budget, f"--window-size={width},{height}", f"--screenshot={path.resolve()}")
