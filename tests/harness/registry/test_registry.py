import pytest

from harness.registry.catalog import EXECUTORS, PLANNERS, POLICIES, SUITES
from harness.registry.loader import Registry, UnknownPluginError


def test_unknown_name_suggests_close_match():
    with pytest.raises(UnknownPluginError) as err:
        SUITES.entry("eb_alfrd")
    assert "did you mean 'eb_alfred'" in str(err.value)


def test_lazy_targets_import_only_when_loaded():
    reg = Registry("thing")
    reg.register("json_dumps", "json:dumps")
    reg.register("missing", "no_such_module_xyz:thing")
    assert reg.names() == ["json_dumps", "missing"]  # listing imports nothing
    assert reg.load("json_dumps")({"a": 1}) == '{"a": 1}'
    from harness.registry.loader import MissingDependencyError

    with pytest.raises(MissingDependencyError, match="needs the package 'no_such_module_xyz'"):
        reg.load("missing")
    reg.register("own", "planners.no_such_planner:Thing")  # our own module missing is a bug: not hidden
    with pytest.raises(ModuleNotFoundError) as info:
        reg.load("own")
    assert not isinstance(info.value, MissingDependencyError)


def test_duplicate_and_malformed_registration_rejected():
    reg = Registry("thing")
    reg.register("a", "json:dumps")
    with pytest.raises(ValueError):
        reg.register("a", "json:loads")
    with pytest.raises(ValueError):
        reg.register("b", "json.dumps")


@pytest.mark.parametrize("registry", [SUITES, PLANNERS, POLICIES, EXECUTORS], ids=lambda r: r.kind)
def test_every_builtin_target_resolves(registry, branches):
    """Each target imports when its extra is installed; in an install without it, it imports or
    fails with one line naming the extra to install, never with another error. Which branch ran
    is asserted (an installed extra must import) and a target left unimported is a skipped branch
    (tests/conftest.py), so CI reruns this test with every extra."""
    from harness.registry.loader import MissingDependencyError, load_target
    from tests.conftest import extra_installed

    ran = 0
    for entry in registry.entries():  # a suite's own agents included
        name = f"{registry.kind} {entry.name}" + (f" ({entry.suite})" if getattr(entry, "suite", None) else "")
        installed = entry.extra is None or extra_installed(entry.extra)
        try:
            target, missing = load_target(entry, registry.kind), None
        except MissingDependencyError as exc:
            target, missing = None, str(exc)
        if missing is not None:
            assert not installed, f"{name}: its extra {entry.extra!r} is installed, yet: {missing}"
            assert f"pip install -e '.[{entry.extra}]'" in missing and "\n" not in missing, (name, missing)
            branches.skip(name, f"the {entry.extra} extra is not installed")
            continue
        assert callable(target), name
        ran += 1
    assert ran + len(branches.skipped) == len(registry.entries()) and ran > 0


def test_config_groups_match_registry_keys():
    """Every registered plugin is a choice of its config group (a generated schema node),
    and every YAML preset in configs/<group>/ names a registered plugin."""
    from hydra.core.config_store import ConfigStore

    from harness.run.config import CONFIG_DIR, group_choices, register_schemas

    register_schemas()
    repo = ConfigStore.instance().repo
    for group, registry in (("suite", SUITES), ("planner", PLANNERS), ("executor", EXECUTORS)):
        assert set(group_choices(group)) == set(registry.names()), group
        stems = {p.stem for p in (CONFIG_DIR / group).glob("*.yaml")}
        stored = {k[: -len(".yaml")] for k in repo.get(group, {})}
        assert stems | stored == set(registry.names()), group


def test_an_entry_point_name_two_packages_register_is_refused_naming_both(monkeypatch):
    """lm-evaluation-harness refuses a duplicate task name; the first one found is never taken silently."""
    from importlib import metadata

    from harness import plugins

    class Dist:
        def __init__(self, name):
            self.name = name

    class EP:
        def __init__(self, name, value, dist):
            self.name, self.value, self.dist = name, value, Dist(dist)

    points = [EP("twin", "harness.registry.catalog:SUITES", "pkg-one"), EP("twin", "harness.registry.catalog:SUITES", "pkg-two")]
    monkeypatch.setattr(metadata, "entry_points", lambda group: points if group == plugins.GROUPS["suite"] else [])
    found = plugins.discover()
    message = found.refused[("suite", "twin")]
    assert "registered by both pkg-one and pkg-two: neither is used" in message and message in found.problems
    registry = Registry("suite")
    registry.refused = {"twin": message}
    with pytest.raises(UnknownPluginError, match="registered by both pkg-one and pkg-two"):
        registry.entry("twin")
