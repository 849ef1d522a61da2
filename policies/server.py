"""``harness serve-policy``: any registered policy behind a websocket, speaking
openpi's protocol and StarVLA's on the same port.

    harness serve-policy policy=vla policy.params.checkpoint=/ckpt [host=127.0.0.1] [port=8000]

* On connect the server sends its metadata (msgpack-numpy): the policy's name,
  its ``identity()`` (checkpoint hash...), the protocols spoken and, when it
  has them, the action statistics StarVLA clients un-normalise with.
* A frame holding ``examples`` is a StarVLA request (``normalized_actions``
  reply, error frames keep the connection open; ``type: "ping"`` answers
  ``pong``); any other frame is an openpi observation (``actions`` reply; on
  an error the traceback text is sent and the connection closed, as openpi's
  server does). ``GET /healthz`` answers 200.
* Requests from all connections are batched into one ``act`` call (up to
  ``max_batch``), so several simulator workers share one model forward.
* Loopback by default; ``host=0.0.0.0`` exposes it (a warning says so). Frames
  are parsed by :mod:`policies.wire`: nothing from the network is unpickled.

The protocols carry no episode boundaries: the served policy must be
stateless between calls (``vla`` is; a chunk is a pure function of one
observation).
"""

from __future__ import annotations

import asyncio
import http
import logging
import sys
import traceback
from typing import Any, Mapping, Sequence

import numpy as np

from policies import protocols as P
from policies import wire

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8000


class PolicyService:
    """The transport-free core: observations in, LIBERO action chunks out (batched).

    :class:`PolicyServer` needs only ``metadata()``, ``act(observations)``,
    ``normalize(chunk)`` and ``max_batch`` from it, so other services (the
    LeRobot one in :mod:`policies.lerobot_server`) plug in without the harness;
    this module imports the harness only inside :class:`PolicyService`."""

    def __init__(self, agent: Any, stats: P.ActionStats | None = None, norm_mode: str = "min_max",
                 max_batch: int = 32, max_wait_s: float = 0.01):
        self.agent = agent
        self.norm_mode = P._check_mode(norm_mode)
        self.stats = stats if stats is not None else _agent_stats(agent)
        self.max_batch = max(1, int(max_batch))
        #: how long the first request of a batch waits for others (seconds; not a result-changing knob)
        self.max_wait_s = max(0.0, float(max_wait_s))
        self.calls = 0

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "policy": getattr(self.agent, "name", type(self.agent).__name__),
            "policy_identity": dict(self.agent.identity()),
            "protocols": list(P.PROTOCOLS),
            "replan_steps": getattr(self.agent, "replan_steps", None),
        }
        if self.stats is not None:
            meta["action_stats"] = self.stats.to_json()
            meta["norm_mode"] = self.norm_mode
        return meta

    def act(self, observations: Sequence[Mapping[str, Any]]) -> list[np.ndarray]:
        """One agent call for a batch of policy observations."""
        from harness.interfaces import AgentRequest
        from harness.types import EpisodeSpec

        requests = [
            AgentRequest(
                EpisodeSpec("served", "", f"request-{self.calls}-{i}", 0, str(obs[P.OBS_INSTRUCTION])),
                obs, {}, ())
            for i, obs in enumerate(observations)
        ]
        self.calls += 1
        outs = self.agent.act(requests)
        if len(outs) != len(requests):
            raise RuntimeError(f"policy returned {len(outs)} chunks for {len(requests)} observations")
        return [_chunk(o) for o in outs]

    def normalize(self, chunk: np.ndarray) -> np.ndarray:
        """A LIBERO chunk -> StarVLA's normalized actions (gripper column {0 close, 1 open})."""
        if self.stats is None:
            raise RuntimeError("this server has no action statistics, so it cannot answer StarVLA requests: "
                               "start it with stats_path=... (or serve a policy that has them)")
        a = np.array(chunk, dtype=np.float64)
        a[..., P.ACTION_DIM - 1] = P.gripper_from_libero(a[..., P.ACTION_DIM - 1])
        return P.normalize(a, self.stats, self.norm_mode).astype(np.float32)


class _Batcher:
    """Collects observations from every connection and runs one ``act`` per batch
    in a worker thread (the event loop keeps serving sockets meanwhile)."""

    def __init__(self, service: PolicyService):
        self.service = service
        self.queue: asyncio.Queue[tuple[Mapping[str, Any], asyncio.Future]] = asyncio.Queue()

    async def submit(self, observations: Sequence[Mapping[str, Any]]) -> list[np.ndarray]:
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in observations]
        for obs, fut in zip(observations, futures):
            self.queue.put_nowait((obs, fut))
        return list(await asyncio.gather(*futures))

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self.queue.get()]
            # a short window lets frames still arriving (a pipelined batch, other clients) join
            deadline = loop.time() + getattr(self.service, "max_wait_s", 0.0)
            while len(batch) < self.service.max_batch:
                if not self.queue.empty():
                    batch.append(self.queue.get_nowait())
                    continue
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self.queue.get(), remaining))
                except asyncio.TimeoutError:
                    break
            observations = [obs for obs, _ in batch]
            try:
                chunks = await loop.run_in_executor(None, self.service.act, observations)
                results: list[Any] = list(chunks)
            except Exception as exc:
                if len(batch) == 1:
                    results = [exc]
                else:  # isolate the observation that fails
                    results = []
                    for obs in observations:
                        try:
                            results.extend(await loop.run_in_executor(None, self.service.act, [obs]))
                        except Exception as one:
                            results.append(one)
            for (_, fut), res in zip(batch, results):
                if fut.done():
                    continue
                if isinstance(res, BaseException):
                    fut.set_exception(res)
                else:
                    fut.set_result(res)


#: Largest frame a server accepts (bytes): a batch of LIBERO observations (two 256x256 RGB
#: images and the state per episode) is well under 1 MB per episode; 64 MB leaves room for
#: large batches and bounds what one frame can cost the server.
DEFAULT_MAX_FRAME = 64 * 2**20
#: Connections served at once. At the limit, a new client takes the place of the connection
#: idle longest (none of its frames pending, nothing received for EVICT_IDLE_S); only when
#: every connection is busy is it refused at the handshake (HTTP 503).
DEFAULT_MAX_CONNECTIONS = 64
#: A connection with nothing pending that sends no frame for this long is closed (1001).
DEFAULT_IDLE_TIMEOUT_S = 120.0
#: An idle connection this old may be closed to admit a new client at max_connections.
EVICT_IDLE_S = 5.0
#: Frame bytes received and not yet answered, over all connections: past it the server stops
#: reading (each connection's further frames wait in TCP). One frame larger than what is free
#: is admitted alone, when nothing else is in flight.
DEFAULT_MAX_INFLIGHT = 256 * 2**20
#: Frames the websocket library buffers per connection before it stops reading the socket.
MAX_QUEUE = 1


class _ConnState:
    __slots__ = ("conn", "last", "pending", "evicted")

    def __init__(self, conn: Any, now: float):
        self.conn, self.last, self.pending, self.evicted = conn, now, 0, False


class PolicyServer:
    def __init__(self, service: PolicyService, host: str = LOOPBACK, port: int = DEFAULT_PORT, *,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS, max_frame: int = DEFAULT_MAX_FRAME,
                 idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S, max_inflight: int = DEFAULT_MAX_INFLIGHT,
                 evict_idle_s: float = EVICT_IDLE_S):
        self.service, self.host, self.port = service, host, int(port)
        self.max_connections, self.max_frame = int(max_connections), int(max_frame)
        self.idle_timeout_s, self.max_inflight, self.evict_idle_s = float(idle_timeout_s), int(max_inflight), \
            float(evict_idle_s)
        #: Connections open now (bounded by max_connections).
        self.open_connections = 0
        #: Frame bytes received and not yet answered (bounded by max_inflight); its peak.
        self.inflight_bytes = self.peak_inflight_bytes = 0
        self._states: dict[int, _ConnState] = {}
        self._room: asyncio.Event | None = None
        self._metadata_frame = wire.packb(service.metadata())
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.connections = 0

    def serve_forever(self, on_ready: Any = None) -> None:
        asyncio.run(self._serve(on_ready))

    def start_background(self, timeout_s: float = 30.0) -> "PolicyServer":
        """Serve from a daemon thread; returns once listening (``self.port`` is set)."""
        import threading

        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            try:
                self.serve_forever(on_ready=lambda host, port: ready.set())
            except BaseException as exc:  # surfaced to the caller below
                errors.append(exc)
                ready.set()

        self._thread = threading.Thread(target=run, daemon=True, name=f"policy-server-{self.port}")
        self._thread.start()
        if not ready.wait(timeout_s) or errors:
            raise RuntimeError(f"policy server did not start: {errors[0] if errors else 'timeout'}")
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop a server started with :meth:`start_background` (closes its connections)."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        thread = getattr(self, "_thread", None)
        if thread is not None:
            thread.join(timeout_s)

    async def _serve(self, on_ready: Any) -> None:
        import websockets.asyncio.server as ws_server

        batcher = _Batcher(self.service)
        task = asyncio.create_task(batcher.run())
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()

        async def handler(conn: Any) -> None:
            await self._handle(conn, batcher)

        def process_request(connection: Any, request: Any) -> Any:
            health = _health_check(connection, request)
            if health is not None:
                return health
            live = [st for st in self._states.values() if not st.evicted]
            if len(live) >= self.max_connections and not self._evict_idle(live):  # refused before the handshake
                return connection.respond(http.HTTPStatus.SERVICE_UNAVAILABLE,
                                          f"too many busy connections (max_connections={self.max_connections})\n")
            return None

        self._room = asyncio.Event()
        async with ws_server.serve(handler, self.host, self.port, compression=None, max_size=self.max_frame,
                                   max_queue=MAX_QUEUE, process_request=process_request) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            self.port = port
            if on_ready is not None:
                on_ready(self.host, port)
            try:
                await self._stop.wait()
            finally:
                task.cancel()

    async def _handle(self, conn: Any, batcher: _Batcher) -> None:
        """Frames are answered in order, but not one at a time: each frame becomes a
        task at once, so frames a client pipelines (the ``remote`` client sends a
        whole batch of episodes) reach the batcher together and share one ``act``."""
        self.connections += 1
        self.open_connections += 1
        state = self._states[id(conn)] = _ConnState(conn, asyncio.get_running_loop().time())
        try:
            await self._serve_connection(conn, batcher, state)
        finally:
            self.open_connections -= 1
            self._states.pop(id(conn), None)

    def _evict_idle(self, live: list[_ConnState]) -> bool:
        """At max_connections: close the connection idle longest (nothing pending, no frame
        for evict_idle_s) to make room; False when every connection is busy."""
        now = asyncio.get_running_loop().time()
        idle = [st for st in live if st.pending == 0 and now - st.last >= self.evict_idle_s]
        if not idle:
            return False
        victim = min(idle, key=lambda st: st.last)
        victim.evicted = True
        asyncio.ensure_future(victim.conn.close(1013, "server at max_connections: idle connection closed"))
        return True

    async def _admit(self, size: int) -> None:
        """Wait until ``size`` more frame bytes fit under max_inflight (or nothing is in flight)."""
        assert self._room is not None
        while not (self.inflight_bytes == 0 or self.inflight_bytes + size <= self.max_inflight):
            self._room.clear()
            await self._room.wait()
        self.inflight_bytes += size
        self.peak_inflight_bytes = max(self.peak_inflight_bytes, self.inflight_bytes)

    def _release(self, size: int) -> None:
        """A frame's reply is done (sent, failed or cancelled, started or not): its bytes are free."""
        self.inflight_bytes -= size
        if self._room is not None:
            self._room.set()

    async def _serve_connection(self, conn: Any, batcher: _Batcher, state: _ConnState) -> None:
        import websockets

        loop = asyncio.get_running_loop()
        await conn.send(self._metadata_frame)
        order: asyncio.Queue[asyncio.Future | None] = asyncio.Queue()
        sender = asyncio.create_task(self._send_in_order(conn, order, state))
        closed = False
        try:
            while not sender.done():
                try:
                    raw = await asyncio.wait_for(conn.recv(), timeout=self.idle_timeout_s)
                except (asyncio.TimeoutError, TimeoutError):
                    if state.pending:
                        continue  # waiting for the policy, not idle
                    await conn.close(1001, f"idle for {self.idle_timeout_s:g} s")
                    closed = True
                    break
                except websockets.ConnectionClosed:
                    closed = True  # nobody to answer: drop what is still pending
                    break
                state.last = loop.time()
                size = len(raw)
                await self._admit(size)
                state.pending += 1
                reply = asyncio.ensure_future(self._reply(raw, batcher))
                del raw
                reply.add_done_callback(lambda _, n=size: self._release(n))
                order.put_nowait(reply)
        finally:
            if closed or sender.done():
                sender.cancel()
                while not order.empty():
                    pending = order.get_nowait()
                    if pending is not None:
                        pending.cancel()
            else:
                order.put_nowait(None)
            try:
                await sender
            except (websockets.ConnectionClosed, asyncio.CancelledError):
                pass

    async def _send_in_order(self, conn: Any, order: asyncio.Queue, state: _ConnState) -> None:
        while True:
            item = await order.get()
            if item is None:
                return
            try:
                fatal, payload = await item
            finally:
                state.pending -= 1
                state.last = asyncio.get_running_loop().time()
            if fatal:  # openpi: the traceback as text, then close; later frames are dropped
                await _send_fatal(conn, payload)
                while not order.empty():
                    pending = order.get_nowait()
                    if pending is not None:
                        pending.cancel()
                return
            await conn.send(payload)

    async def _reply(self, raw: Any, batcher: _Batcher) -> tuple[bool, Any]:
        """(fatal, frame): a reply frame, or the text that precedes closing."""
        try:
            msg = wire.unpackb(raw)
        except wire.WireError as exc:
            return True, f"bad frame: {exc}"
        if isinstance(msg, Mapping) and ("examples" in msg or msg.get("type") == "ping"):
            return False, wire.packb(await self._starvla(msg, batcher))
        try:
            obs = P.observation_from_openpi(msg if isinstance(msg, Mapping) else {})
            t0 = asyncio.get_running_loop().time()
            (chunk,) = await batcher.submit([obs])
            return False, wire.packb({P.OPENPI_ACTIONS: chunk,
                                      "server_timing": {"infer_ms": 1000 * (asyncio.get_running_loop().time() - t0)}})
        except Exception as exc:
            # openpi's server sends the traceback text; ours sends one line naming the error and
            # keeps the traceback in its own log: no server internals to a client.
            log.warning("request failed:\n%s", traceback.format_exc())
            return True, f"policy server error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"

    async def _starvla(self, msg: Mapping[str, Any], batcher: _Batcher) -> dict[str, Any]:
        request_id = msg.get("request_id")
        if msg.get("type") == "ping":
            return {"status": "ok", "ok": True, "type": "pong", "request_id": request_id}
        try:
            examples = msg["examples"]
            if not isinstance(examples, (list, tuple)) or not examples:
                raise ValueError("'examples' must be a non-empty list")
            observations = [P.observation_from_starvla(e) for e in examples]
            chunks = await batcher.submit(observations)
            lengths = {c.shape[0] for c in chunks}
            if len(lengths) != 1:
                raise RuntimeError(f"policy returned chunks of different lengths {sorted(lengths)}")
            return P.starvla_ok(np.stack([self.service.normalize(c) for c in chunks]), request_id)
        except Exception as exc:
            return P.starvla_error(f"{type(exc).__name__}: {exc}", request_id)


async def _send_fatal(conn: Any, text: str) -> None:
    import websockets
    import websockets.frames

    try:
        await conn.send(text)
        await conn.close(code=websockets.frames.CloseCode.INTERNAL_ERROR,
                         reason="Internal server error. The error is in the previous frame.")
    except websockets.ConnectionClosed:
        pass


def _health_check(connection: Any, request: Any) -> Any:
    if request.path == "/healthz":
        return connection.respond(http.HTTPStatus.OK, "OK\n")
    return None


def _agent_stats(agent: Any) -> P.ActionStats | None:
    stats = getattr(agent, "action_stats", None)
    return stats if isinstance(stats, P.ActionStats) else None


def _chunk(out: Any) -> np.ndarray:
    from harness.interfaces import AgentReply

    actions = out.actions if isinstance(out, AgentReply) else out
    a = np.asarray(actions, dtype=np.float32)
    if a.ndim == 1:
        a = a[None]
    if a.ndim != 2 or a.shape[0] == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"policy returned an unusable chunk of shape {a.shape}")
    return a


# --- command line ---------------------------------------------------------------
class UsageError(Exception):
    """Bad serve-policy input: one line on stderr, exit status 2."""


def main(overrides: Sequence[str]) -> int:
    """``harness serve-policy`` (called by :mod:`harness.cli.entry`). Overrides:
    ``policy=NAME``, ``policy.params.KEY=VALUE`` (checked against the policy's
    declaration before it is built) and the server's own settings
    (:class:`policies.plugin.ServeParams`: ``host=``, ``port=`` (0: any free port, printed),
    ``max_batch=``, ...). Bad input prints one line and returns 2 (the CLI's convention)."""
    try:
        return _serve(overrides)
    except UsageError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return 2


def _serve(overrides: Sequence[str]) -> int:
    from omegaconf import OmegaConf

    from harness.registry.catalog import POLICIES
    from harness.params import ParamError, fields_of, parse, unknown_key
    from policies.plugin import ServeParams

    items = list(overrides)
    name = next((o.split("=", 1)[1] for o in items if o.startswith("policy=")), None)
    if not name:
        raise UsageError("serve-policy needs policy=NAME (e.g. policy=vla policy.params.checkpoint=/path)")
    rest = [o for o in items if not o.startswith("policy=")]
    bad = [o for o in rest if "=" not in o]
    if bad:
        raise UsageError(f"override {bad[0]!r} is not key=value")
    try:
        plugin = POLICIES.entry(name)
    except KeyError as exc:
        raise UsageError(str(exc)) from None
    try:
        given = OmegaConf.to_container(OmegaConf.from_dotlist(rest), resolve=True)
    except Exception as exc:
        raise UsageError(f"bad override: {str(exc).strip().splitlines()[0]}") from None
    policy_part = given.pop("policy", None) or {}
    if not isinstance(policy_part, dict) or set(policy_part) - {"params"}:
        raise UsageError("policy settings are given as policy.params.KEY=VALUE")
    options = [f.name for f in fields_of(ServeParams)]
    for key in given:
        if key not in options:
            hint = unknown_key(key, options).problem.partition(";")[2].partition(" (")[0].strip()
            raise UsageError(f"unknown serve-policy option {key!r}{'; ' + hint if hint else ''} "
                             f"(options: {', '.join(options)}, policy.params.*)")
    params = policy_part.get("params") or {}
    try:
        cfg = parse(ServeParams, given)
    except ParamError as exc:
        raise UsageError(f"serve-policy: {exc}") from None
    try:  # the policy's own declaration first: a bad value is refused before a model loads
        parse(plugin.params, params)
    except ParamError as exc:
        raise UsageError(f"serve-policy {name}: {exc.at('policy.params.')}") from None
    try:
        agent = POLICIES.build(name, **params)
        stats = P.load_action_stats(cfg.stats_path, cfg.unnorm_key) if cfg.stats_path else None
        service = PolicyService(agent, stats=stats, norm_mode=cfg.norm_mode, max_batch=cfg.max_batch,
                                max_wait_s=cfg.max_wait_s)
    except (FileNotFoundError, NotADirectoryError, ValueError, TypeError) as exc:
        raise UsageError(f"serve-policy {name}: {str(exc).strip().splitlines()[0]}") from None
    server = PolicyServer(service, host=cfg.host, port=cfg.port, max_connections=cfg.max_connections,
                          max_frame=cfg.max_frame_mb * 2**20, idle_timeout_s=cfg.idle_timeout_s,
                          max_inflight=cfg.max_inflight_mb * 2**20)

    def ready(host: str, port: int) -> None:
        if cfg.host not in (LOOPBACK, "localhost", "::1"):  # once it listens: a host it cannot bind is one line
            print(f"harness serve-policy: WARNING: listening on {cfg.host}, reachable from other machines; "
                  "the protocol has no authentication", file=sys.stderr)
        print(f"serving policy {name} on ws://{host}:{port} (protocols: openpi, starvla; health: /healthz)",
              file=sys.stderr, flush=True)

    try:
        server.serve_forever(on_ready=ready)
    except (OSError, OverflowError) as exc:
        raise UsageError(f"cannot listen on {cfg.host}:{cfg.port}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM / SIGHUP (the CLI raises them as KeyboardInterrupt)
        print(f"serve-policy: stopped after {service.calls} policy calls", file=sys.stderr)
    return 0
