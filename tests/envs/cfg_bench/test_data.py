"""CFG-Bench data reading, prompts and the originals' prediction format, on small files in the
layout the originals' scripts read (qa_pairs.json, caption.json, videos/)."""

from __future__ import annotations

import json

import pytest

from envs.cfg_bench import data
from envs.cfg_bench.data import DataError, caption_for, find_video, load_captions, load_questions, select, video_index
from envs.cfg_bench.judge_prompt import build_judge_prompt, load_original_prompt, render_original
from envs.cfg_bench.official import to_official, write_official
from envs.cfg_bench.prompt import HINT_MODES, build_prompt, open_answer
from envs.cfg_bench.scoring import extract_choice, parse_judge_reply

OPTS = ["opens the lid first", "pours the water first", "stirs first"]


def items():
    out = [{"video_name": "clip_001.mp4", "question": "What happens first?", "options": OPTS,
            "correct_answer": "pours the water first", "task_type": "TR"},
           {"video_name": "clip_002.mp4", "question": "How does she cut the bread she never touched?",
            "correct_answer": "She never cuts bread; she slices a tomato.", "task_type": "CIA",
            "question_key": "k-cia-1"}]
    for i, task in enumerate(data.TASKS):
        if task in data.MC_TASKS:
            out.append({"video_name": f"v{i}.mp4", "question": f"q{i}", "options": ["a", "b"],
                        "correct_answer": "b", "task_type": task})
        else:
            out.append({"video_name": f"v{i}.mp4", "question": f"q{i}", "correct_answer": "r",
                        "task_type": task.lower()})
    return out


@pytest.fixture
def root(tmp_path):
    (tmp_path / "qa_pairs.json").write_text(json.dumps(items()))
    (tmp_path / "caption.json").write_text(json.dumps([
        {"video_name": "clip_001.mp4", "caption": "A person pours water, then opens the lid."},
        {"video_path": "sub/clip_002.mp4", "caption_en": "A person slices a tomato."},
        {"video_name": "v1.mp4", "annotations": {"caption": "nested"}},
        {"video_name": "empty.mp4", "caption": ""}]))
    (tmp_path / "videos" / "sub").mkdir(parents=True)
    (tmp_path / "videos" / "sub" / "Clip_001.MP4").write_bytes(b"\0")
    (tmp_path / "videos" / "notes.txt").write_text("x")
    return tmp_path


def test_tiers_hold_the_eleven_tasks_once():
    flat = [t for ts in data.TIERS.values() for t in ts]
    assert sorted(flat) == sorted(data.TASKS) and len(flat) == 11
    assert data.TIERS["physical_interaction"] == ("FAU", "CIA")
    assert data.TIERS["temporal_causal"] == ("TR", "CR", "CRS")
    assert data.TIERS["intentional"] == ("FI", "GI", "CIT")
    assert data.TIERS["evaluative"] == ("PM", "SE", "CEU")
    assert data.MC_TASKS == {"FAU", "TR", "CR"} and data.GATED_TASKS == {"CIA", "CRS"}


def test_questions_splits_captions_and_videos(root):
    qs = load_questions(root)
    assert len(qs) == 13
    assert qs[1].qid == "k-cia-1" and qs[1].gated and not qs[1].is_mc and qs[1].tier == "physical_interaction"
    assert qs[0].is_mc and qs[0].options == tuple(OPTS) and qs[0].qid.startswith("TR-")
    assert qs[0].qid == load_questions(root)[0].qid  # stable
    assert {q.task_type for q in select(qs, "temporal_causal")} == {"TR", "CR", "CRS"}
    assert len(select(qs, "temporal_causal")) == 4
    assert [q.task_type for q in select(qs, "crs")] == ["CRS"] and select(qs, "CRS") == select(qs, "crs")
    assert select(qs, "all") == qs
    with pytest.raises(DataError, match="did you mean 'temporal_causal'"):
        select(qs, "temporal_casual")
    caps = load_captions(root)
    assert caps == {"clip_001.mp4": "A person pours water, then opens the lid.",
                    "clip_002.mp4": "A person slices a tomato.", "v1.mp4": "nested"}
    assert caption_for(caps, qs[0]) == "A person pours water, then opens the lid."
    assert caption_for(caps, qs[2]) is None  # v0.mp4 has none
    index = video_index(root)
    assert find_video(index, "clip_001.mp4").name == "Clip_001.MP4"  # recursive, lower-case fallback
    assert find_video(index, "clip_002.mp4") is None


def test_captions_as_json_lines(tmp_path):
    (tmp_path / "caption.json").write_text('{"video_name": "a.mp4", "caption": "x"}\n\n{"video_name": "b.mp4", '
                                           '"caption": "y"}\n')
    assert load_captions(tmp_path) == {"a.mp4": "x", "b.mp4": "y"}


@pytest.mark.parametrize("mutate, message", [
    (lambda it: it[0].update(task_type="XYZ"), "unknown task_type 'XYZ'"),
    (lambda it: it[0].update(task_type="TRR"), "did you mean TR"),
    (lambda it: it[0].update(correct_answer="nope"), "not one of the options"),
    (lambda it: it[0].update(options=[]), "needs at least two options"),
    (lambda it: it[1].update(options=["a", "b"]), "open-ended but the item has options"),
    (lambda it: it[0].pop("question"), "'question' must be a non-empty string"),
    (lambda it: it.append(dict(it[0])), "the same question as item 0"),
    (lambda it: it.append(7), "expected an object"),
])
def test_malformed_question_files_fail_with_one_line(tmp_path, mutate, message):
    its = items()
    mutate(its)
    (tmp_path / "qa_pairs.json").write_text(json.dumps(its))
    with pytest.raises(DataError, match=message) as err:
        load_questions(tmp_path)
    assert "\n" not in str(err.value)


def test_unreadable_files_fail_with_one_line(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_questions(tmp_path)
    (tmp_path / "qa_pairs.json").write_text("{not json")
    with pytest.raises(DataError, match="not readable JSON"):
        load_questions(tmp_path)
    (tmp_path / "qa_pairs.json").write_text('{"a": 1}')
    with pytest.raises(DataError, match="JSON list"):
        load_questions(tmp_path)


def test_prompts_ask_for_the_fields_the_parsers_read(root):
    mc, cia = load_questions(root)[:2]
    text = build_prompt(mc)
    assert '"result"' in text and all(f"- {o}" in text for o in OPTS)
    # the prompt's own example reply reads back as the option
    assert extract_choice(json.dumps({"result": OPTS[1]}), mc.options).choice == OPTS[1]
    warn, plain = build_prompt(cia, hint="warn"), build_prompt(cia, hint="none")
    assert warn != plain and cia.question in plain and "differs" in warn and "differs" not in plain
    assert HINT_MODES == ("warn", "none")
    with pytest.raises(ValueError):
        build_prompt(cia, hint="maybe")
    assert open_answer('{"answer": " She slices a tomato. "}') == "She slices a tomato."
    assert open_answer("free text") == "free text"


def test_our_judge_prompt_and_a_users_copy_of_the_original(root, tmp_path, monkeypatch):
    cia = load_questions(root)[1]
    ours = build_judge_prompt(question=cia.question, task_type="CIA", caption="A person slices a tomato.",
                              reference=cia.correct_answer, answer="She slices a tomato, not bread.")
    assert '"premise"' in ours and "A person slices a tomato." in ours and "description wins" in ours
    assert '"premise"' not in build_judge_prompt(question="q", task_type="FI", caption="c", reference="r", answer="a")
    with pytest.raises(ValueError):
        build_judge_prompt(question="q", task_type="TR", caption="c", reference="r", answer="a")
    monkeypatch.delenv("CFG_BENCH_JUDGE_PROMPT", raising=False)
    with pytest.raises(DataError, match="no original judge prompt configured"):
        load_original_prompt()
    copy = tmp_path / "judge.txt"
    copy.write_text("C:{caption} Q:{question} R:{correct_answer} T:{task_type} A:{result} {json}")
    monkeypatch.setenv("CFG_BENCH_JUDGE_PROMPT", str(copy))
    template = load_original_prompt()
    assert render_original(template, question="q", task_type="CIA", caption="c", reference="r", answer="a") == \
        "C:c Q:q R:r T:CIA A:a {json}"
    copy.write_text("no placeholders")
    with pytest.raises(DataError, match="no {caption} placeholder"):
        load_original_prompt(copy)


def test_predictions_in_the_originals_format(root, tmp_path):
    qs = load_questions(root)
    mc, cia = qs[0], qs[1]
    answers = {mc.qid: extract_choice('{"result": "pours the water first"}', mc.options),
               cia.qid: "She slices a tomato; no bread is cut."}
    verdicts = {cia.qid: parse_judge_reply('{"premise": "corrected", "correctness": 8, "detailedness": 6}', "CIA")}
    items_out = to_official(qs, answers, "my-model", verdicts)
    assert [i["task_type"] for i in items_out] == ["TR", "CIA"]
    assert items_out[0]["evaluation"] == [{"model": "my-model", "result": "pours the water first", "reason": "",
                                           "eval": {"type": "close_ended", "prediction": "pours the water first",
                                                    "correct_answer": "pours the water first", "is_correct": True,
                                                    "accuracy": 1.0}}]
    assert items_out[0]["options"] == OPTS and "question_key" not in items_out[0]
    ev = items_out[1]["evaluation"][0]
    assert ev["open_ended_result"].startswith("She slices") and ev["eval"]["correctness"] == 8
    assert items_out[1]["question_key"] == "k-cia-1"
    unreadable = to_official([mc], {mc.qid: extract_choice("?", mc.options)}, "m")
    assert unreadable[0]["evaluation"][0]["result"] == ""
    path = write_official(tmp_path / "out" / "pred.json", items_out)
    assert json.loads(path.read_text()) == items_out
