"""Our question prompts for CFG-Bench (our own wording; the originals' facts they keep).

Multiple choice: the options are listed one per line, without letters, and the model is asked
for a JSON object ``{"result": "<the option's full text>"}`` (the originals ask for the same
field holding the full option text, evaluate/open_source_mllms/eval_qwen_local.py:14-26, 88-94),
read by :func:`envs.cfg_bench.scoring.extract_choice`.

Open-ended: the model is asked for ``{"answer": "..."}`` (:func:`open_answer` reads it; a reply
that is not JSON is judged as text, a JSON object without a non-empty answer is no answer).

The contradiction hint. The released open-ended prompt always tells the model that the question
may contradict the video and that it must correct it (eval_qwen_local.py:28-52); the paper's main
tables are described without it and report the hinted run as a re-evaluation in its appendix.
So the hint is a declared option, :data:`HINT_MODES`, and it belongs in the run identity (it
changes results). Default: ``warn``, as the released code runs, so that predictions
written in the originals' format (:mod:`envs.cfg_bench.official`) match what their scripts
produce; ``none`` asks the question plainly, for the paper's main-table protocol. The
hint is given for every open-ended task, gated or not, as the released prompt does (a hint only
on CIA/CRS would tell the model which questions hold a false premise).

Frames: 4 fps by default (eval_qwen_local.py ``--fps`` default 4.0, passed to qwen_vl_utils),
greedy decoding, 512 new tokens (eval_qwen_local.py:192): :data:`DEFAULT_FPS`,
:data:`MAX_NEW_TOKENS`.
"""

from __future__ import annotations

from envs.cfg_bench.data import Question
from envs.cfg_bench.scoring import json_object

#: Bumped whenever a prompt's text changes (part of the run identity).
PROMPT_VERSION = "cfg-bench-prompt-2"
#: ``warn``: the open-ended prompt says the question may contradict the video; ``none``: it does not.
HINT_MODES = ("warn", "none")
DEFAULT_HINT = "warn"
DEFAULT_FPS = 4.0
MAX_NEW_TOKENS = 512

#: How each prompt speaks of what the model sees (the ``visual`` prompt option): a blind model is
#: not told of a video it was shown, nor asked to use only what it shows.
SEEN = {
    "video": "about the video you were shown, using only what the video shows",
    "frame": "about a video, of which you were shown one frame, using only what that frame shows",
    "none": "about a video you cannot see, from the question alone",
}

_MC = (
    "Answer a multiple-choice question {seen}.\n\n"
    "Question: {question}\n\nOptions:\n{options}\n\n"
    "Reply with a single JSON object and nothing else, in the form "
    '{{"result": "<one option, copied exactly as written above>"}}.'
)

_OPEN = (
    "Answer a question {seen}.\n"
    "{hint}"
    "\nQuestion: {question}\n\n"
    'Reply with a single JSON object and nothing else, in the form {{"answer": "<your answer>"}}.'
)

_HINT = (
    "Be careful: the question may describe something that differs from what actually happens in the video. "
    "If it does, say what is wrong, state what really happens, and answer from the video rather than from "
    "the question's description. If the question matches the video, simply answer it.\n"
)


def build_prompt(question: Question, *, hint: str = DEFAULT_HINT, visual: str = "video") -> str:
    """The text sent for ``question``, with what the model sees (``visual``: :data:`SEEN`)."""
    if hint not in HINT_MODES:
        raise ValueError(f"hint must be one of {', '.join(HINT_MODES)}, got {hint!r}")
    if visual not in SEEN:
        raise ValueError(f"visual must be one of {', '.join(SEEN)}, got {visual!r}")
    if question.is_mc:
        return _MC.format(question=question.question.strip(), seen=SEEN[visual],
                          options="\n".join(f"- {o.strip()}" for o in question.options))
    return _OPEN.format(question=question.question.strip(), hint=_HINT if hint == "warn" else "", seen=SEEN[visual])


def open_answer(reply: str) -> str:
    """The answer text of an open-ended reply: its JSON object's ``answer`` (or ``result``, or
    ``open_ended_result``) string, stripped; "" for a JSON object without one (the field absent,
    empty or not text) and for an empty reply, which the suite records as no answer (never
    judged). A reply that is not a JSON object is the answer as text, stripped. The originals
    read a reply the same way (evaluate/open_source_mllms/eval_qwen_local.py at CFG-Bench/CFG-Bench
    b50bb6dbaa53f80444792e4c4924b4b48365b14d: ``parse_json_object`` takes a reply that is not a
    JSON object as ``{"result": <the reply>}``; ``write_evaluation`` keeps
    ``open_ended_result or result or ""``, and an empty result is not judged)."""
    obj = json_object(reply)
    if obj is not None:
        for key in ("answer", "result", "open_ended_result"):
            if isinstance(obj.get(key), str) and obj[key].strip():
                return obj[key].strip()
        return ""
    return (reply or "").strip()
