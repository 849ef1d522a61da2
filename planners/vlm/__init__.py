"""VLM planners: a vision-language model in the loop as an EB-ALFRED planner.

``prompt`` builds EmbodiedBench's single-turn prompt (our wording, its
structure), ``parse`` turns model text into action ids, ``backends`` runs a
model (``hf`` in process, batched; ``openai`` against any OpenAI-compatible
server), ``identity`` hashes checkpoints cheaply, and ``planner.VLMPlanner``
ties them together as the ``vlm`` planner.
"""
