"""Experiments end to end: one `harness run +experiment=...` runs every variant x suite x split,
`--dry-run` lists them and runs nothing, `harness table --experiment` prints exactly the declared
table. The built-in oracle and random agents stand in for the model variants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.tables import experiments
from harness.cli.entry import main
from harness.store import ResultStore
from tests.helpers import require_extras

MINI = """\
# @package _global_
experiment:
  name: mini
  runs:
    eb_alfred: [seen, unseen]
    example: [test]
  variants:
    worst: {label: Random walk, overrides: [planner=random]}
    best: {label: Oracle, overrides: [planner=oracle]}
  table:
    baseline: worst
    metrics: [sr, gc]
    columns:
      - {label: Household, suite: eb_alfred}
      - {label: Line, suite: example}
    average: false
    delta: each
  paper:
    source: a made-up paper
    rows:
      worst: {Household: 1.0, Line: 40.0}
      best: {Household: 90.0}
"""


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    from tests.helpers import require_example_plugin

    require_example_plugin()  # the mini experiment's second suite
    path = tmp_path / "mini.yaml"
    path.write_text(MINI)
    return path


def _run(*argv: str) -> int:
    return main(list(argv))


def test_dry_run_lists_every_run_and_writes_nothing(mini, tmp_path, capsys):
    out = tmp_path / "o"
    assert _run("run", f"+experiment={mini}", "limit=3", f"out={out}", "--dry-run") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[:4] for line in lines] == [
        ["worst", "eb_alfred", "seen", "3 episodes"], ["worst", "eb_alfred", "unseen", "3 episodes"],
        ["worst", "example", "test", "3 episodes"], ["best", "eb_alfred", "seen", "3 episodes"],
        ["best", "eb_alfred", "unseen", "3 episodes"], ["best", "example", "test", "3 episodes"]]
    assert not out.exists()


def test_experiment_runs_resumes_and_prints_its_table(mini, tmp_path, capsys):
    out = tmp_path / "o"
    assert _run("run", f"+experiment={mini}", "limit=4", f"out={out}", "progress=false") == 0
    with ResultStore(out, readonly=True) as store:
        runs = store.runs()
        assert len(runs) == 6 and sorted(set(runs["variant"])) == ["best", "worst"]
        assert len(store.frame()) == 24
    capsys.readouterr()
    assert _run("run", f"+experiment={mini}", "limit=4", f"out={out}", "progress=false") == 0  # resumes
    assert capsys.readouterr().err.count("0 episodes run, 4 resumed") == 6
    assert _run("table", str(out), "--experiment", str(mini)) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == ("| variant | Household SR | Household GC | Household ΔSR | Household ΔGC "
                        "| Line SR | Line GC | Line ΔSR | Line ΔGC |")
    # ° on each value: 4 episodes of each split's total (the footnote gives n/N)
    assert lines[2].startswith("| Random walk | 0.0° | 0.0° | – | – |")
    assert lines[3].startswith("| Oracle | 100.0° | 100.0° | +100.0 | +100.0 | 100.0° | 100.0° |")
    assert "[" not in lines[3]  # significance goes to the footnote
    assert "Oracle, Household: ΔSR +100.0 [+100.0, +100.0] p=0.0078, 8 pairs." in text
    assert "(paper)" not in text
    assert _run("table", str(out), "--experiment", str(mini), "--paper") == 0
    text = capsys.readouterr().out
    assert "| Random walk (paper) | 1.0 | – | – | – | 40.0 | – | – | – |" in text
    assert "| Oracle (paper) | 90.0 | – | +89.0 | – | – | – | – | – |" in text
    assert "(paper): as reported by a made-up paper, not measured here" in text


def test_experiment_overrides_and_user_overrides_apply(mini, tmp_path, capsys):
    out = tmp_path / "o"
    assert _run("run", f"+experiment={mini}", "experiment.variants.best=null", "experiment.runs.eb_alfred=[seen]",
                "seed=3", "limit=2", f"out={out}", "--dry-run") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[:5] for line in lines] == [["worst", "eb_alfred", "seen", "2 episodes", "seed=3"],
                                                        ["worst", "example", "test", "2 episodes", "seed=3"]]
    # -m sweeps the other overrides: three trial seeds are three repeats of every run
    assert _run("run", "-m", f"+experiment={mini}", "seed=0,1,2", "limit=2", f"out={out}", "--dry-run") == 0
    assert len(capsys.readouterr().out.splitlines()) == 18


@pytest.mark.parametrize("argv, message", [
    (["+experiment=cfg_bench_tabel4"], "did you mean cfg_bench_table4?"),
    (["experiment.variants.base=null"], "add +experiment=NAME"),
    (["+experiment=cfg_bench_table4", "experiment.tabel.average=true"], "experiment.tabel is not an experiment key"),
    (["+experiment=cfg_bench_table4", "experiment.variants.base=null"], "baseline 'base' is not one of its variants"),
    (["+experiment=cfg_bench_table4", "seed=0,1"], "sweeps several values: add -m"),
])
def test_bad_experiment_is_one_line(argv, message, tmp_path, capsys):
    assert _run("run", *argv, f"out={tmp_path / 'o'}", "--dry-run") == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_builtin_experiments_declare_their_tables():
    t4 = experiments.load("cfg_bench_table4")
    assert [v.label for v in t4.variants] == ["Base", "FAVOR-SFT", "CFG-SFT"]
    assert [c.label for c in t4.columns] == ["EB-ALFRED Avg", "EB-Manipulation Avg"]
    assert [len(c.splits) for c in t4.columns] == [6, 5] and len(t4.jobs()) == 33
    assert t4.paper_rows["cfg_sft"] == {"EB-ALFRED Avg": 9.7, "EB-Manipulation Avg": 15.3}
    lib = experiments.load("libero_four_suites")
    assert [c.label for c in lib.columns] == ["Spatial", "Object", "Goal", "Long"] and lib.average
    assert lib.columns[3].splits == ("libero_10",)
    assert all("suite.params.trials=50" in job for job in lib.jobs())
    t5 = experiments.load("procobject_table5")
    assert [c.label for c in t5.columns] == ["seen", "unseen"] and t5.metrics == ("sr", "gc")


def test_builtin_table4_with_stand_ins_dry_run(tmp_path, capsys, data_dir):
    """The built-in Table 4 with reference agents standing in for the checkpoints."""
    require_extras("eb_manipulation")
    stand_in = ["experiment.variants.base.overrides=[planner=random]",
                "experiment.variants.favor_sft.overrides=[planner=oracle]",
                "experiment.variants.cfg_sft.overrides=[planner=oracle]"]
    assert _run("run", "+experiment=cfg_bench_table4", *stand_in, "limit=1", f"out={tmp_path}", "--dry-run") == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 33 and lines[0].split("\t")[:3] == ["base", "eb_alfred", "base"]
    assert lines[-1].split("\t")[:3] == ["cfg_sft", "eb_manipulation", "visual"]


def test_table_json_of_an_experiment(mini, tmp_path, capsys):
    out = tmp_path / "o"
    assert _run("run", f"+experiment={mini}", "limit=2", f"out={out}", "progress=false") == 0
    capsys.readouterr()
    assert _run("table", str(out), "--experiment", str(mini), "--format", "json") == 0
    doc = json.loads(capsys.readouterr().out)
    best = next(r for r in doc["rows"] if r["variant"] == "best")
    cell = best["cells"]["Household"]["sr"]
    assert cell["value"] == 1.0 and cell["n"] == 4 and cell["delta"] == 1.0 and cell["pairs"] == 4.0
    assert cell["p"] == pytest.approx(0.125)  # 4 discordant pairs, all one way: 2 * 0.5**4
    assert doc["columns"] == {"Household": ["eb_alfred/seen", "eb_alfred/unseen"], "Line": ["example/test"]}
    assert len(doc["runs"]) == 6 and all(r["identity"]["variant"] in ("best", "worst") for r in doc["runs"])
    assert all("git" in r["provenance"] or r["provenance"] for r in doc["runs"])
    assert set(best["runs"]) == {r["run_id"] for r in doc["runs"] if r["variant"] == "best"}


@pytest.mark.slow
def test_builtin_table4_end_to_end_with_stand_ins(tmp_path, capsys):
    """All 33 runs of Table 4 (one episode each) and its table, reference agents as the variants."""
    stand_in = ["experiment.variants.base.overrides=[planner=random]",
                "experiment.variants.favor_sft.overrides=[planner=oracle]",
                "experiment.variants.cfg_sft.overrides=[planner=oracle]"]
    out = tmp_path / "t4"
    assert _run("run", "+experiment=cfg_bench_table4", *stand_in, "limit=1", f"out={out}", "progress=false") == 0
    capsys.readouterr()
    assert _run("table", str(out), "--experiment", "cfg_bench_table4", "--paper") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| variant | EB-ALFRED Avg SR | EB-ALFRED Avg ΔSR | EB-Manipulation Avg SR | EB-Manipulation Avg ΔSR |"
    assert [line.split(" | ")[0] for line in lines[2:8]] == [
        "| Base", "| FAVOR-SFT", "| CFG-SFT", "| Base (paper)", "| FAVOR-SFT (paper)", "| CFG-SFT (paper)"]
    assert lines[7] == "| CFG-SFT (paper) | 9.7 | +5.0 | 15.3 | +5.7 |"


from tests.planners.conftest import tiny_ckpts  # noqa: E402,F401 - the session fixture (skips without `models`)


@pytest.mark.slow
def test_table4_with_tiny_checkpoints(tiny_ckpts, tmp_path, capsys, monkeypatch):  # noqa: F811
    """Table 4 as a user runs it, with real (tiny, random-weight) checkpoints: the base VLM and two
    LoRA adapters on it, found through $BASE_MODEL / $FAVOR_SFT_ADAPTER / $CFG_SFT_ADAPTER, all 33
    runs at limit=1 (about 2.5 minutes on 2 cores: short prompts, 8 new tokens), then the table:
    rows in the declared order with their labels, each cell the mean over the suite's subsets of
    what the store holds, the three variants told apart by their checkpoint hashes."""
    import sqlite3

    pytest.importorskip("robosuite", reason="EB-Manipulation's twin needs the `eb_manipulation` extra")
    monkeypatch.setenv("BASE_MODEL", str(tiny_ckpts["base"]))
    monkeypatch.setenv("FAVOR_SFT_ADAPTER", str(tiny_ckpts["favor"]))
    monkeypatch.setenv("CFG_SFT_ADAPTER", str(tiny_ckpts["cfg"]))
    out = tmp_path / "t4"
    small = ["planner.params.max_new_tokens=8", "planner.params.num_examples=0", "planner.params.image_size=112",
             "planner.params.manipulation_shots=0"]
    assert _run("run", "+experiment=cfg_bench_table4", "limit=1", *small, f"out={out}", "progress=false") == 0
    with sqlite3.connect(out / "results.sqlite") as db:
        runs = db.execute("SELECT variant, suite, identity FROM runs").fetchall()
        cells = db.execute("SELECT variant, suite, split, AVG(success AND error_kind IS NULL), COUNT(*) "
                           "FROM episodes GROUP BY variant, suite, split").fetchall()
    assert len(runs) == 33 and len(cells) == 33 and all(n == 1 for *_, n in cells)
    hashes = {v: json.dumps(json.loads(i)["agent_identity"], sort_keys=True) for v, s, i in runs}
    assert len(set(hashes.values())) == 3  # base, base + favor adapter, base + cfg adapter
    expected = {}
    for variant in ("base", "favor_sft", "cfg_sft"):
        for suite, k in (("eb_alfred", 6), ("eb_manipulation", 5)):
            values = [sr for v, s, _, sr, _ in cells if v == variant and s == suite]
            assert len(values) == k
            expected[(variant, suite)] = 100 * sum(values) / k
    capsys.readouterr()
    assert _run("table", str(out), "--experiment", "cfg_bench_table4") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| variant | EB-ALFRED Avg SR | EB-ALFRED Avg ΔSR | EB-Manipulation Avg SR | EB-Manipulation Avg ΔSR |"
    for line, (variant, label) in zip(lines[2:5], (("base", "Base"), ("favor_sft", "FAVOR-SFT"), ("cfg_sft", "CFG-SFT"))):
        cols = [c.strip() for c in line.strip("|").split("|")]
        assert cols[0] == label
        assert cols[1].rstrip("†") == f"{expected[(variant, 'eb_alfred')]:.1f}"
        assert cols[3].rstrip("†") == f"{expected[(variant, 'eb_manipulation')]:.1f}"
    assert lines[5] == ""
