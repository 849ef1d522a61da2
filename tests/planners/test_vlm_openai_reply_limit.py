"""Bounded replies: the ``openai`` backend reads a reply's body with a size limit and keeps at
most ``max_reply_chars`` characters of it, the cut flagged in the transcript and the record.

Real components throughout: a loopback ``http.server`` answering chat completions of many
MB, the ``openai`` client, the EB-ALFRED suite, prompt and parser, the runner and a SQLite
store."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.helpers import chat_completion

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")

from envs.eb_alfred.suite import EBAlfredSuite  # noqa: E402
from harness.run.runner import Runner  # noqa: E402
from harness.store import ResultStore  # noqa: E402
from harness.types import RunSpec  # noqa: E402
from planners.vlm.backends import OpenAIBackend  # noqa: E402
from planners.vlm.planner import VLMPlanner  # noqa: E402
from planners.vlm.reply_body import OVERHEAD_BYTES, ReplyTooLarge, content_prefix, read_reply  # noqa: E402

MB = 1 << 20


class Server:
    """Answers every POST with ``body``, written in 64 KiB pieces; ``written`` counts the bytes
    the client took before it hung up."""

    def __init__(self, body: bytes) -> None:
        self.body, self.written, self.requests = body, 0, 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(server.body)))
                self.end_headers()
                view = memoryview(server.body)
                try:
                    for i in range(0, len(view), 65536):
                        self.wfile.write(view[i:i + 65536])
                        server.written += len(view[i:i + 65536])
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def body_of(content: str, **extra) -> bytes:
    return json.dumps(chat_completion("m", content, **extra)).encode()


def plan_of(n_entries: int) -> str:
    """An EB-ALFRED plan whose ``executable_plan`` comes first, ``n_entries`` long."""
    entries = ", ".join(json.dumps({"action_id": i % 5, "action_name": f"action {i % 5}"}) for i in range(n_entries))
    return '{"executable_plan": [' + entries + '], "visual_state_description": "", ' \
           '"reasoning_and_reflection": "", "language_plan": ""}'


def backend(url: str, max_reply_chars: int) -> OpenAIBackend:
    return OpenAIBackend("m", base_url=url, max_retries=0, max_reply_chars=max_reply_chars)


def test_a_reply_of_many_mb_is_read_only_up_to_the_limit():
    """A 64 MB reply with max_reply_chars=1,000: the text kept is its first 1,000 characters,
    flagged; the client stops reading (the server manages to write only what socket buffers
    hold beyond the bytes read). Mutations caught: the body read whole (``read_reply``'s byte
    checks removed: the server writes all 64 MB), the text not cut (``[:max_chars]`` dropped)."""
    content = "y" * (64 * MB)
    with Server(body_of(content)) as srv:
        b = backend(srv.base_url, 1_000)
        (reply,) = b.generate([[{"role": "user", "content": "hi"}]])
        b.close()
    assert str(reply) == content[:1_000]
    assert reply.output_truncated is True
    assert reply.usage == {}  # the counts come after the text: unknown once the body is cut
    assert srv.requests == 1  # a cut body is not an error the client retries
    assert srv.written < 32 * MB, srv.written


def test_a_reply_over_the_limit_in_a_complete_body_is_cut_exactly():
    """A body under the byte limit whose text is longer than max_reply_chars: the first
    max_reply_chars characters (multi-byte ones included), flagged; the counts are kept."""
    content = "é😀a" * 2_000
    usage = {"prompt_tokens": 7, "completion_tokens": 9, "total_tokens": 16}
    with Server(body_of(content, usage=usage)) as srv:
        b = backend(srv.base_url, 1_001)
        (reply,) = b.generate([[{"role": "user", "content": "hi"}]])
        b.close()
    assert str(reply) == content[:1_001] and reply.output_truncated is True
    assert reply.usage == {"prompt_tokens": 7, "output_tokens": 9}


def test_a_normal_reply_is_untouched():
    """Mutation caught: a cut or a flag on a reply within the limit (``truncated=True`` always)."""
    content = plan_of(3) + "\n\u00e9\\ \"quoted\""
    with Server(body_of(content, usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3})) as srv:
        b = backend(srv.base_url, len(content))
        (reply,) = b.generate([[{"role": "user", "content": "hi"}]])
        b.close()
    assert str(reply) == content and reply.output_truncated is False
    assert reply.usage == {"prompt_tokens": 1, "output_tokens": 2}


def test_a_cut_body_without_message_text_is_an_error():
    """4 MB of another field before the message: nothing to keep, one-line error."""
    body = json.dumps({"system_fingerprint": "x" * (4 * MB), **chat_completion("m", "late")}).encode()
    with Server(body) as srv:
        b = backend(srv.base_url, 1_000)
        with pytest.raises(ReplyTooLarge, match="before any message text"):
            b.generate([[{"role": "user", "content": "hi"}]])
        b.close()


@pytest.mark.parametrize("content", ['ab\\c"d\ne\u00e9\U0001F600f\u0001' * 3, "\U0001F600" * 5, ""])
def test_every_cut_of_a_body_gives_a_prefix_of_the_text(content):
    """Cut at every byte, a body yields a prefix of its text (an escape, a UTF-8 character or a
    surrogate pair cut in half is dropped, never garbled), and the whole text once it is in.
    Mutation caught: a surrogate half kept (the pair check removed)."""
    body = body_of(content)
    for ascii_only in (True, False):
        if not ascii_only:
            body = json.dumps(chat_completion("m", content), ensure_ascii=False).encode()
        seen_start = False
        for k in range(len(body) + 1):
            found = content_prefix(body[:k])
            if found is None:
                assert not seen_start, k
                continue
            seen_start = True
            text, closed = found
            assert content.startswith(text), (k, text)
            text.encode("utf-8")  # no lone surrogate
            if closed:
                assert text == content
        assert content_prefix(body) == (content, True)


def test_the_reader_stops_near_the_limit_for_plain_text():
    """Plain text past the limit: about max_chars + 64 KiB bytes taken from the stream."""
    body = body_of("z" * (8 * MB))
    taken = 0

    def chunks():
        nonlocal taken
        for i in range(0, len(body), 4096):
            taken += 4096
            yield body[i:i + 4096]

    reply = read_reply(chunks(), 100_000)
    assert reply.text == "z" * 100_000 and reply.truncated
    assert taken <= 100_000 + OVERHEAD_BYTES + 4096


def run_episode(tmp_path: Path, url: str, max_reply_chars: int, parser: str = "embodiedbench"
                ) -> tuple[list[dict], dict]:
    planner = VLMPlanner(suite="eb_alfred", backend="openai", model="m", base_url=url, max_retries=0,
                         max_new_tokens=64, num_examples=0, image_size=112, max_reply_chars=max_reply_chars,
                         json_schema="false", parser=parser)
    params = {"render": False, "generated_per_split": 1}
    spec = RunSpec(suite="eb_alfred", split="seen", agent="vlm", variant="t", limit=1, batch_size=1,
                   suite_params=params, episode_timeout_s=120)
    store = ResultStore(tmp_path / "store")
    try:
        runner = Runner(spec, EBAlfredSuite(**params), planner, store)
        runner.run()
        transcripts = store.transcripts()
        (record,) = store.records()
    finally:
        store.close()
        planner.backend.close()
    return transcripts, record


@pytest.mark.parametrize("parser", ["lenient", "embodiedbench"])
def test_a_cut_reply_is_flagged_in_transcript_and_record_and_still_parsed(tmp_path, parser):
    """One EB-ALFRED episode against a server answering an 8 MB plan, max_reply_chars=2,000:
    every stored raw output is at most 2,000 characters and marked ``output_truncated``, the
    record counts them (``extra["outputs_truncated"]``). The ``lenient`` parser recovers the
    plan's complete entries from the kept prefix (no output error); ``embodiedbench`` reads the
    whole text as JSON, as EmbodiedBench does, so a cut plan is an output error there.
    Mutation caught: the runner's flag dropped, the record's count dropped."""
    n = 8 * MB // 45
    with Server(body_of(plan_of(n))) as srv:
        transcripts, record = run_episode(tmp_path, srv.base_url, 2_000, parser)
    assert transcripts
    for t in transcripts:
        assert len(t["raw_output"]) <= 2_000
        assert t.get("output_truncated") is True
        if parser == "lenient":
            assert t["output_error"] is None and t["actions"] > 0
        else:
            assert t["output_error"].startswith("output is not JSON")
    extra = record.extra if hasattr(record, "extra") else record["extra"]
    assert extra["outputs_truncated"] == len(transcripts)


def test_a_normal_reply_leaves_no_flag_in_the_store(tmp_path):
    content = plan_of(2)
    with Server(body_of(content)) as srv:
        transcripts, record = run_episode(tmp_path, srv.base_url, 1_000_000)
    assert transcripts and all(t["raw_output"] == content and "output_truncated" not in t for t in transcripts)
    extra = record.extra if hasattr(record, "extra") else record["extra"]
    assert "outputs_truncated" not in extra
