"""The ``vlm`` planner's contract: a model backend plus the prompt adapter of the suite it runs.

Its declaration is a composite (its own settings, the chosen backend's, the suite's prompt
settings); a run's identity holds only the settings of its own suite, a key of the backend
the run does not use is refused in one line, and planners/vlm/ names no suite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.registry.catalog import SUITES
from harness.params import ParamError, parse
from harness.run.identity import run_id_of, run_identity
from harness.types import RunSpec
from planners.plugin import VLM
from tests.conftest import REPO_ROOT

#: The two backend keys tried with each other's backend.
OPENAI = dict(backend="openai", model="served-name", base_url="http://127.0.0.1:9/v1", max_retries=0)


class _Suite:
    """Only what ``run_identity`` reads of a suite (it never steps an env)."""

    version = "1"
    params = None

    def __init__(self, name: str) -> None:
        self.name = name

    def protocol(self, split: str) -> dict:
        return {"max_steps": 1}


def _run_id(suite: str, **values) -> str:
    pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
    from planners.vlm.planner import VLMPlanner

    planner = VLMPlanner(suite=suite, **{**OPENAI, **values})
    spec = RunSpec(suite=suite, split="s", agent="vlm", variant="base")
    return run_id_of(run_identity(spec, _Suite(suite), planner))


def test_a_suites_run_identity_ignores_the_other_suites_prompt_settings() -> None:
    """Mutation caught: ``self.params`` holding every suite's prompt group (the EB-ALFRED run's id
    then moves with EB-Manipulation's settings), or none (its own settings would not move it)."""
    base = _run_id("eb_alfred")
    assert _run_id("eb_alfred", manipulation_shots=1) == base
    assert _run_id("eb_alfred", on_bad_output="invalid") == base
    assert _run_id("eb_alfred", alfred_k=2) == base
    assert _run_id("eb_alfred", num_examples=3) != base and _run_id("eb_alfred", parser="lenient") != base
    manip = _run_id("eb_manipulation")
    assert _run_id("eb_manipulation", num_examples=3) == manip
    assert _run_id("eb_manipulation", parser="lenient") == manip and _run_id("eb_manipulation", mode="chat") == manip
    assert _run_id("eb_manipulation", manipulation_shots=1) != manip
    # Speed and transport settings stay out; the served model is in.
    assert _run_id("eb_alfred", max_concurrency=2, request_timeout_s=5.0) == base
    assert _run_id("eb_alfred", model="another") != base


def test_only_this_runs_groups_are_parsed() -> None:
    parsed = parse(VLM.params, {"model": "m"}, suite="eb_manipulation")
    assert list(parsed) == ["vlm", "backend hf", "prompt of eb_manipulation"]


@pytest.mark.parametrize("values, message", [
    ({**OPENAI, "dtype": "nope"}, "dtype is a parameter of backend hf, which this run does not use"),
    ({"model": "m", "base_url": "http://127.0.0.1:9/v1"}, "base_url is a parameter of backend openai"),
    ({"model": "m", "backend": "tpu"}, "backend must be one of hf, openai, scripted, got 'tpu'"),
    ({**OPENAI, "base_url": "ftp://x"}, "base_url must be an http(s) URL"),
    ({**OPENAI, "request_timeout_s": "inf"}, "request_timeout_s must be a finite number > 0"),
    ({**OPENAI, "request_timeout_s": 0}, "request_timeout_s must be a finite number > 0"),
    ({**OPENAI, "max_concurrency": 0}, "max_concurrency must be between 1 and"),
    ({"model": "m", "batch_size": 0}, "batch_size must be between 1 and"),
    ({"model": "m", "num_threads": 0}, "num_threads must be 'auto' or a whole number >= 1, got 0"),
    ({"model": "m", "num_threads": "many"}, "num_threads must be 'auto' or a whole number >= 1"),
    ({"model": "m", "dtype": "float8"}, "dtype must be one of 'auto', 'bfloat16'"),
    ({"model": "m", "json_schema": "maybe"}, "json_schema must be one of 'auto', 'true', 'false'"),
    ({"model": "m", "max_new_tokens": 0}, "max_new_tokens must be between 1 and"),
    ({"backend": "openai", "model": "m"}, "base_url is required"),
    ({"model": "m", "temperature": 0.7}, "temperature is not a parameter"),
])
def test_bad_values_are_one_line_errors(values: dict, message: str) -> None:
    """Mutation caught: a backend group chosen without looking at ``backend`` (hf's keys accepted
    with openai), a check dropped from a declaration."""
    with pytest.raises(ParamError) as err:
        parse(VLM.params, values, suite="eb_alfred")
    text = str(err.value)
    assert message in text and "\n" not in text


def test_null_is_not_given_and_other_suites_prompt_settings_are_ignored() -> None:
    parsed = parse(VLM.params, {**OPENAI, "dtype": None, "batch_size": None, "manipulation_shots": 2},
                   suite="eb_alfred")
    assert "prompt of eb_manipulation" not in parsed and parsed["backend openai"].max_retries == 0
    with pytest.raises(ParamError, match="batch_size must be"):
        parse(VLM.params, {"model": "m", "batch_size": "x"}, suite="eb_alfred")


def test_every_suite_with_a_prompt_names_an_adapter_factory_and_its_settings() -> None:
    with_prompt = [s for s in SUITES.entries() if s.prompt]
    assert {s.name for s in with_prompt} >= {"eb_alfred", "eb_manipulation", "alfred"}
    for s in with_prompt:
        assert s.prompt_params is not None and s.prompt.count(":") == 1


def test_planners_vlm_names_no_suite() -> None:
    """The planner dispatches on no suite: no suite name, no ``episode.suite`` in planners/vlm/.
    Mutation caught: an ``if suite == "eb_manipulation"`` branch (or any suite name) put back."""
    # This project's suites (an installed third-party suite may be called anything, e.g. "example").
    names = {s.name for s in SUITES.entries() if s.target.startswith("envs.")}
    names |= {"EB-ALFRED", "EB-Manipulation", "ALFRED", "LIBERO"}
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b|\.suite\b", re.IGNORECASE)
    hits = []
    for path in sorted((Path(REPO_ROOT) / "planners" / "vlm").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{path.relative_to(REPO_ROOT)}:{n}: {line.strip()}")
    assert not hits, "\n".join(hits)
