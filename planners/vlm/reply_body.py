"""A chat-completion body read with a size limit: the ``openai`` backend's reply, bounded.

The ``openai`` client reads a whole response body into memory before it parses it, so a
server that answers 200 MB (a broken server, a model looping on one token without a token
limit, a proxy's error page) costs the process that much and more. The backend asks the
client for the body as a stream of chunks instead (``with_streaming_response`` and
``iter_bytes``: the client's own way to read a body piece by piece, with its retries and
timeouts unchanged) and gives the chunks to :func:`read_reply`, which stops reading once it
holds more than ``max_chars`` characters of the message or :func:`body_limit` bytes.

The text is redacted before it is cut (:func:`harness.util.redact.redact_cut`): a key the server
repeats across the ``max_chars`` boundary is replaced whole, and a key whose end never arrived
(the body cut in transit) has its first characters redacted, so no prefix of a credential is
kept in any form.

What a cut body becomes: the prefix of the message's text that arrived (at most
``max_chars`` characters), flagged ``truncated``; the token counts are then unknown (they
come after the text). The suite's parser reads the prefix like any reply, so a plan whose
first entries arrived is still parsed where the parser recovers entries from a truncated
output, and is an output error where it cannot. A body cut before any
message text arrived (no ``choices[0].message.content`` in its first bytes) raises
:class:`ReplyTooLarge`: that call is an agent error, there is no reply text to keep.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

from harness.util.redact import redact_cut

#: Room for everything in a body besides the message text (id, model, usage, role, ...).
OVERHEAD_BYTES = 64 * 1024
#: The most bytes one character of the text can take in a JSON body: ``\\ud83d\\ude00``,
#: the escaped form of one character outside the Basic Multilingual Plane.
BYTES_PER_CHAR_BOUND = 12

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(strict=False)
#: Where the text is in a chat completion: ``choices[0].message.content``.
_CONTENT_PATH = ("choices", 0, "message", "content")


class ReplyTooLarge(ValueError):
    """A body past the limit with no message text in the part that was read."""


@dataclass(frozen=True)
class BoundedReply:
    """A reply's text (at most ``max_chars`` characters), its token counts where the body
    had them, and whether the text was cut (the server sent more than was kept)."""

    text: str
    prompt_tokens: Any = None
    completion_tokens: Any = None
    truncated: bool = False


def body_limit(max_chars: int) -> int:
    """The most bytes read of one body: a text of ``max_chars`` characters always fits."""
    return int(max_chars) * BYTES_PER_CHAR_BOUND + OVERHEAD_BYTES


def read_reply(chunks: Iterable[bytes], max_chars: int) -> BoundedReply:
    """Read a chat-completion body from ``chunks`` until it ends, or until the message text
    holds more than ``max_chars`` characters, or :func:`body_limit` bytes were read.

    The text is looked at only at byte counts that double from ``max_chars`` plus the
    overhead (one character takes one byte or more), so the work stays linear in the
    bytes read and a plain-text reply past the limit costs about ``max_chars`` bytes.
    """
    max_chars = int(max_chars)
    hard = body_limit(max_chars)
    check = min(hard, max_chars + OVERHEAD_BYTES)
    buf = bytearray()
    for chunk in chunks:
        buf += chunk
        if len(buf) < check:
            continue
        if len(buf) >= hard:
            return _cut(bytes(buf), max_chars)
        found = content_prefix(bytes(buf))
        if found is not None and (found[1] or len(found[0]) > max_chars):
            # The whole text is in (a body made huge by other fields) or more than enough of it.
            return _cut(bytes(buf), max_chars)
        check = min(hard, check * 2)
    return _complete(bytes(buf), max_chars)


def _parse_int(digits: str) -> Any:
    """A JSON integer; None for one longer than 30 digits (Python refuses to convert more than
    4300 digits, which would lose the reply's text over a usage count)."""
    return int(digits) if len(digits) <= 30 else None


def _complete(body: bytes, max_chars: int) -> BoundedReply:
    try:
        data = json.loads(body, parse_int=_parse_int)
        content = data["choices"][0]["message"].get("content")
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        head = redact_cut(body[:120].decode("utf-8", errors="replace"))  # cut in transit: its tail too
        raise ValueError(f"the server's reply is not a chat completion ({type(exc).__name__}): {head!r}") from None
    text = content if isinstance(content, str) else ""
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    kept = redact_cut(text, max_chars)  # redacted, then cut: a key across the cut leaves nothing
    return BoundedReply(kept, usage.get("prompt_tokens"), usage.get("completion_tokens"),
                        truncated=len(text) > max_chars)


def _cut(body: bytes, max_chars: int) -> BoundedReply:
    found = content_prefix(body)
    if found is None:
        raise ReplyTooLarge(f"the server's reply passed {len(body)} bytes before any message text "
                            f"(max_reply_chars={max_chars}); nothing kept")
    text, closed = found
    # Token counts come after the text in a chat completion: unknown once the body is cut. The
    # text is redacted before its cut, and its end (a key cut in transit) too.
    return BoundedReply(redact_cut(text, max_chars), truncated=not closed or len(text) > max_chars)


def content_prefix(body: bytes) -> tuple[str, bool] | None:
    """``(text, closed)``: what arrived of ``choices[0].message.content`` in the first bytes
    ``body`` of a chat completion (``closed``: the whole string), or None when the text has
    not begun (or the bytes are not the start of a chat completion)."""
    s = _decode_prefix(body)
    i = _ws(s, 0)
    try:
        return _walk(s, i, _CONTENT_PATH)
    except (ValueError, IndexError):
        return None


def _decode_prefix(body: bytes) -> str:
    """``body`` as text; a character cut in half at the end is dropped."""
    for cut in range(4):
        try:
            return body[:len(body) - cut].decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(body) - 4:
                break
    return body.decode("utf-8", errors="replace")


def _ws(s: str, i: int) -> int:
    return _WS.match(s, i).end()  # type: ignore[union-attr]


def _walk(s: str, i: int, path: tuple) -> tuple[str, bool] | None:
    """Follow ``path`` from the value starting at ``s[i]``."""
    if not path:
        if s.startswith("null", i):
            return "", True
        if s[i:i + 1] != '"':
            return None
        return _string_prefix(s, i + 1)
    step = path[0]
    if isinstance(step, int):  # the first element of an array
        if s[i:i + 1] != "[":
            return None
        return _walk(s, _ws(s, i + 1), path[1:])
    if s[i:i + 1] != "{":
        return None
    i = _ws(s, i + 1)
    while i < len(s) and s[i] != "}":
        if s[i] != '"':
            return None
        key, i = json.decoder.scanstring(s, i + 1)  # raises on a key cut in half
        i = _ws(s, i)
        if s[i:i + 1] != ":":
            return None
        i = _ws(s, i + 1)
        if key == step:
            return _walk(s, i, path[1:])
        _, i = _DECODER.raw_decode(s, i)  # another field: skipped whole (raises if cut)
        i = _ws(s, i)
        if s[i:i + 1] == ",":
            i = _ws(s, i + 1)
    return None


def _string_prefix(s: str, start: int) -> tuple[str, bool] | None:
    """The JSON string whose characters begin at ``s[start]``: whole, or what arrived of it."""
    try:
        text, _ = json.decoder.scanstring(s, start, False)
        return text, True
    except ValueError:
        pass  # no closing quote: the body was cut inside the string
    rest = s[start:]
    # Drop an escape cut in half at the end (``\\``, ``\\u00``, a surrogate pair's first half).
    for cut in range(min(len(rest), BYTES_PER_CHAR_BOUND) + 1):
        try:
            text = json.loads('"' + rest[:len(rest) - cut] + '"', strict=False)
        except ValueError:
            continue
        if text and "\ud800" <= text[-1] <= "\udbff":  # half a pair: the other half was cut
            text = text[:-1]
        return text, False
    return None


# --- a model listing (``GET /models``), bounded --------------------------------------------
#: The most bytes of a model listing read: a vLLM entry is about 300 bytes, so thousands of
#: models and adapters fit; a listing past it is not read further.
MAX_LISTING_BYTES = 4 * 2**20
#: The most entries (``data`` items) of a model listing kept.
MAX_LISTING_ENTRIES = 10_000


class ListingTooLarge(ValueError):
    """A model listing past :data:`MAX_LISTING_BYTES` bytes or :data:`MAX_LISTING_ENTRIES` entries."""


def read_listing(chunks: Iterable[bytes], max_bytes: int = MAX_LISTING_BYTES,
                 max_entries: int = MAX_LISTING_ENTRIES) -> list[dict]:
    """The entries of an OpenAI-style model listing (``{"data": [{"id": ...}, ...]}``) read from
    ``chunks``: at most ``max_bytes`` bytes are read and at most about ``max_entries`` entries'
    objects built (the parse stops at the first object past that), so neither the time to parse
    nor the memory depends on what the server sends. Raises :class:`ListingTooLarge` past
    either, ``ValueError`` for a body that is not a listing."""
    buf = bytearray()
    for chunk in chunks:
        buf += chunk
        if len(buf) > max_bytes:
            raise ListingTooLarge(f"more than {max_bytes} bytes")
    # Each entry is an object, and may hold a few more (vLLM's ``permission``): the parse stops
    # once it has built far more objects than the entries allowed.
    built = [0]
    most = 8 * int(max_entries) + 8

    def counted(obj: dict) -> dict:
        built[0] += 1
        if built[0] > most:
            raise ListingTooLarge(f"more than {max_entries} entries")
        return obj

    try:
        data = json.loads(bytes(buf), object_hook=counted, parse_int=_parse_int)
    except ListingTooLarge:
        raise
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"the model listing is not JSON ({type(exc).__name__})") from None
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError("the model listing has no data list")
    if len(entries) > max_entries:
        raise ListingTooLarge(f"more than {max_entries} entries")
    return [e for e in entries if isinstance(e, dict)]
