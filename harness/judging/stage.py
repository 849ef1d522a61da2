"""Judging as a stage of its own: score stored answers with a judge model.

``harness run`` stores the answers (a one-step episode's answer is ``record.extra["answer"]``
when the suite put it there, else the agent's last raw output in the ``transcripts`` table).
``harness judge OUT judge=NAME`` scores them later through the ``vlm`` planner's model
backends (``openai``: any OpenAI-compatible server such as vLLM; ``hf``: in process), with
the suite's rubric (``SuitePlugin.judge``: ``"module:attr"`` of ``factory(params) -> Rubric``).

- The judge's identity (its name, backend, model, the backend's own identity, sampling, the rubric's
  identity and version: :mod:`harness.judging.judges`) is hashed to ``judge_id``; each verdict is
  one row of the store's ``judgements`` table keyed by the answer's key and ``judge_id``, so one
  run carries any number of judges' scores and a second judge never touches the first one's rows.
- Each verdict is committed as it arrives: a judge killed mid-way (even SIGKILL) loses at
  most the calls in flight, and a rerun judges only the answers without a verdict from that
  judge (an ``error`` row, e.g. a server that went down, is tried again).
- A reply the rubric cannot read is stored with status ``unreadable`` and no values (never a
  silent 0) and counted on the console.
- :func:`harness.judging.agreement.agreement` compares judges run over the same answers
  (Spearman's rho per pair, Krippendorff's alpha, interval metric, over all of them), per judged
  value.

A judge with ``judge.backend=local`` has no judge model: the suite's rubric scores each answer
itself (:class:`harness.judging.verdicts.LocalScorer`, e.g. embedding similarity to the reference
with the model ``judge.model`` names); its values are stored, resumed and identified the same way.
A scorer that cannot load its model here raises :class:`harness.judging.verdicts.NotComputed`:
nothing is written and the end line says ``not computed: <reason>``.

Judge configs: ``configs/judge/NAME.yaml`` (or a path to a YAML file), overridden on the
command line with ``judge.KEY=VALUE`` (``judge.model=...``, ``judge.params.base_url=...``,
``judge.rubric.prompt_file=...``), read by :func:`harness.judging.judges.load_config`. See
docs/judging.md.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from harness.judging.judges import (
    JudgeConfig, JudgeError, build_backend, judge_id_of, judge_identity, load_config, local_identity, one_line,
)
from harness.judging.verdicts import ANSWER_KEY, LOCAL_BACKEND, Conversation, NotComputed, Verdict, finite_value
from harness.metric_declaration import applies_to
from harness.registry.catalog import SUITES
from harness.registry.loader import UnknownPluginError, load_target
from harness.scoring.policy import episode_values, suite_scoring
from harness.store import STORE_FILENAME, ResultStore, StoreError
from harness.types import EpisodeSpec
from harness.util.redact import redact_cut

#: Most characters of an error message kept in a judgement row.
_MAX_REASON_CHARS = 2000


# --- answers -----------------------------------------------------------------------------
@dataclass
class Answer:
    key: tuple[str, str, str, str, int]
    episode: EpisodeSpec
    text: str
    rubric: Any


def unanswered(error_kind: Any, extra: Any, values: Any, judged: Iterable[str]) -> bool:
    """Whether an episode has no answer to judge: it errored, its answer (``extra["answer"]``) is
    empty, or its env delivered None for one of the suite's ``judged`` values (the env's "no
    answer": an absent, empty or unreadable answer field, as procobject and cfg_bench deliver
    it). Such an answer counts as each judged metric's ``missing`` value (docs/judging.md);
    :func:`answers_to_judge` never sends one the env marked to a judge; tables (harness.judging.views)
    count it as missing."""
    if isinstance(error_kind, str) and error_kind != "":
        return True
    answer = extra.get("answer") if isinstance(extra, dict) else None
    if answer is not None and not str(answer).strip():
        return True
    return marked_unanswered(values, judged)


def marked_unanswered(values: Any, judged: Iterable[str]) -> bool:
    """Whether the env delivered None for one of the ``judged`` values (its "no answer")."""
    return isinstance(values, dict) and any(name in values and values[name] is None for name in judged)


#: The note (after a count) on the answers with nothing to judge; ``harness judge`` prints it.
NO_ANSWER_NOTE = ("answer(s) empty, absent or unreadable: nothing to judge (each counts as the judged metrics' "
                  "missing value, never filled by a judge)")


def answers_to_judge(store: Any, cfg: JudgeConfig) -> tuple[list[Answer], list[str]]:
    """Every stored answer a suite's rubric wants judged, and notes on what was skipped (first,
    the answers with nothing to judge: :func:`unanswered`)."""
    runs = store.runs()
    if runs.empty:
        raise JudgeError(f"{store.path.parent}: the store has no runs (nothing to judge)")
    records: dict[str, list[Any]] = {}  # typed records (no pandas: a NULL stays None, never a NaN that reads as true)
    for r in store.records():
        records.setdefault(r.run_id, []).append(r)
    last_output: dict[tuple, str] = {}
    for t in store.transcripts():
        if t.get("raw_output") is not None:
            last_output[tuple(t[k] for k in ANSWER_KEY)] = t["raw_output"]
    notes: list[str] = []
    out: list[Answer] = []
    no_answer = 0
    rubrics: dict[str, Any] = {}
    suites: dict[str, Any] = {}
    for run in runs.itertuples():
        try:
            plugin = SUITES.entry(run.suite)
        except UnknownPluginError:
            notes.append(f"suite {run.suite} is not installed: run {run.run_id} skipped")
            continue
        target = getattr(plugin, "judge", None)
        if not target:
            notes.append(f"suite {run.suite} declares no judge rubric: run {run.run_id} skipped")
            continue
        local = cfg.backend == LOCAL_BACKEND
        if run.suite not in rubrics:
            params = {**cfg.rubric, "model": cfg.model} if local else dict(cfg.rubric)
            try:
                rubrics[run.suite] = load_target(plugin, "suite", target)(params)
            except (ValueError, TypeError, OSError) as exc:
                if not local:
                    raise JudgeError(f"judge rubric of suite {run.suite}: {one_line(exc)}") from None
                rubrics[run.suite] = None  # this suite has no such local scorer
                notes.append(f"suite {run.suite} has no local scorer {cfg.name} ({one_line(exc)})")
        if rubrics[run.suite] is None or local != callable(getattr(rubrics[run.suite], "score", None)):
            if rubrics[run.suite] is not None:
                notes.append(f"suite {run.suite}'s rubric for judge {cfg.name} is not a "
                             + ("local scorer" if local else "judge-model rubric") + f": run {run.run_id} skipped")
            continue
        spec = json.loads(run.spec)
        key = json.dumps([run.suite, spec.get("suite_params", {})], sort_keys=True, default=str)
        try:
            if key not in suites:
                suites[key] = SUITES.load(run.suite)(**dict(spec.get("suite_params", {})))
            episodes = {(e.episode_id, e.seed): e for e in suites[key].episodes(run.split)}
        except (OSError, ValueError, TypeError, KeyError) as exc:  # its data not here, ...
            raise JudgeError(f"suite {run.suite}/{run.split}: cannot read its episodes: {one_line(exc)}") from None
        declared, derive = suite_scoring(run.suite)
        judged_metrics = [m for m in declared if m.judged]
        judged = {m.value for m in judged_metrics}
        for typed in records.get(run.run_id, []):
            if typed.error_kind is not None:  # an errored episode has no answer to judge
                continue
            rec = typed.to_dict()
            k = (typed.run_id, typed.suite, typed.split, typed.episode_id, int(typed.seed))
            episode = episodes.get((typed.episode_id, int(typed.seed)))
            if episode is None:
                continue
            text = (typed.extra or {}).get("answer")
            if text is None:
                text = last_output.get(k)
            if marked_unanswered(typed.values, judged):  # its env: no answer (absent, empty, unreadable)
                no_answer += 1
                continue
            if text is None or not rubrics[run.suite].needs(rec, episode):
                if unanswered(None, typed.extra, typed.values, judged):
                    values = episode_values(rec, derive)
                    no_answer += any(applies_to(m, values) for m in judged_metrics)
                continue
            out.append(Answer(k, episode, str(text), rubrics[run.suite]))
    if no_answer:
        notes.insert(0, f"{no_answer} {NO_ANSWER_NOTE}")
    return out, notes


# --- the stage ---------------------------------------------------------------------------
@dataclass
class Counts:
    judged: int = 0
    ok: int = 0
    unreadable: int = 0
    error: int = 0
    skipped: int = 0
    #: Why a local scorer computed nothing (its model could not be loaded), or None.
    not_computed: str | None = None


def _prompt_text(messages: Conversation) -> str:
    parts = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            parts.append(f"[{m['role']}] {content}")
        else:
            parts.append(f"[{m['role']}] " + " ".join(p.get("text", f"<{p.get('type')}>") for p in content))
    return "\n".join(parts)


def judge_store(out: str | Path, name: str, overrides: Sequence[str] = (), *,
                print_fn: Callable[[str], None] = print, progress_every_s: float = 10.0,
                counts: Counts | None = None, writer: str = "harness judge") -> Counts:
    """``harness judge OUT judge=NAME judge.K=V ...``: judge every unjudged answer in ``out``.
    ``counts``: filled as verdicts are committed (what a stop signal leaves saved); ``writer``:
    the command judging (``harness run`` with ``judge=``), named to another writer of ``out``."""
    cfg = load_config(name, overrides)
    path = Path(out)
    if not (path / STORE_FILENAME).is_file() and not (path.suffix == ".sqlite" and path.is_file()):
        raise JudgeError(f"no result store in {out} (run `harness run ... out={out}` first)")
    try:
        with ResultStore(out, readonly=True) as ro:
            answers, notes = answers_to_judge(ro, cfg)
    except StoreError as exc:
        raise JudgeError(str(exc)) from None
    if not answers:
        why = f" ({'; '.join(notes)})" if notes else ""
        raise JudgeError(f"{out}: no stored answers to judge{why}")
    if notes and notes[0].endswith(NO_ANSWER_NOTE):
        print_fn(f"judge {cfg.name}: {notes[0]}")
    rubric_ids = {id(a.rubric): a.rubric for a in answers}
    if cfg.backend == LOCAL_BACKEND:
        backend: Any = None
        identities = {}
        for rid, r in rubric_ids.items():
            try:
                folder = r.prepare()
            except NotComputed as exc:
                print_fn(f"judge {cfg.name}: not computed: {one_line(exc)}")
                return Counts(skipped=len(answers), not_computed=one_line(exc))
            identities[rid] = judge_identity(cfg, local_identity(cfg.model, folder), r)
    else:
        backend = build_backend(cfg)
        identities = {rid: judge_identity(cfg, backend.identity(), r) for rid, r in rubric_ids.items()}
    try:
        with ResultStore(out, writer=writer) as store:
            return _judge(store, cfg, backend, answers, identities, print_fn, progress_every_s, counts or Counts())
    except StoreError as exc:
        raise JudgeError(str(exc)) from None
    finally:
        # After a stop signal too: the openai backend's close() ends the calls in flight at once.
        close = getattr(backend, "close", None) if backend is not None else None
        if callable(close):
            close()


def _judge(store: Any, cfg: JudgeConfig, backend: Any, answers: list[Answer], identities: dict[int, dict],
           print_fn: Callable[[str], None], progress_every_s: float, counts: Counts) -> Counts:
    ids = {rid: judge_id_of(ident) for rid, ident in identities.items()}
    done: dict[str, set] = {jid: store.judged_keys(jid) for jid in set(ids.values())}
    todo = [a for a in answers if a.key not in done[ids[id(a.rubric)]]]
    counts.skipped = len(answers) - len(todo)
    label = f"judge {cfg.name} ({', '.join(sorted(set(ids.values())))})"
    print_fn(f"{label}: {len(todo)} answer(s) to judge, {counts.skipped} already judged")
    lock = threading.Lock()
    last = [time.monotonic()]

    def batch(answers: list[Answer]) -> list[dict[str, Any]]:
        """Judge ``answers`` with one backend call (one request on a server; one batched
        ``generate`` in process); a failed call is an ``error`` row for each of them."""
        if backend is None:  # a local scorer: the rubric scores the answers itself
            start = time.monotonic()
            try:
                verdicts: list[Any] = list(answers[0].rubric.score([(a.episode, a.text) for a in answers]))
                failure = None if len(verdicts) == len(answers) else f"scorer gave {len(verdicts)} verdicts"
            except Exception as exc:  # noqa: BLE001 - an error row each, scored again by a rerun
                verdicts, failure = [], _reason(exc)
            latency = round(time.monotonic() - start, 4)
            if failure is not None:
                verdicts = [None] * len(answers)
            return [row(a, [], None, failure, latency, len(answers), v) for a, v in zip(answers, verdicts)]
        conversations = [a.rubric.messages(a.episode, a.text) for a in answers]
        start = time.monotonic()
        try:
            replies: list[Any] = list(backend.generate(conversations))
            failure = None
        except Exception as exc:  # a server down, a timeout: error rows, judged again by a rerun
            replies, failure = [None] * len(answers), _reason(exc)
        latency = round(time.monotonic() - start, 4)
        return [row(a, m, r, failure, latency, len(answers)) for a, m, r in zip(answers, conversations, replies)]

    def row(answer: Answer, messages: Conversation, reply: Any, failure: str | None, latency: float,
            size: int, scored: Any = None) -> dict[str, Any]:
        rubric = answer.rubric
        meta: dict[str, Any] = {"latency_s": latency}
        if size > 1:
            meta["batch"] = size
        raw = None
        if failure is not None:
            verdict = Verdict({}, "error", failure)
        elif backend is None:
            verdict = scored if isinstance(scored, Verdict) else Verdict({}, "unreadable", "scorer gave no Verdict")
        else:
            raw = str(reply)
            meta.update(getattr(reply, "usage", {}) or {})
            if getattr(reply, "output_truncated", False):
                meta["output_truncated"] = True
            try:
                verdict = rubric.read(raw, answer.episode)
            except Exception as exc:  # a rubric must not raise; if it does, the reply is unreadable
                verdict = Verdict({}, "unreadable", f"rubric raised {type(exc).__name__}: {one_line(exc)}")
            if not isinstance(verdict, Verdict):
                verdict = Verdict({}, "unreadable", f"rubric returned {type(verdict).__name__}")
        values = {k: finite_value(v) for k, v in verdict.values.items()} if verdict.status == "ok" else {}
        return {
            **dict(zip(ANSWER_KEY, answer.key)), "judge_id": ids[id(rubric)], "judge": cfg.name,
            "identity": json.dumps(identities[id(rubric)], sort_keys=True, default=str), "status": verdict.status,
            "vals": json.dumps(values, sort_keys=True), "reason": verdict.reason, "raw_reply": raw,
            "prompt": _prompt_text(messages) if cfg.record_prompts else None,
            "meta": json.dumps(meta, sort_keys=True), "judged_at": time.time(),
        }

    def record(row: dict[str, Any]) -> None:
        with lock:
            store.add_judgement(row)
            counts.judged += 1
            setattr(counts, row["status"], getattr(counts, row["status"]) + 1)
            if time.monotonic() - last[0] >= progress_every_s:
                last[0] = time.monotonic()
                print_fn(f"{label}: {counts.judged}/{len(todo)} judged ({_counts_text(counts)})")

    workers = int(getattr(backend, "max_concurrency", 0) or 0)
    if backend is None:  # local scorers: batches of one rubric's answers, each committed as it returns
        for rubric in {id(a.rubric): a.rubric for a in todo}.values():
            mine = [a for a in todo if a.rubric is rubric]
            size = max(1, int(getattr(rubric, "batch_size", 32) or 32))
            for i in range(0, len(mine), size):
                for r in batch(mine[i:i + size]):
                    record(r)
    elif workers:  # a server (openai): K requests in flight, each verdict written as it arrives
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge")
        try:
            pending: set[Any] = set()
            for a in todo:
                pending.add(pool.submit(batch, [a]))
                if len(pending) >= workers:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for f in finished:
                        for r in f.result():
                            record(r)
            for f in pending:
                for r in f.result():
                    record(r)
        finally:  # a stop signal waits for no call in flight (the backend's close() ends them)
            pool.shutdown(wait=False, cancel_futures=True)
    else:  # in process (hf): batch_size answers per batched generate call, as for the planner
        size = max(1, int(getattr(backend, "batch_size", 1) or 1))
        for i in range(0, len(todo), size):
            for r in batch(todo[i:i + size]):
                record(r)
    print_fn(f"{label}: done, {counts.judged} judged now, {counts.skipped} already judged "
             f"({_counts_text(counts)})")
    return counts


def _reason(exc: BaseException) -> str:
    """An error verdict's reason: the exception's line, redacted first and then cut to
    :data:`_MAX_REASON_CHARS` (a key across the cut leaves no prefix: harness/util/redact.py)."""
    return redact_cut(f"{type(exc).__name__}: {one_line(exc)}", _MAX_REASON_CHARS)


def _counts_text(c: Counts) -> str:
    return f"ok {c.ok}, unreadable {c.unreadable}, error {c.error}"

