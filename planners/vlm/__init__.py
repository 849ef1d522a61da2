"""VLM planners: a vision-language model in the loop, speaking each suite's prompt.

``backends`` runs a model (``hf`` in process, batched; ``openai`` against any
OpenAI-compatible server), ``family`` holds EmbodiedBench's per-model-family
protocol defaults, ``identity`` hashes checkpoints cheaply, and
``planner.VLMPlanner`` ties a backend to the prompt adapter of the suite it runs
(each suite's prompt, output schema and parser live in its envs package).
"""
