"""Judging as a stage of its own: score stored answers with a judge model.

``harness run`` stores the answers (a one-step episode's answer is ``record.extra["answer"]``
when the suite put it there, else the agent's last raw output in the ``transcripts`` table).
``harness judge OUT judge=NAME`` scores them later through the ``vlm`` planner's model
backends (``openai``: any OpenAI-compatible server such as vLLM; ``hf``: in process), with
the suite's rubric (``SuitePlugin.judge``: ``"module:attr"`` of ``factory(params) -> Rubric``).

- The judge's identity (its name, backend, model, the backend's own identity, sampling, the rubric's
  identity and version) is hashed to ``judge_id``; each verdict is one row of the store's
  ``judgements`` table keyed by the answer's key and ``judge_id``, so one run carries any
  number of judges' scores and a second judge never touches the first one's rows.
- Each verdict is committed as it arrives: a judge killed mid-way (even SIGKILL) loses at
  most the calls in flight, and a rerun judges only the answers without a verdict from that
  judge (an ``error`` row, e.g. a server that went down, is tried again).
- A reply the rubric cannot read is stored with status ``unreadable`` and no values (never a
  silent 0) and counted on the console.
- :func:`agreement` compares judges run over the same answers (Spearman's rho per pair,
  Krippendorff's alpha, interval metric, over all of them), per judged value.

A judge with ``judge.backend=local`` has no judge model: the suite's rubric scores each answer
itself (:class:`LocalScorer`, e.g. embedding similarity to the reference with the model
``judge.model`` names); its values are stored, resumed and identified the same way. A scorer
that cannot load its model here raises :class:`NotComputed`: nothing is written and the end line
says ``not computed: <reason>``.

Judge configs: ``configs/judge/NAME.yaml`` (or a path to a YAML file), overridden on the
command line with ``judge.KEY=VALUE`` (``judge.model=...``, ``judge.params.base_url=...``,
``judge.rubric.prompt_file=...``). See docs/judging.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from harness.types import EpisodeSpec

#: Bumped when the way judge prompts are sent or replies are stored changes.
JUDGE_PROTOCOL_VERSION = "1"
STATUSES = ("ok", "unreadable", "error")
_KEY = ("run_id", "suite", "split", "episode_id", "seed")
#: Most characters of an error message kept in a judgement row.
_MAX_REASON_CHARS = 2000

Conversation = list  # chat messages (harness.interfaces' convention: {"role", "content"})


@dataclass(frozen=True)
class Verdict:
    """A rubric's reading of one judge reply."""

    values: dict[str, float | None]
    status: str  # "ok" | "unreadable" | "error"
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verdict status must be one of {', '.join(STATUSES)}, got {self.status!r}")


class Rubric(Protocol):
    """How a suite's answers are judged (its prompts are the suite's own)."""

    version: str

    def identity(self) -> Mapping[str, Any]: ...

    def needs(self, record: Mapping[str, Any], episode: EpisodeSpec) -> bool: ...

    def messages(self, episode: EpisodeSpec, answer: str) -> Conversation: ...

    def read(self, text: str, episode: EpisodeSpec) -> Verdict: ...


#: ``judge.backend`` of a judge without a judge model: the rubric scores answers itself.
LOCAL_BACKEND = "local"


class LocalScorer(Protocol):
    """A rubric that scores answers itself (``judge.backend=local``); its factory gets the
    ``judge.rubric.*`` parameters and ``model`` (``judge.model``)."""

    version: str

    def identity(self) -> Mapping[str, Any]: ...

    def needs(self, record: Mapping[str, Any], episode: EpisodeSpec) -> bool: ...

    def prepare(self) -> str | None:
        """Load the scoring model; its local folder (hashed into the judge's identity), or None.
        Raises :class:`NotComputed` when it cannot be loaded here."""

    def score(self, items: Sequence[tuple[EpisodeSpec, str]]) -> list[Verdict]: ...


class NotComputed(RuntimeError):
    """A local scorer cannot run here (e.g. its model is neither cached nor downloadable)."""


class JudgeError(ValueError):
    """Bad judge input (one line for the CLI; exit 2, nothing written)."""


# --- judge configs ---------------------------------------------------------------------
@dataclass
class JudgeConfig:
    name: str
    backend: str
    model: str
    max_new_tokens: int = 512
    #: The backend's parameters (checked against its declaration, planners/plugin.py).
    params: dict[str, Any] = field(default_factory=dict)
    #: The rubric factory's parameters (e.g. ``prompt_file``: a user's copy of an original prompt).
    rubric: dict[str, Any] = field(default_factory=dict)
    #: Keep each judge prompt (text parts) in its row.
    record_prompts: bool = False


def judge_dir() -> Path:
    from harness.run.config import _config_dir

    return _config_dir() / "judge"


def known_judges() -> list[str]:
    d = judge_dir()
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def load_config(name: str, overrides: Sequence[str] = ()) -> JudgeConfig:
    """The judge config ``name`` (configs/judge/NAME.yaml or a YAML path) with ``judge.K=V`` overrides."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    path = Path(name)
    if not (name.endswith((".yaml", ".yml")) and path.is_file()):
        path = judge_dir() / f"{name}.yaml"
        if not path.is_file():
            import difflib

            known = known_judges()
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise JudgeError(f"unknown judge {name!r}{hint} (known: {', '.join(known) or 'none'}; "
                             "or a path to a judge .yaml)")
    try:
        base = OmegaConf.load(path)
        dotlist = []
        for o in overrides:
            key, sep, value = o.partition("=")
            if not sep or not key.startswith("judge."):
                raise JudgeError(f"bad judge override {o!r} (expected judge.KEY=VALUE)")
            dotlist.append(f"{key[len('judge.'):]}={value}")
        merged = OmegaConf.to_container(OmegaConf.merge(base, OmegaConf.from_dotlist(dotlist)), resolve=True)
    except OmegaConfBaseException as exc:
        raise JudgeError(f"judge {name}: {str(exc).splitlines()[0]}") from None
    assert isinstance(merged, dict)
    if not merged.get("name"):  # the judge's name (part of its identity): the model's unless set
        merged["name"] = str(merged.get("model") or path.stem)
    allowed = {f for f in JudgeConfig.__dataclass_fields__}
    unknown = sorted(set(merged) - allowed)
    if unknown:
        raise JudgeError(f"judge {name}: unknown key judge.{unknown[0]} (keys: {', '.join(sorted(allowed))})")
    missing = _backend_not_installed(merged.get("backend"), name)
    if missing:  # the extra to install first, before asking for a model it could not load
        raise JudgeError(missing)
    for key in ("backend", "model"):
        if not merged.get(key):
            raise JudgeError(f"judge {name}: judge.{key} is required (e.g. judge.{key}=...)")
    for key in ("params", "rubric"):
        merged[key] = dict(merged.get(key) or {})
    try:
        merged["max_new_tokens"] = int(merged.get("max_new_tokens", 512))
    except (TypeError, ValueError):
        raise JudgeError(f"judge {name}: judge.max_new_tokens must be a whole number") from None
    return JudgeConfig(**merged)


def _backend_not_installed(backend: Any, name: str) -> str | None:
    """One line naming the extra when the judge's model backend's packages are not installed."""
    from harness.registry.catalog import BACKENDS
    from harness.registry.extras import not_installed

    if not backend or backend == LOCAL_BACKEND or str(backend) not in BACKENDS.names():
        return None
    return not_installed(BACKENDS.entry(str(backend)), f"judge {name} (backend {backend})")


def split_judge_overrides(overrides: Sequence[str]) -> tuple[str | None, list[str], list[str]]:
    """``(judge name, judge.* overrides, the rest)`` of a command line (``harness run ... judge=NAME``)."""
    name, mine, rest = None, [], []
    for o in overrides:
        if o.startswith("judge="):
            name = o.partition("=")[2]
        elif o.startswith("judge."):
            mine.append(o)
        else:
            rest.append(o)
    return name, mine, rest


# --- identity ----------------------------------------------------------------------------
def judge_identity(cfg: JudgeConfig, backend_identity: Mapping[str, Any], rubric: Any) -> dict[str, Any]:
    out = {
        # The judge's name is part of its identity: verdicts stored under one name are never
        # reused (or reported) under another, even when everything else is the same.
        "name": cfg.name,
        "backend": cfg.backend, "model": cfg.model, "backend_identity": dict(backend_identity),
        "sampling": {"decoding": "greedy", "temperature": 0.0, "max_new_tokens": cfg.max_new_tokens},
        "rubric": dict(rubric.identity()), "rubric_version": str(rubric.version),
        "protocol": JUDGE_PROTOCOL_VERSION,
    }
    if cfg.rubric:  # the user's rubric parameters (a prompt file: its text's hash), whatever the suite
        out["rubric_params"] = {k: _file_or_value(v) for k, v in sorted(cfg.rubric.items())}
    return out


def _file_or_value(value: Any) -> Any:
    """A rubric parameter as it enters the identity: an existing file's content hash, else itself."""
    if isinstance(value, str) and value and Path(value).expanduser().is_file():
        return "sha256:" + hashlib.sha256(Path(value).expanduser().read_bytes()).hexdigest()
    return value


def judge_id_of(identity: Mapping[str, Any]) -> str:
    """A short hash of a judge identity (its name included: a renamed judge is another judge)."""
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


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
    from harness.registry.catalog import SUITES
    from harness.metric_declaration import applies_to
    from harness.registry.loader import UnknownPluginError, load_target
    from harness.scoring.policy import episode_values, suite_scoring

    runs = store.runs()
    if runs.empty:
        raise JudgeError(f"{store.path.parent}: the store has no runs (nothing to judge)")
    records: dict[str, list[Any]] = {}  # typed records (no pandas: a NULL stays None, never a NaN that reads as true)
    for r in store.records():
        records.setdefault(r.run_id, []).append(r)
    last_output: dict[tuple, str] = {}
    for t in store.transcripts():
        if t.get("raw_output") is not None:
            last_output[tuple(t[k] for k in _KEY)] = t["raw_output"]
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
                    raise JudgeError(f"judge rubric of suite {run.suite}: {_one_line(exc)}") from None
                rubrics[run.suite] = None  # this suite has no such local scorer
                notes.append(f"suite {run.suite} has no local scorer {cfg.name} ({_one_line(exc)})")
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
            raise JudgeError(f"suite {run.suite}/{run.split}: cannot read its episodes: {_one_line(exc)}") from None
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


def build_backend(cfg: JudgeConfig) -> Any:
    from harness.registry.catalog import BACKENDS
    from harness.params import ParamError, parse
    from harness.registry.loader import UnknownPluginError, load_target

    try:
        plugin = BACKENDS.entry(cfg.backend)
    except UnknownPluginError as exc:
        raise JudgeError(f"judge {cfg.name}: {exc.args[0]}") from None
    try:
        params = parse(plugin.params, cfg.params) if plugin.params is not None else None
    except ParamError as exc:
        raise JudgeError(f"judge {cfg.name}: judge.params: {_one_line(exc)}") from None
    if cfg.backend == "openai":
        _check_reachable(cfg.name, params.base_url)
    return load_target(plugin, "model backend")(cfg.model, params, max_new_tokens=cfg.max_new_tokens,
                                                json_schema=False, hash_weights=False)


def _local_identity(model: str, folder: str | None) -> dict[str, Any]:
    """A local scorer's model: the checkpoint identity of the folder it loaded (configs,
    tokenizer, weight headers and samples), or its name where no folder is known."""
    if folder is None:
        return {"local": True, "model": model}
    from harness.util.checkpoint_identity import checkpoint_identity

    return {"local": True, "model": model, "checkpoint": checkpoint_identity(folder)}


def _check_reachable(name: str, base_url: str, timeout_s: float = 3.0) -> None:
    import socket
    import urllib.parse

    u = urllib.parse.urlsplit(base_url)
    port = u.port or (443 if u.scheme == "https" else 80)
    try:
        socket.create_connection((u.hostname or "", port), timeout=timeout_s).close()
    except OSError as exc:
        raise JudgeError(f"judge {name}: the judge server {base_url} is unreachable "
                         f"({exc.strerror or exc}); start it or set judge.params.base_url") from None


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
    from harness.store import STORE_FILENAME, ResultStore, StoreError

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
                print_fn(f"judge {cfg.name}: not computed: {_one_line(exc)}")
                return Counts(skipped=len(answers), not_computed=_one_line(exc))
            identities[rid] = judge_identity(cfg, _local_identity(cfg.model, folder), r)
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
                verdict = Verdict({}, "unreadable", f"rubric raised {type(exc).__name__}: {_one_line(exc)}")
            if not isinstance(verdict, Verdict):
                verdict = Verdict({}, "unreadable", f"rubric returned {type(verdict).__name__}")
        values = {k: _number(v) for k, v in verdict.values.items()} if verdict.status == "ok" else {}
        return {
            **dict(zip(_KEY, answer.key)), "judge_id": ids[id(rubric)], "judge": cfg.name,
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
    from harness.util.redact import redact_cut

    return redact_cut(f"{type(exc).__name__}: {_one_line(exc)}", _MAX_REASON_CHARS)


def _counts_text(c: Counts) -> str:
    return f"ok {c.ok}, unreadable {c.unreadable}, error {c.error}"


def _number(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None if v is None else float(v)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


# --- agreement ---------------------------------------------------------------------------
def _ranks(xs: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman_rho(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation: Pearson's r of the (tie-averaged) ranks; None when
    undefined (fewer than 2 pairs, or a constant side)."""
    if len(a) != len(b) or len(a) < 2:
        return None
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return None
    return cov / math.sqrt(va * vb)


def krippendorff_alpha_interval(units: Iterable[Sequence[float | None]]) -> float | None:
    """Krippendorff's alpha with the interval metric, ``1 - D_o / D_e``.

    ``units``: per judged answer, the values the judges gave (None: missing). Only units
    with two or more values are pairable. With ``n`` the pairable values, ``m_u`` those of
    unit u: ``D_o = (1/n) sum_u 1/(m_u - 1) sum_{i != j in u} (v_i - v_j)^2`` and
    ``D_e = 1/(n(n-1)) sum_{i != j over all pairable values} (v_i - v_j)^2`` (Krippendorff,
    "Computing Krippendorff's Alpha-Reliability", 2011, the coincidence-matrix form with
    delta^2 = (c - k)^2). None when undefined (fewer than 2 pairable values, or no spread).
    """
    pairable = [[float(v) for v in u if v is not None] for u in units]
    pairable = [u for u in pairable if len(u) >= 2]
    values = [v for u in pairable for v in u]
    n = len(values)
    if n < 2:
        return None
    d_o = sum(sum((x - y) ** 2 for x in u for y in u) / (len(u) - 1) for u in pairable) / n
    s, s2 = sum(values), sum(v * v for v in values)
    d_e = 2 * (n * s2 - s * s) / (n * (n - 1))  # sum over ordered pairs i != j of (v_i - v_j)^2, over n(n-1)
    if d_e <= 0:
        return None
    return 1.0 - d_o / d_e


def agreement(frame: Any) -> dict[str, Any]:
    """Agreement between the judges of a ``ResultStore.judgements()`` frame, per judged value.

    ``{value: {"judges": [ids], "answers": n, "alpha": float | None,
    "pairs": [{"a": id, "b": id, "n": n, "rho": float | None}]}}``, only for values that two or
    more judges gave; only ``ok`` verdicts count (an unreadable one is a missing value). A frame
    of several suites keys each value by its suite (``SUITE:VALUE``): never pooled across suites.
    """
    if frame is None or len(frame) == 0:
        return {}
    scores: dict[str, dict[str, dict[tuple, float]]] = {}  # value -> judge -> answer key -> x
    several = frame["suite"].nunique() > 1  # one suite's value never pools with another's
    for row in frame.to_dict("records"):
        if row["status"] != "ok":
            continue
        key = tuple(row[k] for k in _KEY)
        for name, x in (row["values"] or {}).items():
            x = _number(x)
            if x is not None:
                shown = f"{row['suite']}:{name}" if several else name
                scores.setdefault(shown, {}).setdefault(row["judge_id"], {})[key] = x
    out: dict[str, Any] = {}
    for name in sorted(scores):
        judges = sorted(scores[name])
        if len(judges) < 2:
            continue
        keys = sorted({k for j in judges for k in scores[name][j]})
        units = [[scores[name][j].get(k) for j in judges] for k in keys]
        pairs = []
        for i, a in enumerate(judges):
            for b in judges[i + 1:]:
                both = [k for k in keys if k in scores[name][a] and k in scores[name][b]]
                pairs.append({"a": a, "b": b, "n": len(both),
                              "rho": spearman_rho([scores[name][a][k] for k in both],
                                                  [scores[name][b][k] for k in both])})
        out[name] = {"judges": judges, "answers": sum(1 for u in units if sum(v is not None for v in u) >= 2),
                     "alpha": krippendorff_alpha_interval(units), "pairs": pairs}
    return out
