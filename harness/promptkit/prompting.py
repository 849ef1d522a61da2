"""Helpers for :class:`harness.interfaces.PromptAdapter` implementations and the planners that
drive them: images into conversations, the transcript form of a conversation, the reply-length
bound, and the loop that serves a batch of requests through one model call."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from harness.interfaces import AgentReply, AgentRequest, Conversation, PromptAdapter

#: A token of any tokenizer we know decodes to at most this many characters (long
#: whitespace runs included); ``max_new_tokens`` tokens bound a reply's length.
CHARS_PER_TOKEN_BOUND = 64


def max_output_chars(max_new_tokens: int) -> int:
    """The longest text a model limited to ``max_new_tokens`` can return."""
    return max(1, int(max_new_tokens)) * CHARS_PER_TOKEN_BOUND


def to_pil(image: Any, size: int | None) -> Any:
    """An RGB PIL image resized to ``size`` x ``size`` (None: as is), or None."""
    if image is None:
        return None
    from PIL import Image

    pil = image if isinstance(image, Image.Image) else Image.fromarray(image)
    pil = pil.convert("RGB")
    if size and pil.size != (size, size):
        pil = pil.resize((size, size), Image.BICUBIC)
    return pil


def transcript_form(messages: Conversation) -> list[dict[str, Any]]:
    """The messages with images replaced by their size and clips by their frame times (what the
    transcripts keep)."""
    out = []
    for m in messages:
        parts = []
        for p in m["content"]:
            if p.get("type") == "image":
                parts.append({"type": "image", "size": list(p["image"].size)})
            elif p.get("type") == "video":  # a clip (harness/util/media.py): where its frames come from
                clip = p["video"]
                parts.append({"type": "video", "frames": len(clip), "size": list(clip.size),
                              "source": clip.source, "timestamps": [round(t, 6) for t in clip.timestamps],
                              "sampling": dict(clip.sampling)})
            else:
                parts.append(p)
        out.append({"role": m["role"], "content": parts})
    return out


#: ``generate(conversations, schema) -> texts``: one batched model call.
Generate = Callable[[list[Conversation], "Mapping[str, Any] | None"], Sequence[str]]


def serve(adapter: PromptAdapter, requests: Sequence[AgentRequest], generate: Generate) -> list[AgentReply]:
    """Each request's reply: the adapter's own where it needs no model, else one ``generate``
    call for all the others (in request order), each text read back by the adapter."""
    replies: list[Any] = [None] * len(requests)
    pending: list[tuple[int, Conversation]] = []
    for i, r in enumerate(requests):
        step = adapter.messages(r)
        if isinstance(step, AgentReply):
            replies[i] = step
        else:
            pending.append((i, step))
    if pending:
        texts = generate([conv for _, conv in pending], adapter.schema)
        for (i, conv), text in zip(pending, texts):
            replies[i] = adapter.reply(requests[i], text, conv)
    return replies
