"""`harness table OUT --experiment diagnostics_and_transfer` on a real store: the two diagnostic
suites (generated CFG-Bench and ProcObject folders, the vlm planner on the scripted backend,
blind) and the two transfer suites (EB-ALFRED's household engine, EB-Manipulation's MuJoCo twin:
the oracle and random planners), each variant made of cheap agents of different quality. Every
printed number is checked against values recomputed here from the SQLite rows; one side alone
prints its side and names what is missing; fewer than three variants give no correlation."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from harness.cli.entry import main
from harness.check.scripted import scripted_replies

av = pytest.importorskip("av", reason="PyAV: the `video` extra (also in `models` and `libero`)")

EXPERIMENT = "diagnostics_and_transfer"
#: CFG-Bench questions: MC in FAU (physical), TR and CR (temporal-causal); open-ended elsewhere.
CFG_ITEMS = [
    {"video_name": "v1.mp4", "question": "Q1 Which hand grips the cup?", "task_type": "FAU",
     "options": ["left hand", "right hand"], "correct_answer": "right hand"},
    {"video_name": "v2.mp4", "question": "Q2 Which finger presses the switch?", "task_type": "FAU",
     "options": ["thumb", "index finger"], "correct_answer": "thumb"},
    {"video_name": "v1.mp4", "question": "Q3 Why is the cup cut with a spoon?", "task_type": "CIA",
     "correct_answer": "It is not cut; it is filled."},
    {"video_name": "v2.mp4", "question": "Q4 What happens first?", "task_type": "TR",
     "options": ["pour", "stir"], "correct_answer": "pour"},
    {"video_name": "v1.mp4", "question": "Q5 What comes after the lid opens?", "task_type": "CR",
     "options": ["the pour", "the stir"], "correct_answer": "the pour"},
    {"video_name": "v2.mp4", "question": "Q6 What is the goal of the person?", "task_type": "GI",
     "correct_answer": "To make tea."},
]
PO_RECORDS = [
    {"id": 1, "video_path": "k1.mp4", "clip_start": 0.0, "clip_end": 10.0, "question": "P1 What must be true?",
     "answer": "The kettle boiled.", "evidence": [[2.0, 4.0]], "qa_type": "Precondition Grounding",
     "reasoning": "Needle-in-a-Haystack", "source": "gen", "domain": "cooking"},
    {"id": 2, "video_path": "k1.mp4", "clip_start": 0.0, "clip_end": 10.0, "question": "P2 What went wrong?",
     "answer": "The lid was open.", "evidence": [[5.0, 9.0]], "qa_type": "Mistake Recognition",
     "reasoning": "Multi-hop Reasoning", "source": "gen", "domain": "cooking"},
]
#: Per variant: the MC questions it answers right, its ProcObject evidence span, and the planner of
#: each transfer split (None: that split is not run).
SKILL = {
    "base": {"mc": {"Q1"}, "span": [0.0, 1.0],
             "eb_alfred": {"base": "random", "spatial": "random"}, "eb_manipulation": {"base": "random"}},
    "favor_sft": {"mc": {"Q1", "Q4"}, "span": [2.0, 6.0],
                  "eb_alfred": {"base": "oracle", "spatial": "random"}, "eb_manipulation": {"base": "oracle"}},
    "cfg_sft": {"mc": {"Q1", "Q2", "Q4", "Q5"}, "span": [2.0, 9.0],
                "eb_alfred": {"base": "oracle", "spatial": "oracle"}, "eb_manipulation": {"base": "random"}},
    "other": {"mc": {"Q2", "Q4", "Q5"}, "span": [5.0, 9.0],
              "eb_alfred": {"base": "oracle", "spatial": "random"}, "eb_manipulation": {"base": "random"}},
}
CFG_SPLITS = ("physical_interaction", "temporal_causal", "intentional")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    from harness.run.video import write_mp4

    cfg = tmp_path_factory.mktemp("cfg")
    (cfg / "qa_pairs.json").write_text(json.dumps(CFG_ITEMS))
    (cfg / "caption.json").write_text(json.dumps([{"video_name": "v1.mp4", "caption": "tea"},
                                                   {"video_name": "v2.mp4", "caption": "bread"}]))
    (cfg / "videos").mkdir()
    po = tmp_path_factory.mktemp("po")
    (po / "data").mkdir()
    (po / "data" / "testing.json").write_text(json.dumps(PO_RECORDS))
    (po / "videos").mkdir()
    for path in (cfg / "videos" / "v1.mp4", cfg / "videos" / "v2.mp4", po / "videos" / "k1.mp4"):
        write_mp4(path, [np.full((16, 16, 3), 8 * i, dtype=np.uint8) for i in range(8)], 1)
    return {"cfg": cfg, "po": po}


def _reply_for(variant: str):
    skill = SKILL[variant]

    def reply(text, schema, call):
        for item in CFG_ITEMS:
            if item["question"] in text and "options" in item:
                right = item["question"].split()[0] in skill["mc"]
                wrong = next(o for o in item["options"] if o != item["correct_answer"])
                return json.dumps({"result": item["correct_answer"] if right else wrong})
        if any(r["question"] in text for r in PO_RECORDS):
            return json.dumps({"answer": f"a procedure answer by {variant}", "evidence": [skill["span"]]})
        return json.dumps({"answer": f"an open answer by {variant}"})
    return reply


def build(out: Path, data: dict[str, Path], variants, suites=("cfg_bench", "procobject", "eb_alfred",
                                                             "eb_manipulation")) -> None:
    """Each variant's runs, as `harness run` writes them (the real suites, cheap agents)."""
    if "eb_manipulation" in suites:
        pytest.importorskip("robosuite", reason="EB-Manipulation's twin needs the `eb_manipulation` extra")
    for variant in variants:
        common = [f"variant.name={variant}", f"out={out}", "progress=false"]
        with scripted_replies(_reply_for(variant), name=f"joint-{variant}"):
            vlm = ["planner=vlm", "planner.params.backend=scripted", f"planner.params.script=joint-{variant}",
                   "planner.params.model=scripted", "planner.params.visual=none"]
            if "cfg_bench" in suites:
                for split in CFG_SPLITS:
                    assert main(["run", "suite=cfg_bench", f"split={split}", *vlm,
                                 f"suite.params.data_dir={data['cfg']}", *common]) == 0
            if "procobject" in suites:
                assert main(["run", "suite=procobject", *vlm, f"suite.params.data_dir={data['po']}", *common]) == 0
        for suite in ("eb_alfred", "eb_manipulation"):
            if suite in suites:
                for split, planner in SKILL[variant][suite].items():
                    limit = 2 if suite == "eb_alfred" else 1  # a MuJoCo episode takes seconds
                    assert main(["run", f"suite={suite}", f"split={split}", f"planner={planner}", f"limit={limit}",
                                 *common]) == 0


@pytest.fixture(scope="module")
def store(tmp_path_factory, data) -> Path:
    out = tmp_path_factory.mktemp("joint") / "o"
    build(out, data, ["base", "favor_sft", "cfg_sft"])
    return out


# --- values recomputed from the SQLite rows -----------------------------------------------


def _rows(out: Path) -> list[dict]:
    with sqlite3.connect(out / "results.sqlite") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT variant, suite, split, episode_id, success, error_kind, "
                                            "\"values\" FROM episodes")]


def expected(out: Path) -> dict[tuple[str, str], dict[str, float]]:
    """(variant, column label) -> metric -> value, computed here from the rows: accuracy = correct
    MC answers / MC questions; mIoU = mean per-question IoU; SR = successes / episodes per split,
    averaged over the column's splits."""
    cells: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for r in _rows(out):
        values = json.loads(r["values"]) if r["values"] else {}
        acc = cells.setdefault((r["variant"], r["suite"], r["split"]), {"correct": [], "iou": [], "success": []})
        if "correct" in values:
            acc["correct"].append(float(values["correct"]))
        if "iou" in values:
            acc["iou"].append(float(values["iou"]))
        acc["success"].append(float(bool(r["success"]) and not r["error_kind"]))
    columns = {"CFG Physical": ("cfg_bench", ["physical_interaction"], "correct", "accuracy"),
               "CFG Temporal-Causal": ("cfg_bench", ["temporal_causal"], "correct", "accuracy"),
               "ProcObject": ("procobject", ["test"], "iou", "miou"),
               "EB-ALFRED Avg": ("eb_alfred", ["base", "spatial"], "success", "sr"),
               "EB-Manipulation Avg": ("eb_manipulation", ["base"], "success", "sr")}
    out_values: dict = {}
    for variant in {k[0] for k in cells}:
        for label, (suite, splits, field, metric) in columns.items():
            per = [cells[(variant, suite, s)][field] for s in splits if (variant, suite, s) in cells]
            if per and all(per):
                out_values.setdefault((variant, label), {})[metric] = sum(sum(p) / len(p) for p in per) / len(per)
    return out_values


def _ranks(x):
    return [sum(b < a for b in x) + (sum(b == a for b in x) + 1) / 2 for a in x]


def _spearman(x, y):
    rx, ry = _ranks(x), _ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    return num / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))


def _table(capsys, *argv) -> tuple[str, str]:
    capsys.readouterr()
    assert main(["table", *argv]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


# --- the tests ------------------------------------------------------------------------------


def test_joint_table_prints_both_sides_and_their_association(store, capsys):
    text, _ = _table(capsys, str(store), "--experiment", EXPERIMENT)
    lines = text.splitlines()
    header = _cells(lines[0])
    # temporal_causal holds two task types (TR, CR): its cell is their mean, labelled (harness.tables.build)
    assert header == ["variant", "CFG Physical Acc", "CFG Physical ΔAcc", "CFG Temporal-Causal Acc (mean over task_type)",
                      "CFG Temporal-Causal ΔAcc", "ProcObject mIoU", "ProcObject ΔmIoU", "EB-ALFRED Avg SR",
                      "EB-ALFRED Avg ΔSR", "EB-Manipulation Avg SR", "EB-Manipulation Avg ΔSR"]
    want = expected(store)
    rows = {_cells(line)[0]: _cells(line) for line in lines[2:5]}
    assert list(rows) == ["Base", "FAVOR-SFT", "CFG-SFT"]
    for variant, label in (("base", "Base"), ("favor_sft", "FAVOR-SFT"), ("cfg_sft", "CFG-SFT")):
        row = dict(zip(header, rows[label]))
        for column, metric, text_of in (("CFG Physical", "accuracy", lambda v: f"{100 * v:.1f}"),
                                        ("CFG Temporal-Causal", "accuracy", lambda v: f"{100 * v:.1f}"),
                                        ("ProcObject", "miou", lambda v: f"{v:.2f}"),
                                        ("EB-ALFRED Avg", "sr", lambda v: f"{100 * v:.1f}"),
                                        ("EB-Manipulation Avg", "sr", lambda v: f"{100 * v:.1f}")):
            value = want[(variant, column)][metric]
            name = {"accuracy": "Acc", "miou": "mIoU", "sr": "SR"}[metric]
            partial = column.startswith("EB-")  # limit=2 / limit=1 of the split (the ° mark, harness/tables/caveats.py)
            head = f"{column} {name}" + (" (mean over task_type)" if column == "CFG Temporal-Causal" else "")
            assert row[head] == text_of(value) + ("°" if partial else ""), (variant, column)
            delta = row[f"{column} Δ{name}"]
            if variant == "base":
                assert delta == "–"
            else:
                d = value - want[("base", column)][metric]
                assert delta == (f"{100 * d:+.1f}" if metric != "miou" else f"{d:+.2f}"), (variant, column)
    # The paired intervals of each Δ are in the footnotes.
    d = want[("favor_sft", "EB-ALFRED Avg")]["sr"] - want[("base", "EB-ALFRED Avg")]["sr"]
    assert f"FAVOR-SFT, EB-ALFRED Avg: ΔSR {100 * d:+.1f} [" in text
    d = want[("cfg_sft", "ProcObject")]["miou"] - want[("base", "ProcObject")]["miou"]
    assert f"CFG-SFT, ProcObject: ΔmIoU {d:+.2f} [+0." in text  # a score's interval in its own unit
    # The association, per diagnostic column and metric vs each transfer column, recomputed here.
    variants = ["base", "favor_sft", "cfg_sft"]
    for diag, dm, dl in (("CFG Physical", "accuracy", "Acc"), ("CFG Temporal-Causal", "accuracy", "Acc"),
                         ("ProcObject", "miou", "mIoU")):
        for transfer in ("EB-ALFRED Avg", "EB-Manipulation Avg"):
            x = [want[(v, diag)][dm] for v in variants]
            y = [want[(v, transfer)]["sr"] for v in variants]
            rho = _spearman(x, y)
            line = next(line for line in lines if line.startswith(f"ρ({diag} {dl}, {transfer} SR)"))
            assert f" = {rho:+.2f} [" in line and "n = 3 points" in line, line
    assert "Caveat: n = 3 points. So few variants prove nothing" in text
    # The judged S has no value before `harness judge`: named, never shown as 0.
    assert "CFG Intentional S: no value in the store (a judged metric" in text
    assert "not in the store, so not shown: CFG Evaluative (cfg_bench: evaluative)" in text
    assert "EB-ALFRED Avg: over 2 of its 6 splits (base, spatial)" in text


def test_interval_is_a_bootstrap_over_episodes(store):
    """The interval recomputed here for one pair: episodes drawn with replacement within each
    cell, the same draw for every variant, ρ of the column values, percentiles of the defined."""
    import pandas as pd

    from harness.tables import experiments
    from harness.tables import selection as results

    sel = results.load([str(store)])
    exp = experiments.load(EXPERIMENT)
    table = exp.table(sel.frame)
    got = next(a for a in table.attrs["association"]
               if a["x"]["column"] == "CFG Physical" and a["y"]["column"] == "EB-ALFRED Avg")
    df = sel.frame
    variants = ["base", "favor_sft", "cfg_sft"]

    def cell(suite, split, field):
        part = df[(df["suite"] == suite) & (df["split"] == split)]
        ids = sorted(set(part["episode_id"]))
        return np.array([[float((r["values"] or {}).get(field, np.nan)) if field != "success" else
                          float(r["success"] and pd.isna(r["error_kind"]))
                          for _, r in part[part["variant"] == v].set_index("episode_id").loc[ids].iterrows()]
                         for v in variants])

    # CFG-Bench's cells are means over task types: the accuracy's unit is FAU (the open CIA question has
    # none), resampled within itself
    acc = cell("cfg_bench", "physical_interaction", "correct")
    acc = acc[:, ~np.isnan(acc[0])]
    sr = [cell("eb_alfred", s, "success") for s in ("base", "spatial")]
    rng = np.random.default_rng(0)
    rhos = []
    for start in range(0, 10_000, 1000):
        draws = {}
        for name, arr in (("acc", acc), ("sr0", sr[0]), ("sr1", sr[1])):
            n = arr.shape[1]
            draws[name] = rng.multinomial(n, np.full(n, 1.0 / n), size=1000)
        for b in range(1000):
            c = draws["acc"][b]
            known = ~np.isnan(acc[0])
            if (c * known).sum() == 0:
                rhos.append(math.nan)
                continue
            x = [(c * np.nan_to_num(acc[i])).sum() / (c * known).sum() for i in range(3)]
            y = [np.mean([(draws[f"sr{k}"][b] * sr[k][i]).sum() / sr[k].shape[1] for k in (0, 1)]) for i in range(3)]
            rhos.append(_spearman(x, y) if len(set(x)) > 1 and len(set(y)) > 1 else math.nan)
    defined = np.array([r for r in rhos if not math.isnan(r)])
    assert got["undefined_resamples"] == 10_000 - defined.size
    assert got["interval"] == pytest.approx(list(np.percentile(defined, [2.5, 97.5])))


def test_every_format_and_a_further_variant(store, data, tmp_path, capsys):
    """JSON, CSV and LaTeX carry the same; a variant the experiment does not declare adds a point."""
    doc = json.loads(_table(capsys, str(store), "--experiment", EXPERIMENT, "--format", "json")[0])
    assert {a["n"] for a in doc["association"]} == {3}
    assert doc["rows"][1]["cells"]["EB-ALFRED Avg"]["sr"]["delta_interval_kind"] == "paired_bootstrap95"
    csv_text, csv_err = _table(capsys, str(store), "--experiment", EXPERIMENT, "--format", "csv")
    assert csv_text.splitlines()[0].startswith("variant,CFG Physical:accuracy,CFG Physical:Δaccuracy")
    assert "note: ρ(CFG Physical Acc, EB-ALFRED Avg SR)" in csv_err
    latex = _table(capsys, str(store), "--experiment", EXPERIMENT, "--format", "latex")[0]
    assert r"$\rho$(CFG Physical Acc, EB-ALFRED Avg SR)" in latex and "ρ" not in latex
    # a fourth variant in a second store, read together: n = 4, the table still shows the declared three
    more = tmp_path / "more"
    build(more, data, ["other"])
    text = _table(capsys, str(store), str(more), "--experiment", EXPERIMENT)[0]
    assert [_cells(line)[0] for line in text.splitlines()[2:5]] == ["Base", "FAVOR-SFT", "CFG-SFT"]
    assert "| other" not in text
    want = {**expected(store), **expected(more)}
    x = [want[(v, "ProcObject")]["miou"] for v in ("base", "favor_sft", "cfg_sft", "other")]
    y = [want[(v, "EB-ALFRED Avg")]["sr"] for v in ("base", "favor_sft", "cfg_sft", "other")]
    line = next(line for line in text.splitlines() if line.startswith("ρ(ProcObject mIoU, EB-ALFRED Avg SR)"))
    assert f" = {_spearman(x, y):+.2f} [" in line and "n = 4 points" in line and "other (" in line


def test_one_side_alone_and_too_few_points(data, tmp_path, capsys):
    transfer_only = tmp_path / "t"
    build(transfer_only, data, ["base", "cfg_sft"], suites=("eb_alfred",))
    text = _table(capsys, str(transfer_only), "--experiment", EXPERIMENT)[0]
    assert _cells(text.splitlines()[0]) == ["variant", "EB-ALFRED Avg SR", "EB-ALFRED Avg ΔSR"]
    assert ("not in the store, so not shown: CFG Physical (cfg_bench: physical_interaction); CFG Temporal-Causal "
            "(cfg_bench: temporal_causal); CFG Intentional (cfg_bench: intentional); CFG Evaluative (cfg_bench: "
            "evaluative); ProcObject (procobject: test); EB-Manipulation Avg (eb_manipulation: base, common_sense, "
            f"complex, spatial, visual); `harness run +experiment={EXPERIMENT} out={transfer_only}`") in text
    assert "association not computed: no diagnostic column in the store" in text
    both = tmp_path / "b"
    build(both, data, ["base", "cfg_sft"], suites=("cfg_bench", "eb_alfred"))
    text = _table(capsys, str(both), "--experiment", EXPERIMENT)[0]
    line = next(line for line in text.splitlines() if line.startswith("ρ(CFG Physical Acc, EB-ALFRED Avg SR)"))
    assert line == ("ρ(CFG Physical Acc, EB-ALFRED Avg SR): not computed: 2 points (Base, CFG-SFT): "
                    "a rank correlation needs at least 3.")
    assert "Caveat: n = 2 points" in text


def test_report_page_charts_and_links_to_the_questions(store, tmp_path):
    """`harness report OUT --experiment ...`: the joint table, one chart per diagnostic x transfer
    (column, metric) with a point per variant, and the questions where a variant's value differs
    from the base's, each a link the page's browser opens (an episode of the report's data)."""
    import re
    from urllib.parse import unquote

    dest = tmp_path / "report" / "index.html"
    assert main(["report", str(store), "--experiment", EXPERIMENT, "--dest", str(dest)]) == 0
    page = dest.read_text()
    section = page[page.index('<section id="joint">'):]
    section = section[:section.index("</section>")]
    experiment = page[page.index('<section id="experiment">'):]
    assert "ρ(CFG Physical Acc, EB-ALFRED Avg SR)" in experiment[:experiment.index("</section>")]  # the table, once
    assert page.count('class="experiment"') <= 1 and "ρ(CFG Physical Acc, EB-ALFRED Avg SR) =" not in section
    charts = re.findall(r'<svg class="chart joint".*?</svg>', section)
    assert len(charts) == 3 * 2 and all(c.count("<circle") == 3 for c in charts)
    data = json.loads(re.search(r'<script[^>]*id="report-data"[^>]*>(.*?)</script>', page, re.S).group(1))
    eps = [dict(zip(data["fields"], row)) for row in data["rows"]]
    links = {":".join(re.sub(r"[%:#?&\s]", lambda m: f"%{ord(m.group()):02X}", str(e[k]))
                      for k in ("variant", "suite", "split", "episode", "seed")) for e in eps}
    hrefs = re.findall(r'href="#episode=([^"]+)"', section)
    assert hrefs and all(h in links for h in hrefs)
    # the listed questions of CFG Physical Acc: exactly those where a variant's answer differs from the base's
    correct: dict[tuple[str, str], float] = {}
    for r in _rows(store):
        values = json.loads(r["values"]) if r["values"] else {}
        if r["split"] == "physical_interaction" and "correct" in values:
            correct[(r["variant"], r["episode_id"])] = values["correct"]
    want = sorted((v, e) for (v, e), c in correct.items() if v != "base" and c != correct[("base", e)])
    block = section[section.index("<h3>CFG Physical Acc</h3>"):]
    block = block[:block.index("</ul>")]
    listed = sorted((unquote(h).split(":")[0], unquote(h).split(":")[3])
                    for h in re.findall(r'class="ep-link" href="#episode=([^"]+)"', block))
    assert listed == want and want


#: What the loopback judge gives each variant's answers: CFG-Bench (C, D, premise decision on a
#: gated question), ProcObject's four dimensions (all equal here).
JUDGED = {"base": (2, 2, "accepted", 1), "favor_sft": (6, 4, "corrected", 3), "cfg_sft": (8, 8, "rejected", 5)}


def _judge_reply(text: str) -> str:
    variant = next(v for v in JUDGED if f"by {v}" in text)
    c, d, premise, j = JUDGED[variant]
    if "procedure answer" in text:
        return json.dumps({k: j for k in ("contextual_integration", "detail_orientation", "contextual_understanding",
                                          "temporal_understanding")})
    gate = {"premise": premise} if "Premise check" in text else {}
    return json.dumps({**gate, "correctness": c, "detailedness": d, "rationale": "r"})


def test_judged_columns_after_harness_judge(data, tmp_path, capsys):
    """`harness judge` with a loopback judge, then the table: CFG-Bench S per tier and ProcObject J
    beside the rest, each value the mean of the stored verdicts' values over the tier's judged
    answers (recomputed here from the judgements rows), each Δ the paired one (a suite's declared
    metric, not a record field), and in the association."""
    from tests.envs.loopback_judge import serve

    out = tmp_path / "judged"
    build(out, data, ["base", "favor_sft", "cfg_sft"], suites=("cfg_bench", "procobject", "eb_alfred"))
    srv, url = serve(_judge_reply)
    try:
        capsys.readouterr()
        assert main(["judge", str(out), "judge=openai", "judge.model=judge-x", f"judge.params.base_url={url}"]) == 0
    finally:
        srv.shutdown()
        srv.server_close()
    with sqlite3.connect(out / "results.sqlite") as db:
        verdicts = db.execute("SELECT e.variant, e.suite, e.split, j.vals FROM judgements j JOIN episodes e USING "
                              "(run_id, suite, split, episode_id, seed) WHERE j.status = 'ok'").fetchall()
    scores: dict[tuple[str, str, str], list[float]] = {}
    for variant, suite, split, vals in verdicts:
        scores.setdefault((variant, suite, split), []).append(json.loads(vals)["judge_score"])
    mean = {k: sum(v) / len(v) for k, v in scores.items()}
    assert mean[("base", "cfg_bench", "physical_interaction")] == 0.0  # the gate: the premise was accepted
    text = _table(capsys, str(out), "--experiment", EXPERIMENT, "--judge", "all")[0]
    lines = text.splitlines()
    header = _cells(lines[0])
    for column, split, suite, name in (("CFG Physical", "physical_interaction", "cfg_bench", "S"),
                                       ("CFG Intentional", "intentional", "cfg_bench", "S"),
                                       ("ProcObject", "test", "procobject", "J")):
        for line, variant in zip(lines[2:5], ("base", "favor_sft", "cfg_sft")):
            row = dict(zip(header, _cells(line)))
            assert row[f"{column} {name}"] == f"{mean[(variant, suite, split)]:.2f}", (column, variant)
            if variant != "base":
                d = mean[(variant, suite, split)] - mean[("base", suite, split)]
                assert row[f"{column} Δ{name}"] == f"{d:+.2f}"
    assert "CFG Temporal-Causal S: no value in the store (a judged metric" in text  # no open question there
    assert "judged metrics (S, C, D, Gate, J, SentSim, BERTScore): judge judge-x." in text
    assert "Δ: percentage points vs Base (S, J, mIoU: in their own units)." in text
    # the pairs behind a judged Δ are the questions both sides have a score on (the CIA ones), not the tier's
    n = len(scores[("favor_sft", "cfg_bench", "physical_interaction")])
    footnote = next(line for line in lines if line.startswith("FAVOR-SFT, CFG Physical: ΔS "))
    assert footnote.endswith(f", {n} pair{'' if n == 1 else 's'}."), footnote
    x = [mean[(v, "cfg_bench", "intentional")] for v in ("base", "favor_sft", "cfg_sft")]
    y = [expected(out)[(v, "EB-ALFRED Avg")]["sr"] for v in ("base", "favor_sft", "cfg_sft")]
    line = next(line for line in lines if line.startswith("ρ(CFG Intentional S, EB-ALFRED Avg SR)"))
    assert f" = {_spearman(x, y):+.2f} [" in line and "n = 3 points" in line
    # a second judge: --judge all shows each judge's S and J in its own columns, each in the association
    srv, url = serve(_judge_reply)
    try:
        assert main(["judge", str(out), "judge=openai", "judge.model=judge-y", f"judge.params.base_url={url}"]) == 0
    finally:
        srv.shutdown()
        srv.server_close()
    text = _table(capsys, str(out), "--experiment", EXPERIMENT, "--judge", "all")[0]
    header = _cells(text.splitlines()[0])
    for tag in ("judge-x", "judge-y"):
        assert f"CFG Physical S [{tag}]" in header and f"ProcObject ΔJ [{tag}]" in header
        assert f"ρ(CFG Intentional S [{tag}], EB-ALFRED Avg SR) = {_spearman(x, y):+.2f} [" in text
    assert "CFG Physical S: no value" not in text


def test_spearman_matches_scipy_with_ties():
    stats = pytest.importorskip("scipy.stats")
    from harness.tables.joint import spearman

    rng = np.random.default_rng(1)
    for n in (3, 4, 7):
        for _ in range(50):
            x, y = rng.integers(0, 3, n).astype(float), rng.integers(0, 4, n).astype(float)
            want = stats.spearmanr(x, y).statistic if len(set(x)) > 1 and len(set(y)) > 1 else math.nan
            got = float(spearman(x, y))
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want), (x, y)


@pytest.mark.parametrize("column, key, value, message", [
    (0, "role", "diagnostics", "columns[0].role must be one of diagnostic, transfer"),
    (0, "metrics", ["sr"], "columns[0].metrics: sr is not a metric cfg_bench declares"),
    (5, "metrics", ["miou"], "columns[5].metrics: miou is not a metric eb_alfred declares"),
])
def test_bad_column_keys_are_one_line(column, key, value, message, tmp_path, capsys):
    from omegaconf import OmegaConf

    from harness.tables import experiments

    node = OmegaConf.to_container(OmegaConf.load(experiments.path_of(EXPERIMENT)))
    node["experiment"]["table"]["columns"][column][key] = value
    path = tmp_path / "bad.yaml"
    path.write_text(OmegaConf.to_yaml(node))
    assert main(["run", f"+experiment={path}", f"out={tmp_path / 'o'}", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "o").exists()
