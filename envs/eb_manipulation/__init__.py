"""EB-Manipulation (EmbodiedBench) on a MuJoCo twin: see docs_eb_manipulation.md."""
