"""Every built-in plugin, registered once, as lazy ``module:attr`` targets.

Keys are the names used in configs (``configs/suite/eb_alfred.yaml`` <->
``SUITES`` key ``eb_alfred``). Nothing here imports a simulator or a model.
"""

from __future__ import annotations

from harness.registry import Registry

SUITES = Registry("suite")
PLANNERS = Registry("planner")
POLICIES = Registry("policy", "policies")
EXECUTORS = Registry("executor")

SUITES.register(
    "eb_alfred", "envs.eb_alfred.suite:EBAlfredSuite",
    "EmbodiedBench EB-ALFRED: 6 official subsets x 50 + generated seen/unseen splits (backend: household)",
)

SUITES.register(
    "alfred", "envs.alfred.suite:AlfredSuite",
    "ALFRED seen/unseen with FLARE-style triplets: generated splits, EmbodiedBench's 130 valid_seen trials, ALFRED data (backend: household)",
)

PLANNERS.register("oracle", "planners.oracle:OraclePlanner", "plans from the true state (upper bound; privileged)")
PLANNERS.register("alfred_oracle", "envs.alfred.agents:AlfredOraclePlanner", "ALFRED: FLARE triplets from pddl_params and the true state (privileged)")
PLANNERS.register("random", "planners.random_planner:RandomPlanner", "one uniformly random valid action per call")
PLANNERS.register("vlm", "planners.vlm.planner:VLMPlanner", "a vision-language model (backend hf: in process; openai: a server)")
PLANNERS.register("oracle_json", "planners.oracle_json:OracleJSONPlanner", "the oracle's plan as model JSON through the VLM parser (pipeline check)")

EXECUTORS.register("local", "harness.executors:local_executor", "env slots in this process; batch_size slots")
EXECUTORS.register("process", "harness.executors:process_executor", "one env per worker process; hard timeouts")
EXECUTORS.register("ray", "harness.executors_ray:ray_executor",
                   "envs on Ray actors (num_workers actors, ceil(batch_size/num_workers) envs each); ray extra")
