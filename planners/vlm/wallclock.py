"""A wall-clock limit on the ``openai`` backend's HTTP calls, and a way to abort them all.

The HTTP client's ``timeout`` is per socket operation: each read may wait that long, so a
server that drips one byte a second, before or after its headers, keeps one request alive for
as long as it drips. Here every socket operation of a call made inside :func:`deadline` waits
at most until that call's deadline, and one past it fails at once with a timeout: whatever the
server does, the call ends by its deadline (plus the client's pauses between retries).

How: the client's connection pool is given a network backend (:class:`DeadlineNetwork`, the
connection library's documented ``network_backend`` hook: ``httpcore2.ConnectionPool``) whose
streams clamp each operation's timeout to the time left before the calling thread's deadline.
The same backend keeps the sockets it opened, so :meth:`DeadlineNetwork.abort` (a stop signal,
:meth:`~planners.vlm.backends.OpenAIBackend.close`) shuts them down: a thread blocked in a read
wakes at once with an error instead of waiting for the server.
"""

from __future__ import annotations

import socket
import threading
import time
import weakref
from contextlib import contextmanager
from typing import Any, Iterator

_LOCAL = threading.local()


class CallTimedOut(TimeoutError):
    """A call passed its wall-clock limit (the runner records it as a ``timeout``)."""


@contextmanager
def deadline(seconds: float | None) -> Iterator[float | None]:
    """Socket operations of this thread's HTTP calls end by ``seconds`` from now (None: no
    limit); nested limits keep the earlier deadline. Yields the deadline (``time.monotonic``)."""
    previous = getattr(_LOCAL, "at", None)
    at = None if seconds is None else time.monotonic() + float(seconds)
    if previous is not None:
        at = previous if at is None else min(at, previous)
    _LOCAL.at = at
    try:
        yield at
    finally:
        _LOCAL.at = previous


def time_left() -> float | None:
    """Seconds left before this thread's deadline (None: none set; 0 or less: past it)."""
    at = getattr(_LOCAL, "at", None)
    return None if at is None else at - time.monotonic()


def _clamp(timeout: float | None, error: type[Exception], aborted: bool) -> float | None:
    if aborted:
        raise error("the call was aborted: the command is stopping")
    left = time_left()
    if left is None:
        return timeout
    if left <= 0:
        raise error("the call passed its wall-clock limit")
    return left if timeout is None else min(timeout, left)


def network_backend() -> Any:
    """A :class:`DeadlineNetwork` (built lazily: the connection library is an optional extra)."""
    import httpcore2

    class DeadlineStream(httpcore2.NetworkStream):
        def __init__(self, inner: Any, owner: "DeadlineNetwork"):
            self._inner, self._owner = inner, owner
            sock = inner.get_extra_info("socket")
            if sock is not None:
                owner._track(sock)

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, _clamp(timeout, httpcore2.ReadTimeout, self._owner.aborted))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _clamp(timeout, httpcore2.WriteTimeout, self._owner.aborted))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> Any:
            inner = self._inner.start_tls(ssl_context, server_hostname,
                                          _clamp(timeout, httpcore2.ConnectTimeout, self._owner.aborted))
            return DeadlineStream(inner, self._owner)

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class DeadlineNetwork(httpcore2.NetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore2.SyncBackend()
            self._sockets: "weakref.WeakSet[socket.socket]" = weakref.WeakSet()
            self._lock = threading.Lock()
            self.aborted = False

        def _track(self, sock: socket.socket) -> None:
            with self._lock:
                self._sockets.add(sock)

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                        socket_options: Any = None) -> Any:
            timeout = _clamp(timeout, httpcore2.ConnectTimeout, self.aborted)
            return DeadlineStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options), self)

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
            timeout = _clamp(timeout, httpcore2.ConnectTimeout, self.aborted)
            return DeadlineStream(self._inner.connect_unix_socket(path, timeout, socket_options), self)

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

        def abort(self) -> None:
            """Shut down every socket this backend opened (blocked reads and writes end at once)
            and refuse new connections and operations."""
            self.aborted = True
            with self._lock:
                sockets = list(self._sockets)
            for sock in sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    return DeadlineNetwork()


def http_client(network: Any, proxy: str | None = None) -> Any:
    """An HTTP client for the ``openai`` client (its own defaults: timeout, limits, redirects)
    whose connections go through ``network`` (:func:`network_backend`)."""
    import httpcore2
    import httpx2
    from openai import DefaultHttpxClient

    transport = httpx2.HTTPTransport(proxy=proxy)
    pool = getattr(transport, "_pool", None)
    if not isinstance(pool, httpcore2.ConnectionPool) or not hasattr(pool, "_network_backend"):
        raise RuntimeError("this httpx2 version builds its connection pool differently: the openai "
                           "backend cannot bound its calls (planners/vlm/wallclock.py)")
    pool._network_backend = network  # the pool's network_backend, given after construction
    return DefaultHttpxClient(transport=transport)


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``
    honoured), as the HTTP client itself would pick it; None for a direct connection."""
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    if not proxies or urllib.request.proxy_bypass_environment(parts.hostname or "", proxies):
        return None
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    return proxy if proxy and "://" in proxy else (f"http://{proxy}" if proxy else None)
