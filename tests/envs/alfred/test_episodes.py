"""ALFRED episodes from EmbodiedBench's json_2.1.0, an ALFRED data folder, and the generator."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envs.alfred.episodes import expert_lengths, load_alfred_split
from envs.alfred.protocol import NAVIGATION_ACTIONS
from envs.alfred.suite import AlfredSuite
from envs.eb_alfred.protocol import VALID_UNSEEN_FLOOR_PLANS

KEYCHAIN = "pick_two_obj_and_place-KeyChain-None-Sofa-202/trial_T20190908_102840_789300"


def test_eb_valid_seen_split(data_dir: Path) -> None:
    suite = AlfredSuite(eb_data_dir=str(data_dir), render=False, generated_per_split=0)
    eps = suite.episodes("eb_valid_seen")
    assert len(eps) == 213
    assert len({e.episode_id.rsplit("/", 1)[0] for e in eps}) == 130
    assert len({e.key for e in eps}) == 213
    ep = next(e for e in eps if e.episode_id == f"{KEYCHAIN}/0")
    assert ep.instruction == "Put two sets of keys on the couch."
    assert ep.metadata["task_type"] == "pick_two_obj_and_place"
    # L*: 4 interactions + 4 GotoLocation subgoals; ALFRED's raw low-level length 57.
    assert ep.metadata["expert_length"] == 8 and ep.metadata["expert_low_actions"] == 57
    assert ep.metadata["scene"]["counts"]["KeyChain"] == 4
    assert {e.metadata["task_type"] for e in eps} >= {"pick_heat_then_place_in_recep", "look_at_obj_in_light"}
    proto = suite.protocol("eb_valid_seen")
    assert proto["max_steps"] == 1000 and proto["max_fails"] == 10 and "privileged" in proto["navigation"]


def test_eb_valid_seen_is_the_files_the_splits_name(tmp_path: Path, data_dir: Path) -> None:
    """EmbodiedBench's full json_2.1.0 (what `harness fetch eb_alfred` lays out) holds more trials
    than EB-ALFRED's 300 episodes use: the split takes only the files splits.json names, so the
    same 213 episodes (and the same data digest) whatever else the folder holds."""
    (tmp_path / "splits").mkdir()
    (tmp_path / "splits" / "splits.json").symlink_to(data_dir / "splits" / "splits.json")
    (tmp_path / "json_2.1.0").mkdir()
    for task in (data_dir / "json_2.1.0").iterdir():
        (tmp_path / "json_2.1.0" / task.name).symlink_to(task)
    extra = tmp_path / "json_2.1.0" / "pick_and_place_simple-Apple-None-Fridge-1" / "trial_T0" / "pp"
    extra.mkdir(parents=True)
    shutil.copyfile(data_dir / "json_2.1.0" / KEYCHAIN / "pp" / "ann_0.json", extra / "ann_0.json")
    full = AlfredSuite(eb_data_dir=str(tmp_path), render=False, generated_per_split=0)
    shared = AlfredSuite(eb_data_dir=str(data_dir), render=False, generated_per_split=0)
    assert [e.episode_id for e in full.episodes("eb_valid_seen")] == \
        [e.episode_id for e in shared.episodes("eb_valid_seen")]
    assert full.protocol("eb_valid_seen")["data_digest"] == shared.protocol("eb_valid_seen")["data_digest"]
    (tmp_path / "splits" / "splits.json").unlink()  # no splits file: every trajectory file is an episode
    bare = AlfredSuite(eb_data_dir=str(tmp_path), render=False, generated_per_split=0)
    assert len(bare.episodes("eb_valid_seen")) == 214


def test_expert_length_counts_interactions_and_gotos(data_dir: Path) -> None:
    traj = json.loads((data_dir / "json_2.1.0" / KEYCHAIN / "pp" / "ann_0.json").read_text())
    mine, raw = expert_lengths(traj)
    low = traj["plan"]["low_actions"]
    assert raw == len(low)
    assert mine == sum(a["api_action"]["action"] not in NAVIGATION_ACTIONS for a in low) + sum(
        h["discrete_action"]["action"] == "GotoLocation" for h in traj["plan"]["high_pddl"])


def _alfred_tree(tmp_path: Path, data_dir: Path) -> Path:
    """An ALFRED-layout data folder built from two real trajectory files."""
    root = tmp_path / "data" / "json_2.1.0"
    src = data_dir / "json_2.1.0" / KEYCHAIN / "pp" / "ann_0.json"
    dest = root / "valid_seen" / KEYCHAIN / "traj_data.json"
    dest.parent.mkdir(parents=True)
    shutil.copy(src, dest)
    traj = json.loads(src.read_text())
    for key in ("task_type", "pddl_params"):  # ALFRED's test files carry no goal
        traj.pop(key)
    test = root / "tests_seen" / "x" / "trial_T0" / "traj_data.json"
    test.parent.mkdir(parents=True)
    test.write_text(json.dumps(traj))
    return tmp_path / "data"


def test_alfred_data_folder_valid_and_tests(tmp_path: Path, data_dir: Path) -> None:
    root = _alfred_tree(tmp_path, data_dir)
    suite = AlfredSuite(alfred_data_dir=str(root), render=False, generated_per_split=0)
    eps = suite.episodes("valid_seen")
    anns = json.loads((root / "json_2.1.0/valid_seen" / KEYCHAIN / "traj_data.json").read_text())
    assert len(eps) == len(anns["turk_annotations"]["anns"]) >= 2  # one episode per annotation
    assert [e.episode_id for e in eps] == [f"{KEYCHAIN}/{r}" for r in range(len(eps))]
    tests = suite.episodes("tests_seen")
    assert tests and all(e.metadata["task_type"] is None for e in tests)
    flat = root / "json_2.1.0" / "tests_unseen" / "trial_T9" / "traj_data.json"  # no task folder
    flat.parent.mkdir(parents=True)
    shutil.copy(root / "json_2.1.0" / "tests_seen" / "x" / "trial_T0" / "traj_data.json", flat)
    assert [e.episode_id for e in suite.episodes("tests_unseen")][0] == "trial_T9/0"
    assert suite.protocol("valid_seen")["data_digest"] != suite.protocol("tests_seen")["data_digest"]
    # A goal-less trajectory in a split with goals is refused.
    shutil.copytree(root / "json_2.1.0/tests_seen", root / "json_2.1.0/valid_unseen")
    with pytest.raises(ValueError, match="without task_type"):
        load_alfred_split(root / "json_2.1.0", "valid_unseen")


def test_missing_data_says_how_to_fix(monkeypatch) -> None:
    monkeypatch.delenv("ALFRED_DATA_DIR", raising=False)
    suite = AlfredSuite(render=False, generated_per_split=0)
    with pytest.raises(FileNotFoundError, match="ALFRED_DATA_DIR"):
        suite.episodes("valid_unseen")
    with pytest.raises(KeyError):
        suite.episodes("train")


def test_generated_splits_use_alfred_floor_plans() -> None:
    suite = AlfredSuite(render=False, generated_per_split=12)
    unseen = suite.episodes("unseen")
    assert len(unseen) == 12 and {e.metadata["floor_plan"] for e in unseen} <= set(VALID_UNSEEN_FLOOR_PLANS)
    seen = suite.episodes("seen")
    assert not {e.metadata["floor_plan"] for e in seen} & set(VALID_UNSEEN_FLOOR_PLANS)
    assert all(e.suite == "alfred" and e.instruction for e in [*unseen, *seen])
    assert [e.instruction for e in suite.episodes("unseen")] == [e.instruction for e in unseen]


def test_test_split_run_gives_an_action_sequence_dump(tmp_path: Path, data_dir: Path, capsys) -> None:
    from envs.alfred.dump import main as dump_main
    from harness.run.runner import Runner
    from harness.store import ResultStore
    from harness.types import RunSpec

    class TwoSteps:
        """Its first call for an episode plans two steps, every later one nothing. The count is
        per episode: the pipelined runner interleaves episodes' resets and calls in any order."""

        name, privileged = "two_steps", False

        def __init__(self):
            self.calls: dict[str, int] = {}

        def identity(self):
            return {"name": self.name}

        def reset(self, episode):
            self.calls[episode.episode_id] = 0

        def act(self, requests):
            plans = []
            for r in requests:
                self.calls[r.episode.episode_id] += 1
                first = self.calls[r.episode.episode_id] == 1
                plans.append(["GotoLocation Sofa", "GotoLocation SideTable"] if first else [])
            return plans

    suite = AlfredSuite(alfred_data_dir=str(_alfred_tree(tmp_path, data_dir)), render=False, generated_per_split=0)
    store = ResultStore(tmp_path / "out")
    agent = TwoSteps()
    spec = RunSpec(suite="alfred", split="tests_seen", agent=agent.name, variant="v")
    records = Runner(spec, suite, agent, store).run().records
    store.close()
    assert records and all(r.gc_total == 0 and not r.success for r in records)
    assert dump_main([str(tmp_path / "out")]) == 0
    dumped = json.loads(capsys.readouterr().out)
    assert dumped["tests_seen"] == [{"trial_T0": ["GotoLocation Sofa", "GotoLocation SideTable"]}] * len(records)
