"""Experiment trackers: a run's metrics as its episodes finish, and the table and report as artifacts.

``harness run ... tracker=wandb`` (or ``mlflow``) opens one tracker run per harness
run (per variant x suite x split of a sweep or experiment): its config is the run's
spec, its identity and run id; every finished episode logs, at step = episodes done
(resumed ones included), the running ``sr`` and ``errors`` of this session, the
episode's ``success`` and ``episodes``; the end logs the counts over every stored
episode of the run (``final_sr``, ``final_episodes``, ``final_errors``). After the last
job, one more tracker run (``table``) holds what ``harness table OUT`` prints
(Markdown and JSON; the experiment's own table with ``+experiment=``) and the HTML
report (``harness report OUT``) as artifacts.

A tracker never changes a result and never stops or slows a run: its calls run in order on
a background thread (:class:`_Channel`), so an episode's commit never waits for one. A
tracker that fails, or whose call has not returned within :data:`TRACKER_CALL_TIMEOUT_S`,
prints one warning line naming it and what it was writing to, and is off for the rest of
the invocation; the episodes are in the store regardless. The end of a run waits for the
tracker's pending calls at most that long, and the run's end line says where the tracker
wrote. MLflow's own HTTP retries (minutes of backoff against a server that is not there)
default to none and a 10 s request timeout here (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``,
``MLFLOW_HTTP_REQUEST_TIMEOUT`` override them).

Both built-ins work without a network by default: W&B in offline mode (files under
``dir``; ``wandb sync`` uploads them later) and MLflow into a local file store
(``file:OUT/mlruns``). MLflow 3 keeps its file store in maintenance mode and refuses it
unless ``MLFLOW_ALLOW_FILE_STORE=true``; this module sets that (when unset) for a
``file:`` URI only, as the file store is what needs no server and no database driver.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Protocol

from harness.params import register_secrets
from harness.registry.loader import MissingDependencyError
from harness.run.tracker_plugins import MlflowParams
from harness.scoring.policy import columns, episode_values, suite_scoring
from harness.util.redact import redact_text


class Tracker(Protocol):
    """What ``harness run`` calls. ``out``: the run's output directory."""

    def start_run(self, *, name: str, run_id: str, config: Mapping[str, Any], out: Path, group: str | None) -> None: ...

    def log_episode(self, step: int, metrics: Mapping[str, float]) -> None: ...

    def end_run(self, summary: Mapping[str, float]) -> None: ...

    def log_outputs(self, *, name: str, files: Mapping[str, Path], folders: Mapping[str, Path], out: Path,
                    group: str | None) -> None: ...

    def close(self) -> None:
        """After the invocation's last run: everything written (the files complete on return)."""


def _require(module: str, tracker: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise MissingDependencyError(f"tracker {tracker!r} needs the package {module!r}, which is not installed "
                                     "(pip install -e '.[trackers]')") from None


def _check_installed(module: str, tracker: str) -> None:
    import importlib.util

    try:
        found = sys.modules[module] is not None if module in sys.modules else \
            importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingDependencyError(f"tracker {tracker!r} needs the package {module!r}, which is not installed "
                                     "(pip install -e '.[trackers]')")


class WandbTracker:
    """Weights & Biases (``wandb``): one W&B run per harness run, ``mode=offline`` by default."""

    def __init__(self, project: str = "embodied-transfer", mode: str = "offline", dir: str | None = None,
                 entity: str | None = None, group: str | None = None):
        self.wandb = _require("wandb", "wandb")
        self.project, self.mode, self.dir, self.entity, self.group = project, mode, dir, entity, group
        self._run: Any = None

    def _init(self, name: str, config: Mapping[str, Any], out: Path, group: str | None, job_type: str) -> Any:
        folder = Path(self.dir) if self.dir else out
        folder.mkdir(parents=True, exist_ok=True)
        settings = self.wandb.Settings(silent=True, console="off")
        return self.wandb.init(project=self.project, entity=self.entity, mode=self.mode, dir=str(folder),
                               name=name, group=self.group or group, job_type=job_type, config=dict(config),
                               settings=settings, reinit="create_new")

    def start_run(self, *, name: str, run_id: str, config: Mapping[str, Any], out: Path, group: str | None) -> None:
        self.where = str(Path(self.dir) if self.dir else out) + "/wandb"
        self._run = self._init(name, {**config, "run_id": run_id}, out, group, "run")
        run_dir = getattr(self._run, "dir", None)
        url = getattr(self._run, "url", None) if self.mode == "online" else None
        self.where = url or (str(Path(run_dir).parent) if run_dir else self.where)

    def log_episode(self, step: int, metrics: Mapping[str, float]) -> None:
        self._run.log(dict(metrics), step=step)

    def end_run(self, summary: Mapping[str, float]) -> None:
        for key, value in summary.items():
            self._run.summary[key] = value
        self._run.finish()
        self._run = None

    def log_outputs(self, *, name: str, files: Mapping[str, Path], folders: Mapping[str, Path], out: Path,
                    group: str | None) -> None:
        run = self._init(name, {"out": str(out)}, out, group, "table")
        artifact = self.wandb.Artifact(_artifact_name(name), type="results")
        for label, path in files.items():
            artifact.add_file(str(path), name=label)
        for label, path in folders.items():
            artifact.add_dir(str(path), name=label)
        run.log_artifact(artifact)
        run.finish()

    def close(self) -> None:
        # finish() hands the records to W&B's service process, which writes the run files on its
        # own time; teardown waits for it, so the files are complete when `harness run` returns.
        self.wandb.teardown()


def _artifact_name(name: str) -> str:
    """A W&B artifact name: letters, digits, '-', '_' and '.' only."""
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-") or "results"


class MlflowTracker:
    """MLflow (``mlflow`` or ``mlflow-skinny``): one MLflow run per harness run, a local file
    store under the output directory by default."""

    def __init__(self, tracking_uri: str | None = None, experiment: str = "embodied-transfer"):
        # Checked here, imported by the first call, on the tracker's background thread: the
        # import (seconds) overlaps the run instead of preceding it.
        _check_installed("mlflow", "mlflow")
        self.tracking_uri, self.experiment = tracking_uri, experiment

        register_secrets(MlflowParams, {"tracking_uri": tracking_uri})  # declared secret="url"
        self._client: Any = None
        self._run_id: str | None = None
        self.where = tracking_uri
        if tracking_uri and not tracking_uri.startswith("file:"):
            # A tracker is best effort: fail fast rather than retry for minutes (MLflow's
            # default is 7 retries with exponential backoff, and 120 s per request).
            for name, value in MLFLOW_HTTP_DEFAULTS.items():
                os.environ.setdefault(name, value)

    def _connect(self, out: Path) -> Any:
        uri = self.tracking_uri or (out.resolve() / "mlruns").as_uri()
        self.where = uri
        if uri.startswith("file:"):
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        else:
            _reachable(uri)  # before importing mlflow: seconds of CPU the run would share for nothing
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(self.experiment)
        experiment_id = found.experiment_id if found is not None else client.create_experiment(self.experiment)
        return client, experiment_id

    def _start(self, name: str, out: Path, group: str | None, tags: Mapping[str, str]) -> tuple[Any, str]:
        client, experiment_id = self._connect(out)
        all_tags = {"mlflow.runName": name, **({"group": group} if group else {}), **tags}
        run = client.create_run(experiment_id, run_name=name, tags=all_tags)
        return client, run.info.run_id

    def start_run(self, *, name: str, run_id: str, config: Mapping[str, Any], out: Path, group: str | None) -> None:
        self._client, self._run_id = self._start(name, out, group, {"harness.run_id": run_id, "kind": "run"})
        self.where = f"{self.where} (experiment {self.experiment}, run {self._run_id})"
        params = {k: v for k, v in config.items() if not isinstance(v, (dict, list))}
        for key, value in params.items():
            self._client.log_param(self._run_id, key, "null" if value is None else str(value)[:500])
        self._client.log_dict(self._run_id, dict(config), "run.json")

    def log_episode(self, step: int, metrics: Mapping[str, float]) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self._client.log_batch(self._run_id, metrics=[Metric(k, float(v), now, step) for k, v in metrics.items()])

    def end_run(self, summary: Mapping[str, float]) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self._client.log_batch(self._run_id, metrics=[Metric(k, float(v), now, 0) for k, v in summary.items()])
        self._client.set_terminated(self._run_id, "FINISHED")
        self._run_id = None

    def log_outputs(self, *, name: str, files: Mapping[str, Path], folders: Mapping[str, Path], out: Path,
                    group: str | None) -> None:
        client, run_id = self._start(name, out, group, {"kind": "table"})
        for label, path in files.items():
            client.log_artifact(run_id, str(path))
        for label, path in folders.items():
            client.log_artifacts(run_id, str(path), artifact_path=label)
        client.set_terminated(run_id, "FINISHED")

    def close(self) -> None:
        """Nothing pending: each call above has written its files."""


# --- used by `harness run` ------------------------------------------------------


#: Longest a tracker call may take (and the end of a run waits for pending ones) before the
#: tracker is declared not answering and turned off for the rest of the invocation.
TRACKER_CALL_TIMEOUT_S = 15.0

#: MLflow HTTP settings for a remote tracking server, unless the environment sets them.
MLFLOW_HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}


def _reachable(uri: str) -> None:
    """Raise ``ConnectionError`` (one line) when nothing accepts a TCP connection at an http(s)
    URI's host and port, within MLflow's request timeout; other URIs, and URIs a proxy
    serves, are left to the client.

    Importing MLflow's client costs about 2 s of CPU, and its import runs on the tracker's
    thread beside the run's own: against a server that is not there, that cost bought
    nothing and slowed short runs by more than half (benchmarks/tracker_overhead.py)."""
    import socket
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    if urllib.request.getproxies().get(parts.scheme) and not urllib.request.proxy_bypass(parts.hostname):
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return  # a malformed port: the client says so in its own words
    try:
        name = "MLFLOW_HTTP_REQUEST_TIMEOUT"
        timeout = float(os.environ.get(name) or MLFLOW_HTTP_DEFAULTS[name])
    except ValueError:
        timeout = 10.0
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(f"cannot connect to {parts.hostname}:{port} ({exc.strerror or exc})") from None


def _where(tracker: Any) -> str | None:
    where = getattr(tracker, "where", None)
    return str(where) if where else None


class _Channel:
    """One tracker's calls, in order, on a daemon thread: a caller never waits for a call.

    The first call that raises, or that runs past :data:`TRACKER_CALL_TIMEOUT_S` (seen by
    :meth:`wait`), prints one warning line and turns the tracker off for the rest of the
    invocation (a hung call's thread is left behind: it is a daemon, and ends with the process).
    """

    def __init__(self, tracker: Any, label: str):
        self.tracker, self.label = tracker, label
        self.queue: "queue.Queue[Any]" = queue.Queue()
        self.dead = False
        self.busy: tuple[str, float] | None = None  # (what, since) of the call in flight
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, name=f"tracker-{label}", daemon=True)
        self.thread.start()

    def submit(self, what: str, fn: Any, *args: Any, **kw: Any) -> None:
        if not self.dead:
            self.queue.put((what, fn, args, kw))

    def _loop(self) -> None:
        while True:
            what, fn, args, kw = self.queue.get()
            try:
                if self.dead:
                    continue
                with self.lock:
                    self.busy = (what, time.monotonic())
                try:
                    fn(*args, **kw)
                except Exception as exc:  # noqa: BLE001 - a tracker never stops a run
                    text = str(exc).strip().splitlines()
                    self._fail(f"{what} failed ({type(exc).__name__}: {text[0] if text else ''})")
                finally:
                    with self.lock:
                        self.busy = None
            finally:
                self.queue.task_done()

    def _fail(self, why: str) -> None:
        with self.lock:
            if self.dead:
                return
            self.dead = True

        where = _where(self.tracker)
        print(redact_text(f"harness: warning: tracker {self.label}: {why}"
                          + (f" writing to {where}" if where else "")
                          + "; no more tracking in this invocation, its episodes are in the store"),
              file=sys.stderr, flush=True)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Until every submitted call has run (True), or the tracker is off (False): a call
        in flight past the timeout, or calls still pending ``timeout_s`` from now, turn it off."""
        limit = TRACKER_CALL_TIMEOUT_S if timeout_s is None else timeout_s
        deadline = time.monotonic() + limit
        while not self.dead:
            if self.queue.unfinished_tasks == 0:
                return True
            with self.lock:
                busy = self.busy
            now = time.monotonic()
            if busy is not None and now - busy[1] > limit:
                self._fail(f"{busy[0]} did not answer within {limit:g} s")
            elif now > deadline:
                self._fail(f"did not keep up ({self.queue.unfinished_tasks} call(s) pending after {limit:g} s)")
            else:
                time.sleep(0.01)
        return False


def channel(tracker: Any, label: str) -> _Channel:
    """The tracker's one channel (made at first use)."""
    ch = getattr(tracker, "_harness_channel", None)
    if ch is None:
        ch = _Channel(tracker, label)
        try:
            tracker._harness_channel = ch
        except AttributeError:
            pass
    return ch


def call(tracker: Any, label: str, what: str, fn: Any, *args: Any, **kw: Any) -> bool:
    """Run one tracker call in the background and wait for it, boundedly (after the runs:
    the table and report, closing). False where the tracker is off or failed."""
    ch = channel(tracker, label)
    ch.submit(what, fn, *args, **kw)
    return ch.wait()


class RunLogger:
    """One harness run's side of a tracker: ``episode(record)`` from the runner's ``on_record``,
    ``end(...)`` after the run. Calls go to the tracker's background channel; an error or a
    call that does not return prints one warning and turns the tracker off."""

    def __init__(self, tracker: Any, label: str):
        self.tracker, self.label = tracker, label
        self.ok = self.n = self.errors = 0
        self.skipped = 0
        self.channel = channel(tracker, label) if tracker is not None else None

    @property
    def active(self) -> bool:
        return self.channel is not None and not self.channel.dead

    def _guard(self, what: str, fn: Any, *args: Any, **kw: Any) -> None:
        if self.active:
            self.channel.submit(what, fn, *args, **kw)

    def start(self, *, name: str, run_id: str, config: Mapping[str, Any], out: Path, group: str | None,
              skipped: int = 0) -> None:
        self.skipped = skipped
        self._suite = str(config.get("suite")) if isinstance(config, Mapping) and config.get("suite") else None
        if not self.active:
            return
        self._guard("start", self.tracker.start_run, name=name, run_id=run_id, config=config, out=out, group=group)

    def _running(self, record: Any) -> dict[str, float]:
        """Each declared (not judged) metric of the record's suite over this session's episodes so far."""
        from dataclasses import asdict

        self._suite = self._suite or record.suite
        metrics, derive = suite_scoring(record.suite)
        values = episode_values(asdict(record), derive)
        sums = self.__dict__.setdefault("_sums", {})
        out: dict[str, float] = {}
        for m in metrics:
            if m.judged:
                continue
            (num,), (den,) = columns(m, [values])
            acc = sums.setdefault(m.name, [0.0, 0.0])
            if num == num:  # not NaN: the episode has a value
                acc[0] += num
                acc[1] += den
            out[m.name] = acc[0] / acc[1] if acc[1] else float("nan")
        return out

    def _headline(self) -> str | None:
        suite = getattr(self, "_suite", None)
        if suite is None:
            return None
        binary = [m.name for m in suite_scoring(suite)[0] if m.binary and m.default]
        return binary[0] if binary else None

    def episode(self, record: Any) -> None:
        if not self.active:
            return
        self.n += 1
        self.ok += bool(record.success) and record.error_kind is None
        self.errors += record.error_kind is not None
        metrics = {"success": float(bool(record.success) and record.error_kind is None),
                   **self._running(record), "errors": float(self.errors), "episodes": float(self.skipped + self.n)}
        self._guard("logging an episode", self.tracker.log_episode, self.skipped + self.n, metrics)

    def end(self, stored: int, successes: int, errors: int) -> None:
        if not self.active:
            return
        summary = {"final_episodes": float(stored)}
        headline = self._headline()
        if headline is not None:  # the suite's first default binary metric: successes / episodes
            summary[f"final_{headline}"] = successes / stored if stored else float("nan")
        summary["final_errors"] = float(errors)
        self._guard("finishing", self.tracker.end_run, summary)
        self.channel.wait()

    def where(self) -> str | None:
        """For the run's end line: where the tracker wrote, or that it did not."""
        if self.channel is None:
            return None
        if self.channel.dead:
            return f"tracker {self.label}: off (see the warning above)"
        where = _where(self.tracker)
        return f"tracker {self.label} -> {where}" if where else f"tracker {self.label}"


def run_config(spec: Any, identity: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a tracker run records about a harness run: its spec's result-relevant fields and identity."""
    from dataclasses import asdict

    data = asdict(spec)
    keep = ("suite", "split", "agent", "variant", "agent_kind", "seed", "repeat", "limit", "suite_params",
            "agent_params")
    out = {k: data[k] for k in keep if k in data}
    out = json.loads(json.dumps(out, default=str))
    if identity is not None:
        out["identity"] = json.loads(json.dumps(dict(identity), default=str))
    return out
