"""How many of a lock file's packages an install puts on this machine: its `name==version` lines whose
environment marker holds here (a universal lock also pins what only Windows or WebAssembly installs).
Run by the Makefile with the venv's Python before anything is installed: the standard library and the
`packaging` pip vendors only; without pip, every pinned line counts."""

from __future__ import annotations

import re
import sys

_PIN = re.compile(r"^[A-Za-z0-9][^=\s;]*==[^\s;\\]+\s*(?:;\s*(?P<marker>[^\\]*?))?\s*\\?$")


def applies(marker: str | None) -> bool:
    if not marker:
        return True
    try:
        from pip._vendor.packaging.markers import Marker
    except ImportError:
        return True
    return bool(Marker(marker).evaluate())


def count(lock: str) -> int:
    with open(lock) as lines:
        return sum(1 for line in lines if (pin := _PIN.match(line.rstrip("\n"))) and applies(pin["marker"]))


if __name__ == "__main__":
    print(count(sys.argv[1]))
