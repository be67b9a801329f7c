"""Print one of the README's Quick start commands, as written there.

``python3 .ci/readme_commands.py 1`` prints the install command, ``2`` the test
command: the two fenced ``sh`` blocks under ``## Quick start`` in README.md. .ci/run
runs what this prints, so CI runs exactly what a new user types. Standard library
only: it runs before any venv exists.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def quick_start_commands(text: str) -> list[str]:
    """The ``sh`` blocks of the README's Quick start section, one string each (continuations joined)."""
    m = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.M | re.S)
    if m is None:
        raise SystemExit("readme_commands: README.md has no '## Quick start' section")
    blocks = re.findall(r"^```sh\n(.*?)^```", m.group(1), re.M | re.S)
    return [re.sub(r"\\\n\s*", " ", b).strip() for b in blocks]


def main(argv: list[str]) -> int:
    cmds = quick_start_commands(README.read_text())
    if len(cmds) != 2 or len(argv) != 1 or argv[0] not in ("1", "2"):
        print(f"usage: readme_commands.py 1|2 (README's Quick start has {len(cmds)} sh block(s), expected 2)",
              file=sys.stderr)
        return 2
    print(cmds[int(argv[0]) - 1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
