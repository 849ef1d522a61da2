"""The core names no suite in its logic: harness/ reaches suites only through the registry.

Every code token (names, strings that are not docstrings) of every module under harness/
is searched for a built-in suite's name; comments and docstrings may
mention them (as examples)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUITE_WORDS = re.compile(r"eb_alfred|alfred|libero|eb_manipulation|household", re.I)


def code_hits(text: str) -> list[tuple[int, str]]:
    """(line, token) of every non-comment, non-docstring token naming a suite."""
    hits = []
    prev = tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            continue
        # a string that starts a logical line is a docstring (or a bare string statement)
        docstring = tok.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                                             tokenize.NL)
        if not docstring and tok.type not in (tokenize.NL, tokenize.NEWLINE) and SUITE_WORDS.search(tok.string):
            hits.append((tok.start[0], tok.string[:80]))
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            prev = tok.type
    return hits


def test_harness_code_names_no_suite():
    files = sorted(p for p in ROOT.glob("harness/**/*.py"))
    assert files
    found = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        found += [f"{rel}:{line}: {tok}" for line, tok in code_hits(path.read_text(encoding="utf-8"))]
    assert not found, "harness/ names a suite in its code:\n" + "\n".join(found)


def test_the_check_sees_code_but_not_docs():
    text = '"""About eb_alfred."""\n# libero here\nx = 1\nSUITE = "alfred"\ndef f():\n    """household."""\n    return libero\n'
    assert [line for line, _ in code_hits(text)] == [4, 7]
