"""The agent side of the runner contract, on the real EB-ALFRED suite (household backend):
EmbodiedBench's invalid-output semantics, transcripts, agent timeouts, contract checks,
replan_steps, bad actions and the reset options the runner passes.

Scripted agents drive the real env; nothing here is a fake simulator.
"""

from __future__ import annotations

import threading

import pytest

from harness.registry.catalog import PLANNERS
from harness.interfaces import AgentContractError, AgentReply, InvalidOutput
from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import INFO_ARTIFACTS, RunSpec


@pytest.fixture(scope="module")
def suite():
    from envs.eb_alfred.suite import EBAlfredSuite

    return EBAlfredSuite(render=False, generated_per_split=20)


def spec(**kw) -> RunSpec:
    base = dict(suite="eb_alfred", split="seen", agent="scripted", variant="v", limit=2, batch_size=2)
    base.update(kw)
    return RunSpec(**base)


class Scripted:
    """Replies from a script per episode (a list of outputs, one per call); records every request."""

    name = "scripted"
    privileged = False

    def __init__(self, script, tail=None):
        self.script, self.tail = script, tail
        self.requests: list = []
        self.calls: dict = {}

    def identity(self):
        return {"name": self.name}

    def reset(self, episode):
        self.calls[episode.key] = 0

    def act(self, requests):
        out = []
        for r in requests:
            self.requests.append(r)
            i = self.calls[r.episode.key]
            self.calls[r.episode.key] = i + 1
            out.append(self.script[i] if i < len(self.script) else self.tail(r))
        return out


def oracle_tail():
    oracle = PLANNERS.build("oracle", suite="eb_alfred")

    def tail(request):
        return oracle.act([request])[0]

    return tail


class PrivilegedScripted(Scripted):
    privileged = True


def test_unusable_output_is_one_invalid_action_without_step_or_history(suite, tmp_path):
    """EmbodiedBench semantics (mutations guarded: adding the bad output to the history; counting
    it as an env step; not counting it as invalid)."""
    bad = AgentReply(raw_output="{not json", output_error="output is not valid JSON")
    agent = PrivilegedScripted([bad, bad], tail=oracle_tail())
    with ResultStore(tmp_path) as store:
        summary = Runner(spec(limit=1, batch_size=1), suite, agent, store).run()
        (rec,) = store.records()
        transcript = store.transcripts()
    first, second, third = agent.requests[:3]
    assert first.history == second.history == third.history == ()  # the next prompt is identical
    assert second.info["invalid_actions"] == 1 and third.info["invalid_actions"] == 2
    assert rec.success and rec.planner_output_errors == 2 and rec.invalid_actions == 2
    assert rec.steps == rec.expert_length  # the two bad outputs took no env step
    assert len(rec.extra["history"]) == rec.steps and rec.extra["history"][-1][1] == "Last action executed successfully."
    assert summary.records[0].planner_output_errors == 2
    assert not rec.empty_plan
    assert [t["raw_output"] for t in transcript] == ["{not json", "{not json"]
    assert [t["output_error"] for t in transcript] == ["output is not valid JSON"] * 2
    assert "prompt" not in transcript[0] or transcript[0]["prompt"] is None  # prompts only on request


def test_ten_unusable_outputs_end_the_episode_with_progress_kept(suite):
    bad = AgentReply(raw_output="", output_error="empty output")
    summary = Runner(spec(limit=1, batch_size=1), suite, Scripted([bad] * 20), None).run()
    (rec,) = summary.records
    assert rec.termination == "max_invalid" and rec.planner_output_errors == 10 and rec.steps == 0
    assert rec.gc_total > 0  # GC is the real count, never zeroed on such endings


def test_empty_plan_flag_and_prompt_recording(suite, tmp_path):
    reply = AgentReply(actions=[], raw_output='{"executable_plan": []}', prompt=[{"role": "user", "content": "hi"}])
    with ResultStore(tmp_path) as store:
        Runner(spec(limit=1, batch_size=1, record_prompts=True), suite, Scripted([reply]), store).run()
        (rec,) = store.records()
        (entry,) = store.transcripts()
    assert rec.empty_plan and rec.termination == "empty_plan"
    assert '"content": "hi"' in entry["prompt"] and entry["actions"] == 0


def test_output_error_with_fallback_actions_counts_and_runs_them(suite):
    """EB-Manipulation's original behaviour: a random action instead of unusable output."""
    fallback = AgentReply(actions=["find a Apple"], raw_output="???", output_error="no JSON")
    agent = Scripted([fallback], tail=lambda r: [])
    (rec,) = Runner(spec(limit=1, batch_size=1), suite, agent, None).run().records
    assert rec.planner_output_errors == 1 and rec.steps == 1 and rec.empty_plan
    assert agent.requests[1].history[0][0] == "find a Apple"


def test_plain_invalid_output_action_counts_too(suite):
    agent = PrivilegedScripted([[InvalidOutput("garbage", "no JSON object")]], tail=oracle_tail())
    (rec,) = Runner(spec(limit=1, batch_size=1), suite, agent, None).run().records
    assert rec.planner_output_errors == 1 and rec.success
    assert agent.requests[1].history == ()


@pytest.mark.parametrize("bad, needle", [
    ("find a Apple", "got str"),
    (None, "got NoneType"),
    (42, "got int"),
])
def test_agent_contract_violations_are_agent_errors_naming_the_contract(suite, bad, needle):
    """A plain string must not be executed one character at a time (mutation guarded)."""
    summary = Runner(spec(limit=1, batch_size=1), suite, Scripted([bad]), None).run()
    (rec,) = summary.records
    assert rec.error_kind == "agent" and "act() must return one list of actions" in rec.error_message
    assert needle in rec.error_message and rec.steps == 0


class WrongLength(Scripted):
    def act(self, requests):
        self.requests.extend(requests)
        return [["find a Apple"]] * (len(requests) + 1)


def test_wrong_batch_length_is_an_error_for_the_batch_not_a_second_round_of_calls(suite):
    agent = WrongLength([])
    summary = Runner(spec(limit=2, batch_size=2), suite, agent, None).run()
    assert len(agent.requests) == 2  # one call: no silent retry one by one
    assert all(r.error_kind == "agent" and "got 3 plans for 2 requests" in r.error_message for r in summary.records)


class Hanging(Scripted):
    def __init__(self, hang_on: str):
        super().__init__([], tail=lambda r: ["find a Apple"])
        self.hang_on = hang_on
        self.release = threading.Event()

    def act(self, requests):
        if any(r.episode.episode_id == self.hang_on for r in requests):
            self.release.wait(120)  # released when the run is over: longer than any load makes a run
        return super().act(requests)


@pytest.mark.parametrize("executor", ["local", "process"])
def test_a_hung_agent_call_becomes_timeout_records_and_the_run_goes_on(suite, executor):
    """Today's bug: a hanging agent hung the whole run forever. The hung call is released only
    after the run, so a record that says ``agent_timeout_s`` proves the runner abandoned it (no
    wall-clock bound is asserted: load cannot fail this test)."""
    from harness.run.executors import SuiteEnvFactory

    hang_on = suite.episodes("seen")[0].episode_id
    agent = Hanging(hang_on)
    factory = SuiteEnvFactory("eb_alfred", {"render": False, "generated_per_split": 20})
    s = spec(limit=3, batch_size=1, num_workers=1, executor=executor, agent_timeout_s=1.0)
    summary = Runner(s, suite, agent, None, env_factory=factory if executor == "process" else None).run()
    agent.release.set()
    by_id = {r.episode_id: r for r in summary.records}
    assert by_id[hang_on].error_kind == "timeout" and "agent_timeout_s" in by_id[hang_on].error_message
    assert summary.finished == 3
    assert all(r.error_kind is None for k, r in by_id.items() if k != hang_on)


class Chunked(Scripted):
    replan_steps = 2


def test_replan_steps_cut_each_chunk(suite):
    agent = Chunked([], tail=lambda r: ["find a Apple", "find a Apple", "find a Apple", "find a Apple"])
    summary = Runner(spec(limit=1, batch_size=1), suite, agent, None).run()
    histories = [len(r.history) for r in agent.requests]
    assert histories[:3] == [0, 2, 4]
    assert summary.records[0].steps == 30


class RaisingEnvFactory:
    """The real EB-ALFRED env whose step refuses NaN like a manipulation env must."""

    def __init__(self, suite):
        self.suite = suite

    def __call__(self):
        env = self.suite.make_env()
        step = env.step

        def checked(action):
            if action == "NaN":
                raise AgentContractError("action contains NaN")
            return step(action)

        env.step = checked
        return env


def test_agent_contract_error_from_the_env_is_an_agent_record_not_a_retry(suite):
    summary = Runner(spec(limit=1, batch_size=1, max_retries=3), suite, Scripted([["NaN"]]), None,
                     env_factory=RaisingEnvFactory(suite)).run()
    (rec,) = summary.records
    assert rec.error_kind == "agent" and "NaN" in rec.error_message and rec.attempts == 1


def test_unpicklable_actions_under_the_process_executor_are_agent_errors(suite):
    from harness.run.executors import SuiteEnvFactory

    factory = SuiteEnvFactory("eb_alfred", {"render": False, "generated_per_split": 20})
    summary = Runner(spec(limit=1, batch_size=1, executor="process", max_retries=2), suite,
                     Scripted([[lambda: None]]), None, env_factory=factory).run()
    (rec,) = summary.records
    assert rec.error_kind == "agent" and "not picklable" in rec.error_message and rec.attempts == 1


class Options:
    name = "options"
    privileged = False
    reads_images = False

    def identity(self):
        return {}

    def reset(self, episode):
        pass

    def act(self, requests):
        self.seen = [r.observation["image"] for r in requests]
        return [[] for _ in requests]


def test_agents_that_read_no_images_get_none_rendered(tmp_path):
    from envs.eb_alfred.suite import EBAlfredSuite

    rendering = EBAlfredSuite(render=True, generated_per_split=2)
    agent = Options()
    Runner(spec(limit=1, batch_size=1), rendering, agent, None).run()
    assert agent.seen == [None]
    agent.reads_images = True
    Runner(spec(limit=1, batch_size=1), rendering, agent, None).run()
    assert agent.seen[0] is not None and agent.seen[0].ndim == 3


class ArtifactEnvFactory:
    """The real env, writing a per-episode file where the runner says (as LIBERO's videos)."""

    def __init__(self, suite):
        self.suite = suite

    def __call__(self):
        env = self.suite.make_env()
        reset = env.reset

        def reset_with_file(*, seed=None, options=None):
            obs, info = reset(seed=seed, options=options)
            from pathlib import Path

            folder = Path(options["artifacts_dir"])
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / (options["episode"].episode_id.replace("/", "_") + ".txt")
            path.write_text("frames")
            info[INFO_ARTIFACTS] = {"video": str(path)}
            return obs, info

        env.reset = reset_with_file
        return env


def test_artifacts_go_under_the_run_and_into_the_record(suite, tmp_path):
    with ResultStore(tmp_path) as store:
        runner = Runner(spec(limit=1, batch_size=1), suite, Scripted([[]]), store,
                        env_factory=ArtifactEnvFactory(suite))
        runner.run()
        (rec,) = store.records()
    video = rec.extra["artifacts"]["video"]
    # Kept relative to the store's folder (the store and its files move together).
    assert video.startswith(f"artifacts/{runner.run_id}/") and (tmp_path / video).read_text() == "frames"
    assert str((tmp_path / video).resolve()).startswith(str((tmp_path / "artifacts" / runner.run_id).resolve()))
