"""How the model backends send a clip (``{"type": "video", "video": Clip}``, harness/util/media.py).

``hf`` (``video_form``):

* ``video`` (default): the clip goes to the checkpoint's own video processor as one video
  (``processor(videos=[frames], video_metadata=[...], do_sample_frames=False)``): the
  processor does not sample again, and the metadata says where the frames come from
  (:meth:`harness.util.media.Clip.metadata`): Qwen3-VL writes each temporal patch's timestamp
  from the frame numbers and the source's rate (transformers
  models/qwen3_vl/processing_qwen3_vl.py ``_calculate_timestamps``: index / fps), the numbers
  counted from the clip's first frame, so the times are seconds from the clip's start, and
  Qwen2.5-VL spaces its temporal position ids by ``temporal_patch_size / sampled_fps``
  (models/qwen2_5_vl/processing_qwen2_5_vl.py ``_process_videos``), for which the metadata
  handed over reports the clip's own rate exactly (:func:`clip_metadata`). transformers'
  video processors need torchvision; a processor without one is refused in one line.
* ``frames``: the clip's frames as image parts, in order (a multi-image prompt; the
  model sees images, not a video).

``openai`` (``video_form``):

* ``frames`` (default): one ``image_url`` part per frame (a PNG data URL each), in order.
  Every server that takes several images in one message reads it (vLLM, with
  ``--limit-mm-per-prompt`` allowing that many images; SGLang; ``transformers serve``),
  and the model sees exactly the clip's frames, as images.
* ``video_jpeg``: one ``video_url`` part whose URL is ``data:video/jpeg;base64,`` followed
  by the frames as base64 JPEGs joined by commas: vLLM's form for frames sampled by the
  client (vllm-project/vllm c30af8668c06a53ca6757f992f8bf9125e3fdd41,
  vllm/multimodal/media/video.py ``VideoMediaIO.load_base64``: a ``video/jpeg`` data URL is
  split at the commas and each part decoded as one JPEG frame). The model's video
  processor on the server sees exactly these frames as one video, JPEG-compressed; vLLM
  passes no frame rate with them (the metadata it returns is empty), so the timestamps a
  model derives are its processor's defaults, not the clip's. SGLang does not read this
  form (it decodes a ``video_url`` as a video file): use ``frames`` there.
"""

from __future__ import annotations

import base64
import io
from typing import Any, Sequence

#: The ``hf`` backend's forms, the default first.
HF_FORMS = ("video", "frames")
#: The ``openai`` backend's forms, the default first.
OPENAI_FORMS = ("frames", "video_jpeg")
#: JPEG quality of the ``video_jpeg`` form's frames.
JPEG_QUALITY = 95

Messages = list[dict[str, Any]]


def has_video(conversations: Sequence[Messages]) -> bool:
    return any(isinstance(m.get("content"), list) and any(p.get("type") == "video" for p in m["content"])
               for conv in conversations for m in conv)


def frames_as_images(messages: Messages) -> Messages:
    """The messages with each video part replaced by its frames as image parts."""
    out = []
    for m in messages:
        content = m.get("content")
        if not isinstance(content, list):
            out.append(m)
            continue
        parts: list[dict[str, Any]] = []
        for p in content:
            parts += p["video"].image_parts() if p.get("type") == "video" else [p]
        out.append({**m, "content": parts})
    return out


def split_media(conversations: Sequence[Messages]) -> tuple[list[Messages], list[Any], list[Any]]:
    """(the conversations with bare ``{"type": "image"}`` / ``{"type": "video"}`` placeholders for
    the chat template, every image in order, every clip in order)."""
    stripped: list[Messages] = []
    images: list[Any] = []
    clips: list[Any] = []
    for conv in conversations:
        new_conv = []
        for m in conv:
            content = m.get("content")
            if not isinstance(content, list):
                new_conv.append(m)
                continue
            parts = []
            for p in content:
                if p.get("type") == "image":
                    images.append(p["image"])
                    parts.append({"type": "image"})
                elif p.get("type") == "video":
                    clips.append(p["video"])
                    parts.append({"type": "video"})
                else:
                    parts.append(p)
            new_conv.append({**m, "content": parts})
        stripped.append(new_conv)
    return stripped, images, clips


_METADATA_CLASS: Any = None


def clip_metadata(clip: Any) -> Any:
    """transformers' ``VideoMetadata`` of ``clip`` (:meth:`harness.util.media.Clip.metadata`) whose
    ``sampled_fps`` is the clip's rate exactly (the base class derives it from frame counts,
    which rounding can move off the rate: Qwen2.5-VL's temporal position ids truncate it)."""
    global _METADATA_CLASS
    if _METADATA_CLASS is None:
        from transformers.video_utils import VideoMetadata

        class ClipMetadata(VideoMetadata):
            @property
            def sampled_fps(self) -> float:
                rate = getattr(self, "_clip_rate", None)
                return float(rate) if rate else VideoMetadata.sampled_fps.fget(self)  # type: ignore[attr-defined]

        _METADATA_CLASS = ClipMetadata
    meta = _METADATA_CLASS(**clip.metadata())
    meta._clip_rate = clip.rate
    return meta


def hf_video_inputs(processor: Any, conversations: Sequence[Messages]) -> Any:
    """The processor's inputs for conversations holding clips: each clip one video of the
    model's own video processor, not sampled again (module docstring)."""
    if getattr(processor, "video_processor", None) is None:
        raise ValueError("this checkpoint's processor has no video processor (transformers' video processors need "
                         "torchvision): install torchvision, or set planner.params.video_form=frames to send the "
                         "clip's frames as images")
    stripped, images, clips = split_media(conversations)
    texts = processor.apply_chat_template(stripped, add_generation_prompt=True, tokenize=False)
    if isinstance(texts, str):
        texts = [texts]
    return processor(text=list(texts), images=images or None, videos=[list(c.frames) for c in clips],
                     video_metadata=[clip_metadata(c) for c in clips], do_sample_frames=False,
                     padding=True, return_tensors="pt")


def openai_video_parts(clip: Any, form: str, png_data_url: Any) -> list[dict[str, Any]]:
    """The OpenAI chat content parts of ``clip`` in ``form`` (module docstring)."""
    if form == "frames":
        return [{"type": "image_url", "image_url": {"url": png_data_url(f)}} for f in clip.frames]
    if form == "video_jpeg":
        return [{"type": "video_url", "video_url": {"url": jpeg_frames_data_url(clip.frames)}}]
    raise ValueError(f"unknown video_form {form!r} (one of {', '.join(OPENAI_FORMS)})")


def jpeg_frames_data_url(frames: Sequence[Any]) -> str:
    """``data:video/jpeg;base64,<frame>,<frame>,...`` (vLLM's frames-as-video data URL)."""
    out = []
    for frame in frames:
        buf = io.BytesIO()
        frame.convert("RGB").save(buf, format="JPEG", quality=JPEG_QUALITY)
        out.append(base64.b64encode(buf.getvalue()).decode("ascii"))
    return "data:video/jpeg;base64," + ",".join(out)
