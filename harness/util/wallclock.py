"""HTTP exchanges with a wall-clock limit.

``urllib``'s ``timeout`` bounds each socket operation, not the exchange: a server that sends one
byte a second, before its headers end or after, holds a request as long as it drips.
:func:`fetch` is ``urllib.request.urlopen`` (same handlers: proxies from the environment, HTTPS)
whose whole exchange (connecting, sending, the headers and the whole body) ends within
``timeout_s``: a watchdog shuts the connection's socket down at the deadline, which wakes a
blocked read at once, and the call raises :class:`TimeoutError`.

The ``openai`` model backend bounds its calls the same way through its HTTP client's network
layer (planners/vlm/wallclock.py); the remote policy client's websocket library bounds its
opening handshake (``open_timeout``) and each message (``recv(timeout=...)``) by wall clock itself.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.request
from typing import Any


class WallClockTimeout(TimeoutError):
    """An exchange passed its wall-clock limit."""


def fetch(request: str | urllib.request.Request, timeout_s: float) -> tuple[int, bytes]:
    """``(status, body)`` of ``request``, the whole exchange within ``timeout_s`` seconds of wall
    clock (:class:`WallClockTimeout` past it). HTTP errors raise ``urllib.error.HTTPError`` as
    ``urlopen`` does."""
    sockets: list[socket.socket] = []
    lock = threading.Lock()
    expired = threading.Event()

    def opened(sock: Any) -> None:
        with lock:
            if expired.is_set():
                _shutdown(sock)
            sockets.append(sock)

    def expire() -> None:
        with lock:
            expired.set()
            for sock in sockets:
                _shutdown(sock)

    class Connection(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            opened(self.sock)

    class SecureConnection(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            opened(self.sock)

    class Handler(urllib.request.HTTPHandler):
        def http_open(self, req: Any) -> Any:
            return self.do_open(Connection, req)

    class SecureHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: Any) -> Any:
            return self.do_open(SecureConnection, req, context=getattr(self, "_context", None))

    opener = urllib.request.build_opener(Handler, SecureHandler)
    deadline = time.monotonic() + timeout_s
    watchdog = threading.Timer(timeout_s, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        with opener.open(request, timeout=timeout_s) as resp:
            status, body = resp.status, resp.read()
        if expired.is_set():  # a body without a length ends at the shutdown: it is cut, not whole
            raise WallClockTimeout(f"no complete reply within {timeout_s:g} s of wall clock")
        return status, body
    except (OSError, http.client.HTTPException) as exc:
        if expired.is_set() or time.monotonic() >= deadline:
            raise WallClockTimeout(f"no complete reply within {timeout_s:g} s of wall clock "
                                   f"({type(exc).__name__})") from None
        raise
    finally:
        watchdog.cancel()


def _shutdown(sock: Any) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
