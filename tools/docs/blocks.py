"""The marked blocks of a Markdown file, and what may differ between two runs of the same commands.

A transcript block is a fenced block between two comments, the opening one naming it:

    <!-- transcript: tour -->
    ```console
    $ curl ...
    {...}
    ```
    <!-- /transcript -->

`render` replaces each block's body with a scene's output; `normalized` makes two runs comparable:
ids (UUIDs, UUIDv7s, and the keys made of them) become `<id-N>`, numbered by first appearance in the
file, so the same journey must appear wherever it appeared before; times become `<time>` followed by
their zone suffix as written (`<time>Z`: a change of format is a difference), durations `<n> s`.
Nothing else is left out of the comparison."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

_BLOCK = re.compile(
    r"<!-- transcript: (?P<name>[\w-]+) -->\n```(?P<lang>[\w-]*)\n(?P<body>.*?)```\n<!-- /transcript -->",
    re.DOTALL,
)
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
# A time's value differs between runs; its zone suffix (`Z`, `+00:00`, none) is its wire format, and is kept.
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?P<zone>Z|[+-]\d\d:\d\d)?")
# The audit's "for 3 s" and "ready in 4.2s": how long something took or lasted.
_DURATION = re.compile(r"\b(for|in) \d+(?:\.\d+)? ?s\b")
# Which road applied an event first is a race between road 1's reply and road 2's delivery (both
# correct: the other's delivery is a no-op); the version it made and the time are what the record says.
_ROAD = re.compile(r"applied by (?:reply|outbox) at (<time>\S*) -> (v\d+)(?: \(road 2's delivery of it is a no-op\))?")


class UnknownBlock(ValueError):
    """A block the scenes do not render (or a scene whose block is missing)."""


def blocks(text: str) -> dict[str, str]:
    """Each marked block's body, by name, in the order they appear."""
    found: dict[str, str] = {}
    for match in _BLOCK.finditer(text):
        if match["name"] in found:
            raise UnknownBlock(f"transcript {match['name']!r} appears twice")
        found[match["name"]] = match["body"]
    return found


def render(text: str, bodies: Mapping[str, str]) -> str:
    """`text` with each marked block's body replaced by `bodies[name]`; every block must have one."""
    missing = set(blocks(text)) - set(bodies)
    if missing:
        raise UnknownBlock(f"no scene renders transcript(s) {sorted(missing)}")

    def replace(match: re.Match[str]) -> str:
        body = bodies[match["name"]].rstrip("\n") + "\n"
        return f"<!-- transcript: {match['name']} -->\n```{match['lang']}\n{body}```\n<!-- /transcript -->"

    return _BLOCK.sub(replace, text)


@dataclass
class Normalizer:
    """Normalizes the blocks of one file in order: an id keeps its number across the file's blocks."""

    ids: dict[str, str] = field(default_factory=dict)

    def __call__(self, body: str) -> str:
        body = _UUID.sub(lambda m: self.ids.setdefault(m[0], f"<id-{len(self.ids) + 1}>"), body)
        body = _TIME.sub(lambda m: f"<time>{m['zone'] or ''}", body)
        body = _DURATION.sub(lambda m: f"{m[1]} <n> s", body)
        return _ROAD.sub(r"applied at \1 -> \2", body)


def normalized(bodies: Mapping[str, str]) -> dict[str, str]:
    """The bodies of one file (in file order) with ids, times and durations made comparable."""
    normalize = Normalizer()
    return {name: normalize(body) for name, body in bodies.items()}
