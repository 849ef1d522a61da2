"""ProcObject-10K: reading data/testing.json, reading replies (refused spans counted by reason),
the release's prediction format and our J judge prompt."""

from __future__ import annotations

import json

import pytest

from envs.procobject import answer as ans
from envs.procobject.data import PATTERNS, QA_TYPES, DataError, breakdown, load_items, video_file
from envs.procobject.grounding import ground
from envs.procobject.judge_prompt import DIMENSIONS, build_judge_prompt, combine, parse_judge_reply
from envs.procobject.official import record, write_predictions


def rec(i, qa_type="Precondition Grounding", reasoning="Needle-in-a-Haystack", **kw):
    out = {"id": i, "video_path": f"EgoPER/tea/clip_{i}.mp4", "clip_start": 10.0, "clip_end": 40.5,
           "question": f"How does the tea change ({i})?", "answer": "It is heated, then stirred.",
           "evidence": [[0.0, 5.0], [12.0, 20.0]], "qa_type": qa_type, "reasoning": reasoning,
           "source": "EgoPER", "domain": "Cooking & Food", "task": "Make Tea"}
    out.update(kw)
    return out


@pytest.fixture
def root(tmp_path):
    recs = [rec(i, qa_type=t, reasoning=p) for i, (t, p) in enumerate(
        [(t, p) for t in QA_TYPES for p in PATTERNS])]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "testing.json").write_text(json.dumps(recs))
    video = tmp_path / "videos" / "EgoPER" / "tea" / "clip_0.mp4"
    video.parent.mkdir(parents=True)
    video.write_bytes(b"\0")
    return tmp_path


def test_items_and_breakdowns(root):
    items = load_items(root)
    assert len(items) == 10
    first = items[0]
    assert (first.qid, first.duration, first.evidence, first.type_key, first.pattern_key) == \
        ("0", 30.5, ((0.0, 5.0), (12.0, 20.0)), "preconditions", "needle")
    assert breakdown(items) == {
        "qa_type": {"preconditions": 2, "state_evolution": 2, "counterfactuals": 2, "mistakes": 2, "readiness": 2},
        "pattern": {"needle": 5, "multi_hop": 5}}
    assert video_file(root, first) == root / "videos" / "EgoPER" / "tea" / "clip_0.mp4"
    assert video_file(root, items[1]) is None
    with pytest.raises(DataError, match="unknown ProcObject-10K split 'train'"):
        load_items(root, "train")


@pytest.mark.parametrize("change, message", [
    ({"qa_type": "Precondition"}, "did you mean 'Precondition Grounding'"),
    ({"reasoning": "Needle"}, "unknown reasoning"),
    ({"evidence": [[5.0, 1.0]]}, r"evidence\[0\] = \[5.0, 1.0\] is negative or reversed"),
    ({"evidence": [[-1, 2]]}, "negative or reversed"),
    ({"evidence": [[1, "x"]]}, "non-number"),
    ({"evidence": "[[1, 2]]"}, "must be a list"),
    ({"clip_end": 5.0}, "clip_start/clip_end"),
    ({"answer": ""}, "'answer' must be a non-empty string"),
])
def test_malformed_records_fail_with_one_line(tmp_path, change, message):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "testing.json").write_text(json.dumps([rec(1), rec(2, **change)]))
    with pytest.raises(DataError, match=message) as err:
        load_items(tmp_path)
    assert "record 1" in str(err.value) and "\n" not in str(err.value)


def test_repeated_ids_and_unreadable_files(tmp_path):
    (tmp_path / "data").mkdir()
    f = tmp_path / "data" / "testing.json"
    f.write_text(json.dumps([rec(1), rec(1)]))
    with pytest.raises(DataError, match="repeats record 0"):
        load_items(tmp_path)
    f.write_text("[{")
    with pytest.raises(DataError, match="not readable JSON"):
        load_items(tmp_path)


@pytest.mark.parametrize("text, status, answer, spans, refused, no_evidence", [
    ('{"answer": "Heated.", "evidence": [[0, 5], [10, 12.5]]}', "ok", "Heated.", ((0, 5), (10, 12.5)), {}, False),
    ('```json\n{"answer": "Heated.", "evidence": [[1, 2]]}\n```', "ok", "Heated.", ((1, 2),), {}, False),
    ('{"answer": "Heated.", "evidence": [1, 2]}', "ok", "Heated.", ((1, 2),), {}, False),  # one bare pair
    ('{"answer": "Heated.", "evidence": [[-1, 2], [4, 3], [2, 31.6], [1], ["a", 2], [0, 30.6]]}', "ok", "Heated.",
     ((0, 30.6),), {"negative": 1, "reversed": 1, "past_clip": 1, "not_a_pair": 1, "not_a_number": 1}, False),
    ('{"answer": "Heated."}', "ok", "Heated.", (), {}, True),
    ('{"answer": "Heated.", "evidence": []}', "ok", "Heated.", (), {}, True),
    ('{"answer": "Heated.", "evidence": "0-5"}', "bad_evidence", "Heated.", (), {}, True),
    ("It is heated.", "unreadable_json", None, (), {}, True),
    ('{"evidence": [[0, 5]]}', "unreadable_json", None, (), {}, True),
])
def test_replies_are_read_and_refused_spans_counted(text, status, answer, spans, refused, no_evidence):
    r = ans.parse_reply(text, duration=30.0)  # tolerance 1 s: 30.6 kept, 31.6 refused
    assert (r.status, r.answer, r.evidence, r.refused, r.no_evidence) == (status, answer, spans, refused, no_evidence)


def test_problem_counts_and_grounding_of_unreadable_replies():
    replies = [ans.parse_reply(t, 30.0) for t in (
        '{"answer": "a", "evidence": [[0, 5], [-2, 1]]}', "garbage", '{"answer": "b"}',
        '{"answer": "c", "evidence": [[9, 3], [50, 60]]}')]
    counts = ans.count_problems(replies)
    assert counts == {"replies": 4, "unreadable_json": 1, "bad_evidence": 0, "no_evidence": 1, "span_not_a_pair": 0,
                      "span_not_a_number": 0, "span_negative": 1, "span_reversed": 1, "span_past_clip": 1}
    # an unreadable reply, and one whose every span was refused, ground on nothing: 0, still scored
    assert ground(replies[1].evidence, [[0, 5]]).iou == 0.0
    assert ground(replies[3].evidence, [[0, 5]]).iou == 0.0


def test_predictions_in_the_release_format(tmp_path):
    ok = ans.parse_reply('{"answer": "Heated.", "evidence": [[0, 5], [9, 3]]}', 30.0)
    bad = ans.parse_reply("I think it is heated", 30.0)
    recs = [record("2709", ok), record("abc", bad, raw_text="I think it is heated")]
    assert recs == [{"id": 2709, "predicted_answer": "Heated.", "predicted_evidence": [[0, 5]]},
                    {"id": "abc", "predicted_answer": "I think it is heated", "predicted_evidence": []}]
    path = write_predictions(tmp_path / "p" / "preds.json", recs)
    assert json.loads(path.read_text()) == recs


def test_judge_prompt_and_j():
    text = build_judge_prompt(question="How does the tea change?", reference="Heated then stirred.",
                              answer="It gets stirred.")
    assert all(d in text for d in DIMENSIONS) and "Heated then stirred." in text
    good = parse_judge_reply(json.dumps({"contextual_integration": 4, "detail_orientation": 3,
                                         "contextual_understanding": 5, "temporal_understanding": 2}))
    assert good.j == 3.5  # (4 + 3 + 5 + 2) / 4
    other = parse_judge_reply('{"contextual_integration": "5", "detail_orientation": 5, '
                              '"contextual_understanding": 4, "temporal_understanding": 4}')
    assert other.j == 4.5
    for bad, problem in [("nope", "no_json"),
                         ('{"contextual_integration": 6, "detail_orientation": 3, "contextual_understanding": 3, '
                          '"temporal_understanding": 3}', "bad_contextual_integration"),
                         ('{"contextual_integration": 2, "detail_orientation": 3.5, '
                          '"contextual_understanding": 3, "temporal_understanding": 3}', "bad_detail_orientation"),
                         ('{"contextual_integration": 2, "detail_orientation": 3, "contextual_understanding": 3}',
                          "bad_temporal_understanding")]:
        v = parse_judge_reply(bad)
        assert (v.status, v.problem, v.j) == ("unreadable", problem, None)
    # J over judges: the mean of the readable ones; unreadable counted, never 0
    assert combine([good, other, parse_judge_reply("x")]) == {"j": 4.0, "judged": 2, "unreadable": 1}
    assert combine([parse_judge_reply("x")])["j"] is None
