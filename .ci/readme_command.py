"""Print one of the README's two commands, exactly as README.md writes it, for .ci/run to run.

    python3 .ci/readme_command.py tests   # the code block after "Run the tests:"
    python3 .ci/readme_command.py main    # the code block after "Run the main job"

Read from README.md rather than copied, so what CI runs cannot drift from what the README tells a
new user. Exit 2 with one line when the README no longer holds the block.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
#: The sentence that introduces each command in README.md.
INTRO = {"tests": "Run the tests:", "main": "Run the main job"}


def command(which: str, text: str | None = None) -> str:
    text = README.read_text(encoding="utf-8") if text is None else text
    at = text.find(INTRO[which])
    m = re.compile(r"```bash\n(.*?)\n```", re.S).search(text, at) if at >= 0 else None
    if m is None:
        raise LookupError(f"README.md has no ```bash block after {INTRO[which]!r}")
    return m.group(1).strip()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in INTRO:
        sys.exit(f"usage: python3 {sys.argv[0]} {{{','.join(INTRO)}}}")
    try:
        print(command(sys.argv[1]))
    except LookupError as exc:
        print(f"readme_command: {exc}", file=sys.stderr)
        sys.exit(2)
