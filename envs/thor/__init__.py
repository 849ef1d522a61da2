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
- :mod:`envs.thor.thor_env`: what ALFRED's ``ThorEnv.step`` adds to a step (looks as
  teleports, the Faucet's ``check_clean``), shared by both suites' backends.
- :mod:`envs.thor.engine`: the household engine's primitives as AI2-THOR calls (the ``alfred`` suite).
- EB-ALFRED's skills issue EmbodiedBench's own controller calls (:mod:`envs.eb_alfred.thor_skills`).
- ``tests/envs/thor/fake.py`` (test code, not shipped): a recording stand-in for the
  controller, not a simulator: ids and poses from the real json_2.1.0 trajectory files and
  ALFRED's layouts, outcomes made up (AI2-THOR cannot start in CI).

CI does not exercise a real AI2-THOR simulator.
"""
