"""Policy servers an experiment starts and stops, one variant at a time.

An experiment whose variants are served models (three VLAs, each trained in its
own framework and served by that framework's script) declares, per variant, where
its server answers and which checkpoint it serves::

    experiment:
      serve:                       # optional: without a command the servers are the user's
        command: "python serve.py --ckpt {checkpoint} --port {port}"
        ready_timeout_s: 900       # how long a server may take to answer (weights loading)
        stop_timeout_s: 30         # SIGTERM, then SIGKILL after this long
      variants:
        base:
          serve: {url: "ws://127.0.0.1:10093", checkpoint: /ckpts/base_vla}
          overrides: [policy=remote, "policy.params.url={url}", "policy.params.checkpoint_id='{checkpoint_id}'"]

``{url}``, ``{host}``, ``{port}``, ``{checkpoint}``, ``{checkpoint_id}`` and
``{variant}`` in a variant's overrides (and in the command, shell-quoted there)
are that variant's. ``{checkpoint_id}`` is the checkpoint folder's name and a
digest of its files (``harness.util.checkpoint_identity.path_digest``: small files whole, large
weight files by size, safetensors header and sampled blocks), so a policy
parameter that enters the run identity carries it: another checkpoint is another
run, the same one moved is the same run.

With a command, ``harness run +experiment=...`` starts the variant's server before
its first run (refusing if something already answers on its port: the runs would
go to the wrong model), waits until its port accepts connections, writes
``OUT/servers/<variant>.json`` (command, checkpoint path and digest, URL, pid) and
``OUT/servers/<variant>.log`` (its output), and stops it (its whole process group)
after the variant's last run, before the next variant's starts: only one model is
in memory at a time. The server runs under a watchdog (harness/run/serve_watch.py) that
stops its group when the harness ends however it ends (SIGKILL included), so no server
outlives its run; a rerun that finds the port taken by a server recorded in
``OUT/servers/`` names its pid. A server that dies mid-run leaves error records (the remote
client's retries run out), which a rerun of the same command re-runs.

Nothing here names a suite or a policy: the placeholders are filled in the
strings the experiment file gives.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from harness.util.checkpoint_identity import path_digest

#: Keys of ``experiment.serve`` and of a variant's ``serve``.
SERVE_KEYS = frozenset({"command", "ready_timeout_s", "stop_timeout_s"})
VARIANT_SERVE_KEYS = frozenset({"url", "checkpoint"})
#: The placeholders filled in overrides and the command.
PLACEHOLDERS = ("url", "host", "port", "checkpoint", "checkpoint_id", "variant")


class ServeError(ValueError):
    """A bad serve setting, or a server that did not come up; ``str()`` is one line."""


@dataclass(frozen=True)
class ServeSettings:
    command: str | None = None
    ready_timeout_s: float = 900.0
    stop_timeout_s: float = 30.0


@dataclass(frozen=True)
class VariantServe:
    """Where a variant's server answers and what it serves (values as written: ``${oc.env:...}`` kept)."""

    url: str | None = None
    checkpoint: str | None = None


def parse_settings(node: Any) -> ServeSettings:
    if node is None:
        return ServeSettings()
    if not isinstance(node, dict) or set(node) - SERVE_KEYS:
        raise ServeError(f"experiment.serve takes {', '.join(sorted(SERVE_KEYS))}, got {node!r}")
    out = ServeSettings(command=node.get("command"), ready_timeout_s=float(node.get("ready_timeout_s", 900.0)),
                        stop_timeout_s=float(node.get("stop_timeout_s", 30.0)))
    if out.command is not None and not isinstance(out.command, str):
        raise ServeError(f"experiment.serve.command must be a string (a shell command template), got {out.command!r}")
    if out.ready_timeout_s <= 0 or out.stop_timeout_s <= 0:
        raise ServeError("experiment.serve: ready_timeout_s and stop_timeout_s must be positive")
    return out


def parse_variant(name: str, node: Any) -> VariantServe | None:
    if node is None:
        return None
    if not isinstance(node, dict) or set(node) - VARIANT_SERVE_KEYS:
        raise ServeError(f"experiment.variants.{name}.serve takes {', '.join(sorted(VARIANT_SERVE_KEYS))}, "
                         f"got {node!r}")
    return VariantServe(url=node.get("url"), checkpoint=node.get("checkpoint"))


def _resolve(value: Any) -> Any:
    """``${oc.env:...}`` and other interpolations of one value, resolved now."""
    if not isinstance(value, str) or "${" not in value:
        return value
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        return OmegaConf.to_container(OmegaConf.create({"v": value}), resolve=True)["v"]
    except OmegaConfBaseException as exc:
        raise ServeError(f"cannot resolve {value!r}: {str(exc).strip().splitlines()[0]}") from None


@lru_cache(maxsize=32)
def checkpoint_digest(path: str) -> str:
    return path_digest(path)


def values(variant: str, serve: VariantServe | None) -> dict[str, str]:
    """The placeholders of ``variant`` (resolved; ``null`` where the variant does not say)."""
    out = {k: "null" for k in PLACEHOLDERS}
    out["variant"] = variant
    if serve is None:
        return out
    url, ckpt = _resolve(serve.url), _resolve(serve.checkpoint)
    if url not in (None, "null", ""):
        parts = urlsplit(str(url))
        if not parts.hostname or parts.port is None:
            raise ServeError(f"experiment.variants.{variant}.serve.url must be scheme://host:port, got {url!r}")
        out.update(url=str(url), host=parts.hostname, port=str(parts.port))
    if ckpt not in (None, "null", ""):
        path = Path(str(ckpt)).expanduser()
        if not path.exists():
            raise ServeError(f"experiment.variants.{variant}.serve.checkpoint: {path} does not exist")
        path = path.resolve()
        name = "".join(c if c.isalnum() or c in "._-" else "_" for c in path.name) or "checkpoint"
        out.update(checkpoint=str(path), checkpoint_id=f"{name}@sha256:{checkpoint_digest(str(path))}")
    return out


def fill(strings: Sequence[str], vals: Mapping[str, str], quote: bool = False) -> list[str]:
    """``strings`` with every ``{name}`` of :data:`PLACEHOLDERS` replaced (shell-quoted with ``quote``)."""
    out = []
    for s in strings:
        for key in PLACEHOLDERS:
            s = s.replace("{" + key + "}", shlex.quote(vals[key]) if quote else vals[key])
        out.append(s)
    return out


def _answers(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class Lifecycle:
    """Starts each variant's server before its runs and stops it after them (one at a time)."""

    def __init__(self, settings: ServeSettings, variants: Mapping[str, VariantServe | None],
                 stream: Any = None):
        self.settings = settings
        self.variants = dict(variants)
        self.stream = stream or sys.stderr
        self.current: str | None = None
        self.proc: subprocess.Popen | None = None
        self._log: Any = None
        self._watch_fd: int | None = None
        self._address: tuple | None = None
        #: Servers kept up while another variant's runs (``enter(..., keep=)``): variant -> state.
        self._parked: dict[str, tuple] = {}

    @classmethod
    def for_experiment(cls, experiment: Any) -> "Lifecycle | None":
        """None when the experiment starts no servers (no ``serve.command``)."""
        settings = getattr(experiment, "serve", None)
        command = _resolve(settings.command) if settings is not None else None
        if command in (None, "null", ""):
            return None
        settings = ServeSettings(str(command), settings.ready_timeout_s, settings.stop_timeout_s)
        return cls(settings, {v.name: v.serve for v in experiment.variants})

    def __enter__(self) -> "Lifecycle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def enter(self, variant: str, out: str | Path, keep: Sequence[str] = ()) -> None:
        """Make ``variant``'s server the running one. The previous variant's server is stopped,
        unless it is in ``keep`` (the runs of a sequential comparison, which take turns every
        round): then it stays up beside this one and is entered again without a restart. A kept
        server whose address this variant's server needs is stopped all the same."""
        if variant == self.current:
            return
        if self.current is not None and self.current in keep:
            name = self.current
            self._parked[name] = self._take()
        else:
            self.stop_current()
        for name in [n for n in self._parked if n != variant and n not in keep]:
            self._stop(name, *self._parked.pop(name))
        if variant in self._parked:
            self._put(self._parked.pop(variant))
            self.current = variant
            return
        host, port = (vals := values(variant, self.variants.get(variant)))["host"], vals["port"]
        for name, state in list(self._parked.items()):
            if state[3] is not None and port != "null" and state[3] == (host, int(port)):
                self._stop(name, *self._parked.pop(name))
        self.start(variant, Path(out))

    def _take(self) -> tuple:
        state = (self.proc, self._log, self._watch_fd, getattr(self, "_address", None))
        self.proc, self._log, self._watch_fd, self._address, self.current = None, None, None, None, None
        return state

    def _put(self, state: tuple) -> None:
        self.proc, self._log, self._watch_fd, self._address = state

    def start(self, variant: str, out: Path) -> None:
        vals = values(variant, self.variants.get(variant))
        if vals["port"] == "null":
            raise ServeError(f"experiment.variants.{variant}.serve.url is needed to start its server")
        if vals["checkpoint"] == "null":
            raise ServeError(f"experiment.variants.{variant}.serve.checkpoint is not set (the folder its server "
                             "loads; e.g. its ${oc.env:...} variable)")
        host, port = vals["host"], int(vals["port"])
        folder = out / "servers"
        if _answers(host, port):
            stale = _recorded_server(folder, port)
            who = (f"the server variant {stale[0]} of an earlier run started (pid {stale[1]}, recorded in "
                   f"{stale[2]}) still runs there: stop it (kill -- -{stale[1]})" if stale else
                   "stop it (its runs would go to that model)")
            raise ServeError(f"something already answers on {host}:{port}, where variant {variant}'s server is to "
                             f"start: {who} or change the variant's serve.url")
        (command,) = fill([self.settings.command], vals, quote=True)
        folder.mkdir(parents=True, exist_ok=True)
        log_path = folder / f"{variant}.log"
        self._log = log_path.open("ab")
        # Under a watchdog (harness/run/serve_watch.py) that stops the server's process group when this
        # process ends, however it ends: it reads a pipe whose only write end this process holds.
        read_end, self._watch_fd = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.run.serve_watch", str(read_end), str(self.settings.stop_timeout_s), command],
                stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                pass_fds=(read_end,), env={**os.environ, "PYTHONPATH": _harness_path()})
        finally:
            os.close(read_end)
        self.current = variant
        self._address = (host, port)
        record = {"variant": variant, "command": command, "checkpoint": vals["checkpoint"],
                  "checkpoint_id": vals["checkpoint_id"], "url": vals["url"], "pid": self.proc.pid,
                  "log": str(log_path), "started": time.time()}
        (folder / f"{variant}.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
        print(f"serve: variant {variant}: {vals['checkpoint']} ({vals['checkpoint_id']}) on {vals['url']}, "
              f"pid {self.proc.pid}, log {log_path}", file=self.stream, flush=True)
        deadline = time.monotonic() + self.settings.ready_timeout_s
        t0 = time.monotonic()
        while not _answers(host, port):
            code = self.proc.poll()
            if code is not None:
                self._close_log()
                self.proc, self.current = None, None
                raise ServeError(f"variant {variant}'s server exited with status {code} before answering on "
                                 f"{vals['url']}: {_last_line(log_path)} (log: {log_path})")
            if time.monotonic() > deadline:
                self.stop()
                raise ServeError(f"variant {variant}'s server did not answer on {vals['url']} within "
                                 f"{self.settings.ready_timeout_s:g} s (log: {log_path})")
            time.sleep(0.2)
        print(f"serve: variant {variant} answers on {vals['url']} after {time.monotonic() - t0:.1f} s",
              file=self.stream, flush=True)

    def stop(self) -> None:
        """Stop every server this lifecycle started (the running one and any kept ones)."""
        self.stop_current()
        for name in list(self._parked):
            self._stop(name, *self._parked.pop(name))

    def stop_current(self) -> None:
        variant = self.current
        state = self._take()
        if state[0] is not None:
            self._stop(variant, *state)

    def _stop(self, variant: str | None, proc: subprocess.Popen, log: Any, watch_fd: int | None,
              address: tuple | None) -> None:
        code = proc.poll()
        if code is not None:  # died during the runs: its episodes after that are error records
            print(f"serve: variant {variant}'s server had exited (status {code}) before its runs ended",
                  file=self.stream, flush=True)
        else:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(self.settings.stop_timeout_s)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
            # The shell the command ran in may exit before the server it started has closed its
            # port: the next variant (or the caller) must not find this one still answering.
            deadline = time.monotonic() + self.settings.stop_timeout_s
            while address is not None and _answers(*address, timeout=0.2):
                if time.monotonic() > deadline:
                    _signal_group(proc, signal.SIGKILL)
                    break
                time.sleep(0.05)
            print(f"serve: variant {variant}'s server stopped", file=self.stream, flush=True)
        if log is not None:
            log.close()
        if watch_fd is not None:
            os.close(watch_fd)  # the watchdog's pipe: its group is stopped already

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        if getattr(self, "_watch_fd", None) is not None:
            os.close(self._watch_fd)  # the watchdog's pipe: its group is stopped already
            self._watch_fd = None


def _harness_path() -> str:
    """``PYTHONPATH`` for the watchdog: where this ``harness`` package is imported from, first."""
    root = str(Path(__file__).resolve().parents[2])
    rest = os.environ.get("PYTHONPATH")
    return root + (os.pathsep + rest if rest else "")


def _recorded_server(folder: Path, port: int) -> tuple[str, int, Path] | None:
    """(variant, pid, record) of a server an earlier run recorded in ``folder`` on ``port`` whose
    process group still lives (a harness killed before its watchdog existed, or the watchdog's
    own stop still in progress)."""
    for record in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
            if urlsplit(str(data.get("url"))).port != port:
                continue
            pid = int(data["pid"])
            os.killpg(pid, 0)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        return str(data.get("variant")), pid, record
    return None


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # its own session: the shell and what it started
    except ProcessLookupError:
        pass


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no output)"
    return lines[-1].strip()[:300] if lines else "(no output)"
