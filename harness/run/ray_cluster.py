"""Joining a Ray cluster for ``executor=ray`` and for agents on Ray actors: ``executor.address``
(``auto``, ``HOST:PORT``, ``ray://HOST:PORT``), else ``RAY_ADDRESS``, else a new local one-node
cluster. An address that cannot answer is refused at once with one line (:class:`RayConnectError`):
Ray itself retries an unreachable address for ever. Ray (the ``ray`` extra) is imported when
joining, never when this module is."""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
from typing import Any, Mapping


def setup(params: Mapping[str, Any]) -> None:
    """``executor=ray``'s setup hook (harness.plugins.ExecutorPlugin.setup): join the cluster
    before any store or run exists; the executor then reuses the connection. A
    :class:`RayConnectError` (one line) when Ray is missing or the cluster cannot be joined."""
    if importlib.util.find_spec("ray") is None:
        raise RayConnectError("executor=ray needs Ray: pip install -e '.[ray]'")
    ensure_ray(params.get("address"))


def ensure_ray(address: str | None = None) -> Any:
    """Import Ray and join (or start) a cluster: ``address`` if given, else
    ``RAY_ADDRESS``, else a new local one. A :class:`RayConnectError` (one line)
    when the extra is missing or the cluster cannot be joined."""
    try:
        import ray
    except ImportError as exc:
        raise RayConnectError("executor=ray needs Ray: pip install -e '.[ray]'") from exc
    if ray.is_initialized():
        return ray
    address = None if address is None or not str(address).strip() else str(address).strip()
    if address is not None and address != "auto":
        _check_reachable(address)  # Ray itself retries an unreachable address for ever
    elif address == "auto" or os.environ.get("RAY_ADDRESS"):
        _check_auto(address)
    kwargs: dict[str, Any] = dict(logging_level=logging.ERROR, log_to_driver=False, configure_logging=True)
    if not (address or "").startswith("ray://"):
        kwargs["include_dashboard"] = False  # a Ray client connection takes no such option
    try:
        ray.init(address=address, **kwargs)
    except Exception as exc:
        where = address or "the local cluster"
        raise RayConnectError(f"executor=ray: cannot join Ray at {where}: {_connect_hint(exc)}") from None
    return ray


#: Seconds to wait for a TCP connection to an explicit cluster address.
CONNECT_TIMEOUT_S = 5.0


def _check_reachable(address: str) -> None:
    """RayConnectError unless ``HOST:PORT`` / ``ray://HOST:PORT`` accepts a TCP connection."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise RayConnectError(f"executor.address must be auto, HOST:PORT or ray://HOST:PORT, got {address!r}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise RayConnectError(f"executor=ray: cannot reach Ray at {address}: {exc.strerror or exc}") from None


def _check_auto(address: str | None) -> None:
    """``auto`` (or no address with ``RAY_ADDRESS`` set): the address Ray would join -- RAY_ADDRESS,
    else the cluster recorded by the last ``ray start`` (/tmp/ray/ray_current_cluster), else
    one found running -- must answer; a record left by a stopped cluster would make Ray retry for ever."""
    try:
        from ray._private.services import get_ray_address_from_environment
    except ImportError:  # moved in another Ray version: ray.init decides alone
        return
    try:
        resolved = get_ray_address_from_environment(address, None)
    except ConnectionError as exc:
        raise RayConnectError(f"executor=ray: executor.address=auto: {first_line(exc)}") from None
    if not resolved or resolved == "auto" or resolved == "local":
        return
    where = "RAY_ADDRESS" if os.environ.get("RAY_ADDRESS") else "the address recorded by the last `ray start`"
    try:
        _check_reachable(resolved)
    except RayConnectError as exc:
        raise RayConnectError(f"{exc} ({where}; a cluster since stopped?)") from None


class RayConnectError(RuntimeError):
    """executor=ray cannot start: Ray missing, or the cluster refused or unreachable (one line)."""


def _connect_hint(exc: BaseException) -> str:
    name = type(exc).__name__
    text = first_line(exc)
    chain, cause = [], exc
    while cause is not None and len(chain) < 8:  # ray.init's ConnectionError hides the cause in __cause__
        chain.append(f"{type(cause).__name__} {cause}")
        cause = cause.__cause__ or cause.__context__
    if any("AuthenticationError" in c or "InvalidAuthToken" in c for c in chain):
        return (f"authentication failed ({text}); the cluster wants its token: set RAY_AUTH_MODE=token and "
                "RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) as on the cluster")
    return f"{name}: {text}"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
