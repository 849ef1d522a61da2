"""``remote``: a policy served over a websocket (openpi's protocol or StarVLA's).

The model runs wherever its server runs (a GPU box, LeRobot's own Python);
this client turns the LIBERO policy observation into the protocol's request,
and the reply into a LIBERO action chunk ``[chunk, 7]``.

* ``protocol=openpi``: one request per episode (``observation/image``,
  ``observation/wrist_image``, ``observation/state``, ``prompt`` ->
  ``actions``); a batch of episodes is sent pipelined on one connection.
  ``replan_steps`` defaults to what the server's metadata reports
  (``replan_steps``: the LeRobot server reports its ``n_action_steps``), else
  5 (openpi's LIBERO client).
* ``protocol=starvla``: one ``examples`` list per batch (``max_batch`` caps
  it) -> ``normalized_actions [B, chunk, 7]``, un-normalised here with the
  checkpoint's statistics (``stats_path``: its ``dataset_statistics.json`` or
  the checkpoint directory; ``unnorm_key``; ``norm_mode`` min_max | q99), the
  gripper binarised and mapped to LIBERO's -1 open / +1 close. ``replan_steps``
  defaults to the whole chunk (StarVLA's LIBERO client). StarVLA's LIBERO
  client sends no proprioception; ``send_state=true`` adds ``"state"`` (8
  values) to each example for models that read it.
* StarVLA's "model server v3" (starVLA/starVLA 8904c06 on) un-normalises on
  the server: it announces ``action_chunk_size`` and ``available_unnorm_keys``
  at handshake, takes ``{"examples", "unnorm_key", "do_sample", "use_ddim",
  "num_ddim_steps"}`` and replies ``data.actions [B, chunk, 7]`` (1 = open
  gripper). ``reply_form`` (null: detected from that metadata) picks the form;
  with ``unnormalized`` no statistics are read, images are resized with PIL's
  bilinear filter as current StarVLA's LIBERO client does, the gripper is
  mapped as its ``_binarize_gripper_open`` (``1 - 2 * (v > 0.5)``), and the
  whole announced chunk is executed (``step % action_chunk_size``).

Transport failures (refused connection, dropped socket, receive timeout)
reconnect with exponential backoff and resend; when the server stays down
``act`` raises :class:`ConnectionError`, which the runner turns into ``agent``
error records (rerunning the command retries those episodes). A policy error
reported by the server (openpi: traceback text then close; StarVLA: an error
frame) raises at once with the server's message.

Parameters: ``policies/plugin.py`` declares them (``RemoteDeclaration``); the StarVLA
ones (``stats_path``, ``unnorm_key``, ``norm_mode``, ``sampling``, ``max_batch``,
``send_state``) are refused with ``protocol=openpi``, which would ignore them.

Identity: the declared result-changing parameters are hashed from ``params``; the
server's URL is *not* part of it (the same checkpoint may move
hosts, and another one may appear on the same port); what the server reports
on connect is - its metadata dict, hashed (``harness serve-policy`` puts the
served policy's own identity, e.g. its checkpoint hash, there). If a server's
metadata is empty (openpi's server sends ``{}`` unless configured), name the
checkpoint with ``checkpoint_id=``; a reconnect that finds different
metadata stops the run rather than mixing two checkpoints in one run.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Mapping, Sequence

import numpy as np

from harness.interfaces import AgentRequest
from harness.params import parse
from harness.util.redact import redact_cut, redact_exception, redact_text
from harness.types import EpisodeSpec
from policies import protocols as P
from policies import wire
from policies.plugin import RemoteDeclaration, StarVLAParams

#: Most characters of a policy server's error message kept (redacted first: harness/util/redact.py).
MAX_SERVER_ERROR_CHARS = 2000

#: Largest reply frame the client accepts (bytes): an action chunk batch is a few KB; the
#: server's metadata a few hundred. A misbehaving server cannot make the client buffer more.
MAX_REPLY_FRAME = 16 * 2**20

log = logging.getLogger(__name__)


class PolicyServerUnavailable(ValueError):
    """No policy server answered at construction time (a usage problem: start it first)."""


class RemotePolicy:
    name = "remote"
    privileged = False
    action_kinds = frozenset({"continuous"})
    reads_images = True

    Params = RemoteDeclaration()

    def __init__(self, **values: Any):
        self._ws: Any = None  # first: close() and __del__ run even when the parameters are refused
        self.params = params = parse(self.Params, values)
        own = params["remote"]
        starvla = params.get("protocol starvla") or StarVLAParams()  # openpi: the StarVLA settings are unused
        self.protocol = own.protocol
        self.url = own.url
        self.timeout_s = own.timeout_s
        self.connect_retries = own.connect_retries
        self.backoff_s, self.max_backoff_s = own.backoff_s, own.max_backoff_s
        self.max_batch = starvla.max_batch
        self.checkpoint_id = own.checkpoint_id
        self.send_state = starvla.send_state
        self.api_key = own.api_key
        protocol, replan_steps = own.protocol, own.replan_steps
        default_resize = P.OPENPI_RESIZE if protocol == P.OPENPI else P.STARVLA_RESIZE
        self.resize = default_resize if own.resize is None else (own.resize or None)
        self.norm_mode = starvla.norm_mode
        self.sampling = dict(P.STARVLA_SAMPLING if starvla.sampling is None else starvla.sampling)
        # one exchange at a time: a call the runner abandoned (agent_timeout_s) must finish or
        # time out before the next one uses the connection, or replies would be mismatched
        self._lock = threading.Lock()
        self.metadata: dict[str, Any] = {}
        self._metadata_digest: str | None = None
        try:
            self._connect()
        except ConnectionError as exc:
            raise PolicyServerUnavailable(str(exc)) from None
        if not self.metadata and not self.checkpoint_id:
            log.warning("policy server %s sent empty metadata: runs of different checkpoints behind it would share "
                        "a run identity; name the checkpoint with policy.params.checkpoint_id=...", redact_text(self.url))
        served_replan = self.metadata.get("replan_steps")
        if replan_steps is None and isinstance(served_replan, (int, np.integer)) and served_replan > 0:
            replan_steps = int(served_replan)  # the server knows its policy's chunking (LeRobot's n_action_steps)
        if replan_steps is None and protocol == P.OPENPI:
            replan_steps = P.OPENPI_REPLAN_STEPS
        self.replan_steps = int(replan_steps) if replan_steps else None
        self.stats: P.ActionStats | None = None
        #: StarVLA: the reply form in use (the parameter, else what the server's metadata says).
        self.reply_form = (starvla.reply_form or P.starvla_reply_form(self.metadata)) if protocol == P.STARVLA else None
        self.unnorm_key = starvla.unnorm_key
        if self.reply_form == "unnormalized":
            if starvla.stats_path:
                raise ValueError("reply_form=unnormalized: the server un-normalises (StarVLA model server v3), "
                                 "so stats_path would be unused; drop it or set reply_form=normalized")
            chunk = self.metadata.get("action_chunk_size")
            if self.replan_steps is None and isinstance(chunk, (int, np.integer)) and chunk > 0:
                self.replan_steps = int(chunk)  # its client runs step % action_chunk_size
        elif protocol == P.STARVLA:
            if starvla.stats_path:
                self.stats = P.load_action_stats(starvla.stats_path, starvla.unnorm_key)
            elif isinstance(self.metadata.get("action_stats"), Mapping):
                # harness serve-policy reports the statistics it normalised with
                self.stats = P.ActionStats(self.metadata["action_stats"], starvla.unnorm_key)
            else:
                raise ValueError(
                    "protocol=starvla un-normalises on the client: give stats_path= (the checkpoint's "
                    f"{P.STARVLA_STATS_FILE} or its directory) and unnorm_key= if it holds several datasets")
            if self.stats.mask.shape[0] != P.ACTION_DIM:
                raise ValueError(f"statistics have {self.stats.mask.shape[0]} action dims, LIBERO needs {P.ACTION_DIM}")

    # --- Agent ------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """Derived facts only (the parameters are hashed from :attr:`params`): the server's
        metadata digest, the chunking in effect (the server's, else the protocol's default)
        and, for StarVLA, the statistics un-normalised with and the resize implementation."""
        ident: dict[str, Any] = {
            "policy": self.name,
            "server_metadata": self._metadata_digest,
            "replan_steps": self.replan_steps,
        }
        served = self.metadata.get("policy_identity")
        if isinstance(served, Mapping):  # readable copy of what harness serve-policy serves
            ident["served"] = P._jsonable(served)
        if self.protocol == P.STARVLA:
            v3 = self.reply_form == "unnormalized"
            ident.update(reply_form=self.reply_form,
                         resize_method=P.STARVLA_V3_RESIZE_METHOD if v3 else P.resize_method(),
                         unnorm_key=self.unnorm_key if v3 else (self.stats.key if self.stats else None),
                         action_stats=self.stats.digest() if self.stats else None)
        return ident

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[np.ndarray]:
        if not requests:
            return []
        with self._lock:
            return self._act(requests)

    def _act(self, requests: Sequence[AgentRequest]) -> list[np.ndarray]:
        if self.protocol == P.OPENPI:
            msgs = [P.openpi_request(r.observation, _instruction(r), self.resize) for r in requests]
            replies = self._exchange(msgs)
            return [self._openpi_chunk(rep) for rep in replies]
        chunks: list[np.ndarray] = []
        step = self.max_batch or len(requests)
        for i in range(0, len(requests), step):
            group = requests[i:i + step]
            if self.reply_form == "unnormalized":
                examples = [self._v3_example(r) for r in group]
                (reply,) = self._exchange([P.starvla_v3_request(examples, self.unnorm_key, self.sampling)])
                chunks.extend(self._starvla_v3_chunks(reply, len(group)))
                continue
            msg = P.starvla_request([P.starvla_example(r.observation, _instruction(r), self.resize, self.send_state)
                                     for r in group],
                                    self.sampling, request_id=f"{time.time_ns()}")
            (reply,) = self._exchange([msg])
            chunks.extend(self._starvla_chunks(reply, len(group)))
        return chunks

    def close(self) -> None:
        if getattr(self, "_ws", None) is not None:
            try:
                self._ws.close()
            except Exception:
                pass
            self._ws = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        self.close()

    def _v3_example(self, r: AgentRequest) -> dict[str, Any]:
        obs = r.observation
        images = [np.asarray(obs[P.OBS_IMAGE]), np.asarray(obs[P.OBS_WRIST])]
        if self.resize:
            images = [P.resize_bilinear(im, self.resize) for im in images]
        example: dict[str, Any] = {"image": [np.ascontiguousarray(im, dtype=np.uint8) for im in images],
                                   "lang": _instruction(r)}
        if self.send_state:
            example["state"] = np.asarray(obs[P.OBS_STATE], dtype=np.float32).reshape(-1)
        return example

    # --- replies ------------------------------------------------------------------
    def _openpi_chunk(self, reply: Any) -> np.ndarray:
        if not isinstance(reply, Mapping) or P.OPENPI_ACTIONS not in reply:
            raise ValueError(f"openpi reply without {P.OPENPI_ACTIONS!r}: keys {sorted(map(str, reply))[:8] if isinstance(reply, Mapping) else type(reply).__name__}")
        return _as_chunk(reply[P.OPENPI_ACTIONS])

    def _starvla_chunks(self, reply: Any, n: int) -> list[np.ndarray]:
        data = _starvla_data(reply)
        if "normalized_actions" not in data:
            raise ValueError("StarVLA reply without data.normalized_actions (a server that un-normalises itself, "
                             "StarVLA's model server v3, replies data.actions: set reply_form=unnormalized)")
        norm = np.asarray(data["normalized_actions"], dtype=np.float64)
        if norm.ndim == 2:
            norm = norm[None]
        if norm.ndim != 3 or norm.shape[0] != n:
            raise ValueError(f"StarVLA reply: normalized_actions of shape {norm.shape}, expected [{n}, chunk, 7]")
        assert self.stats is not None
        actions = P.unnormalize(norm, self.stats, self.norm_mode)
        actions[..., P.ACTION_DIM - 1] = P.gripper_to_libero(actions[..., P.ACTION_DIM - 1])
        return [a.astype(np.float32) for a in actions]

    def _starvla_v3_chunks(self, reply: Any, n: int) -> list[np.ndarray]:
        """``data.actions`` [B, chunk, 7] as the server un-normalised them; the gripper column (1 open,
        0 close) mapped to LIBERO's -1 open / +1 close as StarVLA's eval_libero.py does."""
        data = _starvla_data(reply)
        if "actions" not in data:
            raise ValueError(f"StarVLA v3 reply without data.actions (keys: {sorted(map(str, data))[:8]}); "
                             "a server replying data.normalized_actions needs reply_form=normalized")
        actions = np.array(data["actions"], dtype=np.float64)
        if actions.ndim != 3 or actions.shape[0] != n or actions.shape[2] != P.ACTION_DIM:
            raise ValueError(f"StarVLA reply: actions of shape {actions.shape}, expected [{n}, chunk, 7]")
        actions[..., P.ACTION_DIM - 1] = P.gripper_to_libero(actions[..., P.ACTION_DIM - 1])
        return [a.astype(np.float32) for a in actions]

    # --- transport ------------------------------------------------------------------
    def _connect(self) -> None:
        from websockets.sync.client import connect

        delay, last = self.backoff_s, None
        for attempt in range(self.connect_retries):
            if attempt:
                time.sleep(delay)
                delay = min(delay * 2, self.max_backoff_s)
            try:
                headers = {"Authorization": f"Api-Key {self.api_key}"} if self.api_key else None
                ws = connect(self.url, compression=None, max_size=MAX_REPLY_FRAME, open_timeout=self.timeout_s,
                             additional_headers=headers).__enter__()  # closed by self.close()
                metadata = wire.unpackb(ws.recv(timeout=self.timeout_s))
            except (OSError, TimeoutError, wire.WireError, _ws_errors()) as exc:
                last = redact_exception(exc)  # what a server said, as it enters: no credential in it
                log.warning("policy server %s: connect attempt %d failed: %s", redact_text(self.url), attempt + 1,
                            redact_cut(str(exc), MAX_SERVER_ERROR_CHARS))
                continue
            metadata = dict(metadata) if isinstance(metadata, Mapping) else {"metadata": metadata}
            digest = P.stable_digest(metadata)
            if self._metadata_digest is not None and digest != self._metadata_digest:
                ws.close()
                raise RuntimeError(
                    f"the policy server at {redact_text(self.url)} now reports different metadata (another checkpoint?); "
                    "results would mix two policies: rerun the command to start a new run")
            self._ws, self.metadata, self._metadata_digest = ws, metadata, digest
            return
        raise ConnectionError(f"policy server {redact_text(self.url)} unreachable after {self.connect_retries} "
                              f"attempts ({type(last).__name__}: {redact_cut(str(last), MAX_SERVER_ERROR_CHARS)}); start it, e.g. `harness serve-policy policy=...`")

    def _exchange(self, messages: list[dict[str, Any]]) -> list[Any]:
        """Send every message, then read one reply each (pipelined); transport
        failures reconnect with backoff and resend the batch."""
        frames = [wire.packb(m) for m in messages]
        for attempt in range(self.connect_retries):
            try:
                if self._ws is None:
                    self._connect()
                for frame in frames:
                    self._ws.send(frame)
                replies = []
                for _ in frames:
                    raw = self._ws.recv(timeout=self.timeout_s)
                    if isinstance(raw, str):  # openpi: a traceback, then the server closes
                        self.close()
                        text = redact_cut(raw).strip()  # redacted before it is split or cut
                        tail = text.splitlines()[-1] if text else "unspecified"
                        raise RuntimeError(f"policy server error: {redact_cut(tail, MAX_SERVER_ERROR_CHARS)}")
                    replies.append(wire.unpackb(raw))
                return replies
            except (OSError, TimeoutError, _ws_errors()) as exc:
                self.close()
                if isinstance(exc, ConnectionError) and "unreachable" in str(exc):
                    raise
                log.warning("policy server %s: %s; reconnecting (%d/%d)", redact_text(self.url),
                            redact_cut(str(exc), MAX_SERVER_ERROR_CHARS), attempt + 1, self.connect_retries)
        raise ConnectionError(f"policy server {redact_text(self.url)}: no reply after {self.connect_retries} attempts")


def _ws_errors() -> type[Exception]:
    import websockets.exceptions

    return websockets.exceptions.WebSocketException


def _instruction(request: AgentRequest) -> str:
    obs = request.observation
    if isinstance(obs, Mapping) and obs.get(P.OBS_INSTRUCTION):
        return str(obs[P.OBS_INSTRUCTION])
    return request.episode.instruction


def _as_chunk(actions: Any) -> np.ndarray:
    a = np.asarray(actions)
    if a.dtype.kind not in "fiu":
        raise ValueError(f"policy server returned actions of dtype {a.dtype}")
    if a.ndim == 1:
        a = a[None]
    if a.ndim != 2 or a.shape[0] == 0:
        raise ValueError(f"policy server returned actions of shape {a.shape}, expected [chunk, 7]")
    return a.astype(np.float32)


def _starvla_data(reply: Any) -> Mapping[str, Any]:
    """A StarVLA reply's ``data``, after its envelope says the call succeeded (either reply form)."""
    if not isinstance(reply, Mapping):
        raise ValueError(f"StarVLA reply is a {type(reply).__name__}, not a dict")
    if not reply.get("ok", reply.get("status") == "ok") or reply.get("status", "ok") != "ok":
        err = reply.get("error")
        message = err.get("message") if isinstance(err, Mapping) else err
        raise RuntimeError(f"policy server error: {redact_cut(str(message or 'unspecified'), MAX_SERVER_ERROR_CHARS)}")
    return reply.get("data") or {}
