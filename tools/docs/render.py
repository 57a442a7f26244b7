"""Play every scene against one fresh `saga local` and put what it printed in the pages' marked blocks."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from saga import cli_servers
from tools.docs import blocks, browser
from tools.docs.scenes import PAGES, Block, Output, Page, Run, Wait
from tools.docs.session import Runtime, Shell, local_runtime, wait_for

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD_PICTURE = ROOT / "docs" / "dashboard.png"


def shown(command: str, output: str, style: str) -> str:
    """A command and its output: as a terminal shows them (`$ ` before the command, `> ` before each
    continuation line), or as a script (the command as it is, each output line a `# ` comment)."""
    if style == "script":
        return "\n".join([command, *(f"# {line}".rstrip() for line in output.splitlines())])
    return "$ " + command.replace("\n", "\n> ") + (f"\n{output}" if output else "")


def play(block: Block, runtime: Runtime, shell: Shell) -> str:
    """Run the block's steps; its body as the doc shows it."""
    parts: list[str] = []
    for step in block.steps:
        if isinstance(step, Run):
            output = shell.run(step.command).rstrip("\n")
            parts.append(shown(step.command, output if output.strip() else "", block.style))
        elif isinstance(step, Wait):
            wait_for(step.what, functools.partial(step.condition, runtime, shell))
        elif isinstance(step, Output):
            parts.append(step.produce(runtime, shell))
    return "\n".join(parts) + "\n"


def transcripts(pages: tuple[Page, ...] = PAGES, screenshot: Path | None = None) -> dict[str, dict[str, str]]:
    """Each page's block bodies, by name, from one fresh run of `saga local`; with `screenshot`, a picture of
    its dashboard once they have run, written there."""
    cli_servers.use_fake_aws_credentials()  # the waits read the local AWS endpoint
    rendered: dict[str, dict[str, str]] = {}
    with local_runtime() as runtime, tempfile.TemporaryDirectory(prefix="saga-docs-shell-") as cwd:
        shell = Shell(runtime, Path(cwd))
        try:
            for page in pages:
                rendered[page.path] = {block.name: play(block, runtime, shell) for block in page.blocks}
            if screenshot is not None:
                # A few refreshes (virtual time) first: each series' sparkline draws the readings since the page opened.
                browser.screenshot(runtime.urls["dashboard"], screenshot, height=620, virtual_seconds=15)
        finally:
            shell.close()
    return rendered


def differences(rendered: dict[str, dict[str, str]], root: Path = ROOT) -> list[str]:
    """Where the committed pages differ from `rendered` beyond ids, times and durations."""
    found: list[str] = []
    for path, bodies in rendered.items():
        committed = blocks.blocks((root / path).read_text())
        if list(committed) != list(bodies):
            found.append(f"{path}: blocks {list(committed)}, the scenes render {list(bodies)}")
            continue
        want, got = blocks.normalized(committed), blocks.normalized(bodies)
        found += [
            f"{path} [{name}]:\n--- committed\n{want[name]}\n--- this run\n{got[name]}"
            for name in bodies
            if want[name] != got[name]
        ]
    return found


def write(rendered: dict[str, dict[str, str]], root: Path = ROOT) -> None:
    for path, bodies in rendered.items():
        page = root / path
        page.write_text(blocks.render(page.read_text(), bodies))
