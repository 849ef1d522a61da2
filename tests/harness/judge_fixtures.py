"""A tiny one-step QA suite with a judge rubric, its answering agent, a loopback judge
server and a ``harness`` CLI that knows them (for tests/harness/judging/test_judging.py).

- ``python -m tests.harness.judge_fixtures cli ARGS...``: the real ``harness`` CLI with the
  suite ``qa_judge_test`` (split ``test``) and its agent ``answerer`` registered.
- ``python -m tests.harness.judge_fixtures serve PORT LOG DELAY_S``: an OpenAI-compatible
  chat-completions server on 127.0.0.1:PORT whose replies are scripted from the prompt
  (model ``judge-a``: ``SCORE: len(answer) % 11``; ``judge-b``: ``SCORE: (2 * len(answer)) % 11``;
  an answer containing ``garble`` gets an unreadable reply). Every request is appended to LOG
  as ``model<TAB>answer`` once its reply is sent; each reply waits DELAY_S seconds first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.interfaces import AgentReply
from harness.judging.verdicts import Verdict
from harness.params import param, parse
from harness.plugins import AgentPlugin, SuitePlugin
from harness.scoring.policy import Metric
from harness.types import (
    INFO_ACTION_OK, INFO_ANSWER, INFO_EXPERT_LENGTH, INFO_FEEDBACK, INFO_GC_SATISFIED, INFO_GC_TOTAL,
    INFO_INVALID_ACTIONS, INFO_SUCCESS, INFO_TASK_TYPE, INFO_TERMINATION, INFO_VALUES, EpisodeSpec,
)
from tests.helpers import send_json

SUITE_NAME = "qa_judge_test"


@dataclass
class QAParams:
    questions: int = param(6, ge=1, le=1000, results=False, help="questions in the split")


def answer_of(i: int) -> str:
    """The answerer's answer to question i: right for i % 3 != 0; question 4 gets a garbled one."""
    if i == 4:
        return "garble garble"
    return str(2 + i) if i % 3 else f"wrong answer {'x' * i}"


class QASuite:
    name = SUITE_NAME
    version = "1"
    action_kind = "text"

    def __init__(self, **values: Any) -> None:
        self.params = parse(QAParams, values)

    def splits(self) -> Sequence[str]:
        return ("test",)

    def protocol(self, split: str) -> Mapping[str, Any]:
        return {"steps": 1}

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        return [EpisodeSpec(suite=self.name, split=split, episode_id=f"{split}/{i:03d}", seed=i,
                            instruction=f"What is 2 + {i}?", metadata={"expected": str(2 + i), "task_type": "sum"})
                for i in range(self.params.questions)]

    def make_env(self) -> "QAEnv":
        return QAEnv()


class QAEnv:
    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        self.episode = (options or {})["episode"]
        return {"text": self.episode.instruction}, self._info(False, None)

    def step(self, action: Any):
        ok = str(action).strip() == self.episode.metadata["expected"]
        return {"text": ""}, float(ok), True, False, self._info(ok, "answered")

    def _info(self, success: bool, termination: str | None) -> dict[str, Any]:
        return {INFO_SUCCESS: success, INFO_GC_SATISFIED: int(success), INFO_GC_TOTAL: 1, INFO_INVALID_ACTIONS: 0,
                INFO_EXPERT_LENGTH: 1, INFO_TASK_TYPE: "sum", INFO_ACTION_OK: True, INFO_FEEDBACK: "",
                INFO_TERMINATION: termination}

    def close(self) -> None:
        pass


class Answerer:
    name = "answerer"
    privileged = False
    reads_images = False
    action_kinds = frozenset({"text"})

    def __init__(self, **values: Any) -> None:
        self.calls = 0

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[Any]) -> list[AgentReply]:
        self.calls += len(requests)
        out = []
        for r in requests:
            text = answer_of(int(r.episode.seed))
            out.append(AgentReply(actions=[text], raw_output=text))
        return out


#: The rubric's own prompt (written for this test suite).
DEFAULT_TEMPLATE = ("Rate the answer to the question from 0 to 10 and reply with one line 'SCORE: N'.\n"
                    "QUESTION: {question}\nANSWER: {answer}")
_SCORE = re.compile(r"SCORE:\s*(\d+(?:\.\d+)?)")


class QARubric:
    version = "1"

    def __init__(self, template: str) -> None:
        self.template = template

    def identity(self) -> Mapping[str, Any]:
        return {"name": "qa-test", "prompt_sha256": hashlib.sha256(self.template.encode()).hexdigest()[:16]}

    def needs(self, record: Mapping[str, Any], episode: EpisodeSpec) -> bool:
        return True

    def messages(self, episode: EpisodeSpec, answer: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": self.template.format(question=episode.instruction, answer=answer)}]

    def read(self, text: str, episode: EpisodeSpec) -> Verdict:
        m = _SCORE.search(text)
        if m is None or not 0 <= float(m.group(1)) <= 10:
            return Verdict({}, "unreadable", "no 'SCORE: N' with N in 0..10")
        return Verdict({"judge_score": float(m.group(1))}, "ok")


def qa_rubric(params: Mapping[str, Any]) -> QARubric:
    unknown = set(params) - {"prompt_file"}
    if unknown:
        raise ValueError(f"unknown rubric parameter {sorted(unknown)[0]!r} (known: prompt_file)")
    path = params.get("prompt_file")
    return QARubric(Path(path).read_text(encoding="utf-8") if path else DEFAULT_TEMPLATE)


def qa_values(record: Mapping[str, Any]) -> dict[str, Any]:
    return {"correct": int(bool(record.get("success")))}


SUITE = SuitePlugin(name=SUITE_NAME, target="tests.harness.judge_fixtures:QASuite", params=QAParams,
                    default_split="test", judge="tests.harness.judge_fixtures:qa_rubric", summary="test QA suite",
                    values="tests.harness.judge_fixtures:qa_values",
                    metrics=(Metric("accuracy", "Acc", "correct", binary=True, default=True),
                             Metric("judge_score", "Judge", "judge_score", range=(0.0, 10.0), unit="score",
                                    judged=True, default=True)))
AGENT = AgentPlugin(name="answerer", suite=SUITE_NAME, target="tests.harness.judge_fixtures:Answerer",
                    summary="test QA answerer")


#: A second suite whose env stores its values (``info["values"]``) and its answer text, judged
#: by a rubric that skips empty answers (as a suite's rubric does where an empty answer has
#: nothing to judge), and an agent that errs or answers nothing on some questions: the error
#: policy's test bed (tests/harness/scoring/test_error_policy.py).
STORED_SUITE_NAME = "qa_stored_test"


def crasher_answer(i: int) -> str | None:
    """The crasher's answer to question i: an agent error (None) for even i, an empty answer
    for i = 1, else the right one."""
    return None if i % 2 == 0 else "" if i == 1 else str(2 + i)


class StoredQASuite(QASuite):
    name = STORED_SUITE_NAME

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        return [EpisodeSpec(suite=self.name, split=split, episode_id=e.episode_id, seed=e.seed,
                            instruction=e.instruction, metadata=e.metadata) for e in super().episodes(split)]

    def make_env(self) -> "StoredQAEnv":
        return StoredQAEnv()


class StoredQAEnv(QAEnv):
    def step(self, action: Any):
        obs, reward, terminated, truncated, info = super().step(action)
        info[INFO_VALUES] = {"exact": int(bool(info[INFO_SUCCESS]))}
        info[INFO_ANSWER] = str(action)
        return obs, reward, terminated, truncated, info


class Crasher(Answerer):
    name = "crasher"

    def act(self, requests: Sequence[Any]) -> list[AgentReply]:
        out = []
        for r in requests:
            text = crasher_answer(int(r.episode.seed))
            if text is None:
                raise RuntimeError(f"the model server timed out on question {r.episode.seed}")
            out.append(AgentReply(actions=[text], raw_output=text))
        return out


class SkipEmptyRubric(QARubric):
    def needs(self, record: Mapping[str, Any], episode: EpisodeSpec) -> bool:
        return bool(str((record.get("extra") or {}).get("answer") or "").strip())


def skip_empty_rubric(params: Mapping[str, Any]) -> QARubric:
    rubric = qa_rubric(params)
    return SkipEmptyRubric(rubric.template)


STORED_SUITE = SuitePlugin(
    name=STORED_SUITE_NAME, target="tests.harness.judge_fixtures:StoredQASuite", params=QAParams,
    default_split="test", judge="tests.harness.judge_fixtures:skip_empty_rubric", summary="test QA suite (stored values)",
    metrics=(Metric("exact", "Exact", "exact", binary=True, default=True),
             Metric("judge_score", "Judge", "judge_score", range=(0.0, 10.0), unit="score", judged=True, default=True)))
CRASHER = AgentPlugin(name="crasher", suite=STORED_SUITE_NAME, target="tests.harness.judge_fixtures:Crasher",
                      summary="test QA agent that errs on even questions")


@contextlib.contextmanager
def registered_only_here():
    """The test suite and agent registered for the duration only (registries and Hydra's store
    restored after; the scoring memo is keyed by the declarations, so it needs no restoring)."""
    from harness.registry.catalog import PLANNERS, SUITES

    saved = {reg: (reg.names(), dict(reg._entries))[1] for reg in (SUITES, PLANNERS)}  # filled first
    try:
        yield
    finally:
        for reg, entries in saved.items():
            reg._entries = entries
        try:
            from hydra.core.config_store import ConfigStore

            repo = ConfigStore.instance().repo
            repo.get("suite", {}).pop(f"{SUITE_NAME}.yaml", None)
            repo.get("suite", {}).pop(f"{STORED_SUITE_NAME}.yaml", None)
            repo.get("planner", {}).pop("answerer.yaml", None)
            repo.get("planner", {}).pop("crasher.yaml", None)
        except ImportError:
            pass


def register() -> None:
    from harness.registry.catalog import PLANNERS, SUITES

    if SUITE_NAME not in SUITES:
        SUITES.add(SUITE)
        PLANNERS.add(AGENT)
    if STORED_SUITE_NAME not in SUITES:
        SUITES.add(STORED_SUITE)
        PLANNERS.add(CRASHER)


# --- the judge server ----------------------------------------------------------------
def cli(*args: str) -> int:
    """The real ``harness`` CLI in this process, with the test suites and agents registered."""
    register()
    from harness.cli.entry import main

    return main(list(args))


@contextlib.contextmanager
def judge_url(log: Path, delay_s: float = 0.0):
    """A loopback judge server (:func:`serve`) on a free port for the duration: its base URL."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = serve(port, log, delay_s)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.shutdown()
        server.server_close()


def judge_reply(model: str, answer: str) -> str:
    if "garble" in answer:
        return "I cannot decide."
    score = len(answer) % 11 if model == "judge-a" else (2 * len(answer)) % 11
    return f"Reasoning done.\nSCORE: {score}"


def serve(port: int, log: Path, delay_s: float) -> ThreadingHTTPServer:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": "judge-a"}, {"id": "judge-b"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            text = body["messages"][-1]["content"]
            if isinstance(text, list):
                text = " ".join(p.get("text", "") for p in text)
            answer = text.rpartition("ANSWER: ")[2]
            time.sleep(delay_s)
            reply = judge_reply(body["model"], answer)
            self._send({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": reply}}],
                        "usage": {"prompt_tokens": len(text.split()), "completion_tokens": len(reply.split()),
                                  "total_tokens": 0}})
            with lock, open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{body['model']}\t{answer}\n")

        def _send(self, obj: Any) -> None:
            send_json(self, obj)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: list[str]) -> int:
    if argv[0] == "serve":
        serve(int(argv[1]), Path(argv[2]), float(argv[3]))
        while True:
            time.sleep(3600)
    register()
    from harness.cli.entry import main as harness_main

    return harness_main(argv[1:], process=True)  # the whole process, as the `harness` script


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
