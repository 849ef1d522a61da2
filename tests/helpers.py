"""Small helpers shared by several test modules."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def committed_rows(db: Path) -> int:
    """Episode rows committed to a store file, read through a read-only connection
    (0 before the file or its schema exists)."""
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def eb_alfred_requests(n: int) -> list:
    """Agent requests at the first step of ``n`` generated EB-ALFRED episodes (images rendered)."""
    from envs.eb_alfred.suite import EBAlfredSuite
    from harness.interfaces import AgentRequest

    suite = EBAlfredSuite(render=True, generated_per_split=n)
    env = suite.make_env()
    out = []
    for spec in suite.episodes("seen")[:n]:
        obs, info = env.reset(seed=spec.seed, options={"episode": spec})
        out.append(AgentRequest(spec, obs, info))
    return out
