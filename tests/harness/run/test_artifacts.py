"""Frames the agent saw (harness/run/artifacts.py) and the cost
fields of each agent call, through a real run of eb_alfred."""

from __future__ import annotations

import io
import sqlite3

import numpy as np
import pytest
from PIL import Image

from harness.run.artifacts import FrameStore, observation_images
from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import RunSpec


def img(value: int, size=(40, 30)) -> np.ndarray:
    a = np.zeros((size[1], size[0], 3), np.uint8)
    a[..., 0] = value
    a[5:15, 5:25] = 255 - value
    return a


def test_frames_are_deduplicated_by_hash_and_compressed(tmp_path):
    fs = FrameStore(tmp_path)
    a = fs.save("image", img(10))
    b = fs.save("image", img(10).copy())
    c = fs.save("image", img(200))
    assert a["path"] == b["path"] != c["path"] and fs.written == 2
    assert a["path"].startswith("artifacts/frames/") and (a["width"], a["height"]) == (40, 30)
    data = (tmp_path / a["path"]).read_bytes()
    decoded = np.asarray(Image.open(io.BytesIO(data)))
    assert data[:2] == b"\xff\xd8" and np.abs(decoded.astype(int) - img(10)).mean() < 3
    assert not list(tmp_path.rglob("*.tmp"))


def test_budget_record_images_true_and_false(tmp_path):
    auto = FrameStore(tmp_path / "auto", None, budget_bytes=1)
    first, second = auto.save("image", img(1)), auto.save("image", img(2))
    assert "path" in first and second == {"name": "image", "width": 40, "height": 30,
                                          "sha256": second["sha256"], "skipped": "budget"}
    assert auto.save("image", img(1))["path"] == first["path"]  # an existing frame is still referenced
    on = FrameStore(tmp_path / "on", True, budget_bytes=1)
    assert all("path" in on.save("image", img(v)) for v in range(3))
    off = FrameStore(tmp_path / "off", False)
    assert off.save_observation({"image": img(1)}) == [] and not (tmp_path / "off").exists()
    # the budget counts frames already in the folder (a resumed run)
    assert FrameStore(tmp_path / "auto", None, budget_bytes=10**9).used == (tmp_path / "auto" / first["path"]).stat().st_size


def test_observation_images_order_and_kinds():
    obs = {"wrist_image": img(1), "image": Image.fromarray(img(2)), "text": "x", "depth": np.zeros((4, 4), np.float32)}
    assert [k for k, _ in observation_images(obs)] == ["image", "wrist_image"]
    assert observation_images("no mapping") == [] and observation_images({"image": None}) == []


class SeeingOracle:
    """The real oracle answering as a model: it reads images, returns raw text with token counts."""

    reads_images = True
    privileged = True
    name = "seeing_oracle"

    def __init__(self):
        from harness.registry.catalog import PLANNERS

        self.inner = PLANNERS.build("oracle", suite="eb_alfred")

    def identity(self):
        return {"name": self.name}

    def reset(self, episode):
        self.inner.reset(episode)

    def act(self, requests):
        from harness.interfaces import AgentReply

        class Text(str):
            pass

        out = []
        for req, plan in zip(requests, self.inner.act(requests)):
            raw = Text(" ; ".join(map(str, plan)))
            raw.usage = {"prompt_tokens": 1000 + len(plan), "output_tokens": len(raw)}
            out.append(AgentReply(list(plan), raw_output=raw, prompt=[{"role": "user", "content": [
                {"type": "text", "text": req.episode.instruction}, {"type": "image", "size": [224, 224]}]}]))
        return out


@pytest.mark.parametrize("record", [None, False])
def test_run_keeps_frames_and_cost_in_the_transcripts(tmp_path, record):
    from envs.eb_alfred.suite import EBAlfredSuite

    spec = RunSpec(suite="eb_alfred", split="seen", agent="oracle", variant="seer", limit=3, record_prompts=True,
                   record_images=record)
    with ResultStore(tmp_path / "o") as store:
        Runner(spec, EBAlfredSuite(render=True), SeeingOracle(), store).run()
        rows = store.transcripts()
    assert rows and all(r["latency_s"] >= 0 and r["batch"] >= 1 for r in rows)
    assert all(r["prompt_tokens"] > 1000 and r["output_tokens"] == len(r["raw_output"]) for r in rows)
    frames = list((tmp_path / "o" / "artifacts" / "frames").rglob("*.jpg"))
    if record is False:
        assert not frames and all("images" not in r for r in rows)
        return
    assert all(len(r["images"]) == 1 and (tmp_path / "o" / r["images"][0]["path"]).is_file() for r in rows)
    assert len(frames) == len({r["images"][0]["sha256"] for r in rows})


def test_a_store_without_the_meta_column_reads_and_migrates(tmp_path):
    from harness.types import EpisodeRecord

    with ResultStore(tmp_path) as store:
        store.add(EpisodeRecord("r", "v", "s", "a", "e0", 0), [{"call": 0, "step": 0, "raw_output": "x"}])
    db = sqlite3.connect(tmp_path / "results.sqlite")
    with db:
        db.execute("ALTER TABLE transcripts DROP COLUMN meta")
        db.execute("ALTER TABLE transcripts DROP COLUMN crc")  # nor row checksums (they came later)
    db.close()
    with ResultStore(tmp_path, readonly=True) as store:
        assert store.transcripts()[0]["raw_output"] == "x"
    with ResultStore(tmp_path) as store:  # opened for writing: the column comes back
        store.add(EpisodeRecord("r", "v", "s", "a", "e1", 0), [{"call": 0, "raw_output": "y", "latency_s": 0.5}])
        assert [t.get("latency_s") for t in store.transcripts()] == [None, 0.5]


@pytest.mark.parametrize("value,expected", [("true", True), ("false", False), (None, None)])
def test_record_images_reaches_the_run_spec_from_the_command_line(tmp_path, value, expected):
    import json

    from harness.cli.entry import main

    out = tmp_path / "o"
    args = ["run", "planner=oracle", "split=seen", "limit=1", f"out={out}", "progress=false"]
    assert main(args + ([f"record_images={value}"] if value else [])) == 0
    with ResultStore(out, readonly=True) as store:
        (spec,) = store.runs()["spec"]
    assert json.loads(spec)["record_images"] is expected
