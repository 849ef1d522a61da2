"""The results store: one SQLite file of runs, sessions, episodes, transcripts and judgements,
written crash-safe by one writer, checked and repaired (docs/reliability.md)."""
