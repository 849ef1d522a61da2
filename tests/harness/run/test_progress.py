"""Progress shows that an agent is working: the runner tells ``on_call`` of every agent
call (started, finished, with the output tokens its replies report) and the progress
of ``harness run`` shows calls done and in flight and output tokens per second, off a
terminal (plain lines) and on one (the rich bar's column). Real EB-ALFRED episodes
(household backend), a real oracle answering slowly, as a model on a CPU does."""

from __future__ import annotations

import io
import threading
import time

import pytest

from harness.cli.run_progress import Progress
from harness.interfaces import AgentReply
from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import RunSpec

#: Output tokens each reply reports.
TOKENS = 40


class SlowModel:
    """The real oracle's plans, three actions per call, each call taking ``delay_s``, each
    reply a text carrying its token counts (as the model backends give them)."""

    def __init__(self, delay_s: float):
        from harness.registry.catalog import PLANNERS

        self.inner = PLANNERS.build("oracle", suite="eb_alfred")
        self.name, self.privileged = "slow_model", True
        self.delay_s, self.plans = delay_s, {}

    def identity(self):
        return {"name": self.name}

    def reset(self, episode):
        self.inner.reset(episode)
        self.plans.pop(episode.episode_id, None)

    def act(self, requests):
        class Text(str):
            usage: dict

        time.sleep(self.delay_s)
        out = []
        for req, plan in zip(requests, self.inner.act(requests)):
            rest = self.plans.setdefault(req.episode.episode_id, list(plan))
            piece, rest[:] = rest[:3], rest[3:]
            raw = Text("\n".join(map(str, piece)))
            raw.usage = {"prompt_tokens": 500, "output_tokens": TOKENS}
            out.append(AgentReply(piece, raw_output=raw))
        return out


@pytest.fixture(scope="module")
def suite():
    from envs.eb_alfred.suite import EBAlfredSuite

    return EBAlfredSuite(render=False)


def _spec(**kw) -> RunSpec:
    return RunSpec(**{"suite": "eb_alfred", "split": "seen", "agent": "oracle", "variant": "slow", "limit": 2,
                      "batch_size": 2, **kw})


def _outcome(records) -> list[tuple]:
    """What an episode's record says, without its wall times."""
    return sorted((r.episode_id, r.success, r.steps, r.agent_calls, r.gc_satisfied, r.invalid_actions,
                   r.termination, r.error_kind, repr(r.extra)) for r in records)


def test_plain_lines_show_agent_calls_in_flight_before_any_episode_finishes(suite, tmp_path):
    out = io.StringIO()  # not a terminal: plain lines
    bar = Progress("slow · eb_alfred/seen", enabled=True, batch=2, interval_s=0.25, min_gap_s=0.0, stream=out)
    first_record: list[int] = []
    calls: list[tuple] = []
    lock = threading.Lock()

    def on_record(record):
        if not first_record:
            first_record.append(len(out.getvalue().splitlines()))
        bar.update(record)

    def on_call(event, n, tokens):
        with lock:
            calls.append((event, n, tokens))
        bar.call(event, n, tokens)

    with ResultStore(tmp_path / "a") as store, bar:
        Runner(_spec(), suite, SlowModel(0.4), store, on_start=bar.start, on_record=on_record,
               on_call=on_call).run()
        records = store.records()
    lines = out.getvalue().splitlines()
    before = lines[:first_record[0]]
    # Before any episode finished, the lines show the first call in flight, then calls done.
    told = [l for l in before if "agent calls" in l]
    assert told and "0/2" in told[0] and "agent calls 0 done, 1 in flight" in told[0], lines
    assert any("in flight" in l and "output tok/s" in l and "0/2" in l for l in before), lines
    assert "agent calls" in lines[-1] and "0 in flight" in lines[-1] and "2/2" in lines[-1], lines
    # Every call is told twice, started then finished, with its replies' tokens.
    started = [c for c in calls if c[0] == "started"]
    finished = [c for c in calls if c[0] == "finished"]
    assert len(started) == len(finished) == bar.calls_done == bar.calls_started > 2
    assert all(t is None for _, _, t in started) and all(t == TOKENS * n for _, n, t in finished)
    assert bar.output_tokens == sum(t for _, _, t in finished)
    # The callback sees, it changes nothing: the same records without it.
    with ResultStore(tmp_path / "b") as store:
        Runner(_spec(), suite, SlowModel(0.0), store).run()
        assert _outcome(store.records()) == _outcome(records)


def test_rich_bar_shows_agent_calls(suite, tmp_path):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    bar = Progress("slow · eb_alfred/seen", enabled=True, stream=Terminal())
    seen: list[str] = []

    def on_call(event, n, tokens):
        bar.call(event, n, tokens)
        seen.append(bar._progress.tasks[0].fields["calls"])  # the bar's column, as drawn next

    with ResultStore(tmp_path / "a") as store, bar:
        assert bar._progress is not None  # the rich bar, not plain lines
        Runner(_spec(limit=1), suite, SlowModel(0.0), store, on_start=bar.start, on_record=bar.update,
               on_call=on_call).run()
    assert seen[0] == "agent calls 0 done, 1 in flight"
    assert seen[-1].startswith(f"agent calls {bar.calls_done} done, 0 in flight, ") and "output tok/s" in seen[-1]


def test_first_call_prints_a_line_and_no_tokens_no_rate():
    out = io.StringIO()
    bar = Progress("x", enabled=True, interval_s=60, min_gap_s=60, stream=out)
    with bar:
        bar.start(4, 0)
        assert bar.calls_text() == "" and "agent calls" not in bar.line()
        bar.call("started", 4, None)  # at once, not at the next heartbeat
        assert out.getvalue().splitlines() == ["progress: x 0/4 (0%), SR - of 0 run, 0 errors, elapsed 0s, ETA ?; "
                                               "agent calls 0 done, 1 in flight"]
        bar.call("finished", 4, None)  # a scripted agent reports no tokens
        bar.call("started", 4, None)
    assert len(out.getvalue().splitlines()) == 1  # only the first call's start prints
    assert bar.calls_text() == "agent calls 1 done, 1 in flight" and bar.line().endswith("; agent calls 1 done, 1 in flight")
