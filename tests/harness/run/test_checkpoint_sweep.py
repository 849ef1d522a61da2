"""Checkpoint sweeps (``+experiment=checkpoint_sweep``, harness/run/sweep.py): the seeded
selection / held-out partition, the race replayed from records, and an end-to-end sweep of
five scripted stand-in checkpoints with known success rates on EB-ALFRED's generated ``seen``
split (embedded engine): the best is chosen and reported on held-out episodes, the table and
the report show the race, a killed sweep resumes where it stood, and served checkpoints each
get their server only while they run."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pytest

from envs.eb_alfred.agents import OraclePlanner
from harness.stats import sequential as sq
from harness.cli.entry import main
from harness.params import param
from harness.plugins import AgentPlugin
from harness.run import sweep as sw
from harness.tables import sweeps as sweep_results


# --- a stand-in checkpoint: the oracle's plan with a known probability ------------------------

@dataclass
class CoinParams:
    model: str = param(help="a stand-in checkpoint: a JSON file holding its success probability `p`")
    max_plan_length: int = param(60, ge=1, help="longest expert plan asked for at once (the oracle's)")


class CoinPlanner(OraclePlanner):
    """Succeeds on an episode with the probability its checkpoint file states (the oracle's
    plan), fails otherwise (an empty plan); the coin is a hash of the checkpoint's name and
    the episode, so a rerun gives the same outcomes."""

    name = "coin"
    Params = CoinParams

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        self.path = Path(self.params.model)
        self.p = float(json.loads(self.path.read_text())["p"])

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name, "checkpoint": hashlib.sha256(self.path.read_bytes()).hexdigest()[:16]}

    def _lucky(self, episode: Any) -> bool:
        h = hashlib.sha256(f"{self.path.name}/{episode.episode_id}/{episode.seed}".encode()).digest()
        return int.from_bytes(h[:8], "big") / 2 ** 64 < self.p

    def act(self, requests: Sequence[Any]) -> list[Any]:
        return [self._plan(r) if self._lucky(r.episode) else [] for r in requests]


COIN = AgentPlugin(name="coin", suite="eb_alfred", target=f"{__name__}:CoinPlanner", params=CoinParams,
                   summary="test: the oracle with a known success probability")


@contextlib.contextmanager
def coin_registered() -> Iterator[None]:
    from harness.registry.catalog import PLANNERS

    PLANNERS.add(COIN)
    try:
        yield
    finally:
        PLANNERS._entries.pop((COIN.name, COIN.suite), None)  # noqa: SLF001
        from hydra.core.config_store import ConfigStore

        ConfigStore.instance().repo.get("planner", {}).pop("coin.yaml", None)


#: Known success rates; the best (step-400) is not the last.
RATES = {"step-100": 0.10, "step-200": 0.30, "step-300": 0.55, "step-400": 0.95, "step-500": 0.70}


@pytest.fixture
def eb_alfred(data_dir, monkeypatch):
    monkeypatch.setenv("EB_ALFRED_DATA_DIR", str(data_dir))


@pytest.fixture
def ckpts(tmp_path):
    folder = tmp_path / "ckpts"
    folder.mkdir()
    for name, p in RATES.items():
        (folder / name).write_text(json.dumps({"p": p}))
    return folder


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def sweep_argv(ckpts: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "+experiment=checkpoint_sweep", f"experiment.sweep.checkpoints={ckpts}/step-*",
            "experiment.sweep.overrides=[planner=coin]", "split=seen", "suite.params.generated_per_split=120",
            "suite.params.render=false", "progress=false", f"out={out}", *extra]


def stored(out: Path) -> tuple[dict, dict, dict]:
    db = sqlite3.connect(out / "results.sqlite")
    try:
        runs = {v: json.loads(i) for v, i in db.execute("SELECT variant, identity FROM runs")}
        ids: dict[str, set] = {}
        for v, e in db.execute("SELECT r.variant, e.episode_id FROM episodes e JOIN runs r USING (run_id)"):
            ids.setdefault(v, set()).add(e)
        success = dict(db.execute("SELECT r.variant, AVG(e.success) FROM episodes e JOIN runs r USING (run_id) "
                                  "GROUP BY r.variant"))
    finally:
        db.close()
    return runs, ids, success


def test_a_sweep_of_five_stand_ins_picks_the_best_and_reports_it_on_held_out_episodes(
        eb_alfred, ckpts, capsys, tmp_path):
    out = tmp_path / "out"
    with coin_registered():
        code, _out, err = run_cli(capsys, *sweep_argv(ckpts, out))
        assert code == 0, err
        runs, ids, success = stored(out)
        assert "checkpoint sweep: chose step-400" in err
        assert set(runs) == {*RATES, "step-400@held-out"}
        held = ids["step-400@held-out"]
        assert len(held) == 60  # every held-out episode, the chosen checkpoint only
        selection = set().union(*(ids[name] for name in RATES))
        assert not held & selection  # selection never saw a held-out episode
        # the weakest were dropped before the selection part's end; the chosen one ran longest
        counts = {name: len(ids[name]) for name in RATES}
        assert counts["step-100"] < counts["step-400"] and counts["step-200"] < counts["step-400"]
        assert counts["step-400"] == max(counts.values())
        # the partition and the race are in the run identity; the held-out run has its part
        part = runs["step-100"]["protocol"]["partition"]
        assert part == {"rule": sw.PARTITION_RULE, "version": sw.PARTITION_VERSION, "seed": 0, "selection": 0.5,
                        "split_episodes": 120, "part": "selection", "episodes": 60}
        assert runs["step-400@held-out"]["protocol"]["partition"]["part"] == "held-out"
        assert runs["step-100"]["stopping"] == {"rule": sq.DEFAULT_RULE, "version": sq.RULE_VERSION, "alpha": 0.05,
                                                "margin": None, "metric": "sr", "baseline": sw.RACE,
                                                    "retries": 1}
        assert "stopping" not in runs["step-400@held-out"]

        code, text, err = run_cli(capsys, "table", str(out))
        assert code == 0, err
        assert "Checkpoint sweep on eb_alfred/seen (sr; 5 checkpoints raced on 60 selection episodes of 120" in text
        assert f"- step-100 (step 100): dropped after {counts['step-100']} selection episodes (" in text
        assert f"- step-400 (step 400): chosen after {counts['step-400']} selection episodes" in text
        held_sr = 100 * success["step-400@held-out"]
        assert f"Chosen: step-400; held-out sr {held_sr:.1f} over 60 of 60 held-out episodes, 95% interval [" in text
        code, text, err = run_cli(capsys, "table", str(out), "--format", "json")
        assert code == 0, err
        (entry,) = json.loads(text)["checkpoint_sweeps"]
        assert entry["chosen"] == "step-400" and entry["held_out"]["episodes"] == 60
        lo, hi = entry["held_out"]["interval"]
        assert lo <= entry["held_out"]["value"] <= hi
        assert [c["step"] for c in entry["checkpoints"]] == [100, 200, 300, 400, 500]

        # the report draws the metric against training step: a point per checkpoint, the chosen one held out
        code, _text, err = run_cli(capsys, "report", str(out))
        assert code == 0, err
        page = (out / "report" / "index.html").read_text(encoding="utf-8")
        chart = page[page.index('data-chart="checkpoint-sweep"'):]
        chart = chart[:chart.index("</svg>")]
        assert [chart.count(f'data-checkpoint="{name}"') for name in RATES] == [1] * 5
        assert 'data-held-out="step-400"' in chart and "against training step" in chart
        assert 'href="#checkpoint-sweep"' in page

        # a rerun resumes: nothing runs again, the same choice
        code, _out, err = run_cli(capsys, *sweep_argv(ckpts, out))
        assert code == 0, err
        assert "checkpoint sweep: chose step-400" in err
        assert stored(out)[1] == ids


def test_partition_is_seeded_disjoint_and_independent_of_order():
    ids = [f"seen/{i:03d}" for i in range(101)]
    sel, held = sw.partition(ids, 0.5, seed=0)
    assert len(sel) == 50 and len(held) == 51 and not set(sel) & set(held) and set(sel) | set(held) == set(range(101))
    assert sw.partition(ids, 0.5, seed=0) == (sel, held)  # reproducible
    assert sw.partition(ids, 0.5, seed=1)[0] != sel  # the seed changes it
    reversed_ids = ids[::-1]
    sel_r, _held_r = sw.partition(reversed_ids, 0.5, seed=0)
    assert [reversed_ids[i] for i in sel_r] == [ids[i] for i in sel]  # the ids decide, not their order
    assert sel != sorted(sel)  # selection runs in a shuffled order, not the split's (task kinds mixed)
    with pytest.raises(ValueError):
        sw.partition(ids[:1], 0.5, seed=0)


def test_checkpoints_from_a_glob_are_ordered_by_training_step(tmp_path):
    for name in ("step-1000", "step-200", "step-30"):
        (tmp_path / name).mkdir()
    assert [sw.checkpoint_name(p) for p in sw.expand(str(tmp_path / "step-*"))] == ["step-30", "step-200", "step-1000"]
    assert sw.step_of("checkpoint_1200.pt") == 1200 and sw.step_of("final") is None
    with pytest.raises(sw.SweepError, match="no checkpoint matches"):
        sw.expand(str(tmp_path / "nothing-*"))


def test_replay_on_records_makes_the_race_of_harness_sequential_race():
    """The race replayed round by round equals :func:`harness.stats.sequential.race` on the same data."""
    rng = np.random.default_rng(3)
    rates = np.array([0.2, 0.5, 0.8, 0.75, 0.4])
    for _ in range(20):
        x = (rng.random((5, 200)) < rates[:, None]).astype(float)
        used, chosen = sq.race(x[None], 0.05, step=10)
        names = [f"c{i}" for i in range(5)]
        state = sw.replay({n: x[i] for i, n in enumerate(names)}, names, alpha=0.05, step=10, upto=200)
        # the same drops at the same rounds; race() runs a lone survivor on to the end, the sweep stops there
        alone = len(state.alive) == 1
        assert [state.used(n) for n in names if n in state.dropped] == \
            [int(u) for n, u in zip(names, used[0]) if n in state.dropped]
        assert all(used[0][i] == (200 if not alone else used[0][i]) for i, n in enumerate(names) if n in state.alive)
        assert state.n == (max(d.after for d in state.dropped.values()) if alone else 200)
        assert state.chosen == names[chosen[0]]
        seen_alone = locals().get("seen_alone", False) or alone
    assert seen_alone  # the data makes some races end early


def test_bad_sweep_settings_exit_2_before_any_episode(eb_alfred, ckpts, capsys, tmp_path):
    out = tmp_path / "out"
    with coin_registered():
        for extra, needle in ((["experiment.sweep.selection=1.5"], "experiment.sweep.selection must be in (0, 1)"),
                              (["limit=5"], "limit= is not taken"),
                              (["experiment.sweep.rule=sprt"], "experiment.sweep.rule must be one of"),
                              (["experiment.sweep.param=null"], "the checkpoints would reach no agent"),
                              (["variant.name=mine"], "each checkpoint's run needs its own variant name")):
            code, _out, err = run_cli(capsys, *sweep_argv(ckpts, out, *extra))
            assert code == 2 and needle in err, err
        code, _out, err = run_cli(capsys, "run", "+experiment=checkpoint_sweep", f"out={out}")
        assert code == 2 and "experiment.sweep.checkpoints is required" in err, err
    assert not (out / "results.sqlite").exists()


def test_the_held_out_interval_is_wilsons():
    """Wilson's score interval, worked by hand: 0/10 -> [0, z²/(n + z²)] = [0, 0.2775];
    5/10 -> 0.5 ± z·sqrt(1/40 + z²/400) / (1 + z²/10) = 0.5 ± 0.2634."""
    assert sweep_results.wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert sweep_results.wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)


def test_served_checkpoints_each_get_their_server_only_while_they_run(eb_alfred, ckpts, capsys, tmp_path):
    """``experiment.sweep.serve``: the harness starts each checkpoint's server for its share of a
    round and stops it before the next one's (one model up at a time), the held-out run too."""
    import socket
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    listen = (f"{sys.executable} -c \"import socket, sys, time; s = socket.socket(); "
              "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); print('up', sys.argv[2], flush=True); "
              "time.sleep(120)\" {port} {checkpoint}")
    spec = tmp_path / "served_sweep.yaml"
    spec.write_text(json.dumps({"experiment": {"name": "served_sweep", "sweep": {
        "checkpoints": f"{ckpts}/step-*", "param": None, "round": 20,
        "overrides": ["planner=coin", "++variant.params.model={checkpoint}"],
        "serve": {"command": listen, "url": f"ws://127.0.0.1:{port}", "ready_timeout_s": 30, "stop_timeout_s": 5}}}}),
        encoding="utf-8")
    out = tmp_path / "out"
    with coin_registered():
        code, _out, err = run_cli(capsys, "run", f"+experiment={spec}", "split=seen",
                                  "suite.params.generated_per_split=120", "suite.params.render=false",
                                  "progress=false", f"out={out}")
    assert code == 0, err
    assert "checkpoint sweep: chose step-400" in err
    folder = out / "servers"
    for name in [*RATES, "step-400@held-out"]:
        record = json.loads((folder / f"{name}.json").read_text())
        assert record["checkpoint"] == str((ckpts / name.split("@")[0]).resolve())
        assert f"up {record['checkpoint']}" in (folder / f"{name}.log").read_text()
    starts = [line for line in err.splitlines() if line.startswith("serve: variant") and " answers on " in line]
    assert len(starts) > len(RATES)  # started again for each round, never two at once (one port)
    assert not sw_answers(port)  # the last one stopped with the run
    runs, ids, _success = stored(out)
    assert set(runs) == {*RATES, "step-400@held-out"} and len(ids["step-400@held-out"]) == 60


def sw_answers(port: int) -> bool:
    from harness.run import servers

    return servers._answers("127.0.0.1", port, timeout=0.5)  # noqa: SLF001


def test_a_killed_sweep_resumes_where_it_stood(eb_alfred, ckpts, capsys, tmp_path, monkeypatch):
    """Killed in its second round and rerun, a sweep stores exactly what an uninterrupted one does."""
    from harness.cli import run as run_command

    real = run_command._run_job  # noqa: SLF001
    calls = []

    def killed_on_the_eighth_run(job, servers, trackers):
        calls.append(job.spec.variant)
        if len(calls) == 8:
            raise KeyboardInterrupt
        return real(job, servers, trackers)

    with coin_registered():
        monkeypatch.setattr(run_command, "_run_job", killed_on_the_eighth_run)
        code, _out, err = run_cli(capsys, *sweep_argv(ckpts, tmp_path / "killed"))
        assert code != 0
        partial = stored(tmp_path / "killed")[1]
        assert "step-400@held-out" not in partial and sum(map(len, partial.values())) == 5 * 10 + 2 * 10
        monkeypatch.setattr(run_command, "_run_job", real)
        code, _out, err = run_cli(capsys, *sweep_argv(ckpts, tmp_path / "killed"))
        assert code == 0, err
        code, _out, err = run_cli(capsys, *sweep_argv(ckpts, tmp_path / "fresh"))
        assert code == 0, err
    killed, fresh = stored(tmp_path / "killed"), stored(tmp_path / "fresh")
    assert killed[1] == fresh[1] and killed[2] == fresh[2]
