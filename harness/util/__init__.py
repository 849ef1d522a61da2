"""Helpers every room may use, importing nothing else of the harness: redaction of secrets,
crash-safe spool files, console output, wall-clock budgets, the checkpoint identity (one hasher
for local and served checkpoints), video writing and video sampling for prompts."""
