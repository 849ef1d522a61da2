"""The policies: declarations only (imports nothing heavy)."""

from __future__ import annotations

from harness.plugins import AgentPlugin

ZERO = AgentPlugin(name="zero", kind="policy", target="policies.zero:ZeroPolicy",
                   summary="LIBERO's dummy action (no-op, gripper open) every step")
REPLAY = AgentPlugin(name="replay", kind="policy", target="policies.replay:ReplayPolicy",
                     summary="plays a demonstration's actions (HDF5/NPZ) open-loop")
REMOTE = AgentPlugin(name="remote", kind="policy", target="policies.remote:RemotePolicy", extra="policies",
                     summary="a policy server over websockets (protocol=openpi | starvla)")
VLA = AgentPlugin(name="vla", kind="policy", target="policies.vla:VLAPolicy", extra="models",
                  summary="in-process minimal VLA: HF VLM backbone (+LoRA) + action-chunk head")
LEROBOT = AgentPlugin(name="lerobot", kind="policy", target="policies.lerobot_policy:LeRobotPolicy",
                      summary="LeRobot PreTrainedPolicy in-process (needs lerobot: Python >= 3.12; else serve it)")
