"""The docs' transcript blocks (tools/docs/blocks.py): found by their markers, rewritten in place, and
compared on everything but ids, times and durations."""

from __future__ import annotations

import pytest

from tools.docs import render as render_module
from tools.docs.blocks import UnknownBlock, blocks, normalized, render

PAGE = """# A page

<!-- transcript: tour -->
```console
$ saga journey show $J
journey 01a23193-52d5-7396-aab7-98275eb82656
```
<!-- /transcript -->

prose

<!-- transcript: status -->
```console
old
```
<!-- /transcript -->
"""

A = "01a23193-52d5-7396-aab7-98275eb82656"
B = "01a23190-9acc-758c-9ea5-7090e3bf3dc3"


def test_the_marked_blocks_are_found_by_name_in_page_order():
    assert blocks(PAGE) == {"tour": f"$ saga journey show $J\njourney {A}\n", "status": "old\n"}


def test_render_replaces_each_body_and_leaves_the_prose_alone():
    # When the blocks are rendered with new bodies
    page = render(PAGE, {"tour": "$ new\n", "status": "ok\n"})
    # Then each body is the new one, and everything outside the blocks is as it was
    assert blocks(page) == {"tour": "$ new\n", "status": "ok\n"}
    assert page.replace("$ new\n", "").replace("ok\n", "") == PAGE.replace(
        f"$ saga journey show $J\njourney {A}\n", ""
    ).replace("old\n", "")


def test_a_block_no_scene_renders_is_refused():
    with pytest.raises(UnknownBlock, match="status"):
        render(PAGE, {"tour": "$ new\n"})


def test_ids_are_numbered_by_first_appearance_across_a_pages_blocks():
    # Given a page that shows the same journey in two blocks, and one that shows two journeys
    same = normalized({"create": f"journey {A}\n", "show": f"journey {A}\n"})
    two = normalized({"create": f"journey {A}\n", "show": f"journey {B}\n"})
    # Then the same journey keeps its number, and another journey gets another
    assert same == {"create": "journey <id-1>\n", "show": "journey <id-1>\n"}
    assert two["show"] == "journey <id-2>\n"
    assert same != two


def test_keys_made_of_uuids_times_and_durations_are_normalized():
    body = (
        "idempotencyKey used: mcp-7d71a6f9-9a20-4ce4-aff2-96e0bf81a5b4\n"
        "committed 2026-11-30T08:11:57.886250Z  published 2026-11-30T08:11:57.930662+00:00\n"
        "OUT OF SYNC x  (behind, for 12 s, since 2026-11-30T08:11:57+00:00)\n"
    )
    assert normalized({"b": body})["b"] == (
        "idempotencyKey used: mcp-<id-1>\n"
        "committed <time>Z  published <time>+00:00\n"
        "OUT OF SYNC x  (behind, for <n> s, since <time>+00:00)\n"
    )


def test_counts_states_and_exit_codes_are_compared_as_they_are():
    # A DLQ message's receive count, a version and an exit code are what the reader must see
    for one, other in (
        ("receives=3", "receives=4"),
        ("disbursed v3", "disbursed v2"),
        ("agree: yes\n0", "agree: yes\n1"),
    ):
        assert normalized({"b": one}) != normalized({"b": other})


def test_which_road_applied_an_event_first_is_a_race_not_a_difference():
    reply = "applied by reply at 2026-12-01T12:27:49.023161Z -> v1 (road 2's delivery of it is a no-op)"
    outbox = "applied by outbox at 2026-12-01T12:27:49.023161Z -> v1"
    assert normalized({"b": reply}) == normalized({"b": outbox})
    assert normalized({"b": reply}) != normalized({"b": outbox.replace("v1", "v2")})


def test_a_committed_block_that_shows_another_output_is_reported(tmp_path):
    # Given a committed page whose block shows a journey disbursed at v3
    (tmp_path / "PAGE.md").write_text(PAGE.replace("old\n", "disbursed v3\n"))
    committed = blocks((tmp_path / "PAGE.md").read_text())
    # When a run prints the same with other ids and times, nothing is reported
    same = {"tour": committed["tour"].replace(A, B), "status": "disbursed v3\n"}
    assert render_module.differences({"PAGE.md": same}, root=tmp_path) == []
    # When a run prints another version, or blocks the page does not mark, each is reported
    [changed] = render_module.differences({"PAGE.md": {**same, "status": "disbursed v2\n"}}, root=tmp_path)
    assert "[status]" in changed
    assert "disbursed v2" in changed
    [missing] = render_module.differences({"PAGE.md": {"tour": same["tour"]}}, root=tmp_path)
    assert "blocks ['tour', 'status']" in missing
