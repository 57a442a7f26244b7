"""`python -m tools.docs` (or `make docs`): run every scene against a fresh `saga local` and rewrite the
marked blocks of the README and docs/ with what it printed, and take docs/dashboard.png, the picture of its
dashboard the README shows. `--check` rewrites nothing and exits 1 when
a committed block differs from this run beyond ids, times and durations."""

from __future__ import annotations

import argparse
import sys

from tools.docs import render


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare with the committed blocks; write nothing")
    args = parser.parse_args()
    rendered = render.transcripts(screenshot=None if args.check else render.DASHBOARD_PICTURE)
    if args.check:
        found = render.differences(rendered)
        print("\n\n".join(found) or "every transcript matches a fresh run", file=sys.stderr if found else sys.stdout)
        return 1 if found else 0
    render.write(rendered)
    print("rewrote the transcripts of " + ", ".join(rendered) + f", and {render.DASHBOARD_PICTURE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
