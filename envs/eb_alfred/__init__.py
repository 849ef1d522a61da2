"""EB-ALFRED (EmbodiedBench): skill-language planning on ALFRED household tasks."""
