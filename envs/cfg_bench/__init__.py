"""CFG-Bench: fine-grained action cognition as video QA (four tiers, eleven tasks; multiple
choice and judge-scored open answers with a counterfactual gate). Data, prompts and scoring
live here as plain modules; docs/cfg_bench.md says what comes from the originals and how."""
