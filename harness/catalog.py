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
    "eb_manipulation", "envs.eb_manipulation.suite:EBManipulationSuite",
    "EmbodiedBench EB-Manipulation on a MuJoCo twin: 5 subsets, 228 episodes (backend: mujoco)",
)

PLANNERS.register("oracle", "planners.oracle:OraclePlanner", "plans from the true state (upper bound; privileged)")
PLANNERS.register("random", "planners.random_planner:RandomPlanner", "one uniformly random valid action per call")

PLANNERS.register("eb_manipulation_oracle", "envs.eb_manipulation.agents:OracleAgent", "EB-Manipulation: discretised actions from the true state (privileged)")
PLANNERS.register("eb_manipulation_random", "envs.eb_manipulation.agents:RandomAgent", "EB-Manipulation: one random in-range 7-integer action per call")

EXECUTORS.register("local", "harness.executors:local_executor", "env slots in this process; batch_size slots")
EXECUTORS.register("process", "harness.executors:process_executor", "one env per worker process; hard timeouts")
