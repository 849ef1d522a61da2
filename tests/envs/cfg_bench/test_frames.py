"""The frames a CFG-Bench question shows at the suite's defaults: 4 fps for every clip length in the
release (1.83 to 107.8 s, 26.3 s on average), picked as the originals' helper picks them
(qwen_vl_utils, harness/util/media.py), and the rule, its version and the decoder in the run identity."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from envs.cfg_bench.adapter import make_adapter
from envs.cfg_bench.plugin import CFGBenchPromptParams
from envs.cfg_bench.suite import CFGBenchSuite
from harness.interfaces import AgentRequest
from harness.util.media import qwen_frame_indices
from harness.run.identity import run_identity, run_id_of
from harness.types import RunSpec
from tests.media_helpers import counting_video, frame_index


@pytest.fixture(scope="module")
def long_clip_data(tmp_path_factory):
    """One FAU question on a 26.3 s clip (the release's mean length) at 10 fps: 263 frames."""
    root = tmp_path_factory.mktemp("cfg_long")
    (root / "videos").mkdir()
    counting_video(root / "videos" / "long.mp4", frames=263, fps=10)
    (root / "qa_pairs.json").write_text(json.dumps([
        {"video_name": "long.mp4", "question": "Which hand?", "task_type": "FAU", "options": ["left", "right"],
         "correct_answer": "left"}]))
    return root


def _clip(suite: CFGBenchSuite):
    (episode,) = suite.episodes("all")
    env = suite.make_env()
    obs, info = env.reset(options={"episode": episode})
    adapter = make_adapter(CFGBenchPromptParams(), None)
    request = AgentRequest(episode=episode, observation=obs, info=info)
    (part,) = [p for p in adapter.messages(request)[0]["content"] if p["type"] == "video"]
    return part["video"]


def test_a_clip_of_the_mean_length_gets_4_fps_at_the_defaults(long_clip_data):
    clip = _clip(CFGBenchSuite(data_dir=str(long_clip_data)))
    want = qwen_frame_indices(263, 10.0, 4.0)  # 263 / 10 * 4 = 105.2 -> 104 frames, 0 .. 262
    assert len(want) == 104
    assert [frame_index(f) for f in clip.frames] == want
    assert len(clip) / 26.3 == pytest.approx(4.0, abs=0.1)  # the old default (64 frames) gave 2.43 fps


def test_the_times_rule_is_a_declared_choice(long_clip_data):
    clip = _clip(CFGBenchSuite(data_dir=str(long_clip_data), sampling="times"))
    # every 0.25 s from 0 while below 26.3 s: 106 times, each taking the frame on screen then
    assert [frame_index(f) for f in clip.frames] == [math.floor(k * 2.5 + 1e-9) for k in range(106)]


def test_the_rule_its_version_and_the_decoder_enter_the_run_identity(long_clip_data):
    suite = CFGBenchSuite(data_dir=str(long_clip_data))
    assert suite.protocol("all")["frames"] == {"rule": "qwen_vl_utils/1", "decoder": "pyav", "fps": 4.0,
                                                 "max_frames": 768}
    agent = SimpleNamespace(params=None, identity=lambda: {"name": "x"})
    spec = RunSpec(suite="cfg_bench", split="all", agent="x", variant="base")
    ids = {run_id_of(run_identity(spec, CFGBenchSuite(data_dir=str(long_clip_data), **kw), agent))
           for kw in ({}, {"sampling": "times"}, {"max_frames": 64})}
    assert len(ids) == 3
