"""``stopping=sequential`` end to end: a real EB-ALFRED sweep (embedded engine) run in rounds,
stopped once decided, resumed from its records, and what ``harness table`` says about it."""

import json
import sqlite3

import pytest

from harness.stats import sequential as sq
from harness.cli.entry import main
from harness.scoring.policy import suite_scoring

SWEEP = ["run", "-m", "planner=oracle,random", "split=seen", "stopping=sequential", "stopping.baseline=random",
         "suite.params.render=false", "progress=false"]


@pytest.fixture
def eb_alfred(data_dir, monkeypatch):
    monkeypatch.setenv("EB_ALFRED_DATA_DIR", str(data_dir))


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def stored(out):
    db = sqlite3.connect(out / "results.sqlite")
    try:
        runs = {v: json.loads(i) for v, i in db.execute("SELECT variant, identity FROM runs")}
        counts = dict(db.execute("SELECT r.variant, COUNT(*) FROM episodes e JOIN runs r USING (run_id) "
                                 "GROUP BY r.variant"))
    finally:
        db.close()
    return runs, counts


def test_oracle_vs_random_stops_within_40_episodes_and_the_table_says_why(eb_alfred, capsys, tmp_path):
    code, _out, err = run_cli(capsys, *SWEEP, f"out={tmp_path}")
    assert code == 0, err
    runs, counts = stored(tmp_path)
    assert set(counts) == {"oracle", "random"} and max(counts.values()) <= 40
    assert counts["oracle"] == counts["random"]  # paired, in rounds: neither ran ahead
    assert "oracle vs random on eb_alfred/seen (sr): better after" in err
    # rule, version, alpha, margin (and the metric, the baseline) are in both runs' identity
    for identity in runs.values():
        assert identity["stopping"] == {"rule": sq.GROUP_SEQUENTIAL, "version": sq.RULE_VERSION, "alpha": 0.05,
                                        "margin": None, "metric": "sr", "baseline": "random",
                                        "order": {"rule": "sha256_rank", "version": 1, "seed": 0},
                                        "family": {"method": "holm", "size": 1}, "retries": 0,
                                        "design": {"n_max": 500, "round": 10, "spending": sq.DEFAULT_SPENDING}}
    code, out, err = run_cli(capsys, "table", str(tmp_path))
    assert code == 0, err
    n = counts["oracle"]
    assert f"better: decided after {n} of 500 paired episodes" in out
    assert "repeated 95% interval [+" in out
    assert "not valid under optional stopping" in out
    assert "ΔSR" in out  # Δ against the comparison's baseline without --baseline
    assert "limit=" not in out  # the rounds' limits are not a setting of the runs
    code, out, err = run_cli(capsys, "table", str(tmp_path), "--format", "json")
    assert code == 0, err
    (entry,) = json.loads(out)["sequential"]
    assert (entry["variant"], entry["baseline"], entry["outcome"], entry["pairs"]) == ("oracle", "random", "better", n)
    assert entry["interval_kind"] == "repeated_confidence_interval" and 0 < entry["interval"][0] <= 1.0 == entry["delta"]
    assert entry["fixed_sample_delta_interval_valid"] is False and entry["looks"] == list(range(10, n + 1, 10))
    assert len(entry["path"]["lo"]) == len(entry["looks"])


def test_alpha_enters_the_run_identity(eb_alfred, capsys, tmp_path):
    assert run_cli(capsys, *SWEEP, f"out={tmp_path / 'a'}")[0] == 0
    assert run_cli(capsys, *SWEEP, "stopping.alpha=0.01", f"out={tmp_path / 'b'}")[0] == 0
    ids_a = stored(tmp_path / "a")[0]
    ids_b = stored(tmp_path / "b")[0]
    assert ids_a["oracle"]["stopping"]["alpha"] == 0.05 and ids_b["oracle"]["stopping"]["alpha"] == 0.01
    db = sqlite3.connect(tmp_path / "a" / "results.sqlite")
    plain = {r for (r,) in db.execute("SELECT run_id FROM runs")}
    db.close()
    db = sqlite3.connect(tmp_path / "b" / "results.sqlite")
    other = {r for (r,) in db.execute("SELECT run_id FROM runs")}
    db.close()
    assert not plain & other


def test_a_stopped_comparison_resumes_where_it_stood(eb_alfred, capsys, tmp_path):
    """For an open-ended (betting) rule max_episodes is a limit (not in the identity): a first
    invocation stops undecided after one round of 4; the same sweep without the cap resumes those
    runs, replays the stored round and runs only new episodes until the decision; a third
    invocation runs nothing. (The bounded design's maximum is part of its design, and of its
    identity: test_a_killed_bounded_comparison_resumes_to_the_same_decision.)"""
    code, _out, err = run_cli(capsys, *SWEEP, "stopping.rule=betting_agrapa", "stopping.round=4",
                              "stopping.max_episodes=4", f"out={tmp_path}")
    assert code == 0, err
    assert "undecided after 4 of 4 paired episodes" in err
    assert stored(tmp_path)[1] == {"oracle": 4, "random": 4}
    code, out, _err = run_cli(capsys, "table", str(tmp_path))
    assert "oracle vs random on eb_alfred/seen (sr): undecided after 4 of 500 paired episodes" in out
    code, _out, err = run_cli(capsys, *SWEEP, "stopping.rule=betting_agrapa", "stopping.round=4", f"out={tmp_path}")
    assert code == 0, err
    counts = stored(tmp_path)[1]
    assert "4 resumed" in err and counts["oracle"] == counts["random"] > 4
    code, _out, err = run_cli(capsys, *SWEEP, "stopping.rule=betting_agrapa", "stopping.round=4", f"out={tmp_path}")
    assert code == 0 and " 0 episodes run" in err and stored(tmp_path)[1] == counts


@pytest.mark.parametrize("extra, needle", [
    (["stopping.baseline=base"], "stopping.baseline=base is not a run of the sweep"),
    (["stopping.alpha=1.5"], "stopping.alpha must be in (0, 1)"),
    (["stopping.metric=gc"], "a pooled ratio has no per-episode difference"),
    (["stopping.metric=nope"], "stopping.metric 'nope' is not a metric"),
    (["stopping.round=0"], "stopping.round must be an integer >= 1"),
])
def test_bad_sequential_settings_exit_2_before_any_episode(eb_alfred, capsys, tmp_path, extra, needle):
    code, _out, err = run_cli(capsys, *SWEEP, *extra, f"out={tmp_path}")
    assert code == 2 and needle in err and "Traceback" not in err, err
    assert not (tmp_path / "results.sqlite").exists()


def test_the_dry_run_checks_the_comparison(eb_alfred, capsys, tmp_path):
    code, _out, err = run_cli(capsys, *SWEEP, "stopping.baseline=oracel", f"out={tmp_path}", "--dry-run")
    assert code == 2 and "stopping.baseline=oracel is not a run of the sweep" in err
    code, _out, err = run_cli(capsys, *SWEEP, f"out={tmp_path}", "--dry-run")
    assert code == 0, err


def test_a_single_run_has_nothing_to_compare(eb_alfred, capsys, tmp_path):
    code, _out, err = run_cli(capsys, "run", "planner=random", "split=seen", "stopping=sequential",
                              "stopping.baseline=random", "suite.params.render=false", f"out={tmp_path}")
    assert code == 2 and "nothing to compare with random" in err


def _row(index, success, error=None, values=None):
    return {"episode_id": f"e{index}", "seed": index, "success": success, "gc_satisfied": 0, "gc_total": 1,
            "steps": 3, "expert_length": 3, "error_kind": error, "extra": {sq.ORDER_KEY: index},
            "values": values or {}, "suite": "eb_alfred"}


def test_paired_values_follow_the_error_policy_and_split_order():
    metrics, values_fn = suite_scoring("eb_alfred")
    sr = sq.tested_metric(metrics, None)
    assert sr.name == "sr"
    variant = [_row(2, True), _row(0, True), _row(1, False, error="agent"), _row(3, True), _row(5, True)]
    baseline = [_row(0, False), _row(1, False), _row(2, True), _row(3, False), _row(4, False), _row(5, False)]
    diffs, pairs, left_out = sq.paired_differences(variant, baseline, sr, values_fn)
    # split order 0, 1, 2, 3; the errored episode 1 counts as a failure (0 - 0); episode 4 is
    # missing from the variant, so pair 5 is not read (the prefix both runs completed)
    assert diffs.tolist() == [1.0, 0.0, 0.0, 1.0] and pairs == 4 and left_out == 0
    assert sq.paired_differences(variant, baseline, sr, values_fn, upto=2)[1] == 2


def test_a_pair_without_a_value_is_left_out_and_counted():
    """The error policy (harness.scoring.policy.classify): a score with no value of its own counts as
    the metric's missing value (the bottom of its range), an unscored one (the marker
    AWAITS_SCORE) is left out with its pair, and the pair is counted."""
    from harness.scoring.policy import Metric
    from harness.values import AWAITS_SCORE

    score = Metric("score", "Score", "score", range=(0.0, 10.0), unit="score")
    variant = [_row(0, True, values={"score": 7.0}), _row(1, True, values={"score": None}),
               _row(2, True, values={"score": AWAITS_SCORE})]
    baseline = [_row(0, True, values={"score": 5.0}), _row(1, True, values={"score": 4.0}),
                _row(2, True, values={"score": 5.0})]
    for rows in (variant, baseline):
        for r in rows:
            r["suite"] = None  # a metric no suite declares: counted by the declaration given
    diffs, pairs, left_out = sq.paired_differences(variant, baseline, score)
    assert diffs.tolist() == [2.0, -4.0] and pairs == 3 and left_out == 1
    keep_out = Metric("score", "Score", "score", range=(0.0, 10.0), unit="score", missing=None)
    diffs, pairs, left_out = sq.paired_differences(variant, baseline, keep_out)
    assert diffs.tolist() == [2.0] and pairs == 3 and left_out == 2
    d, _pairs, _left = sq.compare(variant, baseline, keep_out, {"alpha": 0.05, "rule": sq.DEFAULT_RULE})
    assert d.n == 1 and d.lo < 0 < d.hi and d.hi <= 10.0


EXPERIMENT = """# @package _global_
experiment:
  name: seq_demo
  description: a strong and a weak agent
  runs:
    eb_alfred: [seen]
  variants:
    strong: {label: Strong, overrides: [planner=oracle]}
    weak: {label: Weak, overrides: [planner=random]}
  table:
    baseline: weak
    metrics: [sr]
    columns:
      - {label: EB-ALFRED, suite: eb_alfred}
"""


def test_an_experiment_runs_sequentially_and_its_table_says_why(eb_alfred, capsys, tmp_path):
    spec = tmp_path / "seq_demo.yaml"
    spec.write_text(EXPERIMENT, encoding="utf-8")
    out = tmp_path / "out"
    code, _out, err = run_cli(capsys, "run", f"+experiment={spec}", "stopping=sequential", "stopping.baseline=weak",
                              "suite.params.render=false", "progress=false", f"out={out}")
    assert code == 0, err
    counts = stored(out)[1]
    assert counts["strong"] == counts["weak"] <= 40
    code, text, err = run_cli(capsys, "table", str(out), "--experiment", str(spec))
    assert code == 0, err
    assert f"strong vs weak on eb_alfred/seen (sr): better: decided after {counts['strong']} of 500" in text
    assert "not valid under optional stopping" in text
