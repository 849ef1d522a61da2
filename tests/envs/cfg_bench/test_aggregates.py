"""CFG-Bench's overall figures as its paper computes them: the mean over tasks, not over questions.

The paper's Table 2 (Qwen2.5-VL-7B, the frame-rate rows) gives the three multiple-choice
accuracies and their average: at 4 fps FAU 43.93, TR 38.58, CR 39.63 and Avg 40.71; at 8 fps
45.16, 39.51, 42.52 and 42.40. Each Avg is the plain mean of its row's three task figures. Here
a real store holds per-question records whose per-task accuracies round to those figures (with
unequal numbers of questions per task, so pooling the questions gives another number), and the
breakdown table's ``mean over task_type`` row must give the paper's Avg while ``all`` stays the
pooled figure, labelled as such.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.scoring.summaries import records_frame
from harness.store import ResultStore
from harness.tables.build import breakdown_table, transfer_table
from harness.tables.columns import ALL
from harness.tables.render import to_markdown
from harness.types import EpisodeRecord, RunSpec

TIER = {"FAU": "physical_interaction", "CIA": "physical_interaction", "TR": "temporal_causal", "CR": "temporal_causal",
        "GI": "intentional"}
#: variant -> task -> (correct, questions): per-task accuracies that round to the paper's figures.
PAPER_ROWS = {
    "fps4": {"FAU": (47, 107), "TR": (49, 127), "CR": (65, 164)},   # 43.93, 38.58, 39.63 -> Avg 40.71
    "fps8": {"FAU": (14, 31), "TR": (32, 81), "CR": (54, 127)},     # 45.16, 39.51, 42.52 -> Avg 42.40
}
PAPER_TASKS = {"fps4": (43.93, 38.58, 39.63), "fps8": (45.16, 39.51, 42.52)}
PAPER_AVG = {"fps4": 40.71, "fps8": 42.40}


def _record(variant: str, task: str, i: int, values: dict) -> EpisodeRecord:
    return EpisodeRecord(run_id=f"r-{variant}", variant=variant, suite="cfg_bench", split="all",
                         episode_id=f"{task}-{i}", seed=0, task_type=task, success=bool(values.get("correct")),
                         extra={"breakdown": {"tier": TIER[task]}}, values=values)


def _records(open_scores: dict[str, list[float]] | None = None) -> list[EpisodeRecord]:
    out = []
    for variant, tasks in PAPER_ROWS.items():
        for task, (k, n) in tasks.items():
            out += [_record(variant, task, i, {"correct": int(i < k), "unreadable": 0}) for i in range(n)]
        for task, scores in (open_scores or {}).items():
            out += [_record(variant, task, i, {"judge_score": s}) for i, s in enumerate(scores)]
    return out


@pytest.fixture()
def store_frame(tmp_path):
    with ResultStore(tmp_path / "out") as store:
        for variant in PAPER_ROWS:
            store.begin_run(f"r-{variant}", RunSpec(suite="cfg_bench", split="all", agent="vlm", variant=variant), {}, {})
        store.add_many(_records())
    with ResultStore(tmp_path / "out", readonly=True) as store:
        return store.frame()


def test_the_paper_rows_per_task_are_what_the_store_holds(store_frame):
    t = breakdown_table(store_frame, by="task_type", metrics=("accuracy",), baseline="fps4")
    for variant, figures in PAPER_TASKS.items():
        got = [round(100 * t.at[task, (variant, "accuracy")], 2) for task in ("FAU", "TR", "CR")]
        assert got == list(figures)


def test_the_mean_over_tasks_row_is_the_papers_average(store_frame):
    t = breakdown_table(store_frame, by="task_type", metrics=("accuracy",), baseline="fps4")
    assert list(t.index)[-2:] == [ALL, "mean over task_type"]
    for variant, avg in PAPER_AVG.items():
        assert round(100 * t.at["mean over task_type", (variant, "accuracy")], 2) == avg
        k = sum(c for c, _ in PAPER_ROWS[variant].values())
        n = sum(m for _, m in PAPER_ROWS[variant].values())
        assert t.at[ALL, (variant, "accuracy")] == pytest.approx(k / n)  # pooled: 40.45 and 41.84, not the paper's
        assert round(100 * k / n, 2) != avg
    text = to_markdown(t)
    assert "| mean over task_type | 40.7 | 42.4 |" in text
    assert ("all: pooled over every episode of the variant; mean over task_type: per column, the mean of the "
            "task_type rows above it where the metric counts") in text


def test_open_ended_s_averages_only_the_tasks_it_applies_to():
    # S on CIA: mean 2.0 over 4 answers; on GI: mean 6.0 over 1 answer. Mean over tasks 4.0, pooled 2.8.
    df = records_frame(_records({"CIA": [1.0, 2.0, 2.0, 3.0], "GI": [6.0]}))
    t = breakdown_table(df, by="task_type", metrics=("accuracy", "cfg_s"), baseline="fps4")
    assert t.at["mean over task_type", ("fps4", "cfg_s")] == pytest.approx(4.0)
    assert t.at[ALL, ("fps4", "cfg_s")] == pytest.approx(14.0 / 5)
    # the MC accuracy's mean is over the three MC tasks alone (the open tasks have no accuracy)
    assert round(100 * t.at["mean over task_type", ("fps4", "accuracy")], 2) == PAPER_AVG["fps4"]


def test_a_tier_breakdown_pools_and_has_no_mean_row():
    df = records_frame(_records())
    t = breakdown_table(df, by="tier", metrics=("accuracy",), baseline="fps4")
    assert list(t.index) == ["physical_interaction", "temporal_causal", ALL]
    assert t.at["temporal_causal", ("fps4", "accuracy")] == pytest.approx((49 + 65) / (127 + 164))


def test_the_transfer_tables_headline_cell_is_the_papers_mean_over_tasks_and_pooled_is_labelled():
    df = records_frame(_records())
    t = transfer_table(df, baseline="fps4", metrics=("accuracy",))
    for variant, avg in PAPER_AVG.items():
        assert round(100 * t.at[variant, ("cfg_bench/all", "accuracy")], 2) == avg
        assert round(100 * t.at[variant, ("avg", "accuracy")], 2) == avg
    text = to_markdown(t)
    assert "cfg_bench/all" in text.splitlines()[0] and "(mean over task_type)" in text.splitlines()[0]
    assert ("cfg_bench: each cell is the mean over its task_type values (each counts once, whatever its number of "
            "episodes), as its benchmark reports its overall figures; pooled over episodes instead: cfg_bench/all ") \
        in text
    assert "fps4 40.5" in text and "(harness table --pooled prints pooled cells)" in text
    pooled = transfer_table(df, baseline="fps4", metrics=("accuracy",), pooled=True)
    assert pooled.at["fps4", ("cfg_bench/all", "accuracy")] == pytest.approx(161 / 398)
    text = to_markdown(pooled)
    assert "(pooled)" in text.splitlines()[0] and "(mean over task_type)" not in text.splitlines()[0]
    assert "cfg_bench: each cell pools its episodes (--pooled)" in text


def test_the_plain_table_of_a_store_prints_the_mean_over_tasks_as_its_headline(tmp_path, capsys):
    """``harness table`` on a store: the headline cell is the mean over task types, labelled, and
    the pooled figure is beside it in the footnotes (and under --pooled)."""
    from harness.cli.entry import main

    with ResultStore(tmp_path / "out") as store:
        for variant in PAPER_ROWS:
            store.begin_run(f"r-{variant}", RunSpec(suite="cfg_bench", split="all", agent="vlm", variant=variant),
                            {}, {"split_episodes": sum(n for _, n in PAPER_ROWS[variant].values())})
        store.add_many(_records())
    assert main(["table", str(tmp_path / "out"), "--baseline", "fps4", "--metrics", "accuracy"]) == 0
    out = capsys.readouterr().out
    header, _rule, first, second = out.splitlines()[:4]
    assert "cfg_bench/all" in header and "(mean over task_type)" in header
    assert first.startswith("| fps4 | 40.7 |") and second.startswith("| fps8 | 42.4 |")
    assert "pooled over episodes instead: cfg_bench/all" in out and "fps4 40.5, fps8 41.8" in out
    assert main(["table", str(tmp_path / "out"), "--baseline", "fps4", "--metrics", "accuracy", "--pooled"]) == 0
    out = capsys.readouterr().out
    assert "(pooled)" in out.splitlines()[0] and out.splitlines()[2].startswith("| fps4 | 40.5 |")
    import json

    assert main(["table", str(tmp_path / "out"), "--baseline", "fps4", "--metrics", "accuracy", "--format", "json"]) == 0
    cell = json.loads(capsys.readouterr().out)["rows"][0]["cells"]["cfg_bench/all"]["accuracy"]
    assert round(100 * cell["value"], 2) == 40.71 and cell["aggregate"] == "mean over task_type"
    assert cell["interval"] is None  # no Wilson interval of the pooled proportion beside the mean


def test_beside_another_suite_the_mean_row_is_cfg_bench_s_own():
    po = [EpisodeRecord(run_id="r-fps4", variant="fps4", suite="procobject", split="test", episode_id=f"p{i}", seed=0,
                        task_type="mistakes", values={"iou": 0.5}) for i in range(3)]
    df = records_frame([r for r in _records() if r.variant == "fps4"] + po)
    t = breakdown_table(df, by="task_type", metrics=("accuracy", "miou"), baseline="fps4")
    assert list(t.index)[-2:] == [ALL, "cfg_bench/mean over task_type"]
    assert round(100 * t.at["cfg_bench/mean over task_type", ("fps4", "accuracy")], 2) == PAPER_AVG["fps4"]
    assert np.isnan(t.at["cfg_bench/mean over task_type", ("fps4", "miou")])  # procobject's rows are not in it
