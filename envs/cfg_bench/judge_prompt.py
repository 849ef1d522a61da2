"""Our judge prompt for CFG-Bench's open-ended answers, and a reader for a user's own copy of
the original one.

Ours (:data:`JUDGE_PROMPT_VERSION`) is written from the rubric the paper and its judge describe,
not copied: the judge sees the question, the task code, the video's caption and the reference
answer (never the video); the caption is the primary evidence and outranks the reference where
they disagree; Correctness and Detailedness are integers 0..10 with five bands above 0 (9-10,
7-8, 5-6, 3-4, 1-2) and 0 for a failed gate or nonsense; for CIA and CRS the judge first decides
whether the answer rejects, corrects or accepts the question's false premise, and an accepted
premise scores 0 on both (judge/CFG_JUDGE.py of CFG-Bench/CFG-Bench at b50bb6d; DeepSeek-R1 at
temperature 0.2 there, judge/judge_deepseek_r1.py ``--temperature`` default). Our reply format
adds that decision as a field (``premise``), so the gate is stored per answer rather than read
back from two zeros; :func:`envs.cfg_bench.scoring.parse_judge_reply` reads it.

The original prompt is not part of this project. A user who has it (the file
``judge/CFG_JUDGE.py`` holds it as a Python string) can save its text to a file and point
:func:`load_original_prompt` at it (or ``$CFG_BENCH_JUDGE_PROMPT``); :func:`render_original`
fills its five placeholders as the originals do (plain replacement of ``{caption}``,
``{question}``, ``{correct_answer}``, ``{task_type}``, ``{result}``; judge_deepseek_r1.py:140-147),
and its replies are parsed with ``explicit_gate=False``.
"""

from __future__ import annotations

import os
from pathlib import Path

from envs.cfg_bench.data import GATED_TASKS, MC_TASKS, DataError

JUDGE_PROMPT_VERSION = "cfg-bench-judge-1"
#: Environment variable naming a file with the original judge prompt's text.
ORIGINAL_PROMPT_ENV = "CFG_BENCH_JUDGE_PROMPT"
ORIGINAL_PLACEHOLDERS = ("{caption}", "{question}", "{correct_answer}", "{task_type}", "{result}")
#: The originals' judge temperature (judge_deepseek_r1.py, ``--temperature`` default).
JUDGE_TEMPERATURE = 0.2

_TASK_FOCUS = {
    "CIA": "how an action that did not happen in the video would be carried out (the question's premise is false)",
    "CRS": "a temporal or causal relation the question states wrongly (the question's premise is false)",
    "FI": "why a particular action is performed",
    "GI": "the overall goal behind the whole sequence of actions",
    "CIT": "how the actions would change if the person had a different goal",
    "PM": "how far the task has progressed, and whether it runs smoothly or is stuck",
    "SE": "whether the chosen way of doing the task is suitable and efficient",
    "CEU": "how changing one detail of the execution would change its quality, speed or success",
}

_BANDS = (
    "Score two dimensions with whole numbers from 0 to 10, using these bands:\n"
    "Correctness - does the answer agree with the video description and address what the question asks?\n"
    "  9-10: fully right; 7-8: right conclusion, small gaps; 5-6: partly right, an important step missing or "
    "one clear error; 3-4: major errors or misreads the question; 1-2: mostly unrelated or invented; "
    "0: failed premise check, or meaningless.\n"
    "Detailedness - does the answer give the specific, relevant details (objects, motions, order, outcome) "
    "the question calls for? Length without relevant content earns nothing.\n"
    "  9-10: thorough and specific; 7-8: most key details; 5-6: correct but general; 3-4: thin, one aspect "
    "only; 1-2: almost empty; 0: failed premise check, or meaningless.\n"
    "A wrong statement costs more than an omission. Equivalent wording is fine. When the description is "
    "thin, judge from what it does support and score lower rather than refusing.\n"
)


def build_judge_prompt(*, question: str, task_type: str, caption: str, reference: str, answer: str) -> str:
    """Our judge prompt for one open-ended answer."""
    task = task_type.strip().upper()
    if task in MC_TASKS or task not in _TASK_FOCUS:
        raise ValueError(f"{task_type!r} is not an open-ended CFG-Bench task")
    gated = task in GATED_TASKS
    parts = [
        "You grade an answer to a question about a video. You do not see the video; you get a detailed "
        "description of it and a reference answer written by a person. Treat the description as the ground "
        "truth: where the reference answer and the description disagree, the description wins.\n",
        f"Task {task}: the question is about {_TASK_FOCUS[task]}.\n",
    ]
    if gated:
        parts.append(
            "Premise check first: the question contains a claim the video contradicts. Decide whether the answer "
            "'rejected' the claim (says it is wrong), 'corrected' it (describes what really happens instead), or "
            "'accepted' it (goes along with it). If it accepted it, both scores are 0.\n")
    parts.append(_BANDS)
    parts.append(f"\nVideo description:\n{caption.strip()}\n\nQuestion:\n{question.strip()}\n\n"
                 f"Reference answer:\n{reference.strip()}\n\nAnswer to grade:\n{answer.strip()}\n\n")
    fields = ('"premise": "rejected" | "corrected" | "accepted", ' if gated else "")
    parts.append("Reply with one JSON object and nothing else: {" + fields +
                 '"correctness": <0-10>, "detailedness": <0-10>, "rationale": "<one or two sentences>"}')
    return "".join(parts)


def load_original_prompt(path: str | Path | None = None) -> str:
    """The text of a user's copy of the original judge prompt, from ``path`` or
    ``$CFG_BENCH_JUDGE_PROMPT``; :class:`DataError` when neither names a readable file holding
    all five placeholders."""
    where = path or os.environ.get(ORIGINAL_PROMPT_ENV)
    if not where:
        raise DataError(f"no original judge prompt configured: give its file, or set ${ORIGINAL_PROMPT_ENV}")
    file = Path(where).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{file}: cannot read the judge prompt ({exc.__class__.__name__})") from None
    missing = [p for p in ORIGINAL_PLACEHOLDERS if p not in text]
    if missing:
        raise DataError(f"{file}: not the judge prompt's text (no {missing[0]} placeholder)")
    return text


def render_original(template: str, *, question: str, task_type: str, caption: str, reference: str,
                    answer: str) -> str:
    """``template`` with its placeholders replaced in the originals' order."""
    return (template.replace("{question}", str(question)).replace("{result}", str(answer))
            .replace("{correct_answer}", str(reference)).replace("{caption}", str(caption))
            .replace("{task_type}", str(task_type)))
