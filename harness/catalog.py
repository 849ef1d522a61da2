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

SUITES.register(
    "libero", "envs.libero.suite:LiberoSuite",
    "LIBERO on the real simulator: spatial/object/goal/10/90 (+ LIBERO-PRO perturbations), task x 50 fixed init states",
    extra="libero",
)

SUITES.register(
    "eb_manipulation", "envs.eb_manipulation.suite:EBManipulationSuite",
    "EmbodiedBench EB-Manipulation on a MuJoCo twin: 5 subsets, 228 episodes (backend: mujoco)",
    extra="eb_manipulation",
)

PLANNERS.register("oracle", "planners.oracle:OraclePlanner", "plans from the true state (upper bound; privileged)")
PLANNERS.register("alfred_oracle", "envs.alfred.agents:AlfredOraclePlanner", "ALFRED: FLARE triplets from pddl_params and the true state (privileged)")
PLANNERS.register("random", "planners.random_planner:RandomPlanner", "one uniformly random valid action per call")
PLANNERS.register("vlm", "planners.vlm.planner:VLMPlanner", "a vision-language model (backend hf: in process; openai: a server)",
                  extra="models")
PLANNERS.register("oracle_json", "planners.oracle_json:OracleJSONPlanner", "the oracle's plan as model JSON through the VLM parser (pipeline check)")

POLICIES.register("zero", "policies.zero:ZeroPolicy", "LIBERO's dummy action (no-op, gripper open) every step")
POLICIES.register("replay", "policies.replay:ReplayPolicy", "plays a demonstration's actions (HDF5/NPZ) open-loop")
POLICIES.register("remote", "policies.remote:RemotePolicy", "a policy server over websockets (protocol=openpi | starvla)",
                  extra="policies")
POLICIES.register("vla", "policies.vla:VLAPolicy", "in-process minimal VLA: HF VLM backbone (+LoRA) + action-chunk head",
                  extra="models")
POLICIES.register("lerobot", "policies.lerobot_policy:LeRobotPolicy", "LeRobot PreTrainedPolicy in-process (needs lerobot: Python >= 3.12; else serve it)")

PLANNERS.register("eb_manipulation_oracle", "envs.eb_manipulation.agents:OracleAgent", "EB-Manipulation: discretised actions from the true state (privileged)", extra="eb_manipulation")
PLANNERS.register("eb_manipulation_random", "envs.eb_manipulation.agents:RandomAgent", "EB-Manipulation: one random in-range 7-integer action per call", extra="eb_manipulation")

EXECUTORS.register("local", "harness.executors:local_executor", "env slots in this process; batch_size slots")
EXECUTORS.register("process", "harness.executors:process_executor",
                   "num_workers worker processes, envs_per_worker envs each (default 1); hard timeouts")
EXECUTORS.register("ray", "harness.executors_ray:ray_executor",
                   "envs on Ray actors (num_workers actors, ceil(batch_size/num_workers) envs each)", extra="ray")
