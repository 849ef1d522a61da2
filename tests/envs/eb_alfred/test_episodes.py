"""Official subsets from EmbodiedBench data; generated splits; the suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envs.eb_alfred.episodes import EpisodeDataError, load_official, parse_task_path, task_from_metadata
from envs.eb_alfred.generator import floor_plans, generate
from envs.eb_alfred.protocol import (
    EPISODES_PER_SUBSET, OFFICIAL_SPLITS, STYLES, TEST_UNSEEN_FLOOR_PLANS, VALID_UNSEEN_FLOOR_PLANS,
)
from envs.eb_alfred.suite import EBAlfredSuite
from harness.params import identity_of
from envs.household import (
    TaskSpec, all_floor_plans, alfred_constants, build_world, floor_plan_inventory, goal_conditions_met, room_type,
)
from harness.interfaces import Suite


def test_parse_task_path_sliced_and_look_at() -> None:
    p = parse_task_path("pick_heat_then_place_in_recep-AppleSliced-None-GarbageCan-11/trial_T1")
    assert p.task_spec() == TaskSpec("pick_heat_then_place_in_recep", "Apple", "GarbageCan", object_sliced=True)
    assert p.floor_plan == 11 and p.trial == "trial_T1"
    p = parse_task_path("look_at_obj_in_light-Pillow-None-FloorLamp-223/trial_T2")
    assert p.task_spec() == TaskSpec("look_at_obj_in_light", "Pillow", "", toggle_target="FloorLamp")
    p = parse_task_path("pick_and_place_with_movable_recep-Spoon-Cup-SinkBasin-6/trial_T3")
    assert p.task_spec().mrecep_target == "Cup"


@pytest.mark.parametrize("bad", ["no-slash", "pick_and_place_simple-Book-Sofa-229/trial",
                                 "jump_around-Book-None-Sofa-229/trial", "pick_and_place_simple-Book-None-Sofa-x/t"])
def test_parse_task_path_rejects_malformed(bad: str) -> None:
    with pytest.raises(EpisodeDataError):
        parse_task_path(bad)


def test_official_splits_load(data_dir: Path) -> None:
    official = load_official(data_dir)
    assert tuple(official) == OFFICIAL_SPLITS
    for split, eps in official.items():
        assert len(eps) == EPISODES_PER_SUBSET
        assert [e.episode_id for e in eps] == [f"{split}/{i:02d}" for i in range(50)]
    first = official["base"][0]
    assert first.instruction == "Rinse off a ladle and move it to the table."
    assert first.metadata["task_type"] == "pick_clean_then_place_in_recep"
    assert first.metadata["floor_plan"] == 4
    assert {e.metadata["task_type"] for e in official["long_horizon"]} <= {
        "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep", "pick_two_obj_and_place"}
    sources = {e.metadata["pddl_source"] for eps in official.values() for e in eps}
    if (data_dir / "json_2.1.0").is_dir():  # EmbodiedBench's real folder: all 300 have a trajectory
        assert sources == {"trajectory"}
        assert all(e.metadata["trajectory"].startswith("json_2.1.0/") for eps in official.values() for e in eps)
    else:
        assert "trajectory" in sources
    from_traj = [e for eps in official.values() for e in eps if e.metadata["pddl_source"] == "trajectory"]
    assert any(e.metadata["pddl_params"]["mrecep_target"] == "Cup" for e in from_traj)


def test_official_split_without_data_says_how_to_fix(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("EB_ALFRED_DATA_DIR", raising=False)
    suite = EBAlfredSuite(data_dir=None, generated_per_split=0)
    with pytest.raises(FileNotFoundError, match="EB_ALFRED_DATA_DIR") as err:
        suite.episodes("base")
    assert "harness fetch eb_alfred" in str(err.value) and "EmbodiedBench" in str(err.value)
    with pytest.raises(FileNotFoundError):
        EBAlfredSuite(data_dir=str(tmp_path)).episodes("spatial")
    with pytest.raises(FileNotFoundError):
        suite.protocol("base")
    assert "splits_sha256" not in suite.protocol("seen")


def test_malformed_splits_file_gives_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "splits").mkdir()
    path = tmp_path / "splits" / "splits.json"
    path.write_text("{not json")
    with pytest.raises(EpisodeDataError, match="not valid JSON"):
        load_official(tmp_path)
    path.write_text(json.dumps({s: [] for s in OFFICIAL_SPLITS[:-1]}))
    with pytest.raises(EpisodeDataError, match="long_horizon"):
        load_official(tmp_path)
    bad = {s: [{"task": "pick_and_place_simple-Book-None-Sofa-229/t", "repeat_idx": 0}] for s in OFFICIAL_SPLITS}
    path.write_text(json.dumps(bad))
    with pytest.raises(EpisodeDataError, match="instruction"):
        load_official(tmp_path)
    bad = {s: [{"task": "broken", "repeat_idx": 0, "instruction": "x"}] for s in OFFICIAL_SPLITS}
    path.write_text(json.dumps(bad))
    with pytest.raises(EpisodeDataError, match="broken"):
        load_official(tmp_path)


def test_suite_protocol_and_splits(data_dir: Path) -> None:
    suite = EBAlfredSuite(data_dir=str(data_dir), render=False, generated_per_split=6)
    assert isinstance(suite, Suite)
    assert suite.name == "eb_alfred" and suite.version
    assert tuple(suite.splits()) == (*OFFICIAL_SPLITS, "seen", "unseen")
    proto = suite.protocol("base")
    assert proto["max_steps"] == 30 and proto["max_invalid_actions"] == 10 and suite.params.backend == "household"
    assert len(proto["splits_sha256"]) == 64
    json.dumps(proto)
    seen = suite.protocol("seen")
    assert "splits_sha256" not in seen and identity_of(suite.params)["generator_seed"] == 0 and seen["max_steps"] == 30
    json.dumps(seen)
    assert len(suite.episodes("visual_appearance")) == 50
    assert len(suite.episodes("seen")) == 6
    with pytest.raises(KeyError):
        suite.episodes("nope")


def test_generated_splits_floor_plans() -> None:
    assert VALID_UNSEEN_FLOOR_PLANS == (10, 219, 308, 424)
    assert floor_plans("unseen") == VALID_UNSEEN_FLOOR_PLANS
    seen = floor_plans("seen")
    assert len(seen) == 108  # ALFRED's train floor plans (oct21.json)
    assert not set(seen) & (set(VALID_UNSEEN_FLOOR_PLANS) | set(TEST_UNSEEN_FLOOR_PLANS))
    assert set(seen) | set(VALID_UNSEEN_FLOOR_PLANS) | set(TEST_UNSEEN_FLOOR_PLANS) == set(all_floor_plans())


def test_generator_is_deterministic_and_valid() -> None:
    a = generate("unseen", 14, seed=3)
    b = generate("unseen", 14, seed=3)
    assert a == b
    assert generate("unseen", 14, seed=4) != a
    consts = alfred_constants()
    assert [e.episode_id for e in a] == [f"unseen/{i:03d}" for i in range(14)]
    for e in a:
        fp = e.metadata["floor_plan"]
        assert fp in VALID_UNSEEN_FLOOR_PLANS
        assert e.metadata["style"] in STYLES
        room = floor_plan_inventory(fp).room_type
        assert room in consts.goals_valid[e.metadata["task_type"]]
        assert e.instruction and e.instruction[0].isupper()
    assert {e.metadata["style"] for e in a} == set(STYLES)
    seen = generate("seen", 10, seed=0)
    assert all(e.metadata["floor_plan"] in floor_plans("seen") for e in seen)


def test_every_official_task_builds_unsolved_on_its_floor_plan(data_dir: Path) -> None:
    """The 128 distinct (task, floor plan) pairs of EB-ALFRED's 300 episodes all build, unsolved."""
    pairs = {}
    for episodes in load_official(data_dir).values():
        for e in episodes:
            pairs[(int(e.metadata["floor_plan"]), task_from_metadata(e.metadata))] = e.episode_id
    assert len(pairs) == 128
    for floor_plan, task in pairs:
        world = build_world(floor_plan, 0, task)
        s, ts = goal_conditions_met(world, task)
        assert s == 0 and ts >= 1, (floor_plan, task)
        assert room_type(floor_plan) in alfred_constants().goals_valid[task.task_type]


def _write_data(root: Path, folder: str, task: str, params: dict) -> None:
    (root / "splits").mkdir(parents=True, exist_ok=True)
    entry = {"task": task, "repeat_idx": 0, "instruction": "do it"}
    (root / "splits" / "splits.json").write_text(json.dumps({s: [entry] for s in OFFICIAL_SPLITS}))
    traj = root / folder / task / "pp"
    traj.mkdir(parents=True, exist_ok=True)
    (traj / "ann_0.json").write_text(json.dumps({"pddl_params": params, "task_type": "pick_and_place_simple"}))


@pytest.mark.parametrize("folders", [("trajectories",), ("json_2.1.0",), ("trajectories", "json_2.1.0")])
def test_trajectory_folder_real_name_accepted_and_preferred(tmp_path: Path, folders) -> None:
    task = "pick_and_place_simple-Book-None-Sofa-229/trial_T1"
    base = {"object_target": "Book", "parent_target": "Sofa", "mrecep_target": "", "toggle_target": "",
            "object_sliced": False}
    for folder in folders:
        # The parent differs per folder so the test sees which file was read.
        _write_data(tmp_path, folder, task, dict(base, parent_target="Sofa" if folder == "trajectories" else "Bed"))
    ep = load_official(tmp_path)["base"][0]
    want = "json_2.1.0" if "json_2.1.0" in folders else "trajectories"
    assert ep.metadata["trajectory"] == f"{want}/{task}/pp/ann_0.json"
    assert ep.metadata["pddl_params"]["parent_target"] == ("Bed" if want == "json_2.1.0" else "Sofa")
    assert ep.metadata["pddl_source"] == "trajectory"


def test_run_identity_follows_what_is_loaded(data_dir: Path, tmp_path: Path) -> None:
    """The same splits.json without the trajectory files restores no
    scene, so its protocol (hence run identity) must differ from the full folder's."""
    (tmp_path / "splits").mkdir()
    (tmp_path / "splits" / "splits.json").write_bytes((data_dir / "splits" / "splits.json").read_bytes())
    full = EBAlfredSuite(data_dir=str(data_dir), render=False, generated_per_split=0).protocol("base")
    bare = EBAlfredSuite(data_dir=str(tmp_path), render=False, generated_per_split=0).protocol("base")
    assert full["splits_sha256"] == bare["splits_sha256"]
    assert full["episodes_sha256"] != bare["episodes_sha256"]
    again = EBAlfredSuite(data_dir=str(data_dir), render=False, generated_per_split=0).protocol("base")
    assert again == full


@pytest.mark.parametrize("task", [
    "../pick_and_place_simple-Book-None-Sofa-229/trial_T1",
    "pick_and_place_simple-Book-None-Sofa-229/../../../etc",
    "pick_and_place_simple-Book-None-Sofa-229/..",
    "/abs/pick_and_place_simple-Book-None-Sofa-229/trial",
    "pick_and_place_simple-Book-None-Sofa-229/trial/../../x",
])
def test_task_paths_cannot_leave_the_data_folder(tmp_path: Path, task: str) -> None:
    """A splits.json ``task`` with '..' or an absolute path is refused."""
    (tmp_path / "splits").mkdir()
    entry = {"task": task, "repeat_idx": 0, "instruction": "x"}
    (tmp_path / "splits" / "splits.json").write_text(json.dumps({s: [entry] for s in OFFICIAL_SPLITS}))
    with pytest.raises(EpisodeDataError, match="no '..'"):
        load_official(tmp_path)


def test_missing_data_names_fetch_and_the_variable(monkeypatch, tmp_path: Path) -> None:
    """The error points at `harness fetch eb_alfred` and EB_ALFRED_DATA_DIR, not a Python API."""
    monkeypatch.delenv("EB_ALFRED_DATA_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError) as err:
        EBAlfredSuite(data_dir=str(tmp_path / "nowhere"), generated_per_split=0).episodes("base")
    msg = str(err.value)
    assert "harness fetch eb_alfred" in msg and "EB_ALFRED_DATA_DIR" in msg
    assert "EBAlfredSuite(" not in msg and "\n" not in msg
