"""What makes a ``stopping=sequential`` decision trustworthy (harness/stats/sequential/,
harness/cli/run_sequential.py), end to end on EB-ALFRED's embedded engine and on the
decision functions: a stored record is final (an errored episode is never run again), the pairs
follow a seeded order of the episode ids (never the split's), the group's comparisons share
alpha, and each run's agent (and server) is started once for all its rounds."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from collections import Counter
from typing import Any, Iterator, Sequence

import numpy as np
import pytest

from envs.eb_alfred.agents import OraclePlanner
from harness.stats import sequential as sq
from harness.run import servers
from harness.plugins import AgentPlugin
from harness.scoring.policy import Metric
from harness.stats.sequential.order import episode_ids, ranked
from tests.harness.stats.test_sequential_run import eb_alfred, run_cli  # noqa: F401 (a fixture)
from tests.harness.run.test_servers import LISTEN, _port

SWEEP = ["run", "-m", "split=seen", "stopping=sequential", "suite.params.render=false", "progress=false"]
SR = Metric("sr", "SR", "binary", range=(0.0, 1.0), binary=True)


class FlakyPlanner(OraclePlanner):
    """The oracle's plan on some episodes; on the others it raises (an ``agent`` error record).
    Every call is counted per episode (class-wide: the CLI runs in this process), so a test can
    see whether an episode was attempted again."""

    name = "flaky"
    attempts: Counter = Counter()
    built = 0

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        type(self).built += 1

    @staticmethod
    def fails(episode: Any) -> bool:
        return hashlib.sha256(str(episode.episode_id).encode()).digest()[0] % 3 == 0

    def act(self, requests: Sequence[Any]) -> list[Any]:
        out = []
        for r in requests:
            if self.fails(r.episode):
                type(self).attempts[r.episode.episode_id] += 1
                out.append(RuntimeError("flaky: this call raised"))
            else:
                out.append(self._plan(r))
        return out


FLAKY = AgentPlugin(name="flaky", suite="eb_alfred", target=f"{__name__}:FlakyPlanner",
                    params=OraclePlanner.Params, summary="test: the oracle, raising on a third of the episodes")


@contextlib.contextmanager
def flaky_registered() -> Iterator[None]:
    from harness.registry.catalog import PLANNERS

    PLANNERS.add(FLAKY)
    FlakyPlanner.attempts.clear()
    FlakyPlanner.built = 0
    try:
        yield
    finally:
        PLANNERS._entries.pop((FLAKY.name, FLAKY.suite), None)  # noqa: SLF001
        from hydra.core.config_store import ConfigStore

        ConfigStore.instance().repo.get("planner", {}).pop("flaky.yaml", None)


def records(out) -> list[tuple[str, str, str | None, int, dict]]:
    db = sqlite3.connect(out / "results.sqlite")
    try:
        return [(v, e, k, a, json.loads(x)) for v, e, k, a, x in db.execute(
            "SELECT r.variant, e.episode_id, e.error_kind, e.attempts, e.extra FROM episodes e "
            "JOIN runs r USING (run_id) ORDER BY e.rowid")]
    finally:
        db.close()


# --- a stored record is final -------------------------------------------------------------

def test_an_errored_episode_is_never_run_again(eb_alfred, capsys, tmp_path):
    """Rounds of 5: the flaky run's errors of round 1 are not retried by later rounds (before,
    every round was a resume that ran them again), nor by a rerun; they count as failures; the
    agent is built once for all its rounds."""
    argv = [*SWEEP, "planner=flaky,random", "stopping.baseline=random", "stopping.round=5",
            "stopping.max_episodes=30", "stopping.rule=betting_hedged", f"out={tmp_path}"]
    with flaky_registered():
        code, _out, err = run_cli(capsys, *argv)
        assert code == 0, err
        assert FlakyPlanner.built == 1  # one agent for every round
        rows = [r for r in records(tmp_path) if r[0] == "flaky"]
        errored = [r for r in rows if r[2] == "agent"]
        n = len(rows)
        assert n >= 10 and any(r[4]["episode_index"] < 5 for r in errored)  # round 1's errors, later rounds
        assert set(FlakyPlanner.attempts.values()) == {1}, FlakyPlanner.attempts  # each failing episode once
        assert len(FlakyPlanner.attempts) == len(errored)
        code, _out, err = run_cli(capsys, *argv)  # the same command again: nothing runs
        assert code == 0 and set(FlakyPlanner.attempts.values()) == {1}
        assert len([r for r in records(tmp_path) if r[0] == "flaky"]) == n
    code, out, err = run_cli(capsys, "table", str(tmp_path), "--format", "json")
    (entry,) = json.loads(out)["sequential"]
    assert entry["retries"] == 0 and entry["pairs"] == n
    # the errors count as failures: the oracle's successes less the errored episodes, against none
    assert entry["delta"] == pytest.approx((n - len(errored)) / n)


def test_declared_retries_are_the_runners_and_enter_the_identity(eb_alfred, capsys, tmp_path):
    argv = [*SWEEP, "planner=oracle,random", "stopping.baseline=random", "stopping.round=5",
            "stopping.max_episodes=5", "stopping.retries=2", "max_retries=0", f"out={tmp_path}"]
    code, _out, err = run_cli(capsys, *argv)
    assert code == 0, err
    db = sqlite3.connect(tmp_path / "results.sqlite")
    identities = [json.loads(i) for (i,) in db.execute("SELECT identity FROM runs")]
    db.close()
    assert {i["stopping"]["retries"] for i in identities} == {2}
    code, _out, err = run_cli(capsys, *SWEEP, "planner=oracle,random", "stopping.baseline=random",
                              "stopping.retries=-1", f"out={tmp_path}")
    assert code == 2 and "stopping.retries must be an integer >= 0" in err


# --- the pairs' order -----------------------------------------------------------------------

def test_pairs_follow_a_seeded_order_of_the_episode_ids(eb_alfred, capsys, tmp_path):
    from harness.registry.catalog import SUITES

    suite = SUITES.build("eb_alfred", render=False)
    ids = episode_ids(suite.episodes("seen"))
    for seed in (0, 7):
        out = tmp_path / str(seed)
        code, _out, err = run_cli(capsys, *SWEEP, "planner=oracle,random", "stopping.baseline=random",
                                  "stopping.round=6", "stopping.max_episodes=6", f"stopping.order_seed={seed}",
                                  f"out={out}")
        assert code == 0, err
        want = [ids[i] for i in ranked(ids, seed)[:6]]
        for variant in ("oracle", "random"):
            got = sorted(((x["episode_index"], e) for v, e, _k, _a, x in records(out) if v == variant))
            assert [e for _i, e in got] == want and [i for i, _e in got] == list(range(6))
    assert want != ids[:6]  # not the split's order
    code, out_text, _err = run_cli(capsys, "table", str(tmp_path / "7"))
    assert "pairs in sha256_rank order (seed 7)" in out_text


def test_a_task_ordered_split_does_not_make_cancelling_differences_look_real():
    """The split's order (task-major: every trial of task 0, then task 1, ...) against the
    seeded order, for two agents whose per-task differences cancel over the split (+20 points
    on five tasks, -20 on the other five): read in split order the first tasks decide it."""
    rng = np.random.default_rng(0)
    runs, tasks, trials = 400, 10, 50
    gap = np.repeat(np.where(np.arange(tasks) < 5, 0.2, -0.2), trials)
    base = rng.random((runs, tasks * trials)) < 0.5
    var = rng.random((runs, tasks * trials)) < 0.5 + gap
    diffs = var.astype(float) - base
    ids = [f"task{t}/trial{i}" for t in range(tasks) for i in range(trials)]
    order = ranked(ids, 0)
    wrong = {}
    for name, d in (("split", diffs), ("seeded", diffs[:, order])):
        when, _side = sq.first_crossing(sq.rescale(d, 1.0), 0.05)
        wrong[name] = float((when > 0).mean())
    assert wrong["split"] > 0.5 and wrong["seeded"] <= 0.05, wrong


# --- alpha shared by the group ------------------------------------------------------------

def _decided_between(alpha_lo: float, alpha_hi: float) -> np.ndarray:
    """Differences that are decided better at ``alpha_hi`` but not at ``alpha_lo``."""
    for n in range(10, 400):
        d = np.array([1.0] * n + [0.0] * n + [-1.0] * (n // 4))
        np.random.default_rng(n).shuffle(d)
        if (sq.decide(d, alpha_hi).outcome == "better") and sq.decide(d, alpha_lo).outcome is None:
            return d
    raise AssertionError("no such sequence")


def test_holm_recycles_alpha_once_a_comparison_is_decided_and_bonferroni_does_not():
    strong = np.ones(60)
    borderline = _decided_between(0.05 / 3, 0.05 / 2)
    null = np.zeros(60)
    values = {"a": strong, "b": borderline, "c": null}
    settings = {"rule": "betting_agrapa", "alpha": 0.05, "margin": None, "family_size": 3}
    holm = sq.decide_family(values, SR, {**settings, "family": "holm"})
    bonf = sq.decide_family(values, SR, {**settings, "family": "bonferroni"})
    none = sq.decide_family(values, SR, {**settings, "family": "none"})
    assert holm["a"][0].outcome == bonf["a"][0].outcome == "better" and holm["a"][1] == pytest.approx(0.05 / 3)
    assert holm["b"][0].outcome == "better" and holm["b"][1] == pytest.approx(0.05 / 2)
    assert bonf["b"][0].outcome is None and bonf["b"][1] == pytest.approx(0.05 / 3)
    assert none["b"][1] == 0.05 and holm["c"][0].outcome is None
    # the intervals are the simultaneous ones (alpha / k), whatever level decided
    assert holm["b"][0].alpha == pytest.approx(0.05 / 3)


def test_five_null_variants_keep_the_family_wise_error_at_alpha():
    """Five variants equal to one baseline (success 0.5, 300 pairs, shared baseline outcomes):
    tested each at alpha, some comparison is decided in far more than alpha of the groups;
    with Holm (the default) at most alpha."""
    rng = np.random.default_rng(1)
    runs, k, n = 2000, 5, 300
    base = rng.random((runs, 1, n)) < 0.5
    var = rng.random((runs, k, n)) < 0.5
    d = sq.rescale((var.astype(float) - base).reshape(runs * k, n), 1.0)
    rates = {}
    for name, level in (("none", 0.05), ("holm_first_step", 0.05 / k)):
        when, _ = sq.first_crossing(d, level)
        rates[name] = float((when.reshape(runs, k) > 0).any(axis=1).mean())
    # Holm rejects nothing more unless its first step (alpha / k) rejects something
    assert rates["none"] > 0.08 and rates["holm_first_step"] <= 0.05, rates


def test_the_table_says_what_alpha_covers(eb_alfred, capsys, tmp_path):
    with flaky_registered():
        code, _out, err = run_cli(capsys, *SWEEP, "planner=oracle,flaky,random", "stopping.baseline=random",
                                  f"out={tmp_path}")
    assert code == 0, err
    assert "α = 0.05 over 2 comparisons (Holm)" in err
    code, out, err = run_cli(capsys, "table", str(tmp_path))
    assert out.count("α = 0.05 over 2 comparisons (Holm)") == 2
    code, out, err = run_cli(capsys, "table", str(tmp_path), "--format", "json")
    entries = json.loads(out)["sequential"]
    assert [e["family"] for e in entries] == [{"method": "holm", "size": 2, "alpha_over": "2 comparisons"}] * 2
    code, _out, err = run_cli(capsys, *SWEEP, "planner=oracle,random", "stopping.baseline=random",
                              "stopping.family=none", f"out={tmp_path / 'none'}")
    code, out, err = run_cli(capsys, "table", str(tmp_path / "none"))
    assert "α = 0.05 per comparison" in out


# --- one server per run, for all its rounds ---------------------------------------------------

def test_kept_servers_are_started_once_for_all_rounds(tmp_path):
    ports = {"a": _port(), "b": _port(), "c": _port()}
    variants = {}
    for name, port in ports.items():
        (tmp_path / name).mkdir()
        variants[name] = servers.VariantServe(url=f"ws://127.0.0.1:{port}", checkpoint=str(tmp_path / name))
    life = servers.Lifecycle(servers.ServeSettings(LISTEN, ready_timeout_s=30, stop_timeout_s=5), variants)
    keep = ("a", "b")
    with life:
        pids = {}
        for _round in range(3):
            for name in keep:
                life.enter(name, tmp_path / "out", keep=keep)
                pids.setdefault(name, set()).add(life.proc.pid)
        assert all(len(p) == 1 for p in pids.values())  # each started once
        assert servers._answers("127.0.0.1", ports["a"]) and servers._answers("127.0.0.1", ports["b"])
        life.enter("c", tmp_path / "out")  # not kept: the others stop
        assert not servers._answers("127.0.0.1", ports["a"]) and not servers._answers("127.0.0.1", ports["b"])
    assert not servers._answers("127.0.0.1", ports["c"])
    log = (tmp_path / "out" / "servers" / "a.log").read_text()
    assert log.count("up ") == 1


# --- a killed comparison resumes to the same decision -----------------------------------------

COIN_EXPERIMENT = """# @package _global_
experiment:
  name: coin_pair
  description: two stand-in checkpoints of known success rates
  runs:
    eb_alfred: [seen]
  variants:
    high: {{label: High, overrides: [planner=coin, "++planner.params.model={high}"]}}
    low: {{label: Low, overrides: [planner=coin, "++planner.params.model={low}"]}}
  table:
    baseline: low
    metrics: [sr]
    columns:
      - {{label: EB-ALFRED, suite: eb_alfred}}
"""


def _stored_outcomes(out) -> dict[str, list[tuple[str, int]]]:
    rows = records(out)
    db = sqlite3.connect(out / "results.sqlite")
    try:
        success = {(v, e): s for v, e, s in db.execute(
            "SELECT r.variant, e.episode_id, e.success FROM episodes e JOIN runs r USING (run_id)")}
    finally:
        db.close()
    out_: dict[str, list[tuple[str, int]]] = {}
    for v, e, _k, _a, _x in rows:
        out_.setdefault(v, []).append((e, success[(v, e)]))
    return {v: sorted(x) for v, x in out_.items()}


def test_a_killed_bounded_comparison_resumes_to_the_same_decision(eb_alfred, capsys, tmp_path, monkeypatch):
    """The bounded design's state is the stored records and its identity: killed in its third
    round and rerun with the same command, a comparison stores exactly what an uninterrupted one
    does and the table prints the same decision."""
    from harness.cli import run as run_command
    from tests.harness.run.test_checkpoint_sweep import coin_registered

    for name, p in (("high", 0.8), ("low", 0.35)):
        (tmp_path / name).write_text(json.dumps({"p": p}))
    spec = tmp_path / "coin_pair.yaml"
    spec.write_text(COIN_EXPERIMENT.format(high=tmp_path / "high", low=tmp_path / "low"), encoding="utf-8")
    argv = ["run", f"+experiment={spec}", "stopping=sequential", "stopping.baseline=low", "stopping.round=5",
            "suite.params.generated_per_split=60", "suite.params.render=false", "progress=false"]
    real = run_command._run_job  # noqa: SLF001
    calls = []

    def killed_on_the_fifth_run(job, servers, trackers):
        calls.append(job.spec.variant)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(job, servers, trackers)

    with coin_registered():
        code, _out, err = run_cli(capsys, *argv, f"out={tmp_path / 'fresh'}")
        assert code == 0, err
        fresh = _stored_outcomes(tmp_path / "fresh")
        assert len(fresh["high"]) > 10  # decided after the killed round
        monkeypatch.setattr(run_command, "_run_job", killed_on_the_fifth_run)
        code, _out, err = run_cli(capsys, *argv, f"out={tmp_path / 'killed'}")
        assert code != 0
        assert sum(map(len, _stored_outcomes(tmp_path / "killed").values())) == 20
        monkeypatch.setattr(run_command, "_run_job", real)
        code, _out, err = run_cli(capsys, *argv, f"out={tmp_path / 'killed'}")
        assert code == 0, err
    assert _stored_outcomes(tmp_path / "killed") == fresh
    tables = [run_cli(capsys, "table", str(tmp_path / name), "--format", "json")[1] for name in ("fresh", "killed")]
    (a,), (b,) = (json.loads(t)["sequential"] for t in tables)
    assert a == b and a["outcome"] == "better" and a["interval_kind"] == "repeated_confidence_interval"
