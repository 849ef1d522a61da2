"""The core holds no metric name of a particular suite: the metrics the built-in suites declare
appear in no string of harness/'s code (a key, a column, a default) (docstrings and comments may
mention them as examples), except in the one declaration of a record's own metrics,
harness/scoring/record_fields.py, which every suite reads them from. Cells, labels, formats, statistics, the report, export
and the trackers come from the declarations."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from harness.registry.catalog import SUITES

ROOT = Path(__file__).resolve().parents[2]
BUILT_IN = ("eb_alfred", "alfred", "libero", "eb_manipulation")
#: (file, name) pairs that are not metrics: ``progress`` is also the console's progress-bar option.
NOT_METRICS = {("harness/run/config.py", "progress")}
#: The declaration of the record-field metrics itself.
DECLARATION = "harness/scoring/record_fields.py"


def declared_names() -> set[str]:
    return {m.name for suite in BUILT_IN for m in SUITES.entry(suite).metrics}


def code_tokens(text: str):
    prev = tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            continue
        docstring = tok.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                                             tokenize.NL)
        if not docstring and tok.type == tokenize.STRING:
            yield tok.start[0], tok.string
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            prev = tok.type


def _text(token: str) -> str:
    """A string token's text (prefix and quotes removed); a name as it is."""
    match = re.fullmatch(r"[rRbBfFuU]*('{3}|\"{3}|'|\")(.*)\1", token, flags=re.S)
    return match.group(2) if match else token


def hits(text: str, names: set[str]) -> list[tuple[int, str]]:
    out = []
    for line, token in code_tokens(text):
        word = _text(token)
        if word in names:
            out.append((line, word))
    return out


def test_harness_code_names_no_suite_metric():
    names = declared_names()
    assert {"sr", "gc", "plw_sr", "invalid_rate"} <= names
    found = []
    for path in sorted(ROOT.glob("harness/**/*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == DECLARATION:
            continue
        found += [f"{rel}:{line}: {word}" for line, word in hits(path.read_text(encoding="utf-8"), names)
                  if (rel, word) not in NOT_METRICS]
    for path in sorted(ROOT.glob("harness/report/static/*.js")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        found += [f"{rel}: {n}" for n in names if re.search(rf"\.{n}\b|'{n}'|\"{n}\"", text)]
    assert not found, "suite metric names in the core:\n" + "\n".join(found)


def test_the_scan_finds_a_metric_name():
    """The scan can fail: a core line keyed on a suite's metric is found."""
    names = declared_names()
    assert hits('x = row["sr"]\n', names) == [(1, "sr")]
    assert hits('def f():\n    """sr in a docstring"""\n    return 1\n', names) == []
