"""AI2-THOR 2.1.0 backend shared by the ``alfred`` and ``eb_alfred`` suites.

Written against ai2thor's real Python API (``ai2thor.controller.Controller`` of
ai2thor==2.1.0, the version ALFRED and EmbodiedBench's EB-ALFRED use; install
with ``pip install -e .[thor]``). Nothing here imports ai2thor at module level.

- :mod:`envs.thor.session`: controller lifecycle; headless start on Xvfb
  (ai2thor 2.1.0 predates CloudRendering); a crashed or hung Unity process is
  detected by timeout, killed and restarted; bounded retries.
- :mod:`envs.thor.restore`: ALFRED's scene restore, call for call.
- :mod:`envs.thor.state`: the household ``World`` rebuilt from the simulator's
  object metadata plus ALFRED's cleaned/heated/cooled bookkeeping, so goal
  conditions are counted by the same :func:`envs.household.goal_conditions_met`.
- :mod:`envs.thor.engine`: the household engine's primitives as AI2-THOR calls.
- ``tests/envs/thor/fake.py`` (test code, not shipped): a FAKE controller replaying
  payloads built from the real json_2.1.0 trajectory files (AI2-THOR cannot start in CI).

CI does not exercise a real AI2-THOR simulator.
"""
