"""Hand-built worlds for the EB-ALFRED executor tests (the household tests' fixture)."""

from tests.envs.household.conftest import world_of  # noqa: F401  (a pytest fixture)
