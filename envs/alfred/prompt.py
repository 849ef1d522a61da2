"""FLARE-style triplet planning for the ALFRED suite: prompt, parser, example retrieval,
grounded replanning; the vlm planner's adapter for this suite (:func:`make_adapter`; settings:
``AlfredPromptParams`` in envs/alfred/plugin.py), and a planner that drives a text-generation
backend with it (:class:`AlfredTripletPlanner`).

Facts carried over from FLARE (snumprlab/flare): the
planner writes a flat list of ``(action, object, receptacle-or-0)`` triplets;
in-context examples (9 by default, from a training pool) are retrieved by
instruction similarity; decoding is greedy; when an object cannot be found the
plan is grounded again by substituting the most similar visible object class.
Everything written here (prompt wording, the retrieval measure, the
substitution measure) is this harness's own:

- retrieval uses TF-IDF cosine similarity over instruction words (FLARE uses
  a sentence-embedding model; no model download is needed here), ties broken by
  pool order; ``retrieval="fixed"`` takes the first k examples instead;
- grounded replanning matches class names with :class:`difflib.SequenceMatcher`
  over the split CamelCase words, among the classes the observation lists.

The backend is anything with ``generate(conversations) -> list[str]`` and
``identity()`` (the ``hf`` / ``openai`` backends of ``planners/vlm``).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from envs.alfred.language import NO_RECEPTACLE, TRIPLET_ACTIONS, Triplet, expand, expand_all
from envs.alfred.plugin import DEFAULT_K, AlfredPromptParams
from harness.interfaces import AgentReply, AgentRequest, Conversation, ModelFacts
from harness.promptkit.prompting import max_output_chars, serve
from harness.types import EpisodeSpec
from harness.promptkit.episode_cache import EpisodeCache

PROMPT_VERSION = "alfred-triplets-1"
#: Bump when parse_triplets / grounding verdicts change. 2: output capped, names past 64 characters unusable.
PARSER_VERSION = "2"
#: EmbodiedBench planner/remote_model.py: 2048 new tokens at most; the reply-length bound of
#: :func:`parse_triplets` when the caller gives none.
DEFAULT_MAX_CHARS = max_output_chars(2048)


@dataclass(frozen=True)
class Example:
    """One in-context example: an instruction and its triplet plan."""

    instruction: str
    triplets: tuple[Triplet, ...]


# --- parsing ----------------------------------------------------------------------
_TRIPLET = re.compile(
    r"[\(\[]\s*['\"]?([A-Za-z]+)['\"]?\s*,\s*['\"]?([A-Za-z]+)['\"]?\s*,\s*['\"]?([A-Za-z]+|0|None|none|)['\"]?\s*[\)\]]")
_CANON = {a.casefold(): a for a in TRIPLET_ACTIONS}


@dataclass(frozen=True)
class Parsed:
    triplets: tuple[Triplet, ...]
    error: str | None = None


#: Longer than any ALFRED object or receptacle class (the longest are ~15 characters): a name
#: past this is unusable, and grounding never compares it (difflib is quadratic in length).
MAX_NAME_CHARS = 64


def parse_triplets(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> Parsed:
    """The triplets in model output ``text``, in order.

    Accepts ``(PickupObject, Apple, CounterTop)`` and list / quoted forms
    (``["HeatObject", "Apple", "0"]``); a receptacle of ``0``, ``None`` or empty
    means none. A triplet whose action is not one of :data:`TRIPLET_ACTIONS`, or a
    PutObject without a receptacle, makes the whole output unusable (error set,
    no triplets), as does output with no triplet at all.
    """
    if not isinstance(text, str):
        return Parsed((), "output is not text")
    if len(text) > max_chars:
        return Parsed((), f"output of {len(text)} characters is longer than the {max_chars} that "
                          "max_new_tokens allow")
    found = _TRIPLET.findall(text)
    if not found:
        return Parsed((), "no (action, object, receptacle) triplet in the output")
    out: list[Triplet] = []
    for action, obj, recep in found:
        canon = _CANON.get(action.casefold())
        if canon is None:
            return Parsed((), f"unknown action {action!r} (allowed: {', '.join(TRIPLET_ACTIONS)})")
        if len(obj) > MAX_NAME_CHARS or len(recep) > MAX_NAME_CHARS:
            return Parsed((), f"a name longer than {MAX_NAME_CHARS} characters is no ALFRED class")
        recep = NO_RECEPTACLE if recep in ("", "0", "None", "none") else recep
        if canon == "PutObject" and recep == NO_RECEPTACLE:
            return Parsed((), f"({action}, {obj}, 0): PutObject needs a receptacle")
        out.append(Triplet(canon, obj, recep))
    return Parsed(tuple(out))


def format_triplets(triplets: Iterable[Triplet]) -> str:
    return ", ".join(t.text for t in triplets)


# --- example pool -------------------------------------------------------------------
def load_examples(path: str | Path) -> list[Example]:
    """A user's training pool: a JSON list of ``{"instruction": str, "triplets": [[a, o, r], ...]}``,
    or a folder of ALFRED trajectories (``**/traj_data.json`` / ``**/pp/ann_*.json``) whose
    expert plans are converted with :func:`triplets_from_trajectory`."""
    p = Path(path)
    if p.is_dir():
        out = []
        for f in sorted([*p.glob("**/traj_data.json"), *p.glob("**/pp/ann_*.json")]):
            traj = json.loads(f.read_text(encoding="utf-8"))
            anns = traj.get("turk_annotations", {}).get("anns", [])
            triplets = triplets_from_trajectory(traj)
            if anns and triplets:
                out.append(Example(str(anns[0]["task_desc"]).strip(), tuple(triplets)))
        return out
    raw = json.loads(p.read_text(encoding="utf-8"))
    return [Example(str(e["instruction"]), tuple(Triplet(*t) for t in e["triplets"])) for e in raw]


def _type_names() -> dict[str, str]:
    from envs.household import alfred_constants

    c = alfred_constants()
    names = {n.lower(): n for n in (*c.objects, *c.receptacles)}
    for base in ("Apple", "Bread", "Lettuce", "Potato", "Tomato"):
        names[(base + "Sliced").lower()] = base + "Sliced"
    return names


def triplets_from_trajectory(traj: Mapping[str, Any]) -> list[Triplet]:
    """FLARE triplets from an ALFRED expert plan (``plan.high_pddl``): GotoLocation is
    dropped (FLARE's planner does not navigate); a Pickup names the receptacle the
    planner recorded; an object picked after slicing is the ``<Type>Sliced`` piece."""
    names = _type_names()
    out: list[Triplet] = []
    sliced: set[str] = set()
    for step in traj["plan"]["high_pddl"]:
        d = step.get("discrete_action", {})
        pa = step.get("planner_action", {})
        a, args = d.get("action"), [names.get(str(x).lower(), str(x)) for x in d.get("args", [])]
        if a in ("GotoLocation", "NoOp", None) or not args or not args[0]:
            continue
        obj = args[0] + "Sliced" if args[0] in sliced else args[0]
        if a == "PickupObject":
            rec = pa.get("coordinateReceptacleObjectId")
            out.append(Triplet(a, obj, names.get(str(rec[0]).lower(), rec[0]) if rec else NO_RECEPTACLE))
        elif a == "PutObject":
            out.append(Triplet(a, obj, args[1] if len(args) > 1 else NO_RECEPTACLE))
        elif a == "SliceObject":
            sliced.add(args[0])
            out.append(Triplet(a, args[0]))
        elif a in ("HeatObject", "CoolObject", "CleanObject", "ToggleObject"):
            out.append(Triplet(a, obj))
    return out


# --- retrieval ------------------------------------------------------------------------
_WORD = re.compile(r"[a-z]+")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class Retriever:
    """k most similar pool examples by TF-IDF cosine over instruction words."""

    def __init__(self, pool: Sequence[Example]) -> None:
        self.pool = list(pool)
        docs = [Counter(_tokens(e.instruction)) for e in self.pool]
        n = len(docs)
        df = Counter(w for d in docs for w in d)
        self.idf = {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}
        self.vecs = [self._vec(d) for d in docs]

    def _vec(self, counts: Counter) -> dict[str, float]:
        v = {w: c * self.idf.get(w, math.log(1 + len(self.pool)) + 1.0) for w, c in counts.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {w: x / norm for w, x in v.items()}

    def top(self, instruction: str, k: int) -> list[Example]:
        q = self._vec(Counter(_tokens(instruction)))
        scores = [sum(q.get(w, 0.0) * x for w, x in v.items()) for v in self.vecs]
        order = sorted(range(len(self.pool)), key=lambda i: (-scores[i], i))
        return [self.pool[i] for i in order[:k]]


# --- prompt -----------------------------------------------------------------------------
_HEADER = (
    "You control a household robot. Break the task into subgoals, each a triplet "
    "(action, object, receptacle). Actions: {actions}. Use 0 as the receptacle when the "
    "action needs none; PickupObject names where the object lies, PutObject where it goes. "
    "Do not plan navigation: the robot walks to each object by itself. Heating, cooling and "
    "cleaning use the microwave, the fridge and the sink on their own."
)


@dataclass
class PromptOptions:
    k: int = DEFAULT_K
    retrieval: str = "tfidf"  # or "fixed"
    list_objects: bool = True


class TripletPromptBuilder:
    """Builds the planner prompt: instructions, retrieved examples, visible classes, the task."""

    def __init__(self, pool: Sequence[Example] = (), options: PromptOptions | None = None) -> None:
        self.options = options or PromptOptions()
        if self.options.retrieval not in ("tfidf", "fixed"):
            raise ValueError(f"retrieval must be 'tfidf' or 'fixed', got {self.options.retrieval!r}")
        self.pool = list(pool)
        self.retriever = Retriever(self.pool) if self.pool else None

    def identity(self) -> dict[str, Any]:
        digest = json.dumps([[e.instruction, [t.text for t in e.triplets]] for e in self.pool])
        import hashlib

        return {"prompt_version": PROMPT_VERSION, "k": self.options.k, "retrieval": self.options.retrieval,
                "list_objects": self.options.list_objects,
                "pool_sha256": hashlib.sha256(digest.encode()).hexdigest() if self.pool else None}

    def examples_for(self, instruction: str) -> list[Example]:
        if not self.pool:
            return []
        if self.options.retrieval == "fixed" or self.retriever is None:
            return self.pool[: self.options.k]
        return self.retriever.top(instruction, self.options.k)

    def text(self, instruction: str, objects: Sequence[str] = (), failure: str | None = None,
             done: Sequence[Triplet] = ()) -> str:
        parts = [_HEADER.format(actions=", ".join(TRIPLET_ACTIONS))]
        examples = self.examples_for(instruction)
        if examples:
            parts.append("Examples:")
            parts += [f"Task: {e.instruction.strip()}\nPlan: {format_triplets(e.triplets)}" for e in examples]
        if objects and self.options.list_objects:
            parts.append("Objects in this room: " + ", ".join(objects) + ".")
        parts.append(f"Task: {instruction.strip()}")
        if done:
            parts.append("Already done: " + format_triplets(done))
        if failure:
            parts.append(f"The last subgoal failed: {failure} Write the remaining plan.")
        parts.append("Plan:")
        return "\n\n".join(parts)

    def messages(self, instruction: str, objects: Sequence[str] = (), failure: str | None = None,
                 done: Sequence[Triplet] = ()) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "text", "text": self.text(instruction, objects, failure, done)}]}]


# --- grounded replanning ------------------------------------------------------------
def _words(name: str) -> str:
    return " ".join(re.findall(r"[A-Z][a-z]*|[a-z]+|\d+", name)).lower()


def most_similar(name: str, candidates: Sequence[str]) -> str | None:
    """The candidate class whose words are most similar to ``name``'s (None without candidates)."""
    cands = [c for c in candidates if c != name and len(c) <= MAX_NAME_CHARS]
    if not cands or len(name) > MAX_NAME_CHARS:
        return None
    w = _words(name)
    return max(cands, key=lambda c: (difflib.SequenceMatcher(None, w, _words(c)).ratio(), c))


_MISSING = re.compile(r"No (\w+) (?:can be found|is in reach)")


def missing_object(feedback: str) -> str | None:
    """The class an env failure says is missing (``"No Spatula can be found ..."``)."""
    m = _MISSING.search(feedback or "")
    return m.group(1) if m else None


def substitute(triplets: Sequence[Triplet], missing: str, visible: Sequence[str]) -> list[Triplet] | None:
    """``triplets`` with ``missing`` replaced (as object or receptacle) by the most similar
    visible class; None when there is nothing to substitute."""
    repl = most_similar(missing, visible)
    if repl is None:
        return None
    return [Triplet(t.action, repl if t.obj == missing else t.obj, repl if t.receptacle == missing else t.receptacle)
            for t in triplets]


# --- the adapter ----------------------------------------------------------------------
@dataclass
class _Episode:
    triplets: list[Triplet] = field(default_factory=list)
    #: index of the triplet each issued low-level step belongs to.
    owners: list[int] = field(default_factory=list)
    issued_at: int = 0
    replans: int = 0
    outputs: list[str] = field(default_factory=list)
    #: The model call in flight: "" (a whole plan) or "replan" (the rest after a failure).
    pending: str = ""


class AlfredTripletPrompt:
    """ALFRED for a model-backed planner (:class:`harness.interfaces.PromptAdapter`).

    First call: one model call gives the whole triplet plan, executed as its
    expansion. Later calls: if the last plan ran to the end, stop (empty plan);
    if a step failed because a class was not found and ``grounded_replanning``
    is on, substitute the most similar visible class in the remaining triplets
    (no model call); otherwise ask the model again with the failure (at most
    ``max_replans`` times).
    """

    #: Triplets are free text: no output schema.
    schema: Mapping[str, Any] | None = None

    def __init__(self, examples: str | Path | Sequence[Example] | None = None, k: int = DEFAULT_K,
                 retrieval: str = "tfidf", grounded_replanning: bool = True, max_replans: int = 3,
                 max_chars: int = DEFAULT_MAX_CHARS) -> None:
        pool = load_examples(examples) if isinstance(examples, (str, Path)) else list(examples or ())
        self.builder = TripletPromptBuilder(pool, PromptOptions(k=k, retrieval=retrieval))
        self.grounded_replanning = bool(grounded_replanning)
        self.max_replans = int(max_replans)
        self._max_chars = int(max_chars)
        # Bounded: a finished episode's state is evicted once newer ones fill the cache (a
        # 100,000-episode run must not keep every episode's triplets).
        self._episodes: EpisodeCache[_Episode] = EpisodeCache()

    def identity(self) -> Mapping[str, Any]:
        """Derived facts: versions, the pool's hash and the fixed rules (``k`` and
        ``grounded_replanning`` are declared settings)."""
        built = {key: v for key, v in self.builder.identity().items() if key != "k"}
        return {**built, "max_replans": self.max_replans, "parser_version": PARSER_VERSION}

    def reset(self, episode: EpisodeSpec) -> None:
        self._episodes.pop(episode.key)
        self._episodes.get(episode.key, _Episode)

    def messages(self, request: AgentRequest) -> Conversation | AgentReply:
        r = request
        ep = self._episodes.get(r.episode.key, _Episode)
        objects = list(r.observation.get("objects", [])) if isinstance(r.observation, Mapping) else []
        if not ep.triplets:
            # First call, or the earlier output was unusable (no history was added for it).
            if ep.outputs and ep.replans >= self.max_replans:
                return AgentReply(actions=[])
            if ep.outputs:
                ep.replans += 1
            ep.pending = ""
            return self.builder.messages(r.episode.instruction, objects)
        executed = len(r.history) - ep.issued_at
        if executed >= len(ep.owners) and (not r.history or r.info.get("action_ok", True)):
            return AgentReply(actions=[])  # the plan ran to its end: stop
        failed_at = ep.owners[min(executed - 1, len(ep.owners) - 1)] if executed > 0 else 0
        feedback = r.history[-1][1] if r.history else ""
        if ep.replans >= self.max_replans:
            return AgentReply(actions=[])
        ep.replans += 1
        missing = missing_object(feedback)
        remaining = ep.triplets[failed_at:]
        if self.grounded_replanning and missing:
            swapped = substitute(remaining, missing, objects)
            if swapped is not None:
                return self._issue(ep, ep.triplets[:failed_at] + swapped, failed_at, len(r.history))
        ep.pending = "replan"
        return self.builder.messages(r.episode.instruction, objects, feedback, ep.triplets[:failed_at])

    def reply(self, request: AgentRequest, text: str, conversation: Conversation) -> AgentReply:
        r = request
        ep = self._episodes.get(r.episode.key, _Episode)
        ep.outputs.append(text)
        parsed = parse_triplets(text, self._max_chars)
        if parsed.error:
            return AgentReply(actions=[], raw_output=text, output_error=parsed.error)
        done = 0
        if ep.pending == "replan":
            executed = len(r.history) - ep.issued_at
            done = ep.owners[min(executed - 1, len(ep.owners) - 1)] if executed > 0 and ep.owners else 0
        reply = self._issue(ep, ep.triplets[:done] + list(parsed.triplets), done, len(r.history))
        reply.raw_output = text
        return reply

    def _issue(self, ep: _Episode, triplets: list[Triplet], start: int, history_len: int) -> AgentReply:
        ep.triplets = triplets
        ep.owners = [i for i in range(start, len(triplets)) for _ in expand(triplets[i])]
        ep.issued_at = history_len
        return AgentReply(actions=expand_all(triplets[start:]))


def make_adapter(params: AlfredPromptParams, model: ModelFacts) -> AlfredTripletPrompt:
    """``SuitePlugin.prompt`` of ALFRED."""
    return AlfredTripletPrompt(params.alfred_examples, k=params.alfred_k,
                               grounded_replanning=params.grounded_replanning, max_chars=model.max_output_chars)


# --- a planner over any text backend ---------------------------------------------------
class AlfredTripletPlanner:
    """The :class:`AlfredTripletPrompt` over a text-generation backend (anything with
    ``generate(conversations) -> list[str]`` and ``identity()``), one call per ``act``."""

    name = "alfred_triplets"
    privileged = False
    reads_images = False

    def __init__(self, backend: Any, examples: str | Path | Sequence[Example] | None = None, k: int = DEFAULT_K,
                 retrieval: str = "tfidf", grounded_replanning: bool = True, max_replans: int = 3) -> None:
        self.backend = backend
        self.prompt = AlfredTripletPrompt(examples, k=k, retrieval=retrieval, grounded_replanning=grounded_replanning,
                                          max_replans=max_replans,
                                          max_chars=max_output_chars(getattr(backend, "max_new_tokens", 2048)))
        self.builder = self.prompt.builder

    def identity(self) -> Mapping[str, Any]:
        backend = self.backend.identity() if hasattr(self.backend, "identity") else repr(type(self.backend))
        return {"name": self.name, "backend": backend, **self.prompt.identity(), "k": self.builder.options.k,
                "grounded_replanning": self.prompt.grounded_replanning}

    def reset(self, episode: EpisodeSpec) -> None:
        self.prompt.reset(episode)

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        return serve(self.prompt, requests, lambda conversations, schema: self.backend.generate(conversations))
