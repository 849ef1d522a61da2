"""CFG-Bench scoring on hand-made cases, each computed here by hand from the definitions:

- S = (C + D) / 2 per open-ended answer (the paper's score; judge/judge_deepseek_r1.py:265 of
  CFG-Bench/CFG-Bench at b50bb6d averages (C + D) / 2);
- the gate: for CIA and CRS an answer that accepts the false premise gets C = D = 0, so S = 0
  (judge/CFG_JUDGE.py, first phase); CIT and CEU have no gate;
- multiple choice: the strict extraction rule of envs/cfg_bench/scoring.py.
"""

from __future__ import annotations

import json

import pytest

from envs.cfg_bench.scoring import (
    JudgeVerdict,
    MCAnswer,
    combine_judges,
    extract_choice,
    mc_correct,
    open_score,
    parse_judge_reply,
    summarize_mc,
    summarize_open,
)

OPTIONS = ["Picks up the cup with the left hand", "Picks up the cup with the right hand", "Pushes the cup away"]


@pytest.mark.parametrize("reply, choice, problem", [
    ('{"result": "Pushes the cup away"}', "Pushes the cup away", ""),
    ('```json\n{"result": "  Pushes the cup away "}\n```', "Pushes the cup away", ""),  # fence, white space
    ('Sure! {"result": "Picks up the cup with the right hand", "reason": "x"} Hope it helps', OPTIONS[1], ""),
    ('{"result": "pushes the cup away"}', None, "not_an_option"),  # case differs: not the option's text
    # the originals' second fallback would credit the first option quoted inside the result; we don't
    ('{"result": "Picks up the cup with the left hand or Pushes the cup away"}', None, "not_an_option"),
    ('{"result": "B"}', None, "not_an_option"),
    ('{"answer": "Pushes the cup away"}', None, "no_result"),
    ('{"result": 2}', None, "no_result"),
    ('["Pushes the cup away"]', None, "no_json"),
    ("Pushes the cup away", None, "no_json"),
    ("", None, "no_json"),
])
def test_mc_extraction_is_strict(reply, choice, problem):
    got = extract_choice(reply, OPTIONS)
    assert (got.choice, got.problem) == (choice, problem)
    assert got.readable is (choice is not None)


def test_mc_accuracy_counts_unreadable_as_wrong_and_reports_them():
    gold = OPTIONS[2]
    rows = [(extract_choice('{"result": "Pushes the cup away"}', OPTIONS), gold),        # right
            (extract_choice('{"result": "Pushes the cup away "}', OPTIONS), gold),       # right
            (extract_choice('{"result": "Picks up the cup with the left hand"}', OPTIONS), gold),  # wrong
            (extract_choice("no idea", OPTIONS), gold)]                                  # unreadable
    s = summarize_mc(rows)
    # by hand: 2 correct of 4; 1 unreadable; over the 3 readable: 2/3
    assert s == {"n": 4, "correct": 2, "unreadable": 1, "accuracy": 0.5, "accuracy_readable": 2 / 3}
    assert not mc_correct(MCAnswer(None, "no_json"), gold)


@pytest.mark.parametrize("c, d, gate, s", [
    (8, 6, None, 7.0),     # (8 + 6) / 2
    (7, 4, True, 5.5),     # gate passed: plain S
    (9, 9, False, 0.0),    # gate failed: S = 0 whatever the judge wrote
    (0, 0, None, 0.0),
    (10, 10, None, 10.0),
])
def test_open_score_is_the_mean_of_c_and_d_with_the_gate(c, d, gate, s):
    assert open_score(c, d, gate) == s


def test_open_score_refuses_scores_outside_0_to_10():
    with pytest.raises(ValueError):
        open_score(11, 3)


def _reply(**kw):
    return json.dumps(kw)


@pytest.mark.parametrize("task", ["CIA", "CRS"])
def test_the_gate_zeroes_an_accepted_premise_on_gated_tasks(task):
    accepted = parse_judge_reply(_reply(premise="accepted", correctness=7, detailedness=8), task)
    assert (accepted.status, accepted.gate, accepted.correctness, accepted.detailedness, accepted.score) == \
        ("ok", False, 0, 0, 0.0)
    for word in ("rejected", "corrected", "Corrected"):
        v = parse_judge_reply(_reply(premise=word, correctness=7, detailedness=8), task)
        assert (v.gate, v.score, v.gate_source) == (True, 7.5, "explicit")  # (7 + 8) / 2


@pytest.mark.parametrize("task", ["CIT", "CEU", "FI", "GI", "PM", "SE"])
def test_tasks_without_a_gate_ignore_a_premise_field(task):
    v = parse_judge_reply(_reply(premise="accepted", correctness=7, detailedness=8), task)
    assert (v.gate, v.score) == (None, 7.5)


def test_a_gated_reply_without_the_decision_is_unreadable_not_zero():
    v = parse_judge_reply(_reply(correctness=6, detailedness=6), "CRS")
    assert (v.status, v.problem, v.score) == ("unreadable", "no_premise_decision", None)


def test_replies_to_the_original_prompt_infer_the_gate_from_two_zeros():
    fail = parse_judge_reply(_reply(correctness=0, detailedness=0), "CIA", explicit_gate=False)
    ok = parse_judge_reply(_reply(correctness=0, detailedness=3), "CIA", explicit_gate=False)
    assert (fail.gate, fail.gate_source, fail.score) == (False, "inferred", 0.0)
    assert (ok.gate, ok.score) == (True, 1.5)


@pytest.mark.parametrize("reply, problem", [
    ("the answer is good, 8/10", "no_json"),
    (_reply(correctness=11, detailedness=3), "correctness_out_of_range"),
    (_reply(correctness=7.5, detailedness=3), "correctness_not_an_integer"),
    (_reply(correctness=7, detailedness=None), "no_detailedness"),
    (_reply(correctness=True, detailedness=3), "no_correctness"),
])
def test_unreadable_judge_replies_are_explicit(reply, problem):
    v = parse_judge_reply(reply, "FI")
    assert (v.status, v.problem, v.score) == ("unreadable", problem, None)


def test_the_originals_trailing_comma_reply_reads_only_if_it_is_json():
    # The originals' output template ends with a trailing comma: a judge that copies it
    # writes invalid JSON, which is unreadable here (their script fails on it too, and drops it).
    v = parse_judge_reply('{"correctness": 7, "detailedness": 6,}', "FI")
    assert v.status == "unreadable"
    assert parse_judge_reply('{"correctness": "7", "detailedness": 6}', "FI").score == 6.5


def test_summaries_count_unreadable_and_failed_gates():
    vs = [parse_judge_reply(_reply(premise="accepted", correctness=5, detailedness=5), "CRS"),  # S 0
          parse_judge_reply(_reply(premise="corrected", correctness=8, detailedness=6), "CRS"),  # S 7
          parse_judge_reply("oops", "CRS")]
    s = summarize_open(vs)
    # by hand: judged 2, mean S (0 + 7) / 2 = 3.5; mean C (0 + 8) / 2 = 4; mean D (0 + 6) / 2 = 3
    assert s == {"n": 3, "judged": 2, "unreadable": 1, "gate_failed": 1, "gated": 2,
                 "correctness": 4.0, "detailedness": 3.0, "score": 3.5}
    both = combine_judges([vs[1], JudgeVerdict("ok", correctness=6, detailedness=6), vs[2]])
    assert (both["score"], both["judged"], both["unreadable"]) == (6.5, 2, 1)  # (7 + 6) / 2
    assert combine_judges([vs[2]])["score"] is None


def test_multiple_choice_is_never_judged():
    with pytest.raises(ValueError):
        parse_judge_reply(_reply(correctness=1, detailedness=1), "TR")
