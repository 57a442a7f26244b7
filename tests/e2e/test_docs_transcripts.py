"""Every command output the README and docs/ show is what a fresh `saga local` prints: the scenes
(tools/docs/scenes.py) run again against a new runtime, and each marked block must match the committed one
but for ids, times and durations (tools/docs/blocks.py). One runtime start for the whole module."""

from __future__ import annotations

import re

import pytest

from tools.docs import blocks, render, scenes

# One run of every scene (~1 min here, 2 on a loaded machine) is the module fixture's: in the first test's time.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# The tour, once more in the same terminal, right after the first run.
AGAIN = scenes.Page("README.md (again)", tuple(b for b in scenes.README.blocks if b.name == "tour"))


@pytest.fixture(scope="module")
def fresh_run() -> dict[str, dict[str, str]]:
    return render.transcripts((*scenes.PAGES, AGAIN))


def test_every_marked_block_is_a_scene_and_every_scene_is_marked():
    for page in scenes.PAGES:
        assert list(blocks.blocks((render.ROOT / page.path).read_text())) == [b.name for b in page.blocks], page.path


def test_the_committed_transcripts_are_what_a_fresh_run_prints(fresh_run):
    committed = {path: bodies for path, bodies in fresh_run.items() if path != AGAIN.path}
    found = render.differences(committed)
    assert not found, "re-render with `python -m tools.docs` (make docs):\n\n" + "\n\n".join(found)


def test_the_tour_can_be_run_again_and_answers_the_same(fresh_run):
    # Given the tour run twice in one terminal: the second run takes a fresh key, so it makes a new journey
    first, again = fresh_run["README.md"]["tour"], fresh_run[AGAIN.path]["tour"]
    assert blocks.normalized({"tour": first}) == blocks.normalized({"tour": again})
    journeys = re.compile(r'"journeyId": "([0-9a-f-]{36})"')
    assert journeys.findall(first)[0] != journeys.findall(again)[0]
    assert '"status": 409' not in again.split("/cancel")[0]  # no replayed journey refusing the commands


def test_the_mcp_session_calls_the_tools_with_their_own_argument_names(fresh_run):
    session = fresh_run["docs/AGENTS.md"]["mcp-session"]
    assert '"journeyId"' in session
    assert "journey_id" not in session
