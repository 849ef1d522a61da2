"""ProcObject-10K: open-ended grounded VideoQA on procedural clips (an answer plus the time
spans that support it). Data, reply parsing, grounding and judge prompt live here as plain
modules; docs/procobject.md says what comes from the originals and how."""
