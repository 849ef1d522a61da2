"""Video clips through the ``vlm`` planner's backends (planners/vlm/video.py): a tiny random-weight
Qwen2.5-VL and Qwen3-VL receive a generated video, and the frames sent are exactly those the
declared sampling picks (each frame of the video codes its own index)."""

from __future__ import annotations

import base64
import io
import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="the tiny VLM checkpoints need the `models` extra")
pytest.importorskip("av", reason="reading videos needs PyAV (the `video` / `models` extra)")

from harness.util.media import Clip, load_clip  # noqa: E402
from harness.promptkit.prompting import transcript_form  # noqa: E402
from tests.helpers import chat_completion, send_json  # noqa: E402
from tests.media_helpers import counting_video, frame_index  # noqa: E402

FAMILIES = ("qwen2_5_vl", "qwen3_vl")
QUESTION = "find a Apple"


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from tests.planners.tiny_vlm import build_base

    root = tmp_path_factory.mktemp("tiny_video")
    return {f: build_base(root / f, f, seed=7 + i) for i, f in enumerate(FAMILIES)}


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Clip:
    """3 s at 10 fps (30 frames of 112 x 112), sampled at 2 fps from 1 s, at most 4 frames."""
    path = counting_video(tmp_path_factory.mktemp("video") / "count.mp4", frames=30, fps=10, size=(112, 112))
    out = load_clip(path, fps=2.0, max_frames=4, start=1.0)
    assert list(out.indices) == [10, 15, 20, 25]
    return out


def conversation(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [*parts, {"type": "text", "text": QUESTION}]}]


def video_part(clip: Clip) -> dict[str, Any]:
    return {"type": "video", "video": clip}


# --- hf ---------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_hf_frames_form_gives_the_model_the_sampled_frames(ckpts: dict[str, Path], clip: Clip, family: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from planners.vlm.backends import HFBackend

    backend = HFBackend(str(ckpts[family]), max_new_tokens=2, video_form="frames")
    seen: list[Any] = []
    original = backend.processor.apply_chat_template

    def spy(conversations: Any, *args: Any, **kwargs: Any) -> Any:
        seen.extend(conversations)
        return original(conversations, *args, **kwargs)

    monkeypatch.setattr(backend.processor, "apply_chat_template", spy)
    text_only, one_image, with_clip = (backend.generate([c])[0].usage["prompt_tokens"] for c in (
        conversation(), conversation({"type": "image", "image": clip.frames[0]}), conversation(video_part(clip))))
    # What the processor was given for the clip: its frames as images, in order, the sampled ones.
    images = [p["image"] for p in seen[-1][0]["content"] if p["type"] == "image"]
    assert [frame_index(im) for im in images] == list(clip.indices)
    # And the model read them all: the prompt grew by one image's tokens per frame.
    assert with_clip - text_only == len(clip) * (one_image - text_only) > 0
    # The default form leaves the identity as it was; another form is in it.
    assert backend.identity()["video_form"] == "frames"


def test_hf_video_form_refuses_a_processor_without_video_half(ckpts: dict[str, Path], clip: Clip) -> None:
    from planners.vlm.backends import HFBackend

    backend = HFBackend(str(ckpts["qwen2_5_vl"]), max_new_tokens=2)
    assert "video_form" not in backend.identity()  # the default: run ids of runs without clips unchanged
    if getattr(backend.processor, "video_processor", None) is not None:
        pytest.skip("this checkpoint's processor has a video processor here")
    with pytest.raises(ValueError, match=r"no video processor \(.*video_form=frames"):
        backend.generate([conversation(video_part(clip))])


def _with_stock_video_processor(src: Path, family: str, out: Path) -> Path:
    """A copy of the tiny checkpoint with transformers' own processor for ``family``, video half
    included (needs torchvision)."""
    import transformers
    from transformers import AutoImageProcessor, AutoTokenizer

    from tests.planners.tiny_vlm import CHAT_TEMPLATE, MAX_PIXELS, MIN_PIXELS

    shutil.copytree(src, out)
    for name in ("image_only_processor.py", "processor_config.json", "preprocessor_config.json"):
        (out / name).unlink(missing_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(src)
    cfg = json.loads((out / "tokenizer_config.json").read_text())
    cfg.pop("auto_map", None)
    (out / "tokenizer_config.json").write_text(json.dumps(cfg))
    image = AutoImageProcessor.from_pretrained(src)
    if family == "qwen3_vl":
        video = transformers.Qwen3VLVideoProcessor(size={"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS},
                                                   patch_size=16, image_mean=[0.5] * 3, image_std=[0.5] * 3)
        processor = transformers.Qwen3VLProcessor(image_processor=image, tokenizer=tokenizer, video_processor=video,
                                                  chat_template=CHAT_TEMPLATE)
    else:
        video = transformers.Qwen2VLVideoProcessor(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
        processor = transformers.Qwen2_5_VLProcessor(image_processor=image, tokenizer=tokenizer,
                                                     video_processor=video, chat_template=CHAT_TEMPLATE)
    processor.save_pretrained(out)
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_hf_video_form_through_the_models_video_processor(ckpts: dict[str, Path], clip: Clip, family: str,
                                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torchvision", reason="transformers' video processors need torchvision")
    from planners.vlm.backends import HFBackend

    ckpt = _with_stock_video_processor(ckpts[family], family, tmp_path / family)
    backend = HFBackend(str(ckpt), max_new_tokens=2)
    assert backend.processor.video_processor is not None
    calls: list[dict[str, Any]] = []
    outputs: list[Any] = []
    processor_cls = type(backend.processor)
    original = processor_cls.__call__

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        out = original(self, *args, **kwargs)
        outputs.append(out)
        return out

    monkeypatch.setattr(processor_cls, "__call__", spy)
    reply = backend.generate([conversation(video_part(clip))])[0]
    assert isinstance(reply, str)
    (call,) = [c for c in calls if c.get("videos")]
    (frames,) = call["videos"]
    assert [frame_index(f) for f in frames] == list(clip.indices)  # the sampled frames, not sampled again
    assert call["do_sample_frames"] is False
    (meta,) = call["video_metadata"]
    # numbered from the clip's first frame (frame 10 at 1 s): Qwen3-VL's index / fps is clip time
    assert meta.frames_indices == [i - 10 for i in clip.indices] and meta.fps == pytest.approx(clip.source_fps)
    out = outputs[-1]
    assert int(out["video_grid_thw"][0][0]) == len(clip) // 2  # temporal patches of 2 frames
    if family == "qwen2_5_vl":  # temporal position ids spaced by the clip's own rate
        assert out["second_per_grid_ts"] == pytest.approx([2 / clip.rate])
    else:  # Qwen3-VL writes each temporal patch's time: seconds from the clip's start, not the source's
        text = backend.processor.tokenizer.decode(out["input_ids"][0])
        stamps = [(clip.timestamps[i] + clip.timestamps[i + 1]) / 2 - clip.start for i in range(0, len(clip), 2)]
        assert stamps == pytest.approx([0.25, 1.25])  # frames at 1.0, 1.5 | 2.0, 2.5 s of the source
        for t in stamps:
            assert f"<{t:.1f} seconds>" in text


# --- openai -----------------------------------------------------------------------------
class Recorder:
    """A loopback chat-completions server that keeps each request body and answers a fixed text."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        rec = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                rec.bodies.append(json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0)))))
                send_json(self, chat_completion("m", "ok", usage={"prompt_tokens": 1, "completion_tokens": 1,
                                                                  "total_tokens": 2}))

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def recorder():
    rec = Recorder()
    try:
        yield rec
    finally:
        rec.close()


def _decode(data: str) -> Any:
    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(data)))


def test_openai_frames_form_sends_one_image_per_sampled_frame(recorder: Recorder, clip: Clip) -> None:
    pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
    from planners.vlm.backends import OpenAIBackend

    backend = OpenAIBackend("m", base_url=recorder.base_url, max_retries=0)
    assert "video_form" not in backend.identity()  # the default: run ids of runs without clips unchanged
    assert backend.generate([conversation(video_part(clip))]) == ["ok"]
    (content,) = [m["content"] for m in recorder.bodies[-1]["messages"]]
    assert [p["type"] for p in content] == ["image_url"] * len(clip) + ["text"]
    urls = [p["image_url"]["url"] for p in content[:-1]]
    assert all(u.startswith("data:image/png;base64,") for u in urls)
    assert [frame_index(_decode(u.partition(",")[2])) for u in urls] == list(clip.indices)


def test_openai_video_jpeg_form_is_vllms_frame_list(recorder: Recorder, clip: Clip) -> None:
    pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
    from planners.vlm.backends import OpenAIBackend

    backend = OpenAIBackend("m", base_url=recorder.base_url, max_retries=0, video_form="video_jpeg")
    assert backend.identity()["video_form"] == "video_jpeg"
    backend.generate([conversation(video_part(clip))])
    (content,) = [m["content"] for m in recorder.bodies[-1]["messages"]]
    assert [p["type"] for p in content] == ["video_url", "text"]
    url = content[0]["video_url"]["url"]
    # Read as vLLM reads it: the media type, then the frames split at the commas, one JPEG each.
    head, _, data = url.partition(",")
    assert head == "data:video/jpeg;base64"
    frames = [_decode(part) for part in data.split(",")]
    assert all(f.format == "JPEG" for f in frames)
    assert [frame_index(f) for f in frames] == list(clip.indices)


def test_a_bad_video_form_is_refused() -> None:
    pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
    from harness.params import ParamError, parse
    from planners.plugin import OpenAIParams

    with pytest.raises((ParamError, ValueError), match="video_form"):
        parse(OpenAIParams, {"base_url": "http://127.0.0.1:1/v1", "video_form": "mp4"})


def test_the_transcript_keeps_where_the_frames_come_from(clip: Clip) -> None:
    (message,) = transcript_form(conversation(video_part(clip)))
    part = message["content"][0]
    assert part["type"] == "video" and part["frames"] == len(clip) and part["size"] == [112, 112]
    assert part["timestamps"] == pytest.approx(list(clip.timestamps)) and part["sampling"] == dict(clip.sampling)
    json.dumps(part)  # stored as JSON


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("family", FAMILIES)
def test_openai_frames_through_transformers_serve(ckpts: dict[str, Path], clip: Clip, family: str,
                                                  tmp_path: Path) -> None:
    """A real OpenAI-compatible server (``transformers serve``) runs the tiny model on the clip's frames."""
    pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
    pytest.importorskip("fastapi", reason="`transformers serve` needs transformers[serving]")
    from planners.vlm.backends import OpenAIBackend
    from tests.planners.test_vlm_openai import Server, _free_port

    server = Server(ckpts[family], _free_port(), tmp_path / "serve.log").start()
    try:
        backend = OpenAIBackend(str(ckpts[family]), base_url=server.base_url, max_new_tokens=2, max_retries=1)
        text_only, one_image, with_clip = (backend.generate([c])[0].usage["prompt_tokens"] for c in (
            conversation(), conversation({"type": "image", "image": clip.frames[0]}),
            conversation(video_part(clip))))
        assert with_clip - text_only == len(clip) * (one_image - text_only) > 0
    finally:
        server.stop()


def test_qwen3_vl_writes_seconds_from_the_clips_start(clip: Clip) -> None:
    """transformers' own timestamp rule (Qwen3VLProcessor._calculate_timestamps: index / fps, the
    mean of each temporal patch of 2) on the metadata the hf backend hands over: the clip starts at
    1 s of its source, and its patches are stamped 0.25 s and 1.25 s (not 1.25 s and 2.25 s)."""
    from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor

    meta = clip.metadata()
    stamps = Qwen3VLProcessor._calculate_timestamps(None, list(meta["frames_indices"]), meta["fps"], 2)
    assert stamps == pytest.approx([0.25, 1.25])
